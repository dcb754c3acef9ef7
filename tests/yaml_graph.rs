//! mgmt's YAML graphs (`tend graph|check|run graph.yaml`): each graph in `tests/yaml/`
//! means what its `.mcl` twin means, malformed ones get one positioned line and change
//! nothing, and a running YAML graph follows edits of its file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

const TEND: &str = env!("CARGO_BIN_EXE_tend");

fn tend(args: &[&str], dir: &Path) -> Output {
    Command::new(TEND).args(args).current_dir(dir).env("NO_COLOR", "1").output().expect("tend runs")
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn yaml_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/yaml")
}

#[test]
fn every_yaml_graph_gives_the_vertices_edges_and_params_of_its_mcl_twin() {
    let dir = yaml_dir();
    let mut pairs = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let twin = path.with_extension("mcl");
        let graph = |p: &Path| {
            let out = tend(&["graph", "--format", "json", p.to_str().unwrap()], &dir);
            assert!(out.status.success(), "{}: {}", p.display(), text(&out));
            serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
        };
        let (from_yaml, from_mcl) = (graph(&path), graph(&twin));
        assert!(!from_yaml["vertices"].as_array().unwrap().is_empty(), "{}", path.display());
        assert_eq!(from_yaml, from_mcl, "{} and its twin differ", path.display());
        pairs += 1;
    }
    assert!(pairs >= 3, "only {pairs} pairs in {}", dir.display());
}

#[test]
fn keys_mgmt_ignores_are_warnings_that_name_their_place() {
    let out = tend(&["check", "commands.yaml"], &yaml_dir());
    assert!(out.status.success(), "{}", text(&out));
    let shown = text(&out);
    assert!(shown.contains("`pollint` is not a param of `exec`; ignored"), "{shown}");
    assert!(shown.contains("commands.yaml:12:5"), "{shown}");
}

/// Each malformed graph: its text, and what its one error line must say.
const MALFORMED: &[(&str, &str, &str)] = &[
    ("unknown kind", "graph: g\nresources:\n  flie:\n  - name: a\n", "unknown resource kind `flie`: /g.yaml @ 3:3-3:7"),
    (
        "missing name",
        "graph: g\nresources:\n  file:\n  - path: /tmp/x\n    state: exists\n",
        "this `file` resource has no `name`: /g.yaml @ 4:5-4:17",
    ),
    (
        "edge to nothing",
        "graph: g\nedges:\n- from: {kind: noop, name: a}\n  to: {kind: noop, name: b}\nresources:\n  noop:\n  - name: a\n",
        "edge `to:` names nothing: the graph has no `noop` resource named `b`: /g.yaml @ 4:7-4:28",
    ),
    (
        "wrong type",
        "graph: g\nresources:\n  exec:\n  - name: a\n    cmd: 'true'\n    timeout: soon\n",
        "`timeout` takes an int, not `soon`: /g.yaml @ 6:14-6:18",
    ),
    (
        "list for a string",
        "graph: g\nresources:\n  exec:\n  - name: a\n    cmd: [a, b]\n",
        "`cmd` takes a single str, not a list: /g.yaml @ 5:10-5:16",
    ),
    (
        "not YAML",
        "graph: g\nresources:\n  file: [\n",
        "this is not valid YAML: unclosed bracket '[': /g.yaml @ 3:9-3:10",
    ),
    ("no graph name", "resources: {}\n", "invalid graph: it has no `graph: NAME`: /g.yaml @ 1:1-1:1"),
    (
        "unknown meta",
        "graph: g\nresources:\n  noop:\n  - name: a\n    meta:\n      retri: 3\n",
        "unknown meta parameter `retri`: /g.yaml @ 6:7-6:12",
    ),
    (
        "declared twice",
        "graph: g\nresources:\n  noop:\n  - name: a\n  - name: a\n",
        "`noop` resource `a` is declared twice: /g.yaml @ 5:11-5:12",
    ),
];

#[test]
fn a_malformed_graph_is_one_positioned_line_and_nothing_is_applied() {
    let dir = tempfile::tempdir().unwrap();
    let witness = dir.path().join("witness");
    for (what, body, want) in MALFORMED {
        // A good resource beside the bad part: it must not be applied either.
        // (Each body that has one ends in its `resources:`, so the lines above keep their numbers.)
        let good = format!("  file:\n  - name: w\n    path: {}\n    state: exists\n", witness.display());
        let graph = match body.contains("resources:\n") && !body.contains("  file:") {
            true => format!("{body}{good}"),
            false => body.to_string(),
        };
        std::fs::write(dir.path().join("g.yaml"), &graph).unwrap();
        for cmd in ["check", "run"] {
            let args: &[&str] = if cmd == "run" {
                &["run", "g.yaml", "--converged-timeout", "0", "--prefix", "state"]
            } else {
                &["check", "g.yaml"]
            };
            let out = tend(args, dir.path());
            assert_eq!(out.status.code(), Some(1), "{what} ({cmd}): {}", text(&out));
            let stdout = String::from_utf8_lossy(&out.stdout);
            let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("# err:")).collect();
            assert_eq!(lines.len(), 1, "{what} ({cmd}): {stdout}");
            assert!(lines[0].ends_with(want), "{what} ({cmd}): `{}` does not end with `{want}`", lines[0]);
            assert!(!witness.exists(), "{what} ({cmd}): a resource of a malformed graph was applied");
        }
    }
}

#[test]
fn a_running_yaml_graph_follows_edits_and_keeps_running_through_a_broken_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let graph = |content: &str| {
        format!(
            "graph: live\nresources:\n  file:\n  - name: out\n    path: {}\n    content: \"{content}\"\n    state: exists\n",
            out.display()
        )
    };
    let save = |text: &str| {
        std::fs::write(dir.path().join("g.yaml.new"), text).unwrap();
        std::fs::rename(dir.path().join("g.yaml.new"), dir.path().join("g.yaml")).unwrap();
    };
    save(&graph("one"));
    let mut child = Command::new(TEND)
        .args(["run", "g.yaml", "--prefix", "state"])
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("log")).unwrap())
        .spawn()
        .unwrap();
    let log = || std::fs::read_to_string(dir.path().join("log")).unwrap_or_default();
    let holds = |want: &str| {
        testkit::daemon::eventually(Duration::from_secs(20), &mut || {
            std::fs::read_to_string(&out).is_ok_and(|t| t == want)
        })
    };
    assert!(holds("one"), "first graph applied; log:\n{}", log());
    save(&graph("two"));
    assert!(holds("two"), "an edit of the YAML is applied; log:\n{}", log());
    save("graph: live\nresources:\n  file:\n  - name: out\n    content: [\n");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(child.try_wait().unwrap().is_none(), "a broken edit does not stop the agent; log:\n{}", log());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "two", "a broken edit changes nothing");
    assert!(log().contains("unclosed bracket"), "the broken edit is reported; log:\n{}", log());
    std::fs::write(&out, "drift").unwrap();
    assert!(holds("two"), "the last good graph still repairs drift; log:\n{}", log());
    save(&graph("three"));
    assert!(holds("three"), "a fixed edit is applied; log:\n{}", log());
    child.kill().unwrap();
    child.wait().unwrap();
}
