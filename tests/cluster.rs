//! Cluster mode end to end: real `tend run` agents (`--hostname h1..h3`, each with its
//! own `--prefix`) against a real etcd started on free loopback ports (testkit's `Etcd`,
//! stopped by its PID). The scenarios of `../shared/spec/cluster.md` section 5 that the
//! world has so far: values exchanged through `kv`/`world.getval`/`world.kvlookup` and
//! their changes; identity (a duplicate host name refused, a dead host's entries gone
//! after its lease, a restarted agent's leftovers removed); an etcd outage, an etcd
//! restarted empty, and a lost quorum, none of which stops an agent converging its own
//! machine; a schedule that every host agrees on, fails over after `kill -9` of a member
//! and of the leader, and is not rewritten while nothing changes; exported resources
//! collected by the hosts they are for, their edits and removal, a collect conflict that
//! leaves only that resource out, orphaned and dead hosts' exports removed; and TLS (issue
//! 47): agents over mutual TLS with certificates from `tend pki` (and once from openssl), each
//! way a handshake can fail told in one line, and a running agent that keeps converging
//! while its etcd is untrusted. Skipped, with a message, where no `etcd` is installed (CI
//! requires it).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use testkit::etcd::{Etcd, EtcdTls, free_port};

const TEND: &str = env!("CARGO_BIN_EXE_tend");

/// One `tend run` agent.
struct Agent {
    name: String,
    child: Child,
    dir: PathBuf,
    metrics: u16,
}

impl Agent {
    /// Starts agent `name` on `program` (written to `<dir>/<name>/main.mcl`), joined to
    /// `seeds`, with a session lease of `ttl` seconds.
    fn start(dir: &Path, name: &str, seeds: &str, ttl: u32, program: &str) -> Agent {
        let mut cluster = vec!["--seeds".to_string(), seeds.to_string()];
        cluster.extend(tls_of(seeds, name));
        Agent::start_with(dir, name, &cluster, ttl, program)
    }

    /// [`Agent::start`] with the cluster flags `cluster` (`--seeds` and the TLS files).
    fn start_with(dir: &Path, name: &str, cluster: &[String], ttl: u32, program: &str) -> Agent {
        let home = dir.join(name);
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("main.mcl"), program).unwrap();
        let metrics = free_port();
        let child = Command::new(TEND)
            .args(["--hostname", name, "run"])
            .arg(home.join("main.mcl"))
            .arg("--prefix")
            .arg(home.join("state"))
            .args(cluster)
            .args(["--world-ttl", &ttl.to_string()])
            .args(["--metrics", &format!("127.0.0.1:{metrics}")])
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(home.join("log")).unwrap())
            .spawn()
            .expect("tend starts");
        Agent { name: name.to_string(), child, dir: home, metrics }
    }

    /// Starts agent `name` with no program: it runs the cluster's deploys.
    fn follow(dir: &Path, name: &str, seeds: &str) -> Agent {
        Agent::follow_with(dir, name, seeds, &[])
    }

    /// [`Agent::follow`] with more arguments for `tend run`.
    fn follow_with(dir: &Path, name: &str, seeds: &str, extra: &[String]) -> Agent {
        let home = dir.join(name);
        std::fs::create_dir_all(&home).unwrap();
        let metrics = free_port();
        let child = Command::new(TEND)
            .args(["--hostname", name, "-v", "run", "--prefix"])
            .arg(home.join("state"))
            .args(["--seeds", seeds, "--world-ttl", "5"])
            .args(tls_of(seeds, name))
            .args(extra)
            .args(["--metrics", &format!("127.0.0.1:{metrics}")])
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(home.join("log")).unwrap())
            .spawn()
            .expect("tend starts");
        Agent { name: name.to_string(), child, dir: home, metrics }
    }

    /// Replaces the agent's program (a live edit: the agent reloads it).
    fn edit(&self, program: &str) {
        let tmp = self.dir.join("main.mcl.new");
        std::fs::write(&tmp, program).unwrap();
        std::fs::rename(tmp, self.dir.join("main.mcl")).unwrap();
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// SIGKILL: the agent cannot leave the cluster.
    fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The agent's `/metrics` page (empty when it does not answer).
    fn metrics(&self) -> String {
        let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.metrics)) else { return String::new() };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n");
        let mut page = String::new();
        let _ = s.read_to_string(&mut page);
        page
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        // SIGTERM: an orderly exit that leaves the cluster.
        let _ = Command::new("kill").arg(self.child.id().to_string()).stderr(Stdio::null()).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline && self.child.try_wait().ok().flatten().is_none() {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `cond` every 50 ms for up to `limit`.
fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if cond() {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Every key under `/_tend/` with its value, read with `etcdctl`.
fn etcd_keys(etcd: &Etcd) -> Vec<(String, String)> {
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", &etcd.url(), "get", "--prefix", "/_tend/"])
        .args(tls_of(&etcd.url(), "root"))
        .output()
        .expect("etcdctl runs (apt-get install etcd-client)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    lines.chunks(2).map(|c| (c[0].to_string(), c.get(1).unwrap_or(&"").to_string())).collect()
}

/// The program every agent runs: it publishes `ok-<host>` in namespace `remote`, a counter
/// (`skiplessthan`), and on h1 the greeting; it writes what it reads to `<out>/<host>.txt`.
fn program(out: &Path, host: &str, greeting: &str, mapped: bool) -> String {
    let out = out.display();
    let count = if host == "h1" { "5" } else { "3" };
    let mut p = format!(
        r#"import "world"
import "fmt"
$g = world.getval("greeting")
$c = world.getval("counter")
$none = world.getval("nothere")
$m = world.kvlookup("remote")
kv "counter" {{ key => "counter", value => "{count}", skiplessthan => true, }}
file "{out}/${{hostname}}.txt" {{
	state => "exists",
	content => fmt.printf("g=%s c=%s none=%t map=%v\n", $g->value, $c->value, $none->exists, $m),
}}
"#
    );
    if mapped {
        p.push_str("kv \"mine\" { key => \"remote\", value => \"ok-${hostname}\", mapped => true, }\n");
    }
    if host == "h1" {
        p.push_str(&format!("kv \"greeting\" {{ key => \"greeting\", value => \"{greeting}\", }}\n"));
    }
    p
}

fn line(greeting: &str, hosts: &[&str]) -> String {
    let map: Vec<String> = hosts.iter().map(|h| format!("\"{h}\": \"ok-{h}\"")).collect();
    format!("g={greeting} c=5 none=false map={{{}}}\n", map.join(", "))
}

const T: Duration = Duration::from_secs(15);

#[test]
fn values_cross_hosts_and_their_changes_propagate() {
    let Some(etcd) = start_etcd() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let agents: Vec<Agent> = ["h1", "h2", "h3"]
        .iter()
        .map(|h| Agent::start(dir.path(), h, &etcd.url(), 5, &program(&out, h, "hello", true)))
        .collect();
    let want = line("hello", &["h1", "h2", "h3"]);
    for a in &agents {
        let file = out.join(format!("{}.txt", a.name));
        assert!(
            wait_until(T, || read(&file) == want),
            "{}: {:?}, want {want:?}; log:\n{}",
            a.name,
            read(&file),
            a.log()
        );
    }
    // A changed value reaches the other hosts.
    agents[0].edit(&program(&out, "h1", "bonjour", true));
    let want = line("bonjour", &["h1", "h2", "h3"]);
    for a in &agents[1..] {
        let file = out.join(format!("{}.txt", a.name));
        assert!(wait_until(T, || read(&file) == want), "{}: {:?}; log:\n{}", a.name, read(&file), a.log());
    }
    let keys = etcd_keys(&etcd);
    assert!(keys.contains(&("/_tend/kv/counter".into(), "5".into())), "skiplessthan keeps 5 over 3: {keys:?}");
    assert!(keys.iter().all(|(k, _)| k.starts_with("/_tend/")));
}

#[test]
fn identity_a_second_agent_is_refused_and_dead_hosts_vanish() {
    let Some(etcd) = start_etcd() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let h1 = Agent::start(dir.path(), "h1", &etcd.url(), 10, &program(&out, "h1", "hello", true));
    let mut h2 = Agent::start(dir.path(), "h2", &etcd.url(), 10, &program(&out, "h2", "hello", true));
    let mut h3 = Agent::start(dir.path(), "h3", &etcd.url(), 4, &program(&out, "h3", "hello", true));
    let seen = out.join("h1.txt");
    assert!(wait_until(T, || read(&seen) == line("hello", &["h1", "h2", "h3"])), "{:?}", read(&seen));

    // A second agent with a taken name refuses to start, and says why.
    let other = dir.path().join("dup");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("main.mcl"), program(&out, "h1", "other", true)).unwrap();
    let dup = Command::new(TEND)
        .args(["--hostname", "h1", "run"])
        .arg(other.join("main.mcl"))
        .arg("--prefix")
        .arg(other.join("state"))
        .args(["--seeds", &etcd.url()])
        .args(tls_of(&etcd.url(), "h1"))
        .output()
        .unwrap();
    assert_eq!(dup.status.code(), Some(2));
    let err = String::from_utf8_lossy(&dup.stderr);
    assert!(err.contains("host name `h1` is already claimed"), "{err}");
    assert!(h1.log().lines().all(|l| !l.contains("ERROR")), "{}", h1.log());

    // An agent killed and restarted without its entry removes what its previous run left
    // at once (its lease would have kept it 10 s).
    h2.kill9();
    let restarted = Instant::now();
    let h2 = Agent::start(dir.path(), "h2", &etcd.url(), 10, &program(&out, "h2", "hello", false));
    assert!(
        wait_until(Duration::from_secs(6), || read(&seen) == line("hello", &["h1", "h3"])),
        "{:?}; h2's log:\n{}",
        read(&seen),
        h2.log()
    );
    assert!(restarted.elapsed() < Duration::from_secs(8), "took {:?}", restarted.elapsed());

    // A dead host's entry stays through its lease, then goes.
    h3.kill9();
    let killed = Instant::now();
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(read(&seen), line("hello", &["h1", "h3"]), "h3's entry outlives it by its lease");
    assert!(wait_until(Duration::from_secs(9), || read(&seen) == line("hello", &["h1"])), "{:?}", read(&seen));
    assert!(killed.elapsed() >= Duration::from_secs(3), "gone after {:?}, before the 4 s lease", killed.elapsed());
    let keys = etcd_keys(&etcd);
    assert!(!keys.iter().any(|(k, _)| k.ends_with("/h3")), "{keys:?}");
}

/// h1's exports: a Puppet-style `@@file` to every host (its content `shared`), an
/// mgmt-style hidden file exported to h2 only, and (`extra`) more statements.
fn exporter(out: &Path, shared: &str, extra: &str) -> String {
    let out = out.display();
    format!(
        r#"kv "greeting" {{ key => "greeting", value => "{shared}", }}
@@file "shared" {{ path => "{out}/h1-shared", content => "{shared}\n", state => "exists", }}
file "directed" {{
	path => "{out}/h1-directed",
	content => "for h2\n",
	state => "exists",
	Meta:hidden => true,
	Meta:export => ["h2"],
}}
{extra}
"#
    )
}

/// h2 collects both of h1's exports by name (`collect`); h3 collects with Puppet's
/// `<<| |>>` (and names the directed one, which is not for it). Each writes them under its
/// own name, and a local file shows the greeting.
fn collector(out: &Path, host: &str, extra: &str) -> String {
    let out = out.display();
    let shared = if host == "h2" {
        format!("collect file \"shared\" {{ path => \"{out}/h2-shared\", }}")
    } else {
        format!("File <<| title == \"shared\" |>> {{ path => \"{out}/{host}-shared\", }}")
    };
    format!(
        r#"import "world"
{shared}
collect file "directed" {{ path => "{out}/{host}-directed", Meta:hidden => false, }}
file "{out}/{host}-local" {{ content => world.getval("greeting")->value, state => "exists", }}
{extra}
"#
    )
}

/// The keys of exports in etcd.
fn exported_keys(etcd: &Etcd) -> Vec<String> {
    etcd_keys(etcd).into_iter().map(|(k, _)| k).filter(|k| k.starts_with("/_tend/exports/")).collect()
}

#[test]
fn exports_reach_their_hosts_follow_edits_and_conflicts_stay_on_one_resource() {
    let Some(etcd) = start_etcd() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let mut h1 = Agent::start(dir.path(), "h1", &etcd.url(), 6, &exporter(&out, "v1", ""));
    let h2 = Agent::start(dir.path(), "h2", &etcd.url(), 6, &collector(&out, "h2", ""));
    let h3 = Agent::start(dir.path(), "h3", &etcd.url(), 6, &collector(&out, "h3", ""));
    let at = |name: &str| out.join(name);
    let logs = |agents: &[&Agent]| agents.iter().map(|a| format!("{}:\n{}", a.name, a.log())).collect::<String>();

    // To every host: on h2 and h3, not on h1; directed to h2: only there.
    for name in ["h2-shared", "h3-shared"] {
        assert!(
            wait_until(T, || read(&at(name)) == "v1\n"),
            "{name}: {:?}\n{}",
            read(&at(name)),
            logs(&[&h1, &h2, &h3])
        );
    }
    assert!(wait_until(T, || read(&at("h2-directed")) == "for h2\n"), "{}", logs(&[&h2]));
    std::thread::sleep(Duration::from_millis(500));
    for name in ["h3-directed", "h1-shared", "h1-directed"] {
        assert!(!at(name).exists(), "{name} exists");
    }
    let mut keys = exported_keys(&etcd);
    keys.sort();
    assert_eq!(keys, ["/_tend/exports/h1/%2a/file/shared", "/_tend/exports/h1/h2/file/directed"]);
    // `tend graph --seeds` collects them too, as an observer.
    let graph = Command::new(TEND)
        .args(["--hostname", "h2", "graph"])
        .arg(h2.dir.join("main.mcl"))
        .args(["--seeds", &etcd.url()])
        .args(tls_of(&etcd.url(), "h2"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&graph.stdout);
    assert!(text.contains("Vertex: file[shared]") && text.contains("Vertex: file[directed]"), "{text}");

    // An edit propagates.
    h1.edit(&exporter(&out, "v2", ""));
    for name in ["h2-shared", "h3-shared"] {
        assert!(wait_until(T, || read(&at(name)) == "v2\n"), "{name}: {:?}", read(&at(name)));
    }

    // h3 exports `shared` differently: h2 reports the conflict on that resource only, and
    // the rest of its graph still updates.
    h3.edit(&collector(&out, "h3", "@@file \"shared\" { path => \"/nonexistent\", content => \"h3's\\n\", }"));
    assert!(
        wait_until(T, || h2.log().contains("collect conflict: file[shared] is exported differently by h1 and h3")),
        "{}",
        logs(&[&h2, &h3])
    );
    h1.edit(&exporter(&out, "v3", ""));
    assert!(wait_until(T, || read(&at("h2-local")) == "v3"), "{:?}\n{}", read(&at("h2-local")), logs(&[&h2]));
    assert_eq!(read(&at("h2-shared")), "v2\n", "the conflicting resource is left alone");
    // Once the exports agree again, it is managed again.
    h3.edit(&collector(&out, "h3", ""));
    assert!(wait_until(T, || read(&at("h2-shared")) == "v3\n"), "{:?}\n{}", read(&at("h2-shared")), logs(&[&h2]));

    // Removing an export deletes its key, and collectors stop managing it.
    h1.edit(&format!(
        "kv \"greeting\" {{ key => \"greeting\", value => \"v4\", }}\n{}",
        "file \"directed\" { path => \"/x\", content => \"for h2\\n\", Meta:hidden => true, Meta:export => [\"h2\"], }\n"
    ));
    assert!(
        wait_until(T, || exported_keys(&etcd) == ["/_tend/exports/h1/h2/file/directed"]),
        "{:?}\n{}",
        exported_keys(&etcd),
        h1.log()
    );
    assert!(wait_until(T, || read(&at("h2-local")) == "v4"));

    // An agent killed and restarted without an export removes it at once (orphans), and a
    // dead host's exports vanish after its lease.
    h1.kill9();
    let restarted = Instant::now();
    h1 = Agent::start(
        dir.path(),
        "h1",
        &etcd.url(),
        6,
        "kv \"greeting\" { key => \"greeting\", value => \"v5\", }\n@@file \"late\" { path => \"/x\", content => \"x\", }\n",
    );
    assert!(
        wait_until(Duration::from_secs(5), || exported_keys(&etcd) == ["/_tend/exports/h1/%2a/file/late"]),
        "{:?}\n{}",
        exported_keys(&etcd),
        h1.log()
    );
    assert!(restarted.elapsed() < Duration::from_secs(6), "took {:?}", restarted.elapsed());
    h1.kill9();
    let killed = Instant::now();
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(exported_keys(&etcd).len(), 1, "kept through the lease");
    assert!(wait_until(Duration::from_secs(12), || exported_keys(&etcd).is_empty()), "{:?}", exported_keys(&etcd));
    assert!(killed.elapsed() >= Duration::from_secs(4), "gone after {:?}, before the 6 s lease", killed.elapsed());
    assert!(h2.log().lines().all(|l| !l.contains("panicked")), "{}", h2.log());
}

/// The world's link as an agent's metrics show it.
fn connected(a: &Agent) -> Option<bool> {
    let page = a.metrics();
    let line = page.lines().find(|l| l.starts_with("tend_world_connected{"))?;
    Some(line.ends_with(" 1"))
}

fn stale_seconds(a: &Agent) -> f64 {
    a.metrics()
        .lines()
        .find_map(|l| l.strip_prefix("tend_world_stale_seconds "))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

#[test]
fn an_etcd_outage_never_stops_local_convergence_and_everything_resyncs() {
    if tls_pass() {
        return;
    }
    let Some(mut etcd) = Etcd::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let mut h1 = Agent::start(dir.path(), "h1", &etcd.url(), 5, &program(&out, "h1", "hello", true));
    let mut h2 = Agent::start(dir.path(), "h2", &etcd.url(), 5, &program(&out, "h2", "hello", true));
    let file = out.join("h2.txt");
    let before = line("hello", &["h1", "h2"]);
    assert!(wait_until(T, || read(&file) == before), "{:?}", read(&file));
    assert_eq!(connected(&h2), Some(true));

    etcd.kill();
    let down = Instant::now();
    assert!(wait_until(T, || connected(&h2) == Some(false)), "{}", h2.metrics());
    // Local drift is still repaired, from the last known values.
    std::fs::remove_file(&file).unwrap();
    assert!(wait_until(Duration::from_secs(5), || read(&file) == before), "{:?}", read(&file));
    // A change made during the outage waits for etcd.
    h1.edit(&program(&out, "h1", "during", true));
    std::thread::sleep(Duration::from_secs(60).saturating_sub(down.elapsed()));
    assert!(h1.alive() && h2.alive(), "an agent died during the outage:\n{}\n{}", h1.log(), h2.log());
    assert!(stale_seconds(&h2) > 50.0, "{}", h2.metrics());
    assert_eq!(read(&file), before, "stale values are kept");
    assert_eq!(h2.log().matches("lost etcd").count(), 1, "told once per transition:\n{}", h2.log());
    // `tend why` shows the values h2 last saw, and that they are stale.
    let why = Command::new(TEND)
        .args(["--hostname", "h2", "why"])
        .arg(h2.dir.join("main.mcl"))
        .arg(format!("file[{}]", file.display()))
        .args(["--seeds", &etcd.url(), "--prefix"])
        .arg(h2.dir.join("state"))
        .args(tls_of(&etcd.url(), "h2"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&why.stdout);
    assert!(why.status.success(), "{text}{}", String::from_utf8_lossy(&why.stderr));
    assert!(text.contains("key `greeting`: STALE (revision "), "{text}");
    assert!(text.contains("namespace `remote`: STALE ("), "{text}");
    // An agent that starts while etcd is away runs on the last values it saw.
    h2.kill9();
    std::fs::remove_file(&file).unwrap();
    let mut h2 = Agent::start(dir.path(), "h2", &etcd.url(), 5, &program(&out, "h2", "hello", true));
    assert!(wait_until(T, || read(&file) == before), "{:?}; log:\n{}", read(&file), h2.log());
    assert!(h2.alive());

    etcd.resume();
    let want = line("during", &["h1", "h2"]);
    assert!(wait_until(T, || read(&file) == want), "{:?}; h1's log:\n{}", read(&file), h1.log());
    assert_eq!(connected(&h2), Some(true));
    assert_eq!(stale_seconds(&h2), 0.0);
}

#[test]
fn an_etcd_restarted_empty_gets_every_agents_keys_back() {
    if tls_pass() {
        return;
    }
    let Some(mut etcd) = Etcd::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    // h1 also exports a resource: its export comes back too.
    let exporter = format!(
        "{}@@file \"note\" {{ path => \"/nonexistent/note\", content => \"x\", }}\n",
        program(&out, "h1", "hello", true)
    );
    let _h1 = Agent::start(dir.path(), "h1", &etcd.url(), 5, &exporter);
    let h2 = Agent::start(dir.path(), "h2", &etcd.url(), 5, &program(&out, "h2", "hello", true));
    let file = out.join("h2.txt");
    assert!(wait_until(T, || read(&file) == line("hello", &["h1", "h2"])), "{:?}", read(&file));
    assert!(wait_until(T, || etcd_keys(&etcd).iter().any(|(k, _)| k.contains("/exports/"))), "{:?}", etcd_keys(&etcd));
    let keys = etcd_keys(&etcd);
    etcd.wipe();
    assert!(!etcd.data_dir().exists());
    etcd.resume();
    let names = |keys: &[(String, String)]| {
        let mut k: Vec<String> = keys.iter().map(|(k, _)| k.clone()).collect();
        k.sort();
        k
    };
    assert!(
        wait_until(T, || names(&etcd_keys(&etcd)) == names(&keys)),
        "{:?} != {:?}; h2's log:\n{}",
        etcd_keys(&etcd),
        keys,
        h2.log()
    );
    assert!(wait_until(T, || read(&file) == line("hello", &["h1", "h2"])), "{:?}", read(&file));
}

#[test]
fn a_lost_quorum_marks_values_stale_and_everything_resyncs() {
    if tls_pass() {
        return;
    }
    let Some(mut members) = Etcd::cluster(3) else { return };
    let seeds = members.iter().map(Etcd::url).collect::<Vec<_>>().join(",");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let h1 = Agent::start(dir.path(), "h1", &seeds, 5, &program(&out, "h1", "hello", true));
    let h2 = Agent::start(dir.path(), "h2", &seeds, 5, &program(&out, "h2", "hello", true));
    let file = out.join("h2.txt");
    assert!(wait_until(T, || read(&file) == line("hello", &["h1", "h2"])), "{:?}", read(&file));

    members[1].kill();
    members[2].kill();
    // The last member has no leader: nothing it says is current.
    assert!(wait_until(T, || connected(&h2) == Some(false)), "{}", h2.metrics());
    assert!(wait_until(T, || stale_seconds(&h2) > 0.0), "{}", h2.metrics());
    std::fs::remove_file(&file).unwrap();
    assert!(wait_until(Duration::from_secs(5), || read(&file) == line("hello", &["h1", "h2"])), "{:?}", read(&file));

    members[1].resume();
    members[2].resume();
    assert!(wait_until(T, || connected(&h2) == Some(true)), "{}", h2.metrics());
    h1.edit(&program(&out, "h1", "after", true));
    assert!(wait_until(T, || read(&file) == line("after", &["h1", "h2"])), "{:?}; {}", read(&file), h2.log());
}

/// A program that volunteers for `xsched` (rr, max 2) and writes the choice to
/// `<out>/<host>.sched`.
fn scheduled(out: &Path) -> String {
    format!(
        r#"import "world"
import "fmt"
schedule "xsched" {{ strategy => "rr", max => 2, }}
$set = world.schedule("xsched")
file "{}/${{hostname}}.sched" {{ state => "exists", content => fmt.printf("%v\n", $set), }}
"#,
        out.display()
    )
}

fn set_of(hosts: &[&str]) -> String {
    let quoted: Vec<String> = hosts.iter().map(|h| format!("\"{h}\"")).collect();
    format!("[{}]\n", quoted.join(", "))
}

/// The agent that chooses the schedules: the oldest campaigner.
fn schedule_leader(etcd: &Etcd) -> String {
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", &etcd.url(), "get", "--prefix", "/_tend/schedule/leader/"])
        .args(tls_of(&etcd.url(), "root"))
        .args(["--sort-by=CREATE", "--order=ASCEND", "--limit=1", "--print-value-only"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The revision the choice of `xsched` was last written at.
fn result_revision(etcd: &Etcd) -> String {
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", &etcd.url(), "get", "/_tend/schedule/result/xsched", "-w", "fields"])
        .args(tls_of(&etcd.url(), "root"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines().find(|l| l.starts_with("\"ModRevision\"")).unwrap_or("").to_string()
}

#[test]
fn a_schedule_agrees_everywhere_fails_over_and_stays_put() {
    let Some(etcd) = start_etcd() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let ttl = 3;
    let mut agents: Vec<Agent> =
        ["h1", "h2", "h3"].iter().map(|h| Agent::start(dir.path(), h, &etcd.url(), ttl, &scheduled(&out))).collect();
    let file = |h: &str| out.join(format!("{h}.sched"));
    let agree = |hosts: &[&str], on: &[&str]| on.iter().all(|h| read(&file(h)) == set_of(hosts));
    // Two of the three, the same on every host (which two depends on who volunteered
    // first: round robin keeps the hosts it chose).
    let pairs = [["h1", "h2"], ["h1", "h3"], ["h2", "h3"]];
    let mut first: Option<[&str; 2]> = None;
    assert!(
        wait_until(T, || {
            first = pairs.iter().find(|p| agree(&p[..], &["h1", "h2", "h3"])).copied();
            first.is_some()
        }),
        "{:?} {:?} {:?}",
        read(&file("h1")),
        read(&file("h2")),
        read(&file("h3"))
    );
    let first = first.unwrap();

    // A chosen member that is not the leader dies: the live candidates take its place
    // within its lease and 2 s.
    let leader = schedule_leader(&etcd);
    let victim = if first[0] == leader { first[1] } else { first[0] };
    let at = ["h1", "h2", "h3"].iter().position(|h| *h == victim).unwrap();
    agents[at].kill9();
    let killed = Instant::now();
    let want: Vec<&str> = ["h1", "h2", "h3"].into_iter().filter(|h| *h != victim).collect();
    assert!(wait_until(Duration::from_secs(ttl as u64 + 2), || agree(&want, &want)), "{:?}", read(&file(want[0])));
    let failover = killed.elapsed();
    // Back again, it waits: round robin is sticky.
    agents[at] = Agent::start(dir.path(), victim, &etcd.url(), ttl, &scheduled(&out));
    assert!(wait_until(T, || read(&file(victim)) == set_of(&want)), "{:?}", read(&file(victim)));
    std::thread::sleep(Duration::from_secs(2));
    assert!(agree(&want, &["h1", "h2", "h3"]), "{:?}", read(&file("h3")));

    // The leader dies: another agent is elected within the lease and 2 s, and chooses.
    let leader = schedule_leader(&etcd);
    let at = ["h1", "h2", "h3"].iter().position(|h| *h == leader).unwrap();
    agents[at].kill9();
    let killed = Instant::now();
    let live: Vec<&str> = ["h1", "h2", "h3"].into_iter().filter(|h| *h != leader).collect();
    let mut want: Vec<&str> = if want.contains(&leader.as_str()) { live.clone() } else { want.clone() };
    want.sort();
    assert!(
        wait_until(Duration::from_secs(ttl as u64 + 2), || agree(&want, &live) && schedule_leader(&etcd) != leader),
        "{:?}, leader {}",
        read(&file(live[0])),
        schedule_leader(&etcd)
    );
    let reelected = killed.elapsed();
    assert!(failover < Duration::from_secs(ttl as u64 + 2) && reelected < Duration::from_secs(ttl as u64 + 2));

    // Steady: a minute without a single write of the choice.
    let revision = result_revision(&etcd);
    assert!(!revision.is_empty());
    std::thread::sleep(Duration::from_secs(60));
    assert_eq!(result_revision(&etcd), revision, "the choice was written again while nothing changed");
    assert!(agree(&want, &live));
}

#[test]
fn a_schedule_candidacy_ends_at_once_on_exit_or_withdraw_and_persists_when_asked() {
    let Some(etcd) = start_etcd() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let with = |body: &str| {
        format!(
            "import \"world\"\nimport \"fmt\"\n{body}\n$set = world.schedule(\"ns\")\nfile \"{}/${{hostname}}.sched\" {{ state => \"exists\", content => fmt.printf(\"%v\\n\", $set), }}\n",
            out.display()
        )
    };
    let observed = out.join("h3.sched");
    let _h3 = Agent::start(dir.path(), "h3", &etcd.url(), 3, &with(""));
    let mut h1 =
        Agent::start(dir.path(), "h1", &etcd.url(), 3, &with("schedule \"ns\" { max => 2, persist => true, }"));
    let h2 = Agent::start(dir.path(), "h2", &etcd.url(), 10, &with("schedule \"ns\" { max => 2, }"));
    assert!(wait_until(T, || read(&observed) == set_of(&["h1", "h2"])), "{:?}", read(&observed));
    // An agent that exits ends its candidacy at once (its lease would have kept it 10 s).
    let stopped = Instant::now();
    drop(h2);
    assert!(wait_until(Duration::from_secs(5), || read(&observed) == set_of(&["h1"])), "{:?}", read(&observed));
    assert!(stopped.elapsed() < Duration::from_secs(8));
    // A persistent candidacy outlives its host.
    h1.kill9();
    std::thread::sleep(Duration::from_secs(3 + 3));
    assert_eq!(read(&observed), set_of(&["h1"]), "persist keeps a dead host");
    // Until the host comes back and withdraws.
    let _h1 = Agent::start(dir.path(), "h1", &etcd.url(), 3, &with("schedule \"ns\" { withdraw => true, }"));
    assert!(wait_until(T, || read(&observed) == set_of(&[])), "{:?}", read(&observed));
}

#[test]
fn the_bundled_cluster_examples_build_a_graph() {
    if tls_pass() {
        return;
    }
    // On one host (the local world): they compile, evaluate and validate.
    for example in ["examples/cluster-kv", "examples/cluster-schedule", "examples/cluster-export"] {
        let out = Command::new(TEND).args(["--hostname", "h1", "graph", example]).output().unwrap();
        assert!(out.status.success(), "{example}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

/// `tend deploy` of `program` (written to `<dir>/deploy-<tag>/main.mcl`, with a data file
/// `files/data.txt` holding `tag`), with extra arguments.
fn deploy(dir: &Path, etcd: &Etcd, tag: &str, program: &str, extra: &[&str]) -> std::process::Output {
    let src = dir.join(format!("deploy-{tag}"));
    std::fs::create_dir_all(src.join("files")).unwrap();
    std::fs::write(src.join("main.mcl"), program).unwrap();
    std::fs::write(src.join("files/data.txt"), tag).unwrap();
    let operator = if extra.contains(&"--cacert") { vec![] } else { tls_of(&etcd.url(), "op") };
    Command::new(TEND)
        .arg("deploy")
        .arg(&src)
        .args(["--seeds", &etcd.url()])
        .args(operator)
        .args(extra)
        .output()
        .unwrap()
}

/// The id `tend deploy` printed.
fn deployed_id(out: &std::process::Output) -> u64 {
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    text.split_whitespace().nth(1).and_then(|w| w.trim_end_matches(':').parse().ok()).expect("deployed N:")
}

/// A program that writes `<out>/<host>` with the deploy's data file and the host name.
fn deployed_program(out: &Path, extra: &str) -> String {
    format!(
        "import \"deploy\"\n{extra}\nfile \"{}/${{hostname}}\" {{\n\tstate => \"exists\",\n\tcontent => deploy.readfile(\"/files/data.txt\") + \" on ${{hostname}}\",\n}}\n",
        out.display()
    )
}

/// `tend deploy PATH` with the operator's TLS flags and `extra` arguments.
fn deploy_path(etcd: &Etcd, path: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(TEND)
        .arg("deploy")
        .arg(path)
        .args(["--seeds", &etcd.url()])
        .args(tls_of(&etcd.url(), "op"))
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn a_deploy_carries_its_modules_and_a_yaml_graph_deploys_too() {
    let Some(etcd) = start_etcd() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    // A module in the deployer's module path only: agents have none and never fetch.
    let modules = dir.path().join("modules");
    let web = modules.join("example.com/ops/mgmt-web");
    std::fs::create_dir_all(web.join("files")).unwrap();
    std::fs::write(web.join("metadata.yaml"), "main: \"web.mcl\"\n").unwrap();
    std::fs::write(web.join("web.mcl"), "$greeting = \"hello from web\"\n").unwrap();
    std::fs::write(web.join("files/extra.txt"), "data\n").unwrap();
    std::fs::create_dir_all(web.join(".git")).unwrap();
    std::fs::write(web.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("main.mcl"),
        format!(
            "import \"git://example.com/ops/mgmt-web/\"\nfile \"{}/${{hostname}}\" {{\n\tstate => \"exists\",\n\tcontent => \"${{web.greeting}}\",\n}}\n",
            out.display()
        ),
    )
    .unwrap();
    let agent = Agent::follow(dir.path(), "h1", &etcd.url());
    let done = deploy_path(&etcd, &src.join("main.mcl"), &["--module-path", modules.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&done.stdout).to_string();
    assert!(done.status.success(), "{said}{}", String::from_utf8_lossy(&done.stderr));
    // The entry, the module's metadata, code and files; not its .git.
    assert!(said.contains("4 file(s)"), "{said}");
    assert!(wait_until(T, || read(&out.join("h1")) == "hello from web"), "{}", agent.log());
    let placed = agent.dir.join("state/deploys/1/.modules/example.com/ops/mgmt-web");
    assert!(placed.join("files/extra.txt").is_file() && !placed.join(".git").exists(), "{}", placed.display());

    // A YAML graph deploys like a program and runs on every agent.
    std::fs::write(
        src.join("graph.yaml"),
        format!("graph: g\nresources:\n  file:\n  - name: f\n    path: {}/yaml\n    content: from yaml\n    state: exists\n", out.display()),
    )
    .unwrap();
    let done = deploy_path(&etcd, &src.join("graph.yaml"), &[]);
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    assert!(wait_until(T, || read(&out.join("yaml")) == "from yaml"), "{}", agent.log());
    // A malformed one is not deployed.
    std::fs::write(src.join("bad.yaml"), "graph: g\nresources:\n  flie:\n  - name: f\n").unwrap();
    let refused = deploy_path(&etcd, &src.join("bad.yaml"), &[]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stdout).contains("unknown resource kind `flie`"), "{refused:?}");
}

#[test]
fn deploys_reach_every_host_in_order_and_a_broken_one_keeps_the_old_program() {
    let Some(etcd) = start_etcd() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let agents: Vec<Agent> = ["h1", "h2", "h3"].iter().map(|h| Agent::follow(dir.path(), h, &etcd.url())).collect();
    let shows =
        |tag: &str, hosts: &[&Agent]| hosts.iter().all(|a| read(&out.join(&a.name)) == format!("{tag} on {}", a.name));
    let all: Vec<&Agent> = agents.iter().collect();
    let logs = || all.iter().map(|a| format!("{}:\n{}", a.name, a.log())).collect::<String>();

    // Each host runs the deploy with its own host name.
    assert_eq!(deployed_id(&deploy(dir.path(), &etcd, "one", &deployed_program(&out, ""), &[])), 1);
    assert!(wait_until(T, || shows("one", &all)), "{}", logs());
    // Deploy 2 replaces deploy 1 everywhere.
    assert_eq!(deployed_id(&deploy(dir.path(), &etcd, "two", &deployed_program(&out, ""), &["--parent", "1"])), 2);
    assert!(wait_until(T, || shows("two", &all)), "{}", logs());
    // A deploy made from a stale view is refused, unless forced.
    let stale = deploy(dir.path(), &etcd, "stale", &deployed_program(&out, ""), &["--parent", "1"]);
    assert_eq!(stale.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&stale.stderr).contains("the latest is 2"), "{stale:?}");
    // A program that does not compile is not deployed.
    let bad = deploy(dir.path(), &etcd, "bad", "file \"/x\" { nosuchfield => 1, }\n", &[]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("does not exist in `file` resource"), "{bad:?}");

    // Two concurrent deploys both land, one after the other.
    let spawn = |tag: &str| {
        let src = dir.path().join(format!("deploy-{tag}"));
        std::fs::create_dir_all(src.join("files")).unwrap();
        std::fs::write(src.join("main.mcl"), deployed_program(&out, "")).unwrap();
        std::fs::write(src.join("files/data.txt"), tag).unwrap();
        Command::new(TEND)
            .arg("deploy")
            .arg(&src)
            .args(["--seeds", &etcd.url()])
            .args(tls_of(&etcd.url(), "op"))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn("three"), spawn("four"));
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let mut ids = [deployed_id(&a), deployed_id(&b)];
    let last = if ids[0] > ids[1] { "three" } else { "four" };
    ids.sort();
    assert_eq!(ids, [3, 4]);
    assert!(wait_until(T, || shows(last, &all)), "{}", logs());

    // A deploy that fails on h2 only (its dataflow panics there) leaves h2 on deploy 4,
    // still reactive, and says so; the others run it.
    let broken = deployed_program(&out, "panic($hostname == \"h2\")");
    assert_eq!(deployed_id(&deploy(dir.path(), &etcd, "five", &broken, &[])), 5);
    assert!(wait_until(T, || shows("five", &[&agents[0], &agents[2]])), "{}", logs());
    assert!(wait_until(T, || agents[1].log().contains("deploy 5 fails on this host")), "{}", agents[1].log());
    assert_eq!(read(&out.join("h2")), format!("{last} on h2"));
    std::fs::remove_file(out.join("h2")).unwrap();
    assert!(wait_until(T, || read(&out.join("h2")) == format!("{last} on h2")), "drift still repaired");
    // And the next good deploy reaches it.
    assert_eq!(deployed_id(&deploy(dir.path(), &etcd, "six", &deployed_program(&out, ""), &[])), 6);
    assert!(wait_until(T, || shows("six", &all)), "{}", logs());

    // An agent restarted while etcd is away runs the last deploy it saw, from its disk.
    let mut agents = agents;
    let mut etcd = etcd;
    agents[0].kill9();
    etcd.kill();
    std::fs::remove_file(out.join("h1")).unwrap();
    agents[0] = Agent::follow(dir.path(), "h1", &etcd.url());
    assert!(wait_until(T, || read(&out.join("h1")) == "six on h1"), "{}", agents[0].log());
}

#[test]
fn old_deploys_are_collected_so_etcd_stays_bounded() {
    let Some(etcd) = start_etcd() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let h1 = Agent::follow(dir.path(), "h1", &etcd.url());
    let deploy_keys = || etcd_keys(&etcd).into_iter().filter(|(k, _)| k.starts_with("/_tend/deploy/")).count();
    let mut most = 0;
    for n in 1..=200u64 {
        // Each deploy has a file of its own (the data) and one it shares (the program).
        let tag = format!("d{n}");
        let done = deploy(dir.path(), &etcd, &tag, &deployed_program(&out, ""), &["--keep", "5"]);
        assert_eq!(deployed_id(&done), n);
        std::fs::remove_dir_all(dir.path().join(format!("deploy-{tag}"))).unwrap();
        if n % 20 == 0 {
            most = most.max(deploy_keys());
        }
    }
    // `latest`, 5 records, their 5 data files and the one shared program file.
    assert_eq!(deploy_keys(), 12, "{:?}", etcd_keys(&etcd));
    assert!(most <= 12, "at most {most} keys");
    assert!(wait_until(T, || read(&out.join("h1")) == "d200 on h1"), "{}", h1.log());
    let kept = std::fs::read_dir(h1.dir.join("state/deploys")).unwrap().flatten().filter(|e| e.path().is_dir()).count();
    assert!(kept <= 5, "{kept} deploys kept on the host");
}

/// `tend status --seeds URL --format json`.
fn status(etcd: &Etcd) -> serde_json::Value {
    let out = Command::new(TEND)
        .args(["status", "--seeds", &etcd.url(), "--format", "json"])
        .args(tls_of(&etcd.url(), "op"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn agent_status<'a>(status: &'a serde_json::Value, host: &str) -> &'a serde_json::Value {
    status["agents"].as_array().unwrap().iter().find(|a| a["host"] == host).unwrap_or(&serde_json::Value::Null)
}

#[test]
fn the_fleet_status_shows_each_agent_and_a_converged_exit_waits_for_all() {
    let Some(etcd) = start_etcd() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let h1 = Agent::follow(dir.path(), "h1", &etcd.url());
    let h2 = Agent::follow(dir.path(), "h2", &etcd.url());
    // h3 exits once the whole fleet runs the latest deploy, converged.
    let mut h3 = Command::new(TEND)
        .args(["--hostname", "h3", "run", "--prefix"])
        .arg(dir.path().join("h3"))
        .args(["--seeds", &etcd.url(), "--converged-timeout", "1"])
        .args(tls_of(&etcd.url(), "h3"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();

    // Deploy 1 fails a resource on h2: the fleet has not converged.
    let failing =
        deployed_program(&out, "if $hostname == \"h2\" {\n\texec \"fail\" {\n\t\tcmd => \"/bin/false\",\n\t}\n}");
    assert_eq!(deployed_id(&deploy(dir.path(), &etcd, "one", &failing, &[])), 1);
    assert!(
        wait_until(T, || agent_status(&status(&etcd), "h2")["failed"].get("exec[fail]").is_some()),
        "{:#}\n{}",
        status(&etcd),
        h2.log()
    );
    let s = status(&etcd);
    assert_eq!(s["latest_deploy"], 1);
    assert_eq!(s["fleet_converged"], false);
    assert!(wait_until(T, || agent_status(&status(&etcd), "h1")["converged"] == true), "{:#}", status(&etcd));
    std::thread::sleep(Duration::from_secs(3));
    assert!(h3.try_wait().unwrap().is_none(), "h3 exited while h2 failed");

    // Deploy 2 fails on h2 only (its dataflow panics there): h2 stays on deploy 1 and says why.
    let broken = deployed_program(&out, "panic($hostname == \"h2\")");
    assert_eq!(deployed_id(&deploy(dir.path(), &etcd, "two", &broken, &[])), 2);
    assert!(
        wait_until(T, || agent_status(&status(&etcd), "h2")["broken"]["deploy"] == 2),
        "{:#}\n{}",
        status(&etcd),
        h2.log()
    );
    let h2s = agent_status(&status(&etcd), "h2").clone();
    assert_eq!(h2s["deploy"], 1);
    assert!(h2s["broken"]["error"].as_str().unwrap().contains("bool panic occurred"), "{h2s:#}");
    let text =
        Command::new(TEND).args(["status", "--seeds", &etcd.url()]).args(tls_of(&etcd.url(), "op")).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("latest deploy: 2") && text.contains("deploy 2 failed here"), "{text}");
    assert!(h3.try_wait().unwrap().is_none(), "h3 exited while h2 ran an old deploy");

    // Deploy 3 works everywhere: h3 exits, successfully.
    assert_eq!(deployed_id(&deploy(dir.path(), &etcd, "three", &deployed_program(&out, ""), &[])), 3);
    let deadline = Instant::now() + T;
    let code = loop {
        if let Some(code) = h3.try_wait().unwrap() {
            break Some(code);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = h3.kill();
    assert_eq!(code.and_then(|c| c.code()), Some(0), "{:#}\n{}\n{}", status(&etcd), h1.log(), h2.log());
    let s = status(&etcd);
    assert_eq!(agent_status(&s, "h1")["deploy"], 3);
    assert_eq!(agent_status(&s, "h2")["broken"], serde_json::Value::Null);
}

/// The SHA-256 of `bytes` in hex, as `sha256sum` prints it.
fn sha256(bytes: &[u8]) -> String {
    let mut child = Command::new("sha256sum").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let out = String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap();
    out.split_whitespace().next().expect("a hash").to_string()
}

/// `etcdctl` against `etcd`, with `value` (when given) on its stdin; its stdout.
fn etcdctl(etcd: &Etcd, args: &[&str], value: Option<&[u8]>) -> Vec<u8> {
    let mut child = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", &etcd.url()])
        .args(tls_of(&etcd.url(), "root"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("etcdctl runs");
    child.stdin.take().unwrap().write_all(value.unwrap_or_default()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "etcdctl {args:?}");
    out.stdout
}

/// Issue 45, defect 3: a deploy of a program nested 12,000 includes deep overflowed the
/// stack of every agent that followed deploys, again at each restart. `tend deploy` refuses
/// to store it; written to etcd by hand (an older client, a hostile one), each agent
/// refuses it as any broken deploy, keeps running and repairing its old program.
#[test]
fn a_deploy_nested_too_deeply_is_refused_by_the_agent_which_keeps_its_program() {
    let Some(etcd) = start_etcd() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let mut agent = Agent::follow(dir.path(), "h1", &etcd.url());
    assert_eq!(deployed_id(&deploy(dir.path(), &etcd, "one", &deployed_program(&out, ""), &[])), 1);
    assert!(wait_until(T, || read(&out.join("h1")) == "one on h1"), "{}", agent.log());

    let deep = testkit::programs::include_chain(12_000);
    let refused = deploy(dir.path(), &etcd, "deep", &deep, &[]);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("nests too deeply"), "{refused:?}");

    // Deploy 2 written by hand: deploy 1's record with the deep program as its entry.
    let record = etcdctl(&etcd, &["get", "--print-value-only", "/_tend/deploy/id/00000000000000000001"], None);
    let mut record: serde_json::Value = serde_json::from_slice(&record).expect("a deploy record");
    let hash = sha256(deep.as_bytes());
    etcdctl(&etcd, &["put", &format!("/_tend/deploy/blob/{hash}")], Some(deep.as_bytes()));
    let entry = record["entry"].as_str().unwrap().to_string();
    record["files"][&entry] = serde_json::Value::String(hash);
    record["id"] = 2.into();
    record["parent"] = 1.into();
    etcdctl(&etcd, &["put", "/_tend/deploy/id/00000000000000000002"], Some(record.to_string().as_bytes()));
    etcdctl(&etcd, &["put", "/_tend/deploy/latest", "2"], None);

    assert!(wait_until(T, || agent.log().contains("deploy 2 does not compile on this host")), "{}", agent.log());
    assert!(agent.alive(), "the agent is still running\n{}", agent.log());
    std::fs::remove_file(out.join("h1")).unwrap();
    assert!(wait_until(T, || read(&out.join("h1")) == "one on h1"), "drift still repaired\n{}", agent.log());
    // A restart reads the deploys again: still refused, the old program still runs.
    agent.kill9();
    std::fs::remove_file(out.join("h1")).unwrap();
    let mut agent = Agent::follow(dir.path(), "h1", &etcd.url());
    assert!(wait_until(T, || read(&out.join("h1")) == "one on h1"), "{}", agent.log());
    assert!(agent.alive(), "{}", agent.log());
}

/// gRPC's balancer sends requests to a URL where nothing listens as if it were up: a dead
/// seed among several must not keep an agent (or `tend status`) out.
#[test]
fn a_dead_seed_among_several_does_not_keep_an_agent_out() {
    let Some(etcd) = start_etcd() else { return };
    let url = etcd.url();
    let scheme = if url.starts_with("https://") { "https" } else { "http" };
    let seeds = format!("{scheme}://127.0.0.1:{},{url}", free_port());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let agent = Agent::start(dir.path(), "h1", &seeds, 5, &program(&out, "h1", "hello", true));
    let file = out.join("h1.txt");
    let want = line("hello", &["h1"]);
    assert!(wait_until(T, || read(&file) == want), "{:?}; log:\n{}", read(&file), agent.log());
    let started = Instant::now();
    let status = Command::new(TEND).args(["status", "--seeds", &seeds]).args(tls_of(&url, "op")).output().unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    assert!(started.elapsed() < Duration::from_secs(4), "status took {:?}", started.elapsed());
}

/// Issue 45, defect 7: a garbage value at a host's claim key (1.5 MB, bound to no lease)
/// locked that host out for good, with advice that did not help and the whole value in the
/// message. It is taken over with a warning that quotes a short prefix, and the agent runs.
#[test]
fn a_forged_claim_is_taken_over() {
    let Some(etcd) = start_etcd() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let garbage = "g".repeat(1_400_000);
    etcdctl(&etcd, &["put", "/_tend/hosts/h1"], Some(garbage.as_bytes()));
    let program =
        format!("file \"{}/h1\" {{\n\tstate => \"exists\",\n\tcontent => \"claimed on h1\",\n}}\n", out.display());
    let agent = Agent::start(dir.path(), "h1", &etcd.url(), 6, &program);
    assert!(
        wait_until(T, || read(&out.join("h1")) == "claimed on h1"),
        "{}",
        agent.log().chars().take(2000).collect::<String>()
    );
    let log = agent.log();
    assert!(log.contains("taking it over"), "{}", log.chars().take(2000).collect::<String>());
    assert!(log.len() < 100_000, "the value is not echoed: {} bytes of log", log.len());
    let claim = etcd_keys(&etcd).into_iter().find(|(k, _)| k == "/_tend/hosts/h1").map(|(_, v)| v).unwrap_or_default();
    assert!(claim.len() < 32 && !claim.starts_with('g'), "the agent's own claim: {claim:?}");
}

/// Issue 45, defect 7: an export written by a host with no live session (by hand, or left
/// by a forger) was collected. h1's genuine record, put back unbound after h1 died, is
/// ignored with a warning: the collector applies the rest of its program, not the export.
#[test]
fn a_forged_export_is_not_collected() {
    let Some(etcd) = start_etcd() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let key = "/_tend/exports/h1/%2a/file/shared";
    let mut h1 = Agent::start(dir.path(), "h1", &etcd.url(), 3, &exporter(&out, "v1", ""));
    assert!(wait_until(T, || exported_keys(&etcd).iter().any(|k| k == key)), "{}", h1.log());
    let record = etcdctl(&etcd, &["get", "--print-value-only", key], None);
    h1.kill9();
    assert!(wait_until(T, || exported_keys(&etcd).is_empty()), "h1's exports went with its session");
    etcdctl(&etcd, &["put", key], Some(record.trim_ascii_end()));
    let h2 = Agent::start(dir.path(), "h2", &etcd.url(), 6, &collector(&out, "h2", ""));
    assert!(wait_until(T, || read(&out.join("h2-local")) == "v1"), "h2 runs\n{}", h2.log());
    std::thread::sleep(Duration::from_secs(1));
    assert!(!out.join("h2-shared").exists(), "the forged export is not collected\n{}", h2.log());
    assert!(h2.log().contains("an export bound to no host's session is ignored"), "{}", h2.log());
}

// ---- TLS (issue 47) ----

/// `tend pki` run by the test: a CA in `dir` and certificates for etcd (127.0.0.1), the
/// hosts and an operator.
fn make_pki(dir: &Path, names: &[&str]) -> PathBuf {
    let ok = |out: std::process::Output| {
        assert!(out.status.success(), "tend pki: {}", String::from_utf8_lossy(&out.stderr));
    };
    ok(Command::new(TEND).args(["pki", "init"]).arg(dir).output().unwrap());
    ok(Command::new(TEND).args(["pki", "issue"]).arg(dir).args(["etcd", "--ip", "127.0.0.1"]).output().unwrap());
    for name in names {
        ok(Command::new(TEND).args(["pki", "issue"]).arg(dir).arg(name).output().unwrap());
    }
    dir.to_path_buf()
}

fn tls_etcd(pki: &Path) -> Option<Etcd> {
    Etcd::start_tls(EtcdTls::of(pki))
}

/// The PKI of the whole suite when it runs over TLS (`TEND_CLUSTER_TLS=1`, as `.ci/run`
/// does on a second pass): certificates for etcd, its `root`, the hosts h1-h3 and an
/// operator `op`, made once per run.
fn suite_pki() -> Option<&'static Path> {
    static PKI: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    PKI.get_or_init(|| {
        std::env::var_os("TEND_CLUSTER_TLS").filter(|v| v == "1")?;
        let dir = tempfile::tempdir().unwrap().keep();
        Some(make_pki(&dir, &["root", "op", "h1", "h2", "h3"]))
    })
    .as_deref()
}

/// Whether this is the suite's TLS pass. The tests that start their etcd themselves
/// (plaintext for an outage or a lost quorum, TLS with a PKI of their own, or none) run
/// the same in both passes, so they return at once in the second.
fn tls_pass() -> bool {
    std::env::var_os("TEND_CLUSTER_TLS").is_some_and(|v| v == "1")
}

/// The etcd of a test: plaintext, or with `TEND_CLUSTER_TLS=1` over mutual TLS with
/// etcd's authentication on and every host confined to its own keys (`tend cluster
/// grant h1 h2 h3 --operator op`): the whole suite then runs as a locked-down fleet would.
fn start_etcd() -> Option<Etcd> {
    let Some(pki) = suite_pki() else { return Etcd::start() };
    let etcd = tls_etcd(pki)?;
    let granted = cluster_cmd(&etcd, pki, "root", &["grant", "h1", "h2", "h3", "--operator", "op"]);
    assert!(granted.status.success(), "{}", String::from_utf8_lossy(&granted.stderr));
    Some(etcd)
}

/// The TLS flags of client `name` (a host, `op` or `root`) for `url`: none for plaintext.
fn tls_of(url: &str, name: &str) -> Vec<String> {
    match suite_pki() {
        Some(pki) if url.starts_with("https://") => tls_flags(url, pki, &pki.join("ca.crt"), name).split_off(2),
        _ => Vec::new(),
    }
}

/// The cluster flags of a client holding `NAME.crt` from `pki` (no client certificate
/// when `name` is empty).
fn tls_flags(etcd_url: &str, pki: &Path, ca: &Path, name: &str) -> Vec<String> {
    let mut flags = vec!["--seeds".to_string(), etcd_url.to_string(), "--cacert".into(), ca.display().to_string()];
    if !name.is_empty() {
        flags.extend(["--cert".into(), pki.join(format!("{name}.crt")).display().to_string()]);
        flags.extend(["--key".into(), pki.join(format!("{name}.key")).display().to_string()]);
    }
    flags
}

/// `tend status` with `flags`: its exit status and its stderr, and how long it took.
fn status_with(flags: &[String]) -> (bool, String, Duration) {
    let start = Instant::now();
    let out = Command::new(TEND).arg("status").args(flags).env("NO_COLOR", "1").output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned(), start.elapsed())
}

#[test]
fn three_agents_exchange_values_over_tls_with_certificates_from_tend_pki() {
    if tls_pass() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(&dir.path().join("pki"), &["h1", "h2", "h3"]);
    let Some(etcd) = tls_etcd(&pki) else { return };
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let ca = pki.join("ca.crt");
    let agents: Vec<Agent> = ["h1", "h2", "h3"]
        .iter()
        .map(|h| {
            Agent::start_with(dir.path(), h, &tls_flags(&etcd.url(), &pki, &ca, h), 5, &program(&out, h, "hello", true))
        })
        .collect();
    let want = line("hello", &["h1", "h2", "h3"]);
    for a in &agents {
        let file = out.join(format!("{}.txt", a.name));
        assert!(wait_until(T, || read(&file) == want), "{}: {:?}; log:\n{}", a.name, read(&file), a.log());
    }
    let (ok, err, _) = status_with(&tls_flags(&etcd.url(), &pki, &ca, "h1"));
    assert!(ok, "{err}");
    assert!(etcd.url().starts_with("https://"));
}

#[test]
fn a_client_etcd_does_not_trust_or_that_does_not_trust_etcd_is_refused_in_one_clear_line() {
    if tls_pass() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(&dir.path().join("pki"), &["op"]);
    let other = make_pki(&dir.path().join("other"), &["op"]);
    let Some(etcd) = tls_etcd(&pki) else { return };
    let url = etcd.url();
    let ca = pki.join("ca.crt");
    let (ok, err, _) = status_with(&tls_flags(&url, &pki, &ca, "op"));
    assert!(ok, "the right certificate is accepted: {err}");
    let refused = |flags: Vec<String>, says: &str| {
        let (ok, err, took) = status_with(&flags);
        assert!(!ok, "refused: {flags:?}");
        assert!(err.contains(says), "{flags:?}: {err:?} should say {says:?}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
        assert!(took < Duration::from_secs(10), "no hang: {took:?}");
        assert!(!err.contains("PRIVATE KEY"), "{err}");
    };
    // etcd's certificate checked against another CA.
    refused(tls_flags(&url, &pki, &other.join("ca.crt"), "op"), "is not signed by the CA in --cacert");
    // No client certificate, and one from another CA.
    refused(tls_flags(&url, &pki, &ca, ""), "client certificate");
    refused(tls_flags(&url, &other, &ca, "op"), "refused the client certificate");
    // A name the server's certificate does not hold (it names 127.0.0.1 only).
    let by_name = url.replace("127.0.0.1", "localhost");
    refused(tls_flags(&by_name, &pki, &ca, "op"), "does not name the host");
    // An expired client certificate.
    let expired = world::pki::Request { name: "old".into(), days: -1, ..Default::default() };
    world::pki::issue(&pki, &expired, false).unwrap();
    refused(tls_flags(&url, &pki, &ca, "old"), "refused the client certificate");
    // Plaintext to a TLS member: it drops the connection, which reads as an outage (never a hang).
    let (ok, err, took) = status_with(&["--seeds".into(), url.replace("https://", "http://")]);
    assert!(!ok && err.contains("does not answer") && took < Duration::from_secs(15), "{err} {took:?}");
    // TLS flags with http:// seeds.
    let mut flags = tls_flags(&url, &pki, &ca, "op");
    flags[1] = url.replace("https://", "http://");
    refused(flags, "are for https:// seeds");
}

#[test]
fn https_to_a_plaintext_etcd_says_it_does_not_speak_tls() {
    if tls_pass() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(&dir.path().join("pki"), &["op"]);
    let Some(etcd) = Etcd::start() else { return };
    let url = etcd.url().replace("http://", "https://");
    let (ok, err, took) = status_with(&tls_flags(&url, &pki, &pki.join("ca.crt"), "op"));
    assert!(!ok);
    assert!(err.contains("does not speak TLS"), "{err}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn certificates_made_by_openssl_work_too() {
    if tls_pass() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sh = |script: &str| {
        let out = Command::new("sh").arg("-c").arg(script).current_dir(d).output().unwrap();
        assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
    };
    sh(
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=ops-ca \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null",
    );
    for (name, san) in [("etcd", "IP:127.0.0.1"), ("h1", "DNS:h1")] {
        sh(&format!(
            "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout {name}.key -out {name}.csr -subj /CN={name} 2>/dev/null && \
             printf 'subjectAltName={san}\\nextendedKeyUsage=serverAuth,clientAuth\\n' > {name}.ext && \
             openssl x509 -req -in {name}.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -out {name}.crt -extfile {name}.ext 2>/dev/null"
        ));
    }
    let Some(etcd) = Etcd::start_tls(EtcdTls::of(d)) else {
        return;
    };
    let (ok, err, _) = status_with(&tls_flags(&etcd.url(), d, &d.join("ca.crt"), "h1"));
    assert!(ok, "{err}");
}

#[test]
fn a_running_agent_whose_etcd_turns_untrusted_converges_locally_says_why_once_and_rejoins() {
    if tls_pass() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(&dir.path().join("pki"), &["h1"]);
    let other = make_pki(&dir.path().join("other"), &[]);
    let Some(mut etcd) = tls_etcd(&pki) else { return };
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let flags = tls_flags(&etcd.url(), &pki, &pki.join("ca.crt"), "h1");
    let a = Agent::start_with(dir.path(), "h1", &flags, 5, &program(&out, "h1", "hello", false));
    let file = out.join("h1.txt");
    let want = line("hello", &[]);
    assert!(wait_until(T, || read(&file) == want), "{:?}; log:\n{}", read(&file), a.log());
    // etcd comes back with a certificate of another CA (and trusting only that CA).
    let swapped = EtcdTls::of(&other);
    etcd.restart_tls(swapped);
    let says = "is not signed by the CA in --cacert";
    assert!(wait_until(T, || a.log().contains(says)), "the agent says why; log:\n{}", a.log());
    // Drift is still repaired, from the values last seen.
    std::fs::remove_file(&file).unwrap();
    assert!(wait_until(T, || read(&file) == want), "repaired while refused: {:?}; log:\n{}", read(&file), a.log());
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(a.log().matches(says).count(), 1, "said once, not once per retry; log:\n{}", a.log());
    // The right certificate again: the agent rejoins.
    etcd.restart_tls(EtcdTls::of(&pki));
    assert!(wait_until(T, || connected(&a) == Some(true)), "rejoined; log:\n{}", a.log());
}

/// etcd's key of deploy `id`'s record.
fn deploy_record_key(id: u64) -> String {
    format!("/_tend/deploy/id/{id:020}")
}

#[test]
fn agents_that_trust_a_key_run_only_what_it_signed_and_never_an_older_deploy() {
    let Some(etcd) = start_etcd() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(&dir.path().join("pki"), &[]);
    let other = make_pki(&dir.path().join("other"), &[]);
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let trust = ["--trust-deploys".to_string(), pki.join("deploy.pub").display().to_string()];
    let agents: Vec<Agent> =
        ["h1", "h2"].iter().map(|h| Agent::follow_with(dir.path(), h, &etcd.url(), &trust)).collect();
    let logs = || agents.iter().map(|a| format!("{}:\n{}", a.name, a.log())).collect::<String>();
    let shows = |tag: &str| agents.iter().all(|a| read(&out.join(&a.name)) == format!("{tag} on {}", a.name));
    let key = pki.join("deploy.key").display().to_string();
    let program = deployed_program(&out, "");

    let signed = deploy(dir.path(), &etcd, "one", &program, &["--sign", &key]);
    assert!(String::from_utf8_lossy(&signed.stdout).contains("signed by key"), "{signed:?}");
    assert_eq!(deployed_id(&signed), 1);
    assert!(wait_until(T, || shows("one")), "{}", logs());
    assert_eq!(deployed_id(&deploy(dir.path(), &etcd, "two", &program, &["--sign", &key])), 2);
    assert!(wait_until(T, || shows("two")), "{}", logs());

    // Each refusal: every agent says why in its status, keeps deploy 2, writes nothing of it.
    let refused = |id: u64, says: &str| {
        let said = || {
            let s = status(&etcd);
            agents.iter().all(|a| {
                let r = &agent_status(&s, &a.name)["refused"];
                r["deploy"] == id && r["reason"].as_str().is_some_and(|w| w.contains(says))
            })
        };
        assert!(wait_until(T, said), "deploy {id} refused for {says:?}: {:#}\n{}", status(&etcd), logs());
        for a in &agents {
            assert_eq!(read(&out.join(&a.name)), format!("two on {}", a.name));
            // (Deploy 1 ran here before it came back as a rollback.)
            if id > 2 {
                assert!(!a.dir.join(format!("state/deploys/{id}")).exists(), "nothing of deploy {id} is written");
            }
            assert_eq!(agent_status(&status(&etcd), &a.name)["deploy"], 2);
        }
    };
    assert_eq!(deployed_id(&deploy(dir.path(), &etcd, "three", &program, &[])), 3);
    refused(3, "it carries no signature");
    let text =
        Command::new(TEND).args(["status", "--seeds", &etcd.url()]).args(tls_of(&etcd.url(), "op")).output().unwrap();
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("refused deploy 3: not signed by a trusted key"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
    let stranger = other.join("deploy.key").display().to_string();
    assert_eq!(deployed_id(&deploy(dir.path(), &etcd, "four", &program, &["--sign", &stranger])), 4);
    refused(4, "which this agent does not trust");

    // Someone who owns etcd changes one byte of a signed deploy's file (a blob of its own,
    // the record pointing at it) and lands it as deploy 5.
    let record =
        String::from_utf8(etcdctl(&etcd, &["get", "--print-value-only", &deploy_record_key(2)], None)).unwrap();
    let forged = b"twO";
    etcdctl(&etcd, &["put", &format!("/_tend/deploy/blob/{}", sha256(forged))], Some(forged));
    let changed = record.trim_end().replace(&sha256(b"two"), &sha256(forged));
    assert_ne!(changed, record.trim_end());
    etcdctl(&etcd, &["put", &deploy_record_key(5)], Some(changed.as_bytes()));
    etcdctl(&etcd, &["put", "/_tend/deploy/latest"], Some(b"5"));
    refused(5, "changed after it was signed");
    // A signed deploy replayed under a newer id.
    etcdctl(&etcd, &["put", &deploy_record_key(6)], Some(record.trim_end().as_bytes()));
    etcdctl(&etcd, &["put", "/_tend/deploy/latest"], Some(b"6"));
    refused(6, "changed after it was signed");
    // `latest` set back to deploy 1, signed and whole: older than what runs.
    etcdctl(&etcd, &["put", "/_tend/deploy/latest"], Some(b"1"));
    refused(1, "older than deploy 2, which ran here");

    // The next signed deploy runs everywhere, and clears the refusal.
    etcdctl(&etcd, &["put", "/_tend/deploy/latest"], Some(b"6"));
    assert_eq!(deployed_id(&deploy(dir.path(), &etcd, "seven", &program, &["--sign", &key])), 7);
    assert!(wait_until(T, || shows("seven")), "{}", logs());
    assert!(wait_until(T, || agent_status(&status(&etcd), "h1")["refused"].is_null()), "{:#}", status(&etcd));
}

// ---- Hosts confined to their own keys (issue 47) ----

/// `etcdctl` as the holder of `NAME.crt` from `pki`: whether it succeeded, and what it said.
fn etcdctl_as(etcd: &Etcd, pki: &Path, name: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", &etcd.url()])
        .arg(format!("--cacert={}", pki.join("ca.crt").display()))
        .arg(format!("--cert={}", pki.join(format!("{name}.crt")).display()))
        .arg(format!("--key={}", pki.join(format!("{name}.key")).display()))
        .args(args)
        .output()
        .expect("etcdctl runs");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), said)
}

/// A key's value read as etcd's root.
fn value_as_root(etcd: &Etcd, pki: &Path, key: &str) -> String {
    let (ok, said) = etcdctl_as(etcd, pki, "root", &["get", "--print-value-only", key]);
    assert!(ok, "{said}");
    said.trim_end().to_string()
}

/// `tend cluster ARGS` with the TLS flags of `NAME.crt`.
fn cluster_cmd(etcd: &Etcd, pki: &Path, name: &str, args: &[&str]) -> std::process::Output {
    let flags = tls_flags(&etcd.url(), pki, &pki.join("ca.crt"), name);
    Command::new(TEND).arg("cluster").args(args).args(&flags).env("NO_COLOR", "1").output().unwrap()
}

#[test]
fn a_granted_host_writes_only_its_own_keys_and_a_revoked_one_nothing() {
    if tls_pass() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(&dir.path().join("pki"), &["root", "h1", "h2", "h3", "op"]);
    let Some(etcd) = tls_etcd(&pki) else { return };
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let ca = pki.join("ca.crt");

    // Only etcd's root user grants.
    let denied = cluster_cmd(&etcd, &pki, "h1", &["grant", "h1"]);
    let err = String::from_utf8_lossy(&denied.stderr);
    assert!(!denied.status.success() && err.contains("not `root`"), "{err}");
    let granted = cluster_cmd(&etcd, &pki, "root", &["grant", "h1", "h2", "--operator", "op"]);
    let said = String::from_utf8_lossy(&granted.stdout);
    assert!(granted.status.success(), "{said}{}", String::from_utf8_lossy(&granted.stderr));
    assert!(said.contains("host h1: writes only its own keys") && said.contains("operator op: may deploy"), "{said}");
    // Granting again changes nothing and succeeds.
    assert!(cluster_cmd(&etcd, &pki, "root", &["grant", "h1"]).status.success());

    // Confined agents still exchange values and exports.
    let h1_program = format!(
        "{}{}",
        exporter(&out, "v1", ""),
        "kv \"mine\" { key => \"remote\", value => \"ok-h1\", mapped => true, }\n"
    );
    let h1 = Agent::start_with(dir.path(), "h1", &tls_flags(&etcd.url(), &pki, &ca, "h1"), 5, &h1_program);
    let h2 =
        Agent::start_with(dir.path(), "h2", &tls_flags(&etcd.url(), &pki, &ca, "h2"), 5, &collector(&out, "h2", ""));
    assert!(
        wait_until(T, || read(&out.join("h2-shared")) == "v1\n"),
        "h2 collects h1's export\n{}\n{}",
        h1.log(),
        h2.log()
    );
    assert!(wait_until(T, || read(&out.join("h2-local")) == "v1"), "h2 reads h1's plain key\n{}", h2.log());
    let export = "/_tend/exports/h1/%2a/file/shared";
    let (status, map) = ("/_tend/status/h1", "/_tend/maps/h1/remote");
    assert!(wait_until(T, || !value_as_root(&etcd, &pki, status).is_empty()), "{}", h1.log());
    let before: Vec<String> = [export, status, map].iter().map(|k| value_as_root(&etcd, &pki, k)).collect();
    assert!(before.iter().all(|v| !v.is_empty()), "{before:?}");

    // h2's certificate cannot write h1's export, status or map entry: refused, intact.
    for key in [export, status, map] {
        let (ok, said) = etcdctl_as(&etcd, &pki, "h2", &["put", key, "forged"]);
        assert!(!ok && said.contains("permission denied"), "h2 writing {key}: {said}");
        let (ok, said) = etcdctl_as(&etcd, &pki, "h2", &["del", key]);
        assert!(!ok && said.contains("permission denied"), "h2 deleting {key}: {said}");
    }
    let after: Vec<String> = [export, status, map].iter().map(|k| value_as_root(&etcd, &pki, k)).collect();
    // (h1's status may have moved on meanwhile: h1 wrote it, not h2.)
    assert_eq!((&before[0], &before[2]), (&after[0], &after[2]), "h1's data is intact");
    assert!(after[1].contains("\"host\":\"h1\""), "{}", after[1]);
    // Not a deploy either; an operator may deploy.
    let deploy_as = |tag: &str, name: &str| {
        let flags = tls_flags(&etcd.url(), &pki, &ca, name).split_off(2);
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        deploy(dir.path(), &etcd, tag, &deployed_program(&out, ""), &flags)
    };
    let refused = deploy_as("d1", "h2");
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && err.contains("permission denied"), "a host cannot deploy: {err}");
    let landed = deploy_as("d2", "op");
    assert_eq!(deployed_id(&landed), 1);
    // A host nobody granted is refused in one line that says what to do.
    std::fs::write(dir.path().join("h3.mcl"), format!("file \"{}/h3\" {{ state => \"exists\", }}\n", out.display()))
        .unwrap();
    let h3 = Command::new(TEND)
        .args(["--hostname", "h3", "run", "--converged-timeout", "0"])
        .arg(dir.path().join("h3.mcl"))
        .args(tls_flags(&etcd.url(), &pki, &ca, "h3"))
        .arg("--prefix")
        .arg(dir.path().join("h3-state"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&h3.stderr);
    assert!(!h3.status.success() && err.contains("tend cluster grant h3"), "{err}");

    // Revoked: h2 can write nothing, not even its own keys, and what it wrote is gone.
    let revoked = cluster_cmd(&etcd, &pki, "root", &["revoke", "h2"]);
    let said = String::from_utf8_lossy(&revoked.stdout);
    assert!(
        revoked.status.success() && said.contains("host h2: revoked"),
        "{said}{}",
        String::from_utf8_lossy(&revoked.stderr)
    );
    let (ok, said) = etcdctl_as(&etcd, &pki, "h2", &["put", "/_tend/status/h2", "back"]);
    assert!(!ok, "a revoked host cannot write: {said}");
    let (ok, said) = etcdctl_as(&etcd, &pki, "h2", &["put", "/_tend/kv/greeting", "hijack"]);
    assert!(!ok, "not even a shared key: {said}");
    assert_eq!(value_as_root(&etcd, &pki, "/_tend/status/h2"), "", "h2's keys are deleted");
    assert_eq!(value_as_root(&etcd, &pki, "/_tend/hosts/h2"), "");
    assert_eq!(value_as_root(&etcd, &pki, export), after[0], "h1 is untouched");
}

/// An agent of an older tend wrote `/_tend/map/<ns>/<host>` (the first key layout): the
/// two layouts do not see each other's entries, and a new agent says so and what to do.
#[test]
fn keys_of_the_old_layout_are_named_with_what_to_do() {
    let Some(etcd) = start_etcd() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    etcdctl(&etcd, &["put", "/_tend/map/remote/h9"], Some(b"ok-h9"));
    let h1 = Agent::start(dir.path(), "h1", &etcd.url(), 5, &program(&out, "h1", "hi", true));
    assert!(
        wait_until(T, || h1.log().contains("/_tend/map/remote/h9") && h1.log().contains("Upgrade tend on every host")),
        "{}",
        h1.log()
    );
    // The old entry is not read as a new one.
    assert!(
        wait_until(T, || read(&out.join("h1.txt")).contains("map={\"h1\": \"ok-h1\"}")),
        "{}",
        read(&out.join("h1.txt"))
    );
}

/// `tend pki revoke` writes the CA's revocation list; etcd, given it as
/// `--client-crl-file`, refuses the revoked certificate in one line (and still takes the
/// others), and a certificate revoked while etcd runs is refused at its next connection.
#[test]
fn a_certificate_revoked_with_tend_pki_is_refused_by_etcd() {
    if tls_pass() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(&dir.path().join("pki"), &["h1", "h2", "h3", "root"]);
    let revoke = |name: &str| {
        let out = Command::new(TEND).args(["pki", "revoke"]).arg(&pki).arg(name).output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success() && said.contains("crl.pem"), "{said}{}", String::from_utf8_lossy(&out.stderr));
    };
    revoke("h3");
    let crl = pki.join("crl.pem");
    let Some(etcd) = Etcd::start_tls(EtcdTls { crl: Some(crl), ..EtcdTls::of(&pki) }) else { return };
    let ca = pki.join("ca.crt");
    let (ok, err, _) = status_with(&tls_flags(&etcd.url(), &pki, &ca, "h1"));
    assert!(ok, "a certificate not revoked is taken: {err}");
    let refused = |name: &str| {
        let (ok, err, took) = status_with(&tls_flags(&etcd.url(), &pki, &ca, name));
        assert!(!ok, "{name} is refused");
        assert!(err.contains("refused the client certificate"), "{name}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
        assert!(took < Duration::from_secs(10), "no hang: {took:?}");
    };
    refused("h3");
    let (ok, err, _) = status_with(&tls_flags(&etcd.url(), &pki, &ca, "h2"));
    assert!(ok, "h2 is not revoked yet: {err}");
    revoke("h2");
    refused("h2");
    let (ok, err, _) = status_with(&tls_flags(&etcd.url(), &pki, &ca, "h1"));
    assert!(ok, "h1 still is taken: {err}");
    // Taking a host's access away means nothing while etcd's authentication is off: said.
    let out = cluster_cmd(&etcd, &pki, "root", &["revoke", "h1"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && said.contains("authentication is off"), "{said}");
}
