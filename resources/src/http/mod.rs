//! The `http:server` family: the [`Hub`] the kinds share (route and ui-input registries plus
//! the proxy's upstream backend), the [`Route`] contract sub-resources implement, the
//! request as routes see it, and response helpers (static content with `Last-Modified`,
//! conditional GET, single byte ranges and MIME types by extension).
//!
//! mgmt groups `http:server:*` resources into their server at runtime; tend has no
//! autogrouping, so the server owns the listener and looks its routes up in the hub on every
//! request, while each sub-resource keeps its route registered for as long as its watch
//! runs. Start order does not matter: a route registered before its server is simply found
//! once the server listens.

pub mod client;
pub mod file;
pub mod flag;
pub mod proxy;
pub mod server;
pub mod ui;

use std::io;
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures::future::BoxFuture;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty, Full, StreamBody};
use hyper::body::Frame;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, StatusCode};
use tokio::io::{AsyncReadExt, AsyncSeekExt};
use tokio_util::sync::CancellationToken;

use crate::util::registry::Registry;

/// A response body: in memory or streamed from a file.
pub type Body = BoxBody<Bytes, io::Error>;
pub type Response = hyper::Response<Body>;

/// What the http kinds of one engine share.
pub struct Hub {
    /// Routes of `http:server:file`, `:flag`, `:proxy` and `:ui`, by the server they name.
    pub routes: Arc<Registry<dyn Route>>,
    /// Inputs of `http:server:ui:input`, by the ui they name.
    pub inputs: Arc<Registry<ui::Input>>,
    /// Where `http:server:proxy` downloads from.
    pub upstream: Arc<dyn proxy::Upstream>,
    /// The address each running server listens on, by server name.
    bound: crate::util::listen::Bound,
}

impl Hub {
    /// The process-wide hub of the real host (downloads through `curl`).
    /// A fresh hub (tests: one per sandbox) downloading through `upstream`.
    pub fn with_upstream(upstream: Arc<dyn proxy::Upstream>) -> Arc<Hub> {
        Arc::new(Hub { routes: Registry::new(), inputs: Registry::new(), upstream, bound: Default::default() })
    }

    /// Where the `http:server` called `name` listens, while it does.
    pub fn bound(&self, name: &str) -> Option<SocketAddr> {
        self.bound.get(name)
    }

    fn set_bound(&self, name: &str, addr: Option<SocketAddr>) {
        self.bound.set(name, addr)
    }
}

/// A route's `path` param must be absolute (`validate` of the routes).
fn check_route_path(raw: &crate::contract::common::Raw, path: &str) -> Result<(), engine::ResError> {
    if path.starts_with('/') {
        return Ok(());
    }
    Err(raw.invalid(Some("path"), format!("the path must be absolute, found `{path}`")))
}

/// One request as routes see it; the body has been read (size-capped) before dispatch.
#[derive(Clone)]
pub struct Request {
    pub method: Method,
    /// The percent-decoded path.
    pub path: String,
    /// The raw query string (without `?`).
    pub query: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// Cancelled when the server stops: held requests (long polls) must answer then.
    pub shutdown: CancellationToken,
}

impl Request {
    /// A request for tests and internal callers.
    pub fn new(method: Method, target: &str) -> Request {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        Request {
            method,
            path: percent_decode(path).unwrap_or_else(|| path.to_string()),
            query: query.to_string(),
            headers: HeaderMap::new(),
            body: Bytes::new(),
            shutdown: CancellationToken::new(),
        }
    }

    /// The url-encoded form fields of the body (as Go's `PostForm`): empty unless the body
    /// is `application/x-www-form-urlencoded` (or has no content type).
    pub fn form(&self) -> Vec<(String, String)> {
        let ctype = self.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        let essence = ctype.split(';').next().unwrap_or("").trim();
        if !essence.is_empty() && !essence.eq_ignore_ascii_case("application/x-www-form-urlencoded") {
            return Vec::new();
        }
        form_urlencoded::parse(&self.body).into_owned().collect()
    }

    /// Every value of form field `key`, in order.
    pub fn form_values(&self, key: &str) -> Vec<String> {
        self.form().into_iter().filter(|(k, _)| k == key).map(|(_, v)| v).collect()
    }

    fn header(&self, name: header::HeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// What an `http:server` sub-resource serves (mgmt's `AcceptHTTP` + `ServeHTTP`).
pub trait Route: Send + Sync + 'static {
    /// Whether this route answers `req`; must be quick and pure.
    fn accepts(&self, req: &Request) -> bool;

    /// Whether every accepting shared route sees the request, not only the first (flags
    /// at one path each read their own form field from the same POST).
    fn shared(&self) -> bool {
        false
    }

    fn serve(self: Arc<Self>, req: Arc<Request>) -> BoxFuture<'static, Response>;
}

/// Offers `req` to `routes` in order: the first accepting route answers; when it is shared,
/// every other accepting shared route handles the request too (their answers are dropped).
/// `None` when no route accepts.
pub async fn dispatch(routes: &[Arc<dyn Route>], req: Arc<Request>) -> Option<Response> {
    let first = routes.iter().position(|r| r.accepts(&req))?;
    if !routes[first].shared() {
        return Some(routes[first].clone().serve(req).await);
    }
    let answer = routes[first].clone().serve(req.clone()).await;
    for route in routes[first + 1..].iter().filter(|r| r.shared() && r.accepts(&req)) {
        route.clone().serve(req.clone()).await;
    }
    Some(answer)
}

/// A body from bytes.
pub fn full(data: impl Into<Bytes>) -> Body {
    Full::new(data.into()).map_err(|never| match never {}).boxed()
}

pub fn empty() -> Body {
    Empty::new().map_err(|never| match never {}).boxed()
}

/// A response with a body and content type.
pub fn respond(status: StatusCode, content_type: &str, data: impl Into<Bytes>) -> Response {
    let mut resp = hyper::Response::new(full(data));
    *resp.status_mut() = status;
    if let Ok(v) = HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    resp
}

/// A plain-text error page, like Go's `http.Error`.
pub fn text(status: StatusCode, message: &str) -> Response {
    let mut resp = respond(status, "text/plain; charset=utf-8", format!("{message}\n"));
    resp.headers_mut().insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    resp
}

pub fn not_found() -> Response {
    text(StatusCode::NOT_FOUND, "404 page not found")
}

pub fn status(status: StatusCode) -> Response {
    text(status, &format!("{} {}", status.as_u16(), status.canonical_reason().unwrap_or("")))
}

/// 405 with the methods that are allowed.
pub fn method_not_allowed(allow: &str) -> Response {
    let mut resp = status(StatusCode::METHOD_NOT_ALLOWED);
    if let Ok(v) = HeaderValue::from_str(allow) {
        resp.headers_mut().insert(header::ALLOW, v);
    }
    resp
}

pub fn json(status: StatusCode, value: &serde_json::Value) -> Response {
    respond(status, "application/json; charset=utf-8", value.to_string())
}

/// The answer for a failed file operation: 404, 403 or 500 without leaking paths.
pub fn io_error(err: &io::Error) -> Response {
    match err.kind() {
        io::ErrorKind::NotFound => not_found(),
        io::ErrorKind::PermissionDenied => text(StatusCode::FORBIDDEN, "403 Forbidden"),
        _ => text(StatusCode::INTERNAL_SERVER_ERROR, "500 Internal Server Error"),
    }
}

/// What [`serve_content`] sends.
pub enum Content {
    Bytes(Bytes),
    /// An open file and its length.
    File(tokio::fs::File, u64),
}

impl Content {
    /// Opens a regular file (a directory is "not found").
    pub async fn open(path: &Path) -> io::Result<(Content, Option<SystemTime>)> {
        let file = tokio::fs::File::open(path).await?;
        let meta = file.metadata().await?;
        if meta.is_dir() {
            return Err(io::Error::new(io::ErrorKind::NotFound, "is a directory"));
        }
        Ok((Content::File(file, meta.len()), meta.modified().ok()))
    }
}

/// Serves `content` for a GET or HEAD the way Go's `http.ServeContent` does for the cases
/// that matter here: `Content-Type` from the extension of `name` (else sniffed text or
/// binary), `Last-Modified` and `If-Modified-Since` (304), `Accept-Ranges` with one
/// `bytes=` range (206, or 416 when unsatisfiable), and no body for HEAD.
pub async fn serve_content(req: &Request, name: &str, mtime: Option<SystemTime>, content: Content) -> Response {
    let mtime = mtime.filter(|t| *t > UNIX_EPOCH);
    if let (Some(t), Some(ims)) = (mtime, req.header(header::IF_MODIFIED_SINCE))
        && let Ok(ims) = httpdate::parse_http_date(ims)
        && truncate_secs(t) <= ims
    {
        let mut resp = hyper::Response::new(empty());
        *resp.status_mut() = StatusCode::NOT_MODIFIED;
        set_last_modified(resp.headers_mut(), t);
        return resp;
    }
    let (mut content, len) = match content {
        Content::Bytes(b) => {
            let len = b.len() as u64;
            (Content::Bytes(b), len)
        }
        Content::File(f, len) => (Content::File(f, len), len),
    };
    let ctype = match mime_by_extension(name) {
        Some(t) => t.to_string(),
        None => sniff(&mut content).await,
    };
    let range = req.header(header::RANGE).map(|r| parse_range(r, len));
    let (status, start, count) = match range {
        Some(Some(Some((start, end)))) => (StatusCode::PARTIAL_CONTENT, start, end - start + 1),
        Some(Some(None)) => {
            let mut resp = status(StatusCode::RANGE_NOT_SATISFIABLE);
            if let Ok(v) = HeaderValue::from_str(&format!("bytes */{len}")) {
                resp.headers_mut().insert(header::CONTENT_RANGE, v);
            }
            return resp;
        }
        // No range header, or one we do not handle (several ranges): the whole content.
        _ => (StatusCode::OK, 0, len),
    };
    let body = if req.method == Method::HEAD {
        empty()
    } else {
        match content {
            Content::Bytes(b) => full(b.slice(start as usize..(start + count) as usize)),
            Content::File(mut f, _) => {
                if let Err(e) = f.seek(io::SeekFrom::Start(start)).await {
                    return io_error(&e);
                }
                let stream = tokio_util::io::ReaderStream::new(f.take(count));
                StreamBody::new(futures::StreamExt::map(stream, |chunk| chunk.map(Frame::data))).boxed()
            }
        }
    };
    let mut resp = hyper::Response::new(body);
    *resp.status_mut() = status;
    let headers = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&ctype) {
        headers.insert(header::CONTENT_TYPE, v);
    }
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(count));
    if status == StatusCode::PARTIAL_CONTENT
        && let Ok(v) = HeaderValue::from_str(&format!("bytes {start}-{}/{len}", start + count - 1))
    {
        headers.insert(header::CONTENT_RANGE, v);
    }
    if let Some(t) = mtime {
        set_last_modified(headers, t);
    }
    resp
}

fn set_last_modified(headers: &mut HeaderMap, t: SystemTime) {
    if let Ok(v) = HeaderValue::from_str(&httpdate::fmt_http_date(t)) {
        headers.insert(header::LAST_MODIFIED, v);
    }
}

/// `t` without its sub-second part (what survives an HTTP date).
pub fn truncate_secs(t: SystemTime) -> SystemTime {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => UNIX_EPOCH + Duration::from_secs(d.as_secs()),
        Err(_) => t,
    }
}

/// One `bytes=` range against a length: `None` when the header is not one range we handle
/// (served whole), `Some(None)` when unsatisfiable, else the inclusive `(start, end)`.
fn parse_range(header: &str, len: u64) -> Option<Option<(u64, u64)>> {
    let spec = header.trim().strip_prefix("bytes=")?;
    if spec.contains(',') {
        return None;
    }
    let (a, b) = spec.split_once('-')?;
    let (a, b) = (a.trim(), b.trim());
    if a.is_empty() {
        let suffix: u64 = b.parse().ok()?;
        if suffix == 0 || len == 0 {
            return Some(None);
        }
        return Some(Some((len.saturating_sub(suffix), len - 1)));
    }
    let start: u64 = a.parse().ok()?;
    if start >= len {
        return Some(None);
    }
    let end = if b.is_empty() { len - 1 } else { b.parse::<u64>().ok()?.min(len - 1) };
    if end < start {
        return None;
    }
    Some(Some((start, end)))
}

/// Text or binary from the first 512 bytes (rewinding a file afterwards).
async fn sniff(content: &mut Content) -> String {
    let head = match content {
        Content::Bytes(b) => b.slice(..b.len().min(512)).to_vec(),
        Content::File(f, _) => {
            let mut buf = vec![0u8; 512];
            let n = f.read(&mut buf).await.unwrap_or(0);
            buf.truncate(n);
            let _rewound = f.seek(io::SeekFrom::Start(0)).await;
            buf
        }
    };
    let trimmed = head.iter().skip_while(|b| b.is_ascii_whitespace()).take(14).copied().collect::<Vec<u8>>();
    let lower = String::from_utf8_lossy(&trimmed).to_ascii_lowercase();
    if lower.starts_with("<!doctype html") || lower.starts_with("<html") {
        return "text/html; charset=utf-8".into();
    }
    let text = match std::str::from_utf8(&head) {
        Ok(_) => true,
        // A multi-byte character cut at the 512-byte boundary is still text.
        Err(e) => e.valid_up_to() + 4 > head.len() && e.error_len().is_none(),
    };
    if text && !head.iter().any(|b| b.is_ascii_control() && !b"\t\n\r\x0c".contains(b)) {
        "text/plain; charset=utf-8".into()
    } else {
        "application/octet-stream".into()
    }
}

/// The MIME type for the extension of `name`, when known.
pub fn mime_by_extension(name: &str) -> Option<&'static str> {
    let base = name.rsplit('/').next().unwrap_or(name);
    let ext = base.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match ext.as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "json" => "application/json",
        "txt" | "text" => "text/plain; charset=utf-8",
        "xml" => "text/xml; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "ico" => "image/vnd.microsoft.icon",
        "webp" => "image/webp",
        "wasm" => "application/wasm",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" | "tgz" => "application/gzip",
        "xz" => "application/x-xz",
        "tar" => "application/x-tar",
        "iso" => "application/x-iso9660-image",
        "rpm" => "application/x-rpm",
        "deb" => "application/vnd.debian.binary-package",
        "efi" | "img" | "bin" => "application/octet-stream",
        _ => return None,
    })
}

/// A request path percent-decoded (`None`: a bad escape or not UTF-8).
pub fn percent_decode(s: &str) -> Option<String> {
    lang::value::percent_decode(s).ok()
}

/// `rel` (a request path tail) joined under `root`, or `None` when it would leave the root
/// (`..` components, or a symlink pointing outside).
pub fn join_under(root: &Path, rel: &str) -> Option<PathBuf> {
    let mut path = root.to_path_buf();
    for part in Path::new(rel).components() {
        match part {
            Component::Normal(p) => path.push(p),
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir | Component::Prefix(_) => return None,
        }
    }
    if let (Ok(real), Ok(real_root)) = (path.canonicalize(), root.canonicalize())
        && !real.starts_with(&real_root)
    {
        return None;
    }
    Some(path)
}

/// The collected body of a response (tests and the proxy's helpers).
pub async fn body_bytes(resp: Response) -> io::Result<Bytes> {
    Ok(resp.into_body().collect().await?.to_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding_and_joining_stay_under_the_root() {
        assert_eq!(percent_decode("/a%20b/c").as_deref(), Some("/a b/c"));
        assert_eq!(percent_decode("/bad%zz"), None);
        assert_eq!(percent_decode("/signed%+1"), None, "a sign is not a hex digit");
        assert_eq!(percent_decode("/cut%4"), None);
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(join_under(dir.path(), "/x/y"), Some(dir.path().join("x/y")));
        assert_eq!(join_under(dir.path(), "/x/../../etc/passwd"), None);
        std::os::unix::fs::symlink("/etc", dir.path().join("out")).unwrap();
        assert_eq!(join_under(dir.path(), "/out/passwd"), None, "symlinks may not escape");
    }

    #[test]
    fn ranges_follow_rfc_7233_for_one_range() {
        assert_eq!(parse_range("bytes=0-3", 10), Some(Some((0, 3))));
        assert_eq!(parse_range("bytes=5-", 10), Some(Some((5, 9))));
        assert_eq!(parse_range("bytes=-4", 10), Some(Some((6, 9))));
        assert_eq!(parse_range("bytes=8-100", 10), Some(Some((8, 9))));
        assert_eq!(parse_range("bytes=10-", 10), Some(None));
        assert_eq!(parse_range("bytes=0-1,3-4", 10), None);
        assert_eq!(parse_range("items=0-1", 10), None);
    }

    #[tokio::test]
    async fn content_is_typed_conditional_and_ranged() {
        let t = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let get = Request::new(Method::GET, "/f");
        let resp = serve_content(&get, "/f", Some(t), Content::Bytes(Bytes::from("hello"))).await;
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "text/plain; charset=utf-8");
        assert_eq!(resp.headers()[header::LAST_MODIFIED], "Tue, 14 Nov 2023 22:13:20 GMT");
        assert_eq!(body_bytes(resp).await.unwrap(), "hello");

        let mut cond = Request::new(Method::GET, "/f");
        cond.headers.insert(header::IF_MODIFIED_SINCE, HeaderValue::from_static("Tue, 14 Nov 2023 22:13:20 GMT"));
        let resp = serve_content(&cond, "/f", Some(t), Content::Bytes(Bytes::from("hello"))).await;
        assert_eq!(resp.status(), StatusCode::NOT_MODIFIED);

        let mut ranged = Request::new(Method::GET, "/f.html");
        ranged.headers.insert(header::RANGE, HeaderValue::from_static("bytes=1-3"));
        let resp = serve_content(&ranged, "/f.html", None, Content::Bytes(Bytes::from("hello"))).await;
        assert_eq!(resp.status(), StatusCode::PARTIAL_CONTENT);
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "text/html; charset=utf-8");
        assert_eq!(resp.headers()[header::CONTENT_RANGE], "bytes 1-3/5");
        assert_eq!(body_bytes(resp).await.unwrap(), "ell");

        let head = Request::new(Method::HEAD, "/b");
        let resp = serve_content(&head, "/b", None, Content::Bytes(Bytes::from_static(b"\x00\x01"))).await;
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/octet-stream");
        assert_eq!(resp.headers()[header::CONTENT_LENGTH], "2");
        assert!(body_bytes(resp).await.unwrap().is_empty());
    }

    #[test]
    fn forms_decode_url_encoded_bodies_only() {
        let mut req = Request::new(Method::POST, "/flag");
        req.body = Bytes::from("key=hello+world&x=%2F&key=2");
        assert_eq!(req.form_values("key"), ["hello world", "2"]);
        req.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("multipart/form-data; boundary=x"));
        assert!(req.form_values("key").is_empty());
    }
}
