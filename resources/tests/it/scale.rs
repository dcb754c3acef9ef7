//! Many real file resources in one engine: they converge, share one inotify instance, and
//! a single drifted file is repaired without touching the others. Prints its timings (run
//! with `--nocapture`).

use crate::support;

use std::fs;
use std::time::Instant;

use engine::{EngineEvent, Graph, Meta, ResKey};
use support::{WAIT, engine, eventually, params, s};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_files_converge_and_one_drift_is_repaired_alone() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir.path().join("state"));
    let n = 500;
    let mut g = Graph::new();
    for i in 0..n {
        let name = dir.path().join(format!("f{i:03}")).to_str().unwrap().to_string();
        let content = format!("file {i}\n");
        let res =
            resources::build("file", &name, &params(&[("state", s("exists")), ("content", s(&content))])).unwrap();
        g.add_vertex(ResKey::new("file", &name), Meta::default(), res);
    }
    let started = Instant::now();
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    println!("{n} files: written and converged in {:?}", started.elapsed());
    let inotify = fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.to_string_lossy().contains("inotify"))
        .count();
    assert_eq!(inotify, 1, "one shared inotify instance");

    let mut events = engine.subscribe();
    let drifted = dir.path().join("f123");
    let started = Instant::now();
    fs::write(&drifted, "tampered\n").unwrap();
    assert!(eventually(|| fs::read_to_string(&drifted).is_ok_and(|c| c == "file 123\n")).await);
    println!("drift on one of {n} files repaired in {:?}", started.elapsed());
    assert!(engine.wait_converged(WAIT).await);
    let mut changed = Vec::new();
    while let Ok(ev) = events.try_recv() {
        if let EngineEvent::Applied { key, changed: true, .. } = ev {
            changed.push(key.name.to_string());
        }
    }
    assert_eq!(changed, [drifted.to_str().unwrap()], "only the drifted file was rewritten");
    engine.shutdown(WAIT).await;
}
