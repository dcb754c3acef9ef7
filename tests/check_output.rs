//! What `tend check` shows people: each error placed at the file's real path relative to
//! the working directory (which terminals and editors open at the line), while the
//! `# err:` line on stdout keeps mgmt's deploy paths.

use std::process::Command;

const TEND: &str = env!("CARGO_BIN_EXE_tend");

#[test]
fn errors_name_the_real_path_relative_to_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("site");
    std::fs::create_dir_all(program.join("web")).unwrap();
    std::fs::write(program.join("main.mcl"), "import \"web/\"\nprint \"p\" {\n\tmsg => $web.port,\n}\n").unwrap();
    std::fs::write(program.join("web/main.mcl"), "$port = 80\n").unwrap();
    let out = Command::new(TEND).args(["check", "site"]).current_dir(dir.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stderr.contains("╭─[ site/main.mcl:3:"), "{stderr}");
    assert!(!stderr.contains("/main.mcl @"), "{stderr}");
    assert!(stdout.starts_with("# err: errUnify: ") && stdout.contains(": /main.mcl @ 3:"), "{stdout}");

    // From elsewhere, the path is absolute; JSON gives both names.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = Command::new(TEND)
        .args(["check", "--format", "json"])
        .arg(&program)
        .current_dir(elsewhere.path())
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let span = &doc["diagnostics"][0]["span"];
    assert_eq!(span["file"], "/main.mcl");
    assert_eq!(span["path"].as_str(), Some(program.join("main.mcl").to_str().unwrap()));
}

#[test]
fn warnings_are_shown_and_fail_the_check_only_when_denied() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.mcl"), "import \"fmt\"\n$x = 1\n").unwrap();
    let check = |args: &[&str]| {
        Command::new(TEND).arg("check").args(args).arg("main.mcl").current_dir(dir.path()).output().unwrap()
    };
    let out = check(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("Warning: unused import `fmt`") && stderr.contains("unused variable `$x`"), "{stderr}");
    assert!(stderr.contains("2 warning(s)"), "{stderr}");
    assert!(out.stdout.is_empty(), "no # err line for a warning");

    let out = check(&["--deny", "warnings"]);
    assert_eq!(out.status.code(), Some(1));
    let out = check(&["--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["warnings"][0]["severity"], "warning");
    assert_eq!(doc["warnings"][0]["code"], "unused-import");
    assert_eq!(doc["warnings"][1]["code"], "unused-bind");
}

/// `tend functions` lists what a program may call: every function, with its signatures and
/// what it does; a prefix narrows it, and one that matches nothing says so.
#[test]
fn the_function_library_is_listed() {
    let out = Command::new(TEND).args(["functions", "--format", "json"]).output().unwrap();
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let all = doc.as_array().unwrap();
    let named = |n: &str| all.iter().find(|f| f["name"] == n).cloned();
    let log10 = named("golang/math.log_10").expect("mgmt's spelling is listed");
    assert_eq!(log10["signatures"][0], "func(x float) float");
    assert!(!log10["doc"].as_str().unwrap().is_empty());
    assert!(named("fmt.printf").is_some() && named("example.vumeter").is_some());
    assert!(all.len() > 300, "every function is listed: {}", all.len());

    let out = Command::new(TEND).args(["functions", "net.cidr_to_"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().filter(|l| l.starts_with("net.cidr_to_")).count(), 6, "{text}");
    assert!(text.ends_with("# 6 function(s)\n"), "{text}");

    let out = Command::new(TEND).args(["functions", "nosuch."]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no function's name starts with `nosuch.`"));
}
