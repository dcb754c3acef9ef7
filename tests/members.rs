//! A cluster that forms itself (issue 48), end to end: real `tend run` agents with
//! `--client-urls` and `--server-urls` on free loopback ports, each starting the real
//! `etcd` binary as its member. The first bootstraps, the others join; a `kill -9`ed
//! agent's member dies with it and is removed after the grace period, a client agent is
//! promoted in its place, a clean stop leaves the cluster without losing quorum, the
//! killed agent restarted joins again, `--ideal-cluster-size 1` keeps the others clients,
//! a crashed etcd is started again, members speak TLS with `tend pki`'s certificates, a
//! partition (network namespaces, veth links cut for 30 s) leaves the majority serving and
//! the cut host converging locally without its schedule role, one program runs the same on
//! the local world, an external etcd and a self-formed cluster, and no etcd process
//! outlives the tests. Skipped, with a message, where no `etcd` is installed (CI requires
//! it), and the partition test where network namespaces cannot be made.

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
    /// The network namespace it runs in (the partition test), if any.
    netns: Option<String>,
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
        let extra = if extra.iter().any(|f| f == "--member-grace") {
            extra.to_vec()
        } else {
            [extra, &["--member-grace".to_string(), "3".to_string()]].concat()
        };
        let mut agent = Agent {
            name: name.to_string(),
            netns: None,
            child: None,
            client: format!("{scheme}://127.0.0.1:{}", free_port()),
            peer: format!("{scheme}://127.0.0.1:{}", free_port()),
            home,
            extra,
            program: program.to_string(),
        };
        agent.spawn();
        agent
    }

    /// An agent that never runs a member (`--no-server`), a client of `seeds`.
    fn client_only(dir: &Path, name: &str, program: &str, seeds: &[String]) -> Agent {
        let home = dir.join(name);
        std::fs::create_dir_all(&home).unwrap();
        let mut extra = vec!["--no-server".to_string()];
        extra.extend_from_slice(seeds);
        let mut agent = Agent {
            name: name.to_string(),
            netns: None,
            child: None,
            client: String::new(),
            peer: String::new(),
            home,
            extra,
            program: program.to_string(),
        };
        agent.spawn();
        agent
    }

    /// [`Agent::start`] inside network namespace `ns`, its member at `addr`.
    fn start_in(dir: &Path, ns: &str, addr: &str, name: &str, program: &str, extra: &[String]) -> Agent {
        let home = dir.join(name);
        std::fs::create_dir_all(&home).unwrap();
        let mut agent = Agent {
            name: name.to_string(),
            netns: Some(ns.to_string()),
            child: None,
            client: format!("http://{addr}:2379"),
            peer: format!("http://{addr}:2380"),
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
        let mut command = match &self.netns {
            // `ip netns exec` execs tend: the child's PID is tend's.
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, TEND]);
                c
            }
            None => Command::new(TEND),
        };
        let child = command
            .args(["--hostname", &self.name, "-v", "run"])
            .arg(self.home.join("main.mcl"))
            .arg("--prefix")
            .arg(self.home.join("state"))
            .args(member_flags(&self.client, &self.peer))
            .args(["--world-ttl", "5"])
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

/// The URL flags of an agent that may run a member; none for a client-only one.
fn member_flags(client: &str, peer: &str) -> Vec<String> {
    if client.is_empty() {
        return Vec::new();
    }
    ["--client-urls", client, "--server-urls", peer].map(str::to_string).to_vec()
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(30));
    }
}

fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    testkit::daemon::eventually(limit, &mut cond)
}

/// The agent's `/metrics` page on `port` (empty when it does not answer).
fn scrape(port: u16) -> String {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return String::new() };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n");
    let mut page = String::new();
    let _ = s.read_to_string(&mut page);
    page
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

/// A figure the test measured, in its output (`--nocapture`), for BENCHMARKS.md.
#[allow(clippy::print_stdout)]
fn measured(line: &str) {
    println!("measured: {line}");
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
    // The grace period runs from the moment c stops answering: from the kill, not from
    // when its etcd was seen gone (which may take seconds more on a loaded machine).
    let killed = Instant::now();
    c.kill9();
    assert!(
        wait_until(Duration::from_secs(5), || etcds_under(&dir.path().join("c")).is_empty()),
        "c's etcd outlived c"
    );
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
    measured(&format!("a dead member replaced {:.1} s after kill -9 (grace 3 s)", replaced.as_secs_f64()));
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
fn an_ideal_size_keeps_the_other_agents_clients_and_no_server_agents_never_join() {
    if !etcd_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let metrics = free_port();
    let one = ["--ideal-cluster-size", "1", "--metrics", &format!("127.0.0.1:{metrics}")].map(str::to_string);
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
    // A crashed etcd is started again by its agent.
    let member = etcds_under(&dir.path().join("a"));
    assert_eq!(member.len(), 1);
    assert!(Command::new("kill").args(["-9", &member[0].to_string()]).status().unwrap().success());
    assert!(
        wait_until(T, || {
            let now = etcds_under(&dir.path().join("a"));
            now.len() == 1 && now != member && healthy_members(&url, &[]) == vec!["a".to_string()]
        }),
        "{}",
        a.log()
    );
    assert!(a.log().contains("starting it again"), "{}", a.log());
    let page = scrape(metrics);
    for series in
        ["tend_cluster_member 1", "tend_cluster_members 1", "tend_cluster_leader 1", "tend_cluster_ideal_size 1"]
    {
        assert!(page.lines().any(|l| l == series), "{series} not in:\n{page}");
    }
    // `tend cluster size 3`: b is promoted; c, started with --no-server, never is.
    let c = Agent::client_only(dir.path(), "c", &program(&out, "c", "a", ""), &a.seeds(&[]));
    assert!(wait_until(T, || read(&out.join("c.txt")) == "hello\n"), "c: {}", c.log());
    let sized = Command::new(TEND).args(["cluster", "size", "3", "--seeds", &url]).output().unwrap();
    assert!(sized.status.success(), "{}", String::from_utf8_lossy(&sized.stderr));
    let ab = vec!["a".to_string(), "b".to_string()];
    assert!(wait_until(T, || healthy_members(&url, &[]) == ab), "{:?}\nb:\n{}", status(&url, &[]), b.log());
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(healthy_members(&url, &[]), ab, "c joined: {}", c.log());
    assert!(etcds_under(&dir.path().join("c")).is_empty());
    assert!(wait_until(T, || scrape(metrics).lines().any(|l| l == "tend_cluster_members 2")));
    // b leaves again, and the last member stays when its agent stops: a restart serves the
    // same cluster.
    drop((b, c));
    assert_eq!(healthy_members(&url, &[]), vec!["a".to_string()], "b did not leave");
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

/// Three network namespaces joined by veth links to a bridge in the test's namespace (which
/// reaches them all through the bridge's address), removed on drop.
struct Net {
    tag: String,
    subnet: String,
    hosts: usize,
}

impl Net {
    /// `None` (after saying why) where namespaces cannot be made: not root, or a container
    /// without CAP_NET_ADMIN.
    #[allow(clippy::print_stdout)] // the skip message is for the test's output
    fn make(hosts: usize) -> Option<Net> {
        let tag = format!("tp{}", std::process::id() % 100_000);
        let net = Net { subnet: format!("10.77.{}", std::process::id() % 250), tag, hosts };
        if !ip(&["netns", "add", &net.ns(0)]) {
            println!("skipping: cannot make a network namespace here (needs root and CAP_NET_ADMIN)");
            return None;
        }
        let bridge = format!("{}b", net.tag);
        assert!(ip(&["link", "add", &bridge, "type", "bridge"]));
        assert!(ip(&["addr", "add", &format!("{}.254/24", net.subnet), "dev", &bridge]));
        assert!(ip(&["link", "set", &bridge, "up"]));
        for i in 0..hosts {
            let ns = net.ns(i);
            if i > 0 {
                assert!(ip(&["netns", "add", &ns]));
            }
            let (outside, inside) = (net.link(i), format!("{}i{i}", net.tag));
            assert!(ip(&["link", "add", &outside, "type", "veth", "peer", "name", &inside]));
            assert!(ip(&["link", "set", &inside, "netns", &ns]));
            assert!(ip(&["link", "set", &outside, "master", &bridge]));
            assert!(ip(&["link", "set", &outside, "up"]));
            let within = |args: &[&str]| ip(&[&["-n", &ns], args].concat());
            assert!(within(&["addr", "add", &format!("{}/24", net.addr(i)), "dev", &inside]));
            assert!(within(&["link", "set", &inside, "up"]));
            assert!(within(&["link", "set", "lo", "up"]));
        }
        Some(net)
    }

    fn ns(&self, i: usize) -> String {
        format!("{}n{i}", self.tag)
    }

    fn addr(&self, i: usize) -> String {
        format!("{}.{}", self.subnet, i + 1)
    }

    /// Host `i`'s end of its link, on the bridge.
    fn link(&self, i: usize) -> String {
        format!("{}o{i}", self.tag)
    }

    /// Cuts (or restores) host `i`'s link.
    fn cut(&self, i: usize, cut: bool) {
        assert!(ip(&["link", "set", &self.link(i), if cut { "down" } else { "up" }]));
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for i in 0..self.hosts {
            ip(&["link", "del", &self.link(i)]);
            ip(&["netns", "del", &self.ns(i)]);
        }
        ip(&["link", "del", &format!("{}b", self.tag)]);
    }
}

fn ip(args: &[&str]) -> bool {
    Command::new("ip").args(args).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// The partition test's program: volunteer for the `max => 1` role and say whether this
/// host holds it, show the shared greeting, and keep a file of its own.
fn partition_program(out: &Path, host: &str) -> String {
    let out = out.display();
    format!(
        r#"import "world"
schedule "role" {{ strategy => "rr", max => 1, }}
$mine = "{host}" in world.schedule("role")
file "{out}/{host}.role" {{ state => "exists", content => if $mine {{ "yes\n" }} else {{ "no\n" }}, }}
file "{out}/{host}.greeting" {{ state => "exists", content => world.getval("greeting")->value, }}
file "{out}/{host}.local" {{ state => "exists", content => "mine\n", }}
"#
    )
}

fn etcdctl_put(endpoint: &str, key: &str, value: &str) -> bool {
    Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", endpoint, "--command-timeout", "3s", "put", key, value])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_partitioned_member_converges_locally_gives_up_its_role_and_resyncs() {
    if !etcd_here() {
        return;
    }
    let Some(net) = Net::make(3) else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let names = ["h1", "h2", "h3"];
    // A grace longer than the cut: the cut member stays a member and comes back as one.
    let mut extra = vec!["--member-grace".to_string(), "60".to_string()];
    let first = Agent::start_in(dir.path(), &net.ns(0), &net.addr(0), "h1", &partition_program(&out, "h1"), &extra);
    extra.extend(first.seeds(&[]));
    let mut agents = vec![first];
    for (i, name) in names.iter().enumerate().skip(1) {
        let program = partition_program(&out, name);
        agents.push(Agent::start_in(dir.path(), &net.ns(i), &net.addr(i), name, &program, &extra));
    }
    let url = agents[0].client.clone();
    let all: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    assert!(
        wait_until(T, || healthy_members(&url, &[]) == all),
        "{:?}\n{}",
        status(&url, &[]),
        agents.iter().map(|a| format!("{}:\n{}", a.name, a.log())).collect::<String>()
    );
    let role = |h: &str| read(&out.join(format!("{h}.role")));
    let holders = || names.iter().filter(|h| role(h) == "yes\n").map(|h| h.to_string()).collect::<Vec<_>>();
    assert!(wait_until(T, || holders().len() == 1 && names.iter().all(|h| !role(h).is_empty())), "{:?}", holders());
    assert!(etcdctl_put(&url, "/_tend/kv/greeting", "before\n"));
    let greeting = |h: &str| read(&out.join(format!("{h}.greeting")));
    assert!(wait_until(T, || names.iter().all(|h| greeting(h) == "before\n")));
    // Cut the role holder off for 30 s.
    let cut = names.iter().position(|h| *h == holders()[0]).unwrap();
    let majority: Vec<usize> = (0..3).filter(|i| *i != cut).collect();
    let majority_url = agents[majority[0]].client.clone();
    net.cut(cut, true);
    let began = Instant::now();
    let mut overlap = Duration::ZERO;
    let mut taken_over = None;
    let mut last = Instant::now();
    let mut written = false;
    let mut repaired = false;
    while began.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
        let now = Instant::now();
        let held = holders();
        if held.len() > 1 {
            overlap += now - last;
        }
        last = now;
        if taken_over.is_none() && held.iter().any(|h| h != names[cut]) {
            taken_over = Some(began.elapsed());
        }
        // The majority keeps serving: a value written there reaches its other member.
        if !written && began.elapsed() > Duration::from_secs(10) {
            written = etcdctl_put(&majority_url, "/_tend/kv/greeting", "during\n");
        }
        // The cut host keeps converging its own machine.
        if !repaired && began.elapsed() > Duration::from_secs(12) {
            std::fs::remove_file(out.join(format!("{}.local", names[cut]))).unwrap();
            repaired = true;
        }
    }
    let cut_host = names[cut];
    assert!(written, "the majority side did not take a write");
    assert_eq!(greeting(names[majority[1]]), "during\n", "the value did not cross the majority side");
    assert_eq!(greeting(cut_host), "before\n", "the cut side keeps its last (stale) value");
    assert_eq!(read(&out.join(format!("{cut_host}.local"))), "mine\n", "the cut host stopped converging");
    assert!(agents[cut].log().contains("lost etcd"), "{}", agents[cut].log());
    assert!(taken_over.is_some(), "the majority chose no one in the cut host's place: {:?}", holders());
    assert_eq!(role(cut_host), "no\n", "the cut host still acts on the role");
    // No two holders for longer than the lease (--world-ttl 5).
    assert!(overlap < Duration::from_secs(5), "two hosts held the role for {overlap:?}");
    // The link comes back: everything resyncs within seconds.
    net.cut(cut, false);
    let back = Instant::now();
    assert!(
        wait_until(T, || greeting(cut_host) == "during\n" && healthy_members(&url, &[]) == all && holders().len() == 1),
        "{:?}\n{}",
        status(&url, &[]),
        agents[cut].log()
    );
    let resynced = back.elapsed();
    assert!(resynced < Duration::from_secs(15), "resynced after {resynced:?}");
    measured(&format!(
        "partition: role taken over after {:.1} s, two holders for {:.1} s, resynced {:.1} s after the link came back",
        taken_over.unwrap_or_default().as_secs_f64(),
        overlap.as_secs_f64(),
        resynced.as_secs_f64()
    ));
    drop(agents);
    assert!(wait_until(Duration::from_secs(10), || etcds_under(dir.path()).is_empty()));
    drop(net);
}

#[test]
fn one_program_runs_the_same_on_the_local_world_an_external_etcd_and_a_self_formed_cluster() {
    let Some(etcd) = testkit::etcd::Etcd::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let once = |mode: &str, flags: &[String]| {
        let out = dir.path().join(mode);
        std::fs::create_dir_all(&out).unwrap();
        let program = format!(
            r#"import "world"
kv "greeting" {{ key => "greeting", value => "hello\n", }}
file "{}/seen" {{ state => "exists", content => world.getval("greeting")->value, }}
"#,
            out.display()
        );
        std::fs::write(out.join("main.mcl"), program).unwrap();
        let run = Command::new(TEND)
            .args(["--hostname", "h1", "run"])
            .arg(out.join("main.mcl"))
            .arg("--prefix")
            .arg(out.join("state"))
            .args(["--converged-timeout", "3"])
            .args(flags)
            .output()
            .unwrap();
        assert!(run.status.success(), "{mode}: {}", String::from_utf8_lossy(&run.stderr));
        read(&out.join("seen"))
    };
    assert_eq!(once("local", &[]), "hello\n");
    assert_eq!(once("external", &["--seeds".to_string(), etcd.url()]), "hello\n");
    let (client, peer) = (format!("http://127.0.0.1:{}", free_port()), format!("http://127.0.0.1:{}", free_port()));
    let formed = ["--client-urls".to_string(), client, "--server-urls".to_string(), peer];
    assert_eq!(once("formed", &formed), "hello\n");
    assert!(wait_until(Duration::from_secs(10), || etcds_under(dir.path()).is_empty()));
}
