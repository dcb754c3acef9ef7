//! `Meta:reverse` across restarts, with the real binary: a pending undo survives a
//! `kill -9`, is applied by the next run whose program no longer has the resource, and is
//! applied once only.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TEND: &str = env!("CARGO_BIN_EXE_tend");

fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    f()
}

/// Runs `program` once to its first converge under state dir `prefix`; its stderr.
fn run_once(dir: &Path, prefix: &Path, program: &str) -> String {
    let main = dir.join("main.mcl");
    std::fs::write(&main, program).unwrap();
    let out = Command::new(TEND)
        .args(["run", main.to_str().unwrap(), "--converged-timeout", "0", "--prefix", prefix.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{}\n{stderr}", String::from_utf8_lossy(&out.stdout));
    stderr
}

#[test]
fn a_pending_reversal_survives_kill_9_and_is_applied_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let (motd, other, prefix) = (dir.path().join("motd"), dir.path().join("other"), dir.path().join("state"));
    std::fs::write(&motd, "the original\n").unwrap();
    let managed = format!(
        "file \"{}\" {{\n\tstate => \"exists\",\n\tcontent => \"managed by tend\\n\",\n\n\tMeta:reverse => true,\n}}\n",
        motd.display()
    );
    let main = dir.path().join("main.mcl");
    std::fs::write(&main, &managed).unwrap();
    let mut agent = Command::new(TEND)
        .args(["run", main.to_str().unwrap(), "--prefix", prefix.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let applied =
        eventually(Duration::from_secs(20), || std::fs::read_to_string(&motd).is_ok_and(|c| c == "managed by tend\n"));
    let pending = prefix.join("engine/reversals.json");
    assert!(applied, "the agent applied the file");
    assert!(pending.exists(), "the undo is on disk before the agent dies");
    agent.kill().unwrap(); // SIGKILL: no cleanup runs
    agent.wait().unwrap();

    // The next program has no such file: its reversal runs, from the record on disk.
    let without = format!("file \"{}\" {{\n\tstate => \"exists\",\n\tcontent => \"x\\n\",\n}}\n", other.display());
    run_once(dir.path(), &prefix, &without);
    assert_eq!(std::fs::read_to_string(&motd).unwrap(), "the original\n", "put back as it was before tend");
    let left = std::fs::read_to_string(&pending).unwrap_or_default();
    assert!(!left.contains("motd"), "the applied undo is let go: {left}");

    // Never twice: a later edit by hand stays, run after run.
    std::fs::write(&motd, "edited by hand\n").unwrap();
    run_once(dir.path(), &prefix, &without);
    assert_eq!(std::fs::read_to_string(&motd).unwrap(), "edited by hand\n");
}

#[test]
fn a_resource_still_in_the_graph_after_a_restart_keeps_its_first_undo() {
    let dir = tempfile::tempdir().unwrap();
    let (motd, prefix) = (dir.path().join("motd"), dir.path().join("state"));
    std::fs::write(&motd, "the original\n").unwrap();
    let managed = |content: &str| {
        format!(
            "file \"{}\" {{\n\tstate => \"exists\",\n\tcontent => \"{content}\\n\",\n\n\tMeta:reverse => true,\n}}\n",
            motd.display()
        )
    };
    run_once(dir.path(), &prefix, &managed("first"));
    // A second run, the resource still there: the state it finds is tend's, not the
    // original; the undo kept must stay the original's.
    run_once(dir.path(), &prefix, &managed("second"));
    assert_eq!(std::fs::read_to_string(&motd).unwrap(), "second\n");
    let gone = format!("print \"p\" {{\n\tmsg => \"{}\",\n}}\n", "nothing managed");
    run_once(dir.path(), &prefix, &gone);
    assert_eq!(std::fs::read_to_string(&motd).unwrap(), "the original\n");
}
