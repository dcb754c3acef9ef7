//! `remote` end to end against a real OpenSSH server (`/usr/sbin/sshd`, started by the test
//! on a loopback port with a throw-away host key and key-only authentication): a `tend
//! run` on a real etcd copies itself and its program to the "remote" host (this machine,
//! through sshd), the remote agent writes its file and sets a value that crosses the SSH
//! tunnel back to the cluster, and removing the resource stops the remote agent and clears
//! its working directory. An untrusted host key is refused with its fingerprint. Needs
//! root, sshd and etcd; skipped without sshd unless `TEND_REQUIRE_SSHD=1`.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use testkit::daemon::{Daemon, eventually};
use testkit::etcd::{Etcd, free_port};

const TEND: &str = env!("CARGO_BIN_EXE_tend");
const SSHD: &str = "/usr/sbin/sshd";

/// A private sshd, killed when dropped.
struct Sshd {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sshd {
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The base64 part of a public key file.
    fn key_b64(&self, rel: &str) -> String {
        let text = std::fs::read_to_string(self.path(rel)).unwrap();
        text.split_whitespace().nth(1).unwrap().to_string()
    }
}

fn keygen(path: &Path) -> bool {
    Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[allow(clippy::print_stderr, reason = "a skipped test says why")]
fn sshd() -> Option<Sshd> {
    let root = nix::unistd::Uid::effective().is_root();
    if !root || !Path::new(SSHD).exists() {
        let why = "needs root and OpenSSH's server (apt-get install openssh-server)";
        assert!(std::env::var("TEND_REQUIRE_SSHD").as_deref() != Ok("1"), "TEND_REQUIRE_SSHD=1 but this {why}");
        eprintln!("skipped: {why}");
        return None;
    }
    std::fs::create_dir_all("/run/sshd").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert!(keygen(&d.join("host_key")) && keygen(&d.join("id")) && keygen(&d.join("other")), "ssh-keygen works");
    std::fs::copy(d.join("id.pub"), d.join("authorized_keys")).unwrap();
    let port = free_port();
    let config = format!(
        "Port {port}\nListenAddress 127.0.0.1\nHostKey {0}/host_key\nPidFile {0}/sshd.pid\n\
         AuthorizedKeysFile {0}/authorized_keys\nPubkeyAuthentication yes\nPasswordAuthentication no\n\
         KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n\
         AllowTcpForwarding yes\nLogLevel ERROR\n",
        d.display()
    );
    std::fs::write(d.join("sshd_config"), config).unwrap();
    let child = Command::new(SSHD)
        .args(["-D", "-e", "-f"])
        .arg(d.join("sshd_config"))
        .stderr(std::fs::File::create(d.join("sshd.log")).unwrap())
        .spawn()
        .expect("sshd starts");
    let sshd = Sshd { child, port, dir };
    let until = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < until,
            "sshd listens: {}",
            std::fs::read_to_string(sshd.path("sshd.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(sshd)
}

/// The remote agents (`./tend run …`, not the shell that started them) whose command line
/// holds `needle`, with that command line.
fn processes_with(needle: &str) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(raw) = std::fs::read(e.path().join("cmdline")) else { continue };
        let line = String::from_utf8_lossy(&raw).replace('\0', " ");
        if line.contains(needle) && line.starts_with("./tend run") {
            found.push((pid, line));
        }
    }
    found
}

fn program(sshd: &Sshd, hostkey: &str, remote_name: &str, with_remote: bool) -> impl Fn(&Path) -> String {
    let (port, id, hostkey, remote_name) = (sshd.port, sshd.path("id"), hostkey.to_string(), remote_name.to_string());
    move |dir: &Path| {
        let remote = if with_remote {
            format!(
                "\tremote \"ssh://root@127.0.0.1:{port}/\" {{\n\t\tssh_id => \"{}\",\n\t\thostkey => \"{hostkey}\",\n\
                 \t\thostname => \"{remote_name}\",\n\t\tcaching => false,\n\t\ttunnel_addr => \"127.0.0.1:0\",\n\t}}\n",
                id.display()
            )
        } else {
            String::new()
        };
        format!(
            "import \"world\"\n\nif $hostname == \"local-side\" {{\n{remote}\t$got = world.getval(\"crossed\")\n\
             \tfile \"{0}/local-saw\" {{\n\t\tstate => \"exists\",\n\t\tcontent => $got->value,\n\t}}\n}}\n\n\
             if $hostname == \"{remote_name}\" {{\n\tfile \"{0}/remote-wrote\" {{\n\t\tstate => \"exists\",\n\
             \t\tcontent => \"hello from the remote agent\\n\",\n\t}}\n\tkv \"crossed\" {{\n\t\tvalue => \"through the tunnel\",\n\t}}\n}}\n",
            dir.display()
        )
    }
}

#[test]
fn a_remote_agent_runs_the_program_reaches_the_cluster_through_the_tunnel_and_stops_with_its_resource() {
    let Some(sshd) = sshd() else { return };
    let Some(etcd) = Etcd::start() else { return };
    let remote_name = format!("remote-side-{}", std::process::id());
    let hostkey = sshd.key_b64("host_key.pub");
    let seeds = etcd.url();
    let d = Daemon::start(
        TEND,
        program(&sshd, &hostkey, &remote_name, true),
        &["--seeds", &seeds, "--hostname", "local-side"],
    );

    let wrote = d.path("remote-wrote");
    assert!(
        d.eventually(Duration::from_secs(90), || std::fs::read_to_string(&wrote)
            .is_ok_and(|t| t == "hello from the remote agent\n")),
        "the remote agent converged its file; agent log:\n{}\nsshd log:\n{}",
        d.stderr(),
        std::fs::read_to_string(sshd.path("sshd.log")).unwrap_or_default()
    );
    let saw = d.path("local-saw");
    assert!(
        d.eventually(Duration::from_secs(30), || std::fs::read_to_string(&saw)
            .is_ok_and(|t| t == "through the tunnel")),
        "the remote agent's value crossed the tunnel to the cluster: {:?}\n{}",
        std::fs::read_to_string(&saw),
        d.stderr()
    );
    let agents = processes_with(&format!("--hostname {remote_name}"));
    assert_eq!(agents.len(), 1, "one remote agent runs: {agents:?}");
    let prefix = agents[0].1.split(" --prefix ").nth(1).and_then(|r| r.split(' ').next()).unwrap().to_string();
    let workdir = Path::new(&prefix).parent().unwrap().to_path_buf();
    assert!(workdir.join("tend").is_file(), "the binary was copied to {}", workdir.display());

    // Removing the resource stops the remote agent; without caching its directory goes.
    d.save("main.mcl", &program(&sshd, &hostkey, &remote_name, false)(d.dir.path()));
    let gone =
        eventually(Duration::from_secs(40), &mut || processes_with(&format!("--hostname {remote_name}")).is_empty());
    assert!(gone, "the remote agent stopped with its resource: {:?}\n{}", processes_with(&remote_name), d.stderr());
    assert!(eventually(Duration::from_secs(20), &mut || !workdir.exists()), "{} was removed", workdir.display());
    drop(etcd);
}

#[test]
fn an_untrusted_host_a_refused_key_and_a_closed_port_are_each_reported_and_nothing_runs() {
    let Some(sshd) = sshd() else { return };
    let (right, wrong) = (sshd.key_b64("host_key.pub"), sshd.key_b64("other.pub"));
    let remote_name = format!("never-{}", std::process::id());
    let (port, id, other, closed) = (sshd.port, sshd.path("id"), sshd.path("other"), free_port());
    let text = format!(
        "remote \"ssh://root@127.0.0.1:{port}/\" {{\n\tssh_id => \"{}\",\n\thostkey => \"{wrong}\",\n\thostname => \"{remote_name}\",\n}}\n\
         remote \"ssh://root@localhost:{port}/\" {{\n\tssh_id => \"{}\",\n\thostkey => \"{right}\",\n\thostname => \"{remote_name}\",\n}}\n\
         remote \"ssh://root@127.0.0.1:{closed}/\" {{\n\tssh_id => \"{}\",\n\thostkey => \"{right}\",\n\thostname => \"{remote_name}\",\n}}\n",
        id.display(),
        other.display(),
        id.display()
    );
    let d = Daemon::start(TEND, move |_| text.clone(), &["--hostname", "local-side"]);
    let reported = |what: &str| d.stderr().contains(what);
    assert!(
        d.eventually(Duration::from_secs(30), || reported("is not trusted")
            && reported("refused every credential")
            && reported(&format!("could not connect to root@127.0.0.1:{closed}"))),
        "each failure is reported: {}\nsshd log:\n{}",
        d.stderr(),
        std::fs::read_to_string(sshd.path("sshd.log")).unwrap_or_default()
    );
    assert!(d.stderr().contains("SHA256:"), "the refused host key's fingerprint is shown: {}", d.stderr());
    assert!(processes_with(&format!("--hostname {remote_name}")).is_empty(), "nothing ran there");
    let mut d = d;
    assert!(d.alive(), "the agent keeps running");
}

/// Kills, when dropped, every remote agent whose command line holds its needle (a test
/// that fails half-way leaves no detached agent behind).
struct Reaper(String);

impl Drop for Reaper {
    fn drop(&mut self) {
        for (pid, _) in processes_with(&self.0) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

#[test]
fn a_detached_remote_agent_is_started_again_when_killed_and_stopped_on_request() {
    let Some(sshd) = sshd() else { return };
    let remote_name = format!("detached-{}", std::process::id());
    let needle = format!("--hostname {remote_name}");
    let _reaper = Reaper(needle.clone());
    let (port, id, hostkey) = (sshd.port, sshd.path("id"), sshd.key_b64("host_key.pub"));
    let text = move |state: &str| {
        let (id, hostkey, remote_name) = (id.clone(), hostkey.clone(), remote_name.clone());
        let state = state.to_string();
        move |dir: &Path| {
            format!(
                "if $hostname == \"local-side\" {{\n\tremote \"ssh://root@127.0.0.1:{port}/\" {{\n\t\tssh_id => \"{}\",\n\
                 \t\thostkey => \"{hostkey}\",\n\t\thostname => \"{remote_name}\",\n\t\tstate => \"{state}\",\n\
                 \t\ttransient => false,\n\t\ttunnelled => false,\n\t}}\n}}\n\
                 if $hostname == \"{remote_name}\" {{\n\tfile \"{}/detached-wrote\" {{\n\t\tstate => \"exists\",\n\
                 \t\tcontent => \"detached\\n\",\n\t}}\n}}\n",
                id.display(),
                dir.display()
            )
        }
    };
    let d = Daemon::start(TEND, text("running"), &["--hostname", "local-side"]);
    let wrote = d.path("detached-wrote");
    assert!(
        d.eventually(Duration::from_secs(60), || wrote.exists() && processes_with(&needle).len() == 1),
        "the detached agent runs: {}",
        d.stderr()
    );
    let (first, line) = processes_with(&needle)[0].clone();
    let workdir = PathBuf::from(line.split(" --prefix ").nth(1).unwrap().split(' ').next().unwrap())
        .parent()
        .unwrap()
        .to_path_buf();

    // Killed behind the agent's back: seen through its pid, and started again.
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(first as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    assert!(
        d.eventually(Duration::from_secs(30), || processes_with(&needle).iter().any(|(p, _)| *p != first)),
        "a new agent replaced the killed one: {}",
        d.stderr()
    );

    // `state => "stopped"` stops it.
    d.save("main.mcl", &text("stopped")(d.dir.path()));
    assert!(
        d.eventually(Duration::from_secs(40), || processes_with(&needle).is_empty()),
        "the agent was stopped on request: {}",
        d.stderr()
    );
    let _ = std::fs::remove_dir_all(&workdir);
}
