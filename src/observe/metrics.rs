//! Prometheus metrics for `tend run`: the registry ([`Metrics`]), its text exposition
//! (format 0.0.4), the engine-event feed that keeps it current, and the HTTP endpoint
//! for `GET /metrics`.
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
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
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

/// Every series `tend run` exports. Cheap to update from any thread; share it as
/// `Arc<Metrics>`.
#[derive(Default)]
pub struct Metrics {
    swaps_applied: AtomicU64,
    swaps_rejected: AtomicU64,
    generation: AtomicU64,
    compile_errors: AtomicU64,
    /// Resources found fought over by another writer ([`EngineEvent::Flapping`]).
    flapping: AtomicU64,
    snapshots: AtomicU64,
    snapshot_errors: AtomicU64,
    evaluations: AtomicU64,
    /// The last `Dataflow::evaluations()` seen, to turn per-dataflow totals into deltas.
    evaluations_seen: AtomicU64,
    workers_started: AtomicU64,
    workers_stopped: AtomicU64,
    converged: AtomicU64,
    events_lagged: AtomicU64,
    labelled: Mutex<Labelled>,
    /// The world the run shares with other hosts (its link is read at each scrape).
    world: std::sync::OnceLock<Arc<dyn world::World>>,
}

/// The series with labels, kept in ordered maps so the exposition is deterministic.
#[derive(Default)]
struct Labelled {
    /// The last known state of every running resource.
    states: BTreeMap<ResKey, &'static str>,
    /// `(kind, result)` -> count.
    applies: BTreeMap<(Arc<str>, ApplyResult), u64>,
    /// `(kind, result)` -> duration histogram.
    durations: BTreeMap<(String, ApplyResult), Histogram>,
}

#[derive(Default)]
struct Histogram {
    /// Non-cumulative counts per bucket of [`DURATION_BUCKETS`]; the last slot is `+Inf`.
    buckets: [u64; DURATION_BUCKETS.len() + 1],
    sum: f64,
    count: u64,
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
        Metrics::default()
    }

    /// Reports on `world`'s link to its store from now on.
    pub fn watch_world(&self, world: Arc<dyn world::World>) {
        let _ = self.world.set(world);
    }

    fn labelled(&self) -> MutexGuard<'_, Labelled> {
        // A panic while holding the lock cannot leave the maps half-updated in a way that
        // matters for counters, so a poisoned lock is used as is.
        self.labelled.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Updates the registry from one engine event.
    pub fn record_event(&self, event: &EngineEvent) {
        match event {
            EngineEvent::Swapped { generation, .. } => {
                self.swaps_applied.fetch_add(1, Ordering::Relaxed);
                self.generation.store(*generation, Ordering::Relaxed);
            }
            EngineEvent::Started(key) => {
                self.workers_started.fetch_add(1, Ordering::Relaxed);
                self.labelled().states.insert(key.clone(), "starting");
            }
            EngineEvent::Stopped(key) => {
                self.workers_stopped.fetch_add(1, Ordering::Relaxed);
                self.labelled().states.remove(key);
            }
            EngineEvent::Applied { key, changed, .. } => {
                let result = if *changed { ApplyResult::Changed } else { ApplyResult::Ok };
                let mut l = self.labelled();
                *l.applies.entry((key.kind.clone(), result)).or_default() += 1;
                l.states.insert(key.clone(), "idle");
            }
            EngineEvent::Failed { key, retrying, .. } => {
                let mut l = self.labelled();
                *l.applies.entry((key.kind.clone(), ApplyResult::Error)).or_default() += 1;
                l.states.insert(key.clone(), if *retrying { "retrying" } else { "failed" });
            }
            EngineEvent::Converged(c) => self.converged.store(u64::from(*c), Ordering::Relaxed),
            EngineEvent::Flapping { .. } => {
                self.flapping.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Replaces the per-resource states with the engine's own view (`Engine::status`):
    /// exact where the events are not (they do not mark "waiting" or "applying"), and a
    /// resync after the event feed lagged.
    pub fn sync_states(&self, status: &BTreeMap<ResKey, WorkerState>) {
        self.labelled().states = status.iter().map(|(k, s)| (k.clone(), state_label(s))).collect();
    }

    /// Records the duration of one check-apply of a resource of `kind`.
    pub fn observe_check_apply(&self, kind: &str, result: ApplyResult, duration: Duration) {
        let secs = duration.as_secs_f64();
        let slot = DURATION_BUCKETS.iter().position(|le| secs <= *le).unwrap_or(DURATION_BUCKETS.len());
        let mut l = self.labelled();
        let h = l.durations.entry((kind.to_string(), result)).or_default();
        h.buckets[slot] += 1;
        h.sum += secs;
        h.count += 1;
    }

    /// A candidate graph was refused by `Engine::apply` (the running graph stayed).
    pub fn swap_rejected(&self) {
        self.swaps_rejected.fetch_add(1, Ordering::Relaxed);
    }

    /// A (re)compile of the program failed with diagnostics.
    pub fn compile_error(&self) {
        self.compile_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// The dataflow produced a settled snapshot (`Dataflow::next`); `ok` is false for an
    /// error snapshot.
    pub fn dataflow_snapshot(&self, ok: bool) {
        self.snapshots.fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.snapshot_errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Feeds `Dataflow::evaluations()` of the current dataflow. The counter stays
    /// monotonic across code edits: a value below the last one means a new dataflow was
    /// started, and all of it is new work.
    pub fn dataflow_evaluations(&self, total: u64) {
        let last = self.evaluations_seen.swap(total, Ordering::Relaxed);
        let delta = if total >= last { total - last } else { total };
        self.evaluations.fetch_add(delta, Ordering::Relaxed);
    }

    /// Keeps the registry current from `engine`'s events until the engine is dropped.
    /// The task is owned by the returned handle (abort it, or let it end with the engine).
    pub fn watch_engine(self: &Arc<Self>, engine: &Engine) -> JoinHandle<()> {
        let mut events = engine.subscribe();
        self.converged.store(u64::from(engine.is_converged()), Ordering::Relaxed);
        let metrics = self.clone();
        tokio::spawn(async move {
            loop {
                match events.recv().await {
                    Ok(event) => metrics.record_event(&event),
                    Err(RecvError::Lagged(n)) => {
                        // Missed events: counts undercount by at most `n`; per-resource
                        // states heal with the next event per resource or `sync_states`.
                        metrics.events_lagged.fetch_add(n, Ordering::Relaxed);
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        })
    }

    /// The exposition in the Prometheus text format, version 0.0.4.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        family(&mut out, "tend_build_info", "gauge", "The running tend version (always 1).");
        let _ = writeln!(out, "tend_build_info{{version=\"{}\"}} 1", escape(env!("CARGO_PKG_VERSION")));

        let l = self.labelled();
        family(&mut out, "tend_resources", "gauge", "Resources in the running graph, by worker state.");
        for state in STATES {
            let n = l.states.values().filter(|s| **s == state).count();
            let _ = writeln!(out, "tend_resources{{state=\"{state}\"}} {n}");
        }
        family(
            &mut out,
            "tend_check_apply_total",
            "counter",
            "Check-apply runs by resource kind and result (ok: already right; changed: fixed; error: check-apply or watch failed).",
        );
        for ((kind, result), n) in &l.applies {
            let _ =
                writeln!(out, "tend_check_apply_total{{kind=\"{}\",result=\"{}\"}} {n}", escape(kind), result.label());
        }
        family(
            &mut out,
            "tend_check_apply_duration_seconds",
            "histogram",
            "Check-apply duration by resource kind and result.",
        );
        for ((kind, result), h) in &l.durations {
            let labels = format!("kind=\"{}\",result=\"{}\"", escape(kind), result.label());
            let mut cumulative = 0;
            for (i, n) in h.buckets.iter().enumerate() {
                cumulative += n;
                let le = DURATION_BUCKETS.get(i).map_or_else(|| "+Inf".to_string(), |b| b.to_string());
                let _ = writeln!(out, "tend_check_apply_duration_seconds_bucket{{{labels},le=\"{le}\"}} {cumulative}");
            }
            let _ = writeln!(out, "tend_check_apply_duration_seconds_sum{{{labels}}} {}", h.sum);
            let _ = writeln!(out, "tend_check_apply_duration_seconds_count{{{labels}}} {}", h.count);
        }
        drop(l);

        family(&mut out, "tend_graph_swaps_total", "counter", "Candidate resource graphs, by outcome.");
        let _ = writeln!(out, "tend_graph_swaps_total{{result=\"applied\"}} {}", get(&self.swaps_applied));
        let _ = writeln!(out, "tend_graph_swaps_total{{result=\"rejected\"}} {}", get(&self.swaps_rejected));
        simple(&mut out, "tend_graph_generation", "gauge", "Generation of the running graph.", get(&self.generation));
        simple(&mut out, "tend_compile_errors_total", "counter", "Compiles that failed.", get(&self.compile_errors));
        simple(
            &mut out,
            "tend_flapping_total",
            "counter",
            "Times a resource was found changed again and again by another writer (each time, its repairs back off).",
            get(&self.flapping),
        );
        simple(
            &mut out,
            "tend_dataflow_snapshots_total",
            "counter",
            "Settled dataflow snapshots.",
            get(&self.snapshots),
        );
        simple(
            &mut out,
            "tend_dataflow_snapshot_errors_total",
            "counter",
            "Dataflow snapshots that were errors.",
            get(&self.snapshot_errors),
        );
        simple(
            &mut out,
            "tend_dataflow_evaluations_total",
            "counter",
            "Function node computations in the dataflow.",
            get(&self.evaluations),
        );
        simple(
            &mut out,
            "tend_workers_started_total",
            "counter",
            "Resource workers started.",
            get(&self.workers_started),
        );
        simple(
            &mut out,
            "tend_workers_stopped_total",
            "counter",
            "Resource workers stopped.",
            get(&self.workers_stopped),
        );
        simple(
            &mut out,
            "tend_converged",
            "gauge",
            "1 when every resource is idle (or failed for good), else 0.",
            get(&self.converged),
        );
        simple(
            &mut out,
            "tend_engine_events_lagged_total",
            "counter",
            "Engine events the metrics feed missed (its queue overflowed).",
            get(&self.events_lagged),
        );
        if let Some(world) = self.world.get() {
            render_world(&mut out, &world.health());
        }
        out
    }
}

/// The world's series: its link, staleness, latency, watch events and owned keys.
fn render_world(out: &mut String, h: &world::Health) {
    family(out, "tend_world_connected", "gauge", "1 while the world's store (etcd, or the local store) is reachable.");
    let _ = writeln!(out, "tend_world_connected{{backend=\"{}\"}} {}", h.backend, u8::from(h.connected));
    let stale = h.stale_since.and_then(|t| t.elapsed().ok()).map_or(0.0, |d| d.as_secs_f64());
    family(out, "tend_world_stale_seconds", "gauge", "How long the world's values have been stale (0: current).");
    let _ = writeln!(out, "tend_world_stale_seconds {stale}");
    if let Some(ms) = h.latency_ms {
        family(out, "tend_world_latency_seconds", "gauge", "Round trip of the last session keep-alive.");
        let _ = writeln!(out, "tend_world_latency_seconds {}", ms / 1000.0);
    }
    simple(out, "tend_world_watch_events_total", "counter", "Watch events received from the store.", h.events);
    simple(out, "tend_world_owned_keys", "gauge", "Keys this host owns (bound to its session).", h.owned as u64);
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {}", help.replace('\\', "\\\\").replace('\n', "\\n"));
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn simple(out: &mut String, name: &str, kind: &str, help: &str, value: u64) {
    family(out, name, kind, help);
    let _ = writeln!(out, "{name} {value}");
}

/// A label value in exposition form.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
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
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    r
}
