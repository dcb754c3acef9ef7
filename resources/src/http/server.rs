//! `http:server`: listens on `address` (default: the name) while its watch runs and answers
//! each request with the first registered route of this server that accepts it, then with
//! a file under `root`, else 404. Timeouts follow mgmt: `timeout` is the default for
//! `read_timeout` (request head and body), `write_timeout` (producing and sending the
//! response; it also ends long polls) and `shutdown_timeout` (the graceful drain when the
//! server stops; without one the drain waits for the engine's stop deadline).

use lang::params::ParamMap;
use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use http_body_util::{BodyExt, Limited};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::service::service_fn;
use hyper::{Method, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::{Body, Content, Hub, Request, Response};
use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::util::listen::{bind_first, check_root, parse_listen};

/// The largest request body read before dispatch (flag and ui forms are small).
pub const MAX_BODY: usize = 4 << 20;

/// How long a client may take to send a request's head, and then its body, when neither
/// `read_timeout` nor `timeout` says: a client that opens a connection and sends nothing
/// (or half a request) is dropped then, and holds nothing of the server's.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The most connections one server holds at once; one more is closed as soon as it is
/// accepted, so loopback clients cannot take the daemon's file descriptors (which its
/// other resources need).
pub const MAX_CONNS: usize = 512;

/// The largest request head a connection buffers (hyper's default is ~400 KiB).
pub const MAX_HEAD: usize = 64 << 10;

crate::params! {
    /// `http:server`'s params; timeouts in seconds.
    #[derive(Clone, Debug, PartialEq)]
    pub struct ServerParams {
        pub address: String,
        pub timeout: Option<u64>,
        pub read_timeout: Option<u64>,
        pub write_timeout: Option<u64>,
        pub shutdown_timeout: Option<u64>,
        pub root: String,
    }
}

impl ServerParams {
    /// A specific timeout, else `timeout`; zero means none.
    fn pick(&self, specific: Option<u64>) -> Option<Duration> {
        specific.or(self.timeout).filter(|s| *s > 0).map(Duration::from_secs)
    }
}

pub struct HttpServer {
    raw: Raw,
    params: ServerParams,
    hub: Arc<Hub>,
}

impl HttpServer {
    pub fn build(hub: Arc<Hub>, name: &str, values: &ParamMap) -> Result<HttpServer, BuildError> {
        let (raw, params) = Raw::decoded("http:server", name, values, ServerParams::decode)?;
        Ok(HttpServer { raw, params, hub })
    }

    fn address(&self) -> &str {
        crate::util::listen::address(&self.params.address, &self.raw.name)
    }

    fn err(&self, field: &str, message: impl Into<String>) -> ResError {
        self.raw.invalid(Some(field), message)
    }
}

/// What every connection of one running server shares.
struct Serving {
    hub: Arc<Hub>,
    name: String,
    root: String,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    /// Cancelled when the server stops, so held requests answer.
    shutdown: CancellationToken,
}

#[async_trait]
impl Resource for HttpServer {
    fn validate(&self) -> Result<(), ResError> {
        crate::util::listen::validate(self.address(), &self.params.root).map_err(|(field, why)| self.err(field, why))
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let address = self.address().to_string();
        let key = format!("http:server[{}]", self.raw.name);
        let serving = Arc::new(Serving {
            hub: self.hub.clone(),
            name: self.raw.name.clone(),
            root: self.params.root.clone(),
            read_timeout: Some(self.params.pick(self.params.read_timeout).unwrap_or(DEFAULT_READ_TIMEOUT)),
            write_timeout: self.params.pick(self.params.write_timeout),
            shutdown: CancellationToken::new(),
        });
        let drain = self.params.pick(self.params.shutdown_timeout);
        Box::pin(async move {
            let listener =
                bind_first(&address, TcpListener::bind).await.map_err(|e| ResError::new(format!("{key}: {e}")))?;
            let local = listener.local_addr().map_err(|e| ResError::new(format!("{key}: {e}")))?;
            if parse_listen(&address).is_ok_and(|(ip, _)| ip.is_none_or(|ip| ip.is_unspecified())) {
                tracing::warn!(resource = %key, "listening on all interfaces at {address}");
            }
            tracing::info!(resource = %key, %local, "listening");
            serving.hub.set_bound(&serving.name, Some(local));
            ctx.event();
            let result = serve(listener, serving.clone(), ctx.token(), drain).await;
            if serving.hub.bound(&serving.name) == Some(local) {
                serving.hub.set_bound(&serving.name, None);
            }
            result.map_err(|e| ResError::new(format!("{key}: the server errored: {e}")))
        })
    }

    async fn check_apply(&mut self, _ctx: &mut ApplyCtx, _apply: bool) -> Result<bool, ResError> {
        let key = format!("http:server[{}]", self.raw.name);
        check_root(&key, &self.params.root).map_err(|m| self.err("root", m))?;
        if self.hub.bound(&self.raw.name).is_none() {
            return Err(ResError::new(format!("http:server[{}]: not listening on {}", self.raw.name, self.address())));
        }
        Ok(true)
    }

    crate::fingerprint_by_params!();
}

/// Accepts connections until `stop`, then drains them (within `drain` when given). Every
/// connection task belongs to a join set, so none outlives this future.
async fn serve(
    listener: TcpListener,
    serving: Arc<Serving>,
    stop: CancellationToken,
    drain: Option<Duration>,
) -> io::Result<()> {
    let graceful = GracefulShutdown::new();
    let mut conns = JoinSet::new();
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNS));
    let mut refused: u64 = 0;
    let outcome = loop {
        tokio::select! {
            _ = stop.cancelled() => break Ok(()),
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _peer)) => stream,
                    // Out of descriptors: wait for some to close instead of spinning.
                    Err(e) if e.raw_os_error().is_some_and(|c| c == nix::libc::EMFILE || c == nix::libc::ENFILE) => {
                        tracing::warn!(server = %serving.name, error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                    // Per-connection failures (e.g. the peer reset) do not stop the server.
                    Err(e) if is_transient(&e) => continue,
                    Err(e) => break Err(e),
                };
                let Ok(slot) = slots.clone().try_acquire_owned() else {
                    // Closed at once: its descriptor is back before the next accept.
                    drop(stream);
                    if refused.is_multiple_of(1000) {
                        tracing::warn!(
                            server = %serving.name,
                            refused = refused + 1,
                            "{MAX_CONNS} connections are open: closing new ones until some end"
                        );
                    }
                    refused += 1;
                    continue;
                };
                let mut builder = hyper::server::conn::http1::Builder::new();
                builder.timer(TokioTimer::new());
                builder.header_read_timeout(serving.read_timeout);
                builder.max_buf_size(MAX_HEAD);
                let serving = serving.clone();
                let svc = service_fn(move |req| handle(serving.clone(), req));
                let conn = builder.serve_connection(TokioIo::new(stream), svc);
                let watched = graceful.watch(conn);
                conns.spawn(async move {
                    let _closed = watched.await;
                    drop(slot);
                });
            }
        }
    };
    drop(listener);
    serving.shutdown.cancel();
    match drain {
        Some(limit) => {
            let _drained = tokio::time::timeout(limit, graceful.shutdown()).await;
        }
        None => graceful.shutdown().await,
    }
    conns.shutdown().await;
    outcome
}

fn is_transient(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset | io::ErrorKind::Interrupted)
        || e.raw_os_error().is_some_and(|code| code == nix::libc::EMFILE || code == nix::libc::ENFILE)
}

async fn handle(serving: Arc<Serving>, req: hyper::Request<Incoming>) -> Result<Response, Infallible> {
    let (parts, body) = req.into_parts();
    let collect = Limited::new(body, MAX_BODY).collect();
    let body = match serving.read_timeout {
        Some(limit) => match tokio::time::timeout(limit, collect).await {
            Ok(b) => b,
            Err(_) => return Ok(super::status(StatusCode::REQUEST_TIMEOUT)),
        },
        None => collect.await,
    };
    let body = match body {
        Ok(b) => b.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return Ok(super::status(StatusCode::PAYLOAD_TOO_LARGE));
        }
        // A malformed body (a bad chunk size, a connection cut mid-body).
        Err(_) => return Ok(super::status(StatusCode::BAD_REQUEST)),
    };
    // A NUL never names a file (and would make the open fail as a server error).
    let Some(path) = super::percent_decode(parts.uri.path()).filter(|p| !p.contains('\0')) else {
        return Ok(super::status(StatusCode::BAD_REQUEST));
    };
    tracing::info!(server = %serving.name, method = %parts.method, %path, "request");
    let req = Arc::new(Request {
        method: parts.method,
        path,
        query: parts.uri.query().unwrap_or("").to_string(),
        headers: parts.headers,
        body,
        shutdown: serving.shutdown.clone(),
    });
    let answer = answer(&serving, req);
    let resp = match serving.write_timeout {
        Some(limit) => {
            let deadline = tokio::time::Instant::now() + limit;
            match tokio::time::timeout_at(deadline, answer).await {
                Ok(resp) => {
                    resp.map(|b| Body::new(Deadline { inner: b, sleep: Box::pin(tokio::time::sleep_until(deadline)) }))
                }
                Err(_) => super::status(StatusCode::SERVICE_UNAVAILABLE),
            }
        }
        None => answer.await,
    };
    Ok(resp)
}

/// The routes of this server, then the root directory, then 404.
async fn answer(serving: &Serving, req: Arc<Request>) -> Response {
    let routes = serving.hub.routes.members(&serving.name);
    if let Some(resp) = super::dispatch(&routes, req.clone()).await {
        return resp;
    }
    if serving.root.is_empty() {
        tracing::info!(server = %serving.name, path = %req.path, "file not found");
        return super::not_found();
    }
    if req.method != Method::GET && req.method != Method::HEAD {
        return super::method_not_allowed("GET, HEAD");
    }
    let Some(path) = super::join_under(std::path::Path::new(&serving.root), &req.path) else {
        return super::not_found();
    };
    match Content::open(&path).await {
        Ok((content, mtime)) => super::serve_content(&req, &req.path, mtime, content).await,
        Err(e) => super::io_error(&e),
    }
}

/// A response body that fails once the write deadline passes (Go's `WriteTimeout`).
struct Deadline {
    inner: Body,
    sleep: Pin<Box<tokio::time::Sleep>>,
}

impl hyper::body::Body for Deadline {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = self.get_mut();
        if this.sleep.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(io::Error::new(io::ErrorKind::TimedOut, "write timeout"))));
        }
        Pin::new(&mut this.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The `http:server` kind: its params and send fields as the type checker sees them, and its constructor.
pub const HTTP_SERVER: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("http:server", ServerParams::FIELDS, |host, name, params| {
        Ok(Box::new(HttpServer::build(host.http.clone(), name, params)?))
    })
    .in_graph(crate::contract::kind::InGraph {
        // mgmt's grouping of a server's routes: one vertex serves them (each route still
        // finds its server in the hub), a route that names another server stays apart.
        autogroup: Some(crate::contract::kind::AutoGroup {
            by_default: true,
            members: &["http:server:file", "http:server:flag", "http:server:proxy", "http:server:ui"],
            notified_apart: false,
            fits: |group, member| {
                let server = crate::contract::group::str_param(member, "server");
                member.kind != group.kind && (server.is_empty() || server == group.name)
            },
            build: None,
        }),
        ..crate::contract::kind::InGraph::NONE
    });

#[cfg(test)]
mod tests {
    use super::*;
    use lang::value::Value;

    fn build(pairs: &[(&str, Value)]) -> Result<HttpServer, BuildError> {
        let values = pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        HttpServer::build(Hub::with_upstream(Arc::new(super::super::proxy::MemUpstream::default())), ":8080", &values)
    }

    /// Sends `request` raw to a server with no routes and no root; its status line.
    async fn status_of(request: &[u8]) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let serving = Arc::new(Serving {
            hub: Hub::with_upstream(Arc::new(super::super::proxy::MemUpstream::default())),
            name: "s".into(),
            root: String::new(),
            read_timeout: Some(Duration::from_secs(2)),
            write_timeout: None,
            shutdown: CancellationToken::new(),
        });
        let stop = CancellationToken::new();
        let task = tokio::spawn(serve(listener, serving, stop.clone(), Some(Duration::from_secs(1))));
        let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
        conn.write_all(request).await.unwrap();
        let mut reply = Vec::new();
        let _read = tokio::time::timeout(Duration::from_secs(5), conn.read_to_end(&mut reply)).await;
        stop.cancel();
        task.await.unwrap().unwrap();
        String::from_utf8_lossy(&reply).lines().next().unwrap_or("").to_string()
    }

    /// Issue 44, defect 7: a NUL in the path and a malformed chunk size are the client's
    /// errors (400), not the server's.
    #[tokio::test]
    async fn a_nul_in_the_path_and_a_bad_chunk_are_bad_requests() {
        let nul = status_of(b"GET /a%00b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await;
        assert!(nul.starts_with("HTTP/1.1 400"), "{nul}");
        let chunk = b"POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\nab\r\n0\r\n\r\n";
        let bad = status_of(chunk).await;
        assert!(bad.starts_with("HTTP/1.1 400"), "{bad}");
        let fine = status_of(b"GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await;
        assert!(fine.starts_with("HTTP/1.1 404"), "{fine}");
    }

    #[test]
    fn validation_names_the_field() {
        let s = build(&[("root", Value::str("relative/"))]).unwrap();
        assert!(s.validate().unwrap_err().message.contains("field `root`: path `relative/` must be absolute"));
        let s = build(&[("root", Value::str("/srv"))]).unwrap();
        assert!(s.validate().unwrap_err().message.contains("must be a directory"));
        let s = build(&[("address", Value::str("nope"))]).unwrap();
        assert!(s.validate().unwrap_err().message.contains("http:server[:8080]: field `address`: missing port"));
        let err = build(&[("timeout", Value::Int(-1))]).err().expect("negative timeout");
        assert_eq!(err.field.as_deref(), Some("timeout"));
        let s = build(&[("timeout", Value::Int(60)), ("write_timeout", Value::Int(0))]).unwrap();
        assert_eq!(s.params.pick(s.params.read_timeout), Some(Duration::from_secs(60)));
        assert_eq!(s.params.pick(s.params.write_timeout), None, "zero disables the write timeout");
        assert!(build(&[]).unwrap().validate().is_ok());
    }
}
