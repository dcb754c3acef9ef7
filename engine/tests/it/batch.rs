//! First passes polled in batches (`engine/src/batch.rs`): a first pass that has to wait
//! becomes a task of its own, one that blocks its thread hands the rest of its batch to
//! tasks, and a swap stopping workers still in a batch waits for them.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use support::{Log, Scripted, WAIT, engine, graph};

/// Resources that watch by subscription: their first pass ends in one poll (they park).
fn subscribed(names: &[String], log: &Log) -> Vec<Scripted> {
    names
        .iter()
        .map(|name| {
            let mut r = Scripted::new(name, log);
            r.subscribed = true;
            r
        })
        .collect()
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_pass_that_waits_keeps_running_as_a_task_while_its_batch_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let resources = subscribed(&names("b", 12), &log);
    // The first of the batch waits in its check-apply until it is cancelled.
    resources[0].probe.until_cancelled.store(true, Ordering::SeqCst);
    let waiting = resources[0].probe();
    engine.apply(graph(resources, &[])).await.unwrap();
    support::until(|| log.entries().len() == 12).await;
    let entries = log.entries();
    assert_eq!(entries.len(), 12, "every first pass ran: {entries:?}");
    assert!(entries.contains(&"b0:waiting".to_string()), "{entries:?}");
    // Its future was kept (as a task): the shutdown cancels its check-apply (after half
    // the deadline) and cleans up.
    let report = engine.shutdown(Duration::from_millis(400)).await;
    assert_eq!(report.stopped, 12);
    assert_eq!(waiting.cleanups.load(Ordering::SeqCst), 1, "the waiting worker was stopped and cleaned up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_pass_that_blocks_its_thread_hands_the_rest_of_its_batch_to_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let (now, max) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    // Fewer than a batch holds: one batch, whose first poll blocks for 30 ms.
    let mut resources = subscribed(&names("s", 12), &log);
    for r in &mut resources {
        r.blocking = Duration::from_millis(30);
        r.running = Some((now.clone(), max.clone()));
    }
    engine.apply(graph(resources, &[])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(log.entries().len(), 12);
    // Polled one after another in the batch they would never overlap.
    assert!(max.load(Ordering::SeqCst) >= 2, "the rest ran side by side on the apply pool");
    engine.shutdown(WAIT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swap_waits_for_the_workers_it_stops_while_their_batch_runs() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let names = names("q", 12);
    // Each first pass blocks 3 ms, under the slow mark: the batch polls all twelve in
    // turn, for about 36 ms, while the next swap replaces them. Their cleanup takes a
    // while, so a stopped one that the batch has yet to poll ends well after its stop.
    let mut old = subscribed(&names, &log);
    for r in &mut old {
        r.blocking = Duration::from_millis(3);
        r.cleanup_wait = Duration::from_millis(20);
    }
    let probes: Vec<_> = old.iter().map(Scripted::probe).collect();
    engine.apply(graph(old, &[])).await.unwrap();
    let new = subscribed(&names, &log).into_iter().map(|r| r.param("new")).collect();
    let report = engine.apply(graph(new, &[])).await.unwrap();
    assert_eq!(report.stopped.len(), 12);
    let cleaned = probes.iter().filter(|p| p.cleanups.load(Ordering::SeqCst) == 1).count();
    assert_eq!(cleaned, 12, "the swap returned before every stopped worker was over");
    assert!(engine.wait_converged(WAIT).await);
    engine.shutdown(WAIT).await;
}
