//! Issue 45: a daemon driven through a scripted sequence of hostile saves, deletions and fact
//! changes. After each step the machine must match the last good program: what it declares
//! exists with the declared content, whatever came before.

use std::path::Path;
use std::time::Duration;

use testkit::daemon::Daemon;

const TEND: &str = env!("CARGO_BIN_EXE_tend");

/// A good program: `files` (relative to `out/`, a directory each made by tend) with their
/// content, and `out/fact-copy` holding the fact file's text.
fn program(dir: &Path, files: &[(&str, &str)]) -> String {
    let out = dir.join("out").display().to_string();
    let mut text = format!(
        "import \"os\"\nfile \"{out}/fact-copy\" {{\n\tstate => \"exists\",\n\tcontent => os.readfile(\"{}\"),\n}}\n",
        dir.join("fact").display()
    );
    let mut dirs = std::collections::BTreeSet::new();
    for (rel, _) in files {
        dirs.extend(Path::new(rel).ancestors().skip(1).map(|p| p.display().to_string()).filter(|p| !p.is_empty()));
    }
    for dir in dirs {
        text.push_str(&format!("file \"{out}/{dir}/\" {{\n\tstate => \"exists\",\n}}\n"));
    }
    for (rel, content) in files {
        text.push_str(&format!("file \"{out}/{rel}\" {{\n\tstate => \"exists\",\n\tcontent => \"{content}\",\n}}\n"));
    }
    text
}

/// Waits until every `(rel, content)` under `out/` holds; panics naming the step otherwise.
fn matches(daemon: &Daemon, step: &str, want: &[(&str, &str)]) {
    let ok = daemon.eventually(Duration::from_secs(5), || {
        want.iter().all(|(rel, content)| daemon.read(&format!("out/{rel}")) == *content)
    });
    if !ok {
        let got: Vec<(String, String)> =
            want.iter().map(|(rel, _)| (rel.to_string(), daemon.read(&format!("out/{rel}")))).collect();
        let log = daemon.stderr();
        let tail: String = log.chars().rev().take(4000).collect::<Vec<_>>().into_iter().rev().collect();
        panic!("after `{step}` the machine does not match the last good program: {got:?}\n{tail}");
    }
}

/// Deletes every file of `want` (a drift), then checks it is repaired.
fn drift(daemon: &Daemon, step: &str, want: &[(&str, &str)]) {
    for (rel, _) in want {
        let _ = std::fs::remove_file(daemon.path(&format!("out/{rel}")));
    }
    matches(daemon, &format!("{step}, then every file deleted"), want);
}

#[test]
fn a_daemon_survives_a_hostile_session() {
    let first: &[(&str, &str)] = &[("a/one", "1"), ("b/two", "2"), ("top", "t")];
    let mut daemon = Daemon::start(
        TEND,
        |d| {
            std::fs::create_dir(d.join("out")).unwrap();
            std::fs::write(d.join("fact"), "fact-1").unwrap();
            program(d, first)
        },
        &[],
    );
    let dir = daemon.dir.path().to_path_buf();
    let with_fact = |files: &[(&'static str, &'static str)], fact: &'static str| {
        let mut all = files.to_vec();
        all.push(("fact-copy", fact));
        all
    };
    matches(&daemon, "start", &with_fact(first, "fact-1"));
    drift(&daemon, "start", &with_fact(first, "fact-1"));

    // Broken saves: syntax, types, an unknown kind, deep nesting, binary junk, a half save.
    let broken: Vec<(&str, Vec<u8>)> = vec![
        ("a syntax error", b"file \"/x\" {\n".to_vec()),
        ("a type error", b"print \"p\" {\n\tmsg => 1 + \"a\",\n}\n".to_vec()),
        ("an unknown kind", b"nosuchkind \"x\" {}\n".to_vec()),
        ("nesting 5,000 deep", {
            let mut t: String = (0..5000).map(|i| format!("class c{i} {{\n\tinclude c{}\n}}\n", i + 1)).collect();
            t.push_str("class c5000 {\n}\ninclude c0\n");
            t.into_bytes()
        }),
        ("binary junk", (0..20_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect()),
        ("a dotdot path", format!("file \"{}/out/../out/x\" {{\n}}\n", dir.display()).into_bytes()),
    ];
    for (what, text) in &broken {
        let tmp = daemon.path("main.mcl.saving");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, daemon.path("main.mcl")).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert!(daemon.alive(), "the daemon survives {what}\n{}", daemon.stderr());
        drift(&daemon, what, &with_fact(first, "fact-1"));
    }

    // The fact changes, becomes a FIFO (an error: the last good value stays), comes back.
    daemon.save("fact", "fact-2");
    // The broken program still runs the first: restore the program first.
    daemon.save("main.mcl", &program(&dir, first));
    matches(&daemon, "the program restored, the fact changed", &with_fact(first, "fact-2"));
    std::fs::remove_file(daemon.path("fact")).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(daemon.path("fact")).status().unwrap().success());
    std::thread::sleep(Duration::from_millis(300));
    drift(&daemon, "the fact became a FIFO", &with_fact(first, "fact-2"));
    std::fs::remove_file(daemon.path("fact")).unwrap();
    daemon.save("fact", "fact-3");
    matches(&daemon, "the fact came back", &with_fact(first, "fact-3"));

    // Emptied by accident, then the program again with new directories, then an edit.
    daemon.save("main.mcl", "# nothing\n");
    std::thread::sleep(Duration::from_millis(300));
    let second: &[(&str, &str)] = &[("a/one", "1"), ("c/three", "3"), ("d/e/four", "4")];
    daemon.save("main.mcl", &program(&dir, second));
    matches(&daemon, "a program after the empty one", &with_fact(second, "fact-3"));
    drift(&daemon, "a program after the empty one", &with_fact(second, "fact-3"));
    let third: &[(&str, &str)] = &[("a/one", "uno"), ("c/three", "3"), ("d/e/four", "cuatro")];
    daemon.save("main.mcl", &program(&dir, third));
    matches(&daemon, "an edit", &with_fact(third, "fact-3"));

    // A directory tend made removed whole, with its file.
    // Renamed away first, so the removal is one step as the daemon sees it: removing the tree
    // in place races the daemon repairing it (a file recreated between unlink and rmdir).
    std::fs::rename(daemon.path("out/d"), daemon.path("out/gone-d")).unwrap();
    std::fs::remove_dir_all(daemon.path("out/gone-d")).unwrap();
    matches(&daemon, "a managed directory removed", &with_fact(third, "fact-3"));
    drift(&daemon, "a managed directory removed", &with_fact(third, "fact-3"));
    assert!(daemon.alive());
}
