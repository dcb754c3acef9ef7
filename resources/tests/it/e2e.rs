//! mcl programs all the way through: the real front end and dataflow (`lang`, `funcs`),
//! interpretation, this crate's glue (`graph::check`, `add_autoedges`, `to_engine`) and
//! the engine, on files in a temporary directory. What `tend run` does, minus the CLI.

use crate::e2e_support;

use std::time::Duration;

use e2e_support::resource_graph;
use resources::Machine;

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_converges_the_files_it_declares() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display();
    let program = format!(
        r#"import "fmt"

$names = ["a", "b"]
$root = "{root}"
file "${{root}}/conf/" {{
	state => "exists",
}}
for $i, $name in $names {{
	file "${{root}}/conf/${{name}}" {{
		state => "exists",
		content => fmt.printf("name=%s index=%d\n", $name, $i),
		mode => "0640",
	}}
}}
exec "stamp" {{
	cmd => "echo stamped",
	Depend => File["${{root}}/conf/a"],
}}
Exec["stamp"].stdout -> File["${{root}}/stamp"].content
file "${{root}}/stamp" {{
	state => "exists",
}}
"#
    );
    let graph = resource_graph(&program).await.expect("the program compiles and interprets");
    let lines = graph.to_lines();
    let dir_edge =
        format!("Edge: file[{root}/conf/] -> file[{root}/conf/a] # file[{root}/conf/] -> file[{root}/conf/a]");
    assert!(lines.contains(&dir_edge), "the automatic edge: {lines:#?}");

    let engine = engine::Engine::new(engine::EngineConfig {
        state_dir: dir.path().join("state"),
        stop_timeout: Duration::from_secs(5),
        ..Default::default()
    });
    let g = resources::contract::graph::to_engine(&Machine::system(), graph, false).expect("builds");
    engine.apply(g).await.expect("valid");
    assert!(engine.wait_converged(WAIT).await);
    assert!(engine.failures().await.is_empty(), "{:?}", engine.failures().await);
    let read = |p: &str| std::fs::read_to_string(dir.path().join(p)).unwrap();
    assert_eq!(read("conf/a"), "name=a index=0\n");
    assert_eq!(read("conf/b"), "name=b index=1\n");
    assert_eq!(read("stamp"), "stamped\n");
    engine.shutdown(WAIT).await;
}

#[tokio::test]
async fn kind_validation_fails_at_interpret() {
    let err = resource_graph("test \"t\" {\n\tvalidatebool => true,\n}\n").await.unwrap_err();
    assert!(err.starts_with("errInterpret: test[t] did not Validate"), "{err}");
    let err = resource_graph("test \"t\" {\n\tuint8 => -1,\n}\n").await.unwrap_err();
    assert!(err.contains("can't store negative int `-1` into unsigned `uint8` field"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editing_the_program_swaps_only_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display();
    let version = |a: &str, b: &str| {
        format!(
            "file \"{root}/a\" {{\n\tstate => \"exists\",\n\tcontent => \"{a}\",\n}}\nfile \"{root}/b\" {{\n\tstate => \"exists\",\n\tcontent => \"{b}\",\n}}\n"
        )
    };
    let engine = engine::Engine::new(engine::EngineConfig {
        state_dir: dir.path().join("state"),
        stop_timeout: Duration::from_secs(5),
        ..Default::default()
    });
    let mut reports = Vec::new();
    for program in [version("1", "1"), version("2", "1"), version("2", "1")] {
        let graph = resource_graph(&program).await.expect("compiles");
        let g = resources::contract::graph::to_engine(&Machine::system(), graph, false).expect("builds");
        reports.push(engine.apply(g).await.expect("valid"));
        assert!(engine.wait_converged(WAIT).await);
    }
    let key = |n: &str| engine::ResKey::new("file", format!("{root}/{n}"));
    assert_eq!(reports[1].stopped, [key("a")]);
    assert_eq!(reports[1].started, [key("a")]);
    assert_eq!(reports[1].unchanged, [key("b")]);
    assert!(reports[2].started.is_empty() && reports[2].stopped.is_empty(), "an identical program changes nothing");
    assert_eq!(std::fs::read_to_string(dir.path().join("a")).unwrap(), "2");
    engine.shutdown(WAIT).await;
}
