//! mgmt's engine corpus (`../shared/conformance/engine/*.txtar`): each program is
//! compiled, interpreted and run by the engine until converged. Cases expecting an error
//! must fail at that stage; the others must produce the expected vertices and edges and
//! converge. Skips with a message when the corpus is absent (`TEND_SHARED_DIR` overrides
//! its location).

use crate::e2e_support;

use std::time::Duration;

use resources::Machine;

/// Resources that fail at runtime, as the archives themselves say mgmt's do
/// (`sendrecv-simple3`: an int received into `print.msg`).
const EXPECTED_RUNTIME_FAILURES: &[(&str, &str)] = &[("sendrecv-simple3.txtar", "print[print1]")];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_corpus_runs() {
    let Some(dir) = testkit::conformance("engine") else { return };
    let cases = testkit::archives(&dir);
    let mut failures = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap_or_default().to_string_lossy().to_string();
        let sections = testkit::txtar(&std::fs::read_to_string(case).unwrap_or_default());
        let get = |n: &str| testkit::section(&sections, n).unwrap_or_default().to_string();
        let (program, output) = (get("main.mcl"), get("OUTPUT"));
        let expected_err = output
            .lines()
            .find_map(|l| l.strip_prefix("# err: "))
            .map(|l| l.split(':').next().unwrap_or("").to_string());
        let outcome = e2e_support::resource_graph(&program).await;
        match (expected_err, outcome) {
            (Some(stage), Err(got)) if got.starts_with(&format!("{stage}:")) => {}
            (Some(stage), other) => {
                failures.push(format!("{name}: want {stage}, got {:?}", other.map(|g| g.to_lines())))
            }
            (None, Err(got)) => failures.push(format!("{name}: unexpected error {got}")),
            (None, Ok(graph)) => {
                let mut want: Vec<String> = output
                    .lines()
                    .filter(|l| l.starts_with("Vertex: ") || l.starts_with("Edge: ") || l.starts_with("Group: "))
                    .filter(|l| !l.contains(": Field: "))
                    .map(|l| l.split(" # ").next().unwrap_or(l).to_string())
                    .collect();
                want.sort();
                let got: Vec<String> =
                    graph.to_lines().iter().map(|l| l.split(" # ").next().unwrap_or(l).to_string()).collect();
                // Autogrouping as mgmt's: the members of a group are its `Group:` lines.
                if want != got {
                    failures.push(format!("{name}: graph {got:?}, want {want:?}"));
                }
                let state = tempfile::tempdir().unwrap();
                let engine = engine::Engine::new(engine::EngineConfig {
                    state_dir: state.path().to_path_buf(),
                    stop_timeout: Duration::from_secs(5),
                    ..Default::default()
                });
                let g = resources::contract::graph::to_engine(&Machine::system(), graph, false).expect("builds");
                engine.apply(g).await.expect("valid");
                if !engine.wait_converged(Duration::from_secs(20)).await {
                    failures.push(format!("{name}: did not converge: {:?}", engine.status().await));
                }
                let failed: Vec<String> = engine.failures().await.keys().map(ToString::to_string).collect();
                let expected: Vec<String> =
                    EXPECTED_RUNTIME_FAILURES.iter().filter(|(c, _)| *c == name).map(|(_, k)| k.to_string()).collect();
                if failed != expected {
                    failures.push(format!("{name}: failed resources {failed:?}, want {expected:?}"));
                }
                engine.shutdown(Duration::from_secs(5)).await;
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    println!("engine corpus: {} cases", cases.len());
}
