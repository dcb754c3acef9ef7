//! `docker:container` against a real `dockerd` the test starts in a temporary directory
//! (its own data root, exec root, socket and pidfile; no iptables rules and no bridge, so
//! it leaves nothing behind), with an image imported from a root file system holding
//! `busybox-static`: no registry is needed. Skipped when dockerd is not installed or the
//! test is not root, unless `TEND_REQUIRE_DOCKER=1` (as in CI), which makes that a failure.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use engine::{ApplyCtx, Graph, Meta, ResKey};
use hyper::Method;
use lang::value::Value;
use resources::util::http_client::send_unix;
use resources::virtualization::docker_container::engine_at;
use resources::{Machine, build_with};
use support::{WAIT, engine, params, s, strs};

const DOCKERD: &str = "/usr/sbin/dockerd";
const BUSYBOX: &str = "/bin/busybox";

/// The container's command: PID 1 of a container ignores SIGTERM unless it handles it, and
/// this one exits on it, so a stop takes a second, not the ten of docker's grace period.
const STOPPABLE: &str = "trap 'exit 0' TERM; while true; do sleep 1; done";

/// A private docker daemon, stopped (SIGTERM, by PID) when dropped.
struct Dockerd {
    child: Child,
    socket: PathBuf,
}

impl Drop for Dockerd {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(self.child.id().to_string()).status();
        let _ = self.child.wait();
    }
}

/// Whether the test can run here; panics when it must (`TEND_REQUIRE_DOCKER=1`).
#[allow(clippy::print_stderr, reason = "a skipped test says why")]
fn docker_available() -> bool {
    let required = std::env::var("TEND_REQUIRE_DOCKER").is_ok_and(|v| v == "1");
    let root = nix::unistd::geteuid().is_root();
    let missing: Vec<&str> = [DOCKERD, BUSYBOX].into_iter().filter(|p| !Path::new(p).exists()).collect();
    if root && missing.is_empty() {
        return true;
    }
    let why = if root { format!("{missing:?} not installed") } else { "not root".to_string() };
    assert!(!required, "TEND_REQUIRE_DOCKER=1 but dockerd cannot run: {why}");
    eprintln!("skipped: dockerd cannot run here ({why}); .ci/deps installs docker.io and busybox-static");
    false
}

async fn ping(socket: &Path) -> bool {
    matches!(send_unix(socket, &Method::GET, "/_ping", None).await, Ok((200, _)))
}

async fn start_dockerd(dir: &Path) -> Dockerd {
    let socket = dir.join("docker.sock");
    let namespace = format!("tend-test-{}", std::process::id());
    let log = std::fs::File::create(dir.join("dockerd.log")).unwrap();
    let child = Command::new(DOCKERD)
        .arg("--data-root")
        .arg(dir.join("data"))
        .arg("--exec-root")
        .arg(dir.join("exec"))
        .arg("--pidfile")
        .arg(dir.join("dockerd.pid"))
        .arg("--host")
        .arg(format!("unix://{}", socket.display()))
        .args(["--iptables=false", "--ip6tables=false", "--bridge=none"])
        .args(["--containerd-namespace", &namespace, "--containerd-plugins-namespace", &format!("{namespace}-p")])
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("dockerd starts");
    let daemon = Dockerd { child, socket: socket.clone() };
    let mut up = false;
    for _ in 0..150 {
        if ping(&socket).await {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = std::fs::read_to_string(dir.join("dockerd.log")).unwrap_or_default();
    assert!(up, "dockerd answers on its socket:\n{log}");
    daemon
}

/// Imports a one-binary image (busybox, with `sh` and `sleep` links) as `repo:tag`.
async fn import_image(socket: &Path, repo: &str, tag: &str) {
    let mut tar = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    let busybox = std::fs::read(BUSYBOX).unwrap();
    header.set_size(busybox.len() as u64);
    header.set_mode(0o755);
    tar.append_data(&mut header, "bin/busybox", busybox.as_slice()).unwrap();
    for link in ["sh", "sleep"] {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Symlink);
        h.set_size(0);
        h.set_mode(0o777);
        tar.append_link(&mut h, format!("bin/{link}"), "busybox").unwrap();
    }
    let body = tar.into_inner().unwrap();
    // The Engine API's import: the root file system as the request body.
    let target = format!("/images/create?fromSrc=-&repo={repo}&tag={tag}");
    let (status, reply) = send_unix(socket, &Method::POST, &target, Some(body)).await.unwrap();
    assert_eq!(status, 200, "import: {}", String::from_utf8_lossy(&reply));
}

/// The container's state as docker reports it (`running`, `exited`…), or None.
async fn state(socket: &Path, name: &str) -> Option<(String, String)> {
    let (status, body) = send_unix(socket, &Method::GET, &format!("/containers/{name}/json"), None).await.unwrap();
    if status == 404 {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    Some((v["State"]["Status"].as_str()?.to_string(), v["Config"]["Image"].as_str()?.to_string()))
}

#[allow(clippy::print_stderr, reason = "what the container was in when the wait ran out")]
async fn eventually_state(socket: &Path, name: &str, want: Option<&str>) -> bool {
    // Docker's own stop may wait out its 10 s grace period: allow for it.
    let until = std::time::Instant::now() + WAIT + WAIT;
    loop {
        let now = state(socket, name).await;
        if now.as_ref().map(|s| s.0.as_str()) == want {
            return true;
        }
        if std::time::Instant::now() > until {
            eprintln!("{name}: {now:?}, wanted {want:?}");
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn graph(host: &Machine, name: &str, pairs: &[(&str, Value)]) -> Graph {
    let mut g = Graph::new();
    let res = build_with(host, "docker:container", name, &params(pairs)).unwrap();
    g.add_vertex(ResKey::new("docker:container", name), Meta::default(), res);
    g
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_is_run_kept_running_stopped_replaced_and_removed() {
    if !docker_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_dockerd(dir.path()).await;
    let socket = daemon.socket.clone();
    import_image(&socket, "tend-busybox", "one").await;
    import_image(&socket, "tend-busybox", "two").await;
    let host = Machine { containers: Some(engine_at(&socket)), ..Machine::sandbox(dir.path().join("host")) };
    let engine = engine(&dir.path().join("state"));
    let name = "tend-web";
    let base = [
        ("image", s("tend-busybox:one")),
        ("cmd", strs(&["/bin/sh", "-c", STOPPABLE])),
        ("env", strs(&["GREETING=hello"])),
    ];

    // Noop says what it would do and does nothing.
    let mut noop = build_with(&host, "docker:container", name, &params(&base)).unwrap();
    let mut ctx = ApplyCtx::detached();
    assert!(!noop.check_apply(&mut ctx, false).await.unwrap());
    assert_eq!(state(&socket, name).await, None);

    engine.apply(graph(&host, name, &base)).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(state(&socket, name).await, Some(("running".into(), "tend-busybox:one".into())));
    let (_, body) = send_unix(&socket, &Method::GET, &format!("/containers/{name}/json"), None).await.unwrap();
    let inspect: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert!(inspect["Config"]["Env"].as_array().unwrap().iter().any(|e| e == "GREETING=hello"), "{inspect}");

    // Drift, seen through the daemon's events: stopped, then removed behind our back.
    let (st, _) = send_unix(&socket, &Method::POST, &format!("/containers/{name}/stop?t=1"), None).await.unwrap();
    assert_eq!(st, 204);
    assert!(eventually_state(&socket, name, Some("running")).await, "a stopped container is started again");
    send_unix(&socket, &Method::DELETE, &format!("/containers/{name}?force=1"), None).await.unwrap();
    assert!(eventually_state(&socket, name, Some("running")).await, "a removed container is made again");

    // Another image: refused without force, replaced with it.
    let mut other = base.to_vec();
    other[0] = ("image", s("tend-busybox:two"));
    let mut refused = build_with(&host, "docker:container", name, &params(&other)).unwrap();
    let err = refused.check_apply(&mut ApplyCtx::detached(), true).await.unwrap_err();
    assert!(err.message.contains("another image") && err.message.contains("force"), "{err}");
    other.push(("force", Value::Bool(true)));
    engine.apply(graph(&host, name, &other)).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(state(&socket, name).await, Some(("running".into(), "tend-busybox:two".into())));

    // Stopped, then removed.
    let mut stopped = other.clone();
    stopped.push(("state", s("stopped")));
    engine.apply(graph(&host, name, &stopped)).await.unwrap();
    assert!(eventually_state(&socket, name, Some("exited")).await, "stopped");
    let mut removed = other.clone();
    removed.push(("state", s("removed")));
    engine.apply(graph(&host, name, &removed)).await.unwrap();
    assert!(eventually_state(&socket, name, None).await, "removed");
    engine.shutdown(WAIT).await;

    // A missing image is pulled, and with no registry reachable that fails, saying so.
    let mut missing =
        build_with(&host, "docker:container", "tend-nope", &params(&[("image", s("tend-no-such-image:1"))])).unwrap();
    let err = missing.check_apply(&mut ApplyCtx::detached(), true).await.unwrap_err();
    assert!(err.message.contains("docker:container[tend-nope]") && err.message.contains("tend-no-such-image"), "{err}");

    // The daemon gone: an error that may pass, never a crash.
    drop(daemon);
    let mut away = build_with(&host, "docker:container", name, &params(&base)).unwrap();
    let err = away.check_apply(&mut ApplyCtx::detached(), true).await.unwrap_err();
    assert!(err.is_transient() && err.message.contains("cannot reach the docker daemon"), "{err}");
}

#[test]
fn bad_params_are_refused_with_their_field() {
    let host = Machine::sandbox(std::env::temp_dir());
    let build = |pairs: &[(&str, Value)]| build_with(&host, "docker:container", "c", &params(pairs)).unwrap();
    let err = |pairs: &[(&str, Value)]| build(pairs).validate().unwrap_err().message;
    assert!(err(&[("image", s("x")), ("state", s("up"))]).contains("field `state`"));
    assert!(err(&[]).contains("field `image`"));
    assert!(err(&[("image", s("x")), ("env", strs(&["NOEQUALS"]))]).contains("field `env`"));
    assert!(err(&[("image", s("x")), ("apiversion", s("1.41"))]).contains("field `apiversion`"));
    let inner = Value::map([(Value::Int(8080), Value::Int(70000))].into_iter().collect());
    let ports = Value::map([(s("tcp"), inner)].into_iter().collect());
    assert!(err(&[("image", s("x")), ("ports", ports)]).contains("field `ports`"));
    assert!(build(&[("image", s("x")), ("apiversion", s("v1.41"))]).validate().is_ok());
}

/// `docker:image` through the real `docker` client against the private daemon: a present
/// image is left alone, `absent` removes it, one imported again behind its back is removed
/// again through `docker events`, and a pull with no registry reachable fails, naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_is_kept_present_or_absent_through_the_docker_client() {
    if !docker_available() {
        return;
    }
    // docker.io brings the client with the daemon.
    assert!(which("docker").is_some(), "the docker client is installed with dockerd");
    let dir = tempfile::tempdir().unwrap();
    let daemon = start_dockerd(dir.path()).await;
    let socket = daemon.socket.clone();
    import_image(&socket, "tend-busybox", "img").await;
    let cli = resources::virtualization::docker::DockerCli { host: Some(format!("unix://{}", socket.display())) };
    let host = Machine { docker: std::sync::Arc::new(cli), ..Machine::sandbox(dir.path().join("host")) };
    let present = |socket: PathBuf| async move {
        matches!(send_unix(&socket, &Method::GET, "/images/tend-busybox:img/json", None).await, Ok((200, _)))
    };
    let name = "tend-busybox:img";

    let mut exists = build_with(&host, "docker:image", name, &params(&[])).unwrap();
    assert!(exists.check_apply(&mut ApplyCtx::detached(), true).await.unwrap(), "an imported image is present");

    let engine = engine(&dir.path().join("state"));
    let mut g = Graph::new();
    let res = build_with(&host, "docker:image", name, &params(&[("state", s("absent"))])).unwrap();
    g.add_vertex(ResKey::new("docker:image", name), Meta::default(), res);
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert!(!present(socket.clone()).await, "absent removes it");
    import_image(&socket, "tend-busybox", "img").await;
    let until = std::time::Instant::now() + WAIT;
    while present(socket.clone()).await && std::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!present(socket.clone()).await, "an image imported behind its back is removed again");
    engine.shutdown(WAIT).await;

    let mut pull = build_with(&host, "docker:image", "tend-no-such-image:1", &params(&[])).unwrap();
    let err = pull.check_apply(&mut ApplyCtx::detached(), true).await.unwrap_err();
    assert!(err.message.contains("tend-no-such-image"), "{err}");
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(program)).find(|p| p.is_file())
}
