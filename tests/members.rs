//! A cluster that forms itself (issue 48), end to end: real `tend run` agents with
//! `--client-urls` and `--server-urls` on free loopback ports, each starting the real
//! `etcd` binary as its member. The first bootstraps, the others join; a `kill -9`ed
//! agent's member dies with it and is removed after the grace period, a client agent is
//! promoted in its place, a clean stop leaves the cluster without losing quorum, the
//! killed agent restarted joins again, `--ideal-cluster-size 1` keeps the others clients,
//! members speak TLS with `tend pki`'s certificates, and no etcd process outlives the
//! tests. Skipped, with a message, where no `etcd` is installed (CI requires it).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use testkit::etcd::free_port;

const TEND: &str = env!("CARGO_BIN_EXE_tend");

/// Long enough for a member to start and be counted on this shared machine.
const T: Duration = Duration::from_secs(30);

/// One agent that may run a member.
struct Agent {
    name: String,
    child: Option<Child>,
    home: PathBuf,
    client: String,
    peer: String,
    /// The flags it was started with after its URLs (`--seeds`, sizes, TLS).
    extra: Vec<String>,
    program: String,
}

impl Agent {
    /// Agent `name` running `program`, its member at fresh loopback ports; `extra` are more
    /// `tend run` flags (`--seeds`, `--ideal-cluster-size`, TLS files).
    fn start(dir: &Path, name: &str, program: &str, extra: &[String], scheme: &str) -> Agent {
        let home = dir.join(name);
        std::fs::create_dir_all(&home).unwrap();
        let mut agent = Agent {
            name: name.to_string(),
            child: None,
            client: format!("{scheme}://127.0.0.1:{}", free_port()),
            peer: format!("{scheme}://127.0.0.1:{}", free_port()),
            home,
            extra: extra.to_vec(),
            program: program.to_string(),
        };
        agent.spawn();
        agent
    }

    fn spawn(&mut self) {
        std::fs::write(self.home.join("main.mcl"), &self.program).unwrap();
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.home.join("log")).unwrap();
        let child = Command::new(TEND)
            .args(["--hostname", &self.name, "-v", "run"])
            .arg(self.home.join("main.mcl"))
            .arg("--prefix")
            .arg(self.home.join("state"))
            .args(["--client-urls", &self.client, "--server-urls", &self.peer])
            .args(["--world-ttl", "5", "--member-grace", "3"])
            .args(&self.extra)
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("tend starts");
        self.child = Some(child);
    }

    /// `--seeds` naming this agent's member (and TLS flags `tls`).
    fn seeds(&self, tls: &[String]) -> Vec<String> {
        let mut flags = vec!["--seeds".to_string(), self.client.clone()];
        flags.extend_from_slice(tls);
        flags
    }

    /// SIGKILL: the agent cannot leave the cluster.
    fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGTERM, and waits (up to `limit`) for the agent to exit; whether it did.
    fn stop(&mut self, limit: Duration) -> bool {
        let Some(mut child) = self.child.take() else { return true };
        let _ = Command::new("kill").arg(child.id().to_string()).stderr(Stdio::null()).status();
        let exited = wait_until(limit, || child.try_wait().ok().flatten().is_some());
        let _ = child.kill();
        let _ = child.wait();
        exited
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.home.join("log")).unwrap_or_default()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(30));
    }
}

fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if cond() {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// `tend status --format json` against `seeds` (with TLS flags `tls`).
fn status(seeds: &str, tls: &[String]) -> serde_json::Value {
    let out = Command::new(TEND).args(["status", "--seeds", seeds, "--format", "json"]).args(tls).output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
}

/// The healthy members' names, sorted, as `tend status` reports them.
fn healthy_members(seeds: &str, tls: &[String]) -> Vec<String> {
    let s = status(seeds, tls);
    let mut names: Vec<String> = s["members"]
        .as_array()
        .map(|m| {
            m.iter().filter(|m| m["healthy"] == true).filter_map(|m| m["name"].as_str().map(str::to_string)).collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Every member, healthy or not.
fn all_members(seeds: &str, tls: &[String]) -> usize {
    status(seeds, tls)["members"].as_array().map_or(usize::MAX, Vec::len)
}

/// PIDs of etcd processes whose command line names `dir`.
fn etcds_under(dir: &Path) -> Vec<u32> {
    let dir = dir.display().to_string();
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains("etcd") && cmdline.contains("--data-dir") && cmdline.contains(&dir) {
            pids.push(pid);
        }
    }
    pids
}

/// A program that publishes `kv greeting` from `from` and writes what it reads, and an
/// export of `from` collected by every host, under `out`.
fn program(out: &Path, host: &str, from: &str, greeting: &str) -> String {
    let out = out.display();
    let mut p = format!(
        r#"import "world"
file "{out}/{host}.txt" {{ state => "exists", content => world.getval("greeting")->value, }}
File <<| title == "shared" |>> {{ path => "{out}/{host}-collected", }}
"#
    );
    if host == from {
        p.push_str(&format!(
            "kv \"greeting\" {{ key => \"greeting\", value => \"{greeting}\\n\", }}\n\
             @@file \"shared\" {{ path => \"{out}/none\", content => \"from {host}\\n\", state => \"exists\", }}\n"
        ));
    }
    p
}

/// Whether this machine can run the tests (an `etcd` binary).
fn etcd_here() -> bool {
    testkit::etcd::available()
}

#[test]
fn agents_form_a_cluster_replace_a_dead_member_and_shrink_on_a_clean_stop() {
    if !etcd_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let size = ["--ideal-cluster-size".to_string(), "3".to_string()];
    let mut a = Agent::start(dir.path(), "a", &program(&out, "a", "a", "hello"), &size, "http");
    let seeds = a.seeds(&[]);
    let url = a.client.clone();
    let b = Agent::start(dir.path(), "b", &program(&out, "b", "a", ""), &seeds, "http");
    let mut c = Agent::start(dir.path(), "c", &program(&out, "c", "a", ""), &seeds, "http");
    let three = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    assert!(
        wait_until(T, || healthy_members(&url, &[]) == three(&["a", "b", "c"])),
        "{:?}\na:\n{}\nb:\n{}\nc:\n{}",
        status(&url, &[]),
        a.log(),
        b.log(),
        c.log()
    );
    assert_eq!(etcds_under(dir.path()).len(), 3, "one etcd per member");
    // Values and exports cross the self-formed cluster.
    for h in ["b", "c"] {
        let (got, collected) = (out.join(format!("{h}.txt")), out.join(format!("{h}-collected")));
        assert!(wait_until(T, || read(&got) == "hello\n"), "{h}: {:?}", read(&got));
        assert!(wait_until(T, || read(&collected) == "from a\n"), "{h}: {:?}", read(&collected));
    }
    // A fourth agent finds the cluster at its ideal size: a client.
    let mut d = Agent::start(dir.path(), "d", &program(&out, "d", "a", ""), &seeds, "http");
    assert!(wait_until(T, || read(&out.join("d.txt")) == "hello\n"), "d: {}", d.log());
    assert_eq!(healthy_members(&url, &[]), three(&["a", "b", "c"]), "d stays a client at the ideal size");
    // kill -9 of c's agent: its member dies with it, quorum holds, values keep flowing.
    let c_etcd = etcds_under(&dir.path().join("c"));
    assert_eq!(c_etcd.len(), 1);
    c.kill9();
    assert!(
        wait_until(Duration::from_secs(5), || etcds_under(&dir.path().join("c")).is_empty()),
        "c's etcd outlived c"
    );
    let killed = Instant::now();
    a.program = program(&out, "a", "a", "bonjour");
    std::fs::write(a.home.join("main.mcl"), &a.program).unwrap();
    assert!(wait_until(T, || read(&out.join("b.txt")) == "bonjour\n"), "b: {}", b.log());
    // After the grace period (3 s) c is removed and d promoted: three members again.
    assert!(
        wait_until(T, || healthy_members(&url, &[]) == three(&["a", "b", "d"]) && all_members(&url, &[]) == 3),
        "{:?}\nd:\n{}\na:\n{}",
        status(&url, &[]),
        d.log(),
        a.log()
    );
    let replaced = killed.elapsed();
    assert!(replaced >= Duration::from_secs(3), "removed before the grace period: {replaced:?}");
    // A clean stop of a member: it leaves, and two members keep quorum.
    assert!(d.stop(T), "d did not stop: {}", d.log());
    assert!(d.log().contains("left the cluster"), "{}", d.log());
    assert_eq!(all_members(&url, &[]), 2, "{:?}", status(&url, &[]));
    assert_eq!(healthy_members(&url, &[]), three(&["a", "b"]));
    a.program = program(&out, "a", "a", "hola");
    std::fs::write(a.home.join("main.mcl"), &a.program).unwrap();
    assert!(wait_until(T, || read(&out.join("b.txt")) == "hola\n"), "quorum lost after d left: {}", b.log());
    // The killed agent restarted: its member was removed, so it joins anew.
    c.spawn();
    assert!(
        wait_until(T, || healthy_members(&url, &[]) == three(&["a", "b", "c"])),
        "{:?}\nc:\n{}",
        status(&url, &[]),
        c.log()
    );
    assert!(wait_until(T, || read(&out.join("c.txt")) == "hola\n"), "c: {}", c.log());
    drop((a, b, c, d));
    assert!(
        wait_until(Duration::from_secs(10), || etcds_under(dir.path()).is_empty()),
        "etcd processes left: {:?}",
        etcds_under(dir.path())
    );
}

#[test]
fn an_ideal_size_of_one_keeps_the_other_agents_clients() {
    if !etcd_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let one = ["--ideal-cluster-size".to_string(), "1".to_string()];
    let a = Agent::start(dir.path(), "a", &program(&out, "a", "a", "hello"), &one, "http");
    let url = a.client.clone();
    let mut extra = a.seeds(&[]);
    // Given to a joiner too: the stored value (1) wins over it.
    extra.extend(["--ideal-cluster-size".to_string(), "5".to_string()]);
    let b = Agent::start(dir.path(), "b", &program(&out, "b", "a", ""), &extra, "http");
    assert!(wait_until(T, || read(&out.join("b.txt")) == "hello\n"), "b: {}", b.log());
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(healthy_members(&url, &[]), vec!["a".to_string()], "{}", b.log());
    assert_eq!(status(&url, &[])["ideal_cluster_size"], 1);
    assert_eq!(etcds_under(&dir.path().join("b")), Vec::<u32>::new(), "b runs no member");
    // The last member stays when its agent stops: a restart serves the same cluster.
    drop(b);
    let mut a = a;
    assert!(a.stop(T));
    assert!(a.log().contains("the last member stays"), "{}", a.log());
    a.spawn();
    assert!(wait_until(T, || healthy_members(&url, &[]) == vec!["a".to_string()]), "{}", a.log());
    drop(a);
    assert!(wait_until(Duration::from_secs(10), || etcds_under(dir.path()).is_empty()));
}

#[test]
fn members_speak_tls_with_certificates_from_tend_pki() {
    if !etcd_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pki = dir.path().join("pki");
    let ok = |out: std::process::Output| assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    ok(Command::new(TEND).args(["pki", "init"]).arg(&pki).output().unwrap());
    for host in ["a", "b", "op"] {
        ok(Command::new(TEND).args(["pki", "issue"]).arg(&pki).args([host, "--ip", "127.0.0.1"]).output().unwrap());
    }
    let files = |name: &str| {
        vec![
            "--cacert".to_string(),
            pki.join("ca.crt").display().to_string(),
            "--cert".to_string(),
            pki.join(format!("{name}.crt")).display().to_string(),
            "--key".to_string(),
            pki.join(format!("{name}.key")).display().to_string(),
        ]
    };
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let a = Agent::start(dir.path(), "a", &program(&out, "a", "a", "secret hello"), &files("a"), "https");
    assert!(a.client.starts_with("https://") && a.peer.starts_with("https://"));
    let b = Agent::start(dir.path(), "b", &program(&out, "b", "a", ""), &a.seeds(&files("b")), "https");
    let url = a.client.clone();
    let op = files("op");
    assert!(
        wait_until(T, || healthy_members(&url, &op) == vec!["a".to_string(), "b".to_string()]),
        "{:?}\na:\n{}\nb:\n{}",
        status(&url, &op),
        a.log(),
        b.log()
    );
    assert!(wait_until(T, || read(&out.join("b.txt")) == "secret hello\n"), "b: {}", b.log());
    // The members accept no client without a certificate of this CA.
    let bare =
        Command::new(TEND).args(["status", "--seeds", &url, "--cacert"]).arg(pki.join("ca.crt")).output().unwrap();
    assert!(!bare.status.success(), "a client without a certificate was served");
    drop((a, b));
    assert!(wait_until(Duration::from_secs(10), || etcds_under(dir.path()).is_empty()));
}

#[test]
fn bad_member_flags_are_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("p.mcl");
    std::fs::write(&program, "print \"p\" { msg => \"x\", }\n").unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(TEND)
            .arg("run")
            .arg(&program)
            .arg("--prefix")
            .arg(dir.path().join("state"))
            .args(args)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, err) = run(&["--client-urls", "http://127.0.0.1:1"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--server-urls"), "{err}");
    let (code, err) =
        run(&["--no-server", "--client-urls", "http://127.0.0.1:1", "--server-urls", "http://127.0.0.1:2"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--no-server"), "{err}");
    let (code, err) = run(&["--client-urls", "http://0.0.0.0:1", "--server-urls", "http://127.0.0.1:2"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("wildcard"), "{err}");
    let (code, err) = run(&[
        "--client-urls",
        "http://127.0.0.1:1",
        "--server-urls",
        "http://127.0.0.1:2",
        "--etcd-binary",
        "/nonexistent/etcd",
    ]);
    assert_eq!(code, Some(2));
    assert!(err.contains("cannot run etcd (/nonexistent/etcd)"), "{err}");
    let (code, err) = run(&["--member-grace", "61", "--client-urls", "http://127.0.0.1:1", "--server-urls", "x"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--member-grace"), "{err}");
}
