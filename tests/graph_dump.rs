//! `tend run --graph-dump DIR` writes each accepted resource graph as Graphviz.

use std::process::Command;

#[test]
fn run_dumps_the_applied_graph_as_dot() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out.txt");
    let program = format!(
        "file \"{t}\" {{\n\tstate => \"exists\",\n\tcontent => \"x\",\n}}\nprint \"p\" {{\n\tmsg => \"hi\",\n\tDepend => File[\"{t}\"],\n}}\n",
        t = target.display()
    );
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let dump = dir.path().join("dump");
    let out = Command::new(env!("CARGO_BIN_EXE_tend"))
        .args(["run", "--converged-timeout", "0", "--no-watch", "--prefix"])
        .arg(dir.path().join("state"))
        .arg("--graph-dump")
        .arg(&dump)
        .arg(dir.path().join("main.mcl"))
        .output()
        .unwrap();
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let dot = std::fs::read_to_string(dump.join("graph-1.dot")).unwrap();
    let key = format!("\"file[{}]\"", target.display());
    assert!(dot.starts_with("digraph tend {"), "{dot}");
    assert!(dot.contains(&format!("{key} -> \"print[p]\"")), "{dot}");
    assert!(!dump.join("graph-2.dot").exists(), "one graph was applied, one dump expected");
}
