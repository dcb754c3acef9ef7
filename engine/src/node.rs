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
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::converger::{Converger, Slot};

use crate::key::{Payload, ResError, ResKey, SendRecv};

// A node and its `Arc`'s two counts fill mimalloc's 192-byte class: every vertex has one.
const _: () = assert!(std::mem::size_of::<Node>() + 16 <= 192);

pub(crate) struct Node {
    pub(crate) key: ResKey,
    /// When this vertex last finished a successful run, from the engine's clock; 0 = never.
    pub(crate) ts: AtomicU64,
    /// Wakes the worker's task (a poke or an event); holds at most one permit, so extra
    /// wake-ups while the worker is busy collapse into one. Use [`Node::wake`], which also
    /// resumes a parked worker.
    pub(crate) wake: Notify,
    /// The worker's task or parked state, and its cancellation token.
    pub(crate) control: Mutex<Control>,
    /// Set once the worker is told to stop, or stops on its own; never cleared.
    stopped: AtomicBool,
    /// A watch event arrived and was not yet consumed by the worker.
    pub(crate) event_pending: AtomicBool,
    /// Counts wake-ups, so a worker can tell whether one arrived during its run.
    pub(crate) wake_seq: AtomicU64,
    /// This vertex back-poked its stale parents and has not run since: it will run (and
    /// poke its children) when they answer, so children need not back-poke it again. This
    /// keeps startup of a long chain linear instead of quadratic.
    pub(crate) waiting: AtomicBool,
    /// Replaced whole on a swap; readers take a cheap `Arc` clone (under a mutex: a read
    /// lock would cost every node 8 bytes more).
    links: Mutex<Arc<Links>>,
    /// This vertex's converged flag.
    pub(crate) converged: Slot,
    /// What few nodes hold: the latest sends, the error of a failing worker.
    rare: Mutex<Option<Box<Rare>>>,
    /// The resource's current fingerprint (changes when send/recv changes a param), as the
    /// two words of its [`Digest`]: only the worker writes it, and a read torn by that write
    /// can only make a swap replace the resource for nothing.
    fingerprint: [AtomicU64; 2],
    /// [`WorkerState`] as [`StateCode`]; a state with an error keeps it in `rare`.
    state: AtomicU8,
    /// A run has succeeded at least once.
    pub(crate) succeeded: AtomicBool,
    /// The worker failed for good and no run has succeeded since (its error is in `rare`):
    /// a check again after an event or a swap does not clear it until it succeeds.
    failed: AtomicBool,
    /// Its sends are not what it would send: in noop mode it would have changed (or it
    /// received such a value) but did not run.
    pub(crate) sends_guessed: AtomicBool,
    /// The worker waits in a batch of first passes, or has its first poll there (see
    /// [`crate::batch`]): it has no task yet, and may be running.
    pub(crate) batched: AtomicBool,
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

/// What starts, parks, wakes and stops a vertex's worker, under one lock.
pub(crate) struct Control {
    pub(crate) run: Run,
    /// The cancellation token of the worker's watch future, sleeps and check-applies, made
    /// when one first asks ([`Node::token`]): a parked worker keeps none (a token is a
    /// 112-byte allocation).
    token: Option<CancellationToken>,
}

impl Control {
    /// Parks the worker, letting its token go: its watch holds none and its check-apply is
    /// over (a resource keeps its `ApplyCtx::cancel` for that run only).
    pub(crate) fn park(&mut self, worker: Box<dyn Resume>) {
        self.token = None;
        self.run = Run::Parked(worker);
    }
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
    /// Stops the worker (it was told to): at once when its stop need not wait, else as a
    /// task, whose handle it returns.
    fn stop(self: Box<Self>) -> Option<JoinHandle<()>>;
}

#[derive(Clone, Default)]
pub(crate) struct Links {
    pub(crate) parents: Box<[Link]>,
    pub(crate) children: Box<[Link]>,
}

/// The send/recv pairs of an edge, shared by both of its links (which are all the engine
/// keeps of a running edge); `None` for the many edges that carry none.
pub(crate) type Pairs = Option<Arc<Vec<SendRecv>>>;

#[derive(Clone)]
pub(crate) struct Link {
    pub(crate) node: Arc<Node>,
    /// Refresh pending on this edge; `None` when the edge does not notify.
    pub(crate) pending: Option<Arc<AtomicBool>>,
    pub(crate) sendrecv: Pairs,
}

impl Node {
    pub(crate) fn new(key: ResKey, fingerprint: Digest) -> Node {
        Node {
            key,
            ts: AtomicU64::new(0),
            wake: Notify::new(),
            control: Mutex::new(Control { run: Run::Task(None), token: None }),
            stopped: AtomicBool::new(false),
            event_pending: AtomicBool::new(false),
            wake_seq: AtomicU64::new(0),
            waiting: AtomicBool::new(false),
            links: Mutex::new(no_links()),
            converged: Slot::default(),
            rare: Mutex::new(None),
            fingerprint: [AtomicU64::new(fingerprint.0), AtomicU64::new(fingerprint.1)],
            state: AtomicU8::new(StateCode::Starting as u8),
            succeeded: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            sends_guessed: AtomicBool::new(false),
            batched: AtomicBool::new(false),
        }
    }

    /// Asks the worker to run; marks it unconverged first so there is no window where the
    /// graph looks converged with work pending.
    pub(crate) fn poke(&self, converger: &Converger) {
        self.owe_run(converger);
        self.wake();
    }

    /// The first half of [`Node::poke`]: marks the worker unconverged with a run owed, without
    /// waking it yet.
    pub(crate) fn owe_run(&self, converger: &Converger) {
        converger.unset_with(&self.converged, || {
            self.wake_seq.fetch_add(1, Ordering::SeqCst);
        });
    }

    /// Wakes the worker: signals its task, or spawns a parked one (which finds the signal).
    /// The signal comes first: a worker decides to park under the `control` lock after looking
    /// for a signal, so either it sees this one or it parked before this takes the lock.
    ///
    /// A parked worker told to stop is left to the one who stops it ([`Node::wake_to_stop`]):
    /// whoever else wakes it meanwhile may be a watch calling from where the stop cannot run
    /// (a file watch calls with its hub locked, and stopping drops the watch, which takes
    /// that lock).
    pub(crate) fn wake(&self) {
        self.wake.notify_one();
        let mut control = lock(&self.control);
        if !matches!(control.run, Run::Parked(_)) || self.is_stopped() {
            return;
        }
        let Run::Parked(parked) = std::mem::replace(&mut control.run, Run::Task(None)) else { return };
        control.run = Run::Task(Some(parked.resume()));
    }

    /// Wakes the worker after [`Node::cancel`], from the one stopping it: a waiting worker
    /// sees the stop, and a parked one stops here, outside the lock (stopping takes it),
    /// becoming a task only if its stop has to wait. A parked worker has no step in flight,
    /// and a stopped worker never parks again, so no handle is needed before it runs.
    pub(crate) fn wake_to_stop(&self) {
        self.wake.notify_one();
        let parked = {
            let mut control = lock(&self.control);
            if !matches!(control.run, Run::Parked(_)) {
                return;
            }
            let Run::Parked(parked) = std::mem::replace(&mut control.run, Run::Task(None)) else { return };
            parked
        };
        if let Some(handle) = parked.stop() {
            lock(&self.control).run = Run::Task(Some(handle));
        }
    }

    /// Whether the worker was told to stop (or stopped on its own).
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// Tells the worker, and whatever holds its token, to stop; the worker still has to be
    /// woken ([`Node::wake`]) if it waits.
    pub(crate) fn cancel(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        if let Some(token) = &lock(&self.control).token {
            token.cancel();
        }
    }

    /// The worker's cancellation token, made on first use; cancelled already once the worker
    /// was told to stop. (Either [`Node::cancel`] finds the token made here, or this finds
    /// the flag it set.)
    pub(crate) fn token(&self) -> CancellationToken {
        let token = lock(&self.control).token.get_or_insert_with(CancellationToken::new).clone();
        if self.is_stopped() {
            token.cancel();
        }
        token
    }

    /// The worker's task handle, for the one who stops it (after its stop's wake-up, which
    /// stopped a parked worker in place, leaving a task only if that stop has to wait; a
    /// stopped worker never parks again). A worker still in a
    /// batch of first passes has none yet: its batch is waited for first (`batch_over` is
    /// told whenever a batch lets go of its workers).
    pub(crate) async fn take_task(&self, batch_over: &Notify) -> Option<JoinHandle<()>> {
        loop {
            let mut over = std::pin::pin!(batch_over.notified());
            over.as_mut().enable();
            if !self.batched.load(Ordering::SeqCst) {
                break;
            }
            over.await;
        }
        match &mut lock(&self.control).run {
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
        lock(&self.links).clone()
    }

    pub(crate) fn set_links(&self, links: Links) {
        let links = if links.parents.is_empty() && links.children.is_empty() { no_links() } else { Arc::new(links) };
        *lock(&self.links) = links;
    }

    /// Sets links that other nodes have too (links are never changed in place).
    pub(crate) fn share_links(&self, links: Arc<Links>) {
        *lock(&self.links) = links;
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
        lock(&self.links).parents.iter().all(|p| p.node.satisfies(mine))
    }

    /// Sets the worker's state; only the worker calls it. A state with an error is stored
    /// (and one left) under `rare`'s lock, so a reader holding that lock finds the error of
    /// an error code. A failure for good is kept apart until a run succeeds ([`Node::failure`]).
    pub(crate) fn set_state(&self, state: WorkerState) {
        let code = StateCode::of(&state) as u8;
        if let WorkerState::Failed { error } = &state {
            let mut rare = lock(&self.rare);
            let r = rare.get_or_insert_default();
            r.failure = Some(error.to_string());
            r.errored = Some(state);
            self.failed.store(true, Ordering::SeqCst);
            self.state.store(code, Ordering::SeqCst);
        } else if StateCode::errs(code) {
            let mut rare = lock(&self.rare);
            rare.get_or_insert_default().errored = Some(state);
            self.state.store(code, Ordering::SeqCst);
        } else if StateCode::errs(self.state.load(Ordering::SeqCst))
            || (code == StateCode::Idle as u8 && self.failed.load(Ordering::SeqCst))
        {
            let mut rare = lock(&self.rare);
            self.state.store(code, Ordering::SeqCst);
            let succeeded = code == StateCode::Idle as u8;
            if succeeded {
                self.failed.store(false, Ordering::SeqCst);
            }
            Rare::update(&mut rare, |r| {
                r.errored = None;
                if succeeded {
                    r.failure = None;
                }
            });
        } else {
            self.state.store(code, Ordering::SeqCst);
        }
    }

    pub(crate) fn state(&self) -> WorkerState {
        let code = self.state.load(Ordering::SeqCst);
        if !StateCode::errs(code) {
            return StateCode::plain(code);
        }
        // Read again under the lock, where an error code comes with its error.
        let rare = lock(&self.rare);
        let code = self.state.load(Ordering::SeqCst);
        let errored = rare.as_ref().and_then(|r| r.errored.clone()).filter(|_| StateCode::errs(code));
        errored.unwrap_or_else(|| StateCode::plain(code))
    }

    /// Whether the worker is in a check-apply, which ends in a stored time or an error.
    pub(crate) fn is_applying(&self) -> bool {
        self.state.load(Ordering::SeqCst) == StateCode::Applying as u8
    }

    /// The last error of a worker that failed for good after exhausting its retries, while
    /// no run has succeeded since: a check again in flight (after an event, a swap or a
    /// backoff) leaves it failed until it succeeds, so a run ending meanwhile still counts it.
    pub(crate) fn failure(&self) -> Option<String> {
        if !self.failed.load(Ordering::SeqCst) {
            return None;
        }
        lock(&self.rare).as_ref().and_then(|r| r.failure.clone())
    }

    /// The latest values published by a run of check-apply.
    pub(crate) fn sends(&self) -> Option<BTreeMap<String, Payload>> {
        lock(&self.rare).as_ref().and_then(|r| r.sends.clone())
    }

    pub(crate) fn set_sends(&self, sends: Option<BTreeMap<String, Payload>>) {
        let mut rare = lock(&self.rare);
        if sends.is_some() || rare.is_some() {
            Rare::update(&mut rare, |r| r.sends = sends);
        }
    }

    pub(crate) fn fingerprint(&self) -> Digest {
        Digest(self.fingerprint[0].load(Ordering::SeqCst), self.fingerprint[1].load(Ordering::SeqCst))
    }

    pub(crate) fn set_fingerprint(&self, digest: Digest) {
        self.fingerprint[0].store(digest.0, Ordering::SeqCst);
        self.fingerprint[1].store(digest.1, Ordering::SeqCst);
    }
}

/// What few nodes hold, boxed out of every node.
#[derive(Default)]
struct Rare {
    sends: Option<BTreeMap<String, Payload>>,
    /// The state, while it is one with an error.
    errored: Option<WorkerState>,
    /// The error of a failure for good, until a run succeeds.
    failure: Option<String>,
}

impl Rare {
    /// Changes the (made if need be) box, and drops it once it holds nothing.
    fn update(rare: &mut Option<Box<Rare>>, change: impl FnOnce(&mut Rare)) {
        change(rare.get_or_insert_default());
        if rare.as_ref().is_some_and(|r| r.sends.is_none() && r.errored.is_none() && r.failure.is_none()) {
            *rare = None;
        }
    }
}

/// A [`WorkerState`] in the byte a node keeps.
#[derive(Clone, Copy)]
#[repr(u8)]
enum StateCode {
    Starting,
    Waiting,
    Applying,
    Idle,
    Retrying,
    Failed,
}

impl StateCode {
    fn of(state: &WorkerState) -> StateCode {
        match state {
            WorkerState::Starting => StateCode::Starting,
            WorkerState::Waiting => StateCode::Waiting,
            WorkerState::Applying => StateCode::Applying,
            WorkerState::Idle => StateCode::Idle,
            WorkerState::Retrying { .. } => StateCode::Retrying,
            WorkerState::Failed { .. } => StateCode::Failed,
        }
    }

    /// Whether the state of `code` carries an error.
    fn errs(code: u8) -> bool {
        code == StateCode::Retrying as u8 || code == StateCode::Failed as u8
    }

    /// The state of a code without an error.
    fn plain(code: u8) -> WorkerState {
        const STARTING: u8 = StateCode::Starting as u8;
        const WAITING: u8 = StateCode::Waiting as u8;
        const APPLYING: u8 = StateCode::Applying as u8;
        match code {
            STARTING => WorkerState::Starting,
            WAITING => WorkerState::Waiting,
            APPLYING => WorkerState::Applying,
            _ => WorkerState::Idle,
        }
    }
}

/// A resource fingerprint, hashed: swaps only compare fingerprints for equality, and a
/// graph of thousands of resources need not keep thousands of parameter dumps around.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Digest(u64, u64);

/// The links of a vertex without edges: one value for the process.
fn no_links() -> Arc<Links> {
    static NONE: std::sync::OnceLock<Arc<Links>> = std::sync::OnceLock::new();
    NONE.get_or_init(|| Arc::new(Links::default())).clone()
}

impl Digest {
    /// SipHash of the fingerprint (a changed resource whose digest stays the same is a
    /// chance of one in 2^64 on its own), beside the fast hash of the same bytes, which
    /// costs much less than the second SipHash pass it replaces (a graph's first swap digests
    /// every resource).
    pub(crate) fn of(fingerprint: &str) -> Digest {
        use std::hash::{Hash, Hasher};
        let mut sip = std::collections::hash_map::DefaultHasher::new();
        fingerprint.hash(&mut sip);
        let mut fast = crate::fasthash::FastHash::default();
        fingerprint.hash(&mut fast);
        Digest(sip.finish(), fast.finish())
    }
}

/// Locks a std mutex, ignoring poisoning (the guarded data are plain values).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A parked worker that records what was done with it.
    struct Recorded(Arc<Mutex<Vec<&'static str>>>);

    impl Resume for Recorded {
        fn resume(self: Box<Self>) -> JoinHandle<()> {
            self.0.lock().unwrap().push("resumed");
            tokio::spawn(async {})
        }
        fn stop(self: Box<Self>) -> Option<JoinHandle<()>> {
            self.0.lock().unwrap().push("stopped");
            None
        }
    }

    /// A wake-up that comes between a stop's cancel and its own wake-up (a file watch's call,
    /// made with the watch hub locked) leaves the parked worker to the stop: stopping it
    /// there would drop its watch from inside the watch's call, which deadlocked the daemon.
    #[tokio::test]
    async fn only_the_stop_stops_a_parked_worker() {
        let node = Node::new(ResKey::new("k", "n"), Digest::of(""));
        let seen = Arc::new(Mutex::new(Vec::new()));
        lock(&node.control).park(Box::new(Recorded(seen.clone())));
        node.wake();
        assert_eq!(*seen.lock().unwrap(), ["resumed"], "a wake-up resumes a parked worker");

        lock(&node.control).park(Box::new(Recorded(seen.clone())));
        node.cancel();
        node.wake();
        assert_eq!(*seen.lock().unwrap(), ["resumed"], "a watch's wake-up leaves it parked");
        assert!(matches!(lock(&node.control).run, Run::Parked(_)));
        node.wake_to_stop();
        assert_eq!(*seen.lock().unwrap(), ["resumed", "stopped"], "the stop's own wake-up stops it");
        assert!(matches!(lock(&node.control).run, Run::Task(None)));
    }

    /// Every vertex of a running graph has a node, for as long as it runs.
    #[test]
    fn a_node_stays_small() {
        let size = std::mem::size_of::<Node>();
        assert!(size <= 176, "a node takes {size} bytes");
    }

    /// The state lives in a byte and its error in the rare box, which is gone once nothing
    /// needs it.
    #[test]
    fn a_state_keeps_its_error_and_lets_it_go() {
        use super::*;
        use crate::key::ResError;
        let node = Node::new(ResKey::new("file", "/x"), Digest::of("params"));
        assert_eq!(node.state(), WorkerState::Starting);
        node.set_state(WorkerState::Retrying { error: "busy".into() });
        assert_eq!(node.state(), WorkerState::Retrying { error: "busy".into() });
        assert_eq!(node.failure(), None, "retrying is no failure");
        node.set_state(WorkerState::Idle);
        assert_eq!(node.state(), WorkerState::Idle);
        assert!(lock(&node.rare).is_none(), "the error's box is dropped");

        node.set_sends(Some(BTreeMap::from([("out".to_string(), Arc::new(1_i64) as Payload)])));
        node.set_state(WorkerState::Failed { error: ResError::new("gone") });
        assert_eq!(node.failure().as_deref(), Some("gone"));
        node.set_state(WorkerState::Applying);
        assert_eq!(node.failure().as_deref(), Some("gone"), "a check again leaves it failed");
        node.set_state(WorkerState::Failed { error: ResError::new("still gone") });
        node.set_state(WorkerState::Waiting);
        assert_eq!(node.failure().as_deref(), Some("still gone"));
        node.set_state(WorkerState::Idle);
        assert_eq!(node.failure(), None, "a success ends the failure");
        assert!(node.sends().is_some_and(|s| s.contains_key("out")), "the sends outlive the error");
        node.set_sends(None);
        assert!(lock(&node.rare).is_none());

        node.set_fingerprint(Digest::of("other"));
        assert_eq!(node.fingerprint(), Digest::of("other"));
    }

    /// Every edge has two links (one each way); most carry no send/recv pairs.
    #[test]
    fn a_link_stays_small() {
        let size = std::mem::size_of::<super::Link>();
        assert!(size <= 24, "a link takes {size} bytes");
    }
}
