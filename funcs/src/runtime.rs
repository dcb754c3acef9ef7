//! The reactive dataflow runtime: runs a typed [`FuncGraph`] and produces a program
//! [`Output`] each time the values settle.
//!
//! Design in brief (details in `runtime/evaluator.rs`):
//! * A node evaluated in one environment is an *instance*. Static nodes (no free lambda
//!   or loop parameter) have one instance; dynamic nodes have one per distinct value of
//!   their free parameters, so a lambda body called by `iter.map` is cached per element.
//! * Streams (built-ins with [`crate::api::FuncImpl::Stream`]) run as tokio tasks, one
//!   per instance; their values arrive as events. An event marks its dependants dirty;
//!   the statement walk then pulls what it needs, recomputing in dependency order only
//!   what changed (glitch-free, with equal-value cut-off).
//! * The graph has *settled* when the walk found every needed value and no event is
//!   queued; that walk's output is published. Instances the walk no longer reaches
//!   (inactive branches, removed elements) are dropped and their streams cancelled.
//!
//! * Errors are values: a catchable error flows to the nearest `<|>`; any error that
//!   reaches a statement stops the run with one errStream [`Diagnostic`] at the failing
//!   node (at the call of a lambda for errors raised inside it, with a label inside). A
//!   built-in that panics, or a stream that ends without a value, is such an error too.
//!
//! Evaluation runs on a dedicated thread: it is CPU-bound, must not stall the tokio
//! workers, and recurses as deep as the graph is (a 10,000-node chain), which needs a
//! larger stack than a runtime worker has.

mod driver;
mod eval;
mod evaluator;
mod info;
mod key;
mod ops;
mod stream;
mod walk;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use lang::diag::{Diagnostic, Stage};
use lang::ir::FuncGraph;
use lang::output::Output;
use tokio::runtime::Handle;
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::api::Host;
use crate::registry::Registry;
use driver::Snapshot;
use stream::{Event, Spawner};

/// Stack of the evaluator thread: deep graphs recurse once per level (about 1 KiB each).
/// Only touched pages are committed.
const ENGINE_STACK: usize = 256 << 20;

/// A running function graph.
pub struct Dataflow {
    /// The latest settled snapshot. The evaluator thread owns the sender and drops it when
    /// it stops, which ends [`Dataflow::next`].
    snapshots: watch::Receiver<Snapshot>,
    /// To wake the evaluator thread for shutdown.
    events: std::sync::mpsc::Sender<Event>,
    /// Root of every stream's cancellation token.
    cancel: CancellationToken,
    /// Tracks every stream task (and its forwarder), awaited by `shutdown`.
    tracker: TaskTracker,
    /// Completes (by being dropped) when the evaluator thread has finished.
    done: Option<oneshot::Receiver<()>>,
    /// Instance computations so far, and whether the last output is out.
    progress: Arc<driver::Progress>,
}

impl Dataflow {
    /// Starts running `graph`. Stream tasks are spawned on the current tokio runtime
    /// (this must be called from within one).
    pub fn start(graph: Arc<FuncGraph>, registry: Arc<Registry>, host: Host) -> Dataflow {
        let (events_tx, events_rx) = std::sync::mpsc::channel();
        let (snap_tx, mut snapshots) = watch::channel(None);
        let cancel = CancellationToken::new();
        let tracker = TaskTracker::new();
        let (done_tx, done) = oneshot::channel::<()>();
        let progress = Arc::new(driver::Progress::default());
        let spawner = Spawner {
            handle: Handle::current(),
            tracker: tracker.clone(),
            cancel: cancel.clone(),
            events: events_tx.clone(),
            host,
        };
        let counter = progress.clone();
        let spawned =
            std::thread::Builder::new().name("tend-dataflow".into()).stack_size(ENGINE_STACK).spawn(move || {
                driver::run(graph, registry, spawner, events_rx, snap_tx, counter);
                drop(done_tx);
            });
        if let Err(e) = spawned {
            let (tx, rx) = watch::channel(Some(Err(Diagnostic::without_span(
                Stage::Stream,
                format!("can't start the dataflow thread: {e}"),
            ))));
            drop(tx);
            snapshots = rx;
            snapshots.mark_changed();
        }
        Dataflow { snapshots, events: events_tx, cancel, tracker, done: Some(done), progress }
    }

    /// The next settled snapshot. Snapshots that were superseded before this was called
    /// are skipped; an identical snapshot is not repeated. After an error (returned once)
    /// or shutdown, `None`.
    pub async fn next(&mut self) -> Option<Result<Output, Diagnostic>> {
        Some(self.next_shared().await?.map(Arc::unwrap_or_clone))
    }

    /// [`Dataflow::next`] without copying the output: it is shared with the evaluator thread.
    pub async fn next_shared(&mut self) -> Option<Result<Arc<Output>, Diagnostic>> {
        loop {
            if self.snapshots.changed().await.is_err() {
                return None;
            }
            let snapshot = self.snapshots.borrow_and_update().clone();
            match snapshot {
                Some(Ok(handoff)) => {
                    if let Some(output) = handoff.take() {
                        return Some(Ok(output));
                    }
                }
                Some(Err(d)) => return Some(Err(d)),
                None => {}
            }
        }
    }

    /// How many node computations ran so far (an observability counter).
    pub fn evaluations(&self) -> u64 {
        self.progress.evaluations.load(Ordering::Relaxed)
    }

    /// The graph holds no stream: the output last received is the last this dataflow
    /// produces (set before that output is sent).
    pub fn is_fixed(&self) -> bool {
        self.progress.fixed.load(Ordering::SeqCst)
    }

    /// Stops the engine, cancels every stream and waits for all their tasks.
    pub async fn shutdown(mut self) {
        self.stop();
        if let Some(done) = self.done.take() {
            let _ = done.await;
        }
        self.tracker.close();
        self.tracker.wait().await;
    }

    fn stop(&self) {
        let _ = self.events.send(Event::Shutdown);
        self.cancel.cancel();
    }
}

impl Drop for Dataflow {
    /// Asks the engine to stop; only [`Dataflow::shutdown`] waits for it.
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `graph` until its first settled snapshot (for `tend graph` and the conformance
/// tests), then shuts it down. An engine error or `timeout` without a snapshot is an
/// errStream diagnostic.
pub async fn first_output(
    graph: Arc<FuncGraph>,
    registry: Arc<Registry>,
    host: Host,
    timeout: Duration,
) -> Result<Output, Diagnostic> {
    let mut df = Dataflow::start(graph, registry, host);
    let result = match tokio::time::timeout(timeout, df.next()).await {
        Ok(Some(r)) => r,
        Ok(None) => {
            Err(Diagnostic::without_span(Stage::Stream, "the function engine stopped without producing values"))
        }
        Err(_) => Err(Diagnostic::without_span(
            Stage::Stream,
            format!("timeout: the function graph did not produce all its values within {} s", timeout.as_secs_f64()),
        )),
    };
    df.shutdown().await;
    result
}
