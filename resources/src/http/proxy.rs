//! `http:server:proxy`: a caching proxy under `path` (default the name). A GET for
//! `<path><rest>` is answered from `<cache><rest>` when that file exists; otherwise it is
//! downloaded from `<head><request minus sub>`, stored in the cache (atomically: a partial
//! download is never served from the cache) and sent. Without `cache` every request is
//! proxied; without `head` only the cache answers. An upstream error status is a 404 here.
//!
//! Downloads go through the [`Upstream`] backend: `curl` on a real host ([`Curl`], which
//! also brings https and keeps the upstream `Last-Modified` as the file's mtime), an
//! in-memory map in tests ([`MemUpstream`]).

use lang::params::ParamMap;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use engine::{ApplyCtx, IoAt, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use hyper::{Method, StatusCode};
use tokio_util::sync::CancellationToken;

use super::{Content, Hub, Request, Response, Route};
use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::util::command::{self, CmdSpec};

/// What a download gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fetched {
    /// Stored at the destination (with the upstream's mtime when it sent one).
    Saved,
    /// The upstream answered with this non-200 status; nothing was stored.
    Status(u16),
}

/// Downloads a URL into a file.
#[async_trait]
pub trait Upstream: Send + Sync {
    /// Downloads `url` to `dest` (created or replaced). `Err` when the upstream could not be
    /// reached at all.
    async fn fetch(&self, url: &str, dest: &Path, cancel: &CancellationToken) -> Result<Fetched, ResError>;
}

/// The real backend: `curl` (follows redirects, http and https only, keeps the remote
/// modification time).
pub struct Curl;

#[async_trait]
impl Upstream for Curl {
    async fn fetch(&self, url: &str, dest: &Path, cancel: &CancellationToken) -> Result<Fetched, ResError> {
        let spec = CmdSpec {
            cmd: "curl".into(),
            args: vec![
                "--silent".into(),
                "--show-error".into(),
                "--location".into(),
                "--fail".into(),
                "--proto".into(),
                "=http,https".into(),
                "--remote-time".into(),
                "--write-out".into(),
                "%{http_code}".into(),
                "--output".into(),
                dest.display().to_string(),
                "--".into(),
                url.into(),
            ],
            ..CmdSpec::default()
        };
        let out = command::run(&spec, cancel).await?;
        let code: u16 = out.stdout.trim().parse().unwrap_or(0);
        match (out.code, code) {
            (Some(0), 200) => Ok(Fetched::Saved),
            // 22: `--fail` saw an error status; other codes without error: not a 200 either.
            (Some(0 | 22), code) if code != 0 => {
                let _partial = std::fs::remove_file(dest);
                Ok(Fetched::Status(code))
            }
            _ => Err(ResError::new(format!("curl {url}: {}", out.stderr.trim()))),
        }
    }
}

/// The test double: URLs to bodies, and a log of what was fetched.
#[derive(Default)]
pub struct MemUpstream {
    pub files: Mutex<BTreeMap<String, Vec<u8>>>,
    pub fetched: Mutex<Vec<String>>,
}

impl MemUpstream {
    pub fn serve(&self, url: &str, body: &[u8]) {
        self.files.lock().unwrap_or_else(|e| e.into_inner()).insert(url.to_string(), body.to_vec());
    }

    pub fn fetched(&self) -> Vec<String> {
        self.fetched.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[async_trait]
impl Upstream for MemUpstream {
    async fn fetch(&self, url: &str, dest: &Path, _cancel: &CancellationToken) -> Result<Fetched, ResError> {
        self.fetched.lock().unwrap_or_else(|e| e.into_inner()).push(url.to_string());
        let body = self.files.lock().unwrap_or_else(|e| e.into_inner()).get(url).cloned();
        match body {
            Some(body) => {
                std::fs::write(dest, body).at(dest)?;
                Ok(Fetched::Saved)
            }
            None => Ok(Fetched::Status(404)),
        }
    }
}

crate::params! {
    /// `http:server:proxy`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct ProxyParams {
        pub server: String,
        pub path: String,
        pub sub: String,
        pub head: String,
        pub cache: String,
    }
}

pub struct HttpProxy {
    raw: Raw,
    params: ProxyParams,
    hub: Arc<Hub>,
    route: Arc<ProxyRoute>,
}

pub struct ProxyRoute {
    map: PathMap,
    upstream: Arc<dyn Upstream>,
    /// Cancelled when the resource stops, ending downloads in flight.
    stop: CancellationToken,
}

/// The path arithmetic: `path`, `sub`, `head` and `cache` as configured.
#[derive(Clone, Debug, PartialEq)]
struct PathMap {
    path: String,
    sub: String,
    head: String,
    cache: String,
}

/// Where one request goes.
#[derive(Debug, PartialEq)]
struct Target {
    /// `None` without a head.
    url: Option<String>,
    /// `None` without a cache.
    cache: Option<PathBuf>,
}

/// Why a request path cannot be mapped.
#[derive(Debug, PartialEq)]
enum MapError {
    /// Not absolute, or not clean (`..`, `//`, `/./`).
    BadRequest,
    NotFound,
}

impl PathMap {
    fn map(&self, request: &str) -> Result<Target, MapError> {
        if !request.starts_with('/') {
            return Err(MapError::BadRequest);
        }
        let inner = request.trim_start_matches('/').trim_end_matches('/');
        if !inner.is_empty() && inner.split('/').any(|part| part.is_empty() || part == "." || part == "..") {
            return Err(MapError::BadRequest);
        }
        if !request.starts_with(&self.path) {
            return Err(MapError::NotFound);
        }
        if !self.sub.is_empty() && !request.starts_with(&self.sub) {
            return Err(MapError::NotFound);
        }
        let tail = request.strip_prefix(&self.sub).unwrap_or(request);
        let url = (!self.head.is_empty()).then(|| format!("{}{tail}", self.head));
        let rel = &request[self.path.len()..];
        let cache = (!self.cache.is_empty()).then(|| PathBuf::from(format!("{}{rel}", self.cache)));
        Ok(Target { url, cache })
    }
}

impl HttpProxy {
    pub fn build(hub: Arc<Hub>, name: &str, values: &ParamMap) -> Result<HttpProxy, BuildError> {
        let (raw, params) = Raw::decoded("http:server:proxy", name, values, ProxyParams::decode)?;
        let map = PathMap {
            path: if params.path.is_empty() { name.to_string() } else { params.path.clone() },
            sub: params.sub.clone(),
            head: params.head.clone(),
            cache: params.cache.clone(),
        };
        let route = Arc::new(ProxyRoute { map, upstream: hub.upstream.clone(), stop: CancellationToken::new() });
        Ok(HttpProxy { raw, params, hub, route })
    }

    fn err(&self, field: &str, message: &str) -> ResError {
        self.raw.invalid(Some(field), message)
    }
}

impl ProxyRoute {
    async fn answer(&self, req: &Request) -> Response {
        let target = match self.map.map(&req.path) {
            Ok(t) => t,
            Err(MapError::BadRequest) => return super::status(StatusCode::BAD_REQUEST),
            Err(MapError::NotFound) => return super::not_found(),
        };
        let dir_like = req.path.ends_with('/');
        if let Some(cached) = target.cache.as_ref().filter(|_| !dir_like) {
            match Content::open(cached).await {
                Ok((content, mtime)) => {
                    tracing::info!(path = %req.path, cache = %cached.display(), "proxy: from the cache");
                    return super::serve_content(req, &req.path, mtime, content).await;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return super::io_error(&e),
            }
        }
        let Some(url) = target.url else {
            // Neither cached nor proxiable.
            return super::text(StatusCode::BAD_GATEWAY, "can't proxy");
        };
        match target.cache.filter(|_| !dir_like) {
            Some(cached) => self.fetch_into_cache(req, &url, &cached).await,
            None => self.fetch_through(req, &url).await,
        }
    }

    /// Downloads next to the cache file, renames into place, then serves the cached file.
    async fn fetch_into_cache(&self, req: &Request, url: &str, cached: &Path) -> Response {
        let Some(dir) = cached.parent() else { return super::not_found() };
        if let Err(e) = create_private_dirs(dir) {
            return super::io_error(&e);
        }
        let part = dir.join(format!(
            ".{}.part-{:016x}",
            cached.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            rand::random::<u64>()
        ));
        tracing::info!(%url, "proxy: get");
        let fetched = self.upstream.fetch(url, &part, &self.stop).await;
        match fetched {
            Ok(Fetched::Saved) => {
                if let Err(e) = std::fs::rename(&part, cached) {
                    let _partial = std::fs::remove_file(&part);
                    return super::io_error(&e);
                }
                match Content::open(cached).await {
                    Ok((content, mtime)) => super::serve_content(req, &req.path, mtime, content).await,
                    Err(e) => super::io_error(&e),
                }
            }
            other => {
                let _partial = std::fs::remove_file(&part);
                upstream_failure(url, other)
            }
        }
    }

    /// Downloads to an anonymous temporary file and streams it (no cache).
    async fn fetch_through(&self, req: &Request, url: &str) -> Response {
        let tmp = match tempfile::NamedTempFile::new() {
            Ok(t) => t,
            Err(e) => return super::io_error(&e),
        };
        tracing::info!(%url, "proxy: get");
        match self.upstream.fetch(url, tmp.path(), &self.stop).await {
            Ok(Fetched::Saved) => match Content::open(tmp.path()).await {
                // The open handle keeps the data readable after the name goes away.
                Ok((content, mtime)) => {
                    drop(tmp);
                    super::serve_content(req, &req.path, mtime, content).await
                }
                Err(e) => super::io_error(&e),
            },
            other => upstream_failure(url, other),
        }
    }
}

fn upstream_failure(url: &str, outcome: Result<Fetched, ResError>) -> Response {
    match outcome {
        Ok(Fetched::Status(code)) => {
            tracing::info!(%url, code, "proxy: bad upstream status");
            super::not_found()
        }
        Err(e) => {
            tracing::warn!(%url, error = %e, "proxy: upstream unreachable");
            super::status(StatusCode::BAD_GATEWAY)
        }
        Ok(Fetched::Saved) => super::status(StatusCode::INTERNAL_SERVER_ERROR),
    }
}

fn create_private_dirs(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

impl Route for ProxyRoute {
    fn accepts(&self, req: &Request) -> bool {
        let path = &self.map.path;
        (path.ends_with('/') && req.path.starts_with(path.as_str())) || req.path == *path
    }

    fn serve(self: Arc<Self>, req: Arc<Request>) -> BoxFuture<'static, Response> {
        Box::pin(async move {
            if req.method != Method::GET {
                return super::method_not_allowed("GET");
            }
            self.answer(&req).await
        })
    }
}

#[async_trait]
impl Resource for HttpProxy {
    fn validate(&self) -> Result<(), ResError> {
        let m = &self.route.map;
        if !m.path.starts_with('/') {
            return Err(self.err("path", "the path must be absolute"));
        }
        if !m.sub.is_empty() && (!m.sub.starts_with('/') || !m.sub.ends_with('/')) {
            return Err(self.err("sub", "must be empty or an absolute directory prefix (`/…/`)"));
        }
        if !m.head.is_empty() {
            if !m.head.ends_with('/') {
                return Err(self.err("head", "must end with a slash"));
            }
            if !(m.head.starts_with("http://") || m.head.starts_with("https://")) {
                return Err(self.err("head", "must be an http:// or https:// URL"));
            }
        }
        if !m.cache.is_empty() && (!m.cache.starts_with('/') || !m.cache.ends_with('/')) {
            return Err(self.err("cache", "must be empty or an absolute directory (`/…/`)"));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let route = self.route.clone() as Arc<dyn Route>;
        self.hub.routes.listed_while_running(self.params.server.clone(), route, ctx)
    }

    async fn check_apply(&mut self, _ctx: &mut ApplyCtx, _apply: bool) -> Result<bool, ResError> {
        // A cache that exists must be a directory; a missing one is created on first use.
        let cache = &self.params.cache;
        if !cache.is_empty()
            && let Ok(meta) = std::fs::metadata(cache)
            && !meta.is_dir()
        {
            return Err(self.err("cache", &format!("`{cache}` is not a directory")));
        }
        Ok(true)
    }

    async fn cleanup(&mut self) -> Result<(), ResError> {
        self.route.stop.cancel();
        Ok(())
    }

    crate::fingerprint_by_params!();
}

/// The `http:server:proxy` kind: its params and send fields as the type checker sees them, and its constructor.
pub const HTTP_SERVER_PROXY: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("http:server:proxy", ProxyParams::FIELDS, |host, name, params| {
        Ok(Box::new(HttpProxy::build(host.http.clone(), name, params)?))
    });

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::body_bytes;
    use lang::value::Value;

    fn map(path: &str, sub: &str, head: &str, cache: &str) -> PathMap {
        PathMap { path: path.into(), sub: sub.into(), head: head.into(), cache: cache.into() }
    }

    #[test]
    fn paths_map_to_urls_and_cache_files() {
        let m = map("/fedora/releases/38/os/", "/fedora/", "https://mirror.example/fedora/", "/tmp/os/");
        assert_eq!(
            m.map("/fedora/releases/38/os/Packages/c/cowsay.rpm"),
            Ok(Target {
                url: Some("https://mirror.example/fedora/releases/38/os/Packages/c/cowsay.rpm".into()),
                cache: Some("/tmp/os/Packages/c/cowsay.rpm".into()),
            })
        );
        assert_eq!(m.map("/fedora/releases/38/os/../../etc/passwd"), Err(MapError::BadRequest));
        assert_eq!(m.map("/fedora/releases/38/os//x"), Err(MapError::BadRequest));
        assert_eq!(m.map("/other/x"), Err(MapError::NotFound));
        let cache_only = map("/os/", "", "", "/srv/os/");
        assert_eq!(cache_only.map("/os/a"), Ok(Target { url: None, cache: Some("/srv/os/a".into()) }));
        let no_sub = map("/os/", "", "http://h/", "");
        assert_eq!(no_sub.map("/os/a").unwrap().url.as_deref(), Some("http://h//os/a"));
    }

    fn proxy(hub: &Arc<Hub>, pairs: &[(&str, &str)]) -> HttpProxy {
        let values = pairs.iter().map(|(k, v)| (k.to_string(), Value::str(*v))).collect();
        HttpProxy::build(hub.clone(), "/os/", &values).unwrap()
    }

    #[test]
    fn validation_names_the_field() {
        let hub = Hub::with_upstream(Arc::new(MemUpstream::default()));
        let bad = proxy(&hub, &[("head", "https://h/x")]);
        assert!(bad.validate().unwrap_err().message.contains("field `head`: must end with a slash"));
        let bad = proxy(&hub, &[("cache", "/tmp/os")]);
        assert!(bad.validate().unwrap_err().message.contains("field `cache`"));
        let bad = proxy(&hub, &[("sub", "fedora/")]);
        assert!(bad.validate().unwrap_err().message.contains("field `sub`"));
        assert!(proxy(&hub, &[("head", "https://h/"), ("cache", "/tmp/os/")]).validate().is_ok());
    }

    #[tokio::test]
    async fn downloads_once_then_serves_from_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let cache = format!("{}/cache/", dir.path().display());
        let upstream = Arc::new(MemUpstream::default());
        upstream.serve("http://up/os/a/b.rpm", b"rpm bytes");
        let hub = Hub::with_upstream(upstream.clone());
        let p = proxy(&hub, &[("head", "http://up/"), ("sub", "/"), ("cache", &cache)]);
        let get = |path: &str| Arc::new(Request::new(Method::GET, path));

        for _ in 0..2 {
            let resp = p.route.clone().serve(get("/os/a/b.rpm")).await;
            assert_eq!(resp.status(), StatusCode::OK);
            assert_eq!(resp.headers()[hyper::header::CONTENT_TYPE], "application/x-rpm");
            assert_eq!(body_bytes(resp).await.unwrap(), "rpm bytes");
        }
        assert_eq!(upstream.fetched(), ["http://up/os/a/b.rpm"], "the second GET is a cache hit");
        assert_eq!(std::fs::read(dir.path().join("cache/a/b.rpm")).unwrap(), b"rpm bytes");

        let missing = p.route.clone().serve(get("/os/nope")).await;
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
        assert!(!dir.path().join("cache/nope").exists(), "failures leave nothing in the cache");
        let leftovers = std::fs::read_dir(dir.path().join("cache")).unwrap().count();
        assert_eq!(leftovers, 1, "only the `a` directory");
    }

    #[tokio::test]
    async fn without_cache_every_request_is_proxied_and_without_head_only_the_cache_answers() {
        let upstream = Arc::new(MemUpstream::default());
        upstream.serve("http://up/os/x", b"x");
        let hub = Hub::with_upstream(upstream.clone());
        let p = proxy(&hub, &[("head", "http://up/"), ("sub", "/")]);
        for _ in 0..2 {
            let resp = p.route.clone().serve(Arc::new(Request::new(Method::GET, "/os/x"))).await;
            assert_eq!(body_bytes(resp).await.unwrap(), "x");
        }
        assert_eq!(upstream.fetched().len(), 2);

        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("here"), "cached").unwrap();
        let cache = format!("{}/", dir.path().display());
        let offline = proxy(&hub, &[("cache", &cache)]);
        let resp = offline.route.clone().serve(Arc::new(Request::new(Method::GET, "/os/here"))).await;
        assert_eq!(body_bytes(resp).await.unwrap(), "cached");
        let resp = offline.route.clone().serve(Arc::new(Request::new(Method::GET, "/os/gone"))).await;
        assert_eq!(resp.status(), StatusCode::BAD_GATEWAY);
        let resp = offline.route.clone().serve(Arc::new(Request::new(Method::POST, "/os/here"))).await;
        assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
    }
}
