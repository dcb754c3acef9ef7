//! Behaviour of the engine with scripted resources: ordering, notifications, retries,
//! semaphores, send/recv, noop, graph swaps, convergence and shutdown.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use engine::{EngineEvent, Graph, Meta, SwapError, WorkerState};
use support::{Log, Scripted, WAIT, engine, graph, graph_with_meta, key};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parents_apply_before_children_and_branches_run_independently() {
    // Both ways of running: workers on an apply pool, and everything on one runtime.
    for make in [engine, support::inline_engine] {
        let dir = tempfile::tempdir().unwrap();
        let engine = make(&dir);
        let log = Log::default();
        let res = ["a", "b", "c", "d"].map(|n| Scripted::new(n, &log)).into_iter().collect();
        engine.apply(graph(res, &[("a", "b", false), ("b", "c", false)])).await.unwrap();
        assert!(engine.wait_converged(WAIT).await);
        for n in ["a", "b", "c", "d"] {
            assert_eq!(log.count(n), 1, "{n} applied once: {:?}", log.entries());
        }
        assert!(log.position("a") < log.position("b"));
        assert!(log.position("b") < log.position("c"));
        engine.shutdown(WAIT).await;
    }
}

/// Two check-applies blocked on a "slow disk" hold two apply-pool threads; the engine's own
/// runtime (watches, servers, the rest of the program) keeps running meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_applies_that_block_do_not_stall_the_engine_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let slow = ["slow1", "slow2"].map(|n| {
        let mut r = Scripted::new(n, &log);
        r.blocking = Duration::from_millis(1500);
        r
    });
    let ticks = Arc::new(AtomicUsize::new(0));
    let counter = ticks.clone();
    let ticker = tokio::spawn(async move {
        for _ in 0..60 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });
    engine.apply(graph(slow.into_iter().collect(), &[])).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    // Inline, both runtime workers would be asleep in the two check-applies by now.
    let seen = ticks.load(Ordering::SeqCst);
    assert!(seen >= 25, "the engine runtime stalled: {seen} ticks of 20 ms in 1 s");
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!((log.count("slow1"), log.count("slow2")), (1, 1), "{:?}", log.entries());
    ticker.abort();
    engine.shutdown(WAIT).await;
}

#[tokio::test]
async fn a_child_waits_for_every_parent() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let mut slow = Scripted::new("slow", &log);
    slow.work = Duration::from_millis(150);
    let fast = Scripted::new("fast", &log);
    let join = Scripted::new("join", &log);
    engine.apply(graph(vec![slow, fast, join], &[("slow", "join", false), ("fast", "join", false)])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert!(log.position("slow") < log.position("join"), "{:?}", log.entries());
    assert!(log.position("fast") < log.position("join"));
    assert_eq!(log.count("join"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_reach_children_only_when_the_parent_changed() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let changer = Scripted::new("changer", &log).changing();
    let quiet = Scripted::new("quiet", &log);
    let a = Scripted::new("a", &log);
    let b = Scripted::new("b", &log);
    engine.apply(graph(vec![changer, quiet, a, b], &[("changer", "a", true), ("quiet", "b", true)])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(log.count("a+refresh"), 1, "{:?}", log.entries());
    assert_eq!(log.count("a"), 0);
    assert_eq!(log.count("b"), 1);
    assert_eq!(log.count("b+refresh"), 0);
}

#[tokio::test]
async fn a_refresh_is_consumed_only_by_a_successful_run() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let parent = Scripted::new("p", &log).changing();
    let child = Scripted::new("c", &log);
    child.probe.fail_times.store(1, Ordering::SeqCst);
    let meta = Meta { retry: 2, delay: 10, ..Meta::default() };
    engine.apply(graph_with_meta(vec![(parent, Meta::default()), (child, meta)], &[("p", "c", true)])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    // The first (failing) run and its retry both see the notification.
    assert_eq!(log.count("c+refresh"), 2, "{:?}", log.entries());
}

#[tokio::test]
async fn failures_retry_per_metaparams_and_then_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let mut events = engine.subscribe();
    let log = Log::default();
    let flaky = Scripted::new("flaky", &log);
    flaky.probe.fail_times.store(2, Ordering::SeqCst);
    let child = Scripted::new("child", &log);
    let meta = Meta { retry: 3, delay: 20, ..Meta::default() };
    engine
        .apply(graph_with_meta(vec![(flaky, meta), (child, Meta::default())], &[("flaky", "child", false)]))
        .await
        .unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(log.entries(), ["flaky", "flaky", "flaky", "child"]);
    assert!(engine.failures().await.is_empty());
    let mut retries = 0;
    while let Ok(ev) = events.try_recv() {
        if let EngineEvent::Failed { retrying: true, .. } = ev {
            retries += 1;
        }
    }
    assert_eq!(retries, 2);
}

/// Polls `ok` until it holds or `WAIT` passes.
async fn eventually(mut ok: impl AsyncFnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + WAIT;
    while tokio::time::Instant::now() < deadline {
        if ok().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// A run that ends while a failed resource is checked again (its event, or a dependant
/// that looked before it failed) still counts the failure: only a success ends it.
#[tokio::test]
async fn a_failure_counts_while_it_is_checked_again() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let mut broken = Scripted::new("broken", &log);
    broken.work = Duration::from_millis(300);
    let probe = broken.probe();
    probe.fail_times.store(2, Ordering::SeqCst);
    let child = Scripted::new("child", &log);
    engine.apply(graph(vec![broken, child], &[("broken", "child", false)])).await.unwrap();
    assert!(eventually(async || !engine.failures().await.is_empty()).await, "{:?}", log.entries());
    let tries = log.count("broken");
    // An event checks it again; while that runs, it is still failed and still holds up its dependant.
    probe.trigger.notify_one();
    assert!(eventually(async || engine.status().await[&key("broken")] == WorkerState::Applying).await);
    assert!(engine.failures().await.contains_key(&key("broken")));
    assert_eq!(engine.held_up().await.get(&key("child")), Some(&key("broken")));
    assert!(eventually(async || log.count("broken") == tries + 1).await);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(engine.failures().await.contains_key(&key("broken")), "failed again");
    // The child waits without making its failed parent run again.
    assert_eq!(log.count("broken"), tries + 1, "{:?}", log.entries());
    assert_eq!(log.count("child"), 0);
    // A success ends the failure and lets the child run.
    probe.trigger.notify_one();
    assert!(engine.wait_converged(WAIT).await);
    assert!(engine.failures().await.is_empty());
    assert_eq!(log.count("child"), 1);
}

#[tokio::test]
async fn an_exhausted_resource_blocks_only_its_dependents() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let broken = Scripted::new("broken", &log);
    broken.probe.fail_times.store(100, Ordering::SeqCst);
    let child = Scripted::new("child", &log);
    let other = Scripted::new("other", &log);
    let meta = Meta { retry: 1, ..Meta::default() };
    let g = graph_with_meta(
        vec![(broken, meta), (child, Meta::default()), (other, Meta::default())],
        &[("broken", "child", false)],
    );
    engine.apply(g).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // One try plus one retry, and perhaps one more check when its dependant asked for it
    // (a failed resource is checked again when woken); then it waits for an event.
    let tries = log.count("broken");
    assert!((2..=3).contains(&tries), "one try plus one retry: {:?}", log.entries());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(log.count("broken"), tries, "a permanent failure is not retried on its own");
    assert_eq!(log.count("child"), 0);
    assert_eq!(log.count("other"), 1);
    let failures = engine.failures().await;
    assert_eq!(failures.keys().cloned().collect::<Vec<_>>(), [key("broken")]);
    // Its dependent never converges, as in mgmt.
    assert!(!engine.is_converged());
    let status = engine.status().await;
    assert!(matches!(&status[&key("broken")], WorkerState::Failed { error } if error.message == "told to fail"));
    assert_eq!(status[&key("child")], WorkerState::Waiting);
    assert_eq!(status[&key("other")], WorkerState::Idle);
    // The engine still accepts graphs.
    let log2 = Log::default();
    engine.apply(graph(vec![Scripted::new("fresh", &log2)], &[])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(log2.entries(), ["fresh"]);
}

async fn max_concurrency(sema: &[&str], n: usize) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let now = Arc::new(AtomicUsize::new(0));
    let max = Arc::new(AtomicUsize::new(0));
    let res = (0..n)
        .map(|i| {
            let mut r = Scripted::new(&format!("r{i}"), &log);
            r.work = Duration::from_millis(60);
            r.running = Some((now.clone(), max.clone()));
            (r, Meta { sema: sema.iter().map(|s| s.to_string()).collect(), ..Meta::default() })
        })
        .collect();
    engine.apply(graph_with_meta(res, &[])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(log.entries().len(), n);
    max.load(Ordering::SeqCst)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphores_bound_concurrent_check_applies() {
    assert_eq!(max_concurrency(&["lock"], 4).await, 1);
    assert_eq!(max_concurrency(&["lock:2"], 4).await, 2);
    assert!(max_concurrency(&[], 4).await > 2, "without a semaphore they run in parallel");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_event_rechecks_after_confirming_the_parents() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let parent = Scripted::new("parent", &log);
    let child = Scripted::new("child", &log);
    let probe = child.probe();
    engine.apply(graph(vec![parent, child], &[("parent", "child", false)])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    probe.drift.store(true, Ordering::SeqCst);
    probe.trigger.notify_one();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(engine.wait_converged(WAIT).await);
    // The parent was confirmed from its state cache (no second check-apply).
    assert_eq!(log.entries(), ["parent", "child", "child"]);
}

#[tokio::test]
async fn received_values_are_pulled_before_check_apply() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let mut sender = Scripted::new("sender", &log);
    sender.send = Some("hello".into());
    let mut receiver = Scripted::new("receiver", &log);
    receiver.received = Some(String::new());
    let mut g = graph(vec![sender, receiver], &[]);
    g.add_sendrecv(key("sender"), "out", key("receiver"), "in");
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(log.entries(), ["sender", "receiver=hello"]);
}

#[tokio::test]
async fn noop_checks_without_applying_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let mut events = engine.subscribe();
    let log = Log::default();
    let res = Scripted::new("n", &log).changing();
    let probe = res.probe();
    engine.apply(graph_with_meta(vec![(res, Meta { noop: true, ..Meta::default() })], &[])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(log.entries(), ["n:noop"]);
    assert!(probe.drift.load(Ordering::SeqCst), "noop must not change anything");
    let mut reported = false;
    while let Ok(ev) = events.try_recv() {
        if let EngineEvent::Applied { key, changed: true, noop: true, reports } = ev {
            reported = &*key.name == "n" && reports == ["n would change"];
        }
    }
    assert!(reported);
}

/// The noop notes of `receiver` when its sender is `changing` or not.
async fn noop_receiver_notes(sender_changes: bool) -> (bool, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let mut events = engine.subscribe();
    let log = Log::default();
    let mut sender = Scripted::new("sender", &log);
    if sender_changes {
        sender = sender.changing();
    }
    sender.send = Some("hello".into());
    let mut receiver = Scripted::new("receiver", &log);
    receiver.received = Some(String::new());
    let noop = Meta { noop: true, ..Meta::default() };
    let mut g = graph_with_meta(vec![(sender, noop.clone()), (receiver, noop)], &[]);
    g.add_sendrecv(key("sender"), "out", key("receiver"), "in");
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    let mut notes = (false, Vec::new());
    while let Ok(ev) = events.try_recv() {
        if let EngineEvent::Applied { key, changed, reports, .. } = ev
            && &*key.name == "receiver"
        {
            notes = (changed, reports);
        }
    }
    notes
}

#[tokio::test]
async fn a_noop_receiver_says_what_it_would_receive_and_whether_that_is_known() {
    let (changed, notes) = noop_receiver_notes(true).await;
    assert!(changed, "a value a sender makes only by running may change anything");
    assert_eq!(
        notes.last().map(String::as_str),
        Some(
            "scripted[receiver]: would receive `in` from scripted[sender].out, which is known only once scripted[sender] runs"
        )
    );
    let (_, notes) = noop_receiver_notes(false).await;
    assert_eq!(
        notes.last().map(String::as_str),
        Some("scripted[receiver]: would receive `in` from scripted[sender].out")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swap_keeps_unchanged_resources_running() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let a1 = Scripted::new("a", &log).param("1");
    let b = Scripted::new("b", &log).param("1");
    let c = Scripted::new("c", &log);
    let (a1_probe, b_probe, c_probe) = (a1.probe(), b.probe(), c.probe());
    engine.apply(graph(vec![a1, b, c], &[])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);

    let a2 = Scripted::new("a", &log).param("2");
    let b_again = Scripted::new("b", &log).param("1");
    let d = Scripted::new("d", &log);
    let report = engine.apply(graph(vec![a2, b_again, d], &[])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(report.stopped, [key("a"), key("c")]);
    assert_eq!(report.started, [key("a"), key("d")]);
    assert_eq!(report.unchanged, [key("b")]);
    assert_eq!(b_probe.watch_starts.load(Ordering::SeqCst), 1, "b's watch was not restarted");
    assert_eq!(log.count("b"), 1, "b did not re-run");
    assert_eq!(a1_probe.cleanups.load(Ordering::SeqCst), 1);
    assert_eq!(c_probe.cleanups.load(Ordering::SeqCst), 1);
    assert_eq!(log.count("a"), 2);
    assert_eq!(engine.keys().await, [key("a"), key("b"), key("d")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_replaces_only_its_vertices_and_keeps_their_edges() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let (a, b, c, d) =
        (Scripted::new("a", &log), Scripted::new("b", &log), Scripted::new("c", &log), Scripted::new("d", &log));
    let probes = [a.probe(), b.probe(), c.probe(), d.probe()];
    engine.apply(graph(vec![a, b, c, d], &[("a", "b", true), ("b", "c", true)])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(log.entries().len(), 4);

    // b changes params and finds its state wrong: only b restarts; its change refreshes c.
    let report = engine.patch(vec![vertex(Scripted::new("b", &log).param("2").changing())]).await.unwrap();
    assert_eq!((report.started.as_slice(), report.stopped.as_slice()), ([key("b")].as_slice(), [key("b")].as_slice()));
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(&log.entries()[4..], ["b", "c+refresh"]);
    assert_eq!(probes[1].cleanups.load(Ordering::SeqCst), 1, "the old b was cleaned up");
    for (p, name) in [(&probes[0], "a"), (&probes[2], "c"), (&probes[3], "d")] {
        assert_eq!(p.watch_starts.load(Ordering::SeqCst), 1, "{name}'s watch was not restarted");
        assert_eq!(p.cleanups.load(Ordering::SeqCst), 0, "{name} kept running");
    }
    assert_eq!(engine.generation(), 2);

    // The parent's link leads to the new b: a change of a refreshes it.
    probes[0].drift.store(true, Ordering::SeqCst);
    probes[0].trigger.notify_one();
    support::until(|| log.count("b+refresh") == 1).await;
    assert!(engine.wait_converged(WAIT).await);

    // The same params again: nothing restarts. A key that does not run: rejected, nothing touched.
    let report = engine.patch(vec![vertex(Scripted::new("b", &log).param("2"))]).await.unwrap();
    assert_eq!((report.started.len(), report.unchanged.as_slice()), (0, [key("b")].as_slice()));
    let err = engine.patch(vec![vertex(Scripted::new("b", &log).param("3")), vertex(Scripted::new("z", &log))]);
    let err = err.await.unwrap_err().to_string();
    assert!(err.contains("scripted[z]: is not in the running graph"), "{err}");
    let before = log.entries().len();
    // A full swap of the same graph afterwards finds every vertex and edge as it declares them.
    let same = graph(
        vec![
            Scripted::new("a", &log),
            Scripted::new("b", &log).param("2"),
            Scripted::new("c", &log),
            Scripted::new("d", &log),
        ],
        &[("a", "b", true), ("b", "c", true)],
    );
    let report = engine.apply(same).await.unwrap();
    assert_eq!(report.unchanged.len(), 4, "{report:?}");
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(log.entries().len(), before);
}

fn vertex(res: Scripted) -> engine::Vertex {
    engine::Vertex { key: key(&res.name.clone()), meta: Meta::default(), res: Box::new(res) }
}

#[tokio::test]
async fn a_new_parent_of_a_kept_child_runs_first() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    engine.apply(graph(vec![Scripted::new("child", &log)], &[])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    let g = graph(vec![Scripted::new("child", &log), Scripted::new("parent", &log)], &[("parent", "child", false)]);
    let report = engine.apply(g).await.unwrap();
    assert_eq!(report.unchanged, [key("child")]);
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(log.entries(), ["child", "parent"], "the kept child is confirmed from its cache");
}

#[tokio::test]
async fn an_invalid_candidate_is_rejected_whole() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let a = Scripted::new("a", &log);
    let probe = a.probe();
    engine.apply(graph(vec![a], &[])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);

    let mut bad = Scripted::new("bad", &log);
    bad.invalid = true;
    let err = engine.apply(graph(vec![Scripted::new("other", &log), bad], &[])).await.unwrap_err();
    assert!(err.to_string().contains("scripted[bad] did not validate: told to be invalid"), "{err}");

    let mut failing_init = Scripted::new("init", &log);
    failing_init.init_fails = true;
    let err = engine.apply(graph(vec![failing_init], &[])).await.unwrap_err();
    assert!(matches!(&err, SwapError::Rejected(r) if r.len() == 1), "{err}");

    let cycle =
        graph(vec![Scripted::new("x", &log), Scripted::new("y", &log)], &[("x", "y", false), ("y", "x", false)]);
    let err = engine.apply(cycle).await.unwrap_err();
    assert!(err.to_string().contains("cycle"), "{err}");

    let limited = Meta { limit: 1.0, burst: 0, ..Meta::default() };
    let err = engine.apply(graph_with_meta(vec![(Scripted::new("l", &log), limited)], &[])).await.unwrap_err();
    assert!(err.to_string().contains("permanently limited"), "{err}");

    assert_eq!(engine.keys().await, [key("a")]);
    assert_eq!(probe.cleanups.load(Ordering::SeqCst), 0, "a kept running");
    assert_eq!(engine.generation(), 1);
}

#[tokio::test]
async fn dollar_names_need_the_dollar_metaparam() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let err = engine.apply(graph(vec![Scripted::new("$foo", &log)], &[])).await.unwrap_err();
    assert!(err.to_string().contains("Meta:dollar"), "{err}");
    let meta = Meta { dollar: true, ..Meta::default() };
    engine.apply(graph_with_meta(vec![(Scripted::new("$foo", &log), meta)], &[])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
}

#[tokio::test]
async fn hidden_resources_never_check_apply() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let mut hidden = Scripted::new("hidden", &log);
    hidden.invalid = true;
    let meta = Meta { hidden: true, ..Meta::default() };
    engine
        .apply(graph_with_meta(
            vec![(hidden, meta), (Scripted::new("after", &log), Meta::default())],
            &[("hidden", "after", false)],
        ))
        .await
        .unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(log.entries(), ["after"]);
}

#[tokio::test]
async fn timeouts_fail_a_slow_check_apply() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let mut slow = Scripted::new("slow", &log);
    slow.work = Duration::from_secs(5);
    let meta = Meta { timeout: 50, ..Meta::default() };
    engine.apply(graph_with_meta(vec![(slow, meta)], &[])).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let failures = engine.failures().await;
    assert_eq!(failures.get(&key("slow")).map(String::as_str), Some("timeout after 50 ms"));
}

#[tokio::test]
async fn poll_mode_rechecks_on_a_timer() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let res = Scripted::new("polled", &log);
    let probe = res.probe();
    engine.apply(graph_with_meta(vec![(res, Meta { poll: 1, ..Meta::default() })], &[])).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(log.count("polled"), 2, "{:?}", log.entries());
    assert_eq!(probe.watch_starts.load(Ordering::SeqCst), 0, "the resource's own watch does not run");
}

#[tokio::test]
async fn shutdown_stops_and_cleans_up_everything() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let res: Vec<Scripted> = (0..5).map(|i| Scripted::new(&format!("r{i}"), &log)).collect();
    let probes: Vec<_> = res.iter().map(Scripted::probe).collect();
    engine.apply(graph(res, &[])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    let report = engine.shutdown(Duration::from_secs(2)).await;
    assert_eq!(report.stopped, 5);
    assert!(report.stragglers.is_empty());
    assert!(probes.iter().all(|p| p.cleanups.load(Ordering::SeqCst) == 1));
    assert!(matches!(engine.apply(Graph::new()).await, Err(SwapError::ShutDown)));
}

#[tokio::test]
async fn a_child_blocked_by_a_failed_parent_runs_once_the_parent_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let broken = Scripted::new("broken", &log);
    broken.probe.fail_times.store(100, Ordering::SeqCst);
    engine.apply(graph(vec![broken, Scripted::new("child", &log)], &[("broken", "child", false)])).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(log.count("child"), 0);
    let report = engine.apply(graph(vec![Scripted::new("child", &log)], &[])).await.unwrap();
    assert_eq!(report.unchanged, [key("child")]);
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(log.count("child"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_diamond_runs_the_join_once_after_both_branches() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let res = ["top", "left", "right", "bottom"].map(|n| Scripted::new(n, &log)).into_iter().collect();
    let edges =
        [("top", "left", false), ("top", "right", false), ("left", "bottom", false), ("right", "bottom", false)];
    engine.apply(graph(res, &edges)).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(log.count("bottom"), 1, "{:?}", log.entries());
    assert!(log.position("top") < log.position("left") && log.position("top") < log.position("right"));
    assert!(log.position("left") < log.position("bottom") && log.position("right") < log.position("bottom"));
}

/// Runs on the test's paused clock, so on one runtime (an apply pool keeps real time).
async fn applied_after_triggers(meta: Meta) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let engine = support::inline_engine(&dir);
    let log = Log::default();
    let res = Scripted::new("limited", &log);
    let probe = res.probe();
    engine.apply(graph_with_meta(vec![(res, meta)], &[])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    let started = tokio::time::Instant::now();
    for n in 2..=4 {
        probe.drift.store(true, Ordering::SeqCst);
        probe.trigger.notify_one();
        while log.count("limited") < n {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    started.elapsed()
}

#[tokio::test(start_paused = true)]
async fn the_rate_limit_spaces_out_watch_events() {
    let limited = applied_after_triggers(Meta { limit: 2.0, burst: 1, ..Meta::default() }).await;
    assert!(limited >= Duration::from_millis(1000), "three events at 2/s after the burst: {limited:?}");
    let free = applied_after_triggers(Meta::default()).await;
    assert!(free < Duration::from_millis(200), "{free:?}");
}

#[tokio::test]
async fn rewatch_restarts_a_failed_resource_on_the_next_swap() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let meta = |rewatch| Meta { rewatch, reset: true, ..Meta::default() };
    let failing = |log: &Log, times| {
        let r = Scripted::new("f", log);
        r.probe.fail_times.store(times, Ordering::SeqCst);
        r
    };
    let engine = &engine;
    let failed = move || async move { engine.failures().await.contains_key(&key("f")) };
    engine.apply(graph_with_meta(vec![(failing(&log, 2), meta(false))], &[])).await.unwrap();
    assert!(eventually(failed).await);
    assert_eq!(log.count("f"), 1);
    // Same params, no rewatch: the failed worker is kept as it is, and checked once more
    // (a swap is when its cause may have passed); it fails again.
    let report = engine.apply(graph_with_meta(vec![(Scripted::new("f", &log), meta(false))], &[])).await.unwrap();
    assert_eq!(report.unchanged, [key("f")]);
    support::until(|| log.count("f") == 2).await;
    assert_eq!(log.count("f"), 2, "the kept failed worker is checked again");
    assert!(eventually(failed).await);
    // Rewatch differs in meta, so this swap replaces it; a later identical swap with
    // rewatch set keeps restarting it only while it is failed.
    engine.apply(graph_with_meta(vec![(failing(&log, 1), meta(true))], &[])).await.unwrap();
    support::until(|| log.count("f") == 3).await;
    assert!(eventually(failed).await);
    let report = engine.apply(graph_with_meta(vec![(Scripted::new("f", &log), meta(true))], &[])).await.unwrap();
    assert_eq!(report.started, [key("f")], "a failed worker with rewatch is restarted");
    assert!(engine.wait_converged(WAIT).await);
    assert!(engine.failures().await.is_empty());
    assert_eq!(log.count("f"), 4, "{:?}", log.entries());
}

#[tokio::test]
async fn the_retry_budget_survives_a_param_change_unless_reset() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let failing = |param: &str| {
        let r = Scripted::new("f", &log).param(param);
        r.probe.fail_times.store(100, Ordering::SeqCst);
        r
    };
    let meta = |reset| Meta { retry: 1, reset, ..Meta::default() };
    engine.apply(graph_with_meta(vec![(failing("1"), meta(false))], &[])).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(log.count("f"), 2, "one try and one retry");
    engine.apply(graph_with_meta(vec![(failing("2"), meta(false))], &[])).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(log.count("f"), 3, "the budget was already spent");
    engine.apply(graph_with_meta(vec![(failing("3"), meta(true))], &[])).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(log.count("f"), 5, "reset refills the budget");
}

#[tokio::test(start_paused = true)]
async fn converged_for_waits_out_the_hold_time_and_restarts_it_on_activity() {
    let dir = tempfile::tempdir().unwrap();
    // The paused clock is this runtime's: no apply pool.
    let engine = support::inline_engine(&dir);
    let log = Log::default();
    let res = Scripted::new("r", &log);
    let probe = res.probe();
    engine.apply(graph(vec![res], &[])).await.unwrap();
    let started = tokio::time::Instant::now();
    let poke_later = async {
        tokio::time::sleep(Duration::from_secs(2)).await;
        probe.trigger.notify_one();
    };
    let (settled, ()) =
        tokio::join!(engine.wait_converged_for(Duration::from_secs(5), Duration::from_secs(60)), poke_later);
    assert!(settled);
    assert!(
        started.elapsed() >= Duration::from_secs(7),
        "the event at 2 s restarted the 5 s hold: {:?}",
        started.elapsed()
    );
    assert!(!engine.wait_converged_for(Duration::from_secs(5), Duration::from_secs(1)).await, "times out");
}

#[tokio::test]
async fn a_failing_watch_is_restarted_within_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let flaky = Scripted::new("flaky", &log);
    flaky.probe.watch_failures.store(2, Ordering::SeqCst);
    let flaky_probe = flaky.probe();
    let doomed = Scripted::new("doomed", &log);
    doomed.probe.watch_failures.store(5, Ordering::SeqCst);
    let meta = Meta { retry: 2, delay: 10, ..Meta::default() };
    engine.apply(graph_with_meta(vec![(flaky, meta.clone()), (doomed, meta)], &[])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(flaky_probe.watch_starts.load(Ordering::SeqCst), 3);
    assert_eq!(log.entries(), ["flaky"], "a resource whose watch never started never runs");
    let failures = engine.failures().await;
    assert_eq!(failures.get(&key("doomed")).map(String::as_str), Some("watch told to fail"));
}

#[tokio::test]
async fn a_panicking_watch_is_an_error_whether_polled_inline_or_in_a_task_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let mut probes = Vec::new();
    let mut resources = Vec::new();
    for (name, inline, panics) in [("inline", true, 1), ("spawned", false, 1), ("doomed", true, 5)] {
        let mut r = Scripted::new(name, &log);
        r.passive_watch = inline;
        r.probe.watch_panics.store(panics, Ordering::SeqCst);
        probes.push(r.probe());
        resources.push((r, Meta { retry: 1, delay: 10, ..Meta::default() }));
    }
    let bystander = Scripted::new("bystander", &log);
    resources.push((bystander, Meta::default()));
    engine.apply(graph_with_meta(resources, &[])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    // Restarted after the panic, within the budget, and then run.
    assert_eq!(probes[0].watch_starts.load(Ordering::SeqCst), 2);
    assert_eq!(probes[1].watch_starts.load(Ordering::SeqCst), 2);
    let mut ran = log.entries();
    ran.sort();
    assert_eq!(ran, ["bystander", "inline", "spawned"]);
    let failures = engine.failures().await;
    assert_eq!(failures.get(&key("doomed")).map(String::as_str), Some("watch panicked: watch told to panic"));
    assert_eq!(failures.len(), 1);
    engine.shutdown(WAIT).await;
}

/// A subscription is the watch of a resource that needs no future: its events run the
/// resource, a refresh that fails restarts it within `Meta:retry` (and fails the resource
/// for good past it), a subscribe that fails is retried the same way, and a stop drops it.
#[tokio::test]
async fn a_subscription_watches_and_a_failed_refresh_or_subscribe_restarts_it() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let mut probes = Vec::new();
    let mut resources = Vec::new();
    for (name, refresh_failures, subscribe_failures) in [("flaky", 1, 0), ("late", 0, 1), ("doomed", 5, 0)] {
        let mut r = Scripted::new(name, &log);
        r.subscribed = true;
        r.probe.refresh_failures.store(refresh_failures, Ordering::SeqCst);
        r.probe.watch_failures.store(subscribe_failures, Ordering::SeqCst);
        probes.push(r.probe());
        resources.push((r, Meta { retry: 1, delay: 10, ..Meta::default() }));
    }
    engine.apply(graph_with_meta(resources, &[])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    // The startup event needs no refresh; "late" subscribed on its second try.
    assert_eq!(log.count("flaky"), 1);
    assert_eq!(log.count("late"), 1);
    assert_eq!(probes[1].watch_starts.load(Ordering::SeqCst), 2);

    // An event: "flaky"'s refresh fails once, so it subscribes again and runs.
    probes[0].drift.store(true, Ordering::SeqCst);
    probes[0].trigger.notify_one();
    support::until(|| log.count("flaky") >= 2).await;
    assert_eq!(log.count("flaky"), 2, "{:?}", log.entries());
    assert_eq!(probes[0].watch_starts.load(Ordering::SeqCst), 2);
    assert!(probes[0].watch_dropped.load(Ordering::SeqCst), "the failed subscription was dropped");

    // "doomed" keeps failing its refresh: one retry, then it fails for good.
    for _ in 0..2 {
        probes[2].trigger.notify_one();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let deadline = tokio::time::Instant::now() + WAIT;
    while engine.failures().await.is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let failures = engine.failures().await;
    assert_eq!(failures.get(&key("doomed")).map(String::as_str), Some("refresh told to fail"));
    assert_eq!(failures.len(), 1);

    probes[1].watch_dropped.store(false, Ordering::SeqCst);
    engine.shutdown(WAIT).await;
    assert!(probes[1].watch_dropped.load(Ordering::SeqCst), "a stop drops the subscription");
}

/// An idle worker whose resource watches by subscription keeps no task: it parks in its
/// node, an event spawns it again (it runs, then parks again), and a stop cleans it up
/// (at once, without a task, as nothing here waits). A worker with a watch future keeps its task. Counted on the runtime the
/// workers run on; each subscription of the test's resources has a task of its own.
#[tokio::test]
async fn an_idle_worker_watching_by_subscription_parks_until_an_event_or_a_stop() {
    const N: usize = 20;
    let dir = tempfile::tempdir().unwrap();
    let engine = support::inline_engine(&dir);
    let tasks = || tokio::runtime::Handle::current().metrics().num_alive_tasks();
    let before = tasks();
    let log = Log::default();
    let mut probes = Vec::new();
    let mut resources = Vec::new();
    for i in 0..N {
        let mut r = Scripted::new(&format!("s{i}"), &log);
        r.subscribed = true;
        probes.push(r.probe());
        resources.push(r);
    }
    let polled = Scripted::new("polled", &log);
    probes.push(polled.probe());
    resources.push(polled);
    engine.apply(graph(resources, &[])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    // The subscriptions' own tasks and the one worker with a watch future.
    let settled = before + N + 1;
    support::until(|| tasks() == settled).await;
    assert_eq!(tasks(), settled, "tasks once settled");

    // An event resumes one worker, which runs and parks again.
    probes[3].drift.store(true, Ordering::SeqCst);
    probes[3].trigger.notify_one();
    support::until(|| log.count("s3") >= 2).await;
    assert_eq!(log.count("s3"), 2, "{:?}", log.entries());
    assert!(engine.wait_converged(WAIT).await);
    support::until(|| tasks() == settled).await;
    assert_eq!(tasks(), settled, "tasks once settled");
    assert_eq!(log.count("s4"), 1, "the others stayed parked");

    // A stop ends each parked worker, which cleans up and drops its subscription.
    let report = engine.shutdown(WAIT).await;
    assert!(report.stragglers.is_empty());
    for probe in &probes {
        assert_eq!(probe.cleanups.load(Ordering::SeqCst), 1);
    }
    assert!(probes[..N].iter().all(|p| p.watch_dropped.load(Ordering::SeqCst)));
    assert_eq!(tasks(), before, "every worker and subscription task is gone");
}

/// A stopped parked worker stops without a task of its own when it can (above); one whose
/// cleanup has to wait becomes a task again, and a shutdown awaits it.
#[tokio::test]
async fn a_parked_worker_whose_cleanup_waits_is_awaited_at_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let engine = support::inline_engine(&dir);
    let log = Log::default();
    let mut slow = Scripted::new("slow", &log);
    slow.subscribed = true;
    slow.cleanup_wait = Duration::from_millis(100);
    let probe = slow.probe();
    engine.apply(graph(vec![slow], &[])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    let started = std::time::Instant::now();
    let report = engine.shutdown(WAIT).await;
    assert!(report.stragglers.is_empty());
    assert_eq!(probe.cleanups.load(Ordering::SeqCst), 1, "cleaned up before the shutdown returned");
    assert!(started.elapsed() >= Duration::from_millis(100), "the shutdown waited for the cleanup");
    assert!(probe.watch_dropped.load(Ordering::SeqCst));
}

/// A parked worker keeps no cancellation token; the run an event resumes gets one, and a
/// stop cancels it, so a long check-apply that honours it ends at once (no straggler).
#[tokio::test]
async fn a_stop_cancels_the_check_apply_of_a_worker_resumed_from_parking() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let mut r = Scripted::new("s", &log);
    r.subscribed = true;
    let probe = r.probe();
    engine.apply(graph(vec![r], &[])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    // Parked by now or soon; the event resumes it into a check-apply that waits.
    tokio::time::sleep(Duration::from_millis(20)).await;
    probe.until_cancelled.store(true, Ordering::SeqCst);
    probe.trigger.notify_one();
    support::until(|| log.count("s:waiting") > 0).await;
    assert_eq!(log.count("s:waiting"), 1, "{:?}", log.entries());
    // Half of the deadline goes to waiting for in-flight check-applies; then they are
    // cancelled, and one that does not end by the deadline is aborted as a straggler.
    let report = engine.shutdown(Duration::from_millis(600)).await;
    assert!(report.stragglers.is_empty(), "the check-apply was not cancelled");
    assert_eq!(probe.cleanups.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_reversible_resource_is_reversed_once_when_it_leaves_the_graph() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let reversible = |param: &str| {
        let mut r = Scripted::new("a", &log).param(param);
        r.reversible = true;
        (r, Meta { reverse: true, ..Meta::default() })
    };
    engine.apply(graph_with_meta(vec![reversible("1")], &[])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    // A param change replaces it; the reversal captured first is kept.
    engine.apply(graph_with_meta(vec![reversible("2")], &[])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    let report = engine.apply(Graph::new()).await.unwrap();
    assert_eq!(report.started, [key("a")], "the reversal takes its place");
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(log.entries(), ["a", "a", "a~reversal"]);
    let report = engine.apply(Graph::new()).await.unwrap();
    assert_eq!(report.stopped, [key("a")], "a reversal that succeeded leaves");
    assert!(engine.keys().await.is_empty());
    engine.apply(Graph::new()).await.unwrap();
    assert_eq!(log.count("a~reversal"), 1);
}

#[tokio::test]
async fn a_watch_that_ignores_cancellation_is_aborted_with_its_worker() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let res = Scripted::new("stubborn", &log);
    res.probe.stubborn.store(true, Ordering::SeqCst);
    let probe = res.probe();
    engine.apply(graph(vec![res], &[])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    let report = engine.shutdown(Duration::from_millis(100)).await;
    assert_eq!(report.stragglers, [key("stubborn")]);
    for _ in 0..100 {
        if probe.watch_dropped.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(probe.watch_dropped.load(Ordering::SeqCst), "the watch task did not outlive its worker");
}

#[tokio::test]
async fn dropping_the_engine_stops_its_workers() {
    let dir = tempfile::tempdir().unwrap();
    let log = Log::default();
    let res = Scripted::new("r", &log);
    let probe = res.probe();
    {
        let engine = engine(&dir);
        engine.apply(graph(vec![res], &[])).await.unwrap();
        assert!(engine.wait_converged(WAIT).await);
    }
    for _ in 0..100 {
        if probe.cleanups.load(Ordering::SeqCst) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(probe.cleanups.load(Ordering::SeqCst), 1);
    assert!(probe.watch_dropped.load(Ordering::SeqCst));
}

/// A one-shot engine (a run that ends at its first converge) starts no passive watch, by
/// subscription or by future: such a resource is checked once, in order, from its startup
/// event alone. A watch that does work of its own still starts.
#[tokio::test]
async fn a_one_shot_engine_starts_no_passive_watch() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine::Engine::new(engine::EngineConfig {
        state_dir: dir.path().to_path_buf(),
        stop_timeout: WAIT,
        apply_pool: Some(support::apply_pool()),
        one_shot: true,
        revive: None,
    });
    let log = Log::default();
    let mut probes = Vec::new();
    let mut resources = Vec::new();
    for (name, passive, subscribed) in [("subscribed", true, true), ("observer", true, false), ("worker", false, false)]
    {
        let mut r = Scripted::new(name, &log);
        r.passive_watch = passive;
        r.subscribed = subscribed;
        probes.push(r.probe());
        resources.push(r);
    }
    engine.apply(graph(resources, &[("subscribed", "observer", false), ("observer", "worker", false)])).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(log.entries(), ["subscribed", "observer", "worker"], "each checked once, in order");
    let starts: Vec<usize> = probes.iter().map(|p| p.watch_starts.load(Ordering::SeqCst)).collect();
    assert_eq!(starts, [0, 0, 1], "only the watch that does work of its own started");
    engine.shutdown(WAIT).await;
}
