//! Autogrouping through the engine: a graph of packages applied in one transaction and
//! reported package by package, a failing member named, the package watch repairing a
//! removal, and send/recv into a grouped `print`.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use engine::{EngineEvent, ResKey};
use lang::resgraph::{Edge, Meta, ResGraph, ResVertex, SendRecv};
use lang::span::Span;
use lang::value::Value;
use resources::machine::{FakePackages, Machine};

use crate::support::{WAIT, engine, eventually};

fn vertex(kind: &str, name: &str, params: &[(&str, Value)], asked: bool) -> ResVertex {
    let meta = Meta { autogroup_asked: asked, ..Default::default() };
    ResVertex {
        kind: kind.into(),
        name: name.into(),
        params: params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
        param_spans: Box::default(),
        meta: Arc::new(meta),
        collected: false,
        span: Span::default(),
    }
}

/// A sandbox whose package manager is `packages`, offering `names`.
fn host(root: &std::path::Path, packages: &Arc<FakePackages>, names: &[String]) -> Machine {
    for n in names {
        packages.offer(n, "1.0");
    }
    Machine { packages: packages.clone(), ..Machine::sandbox(root) }
}

/// Every `Applied` event's key that said it changed, from `events` so far.
fn changed(events: &mut tokio::sync::broadcast::Receiver<EngineEvent>) -> Vec<(ResKey, Vec<String>)> {
    let mut out = Vec::new();
    while let Ok(e) = events.try_recv() {
        if let EngineEvent::Applied { key, changed: true, reports, .. } = e {
            out.push((key, reports));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_packages_are_one_transaction_each_reported_and_a_removal_is_repaired_by_the_watch() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..20).map(|i| format!("tool{i:02}")).collect();
    let packages = Arc::new(FakePackages::default());
    let status = dir.path().join("dpkg-status");
    std::fs::write(&status, "").unwrap();
    *packages.status.lock().unwrap() = Some(status);
    let host = host(dir.path(), &packages, &names);
    let mut graph =
        ResGraph { vertices: names.iter().map(|n| vertex("pkg", n, &[], false)).collect(), ..Default::default() };
    resources::contract::group::autogroup(&mut graph);
    assert_eq!(graph.vertices.len(), 1, "{:?}", graph.to_lines());
    assert_eq!(graph.members[&0].len(), 19);

    let engine = engine(&dir.path().join("state"));
    let mut events = engine.subscribe();
    engine.apply(resources::contract::graph::to_engine(&host, graph, false).expect("builds")).await.expect("valid");
    assert!(engine.wait_converged(WAIT).await);
    assert!(engine.failures().await.is_empty(), "{:?}", engine.failures().await);
    assert_eq!(packages.transactions.load(Ordering::SeqCst), 1, "one transaction for twenty packages");
    assert!(names.iter().all(|n| packages.installed_version(n).as_deref() == Some("1.0")));
    let mut reported: Vec<(ResKey, Vec<String>)> = changed(&mut events);
    reported.sort();
    assert_eq!(reported.len(), 20, "each package is reported under its own name: {reported:?}");
    assert_eq!(reported[3], (ResKey::new("pkg", "tool03"), vec!["installed tool03".to_string()]));

    // Removed by hand: dpkg's status file changes, the watch sees it, the group repairs it
    // (one more transaction, for that package alone).
    let queries = packages.queries.load(Ordering::SeqCst);
    packages.remove_by_hand("tool07");
    assert!(eventually(|| packages.installed_version("tool07").is_some()).await, "reinstalled without polling");
    assert!(packages.queries.load(Ordering::SeqCst) > queries);
    assert_eq!(packages.transactions.load(Ordering::SeqCst), 2);
    assert!(engine.wait_converged(WAIT).await);
    let again = changed(&mut events);
    assert!(again.iter().any(|(k, r)| *k == ResKey::new("pkg", "tool07") && r == &["installed tool07"]), "{again:?}");
    assert!(again.iter().all(|(k, _)| *k == ResKey::new("pkg", "tool07")), "only the removed one changed: {again:?}");
    engine.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_member_of_a_group_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = ["alpha", "broken", "gamma"].map(String::from).to_vec();
    let packages = Arc::new(FakePackages::default());
    packages.broken.lock().unwrap().insert("broken".into());
    let host = host(dir.path(), &packages, &names);
    let mut graph =
        ResGraph { vertices: names.iter().map(|n| vertex("pkg", n, &[], false)).collect(), ..Default::default() };
    resources::contract::group::autogroup(&mut graph);
    assert_eq!(graph.vertices.len(), 1);
    let engine = engine(&dir.path().join("state"));
    engine.apply(resources::contract::graph::to_engine(&host, graph, false).expect("builds")).await.expect("valid");
    assert!(engine.wait_converged(WAIT).await);
    let failures = engine.failures().await;
    let message = failures.get(&ResKey::new("pkg", "gamma")).expect("the group (gamma's vertex) failed");
    assert!(message.starts_with("pkg[broken]: "), "the member that failed is named: {message}");
    assert!(message.contains("dpkg returned an error"), "with the backend's reason: {message}");
    assert!(!message.contains("pkg[alpha]") && !message.contains("pkg[gamma]"), "{message}");
    // The others were installed all the same (each alone, once the group's one
    // transaction failed).
    assert_eq!(packages.installed_version("alpha").as_deref(), Some("1.0"));
    assert_eq!(packages.installed_version("gamma").as_deref(), Some("1.0"));
    assert_eq!(packages.installed_version("broken"), None);
    engine.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grouped_print_receives_its_own_value() {
    let dir = tempfile::tempdir().unwrap();
    let recv = |from: usize, to: usize| Edge {
        from,
        to,
        notify: false,
        send_recv: vec![SendRecv { send: "any".into(), recv: "msg".into() }],
        span: Span::default(),
    };
    let mut graph = ResGraph {
        vertices: vec![
            vertex("value", "v2", &[("any", Value::str("i am value2"))], false),
            vertex("value", "v3", &[("any", Value::str("i am value3"))], false),
            vertex("print", "print2", &[("msg", Value::str("i am print2"))], true),
            vertex("print", "print3", &[("msg", Value::str("i am print3"))], true),
        ],
        edges: vec![recv(0, 2), recv(1, 3)],
        ..Default::default()
    };
    resources::contract::group::autogroup(&mut graph);
    assert_eq!(graph.members.values().flatten().map(|m| m.name.as_str()).collect::<Vec<_>>(), ["print2"]);
    let engine = engine(&dir.path().join("state"));
    let mut events = engine.subscribe();
    let g = resources::contract::graph::to_engine(&Machine::sandbox(dir.path()), graph, false).expect("builds");
    engine.apply(g).await.expect("valid");
    assert!(engine.wait_converged(WAIT).await);
    assert!(engine.failures().await.is_empty(), "{:?}", engine.failures().await);
    let printed = changed(&mut events);
    let said = |name: &str| printed.iter().find(|(k, _)| *k == ResKey::new("print", name)).map(|(_, r)| r.clone());
    assert_eq!(said("print2"), Some(vec!["i am value2".to_string()]), "the member received: {printed:?}");
    assert_eq!(said("print3"), Some(vec!["i am value3".to_string()]), "{printed:?}");
    engine.shutdown(Duration::from_secs(5)).await;
}
