//! The per-vertex state shared between a worker, its watch, its neighbours and the engine:
//! the ordering timestamp, the wake-up signal (pokes and watch events), the links to
//! parents and children, and the latest sent values.
//!
//! Links hold `Arc`s to neighbours; the engine replaces them on every swap and clears them
//! when a vertex stops, so no cycle of `Arc`s outlives a vertex.
//!
//! A worker with nothing to poll while idle (its resource watches by subscription) does not
//! keep a task: it parks its state here ([`Run::Parked`]) and the next wake-up spawns it
//! again ([`Node::wake`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::converger::{Converger, Slot};

use crate::key::{Payload, ResError, ResKey, SendRecv};

pub(crate) struct Node {
    pub(crate) key: ResKey,
    /// When this vertex last finished a successful run, from the engine's clock; 0 = never.
    pub(crate) ts: AtomicU64,
    /// Wakes the worker's task (a poke or an event); holds at most one permit, so extra
    /// wake-ups while the worker is busy collapse into one. Use [`Node::wake`], which also
    /// resumes a parked worker.
    pub(crate) wake: Notify,
    /// The worker's task, or its parked state.
    pub(crate) run: Mutex<Run>,
    /// A watch event arrived and was not yet consumed by the worker.
    pub(crate) event_pending: AtomicBool,
    /// Counts wake-ups, so a worker can tell whether one arrived during its run.
    pub(crate) wake_seq: AtomicU64,
    /// This vertex back-poked its stale parents and has not run since: it will run (and
    /// poke its children) when they answer, so children need not back-poke it again. This
    /// keeps startup of a long chain linear instead of quadratic.
    pub(crate) waiting: AtomicBool,
    /// Replaced whole on a swap; readers take a cheap `Arc` clone.
    pub(crate) links: RwLock<Arc<Links>>,
    /// This vertex's converged flag.
    pub(crate) converged: Slot,
    /// The latest values published by a run of check-apply.
    pub(crate) sends: Mutex<Option<BTreeMap<String, Payload>>>,
    /// The resource's current fingerprint (changes when send/recv changes a param).
    pub(crate) fingerprint: Mutex<Digest>,
    /// Set when the worker stopped for good after exhausting its retries.
    pub(crate) failed: Mutex<Option<String>>,
    pub(crate) state: Mutex<WorkerState>,
    /// A run has succeeded at least once.
    pub(crate) succeeded: AtomicBool,
    /// Its sends are not what it would send: in noop mode it would have changed (or it
    /// received such a value) but did not run.
    pub(crate) sends_guessed: AtomicBool,
}

/// What a worker is doing, for [`crate::Engine::status`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkerState {
    /// Waiting for its watch to report that it is listening.
    Starting,
    /// Waiting for a parent to finish a run (it back-poked its stale parents).
    Waiting,
    /// Running check-apply.
    Applying,
    /// Last run succeeded.
    Idle,
    /// Last run failed; another try is scheduled.
    Retrying { error: String },
    /// Gave up after exhausting its retries.
    Failed { error: ResError },
}

/// Where a vertex's worker is.
pub(crate) enum Run {
    /// A task; the handle is taken by whoever stops the worker (`None` once taken, and
    /// before the first spawn). Whoever spawns holds the lock while storing the handle, so
    /// the task cannot park before its handle is in place.
    Task(Option<JoinHandle<()>>),
    /// Idle with nothing to poll: a wake-up spawns it again. Holds a fraction of the
    /// memory of the idle task it replaces (a worker's task is 512 bytes).
    Parked(Box<dyn Resume>),
}

/// A parked worker (defined by `worker.rs`, above this module).
pub(crate) trait Resume: Send {
    /// Spawns the worker again, as a task that first looks at the wake-up that resumed it.
    fn resume(self: Box<Self>) -> JoinHandle<()>;
}

#[derive(Clone, Default)]
pub(crate) struct Links {
    pub(crate) parents: Vec<Link>,
    pub(crate) children: Vec<Link>,
}

#[derive(Clone)]
pub(crate) struct Link {
    pub(crate) node: Arc<Node>,
    /// Refresh pending on this edge; `None` when the edge does not notify.
    pub(crate) pending: Option<Arc<AtomicBool>>,
    pub(crate) sendrecv: Vec<SendRecv>,
}

impl Node {
    pub(crate) fn new(key: ResKey, fingerprint: Digest) -> Node {
        Node {
            key,
            ts: AtomicU64::new(0),
            wake: Notify::new(),
            run: Mutex::new(Run::Task(None)),
            event_pending: AtomicBool::new(false),
            wake_seq: AtomicU64::new(0),
            waiting: AtomicBool::new(false),
            links: RwLock::new(Arc::new(Links::default())),
            converged: Slot::default(),
            sends: Mutex::new(None),
            fingerprint: Mutex::new(fingerprint),
            failed: Mutex::new(None),
            state: Mutex::new(WorkerState::Starting),
            succeeded: AtomicBool::new(false),
            sends_guessed: AtomicBool::new(false),
        }
    }

    /// Asks the worker to run; marks it unconverged first so there is no window where the
    /// graph looks converged with work pending.
    pub(crate) fn poke(&self, converger: &Converger) {
        converger.unset_with(&self.converged, || {
            self.wake_seq.fetch_add(1, Ordering::SeqCst);
        });
        self.wake();
    }

    /// Wakes the worker: signals its task, or spawns a parked one (which finds the signal).
    /// The signal comes first: a worker decides to park under the `run` lock after looking
    /// for a signal, so either it sees this one or it parked before this takes the lock.
    pub(crate) fn wake(&self) {
        self.wake.notify_one();
        let mut run = lock(&self.run);
        if matches!(*run, Run::Parked(_))
            && let Run::Parked(parked) = std::mem::replace(&mut *run, Run::Task(None))
        {
            *run = Run::Task(Some(parked.resume()));
        }
    }

    /// The worker's task handle, for the one who stops it (after a stop's wake-up, which
    /// resumed a parked worker; a stopped worker never parks again).
    pub(crate) fn take_task(&self) -> Option<JoinHandle<()>> {
        match &mut *lock(&self.run) {
            Run::Task(handle) => handle.take(),
            Run::Parked(_) => None,
        }
    }

    /// A watch event: like a poke, and the worker will treat its state as dirty.
    pub(crate) fn event(&self, converger: &Converger) {
        self.event_pending.store(true, Ordering::SeqCst);
        self.poke(converger);
    }

    pub(crate) fn ts(&self) -> u64 {
        self.ts.load(Ordering::SeqCst)
    }

    pub(crate) fn links(&self) -> Arc<Links> {
        self.links.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn set_links(&self, links: Links) {
        *self.links.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(links);
    }

    /// Whether, as a parent, this vertex lets a child whose last run was at `child_ts` run
    /// now: it finished a run since then (mgmt's rule), or it is settled — it succeeded, is
    /// idle and has nothing pending, so its state is known right as of now. The second case
    /// is where tend differs from mgmt: a child's own watch event does not make every parent
    /// re-run first, which made a directory with N managed files re-run N times (each time
    /// poking its N children) during a cold converge.
    pub(crate) fn satisfies(&self, child_ts: u64) -> bool {
        self.ts() > child_ts || self.converged.is_set()
    }

    /// Whether every parent lets this vertex run now (see [`Node::satisfies`]).
    pub(crate) fn parents_newer(&self) -> bool {
        let mine = self.ts();
        self.links.read().unwrap_or_else(|e| e.into_inner()).parents.iter().all(|p| p.node.satisfies(mine))
    }

    pub(crate) fn set_state(&self, state: WorkerState) {
        *lock(&self.state) = state;
    }

    pub(crate) fn state(&self) -> WorkerState {
        lock(&self.state).clone()
    }

    pub(crate) fn failure(&self) -> Option<String> {
        lock(&self.failed).clone()
    }
}

/// A resource fingerprint, hashed: swaps only compare fingerprints for equality, and a
/// graph of thousands of resources need not keep thousands of parameter dumps around.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Digest(u64, u64);

impl Digest {
    pub(crate) fn of(fingerprint: &str) -> Digest {
        use std::hash::{Hash, Hasher};
        let half = |salt: u8| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            salt.hash(&mut h);
            fingerprint.hash(&mut h);
            h.finish()
        };
        Digest(half(1), half(2))
    }
}

/// Locks a std mutex, ignoring poisoning (the guarded data are plain values).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
