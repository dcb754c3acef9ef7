//! One worker per vertex: polls the watch (or its poll/hidden substitute) in its own task,
//! waits for events and pokes, and runs the process step (ordering check, semaphores,
//! send/recv, refresh, check-apply) with retries, rate limiting and timeouts. A worker whose
//! watch is a subscription has nothing to poll: idle, it parks in its node instead of
//! keeping a task, and the next wake-up spawns it again.
//!
//! Ordering (engine.md 2.2): a vertex runs only when every parent finished a successful run
//! after the vertex's own last run; otherwise it pokes the stale parents ("back-poke") and
//! waits. A vertex that succeeds pokes each child whose parents are now all newer.

use std::collections::{BTreeSet, HashMap};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::{OwnedSemaphorePermit, RwLock, Semaphore, broadcast};
use tokio::time::Instant;

use crate::converger::Converger;
use crate::event::EngineEvent;
use crate::key::{ResError, ResKey};
use crate::meta::{Meta, parse_sema};
use crate::node::{Link, Links, Node, Resume, WorkerState, lock};
use crate::res::{ApplyCtx, Resource, Subscription, WatchCtx};
use crate::starts::{FirstPass, Starts};

/// Engine-wide state the workers share.
pub(crate) struct Shared {
    /// Source of ordering timestamps: strictly increasing, never 0.
    pub(crate) clock: std::sync::atomic::AtomicU64,
    pub(crate) converger: Arc<Converger>,
    pub(crate) events: broadcast::Sender<EngineEvent>,
    /// Set once anything subscribed to `events` ([`Shared::emit`]).
    pub(crate) subscribed: std::sync::atomic::AtomicBool,
    /// The events that say something changed ([`EngineEvent::is_change`]), for
    /// subscribers that would otherwise be woken once per resource for nothing.
    pub(crate) changes: broadcast::Sender<EngineEvent>,
    /// Check-applies that finished (with or without error), for progress reports.
    pub(crate) checks: Arc<std::sync::atomic::AtomicU64>,
    /// Semaphores by id (`name` and `name:N` are different ones), created on first use.
    pub(crate) semas: Mutex<HashMap<String, Arc<Semaphore>>>,
    /// Check-apply retry budgets by kind+name; they survive swaps (engine.md 2.5).
    pub(crate) retries: Mutex<HashMap<ResKey, i16>>,
    /// Held for reading by every process step and for writing by a swap while it relinks
    /// the graph: a swap waits for in-flight check-applies, and none start during it.
    pub(crate) gate: RwLock<()>,
    /// The nodes whose workers found the gate held and went back to waiting; woken by
    /// [`Shared::open_gate`] once the swap or shutdown holding it is over.
    pub(crate) gated: Mutex<Vec<Arc<Node>>>,
    /// How long a worker waits for its watch to return after cancellation.
    pub(crate) watch_stop_timeout: Duration,
    /// Exit requests from resources, read by the app through [`crate::Engine::exit_requested`].
    pub(crate) exit: Arc<tokio::sync::watch::Sender<Option<i32>>>,
    /// How many workers have failed for good so far, read through
    /// [`crate::Engine::failures_seen`] by callers that need no per-resource events.
    pub(crate) failed_for_good: tokio::sync::watch::Sender<u64>,
    /// Set by [`crate::Engine::shutdown_for_exit`]: stopped workers leave their memory to
    /// the OS instead of freeing it piece by piece.
    pub(crate) exiting: std::sync::atomic::AtomicBool,
    /// The runtime workers (and so check-applies) run on (`EngineConfig::apply_pool`);
    /// their watches then run on `watch_rt`, the runtime the engine was created in.
    pub(crate) apply_pool: Option<tokio::runtime::Handle>,
    pub(crate) watch_rt: Option<tokio::runtime::Handle>,
    /// `EngineConfig::one_shot`: passive watches are not started.
    pub(crate) one_shot: bool,
    /// Workers started and still in their first pass, which bound a swap's starts.
    pub(crate) starts: Arc<Starts>,
}

impl Shared {
    /// Sends the event made by `event` to the subscribers; with none (the common case of
    /// a large one-shot run) the event is not even built. `change` says whether it is one
    /// of [`EngineEvent::is_change`]'s: one that is not goes to [`Engine::subscribe`]'s
    /// subscribers only, so while nobody ever subscribed there (a plain `tend run`) it costs
    /// no lock (counting a channel's receivers takes one, shared by every apply thread).
    ///
    /// [`Engine::subscribe`]: crate::Engine::subscribe
    pub(crate) fn emit(&self, change: bool, event: impl FnOnce() -> EngineEvent) {
        let all = self.subscribed.load(std::sync::atomic::Ordering::Relaxed) && self.events.receiver_count() > 0;
        let changes = change && self.changes.receiver_count() > 0;
        if !all && !changes {
            return;
        }
        let event = event();
        debug_assert_eq!(event.is_change(), change, "{event:?}");
        match (all, changes) {
            (true, true) => {
                let _no_subscribers = self.changes.send(event.clone());
                let _no_subscribers = self.events.send(event);
            }
            (false, true) => {
                let _no_subscribers = self.changes.send(event);
            }
            (true, false) => {
                let _no_subscribers = self.events.send(event);
            }
            (false, false) => {}
        }
    }

    /// Holds the gate for writing (no process step runs) until the guard is dropped, or
    /// gives up after `patience` and returns a guard that holds nothing. Either way,
    /// dropping the guard wakes the workers that found the gate held, even when the swap
    /// or shutdown holding it is itself dropped half-way.
    pub(crate) async fn close_gate(&self, patience: Duration) -> Closed<'_> {
        let guard = tokio::time::timeout(patience, self.gate.write()).await.ok();
        Closed { guard, shared: self }
    }

    /// Wakes the workers that found the gate held; run once the gate is released.
    fn open_gate(&self) {
        let gated = std::mem::take(&mut *lock(&self.gated));
        for node in gated {
            node.wake();
        }
    }

    /// Spawns a worker's task: on the apply pool when there is one, else on the engine's
    /// runtime (from any thread: a parked worker is resumed by whoever wakes it, the file
    /// watcher's thread included).
    pub(crate) fn spawn(&self, worker: impl Future<Output = ()> + Send + 'static) -> tokio::task::JoinHandle<()> {
        match (&self.apply_pool, &self.watch_rt) {
            (Some(pool), _) => pool.spawn(worker),
            (None, Some(rt)) => rt.spawn(worker),
            (None, None) => tokio::spawn(worker),
        }
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst) + 1
    }

    fn sema(&self, id: &str, capacity: usize) -> Arc<Semaphore> {
        lock(&self.semas).entry(id.to_string()).or_insert_with(|| Arc::new(Semaphore::new(capacity))).clone()
    }
}

/// The first wait before a resource that failed with a transient error is checked again,
/// and the longest (the wait doubles from one to the other while it keeps failing).
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_LONGEST: Duration = Duration::from_secs(30);

/// What one process step did.
enum Outcome {
    /// Ran (or skipped on the state cache) and succeeded.
    Done,
    /// A parent was stale and was poked; nothing ran.
    BackPoked,
}

pub(crate) struct Worker {
    pub(crate) shared: Arc<Shared>,
    pub(crate) node: Arc<Node>,
    pub(crate) meta: Arc<Meta>,
    pub(crate) res: Box<dyn Resource>,
    /// The last apply-mode run succeeded and no event or received value changed anything
    /// since (engine.md 1.6).
    state_ok: bool,
    /// The watch reported its start.
    started: bool,
    /// The worker has not started yet (it starts its watch unless it was given one).
    fresh: bool,
    /// Watch restarts left (`Meta:retry`; negative: no limit).
    watch_budget: i16,
    /// Boxed: most resources receive nothing and have no rate limit, and a parked worker
    /// keeps this field.
    rare: Option<Box<WorkerRare>>,
    /// The last process step ran the check-apply, in apply mode, and it changed something.
    repaired: bool,
}

/// What few workers hold.
#[derive(Default)]
struct WorkerRare {
    /// Params changed by send/recv since the last successful check-apply (sticky).
    recv_changed: BTreeSet<String>,
    limiter: Option<Bucket>,
    /// Repairs after events, while there are some ([`crate::flap`]).
    flap: Option<crate::flap::Flap>,
    /// While failing with a transient error: the wait before the next check.
    backoff: Duration,
    /// While failing: the error last reported, not reported again while it lasts.
    failing: Option<String>,
}

impl Worker {
    pub(crate) fn new(shared: Arc<Shared>, node: Arc<Node>, meta: Arc<Meta>, res: Box<dyn Resource>) -> Worker {
        let rare = meta.limit.is_finite().then(|| {
            Box::new(WorkerRare {
                recv_changed: BTreeSet::new(),
                limiter: Some(Bucket::new(meta.limit, meta.burst)),
                flap: None,
                backoff: Duration::ZERO,
                failing: None,
            })
        });
        let watch_budget = meta.retry;
        Worker {
            shared,
            node,
            meta,
            res,
            state_ok: false,
            started: false,
            fresh: true,
            watch_budget,
            rare,
            repaired: false,
        }
    }

    /// The worker's life: watch and process until cancelled or failed for good, then stop
    /// the watch and clean up.
    /// `first_pass` counts it among the workers in their first pass ([`Starts::begin`]).
    pub(crate) fn run(
        self,
        first_watch: Option<FirstWatch>,
        first_pass: FirstPass,
    ) -> impl Future<Output = ()> + Send + 'static {
        let between = Between { watch: first_watch.map(|FirstWatch(watch)| watch) };
        self.serve(between, Some(first_pass))
    }

    /// The worker's loop, from its start or from where it parked.
    ///
    /// An idle worker waits for two things only, its watch ending and its wake-up signal
    /// (a stop wakes it too, see `RunningVertex::stop`): each future it holds while idle
    /// is paid for by every resource of the graph, for as long as it runs. A worker whose
    /// watch is a subscription has nothing to poll at all: instead of waiting, it parks in
    /// its node and its task ends (see [`Node::wake`]).
    ///
    /// `first_pass` is held until the worker first goes idle (see [`Starts`]).
    #[allow(clippy::manual_async_fn, reason = "an async fn would hold its arguments twice")]
    fn serve(
        mut self,
        mut between: Between,
        mut first_pass: Option<FirstPass>,
    ) -> impl Future<Output = ()> + Send + 'static {
        // An `async move` block, not an `async fn`: the latter would copy `self` from its
        // argument into a local of the future, holding it twice for the worker's life. The
        // loop's state is used in place in `between` for the same reason.
        async move {
            if self.fresh {
                self.fresh = false;
                self.shared.emit(false, || EngineEvent::Started(self.node.key.clone()));
                tracing::debug!(resource = %self.node.key, "started");
                self.init_retry_budget();
                if between.watch.is_none() {
                    between.watch = Some(self.start_watch());
                }
            }
            loop {
                // In a block of its own: what it holds is gone before the awaits below,
                // which the worker's future would otherwise keep room for.
                let (seq, event) = {
                    // Not parked: it was stopped, or a wake-up came and was taken.
                    let woken = if matches!(between.watch, Some(Watching::Subscribed(_))) {
                        let node = self.node.clone();
                        let mut control = lock(&node.control);
                        // A wake-up that came meanwhile is taken here, under the lock
                        // `Node::wake` takes after signalling: none is lost.
                        if !node.is_stopped() && node.wake.notified().now_or_never().is_none() {
                            drop(first_pass.take());
                            control.park(Box::new(Parked { worker: self, between }));
                            return;
                        }
                        true
                    } else {
                        false
                    };
                    let ended = if woken {
                        None
                    } else {
                        drop(first_pass.take());
                        tokio::select! {
                            biased;
                            joined = wait_watch(&mut between.watch) => Some(joined),
                            _ = self.node.wake.notified() => None,
                        }
                    };
                    if ended.is_some() {
                        // Finished: `stop` must not poll it again.
                        between.watch = None;
                    }
                    if self.node.is_stopped() {
                        break;
                    }
                    let seq = self.node.wake_seq.load(Ordering::SeqCst);
                    let event = ended.is_none() && self.node.event_pending.swap(false, Ordering::SeqCst);
                    // The watch failed: its future returned, or a subscription could not
                    // follow what an event moved.
                    let failed = match ended {
                        Some(joined) => Some(
                            joined.err().unwrap_or_else(|| ResError::new("watch returned without being cancelled")),
                        ),
                        None if event => match &between.watch {
                            Some(Watching::Subscribed(sub)) => sub.refresh().err(),
                            _ => None,
                        },
                        None => None,
                    };
                    if let Some(error) = failed {
                        // Dropped (a subscription unsubscribed) before it is made again.
                        between.watch = None;
                        self.started = false;
                        match Box::pin(self.rewatch(error)).await {
                            Some(again) => between.watch = Some(again),
                            None => break,
                        }
                        continue;
                    }
                    (seq, event)
                };
                if event {
                    self.started = true;
                    self.state_ok = false;
                    if let Some(wait) = self.rare.as_mut().and_then(|r| r.limiter.as_mut()).and_then(Bucket::reserve) {
                        tracing::info!(resource = %self.node.key, wait_ms = wait.as_millis() as u64, "limited");
                        if !Box::pin(self.sleep(wait.as_millis() as u64)).await {
                            break;
                        }
                    }
                    // A resource another writer keeps changing is repaired less and less often
                    // (until it has been calm for a window).
                    if let Some(rare) = self.rare.as_mut()
                        && rare.flap.as_ref().is_some_and(|f| f.expired(Instant::now()))
                    {
                        rare.flap = None;
                    }
                    let backoff =
                        self.rare.as_ref().and_then(|r| r.flap.as_ref()).map_or(Duration::ZERO, |f| f.backoff);
                    if !backoff.is_zero() && !Box::pin(self.sleep(backoff.as_millis() as u64)).await {
                        break;
                    }
                }
                if !self.started {
                    continue;
                }
                // The gate first, outside the step. While a swap holds it, the worker goes
                // back to waiting and the swap wakes it when done (`Shared::gated`): the
                // thousands of workers a swap starts wait for it holding no future at all.
                let shared = self.shared.clone();
                let Ok(_pause) = shared.gate.try_read() else {
                    lock(&shared.gated).push(self.node.clone());
                    // The swap may have ended between the failed try and the push.
                    if shared.gate.try_read().is_ok() {
                        self.node.wake.notify_one();
                    }
                    continue;
                };
                // Boxed: an idle worker then holds a pointer, not the whole process step's state.
                self.repaired = false;
                if self.node.failure().is_some() {
                    // Checked again after a failure: it counts towards convergence while it
                    // runs, and again for good once it succeeds.
                    self.shared.converger.register(&self.node.converged);
                }
                match Box::pin(self.process(seq)).await {
                    Ok(Outcome::Done) => {
                        if event {
                            self.count_repair();
                        }
                        self.node.set_state(WorkerState::Idle);
                        if self.meta.retryreset {
                            lock(&self.shared.retries).insert(self.node.key.clone(), self.meta.retry);
                        }
                    }
                    Ok(Outcome::BackPoked) => self.node.set_state(WorkerState::Waiting),
                    // Interrupted by a stop: not a failure of the resource.
                    Err(_) if self.node.is_stopped() => break,
                    Err(error) => {
                        if !self.take_retry() {
                            // Failed, but not given up on: the watch stays, an event at the
                            // resource checks it again, and so does a swap; a transient
                            // error is also checked again after a backoff.
                            let transient = error.is_transient();
                            self.fail(error);
                            if transient {
                                self.retry_later();
                            }
                            continue;
                        }
                        self.node.set_state(WorkerState::Retrying { error: error.to_string() });
                        self.report_retry(&error);
                        if !Box::pin(self.sleep(self.meta.delay)).await {
                            break;
                        }
                        self.node.poke(&self.shared.converger);
                    }
                }
            }
            Box::pin(self.stop(between.watch)).await;
        }
    }

    /// After a process step an event led to: counts a repair of a resource whose watch
    /// observes it (a file, not a command run on each event), says once when it starts
    /// flapping, and lets the count go once the resource is calm ([`crate::flap`]).
    fn count_repair(&mut self) {
        let now = Instant::now();
        let counting = self.rare.as_ref().is_some_and(|r| r.flap.is_some());
        if !self.repaired || !self.res.watch_passive() {
            if counting
                && let Some(rare) = self.rare.as_mut()
                && rare.flap.as_ref().is_some_and(|f| f.expired(now))
            {
                rare.flap = None;
            }
            return;
        }
        let rare = self.rare.get_or_insert_with(Box::default);
        let flap = rare.flap.get_or_insert_with(|| crate::flap::Flap::new(now));
        if flap.expired(now) {
            *flap = crate::flap::Flap::new(now);
        }
        if let crate::flap::Verdict::Started { repairs, within } = flap.repaired(now) {
            // The run says it to its user (a warning line); the log has it at -v.
            tracing::info!(
                resource = %self.node.key,
                repairs,
                within_ms = within.as_millis() as u64,
                "another writer keeps changing it; backing off"
            );
            self.shared.emit(true, || EngineEvent::Flapping { key: self.node.key.clone(), repairs, within });
        }
    }

    /// After the watch failed: fails for good once the budget is spent, else reports the
    /// retry, waits `Meta:delay` and starts the watch again. `None`: the worker must stop.
    async fn rewatch(&mut self, error: ResError) -> Option<Watching> {
        if self.watch_budget == 0 {
            self.fail(error);
            return None;
        }
        if self.watch_budget > 0 {
            self.watch_budget -= 1;
        }
        self.report_retry(&error);
        self.node.set_state(WorkerState::Retrying { error: error.to_string() });
        if !self.sleep(self.meta.delay).await {
            return None;
        }
        self.node.set_state(WorkerState::Starting);
        Some(self.start_watch())
    }

    /// The process step (engine.md 2.3), run with the gate held for reading. `seq` is the
    /// wake-up count this run answers.
    async fn process(&mut self, seq: u64) -> Result<Outcome, ResError> {
        let links = self.node.links();
        let mine = self.node.ts();
        // Announce the wait before looking at the parents: a parent that settles meanwhile
        // then sees the flag and pokes this vertex, so no wake-up is lost.
        self.node.waiting.store(true, Ordering::SeqCst);
        let stale: Vec<&Arc<Node>> = links.parents.iter().map(|p| &p.node).filter(|n| !n.satisfies(mine)).collect();
        if !stale.is_empty() {
            // Asked are only parents that would not run otherwise. One running now wakes
            // this waiting vertex when it succeeds (it stores its time before it looks at
            // the flag set above). One that failed for good is not run again for asking:
            // it is checked again when its cause may have passed (an event, a swap, a
            // backoff). Either way a failing command runs once, not once per dependant.
            let askable =
                |p: &&Arc<Node>| !p.waiting.load(Ordering::SeqCst) && !p.is_applying() && p.failure().is_none();
            for parent in stale.into_iter().filter(askable) {
                parent.poke(&self.shared.converger);
            }
            return Ok(Outcome::BackPoked);
        }
        self.node.waiting.store(false, Ordering::SeqCst);
        let _permits = self.acquire_semas().await?;
        let received = self.transfer(&links)?;

        let refreshable = self.res.refreshable();
        let refresh = links.parents.iter().any(|p| p.pending.as_ref().is_some_and(|f| f.load(Ordering::SeqCst)));
        let noop = self.meta.noop;
        let mut ran = false;
        let check_ok = if self.meta.hidden || (self.state_ok && !(refresh && refreshable)) {
            true
        } else if noop && refresh && refreshable {
            false
        } else {
            let mut ctx = ApplyCtx {
                refresh: refresh && refreshable,
                recv_changed: self.rare.as_ref().map(|r| r.recv_changed.clone()).unwrap_or_default(),
                cancel: self.node.token(),
                reports: Vec::new(),
                exit: Some(self.shared.exit.clone()),
                members: Vec::new(),
                own_changed: None,
            };
            self.node.set_state(WorkerState::Applying);
            let check = self.check_apply(&mut ctx, !noop).await;
            self.shared.checks.fetch_add(1, Ordering::Relaxed);
            // A group's members are reported under their own names, those that ran before a
            // failing one included.
            for member in std::mem::take(&mut ctx.members) {
                let changed = member.changed;
                tracing::info!(resource = %member.key, group = %self.node.key, changed, noop, "applied");
                self.shared.emit(changed, || EngineEvent::Applied {
                    key: member.key,
                    changed,
                    noop,
                    reports: member.reports,
                });
            }
            let check_ok = check?;
            ran = true;
            self.repaired = !check_ok && !noop;
            // In noop mode, a value received from a resource that did not run is a guess:
            // say where it would come from, and count the receiver as changing.
            let guessed = noop && received.iter().any(|r| r.guessed);
            if noop {
                ctx.reports.extend(received.iter().map(|r| r.line(&self.node.key)));
            }
            self.node.sends_guessed.store(noop && (!check_ok || guessed), Ordering::SeqCst);
            let changed = ctx.own_changed.unwrap_or(!check_ok) || guessed;
            // The notes reach the person running tend through the event; the log has them
            // at -vv.
            tracing::info!(resource = %self.node.key, changed, noop, "applied");
            for note in &ctx.reports {
                tracing::debug!(resource = %self.node.key, "{note}");
            }
            let reports = ctx.reports;
            self.shared.emit(changed, || EngineEvent::Applied { key: self.node.key.clone(), changed, noop, reports });
            check_ok
        };

        if ran {
            match &mut self.rare {
                Some(rare) if rare.limiter.is_some() || rare.flap.is_some() => {
                    rare.recv_changed.clear();
                    rare.backoff = Duration::ZERO;
                    rare.failing = None;
                }
                _ => self.rare = None,
            }
            self.node.set_sends(self.res.sends());
        }
        if !noop {
            self.state_ok = true;
            for parent in &links.parents {
                if let Some(flag) = &parent.pending {
                    flag.store(false, Ordering::SeqCst);
                }
            }
            if !check_ok {
                for child in &links.children {
                    if let Some(flag) = &child.pending {
                        flag.store(true, Ordering::SeqCst);
                    }
                }
            }
        }
        self.node.ts.store(self.shared.tick(), Ordering::SeqCst);
        self.node.succeeded.store(true, Ordering::SeqCst);
        // A child runs again only if it has a reason to: this run changed something (it may
        // need a refresh, and mgmt re-checks children after a change), or the child is
        // waiting for this run. Poking every child after every run would make a parent with
        // many children re-run all of them whenever one child back-pokes it (quadratic).
        let owed: Vec<&Link> = links
            .children
            .iter()
            .filter(|child| (!check_ok || child.node.waiting.load(Ordering::SeqCst)) && child.node.parents_newer())
            .collect();
        // The children owe a run before this vertex counts as settled, so the graph never
        // looks converged (`--converged-timeout 0` exiting) with a refresh still to come...
        for child in &owed {
            child.node.owe_run(&self.shared.converger);
        }
        // ...and this vertex is settled before they are woken and look: they may run without
        // poking back.
        self.shared.converger.set_if(&self.node.converged, || self.node.wake_seq.load(Ordering::SeqCst) == seq);
        for child in owed {
            child.node.wake();
        }
        Ok(Outcome::Done)
    }

    /// Calls the resource's check-apply with the timeout metaparam, turning panics into
    /// errors.
    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let timeout = self.meta.timeout;
        let call = AssertUnwindSafe(self.res.check_apply(ctx, apply)).catch_unwind();
        let outcome = if timeout > 0 {
            match tokio::time::timeout(Duration::from_millis(timeout), call).await {
                Ok(outcome) => outcome,
                Err(_) => return Err(ResError::new(format!("timeout after {timeout} ms"))),
            }
        } else {
            call.await
        };
        outcome.unwrap_or_else(|panic| Err(ResError::new(format!("check-apply panicked: {}", panic_message(&panic)))))
    }

    /// Pulls every received value from the parents' latest sends (engine.md 1.12). In noop
    /// mode, also says what was received from where, for the report.
    fn transfer(&mut self, links: &Links) -> Result<Vec<Received>, ResError> {
        let mut changed = false;
        let mut received = Vec::new();
        for (parent, pairs) in links.parents.iter().filter_map(|p| Some((p, p.sendrecv.as_deref()?))) {
            let sent = parent.node.sends();
            let guessed = parent.node.sends_guessed.load(Ordering::SeqCst);
            for sr in pairs {
                if self.meta.noop {
                    received.push(Received {
                        param: sr.recv.clone(),
                        from: parent.node.key.clone(),
                        field: sr.send.clone(),
                        guessed,
                    });
                }
                let value = sent.as_ref().and_then(|s| s.get(&sr.send)).ok_or_else(|| {
                    ResError::new(format!("received nil value: {}.{} has not been sent yet", parent.node.key, sr.send))
                })?;
                if self.res.recv(&sr.recv, value)? {
                    tracing::debug!(resource = %self.node.key, param = %sr.recv, "received a new value");
                    self.rare.get_or_insert_default().recv_changed.insert(sr.recv.clone());
                    changed = true;
                }
            }
        }
        if changed {
            self.state_ok = false;
            self.node.set_fingerprint(crate::node::Digest::of(&self.res.fingerprint()));
            self.res.validate()?;
        }
        Ok(received)
    }

    /// Acquires this vertex's semaphores in sorted order (deadlock avoidance).
    async fn acquire_semas(&self) -> Result<Vec<OwnedSemaphorePermit>, ResError> {
        let mut ids = self.meta.sema.clone();
        ids.sort();
        ids.dedup();
        let mut permits = Vec::with_capacity(ids.len());
        for id in ids {
            let (id, capacity) = parse_sema(&id).map_err(|e| ResError::new(e.to_string()))?;
            let sema = self.shared.sema(&id, capacity);
            let stop = self.node.token();
            tokio::select! {
                permit = sema.acquire_owned() => {
                    permits.push(permit.map_err(|_| ResError::new(format!("semaphore {id} closed")))?);
                }
                _ = stop.cancelled() => return Err(ResError::new("stopped while waiting for a semaphore")),
            }
        }
        Ok(permits)
    }

    /// Makes the watch, or the engine's substitute for it (poll, run-once, hidden). It is
    /// polled by the worker's own task while the worker waits (a task of its own per vertex
    /// would cost a spawn, a join and a cross-task wake-up per event); events that come
    /// during a process step wait in the watch until the step is over, which is when the
    /// worker would look at them anyway.
    /// Starts the watch before the worker runs, from the task that creates the worker: on
    /// the engine's runtime that is a local spawn (a worker on the apply pool starting it
    /// would wake an engine thread for each of thousands of resources).
    pub(crate) fn first_watch(&self) -> FirstWatch {
        FirstWatch(self.start_watch())
    }

    /// The watch shares the worker's cancellation token (the node's, see [`Node::token`]):
    /// it stops when the worker is stopped, and a worker that ends on its own (failed for
    /// good) cancels it to stop its watch.
    fn start_watch(&self) -> Watching {
        let ctx = WatchCtx { node: self.node.clone(), converger: self.shared.converger.clone() };
        let passive = self.res.watch_passive();
        if self.shared.one_shot && passive && !self.meta.hidden {
            // The startup event only; like a subscription, it leaves the worker free to park.
            ctx.event();
            return Watching::Subscribed(Box::new(Unwatched));
        }
        let fut: WatchFuture = if self.meta.hidden || self.meta.poll < 0 {
            Box::pin(async move {
                ctx.event();
                ctx.cancelled().await;
                Ok(())
            })
        } else if self.meta.poll > 0 {
            let every = Duration::from_secs(self.meta.poll as u64);
            Box::pin(async move {
                let mut ticker = tokio::time::interval(every);
                loop {
                    tokio::select! {
                        _ = ticker.tick() => ctx.event(),
                        _ = ctx.cancelled() => return Ok(()),
                    }
                }
            })
        } else {
            match self.res.subscribe(&ctx) {
                Some(Ok(sub)) => {
                    ctx.event();
                    return Watching::Subscribed(sub);
                }
                // Reported as a watch that failed at once: the same retries follow.
                Some(Err(error)) => Box::pin(std::future::ready(Err(error))),
                None => self.res.watch(ctx),
            }
        };
        match (&self.shared.apply_pool, &self.shared.watch_rt) {
            // The worker runs on the apply pool: a watch with work of its own stays on the
            // engine's runtime, where a blocking check-apply cannot hold it up.
            (Some(_), Some(rt)) if !passive => {
                let mut fut = fut;
                let mut task = AbortOnDrop(rt.spawn(async move { caught(&mut fut).await }));
                Watching::Task(Box::pin(async move {
                    (&mut task.0).await.unwrap_or_else(|e| Err(ResError::new(format!("watch task failed: {e}"))))
                }))
            }
            // Polled by the worker as it is: `wait_watch` and `stop` catch its panics, so
            // it needs no wrapper (a second allocation per resource).
            _ => Watching::Task(fut),
        }
    }

    /// Sleeps `ms` milliseconds; false when cancelled meanwhile.
    async fn sleep(&self, ms: u64) -> bool {
        if ms == 0 {
            return !self.node.is_stopped();
        }
        let stop = self.node.token();
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(ms)) => true,
            _ = stop.cancelled() => false,
        }
    }

    /// Records this kind+name's check-apply budget, to survive swaps. Without retries there
    /// is nothing to keep (an absent budget is `Meta:retry`, see [`Worker::take_retry`]),
    /// and most resources have none: no entry for them.
    fn init_retry_budget(&self) {
        let mut retries = lock(&self.shared.retries);
        if self.meta.retry == 0 {
            // Nearly always empty (no resource asked for retries): then nothing to hash.
            if !retries.is_empty() {
                retries.remove(&self.node.key);
            }
        } else if self.meta.reset || !retries.contains_key(&self.node.key) {
            retries.insert(self.node.key.clone(), self.meta.retry);
        }
    }

    /// Consumes one check-apply retry; false when the budget is exhausted.
    fn take_retry(&self) -> bool {
        let mut retries = lock(&self.shared.retries);
        let budget = retries.entry(self.node.key.clone()).or_insert(self.meta.retry);
        match *budget {
            0 => false,
            n if n < 0 => true,
            _ => {
                *budget -= 1;
                true
            }
        }
    }

    fn report_retry(&self, error: &ResError) {
        // Shown to the person running tend through the Failed event; logged at -v.
        tracing::info!(resource = %self.node.key, error = %error, transient = error.is_transient(), "failed, will retry");
        self.shared.emit(true, || EngineEvent::Failed {
            key: self.node.key.clone(),
            error: error.clone(),
            retrying: true,
        });
    }

    /// Records the error and leaves the converger (engine.md 2.5): the failure does not hold
    /// convergence back (its blocked dependants do). The same error again, from a check
    /// after an event or a backoff, is not reported again.
    fn fail(&mut self, error: ResError) {
        let text = error.to_string();
        let rare = self.rare.get_or_insert_with(Box::default);
        let again = rare.failing.as_ref() == Some(&text);
        rare.failing = Some(text);
        self.node.set_state(WorkerState::Failed { error: error.clone() });
        self.shared.converger.unregister(&self.node.converged);
        if again {
            tracing::debug!(resource = %self.node.key, error = %error, "still failing");
            return;
        }
        tracing::info!(resource = %self.node.key, error = %error, transient = error.is_transient(), "failed");
        self.shared.failed_for_good.send_modify(|n| *n += 1);
        self.shared.emit(true, || EngineEvent::Failed { key: self.node.key.clone(), error, retrying: false });
    }

    /// After a transient failure (a full disk, a busy file): pokes the worker after a
    /// backoff, from [`RETRY_FIRST`] doubling up to [`RETRY_LONGEST`], reset by a success.
    /// The worker goes back to waiting meanwhile, so an event still checks it at once.
    fn retry_later(&mut self) {
        let rare = self.rare.get_or_insert_with(Box::default);
        rare.backoff = if rare.backoff.is_zero() { RETRY_FIRST } else { (rare.backoff * 2).min(RETRY_LONGEST) };
        let wait = rare.backoff;
        let (node, shared) = (self.node.clone(), self.shared.clone());
        let stop = node.token();
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep(wait) => {
                    if node.failure().is_some() {
                        node.poke(&shared.converger);
                    }
                }
                _ = stop.cancelled() => {}
            }
        });
    }

    /// Stops the watch (waiting a bounded time, then aborting it) and runs cleanup.
    async fn stop(mut self, watch: Option<Watching>) {
        self.node.cancel();
        // A subscription is dropped with the worker; only a watch future has to return.
        if let Some(Watching::Task(mut watch)) = watch
            && tokio::time::timeout(self.shared.watch_stop_timeout, caught(&mut watch)).await.is_err()
        {
            // Dropped unfinished, which releases what it holds.
            tracing::warn!(resource = %self.node.key, "watch did not stop in time; dropping it");
        }
        if let Err(error) = self.res.cleanup().await {
            tracing::warn!(resource = %self.node.key, error = %error, "cleanup failed");
        }
        tracing::debug!(resource = %self.node.key, "stopped");
        if self.shared.exiting.load(Ordering::Relaxed) {
            // Cleaned up already; what is left is memory.
            std::mem::forget(self);
        }
    }
}

/// What the worker's loop keeps between wake-ups, besides the worker (whose spare bytes
/// hold the loop's flags).
struct Between {
    watch: Option<Watching>,
}

/// A worker parked in its node while idle (see [`Worker::serve`]).
struct Parked {
    worker: Worker,
    between: Between,
}

impl Resume for Parked {
    fn resume(self: Box<Self>) -> tokio::task::JoinHandle<()> {
        let Parked { worker, between } = *self;
        let shared = worker.shared.clone();
        shared.spawn(worker.serve(between, None))
    }

    /// What the resumed worker would do first, since it was told to stop; most stops (a
    /// subscription dropped, nothing to clean up) finish in one poll, without a task.
    fn stop(self: Box<Self>) -> Option<tokio::task::JoinHandle<()>> {
        let Parked { worker, between } = *self;
        let shared = worker.shared.clone();
        let mut stopping = Box::pin(worker.stop(between.watch));
        match stopping.as_mut().now_or_never() {
            Some(()) => None,
            None => Some(shared.spawn(stopping)),
        }
    }
}

/// The watch, polled inside the worker's task, or a handle to it on the engine's runtime
/// when workers run on an apply pool (a panic in it comes out as an error either way); it
/// goes with the worker, so a worker that is aborted (a straggler at shutdown) cannot leave
/// it running.
type WatchFuture = BoxFuture<'static, Result<(), ResError>>;

/// The gate held closed (see [`Shared::close_gate`]).
pub(crate) struct Closed<'a> {
    guard: Option<tokio::sync::RwLockWriteGuard<'a, ()>>,
    shared: &'a Shared,
}

impl Closed<'_> {
    /// Whether the gate was closed in time (no process step runs now).
    pub(crate) fn held(&self) -> bool {
        self.guard.is_some()
    }
}

impl Drop for Closed<'_> {
    fn drop(&mut self) {
        // Released first: a woken worker must find the gate open.
        self.guard = None;
        self.shared.open_gate();
    }
}

/// How a worker watches its resource: a future it polls (or awaits on the engine's
/// runtime), or a subscription that calls the node and needs no polling at all.
pub(crate) enum Watching {
    Task(WatchFuture),
    Subscribed(Box<dyn Subscription>),
}

/// The watch of a passive resource in a one-shot run (`EngineConfig::one_shot`): none.
struct Unwatched;

impl Subscription for Unwatched {}

/// A watch started for a worker before it runs.
pub(crate) struct FirstWatch(Watching);

/// Resolves when a watch future returns (or panics); never for a subscription, whose
/// failures come out of [`Subscription::refresh`].
async fn wait_watch(watch: &mut Option<Watching>) -> Result<(), ResError> {
    match watch.as_mut() {
        Some(Watching::Task(fut)) => caught(fut).await,
        Some(Watching::Subscribed(_)) | None => std::future::pending().await,
    }
}

/// Polls a watch, turning a panic in it into an error: a watch polled in its worker's task
/// must not take the worker down. A watch that panicked is not polled again.
async fn caught(watch: &mut WatchFuture) -> Result<(), ResError> {
    AssertUnwindSafe(watch)
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| Err(ResError::new(format!("watch panicked: {}", panic_message(&panic)))))
}

pub(crate) fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

/// Token bucket for `Meta:limit` / `Meta:burst`: one token per accepted watch event.
struct Bucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    fn new(rate: f64, burst: u32) -> Bucket {
        Bucket { rate, burst: f64::from(burst), tokens: f64::from(burst), last: Instant::now() }
    }

    /// Reserves a token; returns how long to wait before using it.
    fn reserve(&mut self) -> Option<Duration> {
        let now = Instant::now();
        let elapsed = now.duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst) - 1.0;
        (self.tokens < 0.0).then(|| Duration::from_secs_f64(-self.tokens / self.rate))
    }
}

/// A task handle that aborts the task when dropped: a worker that goes away takes its
/// watch (spawned on the engine's runtime) with it, as when the watch was polled inline.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One param a run received over send/recv, for the noop report.
struct Received {
    param: String,
    from: ResKey,
    field: String,
    /// The sender did not run (noop): the value is not the one it would send.
    guessed: bool,
}

impl Received {
    /// `file[/x]: would receive `content` from exec[m].stdout` (and, for a value the
    /// sender would only make by running, that it is not known yet).
    fn line(&self, key: &ResKey) -> String {
        let Received { param, from, field, .. } = self;
        let unknown = if self.guessed { format!(", which is known only once {from} runs") } else { String::new() };
        format!("{key}: would receive `{param}` from {from}.{field}{unknown}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::res::Nothing;

    /// Every resource's worker is a task for as long as the graph runs: its future is
    /// memory paid per resource (tokio rounds a task up to 128-byte lines, so 400 bytes of
    /// future make a 512-byte task; it was 784 bytes, a 896-byte task, before the worker
    /// waited on one signal and stopped holding `self` twice).
    #[test]
    fn a_worker_task_stays_small() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let engine = crate::Engine::new(crate::EngineConfig::default());
            let node = Arc::new(Node::new(ResKey::new("k", "n"), crate::node::Digest::of("")));
            let worker = Worker::new(engine.shared.clone(), node, Arc::new(Meta::default()), Box::new(Nothing));
            let first = worker.first_watch();
            let pass = engine.shared.starts.begin();
            let future = worker.run(Some(first), pass);
            let size = std::mem::size_of_val(&future);
            assert!(size <= 400, "a worker's future takes {size} bytes");
        });
    }

    /// An idle worker whose resource watches by subscription is only this box in its node.
    #[test]
    fn a_parked_worker_stays_small() {
        let size = std::mem::size_of::<Parked>();
        assert!(size <= 80, "a parked worker takes {size} bytes");
    }
}
