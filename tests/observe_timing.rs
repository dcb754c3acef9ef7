//! Check-apply timing through a real engine: the wrapper records durations with their
//! outcome and stays invisible to graph swaps.

use tend::observe::metrics;
use tend::observe::timing;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use engine::{ApplyCtx, Engine, EngineConfig, Graph, Meta, ResError, ResKey, Resource};
use metrics::Metrics;
use timing::time_check_applies;

/// Wrong until applied once (taking `sleep` to fix), or always failing.
struct Probe {
    right: bool,
    fail: bool,
    sleep: Duration,
}

#[async_trait]
impl Resource for Probe {
    async fn check_apply(&mut self, _ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        if self.fail {
            return Err(ResError::new("broken"));
        }
        let was_right = self.right;
        if !was_right && apply {
            tokio::time::sleep(self.sleep).await;
            self.right = true;
        }
        Ok(was_right)
    }
    fn fingerprint(&self) -> String {
        format!("fail={}", self.fail)
    }
}

fn graph(metrics: &Arc<Metrics>) -> Graph {
    let mut g = Graph::new();
    let probe = |fail| Box::new(Probe { right: false, fail, sleep: Duration::from_millis(30) });
    g.add_vertex(ResKey::new("probe", "slow"), Meta::default(), probe(false));
    g.add_vertex(ResKey::new("broken", "b"), Meta::default(), probe(true));
    time_check_applies(&mut g, metrics);
    g
}

fn value(body: &str, series: &str) -> Option<f64> {
    body.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test]
async fn durations_are_recorded_by_kind_and_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = Engine::new(EngineConfig { state_dir: dir.path().into(), ..EngineConfig::default() });
    let m = Arc::new(Metrics::new());
    let feed = m.watch_engine(&engine);

    let first = engine.apply(graph(&m)).await.expect("valid graph");
    assert_eq!(first.started.len(), 2);
    assert!(engine.wait_converged(Duration::from_secs(10)).await);

    let body = m.render();
    let changed = "{kind=\"probe\",result=\"changed\"}";
    assert_eq!(value(&body, &format!("tend_check_apply_duration_seconds_count{changed}")), Some(1.0), "{body}");
    let sum = value(&body, &format!("tend_check_apply_duration_seconds_sum{changed}")).expect("sum");
    assert!((0.03..5.0).contains(&sum), "the 30 ms fix is measured: {sum}");
    assert_eq!(
        value(&body, "tend_check_apply_duration_seconds_bucket{le=\"0.025\",kind=\"probe\",result=\"changed\"}"),
        Some(0.0)
    );
    assert_eq!(
        value(&body, "tend_check_apply_duration_seconds_count{kind=\"broken\",result=\"error\"}"),
        Some(1.0),
        "{body}"
    );

    // The same graph again: the fingerprints pass through, so nothing restarts.
    let second = engine.apply(graph(&m)).await.expect("valid graph");
    assert_eq!(second.unchanged.len(), 2, "{second:?}");
    assert!(second.started.is_empty());

    engine.shutdown(Duration::from_secs(5)).await;
    drop(engine);
    tokio::time::timeout(Duration::from_secs(5), feed).await.expect("feed ends").expect("no panic");
    // The event feed saw the same runs.
    let body = m.render();
    assert_eq!(value(&body, "tend_check_apply_total{kind=\"probe\",result=\"changed\"}"), Some(1.0), "{body}");
    assert_eq!(value(&body, "tend_check_apply_total{kind=\"broken\",result=\"error\"}"), Some(1.0), "{body}");
    assert_eq!(value(&body, "tend_graph_swaps_total{result=\"applied\"}"), Some(2.0));
}

/// Watches through a subscription: a task of its own calls the context each time `trigger`
/// is notified; counts its check-applies.
struct Subscribing {
    trigger: Arc<tokio::sync::Notify>,
    runs: Arc<std::sync::atomic::AtomicUsize>,
}

struct Registered(tokio::task::JoinHandle<()>);

impl engine::Subscription for Registered {}

impl Drop for Registered {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[async_trait]
impl Resource for Subscribing {
    fn subscribe(&self, ctx: &engine::WatchCtx) -> Option<Result<Box<dyn engine::Subscription>, ResError>> {
        let (ctx, trigger) = (ctx.clone(), self.trigger.clone());
        let task = tokio::spawn(async move {
            loop {
                trigger.notified().await;
                ctx.event();
            }
        });
        Some(Ok(Box::new(Registered(task))))
    }
    async fn check_apply(&mut self, _ctx: &mut ApplyCtx, _apply: bool) -> Result<bool, ResError> {
        self.runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(true)
    }
    fn fingerprint(&self) -> String {
        String::new()
    }
}

/// The wrapper passes a subscription through: a timed resource (every resource of
/// `tend run --metrics`) still hears of changes, as a `file` does of drift.
#[tokio::test]
async fn a_timed_resource_keeps_watching_through_its_subscription() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = Engine::new(EngineConfig { state_dir: dir.path().into(), ..EngineConfig::default() });
    let m = Arc::new(Metrics::new());
    let trigger = Arc::new(tokio::sync::Notify::new());
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut g = Graph::new();
    let res = Subscribing { trigger: trigger.clone(), runs: runs.clone() };
    g.add_vertex(ResKey::new("probe", "watched"), Meta::default(), Box::new(res));
    time_check_applies(&mut g, &m);
    engine.apply(g).await.expect("valid graph");
    assert!(engine.wait_converged(Duration::from_secs(10)).await);
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1);

    trigger.notify_one();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while runs.load(std::sync::atomic::Ordering::SeqCst) < 2 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 2, "the event reached the resource");
    engine.shutdown(Duration::from_secs(5)).await;
}
