//! `http:client` through the engine against real HTTP servers on loopback, started by the
//! test as Python processes: a plain file server (`http.server`, which answers
//! `If-Modified-Since` with 304 and sends `Last-Modified`), and a small long-poll server that
//! holds a request until its content changes (conditional: `Prefer: wait=N`; redirect: a 302
//! to the held URL says it watches). The published responses are read back as
//! `net/http.response` reads them.

use crate::support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use engine::{Graph, Meta, ResKey};
use lang::value::Value;
use resources::{Machine, build_with};
use support::{engine, eventually, eventually_within, params, s};

/// A server process, killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `python3 -u -c SCRIPT ARGS…`, which prints its port on its first line.
fn python(script: &str, args: &[&str]) -> Server {
    let mut child = Command::new("python3")
        .arg("-u")
        .arg("-c")
        .arg(script)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let port = line.trim().parse().unwrap_or_else(|_| panic!("the server printed its port, not {line:?}"));
    Server { child, port }
}

/// `http.server` serving `dir` on `port` (0: any).
const FILES: &str = r#"
import functools, http.server, sys
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
handler.log_message = lambda *a: None
srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), handler)
srv.allow_reuse_address = True
print(srv.server_address[1], flush=True)
srv.serve_forever()
"#;

/// A long-poll server: GET /event answers the current text with its version as
/// `Last-Modified`, holding the request while `If-Modified-Since` is current and the client
/// asked to wait; GET /watch redirects there; POST /set sets a new text.
const LONGPOLL: &str = r#"
import email.utils, http.server, sys, threading, time
state = {"text": b"first\n", "version": int(time.time())}
cond = threading.Condition()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with cond:
            state["text"] = body
            state["version"] = max(int(time.time()), state["version"] + 1)
            cond.notify_all()
        self.send_response(204); self.send_header("Content-Length", "0"); self.end_headers()
    def do_GET(self):
        if self.path == "/watch":
            self.send_response(302); self.send_header("Location", "/event")
            self.send_header("Content-Length", "0"); self.end_headers(); return
        ims = self.headers.get("If-Modified-Since")
        cursor = int(email.utils.parsedate_to_datetime(ims).timestamp()) if ims else None
        wait = self.headers.get("Prefer", "").startswith("wait=") or sys.argv[1] == "always"
        with cond:
            if cursor is not None and wait:
                cond.wait_for(lambda: state["version"] > cursor, timeout=30)
            text, version = state["text"], state["version"]
        if cursor is not None and version <= cursor:
            self.send_response(304); self.send_header("Content-Length", "0"); self.end_headers(); return
        self.send_response(200)
        self.send_header("Last-Modified", email.utils.formatdate(version, usegmt=True))
        self.send_header("Content-Length", str(len(text))); self.end_headers(); self.wfile.write(text)
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
"#;

fn client_graph(host: &Machine, name: &str, pairs: &[(&str, Value)], meta: Meta) -> Graph {
    let mut g = Graph::new();
    let res = build_with(host, "http:client", name, &params(pairs)).unwrap();
    g.add_vertex(ResKey::new("http:client", name), meta, res);
    g
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

fn mtime_secs(p: &Path) -> u64 {
    let t = std::fs::metadata(p).unwrap().modified().unwrap();
    t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs()
}

/// What `net/http.response` would see: (status, file holding the body).
fn published(host: &Machine, name: &str) -> Option<(i64, String)> {
    let v = host.values.get_in(resources::http::client::RESPONSES, name)?;
    Some((v.field("status")?.as_int()?, v.field("path")?.as_str()?.to_string()))
}

/// Sets the file's text and pushes its mtime a few seconds on (HTTP dates have seconds).
fn serve(path: &Path, text: &str, ahead: u64) {
    std::fs::write(path, text).unwrap();
    let t = SystemTime::now() + Duration::from_secs(ahead);
    std::fs::File::options().write(true).open(path).unwrap().set_modified(t).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn downloads_keeps_repairs_and_outlasts_a_server_outage() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir(&site).unwrap();
    serve(&site.join("motd"), "hello\n", 0);
    let server = python(FILES, &[site.to_str().unwrap(), "0"]);
    let port = server.port;
    let dst: PathBuf = dir.path().join("motd");
    let name = dst.display().to_string();
    let url = format!("http://127.0.0.1:{port}/motd");
    let host = Machine::sandbox(dir.path().join("host"));
    let engine = engine(&dir.path().join("state"));
    let meta = Meta { poll: 1, ..Meta::default() };
    engine.apply(client_graph(&host, &name, &[("url", s(&url))], meta)).await.unwrap();
    assert!(engine.wait_converged(support::WAIT).await);
    assert_eq!(read(&dst), "hello\n");
    assert_eq!(mtime_secs(&dst), mtime_secs(&site.join("motd")), "the server's Last-Modified is the file's mtime");
    assert_eq!(published(&host, &name), Some((200, name.clone())));

    // A change on the server reaches the file at the next poll.
    serve(&site.join("motd"), "changed\n", 3);
    assert!(eventually(|| read(&dst) == "changed\n").await, "the new version is downloaded");

    // Drift: a deletion, then an edit (its mtime is newer than the server's: no 304 for it).
    std::fs::remove_file(&dst).unwrap();
    assert!(eventually(|| read(&dst) == "changed\n").await, "a deleted file is downloaded again");
    std::fs::write(&dst, "tampered\n").unwrap();
    assert!(eventually(|| read(&dst) == "changed\n").await, "an edited file is downloaded again");

    // The server goes away: the failure is published (-1), the file is left alone, and once
    // the server is back on its port the file is repaired without any help.
    drop(server);
    std::fs::write(&dst, "tampered again\n").unwrap();
    assert!(
        eventually_within(Duration::from_secs(15), || published(&host, &name).is_some_and(|(st, _)| st == -1)).await,
        "the outage is published: {:?}",
        published(&host, &name)
    );
    assert_eq!(read(&dst), "tampered again\n");
    let _back = python(FILES, &[site.to_str().unwrap(), &port.to_string()]);
    assert!(
        eventually_within(Duration::from_secs(40), || read(&dst) == "changed\n").await,
        "repaired once the server is back"
    );
    assert!(eventually(|| published(&host, &name) == Some((200, name.clone()))).await);

    // A 404 is an error with its status published, and noop changes nothing.
    let missing = dir.path().join("missing");
    let mut res = build_with(
        &host,
        "http:client",
        missing.to_str().unwrap(),
        &params(&[("url", s(&format!("http://127.0.0.1:{}/nope", _back.port)))]),
    )
    .unwrap();
    let mut ctx = engine::ApplyCtx::detached();
    let err = res.check_apply(&mut ctx, true).await.unwrap_err();
    assert!(err.message.contains("404"), "{err}");
    assert_eq!(published(&host, missing.to_str().unwrap()).map(|p| p.0), Some(404));
    engine.shutdown(support::WAIT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_poll_delivers_each_change_as_it_happens() {
    for (mode, path) in [("longpoll_conditional", "/event"), ("longpoll_redirect", "/watch")] {
        let dir = tempfile::tempdir().unwrap();
        // The redirect form sends no `Prefer`: that server holds every request with a cursor.
        let server = python(LONGPOLL, &[if mode == "longpoll_redirect" { "always" } else { "prefer" }]);
        let dst = dir.path().join("event");
        let name = dst.display().to_string();
        let url = format!("http://127.0.0.1:{}{path}", server.port);
        let host = Machine::sandbox(dir.path().join("host"));
        let engine = engine(&dir.path().join("state"));
        let pairs = [("url", s(&url)), ("longpoll", Value::Bool(true)), (mode, Value::Bool(true))];
        engine.apply(client_graph(&host, &name, &pairs, Meta::default())).await.unwrap();
        assert!(eventually(|| read(&dst) == "first\n").await, "{mode}: the first answer is written");
        for text in ["second\n", "third\n"] {
            let set = format!("http://127.0.0.1:{}/set", server.port);
            let out = Command::new("curl").args(["-sf", "-X", "POST", "--data-binary", text, &set]).output().unwrap();
            assert!(out.status.success(), "the server takes the change");
            assert!(
                eventually_within(Duration::from_secs(5), || read(&dst) == text).await,
                "{mode}: the held request delivers {text:?} (file: {:?})",
                read(&dst)
            );
        }
        assert_eq!(published(&host, &name), Some((200, name.clone())));
        engine.shutdown(support::WAIT).await;
    }
}
