//! The daemon's main loop as one closed set of events: [`Runner::next_event`] is the one
//! place that says what may wake the loop (a signal, a settled output, a deploy, an edit,
//! convergence, a timer), and each [`Event`] has its handler, which says whether the run
//! goes on or how it stops.

use std::sync::Arc;
use std::time::Duration;

use funcs::runtime::Dataflow;
use lang::diag::Diagnostic;
use lang::incremental::Outline;
use lang::output::Output;
use lang::span::SourceMap;

use super::{
    Candidate, RELEASE_QUIET, Runner, Signals, Stop, deploys, exports, patch, print_diags, status, tell, watch_code,
};

/// What woke the main loop.
pub(super) enum Event {
    /// SIGINT or SIGTERM.
    Signal,
    /// A candidate deploy's first output (`None`: its dataflow ended without one).
    CandidateFirst(Option<Result<Arc<Output>, Diagnostic>>),
    /// The running program's next output (`None`: its dataflow ended).
    Output(Option<Result<Arc<Output>, Diagnostic>>),
    /// Other hosts' exports changed.
    ExportsChanged,
    /// A new deploy to take up.
    Deploy(u64),
    /// The sources changed, or SIGHUP (the reason).
    Reload(&'static str),
    /// `--converged-timeout` was reached (here, and with deploys in the whole fleet), or
    /// could not be (`false`).
    Converged(bool),
    /// A resource asked the agent to exit with this code.
    Exit(i32),
    /// A resource failed.
    FailureSeen,
    /// A new graph converged: freed memory goes back once it stays so.
    Settled,
    /// It stayed converged for a moment.
    Release,
    /// Time to bring the metrics' resource states up to date.
    Resync,
    /// Time to look whether a run with a failure has stalled.
    StallTick,
}

/// What the main loop holds between events.
pub(super) struct Loop {
    pub signals: Signals,
    pub hup: tokio::signal::unix::Signal,
    pub hold: Option<Duration>,
    pub deploys: Option<deploys::Deploys>,
    pub fleet: Option<status::Fleet>,
    pub watcher: Option<watch_code::CodeWatcher>,
    pub sources: SourceMap,
    /// The outline of the code whose first output is awaited, and, once that code's last
    /// output is applied, of the running program (see `patch.rs`).
    pub pending: Option<Outline>,
    pub outline: Option<Outline>,
    /// The dataflow holds the function graph as long as it needs it (a program without
    /// streams drops it once its output is computed).
    pub dataflow: Option<Dataflow>,
    /// A deploy's program runs beside the current one until its first output: only then
    /// does it replace it (a deploy that fails here leaves the running program alone).
    pub candidate: Option<Candidate>,
    /// An output to handle before the dataflow's next one (a promoted candidate's first).
    pub replay: Option<Arc<Output>>,
    pub exports: exports::Exports,
    /// The last output, kept while the program collects other hosts' exports: a change of
    /// those interprets it again.
    pub last_output: Option<Arc<Output>>,
    pub exit_rx: tokio::sync::watch::Receiver<Option<i32>>,
    pub failures_seen: tokio::sync::watch::Receiver<u64>,
    /// A failed resource keeps its dependants waiting, so the graph never converges; once
    /// a failure was seen, `--converged-timeout` also ends a run that has stalled.
    pub saw_failure: bool,
    /// The rejected values last reported (each is reported once, while it lasts).
    pub rejected: Vec<Diagnostic>,
    pub stalled_since: Option<tokio::time::Instant>,
    pub tick: tokio::time::Interval,
    pub resync: Option<tokio::time::Interval>,
    /// Once a graph (new or patched) has converged and stayed so for a moment, the memory
    /// its making freed goes back to the OS (see `crate::memory`); a run that ends as it
    /// converges has no need. The moment lets the wake-ups of a cold start settle too: at
    /// 100,000 new files the watcher's queue overflows, and each overflow wakes every file.
    pub settled: tokio::sync::watch::Receiver<bool>,
    pub released: u64,
    pub keeps_running: bool,
    pub release: std::pin::Pin<Box<tokio::time::Sleep>>,
    pub release_armed: bool,
}

impl Runner {
    /// Waits for whatever wakes the loop first (signals before all else).
    pub(super) async fn next_event(&self, lp: &mut Loop) -> Event {
        let hold = lp.hold;
        let fleet = &mut lp.fleet;
        let converged = async {
            match hold {
                Some(hold) if self.applied => {
                    let here = self.engine.wait_converged_for(hold, Duration::MAX / 4).await;
                    match fleet.as_mut() {
                        Some(f) if here => {
                            tracing::info!("converged here; waiting for every agent to converge on the latest deploy");
                            f.converged().await
                        }
                        _ => here,
                    }
                }
                _ => std::future::pending().await,
            }
        };
        let stall_watch = lp.saw_failure && self.applied && hold.is_some();
        let arm = lp.keeps_running && !lp.release_armed && self.engine.generation() != lp.released;
        tokio::select! {
            biased;
            _ = lp.signals.recv() => Event::Signal,
            first = candidate_output(&mut lp.candidate) => Event::CandidateFirst(first),
            out = next_output_or(&mut lp.replay, &mut lp.dataflow) => Event::Output(out),
            _ = lp.exports.changed() => Event::ExportsChanged,
            id = next_deploy(&mut lp.deploys) => Event::Deploy(id),
            reason = watch_code::changed(&mut lp.watcher, &mut lp.hup) => Event::Reload(reason),
            ok = converged => Event::Converged(ok),
            code = lp.exit_rx.wait_for(|c| c.is_some()) => Event::Exit(code.ok().and_then(|c| *c).unwrap_or(0)),
            Ok(()) = lp.failures_seen.changed() => Event::FailureSeen,
            _ = lp.settled.wait_for(|c| *c), if arm => Event::Settled,
            _ = &mut lp.release, if lp.release_armed => Event::Release,
            _ = tick(&mut lp.resync) => Event::Resync,
            _ = lp.tick.tick(), if stall_watch => Event::StallTick,
        }
    }

    /// Handles `event`; how the run stops, or `None` while it goes on.
    pub(super) async fn handle(&mut self, lp: &mut Loop, event: Event) -> Option<Stop> {
        match event {
            Event::Signal => Some(Stop::Signal),
            Event::CandidateFirst(first) => {
                self.on_candidate(lp, first).await;
                None
            }
            Event::Output(Some(Ok(output))) => self.on_output(lp, output).await,
            Event::Output(Some(Err(d))) => self.on_failed_output(lp, d),
            Event::Output(None) => {
                lp.dataflow = None;
                None
            }
            Event::ExportsChanged => self.on_exports(lp).await,
            Event::Deploy(id) => {
                self.on_deploy(lp, id).await;
                None
            }
            Event::Reload(reason) => {
                self.on_reload(lp, reason).await;
                None
            }
            Event::Converged(ok) => ok.then_some(Stop::Converged),
            Event::Exit(code) => Some(Stop::Exit(code)),
            Event::FailureSeen => {
                lp.saw_failure = true;
                None
            }
            Event::Settled => {
                lp.release_armed = true;
                lp.release.as_mut().reset(tokio::time::Instant::now() + RELEASE_QUIET);
                None
            }
            Event::Release => {
                self.on_release(lp);
                None
            }
            Event::Resync => {
                self.metrics.sync_states(&self.engine.status().await);
                None
            }
            Event::StallTick => self.on_stall_tick(lp).await,
        }
    }

    /// A candidate deploy's first output: it replaces the running program, or (failing
    /// here) is dropped while the running program goes on.
    async fn on_candidate(&mut self, lp: &mut Loop, first: Option<Result<Arc<Output>, Diagnostic>>) {
        let Some(c) = lp.candidate.take() else { return };
        match first {
            Some(Ok(output)) => {
                if let Some(df) = lp.dataflow.replace(c.dataflow) {
                    df.shutdown().await;
                }
                tracing::info!(deploy = c.id, "deploy {} is running", c.id);
                if let Some(d) = lp.deploys.as_ref() {
                    d.ran(c.id);
                }
                self.note(|f| {
                    f.deploy = Some(c.id);
                    f.broken = f.broken.take().filter(|(b, _)| *b > c.id);
                    f.refused = f.refused.take().filter(|(r, _)| *r > c.id);
                });
                self.funcs_host.root = c.program.root.clone();
                self.host.program.set(&c.program.root);
                self.host.program.set_entry(&c.program.entry);
                self.program = c.program;
                lp.sources = c.sources;
                (lp.pending, lp.outline) = (None, None);
                lp.replay = Some(output);
            }
            Some(Err(d)) => {
                let why = d.one_line(&c.sources);
                self.note(|f| f.broken = Some((c.id, why)));
                print_diags(&[d], &c.sources);
                tracing::error!(deploy = c.id, "deploy {} fails on this host; it keeps running what it ran", c.id);
                c.dataflow.shutdown().await;
            }
            None => c.dataflow.shutdown().await,
        }
    }

    /// A settled output: reported (its rejected values), then applied once the world's
    /// exports are known.
    async fn on_output(&mut self, lp: &mut Loop, output: Arc<Output>) -> Option<Stop> {
        self.metrics.dataflow_snapshot(true);
        if output.rejected != lp.rejected {
            if !output.rejected.is_empty() {
                print_diags(&output.rejected, &lp.sources);
                tell("the resources that value feeds keep their last good state until it is good again");
            } else if !lp.rejected.is_empty() {
                tell("every value is good again");
            }
            lp.rejected = output.rejected.clone();
        }
        if let Some(df) = &lp.dataflow {
            self.metrics.dataflow_evaluations(df.evaluations());
        }
        let collects = lang::interpret::collects_remote(&output);
        lp.exports.want(collects);
        lp.last_output = collects.then(|| output.clone());
        if !lp.exports.known() {
            // Applied once the world's exports are read (`on_exports`).
            return None;
        }
        let confirmed = lp.pending.take().map(|mut o| {
            o.confirm(&output);
            o
        });
        let last =
            lp.dataflow.as_ref().is_some_and(Dataflow::is_fixed) && lp.last_output.is_none() && lp.candidate.is_none();
        // When this output is the program's last (no stream, nothing collected from other
        // hosts), `apply` lets the sources go once the resources are built: no output and
        // no diagnostic on them can come any more, so their text (the program's size
        // again) is not held through the swap. A reload or a deploy brings its own; an edit
        // of resources' params compiles alone from the outline.
        let applied = self.apply(output, &mut lp.sources, last, &mut lp.exports).await;
        if !applied && !self.applied {
            return Some(Stop::FirstFailed);
        }
        // Later outputs would undo a patch: edits then compile whole.
        lp.outline = confirmed.filter(|_| last && applied);
        None
    }

    /// An output that failed: the run waits, goes on with its last graph, or stops.
    fn on_failed_output(&mut self, lp: &mut Loop, d: Diagnostic) -> Option<Stop> {
        self.metrics.dataflow_snapshot(false);
        let recoverable = d.code.is_some_and(lang::diag::Code::is_recoverable);
        print_diags(&[d], &lp.sources);
        // A daemon whose first value failed (a fact file not readable yet) waits for a good
        // one rather than exiting; a one-shot run ends.
        let waits = recoverable && lp.hold.is_none();
        if !self.applied && !waits {
            return Some(Stop::FirstFailed);
        }
        if !self.applied {
            tell("nothing runs yet; the program starts when the value is good");
            lp.rejected.clear();
            return None;
        }
        if recoverable {
            // The dataflow goes on: the next good value applies.
            tell("the last graph keeps running and repairing; the program goes on when the value is good again");
            lp.rejected.clear();
            return None;
        }
        tell("the program stopped; the last graph keeps running and repairing until the code changes");
        lp.dataflow = None;
        None
    }

    /// Other hosts' exports changed: the last output is interpreted again.
    async fn on_exports(&mut self, lp: &mut Loop) -> Option<Stop> {
        let output = lp.last_output.clone().filter(|_| lp.exports.known())?;
        tracing::debug!(stale = lp.exports.stale(), "other hosts' exports changed; interpreting again");
        if !self.apply(output, &mut lp.sources, false, &mut lp.exports).await && !self.applied {
            return Some(Stop::FirstFailed);
        }
        None
    }

    /// A new deploy: compiled here, it starts beside the running program as the candidate.
    async fn on_deploy(&mut self, lp: &mut Loop, id: u64) {
        let Some(d) = lp.deploys.as_mut() else { return };
        let Some((program, c)) = self.take_up(d, id).await else { return };
        if let Some(old) = lp.candidate.take() {
            old.dataflow.shutdown().await;
        }
        let mut host = self.funcs_host.clone();
        host.root = program.root.clone();
        let dataflow = Dataflow::start(c.graph.clone(), self.registry.clone(), host);
        lp.candidate = Some(Candidate { id, program, sources: c.sources, dataflow });
    }

    /// The sources changed (or SIGHUP): patched in place when only resources' params
    /// changed, else compiled whole.
    async fn on_reload(&mut self, lp: &mut Loop, reason: &'static str) {
        tracing::info!(reason, "reloading the program");
        // SIGHUP evaluates everything again; `--graph-dump` writes the whole graph.
        let patchable = reason == watch_code::SOURCES && self.graph_dump.is_none();
        if let Some(o) = lp.outline.as_ref().filter(|_| patchable) {
            match self.patch(o, &mut lp.watcher).await {
                patch::Patched::Applied(next) => {
                    lp.outline = Some(next);
                    return;
                }
                patch::Patched::Kept => return,
                patch::Patched::Whole => {}
            }
        }
        if let Some(o) = self.reload(&mut lp.watcher, &mut lp.dataflow, &mut lp.sources).await {
            (lp.pending, lp.outline) = (o, None);
        }
    }

    /// Still converged a moment after a new graph: its freed memory goes back to the OS.
    fn on_release(&mut self, lp: &mut Loop) {
        // Not converged any more: armed again once it is.
        lp.release_armed = false;
        if self.engine.is_converged() {
            lp.released = self.engine.generation();
            let started = std::time::Instant::now();
            crate::memory::release_freed();
            let took_us = started.elapsed().as_micros() as u64;
            tracing::debug!(generation = lp.released, took_us, "returned freed memory to the OS");
        }
    }

    /// With a failure seen: a run whose other resources have all stopped for the hold
    /// ends as converged.
    async fn on_stall_tick(&mut self, lp: &mut Loop) -> Option<Stop> {
        if !self.stalled().await {
            lp.stalled_since = None;
            return None;
        }
        let since = *lp.stalled_since.get_or_insert_with(tokio::time::Instant::now);
        (since.elapsed() >= lp.hold.unwrap_or_default()).then_some(Stop::Converged)
    }
}

/// The interval's next tick, or never without one.
async fn tick(interval: &mut Option<tokio::time::Interval>) {
    match interval {
        Some(i) => {
            i.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// The next deploy to take up, or never when the run does not follow deploys.
async fn next_deploy(deploys: &mut Option<deploys::Deploys>) -> u64 {
    match deploys {
        Some(d) => d.next().await,
        None => std::future::pending().await,
    }
}

/// The first output of a candidate deploy, or never without one.
async fn candidate_output(candidate: &mut Option<Candidate>) -> Option<Result<Arc<Output>, Diagnostic>> {
    match candidate {
        Some(c) => c.dataflow.next_shared().await,
        None => std::future::pending().await,
    }
}

/// `replay`'s output first, then the dataflow's next.
async fn next_output_or(
    replay: &mut Option<Arc<Output>>,
    df: &mut Option<Dataflow>,
) -> Option<Result<Arc<Output>, Diagnostic>> {
    if let Some(out) = replay.take() {
        return Some(Ok(out));
    }
    match df {
        Some(df) => df.next_shared().await,
        None => std::future::pending().await,
    }
}
