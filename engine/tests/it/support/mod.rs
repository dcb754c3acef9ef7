//! A scripted resource for engine tests: records every check-apply in a shared log, can be
//! told to fail N times, to report a change, to take time, to send a value, and counts its
//! watch starts and cleanups.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use engine::{ApplyCtx, Engine, EngineConfig, Graph, Meta, Payload, ResError, ResKey, Resource, WatchCtx};
use futures::future::BoxFuture;
use tokio::sync::Notify;

/// Shared observations and knobs of one scripted resource; clone it into the test.
#[derive(Clone, Default)]
pub struct Probe {
    pub log: Log,
    pub fail_times: Arc<AtomicUsize>,
    pub watch_starts: Arc<AtomicUsize>,
    pub cleanups: Arc<AtomicUsize>,
    /// Makes the watch emit an event.
    pub trigger: Arc<Notify>,
    /// Whether the next check-apply finds the state wrong.
    pub drift: Arc<AtomicBool>,
    /// The watch fails this many times (right after starting) before it works.
    pub watch_failures: Arc<AtomicUsize>,
    /// The watch panics this many times (right after starting) before it works.
    pub watch_panics: Arc<AtomicUsize>,
    /// The watch ignores cancellation (it must then be aborted).
    pub stubborn: Arc<AtomicBool>,
    /// Set when a watch future (or subscription) is dropped.
    pub watch_dropped: Arc<AtomicBool>,
    /// A subscription's refresh fails this many times before it works.
    pub refresh_failures: Arc<AtomicUsize>,
    /// The next check-apply waits until its run is cancelled (a long operation that
    /// honours `ApplyCtx::cancel`), then fails.
    pub until_cancelled: Arc<AtomicBool>,
}

/// Sets a flag when dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// The check-apply log shared by every resource in a test: `name`, `name+refresh`,
/// `name:noop`, `name=received`.
#[derive(Clone, Default)]
pub struct Log(pub Arc<Mutex<Vec<String>>>);

impl Log {
    pub fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
    pub fn count(&self, entry: &str) -> usize {
        self.entries().iter().filter(|e| *e == entry).count()
    }
    pub fn position(&self, entry: &str) -> usize {
        self.entries().iter().position(|e| e == entry).unwrap_or_else(|| panic!("{entry} not in {:?}", self.entries()))
    }
    fn push(&self, entry: String) {
        self.0.lock().unwrap().push(entry);
    }
}

pub struct Scripted {
    pub name: String,
    /// Part of the fingerprint: changing it makes a swap replace the resource.
    pub param: String,
    pub probe: Probe,
    pub refreshable: bool,
    pub send: Option<String>,
    pub received: Option<String>,
    pub work: Duration,
    /// Blocks its thread this long in check-apply (a slow disk).
    pub blocking: Duration,
    pub running: Option<(Arc<AtomicUsize>, Arc<AtomicUsize>)>,
    pub invalid: bool,
    pub init_fails: bool,
    /// Offer a reversal (a resource logging `NAME~reversal`).
    pub reversible: bool,
    /// Ask for the watch to be polled in the worker's task ([`Resource::watch_passive`]).
    pub passive_watch: bool,
    /// Watch through a subscription ([`Resource::subscribe`]) instead of a future.
    pub subscribed: bool,
    /// Waits this long in cleanup before counting it (a slow teardown).
    pub cleanup_wait: Duration,
}

/// A subscription: a task of the test's own that calls the context on each trigger, and a
/// refresh that fails as the probe says.
struct Subscribed {
    probe: Probe,
    task: tokio::task::JoinHandle<()>,
    _dropped: DropFlag,
}

impl engine::Subscription for Subscribed {
    fn refresh(&self) -> Result<(), ResError> {
        let failures = &self.probe.refresh_failures;
        if failures.load(Ordering::SeqCst) > 0 {
            failures.fetch_sub(1, Ordering::SeqCst);
            return Err(ResError::new("refresh told to fail"));
        }
        Ok(())
    }
}

impl Drop for Subscribed {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Scripted {
    pub fn new(name: &str, log: &Log) -> Scripted {
        let probe = Probe { log: log.clone(), ..Probe::default() };
        Scripted {
            name: name.to_string(),
            param: String::new(),
            probe,
            refreshable: true,
            send: None,
            received: None,
            work: Duration::ZERO,
            blocking: Duration::ZERO,
            running: None,
            invalid: false,
            init_fails: false,
            reversible: false,
            passive_watch: false,
            subscribed: false,
            cleanup_wait: Duration::ZERO,
        }
    }
    pub fn changing(self) -> Scripted {
        self.probe.drift.store(true, Ordering::SeqCst);
        self
    }
    pub fn param(mut self, p: &str) -> Scripted {
        self.param = p.to_string();
        self
    }
    pub fn probe(&self) -> Probe {
        self.probe.clone()
    }
}

#[async_trait]
impl Resource for Scripted {
    fn validate(&self) -> Result<(), ResError> {
        if self.invalid { Err(ResError::new("told to be invalid")) } else { Ok(()) }
    }

    async fn init(&mut self, _ctx: &engine::InitCtx) -> Result<(), ResError> {
        if self.init_fails { Err(ResError::new("told to fail init")) } else { Ok(()) }
    }

    fn watch_passive(&self) -> bool {
        self.passive_watch
    }

    fn subscribe(&self, ctx: &WatchCtx) -> Option<Result<Box<dyn engine::Subscription>, ResError>> {
        if !self.subscribed {
            return None;
        }
        let probe = self.probe.clone();
        probe.watch_starts.fetch_add(1, Ordering::SeqCst);
        if probe.watch_failures.load(Ordering::SeqCst) > 0 {
            probe.watch_failures.fetch_sub(1, Ordering::SeqCst);
            return Some(Err(ResError::new("subscribe told to fail")));
        }
        let ctx = ctx.clone();
        let trigger = probe.trigger.clone();
        let task = tokio::spawn(async move {
            loop {
                trigger.notified().await;
                ctx.event();
            }
        });
        let dropped = DropFlag(probe.watch_dropped.clone());
        Some(Ok(Box::new(Subscribed { probe, task, _dropped: dropped })))
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let probe = self.probe.clone();
        Box::pin(async move {
            probe.watch_starts.fetch_add(1, Ordering::SeqCst);
            if probe.watch_failures.load(Ordering::SeqCst) > 0 {
                probe.watch_failures.fetch_sub(1, Ordering::SeqCst);
                return Err(ResError::new("watch told to fail"));
            }
            if probe.watch_panics.load(Ordering::SeqCst) > 0 {
                probe.watch_panics.fetch_sub(1, Ordering::SeqCst);
                panic!("watch told to panic");
            }
            let _flag = DropFlag(probe.watch_dropped.clone());
            ctx.event();
            if probe.stubborn.load(Ordering::SeqCst) {
                std::future::pending::<()>().await;
            }
            loop {
                tokio::select! {
                    _ = probe.trigger.notified() => ctx.event(),
                    _ = ctx.cancelled() => return Ok(()),
                }
            }
        })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        if let Some((now, max)) = &self.running {
            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
            max.fetch_max(n, Ordering::SeqCst);
        }
        if !self.work.is_zero() {
            tokio::time::sleep(self.work).await;
        }
        if !self.blocking.is_zero() {
            std::thread::sleep(self.blocking);
        }
        if let Some((now, _)) = &self.running {
            now.fetch_sub(1, Ordering::SeqCst);
        }
        if self.probe.until_cancelled.swap(false, Ordering::SeqCst) {
            self.probe.log.push(format!("{}:waiting", self.name));
            ctx.cancel.cancelled().await;
            return Err(ResError::new("cancelled"));
        }
        let mut entry = self.name.clone();
        if ctx.refresh {
            entry.push_str("+refresh");
        }
        if !apply {
            entry.push_str(":noop");
        }
        if let Some(r) = &self.received
            && ctx.recv_changed.contains("in")
        {
            entry.push_str(&format!("={r}"));
        }
        self.probe.log.push(entry);
        if self.probe.fail_times.load(Ordering::SeqCst) > 0 {
            self.probe.fail_times.fetch_sub(1, Ordering::SeqCst);
            return Err(ResError::new("told to fail"));
        }
        let wrong = self.probe.drift.load(Ordering::SeqCst);
        if wrong {
            ctx.report(format!("{} would change", self.name));
            if apply {
                self.probe.drift.store(false, Ordering::SeqCst);
            }
        }
        Ok(!wrong)
    }

    async fn cleanup(&mut self) -> Result<(), ResError> {
        if !self.cleanup_wait.is_zero() {
            tokio::time::sleep(self.cleanup_wait).await;
        }
        self.probe.cleanups.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn fingerprint(&self) -> String {
        format!("{}|{}|{:?}|{:?}", self.param, self.refreshable, self.send, self.received)
    }

    fn refreshable(&self) -> bool {
        self.refreshable
    }

    fn reversal(&self) -> Result<Option<Box<dyn Resource>>, ResError> {
        Ok(self
            .reversible
            .then(|| Box::new(Scripted::new(&format!("{}~reversal", self.name), &self.probe.log)) as Box<dyn Resource>))
    }

    fn sends(&self) -> Option<BTreeMap<String, Payload>> {
        let value: Payload = Arc::new(self.send.clone()?);
        Some(BTreeMap::from([("out".to_string(), value)]))
    }

    fn recv(&mut self, key: &str, value: &Payload) -> Result<bool, ResError> {
        if key != "in" {
            return Err(ResError::new(format!("no param {key}")));
        }
        let value = value.downcast_ref::<String>().ok_or_else(|| ResError::new("not a string"))?.clone();
        let changed = self.received.as_ref() != Some(&value);
        self.received = Some(value);
        Ok(changed)
    }
}

pub fn key(name: &str) -> ResKey {
    ResKey::new("scripted", name)
}

/// An engine whose check-applies run on a separate apply pool, as in `tend run`.
pub fn engine(dir: &tempfile::TempDir) -> Engine {
    Engine::new(EngineConfig {
        state_dir: dir.path().to_path_buf(),
        stop_timeout: Duration::from_secs(5),
        apply_pool: Some(apply_pool()),
        one_shot: false,
        revive: None,
    })
}

/// An engine that runs check-applies on its own runtime (the library default).
pub fn inline_engine(dir: &tempfile::TempDir) -> Engine {
    Engine::new(EngineConfig {
        state_dir: dir.path().to_path_buf(),
        stop_timeout: Duration::from_secs(5),
        apply_pool: None,
        one_shot: false,
        revive: None,
    })
}

/// One apply pool for the whole test binary (a runtime cannot be dropped inside another,
/// so it lives as long as the process).
pub fn apply_pool() -> tokio::runtime::Handle {
    static POOL: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .thread_name("test-apply")
            .enable_all()
            .build()
            .expect("apply pool")
    })
    .handle()
    .clone()
}

/// Builds a graph from resources (default meta) and `(from, to, notify)` edges.
pub fn graph(res: Vec<Scripted>, edges: &[(&str, &str, bool)]) -> Graph {
    graph_with_meta(res.into_iter().map(|r| (r, Meta::default())).collect(), edges)
}

pub fn graph_with_meta(res: Vec<(Scripted, Meta)>, edges: &[(&str, &str, bool)]) -> Graph {
    let mut g = Graph::new();
    for (r, meta) in res {
        g.add_vertex(key(&r.name.clone()), meta, Box::new(r));
    }
    for (from, to, notify) in edges {
        g.add_edge(key(from), key(to), *notify);
    }
    g
}

pub const WAIT: Duration = Duration::from_secs(10);

/// Polls `cond` every 2 ms until it holds or [`WAIT`] passes (the caller asserts after).
pub async fn until(mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !cond() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}
