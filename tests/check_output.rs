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
