//! What `tend run` shows by default, with `-q`, in colour or not, and how it exits with
//! `--detailed-exitcodes` and reports with `--format json`: the real binary on programs in
//! temporary directories.

use std::path::Path;
use std::process::{Command, Output};

const TEND: &str = env!("CARGO_BIN_EXE_tend");

fn tend(dir: &Path, args: &[&str]) -> Output {
    Command::new(TEND)
        .arg("run")
        .arg(dir.join("main.mcl"))
        .args(["--prefix", &dir.join("state").display().to_string()])
        .args(args)
        .env_remove("NO_COLOR")
        .output()
        .expect("tend runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A script that prints to both streams and fails.
fn failing_script(dir: &Path) -> String {
    let path = dir.join("fail.sh");
    std::fs::write(&path, "#!/bin/sh\necho some output\necho oops >&2\nexit 3\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// A directory, a file in it, a print, a failing exec and a file that depends on it.
fn program(dir: &Path) -> String {
    let (root, script) = (dir.display(), failing_script(dir));
    format!(
        "file \"{root}/out/\" {{\n\tstate => \"exists\",\n}}\n\
         file \"{root}/out/a\" {{\n\tstate => \"exists\",\n\tcontent => \"hello\\n\",\n\tmode => \"0600\",\n}}\n\
         print \"greet\" {{\n\tmsg => \"hello from tend\",\n}}\n\
         exec \"migrate\" {{\n\tcmd => \"{script}\",\n}}\n\
         file \"{root}/out/b\" {{\n\tstate => \"exists\",\n\tcontent => \"b\\n\",\n\tDepend => Exec[\"migrate\"],\n}}\n"
    )
}

/// The stderr lines, with the summary's time replaced by `T`.
fn lines(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .map(|l| match l.rfind(" (") {
            Some(at) if l.starts_with("tend: ") => format!("{} (T)", &l[..at]),
            _ => l.to_string(),
        })
        .collect()
}

#[test]
fn the_default_output_says_each_change_each_failure_what_it_held_up_and_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.mcl"), program(dir.path())).unwrap();
    let out = tend(dir.path(), &["--converged-timeout", "0"]);
    assert_eq!(out.status.code(), Some(1));
    let root = dir.path().display();
    let mut got = lines(&text(&out.stderr));
    let summary = got.pop().expect("a summary line");
    assert_eq!(summary, "tend: 5 resources, 3 changed, 1 failed (T)");
    got.sort();
    let mut want = vec![
        format!("file[{root}/out/]: created (directory)"),
        format!("file[{root}/out/a]: created (6 bytes)"),
        "hello from tend".to_string(),
        format!("error: exec[migrate]: `{root}/fail.sh` failed with exit status 3"),
        "  stdout:".into(),
        "    some output".into(),
        "  stderr:".into(),
        "    oops".into(),
        format!("file[{root}/out/b] not applied: it depends on exec[migrate], which failed"),
    ];
    want.sort();
    assert_eq!(got, want, "stderr:\n{}", text(&out.stderr));
    // The failure's lines stay together, in order.
    let stderr = text(&out.stderr);
    assert!(stderr.contains("exit status 3\n  stdout:\n    some output\n  stderr:\n    oops\n"), "{stderr}");
    assert!(!stderr.contains('\x1b'), "no colour into a pipe: {stderr:?}");
}

#[test]
fn a_changed_file_names_what_changed_and_a_print_is_shown_once_even_with_v() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, "old\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let program = format!(
        "file \"{}\" {{\n\tstate => \"exists\",\n\tcontent => \"new\\n\",\n\tmode => \"0600\",\n}}\nprint \"p\" {{\n\tmsg => \"just this\",\n}}\n",
        path.display()
    );
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let out = tend(dir.path(), &["--converged-timeout", "0", "-v"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("file[{}]: content changed (4 bytes), mode 0644 -> 0600\n", path.display())),
        "{stderr}"
    );
    assert_eq!(stderr.matches("just this").count(), 1, "{stderr}");
    assert!(stderr.lines().any(|l| l == "just this"), "the message as written: {stderr}");
}

#[test]
fn quiet_shows_failures_only() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.mcl"), program(dir.path())).unwrap();
    let out = tend(dir.path(), &["--converged-timeout", "0", "-q"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.starts_with("error: exec[migrate]: "), "{stderr}");
    assert!(
        !stderr.contains("created") && !stderr.contains("hello from tend") && !stderr.contains("tend: "),
        "{stderr}"
    );
}

#[test]
fn warnings_are_shown_when_the_code_loads_and_never_stop_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display();
    let src = format!("$unused = 1\nfile \"{root}/w\" {{\n\tstate => \"exists\",\n\tcontent => \"w\\n\",\n}}\n");
    std::fs::write(dir.path().join("main.mcl"), src).unwrap();
    let out = tend(dir.path(), &["--converged-timeout", "0"]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("unused variable `$unused`"), "{stderr}");
    assert!(dir.path().join("w").exists(), "the program ran");
    let out = tend(dir.path(), &["--converged-timeout", "0", "-q"]);
    assert!(!text(&out.stderr).contains("unused"), "-q leaves failures only");
}

#[test]
fn detailed_exitcodes_say_whether_something_changed_or_failed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let file = format!("file \"{root}/x\" {{\n\tstate => \"exists\",\n\tcontent => \"x\\n\",\n}}\n");
    let fail = format!("exec \"no\" {{\n\tcmd => \"{}\",\n}}\n", failing_script(dir.path()));
    let code = |program: &str| {
        std::fs::write(dir.path().join("main.mcl"), program).unwrap();
        tend(dir.path(), &["--converged-timeout", "0", "--detailed-exitcodes"]).status.code()
    };
    assert_eq!(code(&file), Some(2), "the file is created");
    assert_eq!(code(&file), Some(0), "nothing to do");
    assert_eq!(code(&fail), Some(4), "only a failure");
    std::fs::remove_file(dir.path().join("x")).unwrap();
    assert_eq!(code(&format!("{file}{fail}")), Some(6), "a change and a failure");
    std::fs::remove_file(dir.path().join("x")).unwrap();
    std::fs::write(dir.path().join("main.mcl"), &file).unwrap();
    let noop = tend(dir.path(), &["--noop", "--detailed-exitcodes"]);
    assert_eq!(noop.status.code(), Some(2), "under --noop: would change");
    assert!(!dir.path().join("x").exists());
}

#[test]
fn noop_json_reports_changes_and_failures() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let program = format!("file \"{root}/x\" {{\n\tstate => \"exists\",\n\tcontent => \"x\\n\",\n}}\n");
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let out = tend(dir.path(), &["--noop", "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(report["noop"], true);
    assert_eq!(report["started"], true);
    assert_eq!(report["resources"], 1);
    assert_eq!(report["changes"][0]["resource"], format!("file[{root}/x]"));
    assert!(report["changes"][0]["notes"][0].as_str().unwrap().contains("would be created (2 bytes)"));
    assert_eq!(report["failed"], serde_json::json!([]));
}

#[test]
fn a_noop_receiver_says_what_it_would_receive() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let program = format!(
        "exec \"hello\" {{\n\tcmd => \"echo hi\",\n\tshell => \"/bin/sh\",\n}}\nfile \"{root}/out\" {{\n\tstate => \"exists\",\n}}\nExec[\"hello\"].stdout -> File[\"{root}/out\"].content\n"
    );
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let out = tend(dir.path(), &["--noop"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let line = format!(
        "file[{root}/out]: would receive `content` from exec[hello].stdout, which is known only once exec[hello] runs"
    );
    assert!(stdout.contains(&line), "{stdout}");
    assert!(!stdout.contains("(0 bytes):"), "no empty diff: {stdout}");
    assert!(!dir.path().join("out").exists());
}

#[test]
fn noop_does_not_say_nothing_would_change_when_a_check_failed_or_nothing_started() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    // The parent is a file: the check of the child cannot even look.
    std::fs::write(dir.path().join("p"), "a file").unwrap();
    let program = format!("file \"{root}/p/child\" {{\n\tstate => \"exists\",\n\tcontent => \"x\",\n}}\n");
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let out = tend(dir.path(), &["--noop"]);
    let stdout = text(&out.stdout);
    assert!(!stdout.contains("nothing would change"), "{stdout}");
    assert!(stdout.contains("could not be checked"), "{stdout}");
    assert_eq!(out.status.code(), Some(1));

    // A graph that cannot start (a dependency cycle) checks nothing at all.
    let cycle = format!(
        "file \"{root}/a\" {{\n\tstate => \"exists\",\n\tDepend => File[\"{root}/b\"],\n}}\nfile \"{root}/b\" {{\n\tstate => \"exists\",\n\tDepend => File[\"{root}/a\"],\n}}\n"
    );
    std::fs::write(dir.path().join("main.mcl"), cycle).unwrap();
    let out = tend(dir.path(), &["--noop"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).contains("nothing would change"), "{}", text(&out.stdout));
}

/// Runs `tend` under a pseudo-terminal (util-linux `script`), returning what it wrote.
fn under_terminal(dir: &Path, no_color: bool) -> Option<String> {
    let cmd = format!(
        "{TEND} run {} --prefix {} --converged-timeout 0",
        dir.join("main.mcl").display(),
        dir.join("state").display()
    );
    let mut script = Command::new("script");
    script.args(["-qec", &cmd, "/dev/null"]).env_remove("NO_COLOR").env("TERM", "xterm");
    if no_color {
        script.env("NO_COLOR", "1");
    }
    let out = script.output().ok()?;
    Some(text(&out.stdout))
}

#[test]
fn colour_only_on_a_terminal_and_never_with_no_color() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.mcl"), program(dir.path())).unwrap();
    let Some(coloured) = under_terminal(dir.path(), false) else {
        eprintln!("skipped: util-linux `script` is not installed");
        return;
    };
    assert!(coloured.contains("\x1b[31merror\x1b[0m: exec[migrate]"), "{coloured:?}");
    let plain = under_terminal(dir.path(), true).unwrap();
    assert!(plain.contains("error: exec[migrate]"), "{plain:?}");
    assert!(!plain.contains('\x1b'), "NO_COLOR: {plain:?}");
}

#[test]
fn a_large_graph_shows_its_progress_on_a_terminal_only() {
    let dir = tempfile::tempdir().unwrap();
    // A chain of 600 commands: long enough (about half a second) for a progress line.
    let mut program = String::from("exec \"s0\" {\n\tcmd => \"/bin/true\",\n}\n");
    for i in 1..600 {
        program
            .push_str(&format!("exec \"s{i}\" {{\n\tcmd => \"/bin/true\",\n\tDepend => Exec[\"s{}\"],\n}}\n", i - 1));
    }
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let Some(shown) = under_terminal(dir.path(), true) else {
        eprintln!("skipped: util-linux `script` is not installed");
        return;
    };
    assert!(shown.contains("converging: ") && shown.contains("/600 resources"), "{shown:?}");
    // What the terminal shows last: the line after the last carriage return, which the
    // progress line's clearing (`\r` + erase) leaves to the summary.
    let last = shown.trim_end().rsplit(['\n', '\r']).next().unwrap();
    assert_eq!(
        last.trim_start_matches("\x1b[K").split(" (").next(),
        Some("tend: 600 resources, 600 changed, 0 failed")
    );
    // Into a pipe: no progress line.
    let piped = tend(dir.path(), &["--converged-timeout", "0"]);
    assert!(!text(&piped.stderr).contains("converging"), "{}", text(&piped.stderr));
}

/// Autogrouping: two `print`s that ask to group run as one vertex, but the run shows each
/// message and counts each resource.
#[test]
fn grouped_resources_are_each_shown_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let print =
        |name: &str| format!("print \"{name}\" {{\n\tmsg => \"from {name}\",\n\n\tMeta:autogroup => true,\n}}\n");
    std::fs::write(dir.path().join("main.mcl"), format!("{}{}", print("one"), print("two"))).unwrap();
    let graph = Command::new(TEND).arg("graph").arg(dir.path().join("main.mcl")).output().unwrap();
    assert_eq!(text(&graph.stdout), "Group: print[two]: Vertex: print[one]\nVertex: print[two]\n");
    let out = tend(dir.path(), &["--converged-timeout", "0"]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let shown = lines(&stderr);
    assert!(shown.iter().any(|l| l == "from one") && shown.iter().any(|l| l == "from two"), "{shown:?}");
    assert!(stderr.contains("tend: 2 resources, 2 changed, 0 failed"), "{stderr}");
}
