//! `http:server:file`: serves inline `data` or the file at `path` at its public name
//! (`filename`, default the resource name) on the server named by `server` (any server when
//! empty). A `path` ending in `/` serves that directory under a public name ending in `/`.
//! `data` can arrive by send/recv. With `longpoll`, a GET whose `If-Modified-Since` is not
//! older than the current version is held until the content changes (the file at `path`, or
//! a newly received `data`); versions are a logical `Last-Modified` kept strictly increasing
//! at one-second resolution so two quick updates are never conflated.

use lang::params::ParamMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use bytes::Bytes;
use engine::{ApplyCtx, Payload, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use hyper::header::{self, HeaderValue};
use hyper::{Method, StatusCode};
use tokio::sync::watch;

use super::{Content, Hub, Request, Response, Route};
use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::util::watch::FileWatch;

crate::params! {
    /// `http:server:file`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct FileParams {
        pub server: String,
        pub filename: String,
        pub path: String,
        pub data: String,
        pub longpoll: bool,
    }
}

pub struct HttpFile {
    raw: Raw,
    params: FileParams,
    hub: Arc<Hub>,
    route: Arc<FileRoute>,
}

/// The served side, shared between the resource and the server's request tasks.
pub struct FileRoute {
    /// The public path.
    public: String,
    /// The source file or directory; empty for inline data.
    source: String,
    longpoll: bool,
    state: Mutex<Version>,
    /// Bumped on every new version; long polls wait on it.
    changed: watch::Sender<u64>,
}

struct Version {
    data: String,
    /// The inline data's `Last-Modified`, and the long-poll cursor.
    mtime: SystemTime,
}

impl HttpFile {
    pub fn build(hub: Arc<Hub>, name: &str, values: &ParamMap) -> Result<HttpFile, BuildError> {
        let (raw, params) = Raw::decoded("http:server:file", name, values, FileParams::decode)?;
        let public = if params.filename.is_empty() { name.to_string() } else { params.filename.clone() };
        let route = Arc::new(FileRoute {
            public,
            source: params.path.clone(),
            longpoll: params.longpoll,
            state: Mutex::new(Version { data: params.data.clone(), mtime: super::truncate_secs(SystemTime::now()) }),
            changed: watch::Sender::new(0),
        });
        Ok(HttpFile { raw, params, hub, route })
    }

    fn err(&self, field: &str, message: impl Into<String>) -> ResError {
        self.raw.invalid(Some(field), message)
    }
}

impl FileRoute {
    fn lock(&self) -> std::sync::MutexGuard<'_, Version> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts a new version (new data, or the source file changed) and wakes long polls.
    fn bump(&self, data: Option<String>) {
        let mut v = self.lock();
        if let Some(data) = data {
            v.data = data;
        }
        v.mtime = next_mtime(v.mtime, SystemTime::now());
        drop(v);
        self.changed.send_modify(|n| *n += 1);
    }

    /// The content for `req_path` and its `Last-Modified` (the logical cursor when long
    /// polling).
    async fn content(&self, req_path: &str) -> std::io::Result<(Content, Option<SystemTime>)> {
        let (data, cursor) = {
            let v = self.lock();
            (v.data.clone(), v.mtime)
        };
        if self.source.is_empty() {
            return Ok((Content::Bytes(Bytes::from(data)), Some(cursor)));
        }
        let source = match self.relative(req_path) {
            Some(p) => p,
            None if self.source.ends_with('/') => {
                return Err(std::io::Error::new(std::io::ErrorKind::NotFound, "outside the directory"));
            }
            None => Path::new(&self.source).to_path_buf(),
        };
        let (content, mtime) = Content::open(&source).await?;
        Ok((content, if self.longpoll { Some(cursor) } else { mtime }))
    }

    /// For a directory source: the file a request under the public directory names.
    fn relative(&self, req_path: &str) -> Option<std::path::PathBuf> {
        if !self.source.ends_with('/') || !self.public.ends_with('/') {
            return None;
        }
        let rel = req_path.strip_prefix(&self.public)?;
        if rel.is_empty() || rel.ends_with('/') {
            return None;
        }
        super::join_under(Path::new(&self.source), rel)
    }

    async fn serve_once(&self, req: &Request) -> Response {
        match self.content(&req.path).await {
            Ok((content, mtime)) => super::serve_content(req, &req.path, mtime, content).await,
            Err(e) => {
                tracing::info!(path = %req.path, error = %e, "could not get content");
                super::io_error(&e)
            }
        }
    }

    async fn long_poll(&self, req: Arc<Request>) -> Response {
        let mut event = false;
        loop {
            // Subscribe before reading, so a change between the read and the wait is seen.
            let mut rx = self.changed.subscribe();
            let cursor = self.lock().mtime;
            if event || serve_now(req.headers.get(header::IF_MODIFIED_SINCE), cursor) {
                if event {
                    // Something new exists: never answer 304 on a same-second cursor.
                    let mut fresh = (*req).clone();
                    fresh.headers.remove(header::IF_MODIFIED_SINCE);
                    return self.serve_once(&fresh).await;
                }
                return self.serve_once(&req).await;
            }
            tokio::select! {
                changed = rx.changed() => {
                    if changed.is_err() {
                        return super::status(StatusCode::SERVICE_UNAVAILABLE);
                    }
                    event = true;
                }
                _ = req.shutdown.cancelled() => {
                    let mut resp = super::text(StatusCode::SERVICE_UNAVAILABLE, "http server shutting down");
                    resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                    return resp;
                }
            }
        }
    }
}

/// Whether a long poll with this `If-Modified-Since` is answered now: no (or an unreadable)
/// cursor, or a version strictly newer than it at one-second resolution.
fn serve_now(ims: Option<&HeaderValue>, version: SystemTime) -> bool {
    let Some(ims) = ims.and_then(|v| v.to_str().ok()).and_then(|v| httpdate::parse_http_date(v).ok()) else {
        return true;
    };
    super::truncate_secs(version) > ims
}

/// A version cursor strictly after `prev` at one-second resolution, and not before `now`.
fn next_mtime(prev: SystemTime, now: SystemTime) -> SystemTime {
    let now = super::truncate_secs(now);
    let min = super::truncate_secs(prev) + Duration::from_secs(1);
    now.max(min)
}

impl Route for FileRoute {
    fn accepts(&self, req: &Request) -> bool {
        (self.source.ends_with('/') && req.path.starts_with(&self.public)) || req.path == self.public
    }

    fn serve(self: Arc<Self>, req: Arc<Request>) -> BoxFuture<'static, Response> {
        Box::pin(async move {
            if req.method != Method::GET && req.method != Method::HEAD {
                return super::method_not_allowed("GET, HEAD");
            }
            if self.longpoll { self.long_poll(req).await } else { self.serve_once(&req).await }
        })
    }
}

#[async_trait]
impl Resource for HttpFile {
    fn validate(&self) -> Result<(), ResError> {
        if self.route.public.is_empty() {
            return Err(self.err("filename", "empty filename"));
        }
        let p = &self.params;
        if !p.path.is_empty() {
            crate::util::path::check(&p.path).map_err(|m| self.err("path", m))?;
        }
        if !p.path.is_empty() && !p.data.is_empty() {
            return Err(self.err("data", "must not specify both path and data"));
        }
        if p.longpoll && p.path.ends_with('/') {
            return Err(self.err("longpoll", "can't long poll a directory path"));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let hub = self.hub.clone();
        let route = self.route.clone();
        let server = self.params.server.clone();
        let follow = self.params.longpoll && !self.params.path.is_empty();
        Box::pin(async move {
            let _listed = hub.routes.register(&server, route.clone() as Arc<dyn Route>);
            if !follow {
                ctx.event();
                ctx.cancelled().await;
                return Ok(());
            }
            let mut watch = FileWatch::new(vec![route.source.clone().into()], false)?;
            ctx.event();
            loop {
                tokio::select! {
                    changed = watch.changed() => {
                        changed?;
                        route.bump(None);
                    }
                    _ = ctx.cancelled() => return Ok(()),
                }
            }
        })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        if self.route.lock().data == self.params.data {
            return Ok(true);
        }
        if !apply {
            ctx.report(format!("http:server:file[{}]: would serve new data", self.raw.name));
            return Ok(false);
        }
        self.route.bump(Some(self.params.data.clone()));
        Ok(false)
    }

    crate::fingerprint_by_params!();

    fn recv(&mut self, key: &str, value: &Payload) -> Result<bool, ResError> {
        if key != "data" {
            return Err(self.err(key, "only `data` can be received"));
        }
        self.raw.recv(key, value, &mut self.params, FileParams::decode)
    }
}

/// The `http:server:file` kind: its params and send fields as the type checker sees them, and its constructor.
pub const HTTP_SERVER_FILE: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("http:server:file", FileParams::FIELDS, |host, name, params| {
        Ok(Box::new(HttpFile::build(host.http.clone(), name, params)?))
    })
    .receiving();

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::common::payload;
    use crate::http::body_bytes;
    use crate::http::proxy::MemUpstream;
    use lang::value::Value;

    fn file(name: &str, pairs: &[(&str, Value)]) -> HttpFile {
        let values = pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        HttpFile::build(Hub::with_upstream(Arc::new(MemUpstream::default())), name, &values).unwrap()
    }

    async fn get(route: &Arc<FileRoute>, req: Request) -> (StatusCode, String) {
        let resp = route.clone().serve(Arc::new(req)).await;
        (resp.status(), String::from_utf8_lossy(&body_bytes(resp).await.unwrap()).into_owned())
    }

    #[test]
    fn validation_names_the_field() {
        let both = file("/f", &[("path", Value::str("/etc/hostname")), ("data", Value::str("x"))]);
        assert!(both.validate().unwrap_err().message.contains("field `data`: must not specify both"));
        let rel = file("/f", &[("path", Value::str("etc/hostname"))]);
        assert!(rel.validate().unwrap_err().message.contains("field `path`: path `"));
        let dir = file("/d/", &[("path", Value::str("/srv/")), ("longpoll", Value::Bool(true))]);
        assert!(dir.validate().unwrap_err().message.contains("long poll a directory"));
    }

    #[test]
    fn cursors_always_advance_by_at_least_a_second() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(100);
        assert_eq!(next_mtime(t, t), t + Duration::from_secs(1));
        assert_eq!(next_mtime(t, t + Duration::from_millis(2500)), t + Duration::from_secs(2));
        let ims = HeaderValue::from_str(&httpdate::fmt_http_date(t)).unwrap();
        assert!(!serve_now(Some(&ims), t + Duration::from_millis(900)));
        assert!(serve_now(Some(&ims), t + Duration::from_secs(1)));
        assert!(serve_now(None, t));
    }

    #[tokio::test]
    async fn serves_data_paths_and_directories() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "from disk").unwrap();
        let inline = file("/x", &[("data", Value::str("inline"))]);
        assert!(inline.route.accepts(&Request::new(Method::GET, "/x")));
        assert!(!inline.route.accepts(&Request::new(Method::GET, "/x/y")));
        assert_eq!(get(&inline.route, Request::new(Method::GET, "/x")).await, (StatusCode::OK, "inline".into()));
        assert_eq!(get(&inline.route, Request::new(Method::POST, "/x")).await.0, StatusCode::METHOD_NOT_ALLOWED);

        let one = file("/y", &[("path", Value::str(dir.path().join("a.txt").display().to_string()))]);
        assert_eq!(get(&one.route, Request::new(Method::GET, "/y")).await, (StatusCode::OK, "from disk".into()));

        let src = format!("{}/", dir.path().display());
        let tree = file("/pub/", &[("path", Value::str(&src))]);
        assert!(tree.route.accepts(&Request::new(Method::GET, "/pub/a.txt")));
        assert_eq!(get(&tree.route, Request::new(Method::GET, "/pub/a.txt")).await.1, "from disk");
        assert_eq!(get(&tree.route, Request::new(Method::GET, "/pub/nope")).await.0, StatusCode::NOT_FOUND);
        assert_eq!(get(&tree.route, Request::new(Method::GET, "/pub/../etc/passwd")).await.0, StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn received_data_is_served_and_wakes_long_polls() {
        let mut f = file("/event", &[("longpoll", Value::Bool(true))]);
        let cursor = httpdate::fmt_http_date(f.route.lock().mtime);
        let mut held = Request::new(Method::GET, "/event");
        held.headers.insert(header::IF_MODIFIED_SINCE, HeaderValue::from_str(&cursor).unwrap());
        let route = f.route.clone();
        let poll = tokio::spawn(async move { get(&route, held).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!poll.is_finished(), "an up-to-date client is held");

        assert!(f.recv("data", &payload(Value::str("pushed"))).unwrap());
        let mut ctx = ApplyCtx::detached();
        assert!(!f.check_apply(&mut ctx, false).await.unwrap(), "noop sees the change");
        assert_eq!(f.route.lock().data, "", "noop changes nothing");
        assert!(!f.check_apply(&mut ctx, true).await.unwrap());
        assert!(f.check_apply(&mut ctx, true).await.unwrap());
        let (status, body) = tokio::time::timeout(Duration::from_secs(5), poll).await.unwrap().unwrap();
        assert_eq!((status, body.as_str()), (StatusCode::OK, "pushed"));
        assert!(f.recv("path", &payload(Value::str("/x"))).is_err(), "only data is received");
    }

    #[tokio::test]
    async fn held_long_polls_answer_503_on_shutdown() {
        let f = file("/event", &[("longpoll", Value::Bool(true))]);
        let mut held = Request::new(Method::GET, "/event");
        let cursor = httpdate::fmt_http_date(f.route.lock().mtime);
        held.headers.insert(header::IF_MODIFIED_SINCE, HeaderValue::from_str(&cursor).unwrap());
        let stop = held.shutdown.clone();
        let route = f.route.clone();
        let poll = tokio::spawn(async move {
            let resp = route.serve(Arc::new(held)).await;
            (resp.status(), resp.headers().get(header::RETRY_AFTER).cloned())
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        stop.cancel();
        let (status, retry) = poll.await.unwrap();
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(retry.unwrap(), "1");
    }
}
