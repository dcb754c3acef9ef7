//! Swaps leak nothing: alone in its test binary so no other test's runtime opens or
//! closes fds while it counts them.

#[path = "it/support/mod.rs"]
mod support;

use std::sync::atomic::Ordering;

use support::{Log, Scripted, WAIT, engine, graph};

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_swaps_leak_no_tasks_or_fds() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    engine.apply(graph(vec![Scripted::new("warmup", &log)], &[])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    let before = open_fds();
    let keep = Scripted::new("keep", &log);
    let keep_probe = keep.probe();
    engine.apply(graph(vec![keep], &[])).await.unwrap();
    for i in 0..100 {
        let g = graph(
            vec![Scripted::new("keep", &log), Scripted::new("swap", &log).param(&i.to_string())],
            &[("keep", "swap", true)],
        );
        engine.apply(g).await.unwrap();
    }
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(keep_probe.watch_starts.load(Ordering::SeqCst), 1);
    assert_eq!(open_fds(), before, "open fds before and after 100 swaps");
    engine.shutdown(WAIT).await;
}
