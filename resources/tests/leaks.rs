//! Resource lifetimes across graph swaps: watches (inotify), watch commands and their
//! pipes are released when a resource is replaced. Alone in its test binary so no other
//! test opens or closes fds while it counts them.

#[path = "it/support/mod.rs"]
mod support;

use std::fs;

use engine::{Graph, Meta, ResKey};
use support::{WAIT, engine, params, s};

fn open_fds() -> usize {
    fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

fn swap_graph(dir: &std::path::Path, generation: usize) -> Graph {
    let mut g = Graph::new();
    for i in 0..5 {
        let name = dir.join(format!("f{i}")).to_str().unwrap().to_string();
        let content = if i == 0 { format!("generation {generation}\n") } else { "steady\n".to_string() };
        let res =
            resources::build("file", &name, &params(&[("state", s("exists")), ("content", s(&content))])).unwrap();
        g.add_vertex(ResKey::new("file", &name), Meta::default(), res);
    }
    let watcher =
        [("cmd", s("true")), ("watchcmd", s(&format!("sleep 30 # {generation}"))), ("watchshell", s("/bin/sh"))];
    g.add_vertex(
        ResKey::new("exec", "watcher"),
        Meta::default(),
        resources::build("exec", "watcher", &params(&watcher)).unwrap(),
    );
    g
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_swaps_of_watched_files_and_commands_leak_no_fds() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir.path().join("state"));
    engine.apply(swap_graph(dir.path(), 0)).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    let before = open_fds();
    for generation in 1..=100 {
        let report = engine.apply(swap_graph(dir.path(), generation)).await.unwrap();
        assert_eq!(report.started.len(), 2, "only the changed file and the changed exec restart");
    }
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(fs::read_to_string(dir.path().join("f0")).unwrap(), "generation 100\n");
    let after = open_fds();
    assert!(after <= before, "open fds grew across 100 swaps: {before} -> {after}");
    let report = engine.shutdown(WAIT).await;
    assert!(report.stragglers.is_empty());
}
