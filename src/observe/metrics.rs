//! Prometheus metrics for `tend run`: the series ([`Metrics`], registered in a
//! `prometheus-client` registry, which writes the OpenMetrics text exposition), the
//! engine-event feed that keeps them current, and the HTTP endpoint for `GET /metrics`.
//!
//! The endpoint is hyper (the HTTP stack the `http:server` kinds already use): one request
//! per connection, at most [`MAX_REQUEST`] bytes of header read within a deadline, at most
//! [`MAX_CONNECTIONS`] clients at once, one path.
//!
//! What the engine's events can and cannot tell (see `engine::EngineEvent`): they carry
//! the resource kind and the outcome of every check-apply, worker starts and stops, graph
//! swaps and converged transitions, but no durations and no "apply started" mark. So
//! [`Metrics::watch_engine`] fills every series except the check-apply duration histogram;
//! that one is fed by [`Metrics::observe_check_apply`], which `super::timing` calls from a
//! transparent wrapper around every resource of a candidate graph.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

use bytes::Bytes;
use engine::{Engine, EngineEvent, ResKey, WorkerState};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{ALLOW, CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::broadcast::error::RecvError;
use tokio::task::{JoinHandle, JoinSet};

/// Upper bounds (seconds) of the check-apply duration histogram buckets; `+Inf` is implied.
pub const DURATION_BUCKETS: [f64; 11] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0];

/// The exposition's content type.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The longest request head the server reads before answering 431.
pub const MAX_REQUEST: usize = 8192;

/// How long a client may take to send its request head.
const READ_DEADLINE: Duration = Duration::from_secs(5);

/// How long one connection may live in all (a client that does not read its response
/// must not hold a task forever).
const CONNECTION_DEADLINE: Duration = Duration::from_secs(10);

/// Connections served at once; more are closed on accept.
pub const MAX_CONNECTIONS: usize = 64;

/// The `state` label values of `tend_resources`, in exposition order.
const STATES: [&str; 6] = ["starting", "waiting", "applying", "idle", "retrying", "failed"];

/// How one check-apply ended: the `result` label of `tend_check_apply_total`.
#[derive(Copy, Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord)]
pub enum ApplyResult {
    /// The state was already right.
    Ok,
    /// The state was wrong and was fixed (in noop mode: would have been).
    Changed,
    /// Check-apply (or the watch) failed.
    Error,
}

impl ApplyResult {
    fn label(self) -> &'static str {
        match self {
            ApplyResult::Ok => "ok",
            ApplyResult::Changed => "changed",
            ApplyResult::Error => "error",
        }
    }
}

/// The label sets of the series with labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindResult {
    kind: String,
    result: ApplyResult,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct State {
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Backend {
    backend: String,
}

impl EncodeLabelValue for ApplyResult {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> std::fmt::Result {
        encoder.write_str(self.label())
    }
}

/// A float gauge (seconds).
type Seconds = Gauge<f64, AtomicU64>;

/// Every series `tend run` exports, registered once in a `prometheus-client` registry
/// that writes the exposition. Cheap to update from any thread; share it as
/// `Arc<Metrics>`. What is read at each scrape (resource states, the world's link) is set
/// just before it is written, under `render`'s lock.
pub struct Metrics {
    registry: Registry,
    swaps: Family<Outcome, Counter>,
    generation: Gauge,
    compile_errors: Counter,
    /// Resources found fought over by another writer ([`EngineEvent::Flapping`]).
    flapping: Counter,
    snapshots: Counter,
    snapshot_errors: Counter,
    evaluations: Counter,
    /// The last `Dataflow::evaluations()` seen, to turn per-dataflow totals into deltas.
    evaluations_seen: std::sync::atomic::AtomicU64,
    workers_started: Counter,
    workers_stopped: Counter,
    converged: Gauge,
    events_lagged: Counter,
    applies: Family<KindResult, Counter>,
    durations: Family<KindResult, Histogram, fn() -> Histogram>,
    resources: Family<State, Gauge>,
    world_connected: Family<Backend, Gauge>,
    world_stale: Seconds,
    world_latency: Seconds,
    world_events: Counter,
    world_owned: Gauge,
    /// The last known state of every running resource.
    states: Mutex<BTreeMap<ResKey, &'static str>>,
    /// The world the run shares with other hosts (its link is read at each scrape).
    world: std::sync::OnceLock<Arc<dyn world::World>>,
    /// The membership of a cluster this agent forms with others (`--client-urls`).
    membership: std::sync::OnceLock<tokio::sync::watch::Receiver<world::etcd::member::MemberState>>,
    cluster_member: Gauge,
    cluster_members: Gauge,
    cluster_healthy: Gauge,
    cluster_leader: Gauge,
    cluster_ideal: Gauge,
    /// One scrape at a time (the values read at a scrape are set, then written).
    rendering: Mutex<()>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

fn state_label(state: &WorkerState) -> &'static str {
    match state {
        WorkerState::Starting => "starting",
        WorkerState::Waiting => "waiting",
        WorkerState::Applying => "applying",
        WorkerState::Idle => "idle",
        WorkerState::Retrying { .. } => "retrying",
        WorkerState::Failed { .. } => "failed",
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        registry.register(
            "tend_build",
            "The running tend version",
            Info::new(vec![("version".to_string(), env!("CARGO_PKG_VERSION").to_string())]),
        );
        // What each registration returns is the handle the series is updated through.
        fn reg<M: prometheus_client::registry::Metric + Clone>(r: &mut Registry, name: &str, help: &str, m: M) -> M {
            r.register(name, help.trim_end_matches('.'), m.clone());
            m
        }
        let r = &mut registry;
        let resources = reg(r, "tend_resources", "Resources in the running graph, by worker state", Family::default());
        let applies = reg(
            r,
            "tend_check_apply",
            "Check-apply runs by resource kind and result (ok: already right; changed: fixed; error: check-apply or watch failed)",
            Family::default(),
        );
        let durations = reg(
            r,
            "tend_check_apply_duration_seconds",
            "Check-apply duration by resource kind and result",
            Family::new_with_constructor(duration_histogram as fn() -> Histogram),
        );
        let swaps = reg(r, "tend_graph_swaps", "Candidate resource graphs, by outcome", Family::default());
        let generation = reg(r, "tend_graph_generation", "Generation of the running graph", Gauge::default());
        let compile_errors = reg(r, "tend_compile_errors", "Compiles that failed", Counter::default());
        let flapping = reg(
            r,
            "tend_flapping",
            "Times a resource was found changed again and again by another writer (each time, its repairs back off)",
            Counter::default(),
        );
        let snapshots = reg(r, "tend_dataflow_snapshots", "Settled dataflow snapshots", Counter::default());
        let snapshot_errors =
            reg(r, "tend_dataflow_snapshot_errors", "Dataflow snapshots that were errors", Counter::default());
        let evaluations =
            reg(r, "tend_dataflow_evaluations", "Function node computations in the dataflow", Counter::default());
        let workers_started = reg(r, "tend_workers_started", "Resource workers started", Counter::default());
        let workers_stopped = reg(r, "tend_workers_stopped", "Resource workers stopped", Counter::default());
        let converged =
            reg(r, "tend_converged", "1 when every resource is idle (or failed for good), else 0", Gauge::default());
        let events_lagged = reg(
            r,
            "tend_engine_events_lagged",
            "Engine events the metrics feed missed (its queue overflowed)",
            Counter::default(),
        );
        let world_connected = reg(
            r,
            "tend_world_connected",
            "1 while the world's store (etcd, or the local store) is reachable",
            Family::default(),
        );
        let world_stale = reg(
            r,
            "tend_world_stale_seconds",
            "How long the world's values have been stale (0: current)",
            Seconds::default(),
        );
        let world_latency =
            reg(r, "tend_world_latency_seconds", "Round trip of the last session keep-alive", Seconds::default());
        let world_events =
            reg(r, "tend_world_watch_events", "Watch events received from the store", Counter::default());
        let world_owned =
            reg(r, "tend_world_owned_keys", "Keys this host owns (bound to its session)", Gauge::default());
        let cluster_member =
            reg(r, "tend_cluster_member", "1 while this agent runs a member of the etcd cluster", Gauge::default());
        let cluster_members = reg(r, "tend_cluster_members", "Members of the etcd cluster", Gauge::default());
        let cluster_healthy = reg(
            r,
            "tend_cluster_members_healthy",
            "Members that answer (measured by the leader's agent; -1 elsewhere)",
            Gauge::default(),
        );
        let cluster_leader = reg(r, "tend_cluster_leader", "1 while this agent's member leads", Gauge::default());
        let cluster_ideal = reg(r, "tend_cluster_ideal_size", "The size the cluster grows to", Gauge::default());
        for state in STATES {
            let _made = resources.get_or_create(&State { state });
        }
        for result in ["applied", "rejected"] {
            let _made = swaps.get_or_create(&Outcome { result });
        }
        Metrics {
            registry,
            swaps,
            generation,
            compile_errors,
            flapping,
            snapshots,
            snapshot_errors,
            evaluations,
            evaluations_seen: Default::default(),
            workers_started,
            workers_stopped,
            converged,
            events_lagged,
            applies,
            durations,
            resources,
            world_connected,
            world_stale,
            world_latency,
            world_events,
            world_owned,
            states: Mutex::default(),
            world: Default::default(),
            membership: Default::default(),
            cluster_member,
            cluster_members,
            cluster_healthy,
            cluster_leader,
            cluster_ideal,
            rendering: Mutex::default(),
        }
    }

    /// Reports on `world`'s link to its store from now on.
    pub fn watch_world(&self, world: Arc<dyn world::World>) {
        let _ = self.world.set(world);
    }

    /// Reports on the membership of the cluster this agent forms with others.
    pub fn watch_membership(&self, state: tokio::sync::watch::Receiver<world::etcd::member::MemberState>) {
        let _ = self.membership.set(state);
    }

    fn states(&self) -> MutexGuard<'_, BTreeMap<ResKey, &'static str>> {
        // A panic while holding the lock cannot leave the map half-updated in a way that
        // matters, so a poisoned lock is used as is.
        self.states.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Updates the registry from one engine event.
    pub fn record_event(&self, event: &EngineEvent) {
        match event {
            EngineEvent::Swapped { generation, .. } => {
                self.swaps.get_or_create(&Outcome { result: "applied" }).inc();
                self.generation.set(*generation as i64);
            }
            EngineEvent::Started(key) => {
                self.workers_started.inc();
                self.states().insert(key.clone(), "starting");
            }
            EngineEvent::Stopped(key) => {
                self.workers_stopped.inc();
                self.states().remove(key);
            }
            EngineEvent::Applied { key, changed, .. } => {
                let result = if *changed { ApplyResult::Changed } else { ApplyResult::Ok };
                self.applies.get_or_create(&KindResult { kind: key.kind.to_string(), result }).inc();
                self.states().insert(key.clone(), "idle");
            }
            EngineEvent::Failed { key, retrying, .. } => {
                self.applies
                    .get_or_create(&KindResult { kind: key.kind.to_string(), result: ApplyResult::Error })
                    .inc();
                self.states().insert(key.clone(), if *retrying { "retrying" } else { "failed" });
            }
            EngineEvent::Converged(c) => {
                self.converged.set(i64::from(*c));
            }
            EngineEvent::Flapping { .. } => {
                self.flapping.inc();
            }
        }
    }

    /// Replaces the per-resource states with the engine's own view (`Engine::status`):
    /// exact where the events are not (they do not mark "waiting" or "applying"), and a
    /// resync after the event feed lagged.
    pub fn sync_states(&self, status: &BTreeMap<ResKey, WorkerState>) {
        *self.states() = status.iter().map(|(k, s)| (k.clone(), state_label(s))).collect();
    }

    /// Records the duration of one check-apply of a resource of `kind`.
    pub fn observe_check_apply(&self, kind: &str, result: ApplyResult, duration: Duration) {
        self.durations.get_or_create(&KindResult { kind: kind.to_string(), result }).observe(duration.as_secs_f64());
    }

    /// A candidate graph was refused by `Engine::apply` (the running graph stayed).
    pub fn swap_rejected(&self) {
        self.swaps.get_or_create(&Outcome { result: "rejected" }).inc();
    }

    /// A (re)compile of the program failed with diagnostics.
    pub fn compile_error(&self) {
        self.compile_errors.inc();
    }

    /// The dataflow produced a settled snapshot (`Dataflow::next`); `ok` is false for an
    /// error snapshot.
    pub fn dataflow_snapshot(&self, ok: bool) {
        self.snapshots.inc();
        if !ok {
            self.snapshot_errors.inc();
        }
    }

    /// Feeds `Dataflow::evaluations()` of the current dataflow. The counter stays
    /// monotonic across code edits: a value below the last one means a new dataflow was
    /// started, and all of it is new work.
    pub fn dataflow_evaluations(&self, total: u64) {
        let last = self.evaluations_seen.swap(total, Ordering::Relaxed);
        let delta = if total >= last { total - last } else { total };
        self.evaluations.inc_by(delta);
    }

    /// Keeps the registry current from `engine`'s events until the engine is dropped.
    /// The task is owned by the returned handle (abort it, or let it end with the engine).
    pub fn watch_engine(self: &Arc<Self>, engine: &Engine) -> JoinHandle<()> {
        let mut events = engine.subscribe();
        self.converged.set(i64::from(engine.is_converged()));
        let metrics = self.clone();
        tokio::spawn(async move {
            loop {
                match events.recv().await {
                    Ok(event) => metrics.record_event(&event),
                    Err(RecvError::Lagged(n)) => {
                        // Missed events: counts undercount by at most `n`; per-resource
                        // states heal with the next event per resource or `sync_states`.
                        metrics.events_lagged.inc_by(n);
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        })
    }

    /// The exposition, in the OpenMetrics text format (which Prometheus reads).
    pub fn render(&self) -> String {
        let _one_scrape = self.rendering.lock().unwrap_or_else(|e| e.into_inner());
        {
            let states = self.states();
            for state in STATES {
                let n = states.values().filter(|s| **s == state).count();
                self.resources.get_or_create(&State { state }).set(n as i64);
            }
        }
        if let Some(world) = self.world.get() {
            let h = world.health();
            self.world_connected.get_or_create(&Backend { backend: h.backend.to_string() }).set(i64::from(h.connected));
            let stale = h.stale_since.and_then(|t| t.elapsed().ok()).map_or(0.0, |d| d.as_secs_f64());
            self.world_stale.set(stale);
            self.world_latency.set(h.latency_ms.map_or(0.0, |ms| ms / 1000.0));
            let seen = self.world_events.get();
            self.world_events.inc_by(h.events.saturating_sub(seen));
            self.world_owned.set(h.owned as i64);
        }
        if let Some(state) = self.membership.get() {
            let m = state.borrow().clone();
            self.cluster_member.set(i64::from(m.member));
            self.cluster_members.set(m.members as i64);
            self.cluster_healthy.set(m.healthy.map_or(-1, |h| h as i64));
            self.cluster_leader.set(i64::from(m.leader));
            self.cluster_ideal.set(m.ideal as i64);
        }
        let mut out = String::with_capacity(4096);
        // Writing to a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

/// Checks the `--metrics` address against the exposure policy: the endpoint has no
/// authentication, so only loopback addresses are allowed unless `allow_remote` (from
/// `--metrics-allow-remote`) is set.
pub fn check_addr(addr: SocketAddr, allow_remote: bool) -> Result<SocketAddr, String> {
    if addr.ip().is_loopback() || allow_remote {
        return Ok(addr);
    }
    Err(format!(
        "--metrics {addr}: not a loopback address; the metrics endpoint has no authentication, so tend only \
         listens on 127.0.0.1 or [::1] unless --metrics-allow-remote is also given"
    ))
}

/// A running metrics endpoint.
pub struct Server {
    /// The address actually bound (the port is filled in when `:0` was asked for).
    pub addr: SocketAddr,
    /// The accept loop; it owns the connection tasks, so aborting it ends them too.
    pub task: JoinHandle<()>,
}

/// Binds `addr` and serves `GET /metrics` from `registry` until the returned task is
/// aborted. Bind errors are returned here, before anything runs.
pub async fn serve(addr: SocketAddr, registry: Arc<Metrics>) -> io::Result<Server> {
    let listener = TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let task = tokio::spawn(async move {
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        if connections.len() >= MAX_CONNECTIONS {
                            tracing::debug!(%peer, "metrics endpoint busy; connection closed");
                            continue;
                        }
                        let registry = registry.clone();
                        connections.spawn(async move {
                            match tokio::time::timeout(CONNECTION_DEADLINE, answer(stream, registry)).await {
                                Ok(Ok(())) => {}
                                Ok(Err(e)) => tracing::debug!(%peer, error = %e, "metrics connection"),
                                Err(_) => tracing::debug!(%peer, "metrics connection timed out"),
                            }
                        });
                    }
                    // Out of file descriptors and the like: back off instead of spinning.
                    Err(e) => {
                        tracing::warn!(error = %e, "metrics endpoint: accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
    });
    Ok(Server { addr, task })
}

/// Serves one connection with hyper: one request (no keep-alive), a bounded head read
/// within a deadline (hyper answers 431 and 400 itself).
async fn answer(stream: TcpStream, registry: Arc<Metrics>) -> hyper::Result<()> {
    let service = service_fn(move |req: Request<Incoming>| {
        let registry = registry.clone();
        async move { Ok::<_, Infallible>(respond(&req, &registry)) }
    });
    http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(READ_DEADLINE)
        .max_buf_size(MAX_REQUEST)
        .keep_alive(false)
        .title_case_headers(true)
        .serve_connection(TokioIo::new(stream), service)
        .await
}

/// The response to one request: the exposition for `GET` / `HEAD /metrics`.
fn respond(req: &Request<Incoming>, registry: &Metrics) -> Response<Full<Bytes>> {
    let text = |code: StatusCode, body: &'static str| {
        let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
        *r.status_mut() = code;
        r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
        r
    };
    if req.uri().path() != "/metrics" {
        return text(StatusCode::NOT_FOUND, "not found; try /metrics\n");
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "use GET\n");
        r.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let mut r = Response::new(Full::new(Bytes::from(registry.render())));
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(OPENMETRICS));
    r
}
