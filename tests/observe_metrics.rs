//! The metrics endpoint over a real socket: events in, exposition lines out.

use tend::observe::metrics;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use engine::{Engine, EngineConfig, EngineEvent, ResError, ResKey, WorkerState};
use metrics::{ApplyResult, Metrics};

/// Sends `request` raw and returns (status line, headers, body).
async fn scrape(addr: SocketAddr, request: &str) -> (String, String, String) {
    let request = request.to_string();
    tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        s.write_all(request.as_bytes()).expect("write");
        let mut raw = String::new();
        s.read_to_string(&mut raw).expect("read");
        let (head, body) = raw.split_once("\r\n\r\n").expect("a response head");
        let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
        (status.to_string(), headers.to_string(), body.to_string())
    })
    .await
    .expect("join")
}

fn value(body: &str, series: &str) -> Option<String> {
    body.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ').map(str::to_string))
}

fn key(kind: &str, name: &str) -> ResKey {
    ResKey::new(kind, name)
}

#[tokio::test]
async fn scrape_reflects_fed_events() {
    let m = Arc::new(Metrics::new());
    let server = metrics::serve("127.0.0.1:0".parse().expect("addr"), m.clone()).await.expect("bind");
    assert_ne!(server.addr.port(), 0);

    m.record_event(&EngineEvent::Swapped { generation: 1, started: 3, stopped: 0, unchanged: 0 });
    for name in ["a", "b"] {
        m.record_event(&EngineEvent::Started(key("file", name)));
    }
    m.record_event(&EngineEvent::Started(key("exec", "say \"hi\"")));
    m.record_event(&EngineEvent::Applied { key: key("file", "a"), changed: true, noop: false, reports: vec![] });
    m.record_event(&EngineEvent::Applied { key: key("file", "a"), changed: false, noop: false, reports: vec![] });
    m.record_event(&EngineEvent::Failed {
        key: key("exec", "say \"hi\""),
        error: ResError::new("boom"),
        retrying: true,
    });
    m.record_event(&EngineEvent::Converged(true));
    m.swap_rejected();
    m.compile_error();
    m.compile_error();
    m.dataflow_snapshot(true);
    m.dataflow_snapshot(false);
    m.dataflow_evaluations(10);
    m.dataflow_evaluations(15);
    m.dataflow_evaluations(4); // a new dataflow after a code edit
    m.observe_check_apply("file", ApplyResult::Changed, Duration::from_millis(3));
    m.observe_check_apply("file", ApplyResult::Changed, Duration::from_millis(200));
    m.observe_check_apply("file", ApplyResult::Changed, Duration::from_secs(60));
    m.observe_check_apply("file", ApplyResult::Ok, Duration::from_micros(10));

    let (status, headers, body) = scrape(server.addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(headers.contains("Content-Type: application/openmetrics-text; version=1.0.0"), "{headers}");
    assert!(headers.contains(&format!("Content-Length: {}", body.len())), "{headers}");

    let expect = [
        ("tend_resources{state=\"starting\"}", "1"),
        ("tend_resources{state=\"idle\"}", "1"),
        ("tend_resources{state=\"retrying\"}", "1"),
        ("tend_resources{state=\"failed\"}", "0"),
        ("tend_check_apply_total{kind=\"file\",result=\"ok\"}", "1"),
        ("tend_check_apply_total{kind=\"file\",result=\"changed\"}", "1"),
        ("tend_check_apply_total{kind=\"exec\",result=\"error\"}", "1"),
        ("tend_graph_swaps_total{result=\"applied\"}", "1"),
        ("tend_graph_swaps_total{result=\"rejected\"}", "1"),
        ("tend_graph_generation", "1"),
        ("tend_compile_errors_total", "2"),
        ("tend_dataflow_snapshots_total", "2"),
        ("tend_dataflow_snapshot_errors_total", "1"),
        ("tend_dataflow_evaluations_total", "19"),
        ("tend_workers_started_total", "3"),
        ("tend_converged", "1"),
        ("tend_check_apply_duration_seconds_bucket{le=\"0.001\",kind=\"file\",result=\"changed\"}", "0"),
        ("tend_check_apply_duration_seconds_bucket{le=\"0.005\",kind=\"file\",result=\"changed\"}", "1"),
        ("tend_check_apply_duration_seconds_bucket{le=\"0.25\",kind=\"file\",result=\"changed\"}", "2"),
        ("tend_check_apply_duration_seconds_bucket{le=\"30.0\",kind=\"file\",result=\"changed\"}", "2"),
        ("tend_check_apply_duration_seconds_bucket{le=\"+Inf\",kind=\"file\",result=\"changed\"}", "3"),
        ("tend_check_apply_duration_seconds_count{kind=\"file\",result=\"changed\"}", "3"),
        ("tend_check_apply_duration_seconds_bucket{le=\"0.001\",kind=\"file\",result=\"ok\"}", "1"),
        ("tend_check_apply_duration_seconds_count{kind=\"file\",result=\"ok\"}", "1"),
    ];
    for (series, want) in expect {
        assert_eq!(value(&body, series).as_deref(), Some(want), "{series} in\n{body}");
    }
    assert!(body.contains("# TYPE tend_check_apply counter\n"));
    assert!(body.contains("# TYPE tend_check_apply_duration_seconds histogram\n"));
    assert!(body.contains("# TYPE tend_resources gauge\n"));
    // Label values are escaped, so a quote in a name cannot break the format (states are
    // per key, but the kind is the label; the exec key's quote never reaches a label).
    assert!(
        body.lines().all(|l| l.starts_with('#') || l.rsplit_once(' ').is_some_and(|(_, v)| v.parse::<f64>().is_ok()))
    );
    // An OpenMetrics exposition ends so, and names each family once.
    assert!(body.ends_with("# EOF\n"), "{body}");
    assert_eq!(body.matches("# TYPE tend_check_apply counter").count(), 1);

    m.record_event(&EngineEvent::Stopped(key("file", "b")));
    m.record_event(&EngineEvent::Converged(false));
    let (_, _, body) = scrape(server.addr, "GET /metrics?x=1 HTTP/1.0\r\n\r\n").await;
    assert_eq!(value(&body, "tend_resources{state=\"starting\"}").as_deref(), Some("0"));
    assert_eq!(value(&body, "tend_workers_stopped_total").as_deref(), Some("1"));
    assert_eq!(value(&body, "tend_converged").as_deref(), Some("0"));

    let mut status = BTreeMap::new();
    status.insert(key("file", "a"), WorkerState::Applying);
    status.insert(key("exec", "x"), WorkerState::Failed { error: ResError::new("no") });
    m.sync_states(&status);
    let (_, _, body) = scrape(server.addr, "GET /metrics HTTP/1.1\r\n\r\n").await;
    assert_eq!(value(&body, "tend_resources{state=\"applying\"}").as_deref(), Some("1"));
    assert_eq!(value(&body, "tend_resources{state=\"failed\"}").as_deref(), Some("1"));
    assert_eq!(value(&body, "tend_resources{state=\"idle\"}").as_deref(), Some("0"));
    server.task.abort();
}

#[tokio::test]
async fn other_requests_are_refused() {
    let m = Arc::new(Metrics::new());
    let server = metrics::serve("127.0.0.1:0".parse().expect("addr"), m).await.expect("bind");
    // A client that connects and says nothing does not block the others.
    let _idle = TcpStream::connect(server.addr).expect("connect");
    let (status, _, _) = scrape(server.addr, "GET /metrics HTTP/1.1\r\n\r\n").await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    let (status, _, _) = scrape(server.addr, "GET / HTTP/1.1\r\n\r\n").await;
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    let (status, _, _) = scrape(server.addr, "GET /metricsx HTTP/1.1\r\n\r\n").await;
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    let (status, headers, _) = scrape(server.addr, "POST /metrics HTTP/1.1\r\n\r\n").await;
    assert_eq!(status, "HTTP/1.1 405 Method Not Allowed");
    assert!(headers.contains("Allow: GET, HEAD"));
    let (status, _, body) = scrape(server.addr, "HEAD /metrics HTTP/1.1\r\n\r\n").await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(body, "");
    let (status, _, _) = scrape(server.addr, "garbage\r\n\r\n").await;
    assert_eq!(status, "HTTP/1.1 400 Bad Request");
    let huge = format!("GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(metrics::MAX_REQUEST + 10));
    let (status, _, _) = scrape(server.addr, &huge).await;
    assert_eq!(status, "HTTP/1.1 431 Request Header Fields Too Large");
    server.task.abort();
}

#[tokio::test]
async fn watch_engine_follows_a_real_engine() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = Engine::new(EngineConfig { state_dir: dir.path().into(), ..EngineConfig::default() });
    let m = Arc::new(Metrics::new());
    let feed = m.watch_engine(&engine);
    // An empty graph converges at once; the swap is reported as an event.
    engine.apply(engine::Graph::new()).await.expect("empty graph");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let body = m.render();
        if value(&body, "tend_graph_swaps_total{result=\"applied\"}").as_deref() == Some("1") {
            assert_eq!(value(&body, "tend_graph_generation").as_deref(), Some("1"));
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no swap seen:\n{body}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    engine.shutdown(Duration::from_secs(5)).await;
    drop(engine);
    // The feed ends with the engine.
    tokio::time::timeout(Duration::from_secs(5), feed).await.expect("feed ends").expect("no panic");
}

#[test]
fn remote_addresses_need_the_opt_in() {
    let local: SocketAddr = "127.0.0.1:9233".parse().expect("addr");
    let local6: SocketAddr = "[::1]:9233".parse().expect("addr");
    let any: SocketAddr = "0.0.0.0:9233".parse().expect("addr");
    assert_eq!(metrics::check_addr(local, false), Ok(local));
    assert_eq!(metrics::check_addr(local6, false), Ok(local6));
    let err = metrics::check_addr(any, false).expect_err("refused");
    assert!(err.contains("--metrics-allow-remote"), "{err}");
    assert_eq!(metrics::check_addr(any, true), Ok(any));
}
