//! Imports by URL against a real git server: a module in a repository served by
//! `git daemon` on loopback (and by a `file://` URL) is downloaded with `--download`,
//! imported and run, each ref the imports name is its own checkout, and without
//! `--download` the error says which URL, where it was looked for and what fetches it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

const TEND: &str = env!("CARGO_BIN_EXE_tend");

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A repository `<base>/web` whose module says which version it is: `v1` and `v2` are
/// tags, `main` is one commit past `v2`.
fn repository(base: &Path) -> PathBuf {
    let repo = base.join("web");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("metadata.yaml"), "main: \"web.mcl\"\nfiles: \"files/\"\n").unwrap();
    std::fs::create_dir_all(repo.join("files")).unwrap();
    std::fs::write(repo.join("files/index.html"), "welcome\n").unwrap();
    for version in ["v1", "v2", "v3"] {
        std::fs::write(repo.join("web.mcl"), format!("$version = \"{version}\"\n")).unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", version]);
        if version != "v3" {
            git(&repo, &["tag", version]);
        }
    }
    repo
}

/// `git daemon` serving `base` on a loopback port; killed when dropped.
struct GitDaemon {
    child: Child,
    port: u16,
}

impl GitDaemon {
    fn start(base: &Path) -> GitDaemon {
        let port = testkit::etcd::free_port();
        // The daemon itself, not `git daemon`: that runs it as a child, which a kill of
        // the `git` process would leave behind.
        let exec_path = Command::new("git").arg("--exec-path").output().expect("git runs").stdout;
        let exec_path = PathBuf::from(String::from_utf8_lossy(&exec_path).trim());
        let child = Command::new(exec_path.join("git-daemon"))
            .args(["--export-all", "--reuseaddr", "--informative-errors", "--listen=127.0.0.1"])
            .arg(format!("--port={port}"))
            .arg(format!("--base-path={}", base.display()))
            .arg(base)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("git daemon starts (Debian's git package has it)");
        let up = testkit::daemon::eventually(Duration::from_secs(10), &mut || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        assert!(up, "git daemon listens on {port}");
        GitDaemon { child, port }
    }
}

impl Drop for GitDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tend(dir: &Path, args: &[&str]) -> Output {
    Command::new(TEND).args(args).current_dir(dir).env("NO_COLOR", "1").output().expect("tend runs")
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// A program writing each imported module's version to `<dir>/out`.
fn program(dir: &Path, imports: &[(&str, &str)]) {
    let mut text = String::new();
    for (url, alias) in imports {
        text.push_str(&format!("import \"{url}\" as {alias}\n"));
    }
    let versions: Vec<String> = imports.iter().map(|(_, a)| format!("${{{a}.version}}")).collect();
    text.push_str(&format!(
        "file \"{}\" {{\n\tstate => \"exists\",\n\tcontent => \"{}\",\n}}\n",
        dir.join("out").display(),
        versions.join(" ")
    ));
    std::fs::write(dir.join("main.mcl"), text).unwrap();
}

#[test]
fn a_module_served_by_git_daemon_is_downloaded_at_each_ref_and_run() {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served");
    repository(&served);
    let daemon = GitDaemon::start(&served);
    let url = format!("git://127.0.0.1:{}/web/", daemon.port);
    let (tagged, file_url) = (format!("{url}#v1"), format!("file://{}/web?ref=v2", served.display()));
    program(dir.path(), &[(&url, "web"), (&tagged, "old"), (&file_url, "local")]);
    let modules = dir.path().join("modules");
    let mp = modules.to_str().unwrap();

    // Without --download: one error per missing module, naming its URL, where it was looked
    // for, and what fetches it.
    let out = tend(dir.path(), &["check", "main.mcl", "--module-path", mp]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let shown = text(&out);
    assert!(shown.contains(&format!("the module `{url}` is not in the module path")), "{shown}");
    assert!(shown.contains("modules/127.0.0.1/web`"), "where it was looked for: {shown}");
    assert!(shown.contains("`--download` fetches it"), "{shown}");
    assert!(!modules.exists(), "nothing was fetched");

    // With it: each ref is cloned beside the others, and the program runs with them.
    let out = tend(
        dir.path(),
        &["run", "main.mcl", "--module-path", mp, "--download", "--converged-timeout", "0", "--prefix", "state"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(dir.path().join("out")).unwrap(), "v3 v1 v2");
    let by_file = format!("{}/web@v2", served.display().to_string().trim_start_matches('/'));
    for d in ["127.0.0.1/web", "127.0.0.1/web@v1", &by_file] {
        assert!(modules.join(d).join("web.mcl").is_file(), "{d} checked out");
    }
    // Once there, a module is not fetched again: the server may be gone.
    drop(daemon);
    std::fs::remove_file(dir.path().join("out")).unwrap();
    let out =
        tend(dir.path(), &["run", "main.mcl", "--module-path", mp, "--converged-timeout", "0", "--prefix", "state"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(dir.path().join("out")).unwrap(), "v3 v1 v2");
}

#[test]
fn a_failed_download_is_an_error_naming_the_url_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served");
    repository(&served);
    let daemon = GitDaemon::start(&served);
    let modules = dir.path().join("modules");
    let mp = modules.to_str().unwrap();
    // A ref the repository does not have.
    let missing_ref = format!("git://127.0.0.1:{}/web/#v9", daemon.port);
    program(dir.path(), &[(&missing_ref, "web")]);
    let out = tend(dir.path(), &["check", "main.mcl", "--module-path", mp, "--download"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains(&format!("cannot download `git://127.0.0.1:{}/web/`", daemon.port)), "{}", text(&out));
    assert!(text(&out).contains("v9"), "the ref is named: {}", text(&out));
    // A server that is not there.
    let port = daemon.port;
    drop(daemon);
    let gone = format!("git://127.0.0.1:{port}/web/");
    program(dir.path(), &[(&gone, "web")]);
    let out = tend(dir.path(), &["check", "main.mcl", "--module-path", mp, "--download"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains(&format!("cannot download `{gone}`")), "{}", text(&out));
    // No half-cloned module anywhere in the module path.
    let mut leftovers = Vec::new();
    if let Ok(hosts) = std::fs::read_dir(&modules) {
        for host in hosts.flatten() {
            leftovers.extend(std::fs::read_dir(host.path()).unwrap().flatten().map(|e| e.path()));
        }
    }
    assert!(leftovers.is_empty(), "left behind: {leftovers:?}");
}

/// mgmt's own modules example: its modules are in the program's `path/` directory, named by
/// its metadata.yaml (read from `../shared`; skipped without it).
#[test]
#[allow(clippy::print_stdout)] // the skip message
fn mgmts_modules_example_checks_with_its_path_and_with_a_module_path() {
    let Some(shared) = testkit::shared_dir() else {
        println!("skipping: ../shared is absent (mgmt's modules example lives there)");
        return;
    };
    let example = shared.join("conformance/examples/modules/badexample1");
    let dir = tempfile::tempdir().unwrap();
    let out = tend(dir.path(), &["check", example.to_str().unwrap(), "--module-path", "/nonexistent/"]);
    assert!(out.status.success(), "{}", text(&out));
    // The same modules found through --module-path instead of `path:`.
    let copy = dir.path().join("program");
    copy_tree(&example.join("main"), &copy.join("main"));
    std::fs::write(copy.join("metadata.yaml"), "main: \"main/hello.mcl\"\n").unwrap();
    let modules = dir.path().join("modules");
    copy_tree(&example.join("path"), &modules);
    let out = tend(dir.path(), &["check", copy.to_str().unwrap(), "--module-path", modules.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    // And without either, the error names the module and the places looked in.
    let out = tend(
        dir.path(),
        &["check", copy.to_str().unwrap(), "--module-path", dir.path().join("none").to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("`git://github.com/purpleidea/mgmt-example1/` is not in the module path"),
        "{}",
        text(&out)
    );
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

#[test]
fn a_running_program_follows_edits_of_a_module_in_the_module_path() {
    let dir = tempfile::tempdir().unwrap();
    let modules = dir.path().join("modules");
    let web = modules.join("example.com/ops/web");
    std::fs::create_dir_all(&web).unwrap();
    std::fs::write(web.join("main.mcl"), "$version = \"v1\"\n").unwrap();
    program(dir.path(), &[("git://example.com/ops/web/", "web")]);
    let mut child = Command::new(TEND)
        .args(["run", "main.mcl", "--prefix", "state", "--module-path", modules.to_str().unwrap()])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("log")).unwrap())
        .spawn()
        .unwrap();
    let log = || std::fs::read_to_string(dir.path().join("log")).unwrap_or_default();
    let out = dir.path().join("out");
    let holds = |want: &str| {
        testkit::daemon::eventually(Duration::from_secs(20), &mut || {
            std::fs::read_to_string(&out).is_ok_and(|t| t == want)
        })
    };
    assert!(holds("v1"), "log:\n{}", log());
    std::fs::write(web.join("main.mcl.new"), "$version = \"v2\"\n").unwrap();
    std::fs::rename(web.join("main.mcl.new"), web.join("main.mcl")).unwrap();
    assert!(holds("v2"), "an edit of the module is applied; log:\n{}", log());
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_server_that_stalls_is_given_up_after_the_download_timeout() {
    let dir = tempfile::tempdir().unwrap();
    // Accepts connections and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = std::thread::spawn(move || listener.accept().map(|(stream, _)| stream));
    let url = format!("git://127.0.0.1:{port}/web/");
    program(dir.path(), &[(&url, "web")]);
    let modules = dir.path().join("modules");
    let started = std::time::Instant::now();
    let out = tend(
        dir.path(),
        &["check", "main.mcl", "--module-path", modules.to_str().unwrap(), "--download", "--download-timeout", "2"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
    assert!(text(&out).contains(&format!("cannot download `{url}`: no answer within 2 s")), "{}", text(&out));
    drop(held);
    let bad = tend(dir.path(), &["check", "main.mcl", "--download-timeout", "NaN"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
}
