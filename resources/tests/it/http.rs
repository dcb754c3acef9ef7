//! The `http:server` family and `tftp:server` through the engine, serving real requests on
//! loopback: routes registered by sub-resources in any start order, flags feeding send/recv,
//! long polls woken by a flag, a caching proxy through the real `curl` backend, and TFTP
//! reads by a real UDP client.

use crate::support;
use lang::params::ParamMap;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use engine::{Engine, Graph, Meta, ResKey};
use http_body_util::{BodyExt, Full};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper_util::rt::TokioIo;
use lang::value::Value;
use resources::{Machine, build_with};
use support::{WAIT, engine, eventually, s};
use tokio::net::{TcpStream, UdpSocket};

/// One resource: kind, name, params.
type Res<'a> = (&'a str, &'a str, Vec<(&'a str, Value)>);

/// A graph of resources with `(from, send, to, recv)` send/recv edges.
fn graph(host: &Machine, res: &[Res<'_>], sendrecv: &[(ResKey, &str, ResKey, &str)]) -> Graph {
    let mut g = Graph::new();
    for (kind, name, params) in res {
        let params: ParamMap = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        let r = build_with(host, kind, name, &params).unwrap_or_else(|e| panic!("{kind}[{name}]: {e}"));
        g.add_vertex(ResKey::new(*kind, *name), Meta::default(), r);
    }
    for (from, send, to, recv) in sendrecv {
        g.add_sendrecv(from.clone(), send, to.clone(), recv);
    }
    g
}

async fn apply(engine: &Engine, g: Graph) {
    engine.apply(g).await.expect("valid graph");
    assert!(engine.wait_converged(WAIT).await, "converges");
    assert!(engine.failures().await.is_empty(), "{:?}", engine.failures().await);
}

/// One HTTP/1.1 request over a fresh connection: (status, headers, body).
async fn request(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, HeaderMap, String) {
    let stream = TcpStream::connect(addr).await.expect("connects");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::spawn(conn);
    let mut req = hyper::Request::builder().method(method).uri(target).header(header::HOST, "localhost");
    if !body.is_empty() {
        req = req.header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = sender.send_request(req.body(Full::new(Bytes::from(body.to_string()))).unwrap()).await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}

async fn get(addr: SocketAddr, target: &str) -> (u16, String) {
    let (status, _, body) = request(addr, "GET", target, &[], "").await;
    (status, body)
}

fn key(kind: &str, name: &str) -> ResKey {
    ResKey::new(kind, name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_serves_files_root_flags_and_long_polls() {
    let dir = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(dir.path());
    std::fs::create_dir(dir.path().join("root")).unwrap();
    std::fs::write(dir.path().join("root/file0"), "i'm file0\n").unwrap();
    std::fs::write(dir.path().join("some_file"), "i'm a cool file\n").unwrap();
    let root = format!("{}/root/", dir.path().display());
    let some_file = dir.path().join("some_file").display().to_string();
    let value_name = "tend-http-test-flag-value";
    let g = graph(
        &host,
        &[
            (
                "http:server",
                "srv",
                vec![("address", s("127.0.0.1:0")), ("timeout", Value::Int(60)), ("root", s(&root))],
            ),
            ("http:server:file", "/file1", vec![("data", s("hello, i'm file1\n"))]),
            ("http:server:file", "/file2", vec![("path", s(&some_file))]),
            ("http:server:file", "/nope/noway", vec![("data", s("hidden")), ("server", s("someone else!"))]),
            ("http:server:flag", "/flag1", vec![("key", s("key"))]),
            ("value", value_name, vec![]),
            ("http:server:flag", "/push", vec![("key", s("key"))]),
            ("http:server:file", "/event", vec![("longpoll", Value::Bool(true))]),
        ],
        &[
            (key("http:server:flag", "/flag1"), "value", key("value", value_name), "any"),
            (key("http:server:flag", "/push"), "value", key("http:server:file", "/event"), "data"),
        ],
    );
    let engine = engine(&dir.path().join("state"));
    apply(&engine, g).await;
    let addr = host.http.bound("srv").expect("listening");

    assert_eq!(get(addr, "/file1").await, (200, "hello, i'm file1\n".into()));
    assert_eq!(get(addr, "/file2").await, (200, "i'm a cool file\n".into()));
    assert_eq!(get(addr, "/file0").await, (200, "i'm file0\n".into()), "from the root");
    assert_eq!(get(addr, "/nope/noway").await.0, 404, "grouped with another server");
    assert_eq!(get(addr, "/../some_file").await.0, 404);
    assert_eq!(request(addr, "DELETE", "/file0", &[], "").await.0, 405);

    // A flag: POST sets the value, which send/recv carries into the value resource.
    let (status, _, _) = request(addr, "POST", "/flag1", &[], "key=hello&whatever=bye").await;
    assert_eq!(status, 200);
    let stored = || host.values.get(value_name);
    assert!(eventually(|| stored() == Some(Value::str("hello"))).await, "{:?}", stored());
    assert_eq!(get(addr, "/flag1").await.0, 404, "flags only take POST");

    // A long poll held on the current version, released by a POST to another flag.
    let (status, headers, body) = request(addr, "GET", "/event", &[], "").await;
    assert_eq!((status, body.as_str()), (200, ""));
    let cursor = headers[header::LAST_MODIFIED].to_str().unwrap().to_string();
    let held = tokio::spawn(async move { request(addr, "GET", "/event", &[("if-modified-since", &cursor)], "").await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!held.is_finished(), "the client is held");
    request(addr, "POST", "/push", &[], "key=event1").await;
    let (status, headers, body) = tokio::time::timeout(WAIT, held).await.expect("released").unwrap();
    assert_eq!((status, body.as_str()), (200, "event1"));
    assert_ne!(headers[header::LAST_MODIFIED], HeaderValue::from_static(""), "a new cursor");

    engine.shutdown(WAIT).await;
    // The server task drops its listener as it ends, which a loaded machine may take a
    // moment to schedule.
    let deadline = tokio::time::Instant::now() + WAIT;
    while TcpStream::connect(addr).await.is_ok() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(TcpStream::connect(addr).await.is_err(), "the listener is gone after shutdown");
    assert!(host.http.routes.is_empty(), "every route unregistered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_work_whichever_starts_first() {
    let dir = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(dir.path());
    let engine = engine(&dir.path().join("state"));
    let server = || ("http:server", "srv", vec![("address", s("127.0.0.1:0"))]);
    let file = || ("http:server:file", "/f", vec![("data", s("data")), ("server", s("srv"))]);

    apply(&engine, graph(&host, &[file()], &[])).await;
    assert_eq!(host.http.routes.len(), 1, "registered before any server exists");
    apply(&engine, graph(&host, &[file(), server()], &[])).await;
    let addr = host.http.bound("srv").unwrap();
    assert_eq!(get(addr, "/f").await, (200, "data".into()));

    apply(&engine, graph(&host, &[server()], &[])).await;
    assert_eq!(get(addr, "/f").await.0, 404, "gone with its resource");
    apply(&engine, graph(&host, &[server(), file()], &[])).await;
    assert_eq!(get(addr, "/f").await, (200, "data".into()), "a route added to a running server");
    engine.shutdown(WAIT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ui_form_sends_saved_values() {
    let dir = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(dir.path());
    let value_name = "tend-http-test-ui-value";
    let data = Value::strukt(vec![("title".into(), s("mgmt http ui")), ("head".into(), s(""))]);
    let g = graph(
        &host,
        &[
            ("http:server", "srv", vec![("address", s("127.0.0.1:0"))]),
            ("http:server:ui", "/ui/", vec![("data", data)]),
            ("http:server:ui:input", "text1", vec![("value", s("default"))]),
            ("http:server:ui:input", "kv1", vec![("store", s("world://")), ("sort", s("b"))]),
            ("value", value_name, vec![]),
        ],
        &[(key("http:server:ui:input", "text1"), "value", key("value", value_name), "any")],
    );
    let engine = engine(&dir.path().join("state"));
    apply(&engine, g).await;
    let addr = host.http.bound("srv").unwrap();
    assert_eq!(host.values.get(value_name), Some(s("default")));

    let (status, page) = get(addr, "/ui/index.html").await;
    assert_eq!(status, 200);
    assert!(page.contains("<title>mgmt http ui</title>") && page.contains("id=\"text1\""), "{page}");
    let (status, _, body) = request(addr, "POST", "/ui/save/", &[], "id=text1&value=typed").await;
    assert_eq!((status, body.as_str()), (200, "null"));
    let stored = || host.values.get(value_name);
    assert!(eventually(|| stored() == Some(s("typed"))).await, "{:?}", stored());

    let (status, headers, _) = request(addr, "POST", "/ui/save/", &[], "id=kv1&value=v1&redirect=index.html").await;
    assert_eq!((status, headers[header::LOCATION].to_str().unwrap()), (303, "/ui/index.html"));
    // Pushed to the world's key (the sandbox's local store).
    let kv = dir.path().join("var/lib/tend/kv/kv1/value");
    assert!(eventually(|| std::fs::read_to_string(&kv).ok().as_deref() == Some("v1")).await, "pushed to the world");
    assert_eq!(host.world.get("kv1").await.as_deref(), Some("v1"));
    engine.shutdown(WAIT).await;
}

fn curl_missing() -> bool {
    std::process::Command::new("curl").arg("--version").output().is_err()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_caches_through_curl_from_a_loopback_upstream() {
    if curl_missing() {
        eprintln!("skipped: curl is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let host = Machine {
        http: resources::http::Hub::with_upstream(Arc::new(resources::http::proxy::Curl)),
        ..Machine::sandbox(dir.path())
    };
    let engine = engine(&dir.path().join("state"));
    let upstream = || ("http:server", "up", vec![("address", s("127.0.0.1:0"))]);
    let rpm = || ("http:server:file", "/pkgs/c/cowsay.rpm", vec![("data", s("moo")), ("server", s("up"))]);
    apply(&engine, graph(&host, &[upstream(), rpm()], &[])).await;
    let up = host.http.bound("up").unwrap();

    let cache = format!("{}/cache/", dir.path().display());
    let proxy = || {
        (
            "http:server:proxy",
            "/mirror/",
            vec![
                ("server", s("front")),
                ("sub", s("/mirror/")),
                ("head", s(&format!("http://{up}/pkgs/"))),
                ("cache", s(&cache)),
            ],
        )
    };
    let front = || ("http:server", "front", vec![("address", s("127.0.0.1:0"))]);
    apply(&engine, graph(&host, &[upstream(), rpm(), front(), proxy()], &[])).await;
    let addr = host.http.bound("front").unwrap();
    let (status, headers, body) = request(addr, "GET", "/mirror/c/cowsay.rpm", &[], "").await;
    assert_eq!((status, body.as_str()), (200, "moo"));
    assert_eq!(headers[header::CONTENT_TYPE], "application/x-rpm");
    assert_eq!(std::fs::read_to_string(dir.path().join("cache/c/cowsay.rpm")).unwrap(), "moo");
    assert_eq!(get(addr, "/mirror/c/missing.rpm").await.0, 404, "an upstream 404");

    // The upstream file goes away: the cache still answers.
    apply(&engine, graph(&host, &[upstream(), front(), proxy()], &[])).await;
    assert_eq!(get(up, "/pkgs/c/cowsay.rpm").await.0, 404);
    assert_eq!(get(addr, "/mirror/c/cowsay.rpm").await, (200, "moo".into()));
    engine.shutdown(WAIT).await;
}

/// Reads `filename` with a plain RFC 1350 client (512-byte blocks, octet mode).
async fn tftp_read(server: SocketAddr, filename: &str) -> Result<Vec<u8>, u16> {
    let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let mut rrq = vec![0, 1];
    rrq.extend_from_slice(filename.as_bytes());
    rrq.extend_from_slice(b"\0octet\0");
    sock.send_to(&rrq, server).await.unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 600];
    loop {
        let (n, from) = tokio::time::timeout(WAIT, sock.recv_from(&mut buf)).await.expect("an answer").unwrap();
        match buf[1] {
            3 => {
                sock.send_to(&[0, 4, buf[2], buf[3]], from).await.unwrap();
                out.extend_from_slice(&buf[4..n]);
                if n - 4 < 512 {
                    return Ok(out);
                }
            }
            5 => return Err(u16::from_be_bytes([buf[2], buf[3]])),
            op => panic!("unexpected opcode {op}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tftp_serves_registered_files_and_its_root() {
    let dir = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(dir.path());
    std::fs::create_dir(dir.path().join("tftproot")).unwrap();
    std::fs::write(dir.path().join("tftproot/file0"), "i'm file0\n").unwrap();
    let big: Vec<u8> = (0..2000u32).map(|i| (i * 7 % 256) as u8).collect();
    std::fs::write(dir.path().join("big"), &big).unwrap();
    let root = format!("{}/tftproot/", dir.path().display());
    let g = graph(
        &host,
        &[
            ("tftp:file", "/file1", vec![("data", s("hello, world\n"))]),
            ("tftp:file", "/file2", vec![("path", s(&dir.path().join("big").display().to_string()))]),
            ("tftp:file", "/nope/noway", vec![("data", s("hidden")), ("server", s("someone else!"))]),
            ("tftp:server", "srv", vec![("address", s("127.0.0.1:0")), ("timeout", Value::Int(2)), ("root", s(&root))]),
        ],
        &[],
    );
    let engine = engine(&dir.path().join("state"));
    apply(&engine, g).await;
    let addr = host.tftp.bound("srv").expect("listening");
    assert_eq!(tftp_read(addr, "/file1").await.unwrap(), b"hello, world\n");
    assert_eq!(tftp_read(addr, "/file2").await.unwrap(), big);
    assert_eq!(tftp_read(addr, "/file0").await.unwrap(), b"i'm file0\n");
    assert_eq!(tftp_read(addr, "/nope/noway").await, Err(1));
    engine.shutdown(WAIT).await;
    assert!(host.tftp.bound("srv").is_none());
    assert!(host.tftp.files.is_empty());
}
