//! The evaluator thread's loop: evaluate a wave, decide whether the graph settled, publish
//! the snapshot, wait for the next event.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use lang::diag::{Diagnostic, Stage};
use lang::ir::FuncGraph;
use lang::output::Output;
use tokio::sync::watch;

use crate::registry::Registry;
use crate::runtime::evaluator::Evaluator;
use crate::runtime::info::{CycleAt, GraphInfo};
use crate::runtime::stream::{Event, Spawner};
use crate::runtime::walk::{Walked, walk};

/// How long a snapshot is held back while a stream has been given new inputs but has
/// not answered yet. Streams normally answer within microseconds; the bound keeps a
/// stream that ignores an input change from stalling the output.
const STALE_GRACE: Duration = Duration::from_millis(100);

/// Shared, not copied (at 10,000 resources a copy is several megabytes), and handed over
/// by the channel rather than kept in it: once the reader took an output, only the reader
/// and the evaluator thread's `last` hold it (`last` is what the next wave is compared with,
/// and is gone when the program has no streams), so a program without streams frees its
/// output as soon as the reader has turned it into resources.
pub(crate) type Snapshot = Option<Result<Handoff, Diagnostic>>;

/// An output waiting in the channel for its one reader.
#[derive(Clone)]
pub(crate) struct Handoff(Arc<std::sync::Mutex<Option<Arc<Output>>>>);

impl Handoff {
    fn new(output: Arc<Output>) -> Handoff {
        Handoff(Arc::new(std::sync::Mutex::new(Some(output))))
    }

    /// The output, the first time it is asked for.
    pub(crate) fn take(&self) -> Option<Arc<Output>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// What the evaluator thread tells the reader besides outputs.
#[derive(Default)]
pub(crate) struct Progress {
    /// Instance computations so far, updated after each wave.
    pub(crate) evaluations: AtomicU64,
    /// The graph holds no stream: the output last sent is the last one.
    pub(crate) fixed: std::sync::atomic::AtomicBool,
}

/// Why [`drive`] returned.
enum Driven {
    /// Shut down, or stopped with an error (already published).
    Stopped,
    /// The graph holds no stream, so its output can never change again: the engine and
    /// the function graph are no longer needed. Holds the last output when it is still to
    /// be sent: it goes out once they are freed.
    Fixed(Option<Arc<Output>>),
}

/// Runs a graph until shutdown or the first error. Cancels every stream on the way out.
pub(crate) fn run(
    graph: Arc<FuncGraph>,
    registry: Arc<Registry>,
    spawner: Spawner,
    events: Receiver<Event>,
    out: watch::Sender<Snapshot>,
    progress: Arc<Progress>,
) {
    let info = match GraphInfo::build(&graph, &registry) {
        Ok(info) => info,
        Err(CycleAt(node)) => {
            let span = graph.nodes.get(node.0 as usize).map(|n| n.span).unwrap_or_default();
            out.send_replace(Some(Err(Diagnostic::new(Stage::Stream, "the function graph has a cycle", span))));
            return;
        }
    };
    let cancel = spawner.cancel.clone();
    let engine = Evaluator::new(graph, info, spawner);
    let result = catch_unwind(AssertUnwindSafe(|| drive(&engine, &events, &out, &progress)));
    match result {
        Ok(Driven::Stopped) => {}
        Ok(Driven::Fixed(output)) => {
            // Hand the output over, then free the function graph and every computed value
            // (as large as the program's syntax tree) here while the reader turns the output
            // into resources: about 25 ms at 100,000 resources, off the reader's path, and no
            // higher peak (the run's peak is at the swap, well after). Then idle until
            // shutdown: nothing but a shutdown can arrive without streams.
            if let Some(output) = output {
                out.send_replace(Some(Ok(Handoff::new(output))));
            }
            drop(engine);
            while let Ok(ev) = events.recv() {
                if matches!(ev, Event::Shutdown) {
                    break;
                }
            }
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            out.send_replace(Some(Err(Diagnostic::without_span(
                Stage::Stream,
                format!("internal error in the dataflow runtime: {what}"),
            ))));
        }
    }
    cancel.cancel();
}

fn drive(engine: &Evaluator, events: &Receiver<Event>, out: &watch::Sender<Snapshot>, progress: &Progress) -> Driven {
    let mut last: Option<Arc<Output>> = None;
    let mut stale_since: Option<Instant> = None;
    // A value a declared type's checks reject, reported once: with streams, a later
    // value may pass, so the dataflow keeps running and the next good output goes out.
    let mut rejected: Option<Diagnostic> = None;
    loop {
        engine.begin_wave();
        let walked = walk(engine, last.as_deref());
        engine.end_wave();
        progress.evaluations.store(engine.evaluations(), Ordering::Relaxed);
        if let Walked::Failed(d) = walked {
            if d.code.is_some_and(lang::diag::Code::is_recoverable) && !engine.is_fixed() {
                if rejected.as_ref() != Some(&d) {
                    out.send_replace(Some(Err(d.clone())));
                    rejected = Some(d);
                }
                last = None;
                let Ok(ev) = events.recv() else { return Driven::Stopped };
                if !engine.apply(ev) || matches!(drain(engine, events), Drained::Shutdown) {
                    return Driven::Stopped;
                }
                continue;
            }
            tracing::debug!(error = %d.message, "dataflow stopped");
            out.send_replace(Some(Err(d)));
            return Driven::Stopped;
        }
        rejected = None;
        // An event that arrived during the wave means the graph has not settled yet.
        match drain(engine, events) {
            Drained::Shutdown => return Driven::Stopped,
            Drained::Some => continue,
            Drained::Nothing => {}
        }
        if let Walked::Ready(output) = walked {
            if engine.has_stale_streams() {
                let since = *stale_since.get_or_insert_with(Instant::now);
                let left = STALE_GRACE.saturating_sub(since.elapsed());
                if !left.is_zero() {
                    match events.recv_timeout(left) {
                        Ok(ev) => {
                            if !engine.apply(ev) || matches!(drain(engine, events), Drained::Shutdown) {
                                return Driven::Stopped;
                            }
                            continue;
                        }
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(RecvTimeoutError::Disconnected) => return Driven::Stopped,
                    }
                }
            }
            stale_since = None;
            let fixed = engine.is_fixed();
            // Said before the output goes out: its reader then knows it is the last.
            progress.fixed.store(fixed, Ordering::SeqCst);
            let fresh = (last.as_deref() != Some(&output)).then(|| Arc::new(output));
            if fixed {
                return Driven::Fixed(fresh);
            }
            if let Some(output) = fresh {
                out.send_replace(Some(Ok(Handoff::new(output.clone()))));
                last = Some(output);
            }
        }
        match events.recv() {
            Ok(ev) => {
                if !engine.apply(ev) || matches!(drain(engine, events), Drained::Shutdown) {
                    return Driven::Stopped;
                }
            }
            Err(_) => return Driven::Stopped,
        }
    }
}

enum Drained {
    Nothing,
    Some,
    Shutdown,
}

/// Applies every queued event without waiting.
fn drain(engine: &Evaluator, events: &Receiver<Event>) -> Drained {
    let mut any = Drained::Nothing;
    loop {
        match events.try_recv() {
            Ok(ev) => {
                if !engine.apply(ev) {
                    return Drained::Shutdown;
                }
                any = Drained::Some;
            }
            Err(TryRecvError::Empty) => return any,
            Err(TryRecvError::Disconnected) => return Drained::Shutdown,
        }
    }
}
