//! Readiness from a real engine to a real notify socket: no READY before the first graph,
//! READY once it converged, STATUS lines that follow the converged flag.

#[allow(dead_code)]
#[path = "../src/observe/notify.rs"]
mod notify;
#[path = "../src/observe/ready.rs"]
mod ready;

use std::os::unix::net::UnixDatagram;
use std::time::Duration;

use async_trait::async_trait;
use engine::{ApplyCtx, Engine, EngineConfig, Graph, Meta, ResError, ResKey, Resource};

struct Once(bool);

#[async_trait]
impl Resource for Once {
    async fn check_apply(&mut self, _ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let was = self.0;
        self.0 |= apply;
        Ok(was)
    }
    fn fingerprint(&self) -> String {
        String::new()
    }
}

/// Every datagram that arrives within `wait`.
fn drain(sock: &UnixDatagram, wait: Duration) -> Vec<String> {
    sock.set_read_timeout(Some(wait)).expect("timeout");
    let mut out = Vec::new();
    let mut buf = [0u8; 512];
    while let Ok(n) = sock.recv(&mut buf) {
        out.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_after_the_first_convergence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("notify.sock");
    let sock = UnixDatagram::bind(&path).expect("bind");
    // SAFETY: the only test in this binary; nothing else reads the environment meanwhile.
    unsafe { std::env::set_var(notify::NOTIFY_SOCKET, &path) };

    let engine = Engine::new(EngineConfig { state_dir: dir.path().join("state"), ..EngineConfig::default() });
    let task = ready::announce(&engine);
    // The engine starts converged, but no graph ran yet: nothing may be announced.
    assert!(drain(&sock, Duration::from_millis(200)).is_empty());

    let mut g = Graph::new();
    for name in ["a", "b"] {
        g.add_vertex(ResKey::new("once", name), Meta::default(), Box::new(Once(false)));
    }
    engine.apply(g).await.expect("valid graph");
    assert!(engine.wait_converged(Duration::from_secs(10)).await);
    let got = drain(&sock, Duration::from_millis(300));
    assert_eq!(got.iter().filter(|m| *m == "READY=1").count(), 1, "{got:?}");
    assert_eq!(got.first().map(String::as_str), Some("STATUS=applying graph generation 1"), "{got:?}");
    let ready_at = got.iter().position(|m| m == "READY=1").expect("ready");
    assert_eq!(got[ready_at - 1], "STATUS=converged (graph generation 1)", "{got:?}");

    // A second, empty graph converges at its swap: a status, but READY only once ever.
    engine.apply(Graph::new()).await.expect("valid graph");
    let got = drain(&sock, Duration::from_millis(300));
    assert!(got.contains(&"STATUS=converged (graph generation 2)".to_string()), "{got:?}");
    assert!(!got.contains(&"READY=1".to_string()), "{got:?}");

    engine.shutdown(Duration::from_secs(5)).await;
    drop(engine);
    tokio::time::timeout(Duration::from_secs(5), task).await.expect("ends with the engine").expect("no panic");
    // SAFETY: as above.
    unsafe { std::env::remove_var(notify::NOTIFY_SOCKET) };
}
