//! Readiness from a real engine to a real notify socket: no READY before the first graph,
//! READY once it converged, STATUS lines that follow the converged flag.

#![allow(unsafe_code)] // std::env::set_var, in a binary with one test

use tend::observe::notify;
use tend::observe::ready;

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
    // Usually exactly these two (the burst coalesces); on a slow machine an earlier
    // "applying" status may get out first.
    assert!(got.ends_with(&["STATUS=converged (graph generation 1)".to_string(), "READY=1".to_string()]), "{got:?}");
    assert_eq!(got.iter().filter(|m| *m == "READY=1").count(), 1, "{got:?}");
    assert!(got.len() <= 4, "{got:?}");

    // A second, empty graph converges at its swap: a status (after the rate limit), but
    // READY only once ever.
    engine.apply(Graph::new()).await.expect("valid graph");
    let got = drain(&sock, ready::STATUS_EVERY + Duration::from_millis(500));
    assert_eq!(got, ["STATUS=converged (graph generation 2)"]);

    // Many transitions within the rate limit yield at most one status per period, ending
    // on the latest state.
    for _ in 0..20 {
        let mut g = Graph::new();
        g.add_vertex(ResKey::new("once", "c"), Meta::default(), Box::new(Once(false)));
        engine.apply(g).await.expect("valid graph");
        engine.apply(Graph::new()).await.expect("valid graph");
    }
    assert!(engine.wait_converged(Duration::from_secs(10)).await);
    let got = drain(&sock, ready::STATUS_EVERY * 2 + Duration::from_millis(500));
    assert!(!got.is_empty() && got.len() <= 3, "{got:?}");
    assert_eq!(got.last().map(String::as_str), Some("STATUS=converged (graph generation 42)"), "{got:?}");

    engine.shutdown(Duration::from_secs(5)).await;
    drop(engine);
    tokio::time::timeout(Duration::from_secs(5), task).await.expect("ends with the engine").expect("no panic");
    // SAFETY: as above.
    unsafe { std::env::remove_var(notify::NOTIFY_SOCKET) };
}
