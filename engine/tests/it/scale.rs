//! Scale checks with cheap scripted resources: a long chain and a wide fan-out converge,
//! and swapping one vertex out of many touches only that vertex. Prints the timings it
//! measured (run with `--nocapture` to see them).

use crate::support;

use std::time::{Duration, Instant};

use support::{Log, Scripted, engine, graph, key};

const LIMIT: Duration = Duration::from_secs(60);

fn chain(n: usize, log: &Log) -> engine::Graph {
    let res = (0..n).map(|i| Scripted::new(&format!("c{i}"), log)).collect();
    let names: Vec<String> = (0..n).map(|i| format!("c{i}")).collect();
    let edges: Vec<(&str, &str, bool)> = names.windows(2).map(|w| (w[0].as_str(), w[1].as_str(), false)).collect();
    graph(res, &edges)
}

#[tokio::test]
async fn a_chain_of_a_thousand_converges_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let started = Instant::now();
    engine.apply(chain(1000, &log)).await.unwrap();
    assert!(engine.wait_converged(LIMIT).await);
    let took = started.elapsed();
    println!("chain of 1000: converged in {took:?}");
    let entries = log.entries();
    assert_eq!(entries.len(), 1000);
    assert!(entries.iter().enumerate().all(|(i, e)| *e == format!("c{i}")), "applied in chain order");
    engine.shutdown(LIMIT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wide_graph_converges_and_one_change_swaps_one_vertex() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir);
    let log = Log::default();
    let n = 2000;
    let make = |changed: Option<usize>| {
        let res = (0..n)
            .map(|i| Scripted::new(&format!("w{i}"), &log).param(if Some(i) == changed { "new" } else { "old" }))
            .collect();
        graph(res, &[])
    };
    let started = Instant::now();
    engine.apply(make(None)).await.unwrap();
    assert!(engine.wait_converged(LIMIT).await);
    println!("{n} independent vertices: converged in {:?}", started.elapsed());

    let started = Instant::now();
    let report = engine.apply(make(Some(7))).await.unwrap();
    assert!(engine.wait_converged(LIMIT).await);
    println!("swap of 1 in {n}: applied and converged in {:?}", started.elapsed());
    assert_eq!(report.started, [key("w7")]);
    assert_eq!(report.unchanged.len(), n - 1);
    assert_eq!(log.entries().len(), n + 1);
    let report = engine.shutdown(LIMIT).await;
    assert_eq!(report.stopped, n);
}
