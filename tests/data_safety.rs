//! Issue 44, "nothing is lost", end to end: the real binary must refuse what would reach
//! outside what a resource names, and `check` must refuse what `run` refuses. Each test
//! names the defect it covers.

use std::path::Path;
use std::process::{Command, Output};

const TEND: &str = env!("CARGO_BIN_EXE_tend");

fn tend(args: &[&str]) -> Output {
    Command::new(TEND).args(args).output().expect("tend runs")
}

fn run(dir: &Path) -> Output {
    let state = dir.join("state").display().to_string();
    let main = dir.join("main.mcl").display().to_string();
    tend(&["run", &main, "--prefix", &state, "--converged-timeout", "0"])
}

fn check(dir: &Path) -> Output {
    tend(&["check", &dir.join("main.mcl").display().to_string()])
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A sandbox `sb/` holding a file and a directory with a file in it.
fn sandbox(root: &Path) -> std::path::PathBuf {
    let sb = root.join("sb");
    std::fs::create_dir_all(sb.join("victim/deep")).unwrap();
    std::fs::write(sb.join("keep.txt"), "keep").unwrap();
    std::fs::write(sb.join("victim/deep/precious"), "precious").unwrap();
    sb
}

fn assert_sandbox_whole(sb: &Path) {
    assert_eq!(std::fs::read_to_string(sb.join("keep.txt")).unwrap(), "keep");
    assert_eq!(std::fs::read_to_string(sb.join("victim/deep/precious")).unwrap(), "precious");
}

/// Defect 1: `file "…/victim/.."` with `force` emptied the victim's parent. `check` refuses
/// the path at its span with the normal form in a note, and `run` touches nothing.
#[test]
fn a_dotdot_path_is_refused_by_check_and_run_touches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(dir.path());
    let program = format!(
        "file \"{}/victim/..\" {{\n\tstate => \"exists\",\n\tcontent => \"x\\n\",\n\tforce => true,\n}}\n",
        sb.display()
    );
    std::fs::write(dir.path().join("main.mcl"), &program).unwrap();

    let out = check(dir.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("has a `..` component"), "{err}");
    assert!(err.contains(&format!("`{}/`", sb.display())), "the normal form is in a note: {err}");
    assert!(err.contains("main.mcl:1:6"), "at the path: {err}");

    let out = run(dir.path());
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_sandbox_whole(&sb);
}

/// Defect 1, with the path computed at run time (from a fact the compiler cannot see):
/// refused when the graph is built, before anything is touched.
#[test]
fn a_dotdot_path_computed_at_run_time_is_refused_before_anything_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let sb = sandbox(dir.path());
    let fact = dir.path().join("fact");
    std::fs::write(&fact, format!("{}/victim/..", sb.display())).unwrap();
    let program = format!(
        "import \"os\"\n\n$p = os.readfile(\"{}\")\nfile \"${{p}}\" {{\n\tstate => \"exists\",\n\tcontent => \"x\\n\",\n\tforce => true,\n}}\n",
        fact.display()
    );
    std::fs::write(dir.path().join("main.mcl"), &program).unwrap();
    assert_eq!(check(dir.path()).status.code(), Some(0), "check cannot know the path");
    let out = run(dir.path());
    let err = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("has a `..` component"), "{err}");
    assert_sandbox_whole(&sb);
}

/// Defect 5: `/x`, `/./x` and `//x` were three resources rewriting one file forever. The
/// spelled-otherwise ones are refused, and two resources naming one path are a duplicate.
#[test]
fn aliased_paths_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x").display().to_string();
    for alias in [format!("{}/./x", dir.path().display()), format!("{}//x", dir.path().display())] {
        let program = format!(
            "file \"{x}\" {{\n\tstate => \"exists\",\n\tcontent => \"a\",\n}}\nfile \"{alias}\" {{\n\tstate => \"exists\",\n\tcontent => \"b\",\n}}\n"
        );
        std::fs::write(dir.path().join("main.mcl"), &program).unwrap();
        let out = check(dir.path());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{alias}: {err}");
        assert!(err.contains("paths must be in normal form"), "{err}");
    }

    // One path under two names (and as a directory): a duplicate, naming both.
    let program = format!(
        "file \"a\" {{\n\tpath => \"{x}\",\n\tstate => \"exists\",\n\tcontent => \"a\",\n}}\nfile \"{x}/\" {{\n\tstate => \"exists\",\n}}\n"
    );
    std::fs::write(dir.path().join("main.mcl"), &program).unwrap();
    let out = run(dir.path());
    let err = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("manage the same path") && err.contains("file[a]"), "{err}");
    assert!(!Path::new(&x).exists(), "nothing was applied");
}

/// Defect 8: constant params a kind's validation refuses passed `check` and made `run`
/// refuse the program. Each now fails `check`, at the field's value.
#[test]
fn check_refuses_what_run_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display();
    let cases = [
        (format!("file \"{root}/m\" {{\n\tstate => \"exists\",\n\tmode => \"0999\",\n}}\n"), "3:10", "mode"),
        ("timer \"t\" {\n\tinterval => 0,\n}\n".to_string(), "2:14", "interval"),
        (
            format!(
                "http:server \"s\" {{\n\taddress => \"127.0.0.1:0\",\n}}\nhttp:server:file \"/f\" {{\n\tserver => \"s\",\n\tpath => \"{root}/www\",\n}}\nhttp:server \"s2\" {{\n\taddress => \"127.0.0.1:0\",\n\troot => \"{root}/www\",\n}}\n"
            ),
            "10:10",
            "root",
        ),
        ("augeas \"hosts\" {\n\tfile => \"/etc/hosts\",\n\tlens => \"Hosts\",\n}\n".to_string(), "3:10", "lens"),
        (
            "dhcp:server \":67\" {\n\tinterface => \"eth0\",\n\tleasetime => \"10 minutes\",\n}\n".to_string(),
            "3:15",
            "leasetime",
        ),
        ("remote \"ssh://root@host2:22/\" {\n\tinteractive => true,\n}\n".to_string(), "2:17", "interactive"),
    ];
    for (program, at, field) in cases {
        std::fs::write(dir.path().join("main.mcl"), &program).unwrap();
        let out = check(dir.path());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{program}\n{err}");
        assert!(err.contains("did not Validate") && err.contains(&format!("field `{field}`")), "{err}");
        assert!(err.contains(&format!("main.mcl:{at}")), "at {at}: {err}");
    }
}

/// The processes whose command line is exactly `argv` (from /proc).
fn processes(argv: &[&str]) -> Vec<u32> {
    let want: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want))
        .collect()
}

fn eventually(limit: std::time::Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    f()
}

/// Kills the daemon if the test fails before stopping it.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn daemon(dir: &Path, state: &Path, log: &str) -> KillOnDrop {
    KillOnDrop(
        Command::new(TEND)
            .arg("run")
            .arg(dir.join("main.mcl"))
            .args(["--prefix", &state.display().to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(dir.join(log)).unwrap())
            .spawn()
            .unwrap(),
    )
}

/// Defect 4: a `Meta:timeout` dropped the check-apply but not the processes it started:
/// with `Meta:retry => -1` a `sleep` was orphaned at each retry and outlived the daemon.
/// Now at most the attempt in flight has one, and none is left once the daemon is gone.
#[test]
fn a_meta_timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    // A duration no other test uses, to find this test's processes.
    let sleep = ["sleep", "9871.5"];
    let program = "exec \"slow\" {\n\tshell => \"/bin/sh\",\n\tcmd => \"sleep 9871.5; echo done\",\n\tMeta:timeout => 300,\n\tMeta:retry => -1,\n}\n";
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let mut agent = daemon(dir.path(), &dir.path().join("state"), "stderr");
    assert!(eventually(std::time::Duration::from_secs(10), || !processes(&sleep).is_empty()), "the command started");
    // Several timeouts and retries later, no orphan has piled up.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let running = processes(&sleep);
    assert!(running.len() <= 1, "orphans left by timed-out attempts: {running:?}");
    Command::new("kill").args(["-TERM", &agent.0.id().to_string()]).status().unwrap();
    let _ = agent.0.wait();
    assert!(
        eventually(std::time::Duration::from_secs(5), || processes(&sleep).is_empty()),
        "left behind by the daemon: {:?}",
        processes(&sleep)
    );
    let log = std::fs::read_to_string(dir.path().join("stderr")).unwrap();
    assert!(log.contains("timeout after 300 ms"), "{log}");
}

/// Defect 6: two agents on one prefix both started. The second now refuses, naming the
/// first's PID, and the first keeps running.
#[test]
fn a_second_agent_on_one_prefix_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let target = dir.path().join("managed");
    let program = format!("file \"{}\" {{\n\tstate => \"exists\",\n\tcontent => \"one\\n\",\n}}\n", target.display());
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let mut first = daemon(dir.path(), &state, "first");
    assert!(eventually(std::time::Duration::from_secs(10), || target.exists()), "the first agent converged");
    let second = tend(&[
        "run",
        &dir.path().join("main.mcl").display().to_string(),
        "--prefix",
        &state.display().to_string(),
        "--converged-timeout",
        "0",
    ]);
    let err = text(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("PID {}", first.0.id())) && err.contains("--prefix"), "{err}");
    assert!(first.0.try_wait().unwrap().is_none(), "the first agent still runs");
    // A noop run only looks, so it may run beside the agent.
    let noop = tend(&[
        "run",
        &dir.path().join("main.mcl").display().to_string(),
        "--prefix",
        &state.display().to_string(),
        "--noop",
    ]);
    assert_eq!(noop.status.code(), Some(0), "{}", text(&noop.stderr));
}

/// Defect 4's units: `Meta:timeout` counts milliseconds and exec's `timeout` seconds; a
/// value implausible for its unit is a warning, at the value.
#[test]
fn implausible_timeouts_are_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let program = "exec \"a\" {\n\tcmd => \"true\",\n\tMeta:timeout => 30,\n}\nexec \"b\" {\n\tcmd => \"true\",\n\ttimeout => 30000,\n}\nexec \"c\" {\n\tcmd => \"true\",\n\ttimeout => 30,\n\tMeta:timeout => 30000,\n}\n";
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let out = check(dir.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "warnings only: {err}");
    assert!(err.contains("`Meta:timeout` is 30 milliseconds") && err.contains("main.mcl:3:18"), "{err}");
    assert!(err.contains("exec's `timeout` is 30000 seconds") && err.contains("main.mcl:7:13"), "{err}");
    assert_eq!(err.matches("Warning:").count(), 2, "c's values are plausible: {err}");
}

/// Defect 3: a file of random bytes read with `os.readfile` was written elsewhere as
/// 7,479 bytes of replacement characters. It is now an error naming the file, and
/// nothing is written.
#[test]
fn random_bytes_read_by_readfile_are_an_error_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let fact = dir.path().join("random");
    let mut bytes = vec![0u8; 4096];
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom").unwrap(), &mut bytes).unwrap();
    bytes.push(0xff); // Never valid UTF-8, whatever the random bytes were.
    std::fs::write(&fact, &bytes).unwrap();
    let target = dir.path().join("copy");
    let program = format!(
        "import \"os\"\n\nfile \"{}\" {{\n\tstate => \"exists\",\n\tcontent => os.readfile(\"{}\"),\n}}\n",
        target.display(),
        fact.display()
    );
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    let out = run(dir.path());
    let err = text(&out.stderr);
    assert!(err.contains("is not UTF-8 text") && err.contains("random"), "{err}");
    assert!(!target.exists(), "nothing was written");
}

/// Raises this process's soft limit of open files to its hard limit (with `prlimit`, from
/// util-linux: the tests take no unsafe code) and returns the limit in force.
fn raise_open_files() -> usize {
    let soft_hard = || -> (usize, usize) {
        let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
        let line = limits.lines().find(|l| l.starts_with("Max open files")).unwrap_or("");
        let nums: Vec<usize> = line.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        (nums.first().copied().unwrap_or(1024), nums.get(1).copied().unwrap_or(1024))
    };
    let (soft, hard) = soft_hard();
    if soft < hard {
        let _raised = Command::new("prlimit")
            .args(["--pid", &std::process::id().to_string(), &format!("--nofile={hard}:{hard}")])
            .status();
    }
    soft_hard().0
}

/// Defect 7: 10,000 half-sent requests held 10,000 descriptors for as long as the clients
/// liked; at the limit the server stopped answering and a `file` beside it failed with
/// "Too many open files". Now the server holds at most a few hundred connections, drops
/// each half-sent one at its read deadline, and the file keeps being repaired.
#[test]
fn half_open_connections_cannot_starve_the_daemon() {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let managed = dir.path().join("managed");
    let program = format!(
        "http:server \"web\" {{\n\taddress => \"127.0.0.1:{port}\",\n\tread_timeout => 2,\n}}\nfile \"{}\" {{\n\tstate => \"exists\",\n\tcontent => \"kept\\n\",\n}}\n",
        managed.display()
    );
    std::fs::write(dir.path().join("main.mcl"), program).unwrap();
    // As many half-sent requests as this process may open (10,000 where it can), and the
    // daemon far fewer descriptors than that.
    let clients = 10_000.min(raise_open_files().saturating_sub(200));
    let daemon_files = if clients >= 4096 { 2048 } else { 700 };
    let log = std::fs::File::create(dir.path().join("stderr")).unwrap();
    let mut agent = KillOnDrop(
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -n {daemon_files}; exec {TEND} run {} --prefix {}",
                dir.path().join("main.mcl").display(),
                dir.path().join("state").display()
            ))
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    let up = || TcpStream::connect(("127.0.0.1", port)).is_ok() && managed.exists();
    assert!(eventually(std::time::Duration::from_secs(10), up), "the daemon is up");

    let mut open = Vec::with_capacity(clients);
    for _ in 0..clients {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            let _sent = s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n");
            open.push(s);
        }
    }
    assert!(open.len() > clients / 2, "{} of {clients} connected", open.len());

    // The daemon still has descriptors for its own work: drift is repaired.
    std::fs::remove_file(&managed).unwrap();
    assert!(
        eventually(std::time::Duration::from_secs(3), || std::fs::read_to_string(&managed)
            .is_ok_and(|c| c == "kept\n")),
        "the file was repaired: {}",
        std::fs::read_to_string(dir.path().join("stderr")).unwrap()
    );
    // Past the deadline, every half-sent request has been dropped by the server.
    std::thread::sleep(std::time::Duration::from_secs(3));
    for s in open.iter_mut().take(200) {
        s.set_read_timeout(Some(std::time::Duration::from_secs(2))).unwrap();
        let mut buf = [0u8; 512];
        match s.read(&mut buf) {
            // Closed (end of stream), or answered and closed: never left waiting.
            Ok(n) => assert!(n == 0 || buf[..n].starts_with(b"HTTP/1.1 "), "{:?}", &buf[..n]),
            Err(e) => assert!(
                !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
                "a connection is still held open"
            ),
        }
    }
    drop(open);
    // And it answers whole requests again.
    let answered = eventually(std::time::Duration::from_secs(5), || {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else { return false };
        let _sent = s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let mut reply = String::new();
        s.set_read_timeout(Some(std::time::Duration::from_secs(2))).unwrap();
        s.read_to_string(&mut reply).is_ok() && reply.starts_with("HTTP/1.1 404")
    });
    assert!(answered, "the server answers after the flood");
    assert!(agent.0.try_wait().unwrap().is_none(), "the daemon runs");
}

/// Defect 6: two agents with different prefixes managing one file with different content
/// rewrote it ~700 times a second each, forever, without a word. Each now says once that
/// another writer keeps changing it, and backs off.
#[test]
fn two_writers_of_one_file_are_reported_and_back_off() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("fought");
    let mut agents = Vec::new();
    for (name, content) in [("one", "one"), ("two", "two")] {
        let sub = dir.path().join(name);
        std::fs::create_dir_all(&sub).unwrap();
        let program =
            format!("file \"{}\" {{\n\tstate => \"exists\",\n\tcontent => \"{content}\\n\",\n}}\n", target.display());
        std::fs::write(sub.join("main.mcl"), program).unwrap();
        agents.push((daemon(&sub, &sub.join("state"), "stderr"), sub));
    }
    let said = |sub: &Path| std::fs::read_to_string(sub.join("stderr")).unwrap_or_default();
    let reported = eventually(std::time::Duration::from_secs(10), || {
        agents.iter().all(|(_, sub)| said(sub).contains("another writer keeps changing it"))
    });
    assert!(reported, "{}\n---\n{}", said(&agents[0].1), said(&agents[1].1));
    // Backed off: over two seconds, far fewer rewrites than the hundreds a second of before.
    let stamp = || std::fs::metadata(&target).map(|m| std::os::unix::fs::MetadataExt::ctime_nsec(&m)).ok();
    let mut changes = 0;
    let mut last = stamp();
    for _ in 0..200 {
        std::thread::sleep(std::time::Duration::from_millis(10));
        let now = stamp();
        if now != last {
            changes += 1;
            last = now;
        }
    }
    assert!(changes < 40, "{changes} rewrites seen in 2 s");
    for (_, sub) in &agents {
        assert_eq!(said(sub).matches("another writer keeps changing").count(), 1, "said once: {}", said(sub));
    }
}
