//! A real etcd server for cluster tests: started on free loopback ports with a temporary
//! data directory, stopped by its PID. Tests that need one call [`Etcd::start`], which
//! returns `None` (after printing why) when no `etcd` binary is installed, unless
//! `TEND_REQUIRE_ETCD` is set (as CI sets it): then a missing etcd fails the test.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The files of an etcd member that speaks TLS and asks every client for a certificate
/// signed by `ca` (`--client-cert-auth`).
#[derive(Clone, Debug)]
pub struct EtcdTls {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
    /// A revocation list of client certificates (`--client-crl-file`).
    pub crl: Option<PathBuf>,
}

impl EtcdTls {
    /// The files `tend pki` leaves in `dir` for a member named `etcd`.
    pub fn of(dir: &Path) -> EtcdTls {
        EtcdTls { ca: dir.join("ca.crt"), cert: dir.join("etcd.crt"), key: dir.join("etcd.key"), crl: None }
    }
}

/// One etcd member (or a member of a cluster made by [`Etcd::cluster`]).
pub struct Etcd {
    pub name: String,
    pub client_port: u16,
    pub peer_port: u16,
    /// Where `/health` answers in plaintext (what the client port does without TLS).
    metrics_port: u16,
    tls: Option<EtcdTls>,
    /// The `--initial-cluster` value the member was started with.
    initial_cluster: String,
    data: PathBuf,
    /// Keeps the data directory's parent alive.
    _dir: Option<tempdir::Dir>,
    child: Option<Child>,
}

/// A free loopback port (bound, then released for etcd to take), never the same twice in a
/// process. Taken below Linux's ephemeral range (32768 and up), where the kernel picks the local
/// port of every outgoing connection: one of those could take the port between this check and
/// etcd's bind ("address already in use"). The start depends on the PID, so test binaries
/// running at once are unlikely to meet.
pub fn free_port() -> u16 {
    const FIRST: u32 = 20_000;
    const SPAN: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let start = std::process::id() % 600 * 20;
    for _ in 0..SPAN {
        let port = (FIRST + (start + NEXT.fetch_add(1, Ordering::SeqCst)) % SPAN) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port between {FIRST} and {}", FIRST + SPAN)
}

/// Whether an `etcd` binary is on the PATH; prints why a test is skipped when not, and
/// panics instead when `TEND_REQUIRE_ETCD` is set.
#[allow(clippy::print_stdout)] // the skip message is for the test's output
pub fn available() -> bool {
    let found = Command::new("etcd").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    if !found {
        assert!(
            std::env::var_os("TEND_REQUIRE_ETCD").is_none(),
            "TEND_REQUIRE_ETCD is set but no `etcd` binary is installed (apt-get install etcd-server)"
        );
        println!("skipping: no `etcd` binary on the PATH (apt-get install etcd-server to run the cluster tests)");
    }
    found
}

impl Etcd {
    /// A single-member cluster, running and healthy; `None` when etcd is not installed.
    pub fn start() -> Option<Etcd> {
        Etcd::start_with(None)
    }

    /// [`Etcd::start`], speaking TLS on its client port and requiring client certificates.
    pub fn start_tls(tls: EtcdTls) -> Option<Etcd> {
        Etcd::start_with(Some(tls))
    }

    fn start_with(tls: Option<EtcdTls>) -> Option<Etcd> {
        if !available() {
            return None;
        }
        let dir = tempdir::Dir::new("tend-etcd");
        let (client_port, peer_port) = (free_port(), free_port());
        let name = "e1".to_string();
        let initial_cluster = format!("{name}=http://127.0.0.1:{peer_port}");
        let mut etcd = Etcd {
            data: dir.path().join("data"),
            _dir: Some(dir),
            name,
            client_port,
            peer_port,
            metrics_port: free_port(),
            tls,
            initial_cluster,
            child: None,
        };
        etcd.resume();
        Some(etcd)
    }

    /// A cluster of `n` members, all running and healthy.
    pub fn cluster(n: usize) -> Option<Vec<Etcd>> {
        if !available() {
            return None;
        }
        let ports: Vec<(u16, u16)> = (0..n).map(|_| (free_port(), free_port())).collect();
        let initial = ports
            .iter()
            .enumerate()
            .map(|(i, (_, peer))| format!("m{i}=http://127.0.0.1:{peer}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut members: Vec<Etcd> = ports
            .iter()
            .enumerate()
            .map(|(i, &(client_port, peer_port))| {
                let dir = tempdir::Dir::new("tend-etcd");
                Etcd {
                    name: format!("m{i}"),
                    data: dir.path().join("data"),
                    _dir: Some(dir),
                    client_port,
                    peer_port,
                    metrics_port: free_port(),
                    tls: None,
                    initial_cluster: initial.clone(),
                    child: None,
                }
            })
            .collect();
        for m in &mut members {
            m.spawn();
        }
        for m in &members {
            m.wait_healthy(Duration::from_secs(20));
        }
        Some(members)
    }

    /// `http://127.0.0.1:PORT` (`https://` for a member started with [`Etcd::start_tls`]).
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.client_port)
    }

    fn spawn(&mut self) {
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let log = std::fs::File::create(self.data.with_extension("log")).expect("etcd log");
        let mut command = Command::new("etcd");
        if let Some(tls) = &self.tls {
            command.arg("--cert-file").arg(&tls.cert).arg("--key-file").arg(&tls.key);
            command.arg("--trusted-ca-file").arg(&tls.ca).arg("--client-cert-auth");
            if let Some(crl) = &tls.crl {
                command.arg("--client-crl-file").arg(crl);
            }
        }
        let metrics = format!("http://127.0.0.1:{}", self.metrics_port);
        let child = command
            .args(["--name", &self.name, "--data-dir"])
            .arg(&self.data)
            .args(["--listen-client-urls", &self.url(), "--advertise-client-urls", &self.url()])
            .args(["--listen-metrics-urls", &metrics])
            .args(["--listen-peer-urls", &peer, "--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &self.initial_cluster, "--initial-cluster-state", "new"])
            .args(["--heartbeat-interval", "50", "--election-timeout", "500"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("etcd starts");
        self.child = Some(child);
    }

    /// Starts the member again (after [`Etcd::kill`]) on its data, and waits until healthy.
    pub fn resume(&mut self) {
        self.spawn();
        self.wait_healthy(Duration::from_secs(20));
    }

    /// Kills the member and starts it again on its data with other TLS files (a member
    /// whose certificate was replaced, or signed by another CA).
    pub fn restart_tls(&mut self, tls: EtcdTls) {
        self.kill();
        self.tls = Some(tls);
        self.resume();
    }

    /// Kills the member (SIGKILL, by PID) and waits for it to go.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the member and removes its data: the next [`Etcd::resume`] starts empty.
    pub fn wipe(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.data);
    }

    /// The PID of the running member.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Waits until `/health` answers `"health":"true"`; panics after `limit`.
    pub fn wait_healthy(&self, limit: Duration) {
        let start = Instant::now();
        while start.elapsed() < limit {
            if self.healthy() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("etcd {} did not become healthy in {limit:?}; log: {}", self.name, self.log());
    }

    fn healthy(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.metrics_port)) else { return false };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let req = format!("GET /health HTTP/1.0\r\nHost: 127.0.0.1:{}\r\n\r\n", self.metrics_port);
        if s.write_all(req.as_bytes()).is_err() {
            return false;
        }
        let mut body = String::new();
        let _ = s.read_to_string(&mut body);
        body.contains("\"health\":\"true\"")
    }

    /// The member's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.data.with_extension("log")).unwrap_or_default()
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A temporary directory without a dependency.
mod tempdir {
    use std::path::{Path, PathBuf};

    pub struct Dir(PathBuf);

    impl Dir {
        pub fn new(prefix: &str) -> Dir {
            static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = std::env::temp_dir().join(format!("{prefix}-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir_all(&path).expect("a temporary directory");
            Dir(path)
        }

        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
