//! The resource graph runtime: one worker task per resource, mgmt's ordering rule
//! (timestamps, pokes and back-pokes), notifications, send/recv, metaparams, graph swap by
//! diff, converged tracking and graceful shutdown. Knows nothing about the language or any
//! concrete resource kind: it runs whatever implements [`Resource`].
//!
//! Lifecycle of a generation: the app builds a [`Graph`] and calls [`Engine::apply`]; the
//! candidate is checked and diffed against what runs (startup is a swap from the empty
//! graph); unchanged vertices keep running with their watches; the rest stop or start.
//!
//! ```
//! use async_trait::async_trait;
//! use engine::{ApplyCtx, Engine, EngineConfig, Graph, Meta, ResError, ResKey, Resource};
//! use std::time::Duration;
//!
//! /// A resource that is right after its first run.
//! struct Once(bool);
//!
//! #[async_trait]
//! impl Resource for Once {
//!     async fn check_apply(&mut self, _ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
//!         let was_right = self.0;
//!         self.0 |= apply;
//!         Ok(was_right)
//!     }
//!     fn fingerprint(&self) -> String {
//!         String::new()
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let engine = Engine::new(EngineConfig::default());
//! let mut graph = Graph::new();
//! graph.add_vertex(ResKey::new("once", "a"), Meta::default(), Box::new(Once(false)));
//! graph.add_vertex(ResKey::new("once", "b"), Meta::default(), Box::new(Once(false)));
//! graph.add_edge(ResKey::new("once", "a"), ResKey::new("once", "b"), false);
//! let report = engine.apply(graph).await.expect("valid graph");
//! assert_eq!(report.started.len(), 2);
//! assert!(engine.wait_converged(Duration::from_secs(5)).await);
//! engine.shutdown(Duration::from_secs(5)).await;
//! # }
//! ```
//!
//! Invariants:
//! - A candidate that fails validation or init is rejected whole; the running graph stays.
//! - A failing resource never stops the engine or unrelated resources; its dependents wait.
//! - Every spawned task has an owner and is awaited (workers by the engine, watches by their
//!   worker), with deadlines and abort for stragglers.

mod batch;
mod converger;
mod event;
pub mod fasthash;
pub mod flap;
mod graph;
mod group;
mod key;
mod meta;
mod node;
mod patch;
mod res;
mod starts;
mod swap;
mod undo;
mod worker;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{Mutex, broadcast, watch};

pub use event::EngineEvent;
pub use graph::{Edge, Graph, GraphError, Vertex};
pub use group::{Group, member_field};
pub use key::{IoAt, Payload, ResError, ResKey, Retry, SendRecv, retry_of};
pub use meta::{Meta, MetaError, parse_sema};
pub use node::WorkerState;
pub use res::{ApplyCtx, InitCtx, Resource, Subscription, WatchCtx};
pub use swap::{Rejection, SwapError, SwapReport};
pub use undo::Revive;

use converger::Converger;
use node::lock;
use swap::Running;
use worker::Shared;

/// Engine settings.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Root of per-resource state (`<state_dir>/engine/state/...`) and shared stores.
    pub state_dir: PathBuf,
    /// How long a swap waits for a removed worker before aborting it.
    pub stop_timeout: Duration,
    /// Where the workers, and so the check-applies, run when set: a runtime of their own,
    /// so blocking file and process work in a check-apply (a slow disk, an fsync) never
    /// stalls the watches and servers, which stay on the runtime the engine was created in.
    /// `None`: everything runs on the engine's runtime.
    pub apply_pool: Option<tokio::runtime::Handle>,
    /// The run ends at its first converge (`tend run --converged-timeout 0`, `--noop`):
    /// workers start no passive watch ([`Resource::watch_passive`]), only its startup event,
    /// so each such resource is checked once, as a one-shot agent would. Watches that do
    /// work of their own still start.
    pub one_shot: bool,
    /// Builds a pending reversal again from its record after a restart (`Meta:reverse`):
    /// with it the engine keeps pending reversals under `state_dir` and applies, at its
    /// first graph, those whose resource is gone. `None`: reversals live in memory only.
    pub revive: Option<Revive>,
}

impl Default for EngineConfig {
    fn default() -> EngineConfig {
        EngineConfig {
            state_dir: std::env::temp_dir().join("tend-state"),
            stop_timeout: Duration::from_secs(10),
            apply_pool: None,
            one_shot: false,
            revive: None,
        }
    }
}

/// The running engine. Create it inside a tokio runtime.
pub struct Engine {
    shared: Arc<Shared>,
    config: EngineConfig,
    /// The running graph; locked for the duration of a swap so swaps never interleave.
    running: Mutex<Running>,
    generation: AtomicU64,
    shut_down: AtomicBool,
}

/// What [`Engine::shutdown`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    pub stopped: usize,
    /// Workers that did not stop before the deadline and were aborted.
    pub stragglers: Vec<ResKey>,
}

impl Engine {
    pub fn new(config: EngineConfig) -> Engine {
        let (events, _) = broadcast::channel(4096);
        let (changes, _) = broadcast::channel(4096);
        let shared = Arc::new(Shared {
            clock: AtomicU64::new(0),
            converger: Arc::new(Converger::new(events.clone())),
            events,
            subscribed: AtomicBool::new(false),
            changes,
            checks: Arc::default(),
            semas: std::sync::Mutex::new(Default::default()),
            retries: std::sync::Mutex::new(Default::default()),
            gate: tokio::sync::RwLock::new(()),
            gated: std::sync::Mutex::new(Vec::new()),
            watch_stop_timeout: config.stop_timeout / 2,
            exit: Arc::new(watch::Sender::new(None)),
            failed_for_good: watch::Sender::new(0),
            exiting: AtomicBool::new(false),
            starts: Arc::default(),
            apply_pool: config.apply_pool.clone(),
            one_shot: config.one_shot,
            watch_rt: tokio::runtime::Handle::try_current().ok(),
        });
        let running = Running::with_undo(&config);
        Engine {
            shared,
            config,
            running: Mutex::new(running),
            generation: AtomicU64::new(0),
            shut_down: AtomicBool::new(false),
        }
    }

    /// Makes `graph` the running graph by diff. On `Err` nothing running was touched.
    pub async fn apply(&self, graph: Graph) -> Result<SwapReport, SwapError> {
        let mut running = self.running.lock().await;
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(SwapError::ShutDown);
        }
        let generation = self.generation.load(Ordering::SeqCst) + 1;
        let report =
            swap::swap(&self.shared, &mut running, graph, &self.config.state_dir, self.config.stop_timeout, generation)
                .await?;
        tracing::info!(
            generation,
            vertices = running.vertices.len(),
            edges = running.edge_count(),
            started = report.started.len(),
            stopped = report.stopped.len(),
            "graph swapped"
        );
        Ok(self.swapped(report))
    }

    /// Makes a swap's generation current and tells subscribers.
    fn swapped(&self, report: SwapReport) -> SwapReport {
        self.generation.store(report.generation, Ordering::SeqCst);
        self.shared.emit(true, || EngineEvent::Swapped {
            generation: report.generation,
            started: report.started.len(),
            stopped: report.stopped.len(),
            unchanged: report.unchanged.len(),
        });
        report
    }

    /// Replaces running vertices by the given instances of the same keys, leaving every
    /// other vertex and every edge as it runs (a live edit that changed only some resources'
    /// params; the caller vouches that their edges did not change). A vertex whose
    /// fingerprint and metaparams are those running is left alone. On `Err` nothing running
    /// was touched; a key that does not run is an error.
    pub async fn patch(&self, vertices: Vec<Vertex>) -> Result<SwapReport, SwapError> {
        let mut running = self.running.lock().await;
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(SwapError::ShutDown);
        }
        let generation = self.generation.load(Ordering::SeqCst) + 1;
        let report = patch::patch(
            &self.shared,
            &mut running,
            vertices,
            &self.config.state_dir,
            self.config.stop_timeout,
            generation,
        )
        .await?;
        tracing::info!(generation, replaced = report.started.len(), "graph patched");
        Ok(self.swapped(report))
    }

    /// A receiver of the converged state: `true` when every worker succeeded and is idle
    /// (or failed for good).
    pub fn converged(&self) -> watch::Receiver<bool> {
        self.shared.converger.subscribe()
    }

    pub fn is_converged(&self) -> bool {
        self.shared.converger.is_converged()
    }

    /// Waits until converged; false on timeout.
    pub async fn wait_converged(&self, timeout: Duration) -> bool {
        let mut rx = self.converged();
        tokio::time::timeout(timeout, rx.wait_for(|c| *c)).await.is_ok_and(|r| r.is_ok())
    }

    /// The exit code a resource asked for (the `exit` kind), once one did.
    pub fn exit_requested(&self) -> watch::Receiver<Option<i32>> {
        self.shared.exit.subscribe()
    }

    /// The number of workers that failed for good so far (retries exhausted), changing with
    /// each one: for callers that only need to know *that* something failed, without the
    /// cost of following every per-resource [`EngineEvent`].
    pub fn failures_seen(&self) -> watch::Receiver<u64> {
        self.shared.failed_for_good.subscribe()
    }

    /// The events from now on that say something changed: swaps, applies that changed (or
    /// under noop would change) something, failures. Cheaper to follow than
    /// [`Engine::subscribe`] at scale: an idempotent run of 10,000 resources sends none of
    /// its 20,000 per-resource events here.
    pub fn subscribe_changes(&self) -> broadcast::Receiver<EngineEvent> {
        self.shared.changes.subscribe()
    }

    /// The count of check-applies finished so far (for progress reports).
    pub fn checks_done(&self) -> Arc<AtomicU64> {
        self.shared.checks.clone()
    }

    /// Events from now on (swaps, starts, applies, failures, converged transitions).
    pub fn subscribe(&self) -> broadcast::Receiver<EngineEvent> {
        self.shared.subscribed.store(true, Ordering::Relaxed);
        self.shared.events.subscribe()
    }

    /// Resources that stopped for good, with their last error.
    pub async fn failures(&self) -> BTreeMap<ResKey, String> {
        let running = self.running.lock().await;
        running.vertices.iter().filter_map(|(k, v)| v.node.failure().map(|e| (k.clone(), e))).collect()
    }

    /// The resources a failure holds up: each one that has not run since it was started or
    /// poked (waiting behind a parent), with the failed resource found above it.
    pub async fn held_up(&self) -> BTreeMap<ResKey, ResKey> {
        let running = self.running.lock().await;
        // Nothing failed (as in most runs): nothing is held up, and the parents of every
        // resource need not be gathered (tens of milliseconds at 100,000).
        if !running.vertices.values().any(|v| v.node.failure().is_some()) {
            return BTreeMap::new();
        }
        let failed = |k: &ResKey| running.vertices.get(k).is_some_and(|v| v.node.failure().is_some());
        let mut parents: BTreeMap<&ResKey, Vec<&ResKey>> = BTreeMap::new();
        let links: Vec<(&ResKey, Arc<node::Links>)> =
            running.vertices.iter().map(|(k, v)| (k, v.node.links())).collect();
        for (to, links) in &links {
            parents.entry(*to).or_default().extend(links.parents.iter().map(|l| &l.node.key));
        }
        let mut blame = BTreeMap::new();
        for (key, v) in &running.vertices {
            if !matches!(v.node.state(), WorkerState::Waiting | WorkerState::Starting) {
                continue;
            }
            let mut seen = std::collections::BTreeSet::new();
            let mut todo = vec![key];
            while let Some(k) = todo.pop() {
                if !seen.insert(k) {
                    continue;
                }
                let above = parents.get(k).map(Vec::as_slice).unwrap_or_default();
                if let Some(f) = above.iter().find(|p| failed(p)) {
                    blame.insert(key.clone(), (*f).clone());
                    break;
                }
                todo.extend(above.iter().copied());
            }
        }
        blame
    }

    /// What every worker is doing, by key.
    pub async fn status(&self) -> BTreeMap<ResKey, WorkerState> {
        let running = self.running.lock().await;
        running.vertices.iter().map(|(k, v)| (k.clone(), v.node.state())).collect()
    }

    /// Waits until the graph has stayed converged for `hold` without interruption (mgmt's
    /// `--converger-timeout`); false if that did not happen within `timeout`.
    pub async fn wait_converged_for(&self, hold: Duration, timeout: Duration) -> bool {
        let mut rx = self.converged();
        let settle = async {
            loop {
                if rx.wait_for(|c| *c).await.is_err() {
                    return false;
                }
                // Any change after the value seen above, even one already undone, is
                // activity that restarts the hold.
                match tokio::time::timeout(hold, rx.changed()).await {
                    Err(_) => return true,
                    Ok(Err(_)) => return false,
                    Ok(Ok(())) => {}
                }
            }
        };
        tokio::time::timeout(timeout, settle).await.unwrap_or(false)
    }

    /// The keys of the running graph, sorted.
    pub async fn keys(&self) -> Vec<ResKey> {
        self.running.lock().await.vertices.keys().cloned().collect()
    }

    /// The number of swaps applied so far.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// [`Engine::shutdown`] for a process about to exit: every worker still stops and
    /// cleans up in order, but the memory of the stopped graph is left to the OS, which
    /// takes it back at once (freeing 10,000 resources piece by piece costs tens of ms).
    pub async fn shutdown_for_exit(&self, deadline: Duration) -> ShutdownReport {
        self.shared.exiting.store(true, Ordering::Relaxed);
        self.shutdown(deadline).await
    }

    /// Stops every worker: waits for in-flight check-applies (up to half the deadline),
    /// then cancels everything and awaits the workers until `deadline`, aborting the rest.
    /// Later [`Engine::apply`] calls fail with [`SwapError::ShutDown`].
    pub async fn shutdown(&self, deadline: Duration) -> ShutdownReport {
        let started = tokio::time::Instant::now();
        let mut running = self.running.lock().await;
        self.shut_down.store(true, Ordering::SeqCst);
        // Pause first: let in-flight check-applies finish (for up to half the deadline)
        // and start no new ones, so an orderly stop does not cut a command or a write
        // short. What is still running after that is cancelled.
        let pause = self.shared.close_gate(deadline / 2).await;
        let vertices: Vec<_> = std::mem::take(&mut running.vertices).into_values().collect();
        let stopped = vertices.len();
        let left = deadline.saturating_sub(started.elapsed());
        let stragglers = swap::stop(&self.shared, vertices, left).await;
        lock(&self.shared.retries).clear();
        drop(pause);
        ShutdownReport { stopped, stragglers }
    }
}

/// Dropping the engine without [`Engine::shutdown`] still stops every worker (they exit
/// and clean up on their own, as long as the runtime keeps running).
impl Drop for Engine {
    fn drop(&mut self) {
        if let Ok(running) = self.running.try_lock() {
            for v in running.vertices.values() {
                v.stop();
            }
        }
    }
}

#[cfg(test)]
mod layering {
    /// The engine's modules, bottom first: each may use only the ones before it (see
    /// `key.rs`). A `use crate::x` against this order is an import loop in the making.
    const ORDER: &[&str] = &[
        "fasthash",
        "meta",
        "key",
        "event",
        "flap",
        "converger",
        "node",
        "res",
        "group",
        "undo",
        "graph",
        "starts",
        "worker",
        "batch",
        "swap",
        "patch",
    ];

    #[test]
    fn modules_only_use_the_ones_below_them() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut wrong = Vec::new();
        for (at, module) in ORDER.iter().enumerate() {
            let text = std::fs::read_to_string(src.join(format!("{module}.rs"))).unwrap();
            for (other_at, other) in ORDER.iter().enumerate() {
                if other_at >= at && other != module && text.contains(&format!("crate::{other}::")) {
                    wrong.push(format!("{module} uses {other}"));
                }
            }
        }
        assert!(wrong.is_empty(), "imports against the layering: {wrong:?}");
    }
}
