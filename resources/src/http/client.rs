//! `http:client`: an HTTP request (`method`, `url`, `body`) whose answer is kept in a file
//! (`file`, else the name when it is an absolute file path, else the resource's own state
//! directory) and sent as `content`. As mgmt's: a `sha256` that matches the file on disk
//! spares the request (unless refreshed); with `mtime_check` (the default) the request
//! carries the file's mtime as `If-Modified-Since`, a `304` keeps the file, and a download
//! takes the server's `Last-Modified` as its mtime. Only GET and HEAD are sent in noop
//! mode. A download lands in a temporary file next to the destination and replaces it
//! whole once its hash checks out.
//!
//! Watching: with `longpoll` the watch holds a request open and the server's answer is the
//! event (`longpoll_redirect`: a redirect says the server is watching;
//! `longpoll_conditional`: requests after the first carry `Prefer: wait=60`); a `503` with
//! `Retry-After` is a request to reconnect later. The downloaded file is watched too, so an
//! edit or a deletion is repaired (mgmt polls for that: `Meta:poll` works here as well).
//!
//! Each outcome is published for `net/http.response(NAME)`: the status (0 before any, -1
//! for a failure that has no HTTP status) and the file holding the body.

use lang::params::ParamMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use bytes::Bytes;
use engine::{ApplyCtx, InitCtx, Payload, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use hyper::Method;
use hyper::header::HeaderName;
use sha2::{Digest, Sha256};
use tokio::sync::Notify;

use crate::basics::value::ValueStore;
use crate::contract::common::{Raw, sends};
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::util::http_client::{self, Reply, Url};
use crate::util::watch::FileWatch;

/// The namespace of the value store `net/http.response` reads.
pub const RESPONSES: &str = "http:client";

/// How long a conditional long poll asks the server to hold the request (mgmt's value).
const LONGPOLL_WAIT: u64 = 60;

/// How long after a server asked us to reconnect a failed connection is retried (mgmt's).
const LONGPOLL_GRACE: Duration = Duration::from_secs(15);

/// The methods mgmt accepts (RFC 7231 and PATCH).
const METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE"];

crate::params! {
    /// `http:client`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct ClientParams {
        pub file: String,
        pub method: String,
        pub url: String,
        pub body: Option<String>,
        pub mtime_check: Option<bool>,
        pub sha256: String,
        pub longpoll: bool,
        pub longpoll_redirect: bool,
        pub longpoll_conditional: bool,
    }
}

/// A long poll's answer, handed from the watch to the next check-apply.
#[derive(Default)]
struct Handoff {
    reply: Mutex<Option<Reply>>,
    /// Check-apply took the answer: the watch may poll again.
    taken: Notify,
}

pub struct HttpClient {
    raw: Raw,
    params: ClientParams,
    store: Arc<ValueStore>,
    /// The destination, once `init` has placed it (a state directory file without one).
    dst: PathBuf,
    handoff: Arc<Handoff>,
    /// What the last successful check-apply read or downloaded.
    content: Option<String>,
    /// The file's mtime when a check-apply last knew it right: a different one means the
    /// file was changed behind our back, and its mtime is no cursor for the server.
    verified: Option<SystemTime>,
    /// The HTTP status of this check-apply's failure, when the server gave one.
    failed_status: Option<u16>,
}

/// What one check-apply found out, for the responses store.
enum Outcome {
    /// Nothing new to report (mgmt's 0: the last published value stays).
    Nothing,
    /// The file holds the answer of this status.
    Fresh(u16),
    /// A 304: the file is current; published as 200 only when nothing was published yet.
    NotModified,
}

impl HttpClient {
    pub fn build(store: Arc<ValueStore>, name: &str, values: &ParamMap) -> Result<HttpClient, BuildError> {
        let (raw, params) = Raw::decoded("http:client", name, values, ClientParams::decode)?;
        let dst = PathBuf::from(named_destination(name, &params).unwrap_or_default());
        Ok(HttpClient {
            raw,
            params,
            store,
            dst,
            handoff: Arc::default(),
            content: None,
            verified: None,
            failed_status: None,
        })
    }

    fn method(&self) -> Method {
        let m = if self.params.method.is_empty() { "GET" } else { self.params.method.as_str() };
        Method::from_bytes(m.as_bytes()).unwrap_or(Method::GET)
    }

    fn url(&self) -> Result<Url, ResError> {
        Url::parse(&self.params.url).map_err(|e| self.raw.invalid(Some("url"), &e))
    }

    fn mtime_check(&self) -> bool {
        self.params.mtime_check.unwrap_or(true)
    }

    fn fail(&self, what: impl std::fmt::Display) -> ResError {
        ResError::new(format!("http:client[{}]: {what}", self.raw.name))
    }

    fn io_fail(&self, doing: &str, path: &Path, e: &std::io::Error) -> ResError {
        ResError { retry: engine::retry_of(e), ..self.fail(format!("{doing} {}: {e}", path.display())) }
    }

    fn body(&self) -> Bytes {
        Bytes::from(self.params.body.clone().unwrap_or_default())
    }

    /// The request's extra headers: the file's mtime as the cursor when asked to check it.
    fn headers(&self, cursor: bool) -> Vec<(HeaderName, String)> {
        let mut headers = Vec::new();
        if cursor
            && self.mtime_check()
            && let Ok(modified) = std::fs::metadata(&self.dst).and_then(|m| m.modified())
        {
            headers.push((hyper::header::IF_MODIFIED_SINCE, httpdate::fmt_http_date(modified)));
        }
        headers
    }

    fn dst_mtime(&self) -> Option<SystemTime> {
        std::fs::metadata(&self.dst).and_then(|m| m.modified()).ok()
    }

    /// The file is what we last saw (or we saw nothing yet): its mtime may be the cursor.
    fn untouched(&self) -> bool {
        self.verified.is_none() || self.verified == self.dst_mtime()
    }

    /// Reads the file as the current content, noting its mtime.
    fn keep_dst(&mut self) -> Result<(), ResError> {
        self.content = Some(self.read_dst()?);
        self.verified = self.dst_mtime();
        Ok(())
    }

    fn read_dst(&self) -> Result<String, ResError> {
        std::fs::read(&self.dst)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .map_err(|e| self.io_fail("cannot read", &self.dst, &e))
    }

    /// Publishes `outcome` (or the failure) for `net/http.response`, as mgmt does.
    fn publish(&mut self, outcome: &Result<(bool, Outcome), ResError>) {
        let path = self.dst.display().to_string();
        let (status, output) = match outcome {
            Err(_) => (self.failed_status.take().map_or(-1, i64::from), String::new()),
            Ok((_, Outcome::Nothing)) => return,
            Ok((_, Outcome::Fresh(s))) => (i64::from(*s), path),
            Ok((_, Outcome::NotModified)) => {
                let published = self.store.get_in(RESPONSES, &self.raw.name);
                if published.is_some() {
                    return;
                }
                (200, path)
            }
        };
        let value = lang::value::Value::strukt(vec![
            ("status".into(), lang::value::Value::Int(status)),
            ("path".into(), lang::value::Value::str(output)),
        ]);
        self.store.set_in(RESPONSES, &self.raw.name, value);
    }

    async fn check(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<(bool, Outcome), ResError> {
        let handed = self.handoff.reply.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(reply) = handed {
            self.handoff.taken.notify_one();
            return self.process(ctx, reply, apply);
        }
        let exists = match std::fs::metadata(&self.dst) {
            Ok(_) => true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(e) => return Err(self.io_fail("cannot stat", &self.dst, &e)),
        };
        let sha_ok = self.params.sha256.is_empty() || self.hash_dst()?.is_some_and(|h| h == self.params.sha256);
        let trusted = exists && !ctx.refresh && sha_ok && self.untouched();
        if trusted {
            if !self.params.sha256.is_empty() {
                self.keep_dst()?;
                return Ok((true, Outcome::Fresh(200)));
            }
            // A long poll's own request brings changes: asking again with the same cursor
            // would be held by the server until the next one.
            if self.params.longpoll {
                self.keep_dst()?;
                return Ok((true, Outcome::Nothing));
            }
        }
        let method = self.method();
        if !apply && method != Method::GET && method != Method::HEAD {
            ctx.report(format!("http:client[{}]: would send {method} {}", self.raw.name, self.params.url));
            return Ok((false, Outcome::Nothing));
        }
        let url = self.url()?;
        let headers = self.headers(trusted);
        let reply = http_client::send_following(&url, &method, &headers, &self.body(), |_| {}).await.map_err(|e| {
            // The server may come back: an unreachable one is worth trying again.
            ResError::transient(format!("http:client[{}]: {method} {url}: {e}", self.raw.name))
        })?;
        self.process(ctx, reply, apply)
    }

    /// What to do with an answer (from check-apply's own request or the long poll).
    fn process(&mut self, ctx: &mut ApplyCtx, reply: Reply, apply: bool) -> Result<(bool, Outcome), ResError> {
        if reply.status == 304 && self.mtime_check() {
            self.keep_dst()?;
            return Ok((true, Outcome::NotModified));
        }
        if reply.status != 200 {
            let e = self.fail(format!("{} {}: unexpected status: {}", self.method(), reply.url, reply.status_text()));
            self.failed_status = Some(reply.status);
            // A server error or a throttle may pass; a 404 needs the server or the program to change.
            return Err(if reply.status >= 500 || reply.status == 429 || reply.status == 408 {
                ResError::transient(e.message)
            } else {
                e
            });
        }
        let sum = hex(&Sha256::digest(&reply.body));
        if !self.params.sha256.is_empty() && !sum.eq_ignore_ascii_case(&self.params.sha256) {
            return Err(self.fail(format!("sha256 mismatch: got {sum}, expected {}", self.params.sha256)));
        }
        let modified = reply.header("last-modified").and_then(|lm| httpdate::parse_http_date(lm).ok());
        let unchanged = self.hash_dst()?.is_some_and(|h| h == sum);
        let current_mtime = std::fs::metadata(&self.dst).and_then(|m| m.modified()).ok();
        let mtime_right = modified.is_none() || modified.map(whole_seconds) == current_mtime.map(whole_seconds);
        if unchanged && mtime_right {
            self.keep_dst()?;
            return Ok((true, Outcome::Fresh(200)));
        }
        if !apply {
            ctx.report(format!(
                "http:client[{}]: would write {} bytes from {} to {}",
                self.raw.name,
                reply.body.len(),
                reply.url,
                self.dst.display()
            ));
            return Ok((false, Outcome::Nothing));
        }
        self.replace_dst(&reply.body, modified)?;
        if !unchanged {
            ctx.report(format!("downloaded {} bytes from {}", reply.body.len(), reply.url));
        }
        self.content = Some(String::from_utf8_lossy(&reply.body).into_owned());
        self.verified = self.dst_mtime();
        Ok((unchanged, Outcome::Fresh(200)))
    }

    fn hash_dst(&self) -> Result<Option<String>, ResError> {
        match std::fs::read(&self.dst) {
            Ok(b) => Ok(Some(hex(&Sha256::digest(&b)))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io_fail("cannot read", &self.dst, &e)),
        }
    }

    /// Writes the body beside the destination, synced, with the server's mtime, then
    /// renames it over the destination: never half a file there.
    fn replace_dst(&self, body: &[u8], modified: Option<SystemTime>) -> Result<(), ResError> {
        use std::io::Write as _;
        let name = self.dst.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = self.dst.with_file_name(format!(".{name}.tend-download"));
        let written = (|| {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(body)?;
            f.sync_all()?;
            if let Some(t) = modified {
                f.set_modified(t)?;
            }
            std::fs::rename(&tmp, &self.dst)
        })();
        written.map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            self.io_fail("cannot write", &self.dst, &e)
        })
    }
}

/// The destination the params and name give, before `init` (None: the state directory).
fn named_destination(name: &str, p: &ClientParams) -> Option<String> {
    if !p.file.is_empty() {
        return Some(p.file.clone());
    }
    (name.starts_with('/') && !name.ends_with('/')).then(|| name.to_string())
}

fn whole_seconds(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// When a failed long-poll connection is retried: within [`LONGPOLL_GRACE`] of a server's
/// request to reconnect, with doubling delays from one second.
#[derive(Default)]
struct Grace {
    until: Option<tokio::time::Instant>,
    delay: Duration,
}

impl Grace {
    fn start(&mut self) {
        self.until = Some(tokio::time::Instant::now() + LONGPOLL_GRACE);
        self.delay = Duration::ZERO;
    }

    fn next_delay(&mut self) -> Option<Duration> {
        let left = self.until?.checked_duration_since(tokio::time::Instant::now()).filter(|d| !d.is_zero());
        let Some(left) = left else {
            self.until = None;
            return None;
        };
        self.delay = (self.delay * 2).clamp(Duration::from_secs(1), LONGPOLL_GRACE);
        Some(self.delay.min(left))
    }
}

/// The delay a `503` with `Retry-After` (seconds or a date) asks for.
fn retry_after(reply: &Reply) -> Option<Duration> {
    if reply.status != 503 {
        return None;
    }
    let value = reply.header("retry-after")?;
    if let Ok(secs) = value.trim().parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(SystemTime::now()).unwrap_or_default())
}

/// The long poll: requests held by the server until something changes, each answer handed
/// to check-apply before the next request goes out.
struct LongPoll {
    name: String,
    url: Url,
    method: Method,
    body: Bytes,
    redirect: bool,
    conditional: bool,
    mtime_check: bool,
    dst: PathBuf,
    handoff: Arc<Handoff>,
}

impl LongPoll {
    async fn run(self, ctx: WatchCtx) -> Result<(), ResError> {
        let mut wait = false;
        let mut grace = Grace::default();
        let mut outage = Duration::ZERO;
        loop {
            let mut headers = Vec::new();
            if self.mtime_check
                && let Ok(modified) = std::fs::metadata(&self.dst).and_then(|m| m.modified())
            {
                headers.push((hyper::header::IF_MODIFIED_SINCE, httpdate::fmt_http_date(modified)));
            }
            if wait && self.conditional {
                headers.push((HeaderName::from_static("prefer"), format!("wait={LONGPOLL_WAIT}")));
            }
            wait = self.conditional;
            let redirect = self.redirect;
            let sent = http_client::send_following(&self.url, &self.method, &headers, &self.body, |_| {
                if redirect {
                    // The server redirects once it watches: the state may be new already.
                    ctx.event();
                }
            });
            let reply = tokio::select! {
                r = sent => r,
                _ = ctx.cancelled() => return Ok(()),
            };
            let reply = match reply {
                Ok(r) => r,
                Err(e) => match grace.next_delay() {
                    Some(d) => {
                        tracing::info!(resource = %self.name, "long poll failed while the server restarts ({e}); again in {d:?}");
                        if sleep_or_cancel(&ctx, d).await {
                            return Ok(());
                        }
                        continue;
                    }
                    None => {
                        // The server is away: say so once, keep trying (1 s doubling to
                        // 30 s), and check the resource once it answers again.
                        if outage.is_zero() {
                            tracing::warn!(resource = %self.name, "long poll {}: {e}; retrying until it answers", self.url);
                        }
                        outage = (outage * 2).clamp(Duration::from_secs(1), Duration::from_secs(30));
                        if sleep_or_cancel(&ctx, outage).await {
                            return Ok(());
                        }
                        continue;
                    }
                },
            };
            if let Some(d) = retry_after(&reply) {
                tracing::info!(resource = %self.name, "the long poll server asks to reconnect in {d:?}");
                if sleep_or_cancel(&ctx, d).await {
                    return Ok(());
                }
                grace.start();
                continue;
            }
            grace = Grace::default();
            if !outage.is_zero() {
                tracing::info!(resource = %self.name, "long poll {} answers again", self.url);
                outage = Duration::ZERO;
            }
            *self.handoff.reply.lock().unwrap_or_else(|e| e.into_inner()) = Some(reply);
            let taken = self.handoff.taken.notified();
            ctx.event();
            tokio::select! {
                () = taken => {}
                _ = ctx.cancelled() => return Ok(()),
            }
        }
    }
}

/// Sleeps `d`; true when the watch was cancelled meanwhile.
async fn sleep_or_cancel(ctx: &WatchCtx, d: Duration) -> bool {
    tokio::select! {
        () = tokio::time::sleep(d) => false,
        _ = ctx.cancelled() => true,
    }
}

#[async_trait]
impl Resource for HttpClient {
    fn validate(&self) -> Result<(), ResError> {
        let p = &self.params;
        if let Some(f) = named_destination(&self.raw.name, p) {
            if !f.starts_with('/') {
                return Err(self.raw.invalid(Some("file"), "the file path must be absolute"));
            }
            if f.ends_with('/') {
                return Err(self.raw.invalid(Some("file"), "the file path must not be a directory"));
            }
        }
        let m = if p.method.is_empty() { "GET" } else { p.method.as_str() };
        if !METHODS.contains(&m) {
            let upper = m.to_ascii_uppercase();
            let message = if METHODS.contains(&upper.as_str()) {
                format!("method name {upper} must be in upper case, got: {m}")
            } else {
                format!("unknown method: {m} (one of {})", METHODS.join(", "))
            };
            return Err(self.raw.invalid(Some("method"), &message));
        }
        self.url()?;
        if p.sha256 != p.sha256.to_ascii_lowercase() {
            return Err(self.raw.invalid(Some("sha256"), "the sha256 must be lower case"));
        }
        if p.longpoll_redirect && p.longpoll_conditional {
            return Err(self.raw.invalid(Some("longpoll_conditional"), "can't combine with longpoll_redirect"));
        }
        if p.longpoll && !p.longpoll_redirect && !p.longpoll_conditional {
            return Err(self.raw.invalid(
                Some("longpoll"),
                "with longpoll, say how the server signals: longpoll_redirect or longpoll_conditional",
            ));
        }
        Ok(())
    }

    async fn init(&mut self, ctx: &InitCtx) -> Result<(), ResError> {
        if self.dst.as_os_str().is_empty() {
            let dir = ctx.var_dir();
            std::fs::create_dir_all(&dir).map_err(|e| self.io_fail("cannot create", &dir, &e))?;
            self.dst = dir.join("dst");
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let dst = self.dst.clone();
        let poll = match self.url() {
            Ok(url) if self.params.longpoll => Some(LongPoll {
                name: self.raw.name.clone(),
                url,
                method: self.method(),
                body: self.body(),
                redirect: self.params.longpoll_redirect,
                conditional: self.params.longpoll_conditional,
                mtime_check: self.mtime_check(),
                dst: dst.clone(),
                handoff: self.handoff.clone(),
            }),
            _ => None,
        };
        Box::pin(async move {
            let mut file = FileWatch::new(vec![dst], false)?;
            ctx.event();
            let poll = async {
                match poll {
                    Some(p) => p.run(ctx.clone()).await,
                    None => {
                        ctx.cancelled().await;
                        Ok(())
                    }
                }
            };
            tokio::pin!(poll);
            loop {
                tokio::select! {
                    changed = file.changed() => {
                        changed?;
                        ctx.event();
                    }
                    done = &mut poll => return done,
                }
            }
        })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        self.failed_status = None;
        let outcome = self.check(ctx, apply).await;
        if !ctx.cancel.is_cancelled() {
            self.publish(&outcome);
        }
        outcome.map(|(right, _)| right)
    }

    fn refreshable(&self) -> bool {
        true
    }

    fn sends(&self) -> Option<std::collections::BTreeMap<String, Payload>> {
        let content = self.content.clone()?;
        Some(sends(vec![("content", lang::value::Value::str(content))]))
    }

    crate::fingerprint_by_params!();
}

/// The `http:client` kind: its params and send fields as the type checker sees them, and its constructor.
pub const HTTP_CLIENT: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("http:client", ClientParams::FIELDS, |host, name, params| {
        Ok(Box::new(HttpClient::build(host.values.clone(), name, params)?))
    })
    .sending(&[("content", "str")]);

#[cfg(test)]
mod tests {
    use super::*;
    use lang::value::Value;

    fn client(name: &str, pairs: &[(&str, Value)]) -> HttpClient {
        let values = pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        HttpClient::build(Arc::default(), name, &values).unwrap()
    }

    #[test]
    fn validation_names_the_field() {
        let url = ("url", Value::str("http://127.0.0.1:1/x"));
        let err = |c: HttpClient| c.validate().unwrap_err().message;
        assert!(err(client("/out", &[url.clone(), ("method", Value::str("get"))])).contains("must be in upper case"));
        assert!(err(client("/out", &[url.clone(), ("method", Value::str("FETCH"))])).contains("unknown method"));
        assert!(err(client("/out", &[("url", Value::str("ftp://h/"))])).contains("field `url`"));
        assert!(err(client("/out", &[url.clone(), ("sha256", Value::str("ABC"))])).contains("lower case"));
        assert!(err(client("/out", &[url.clone(), ("longpoll", Value::Bool(true))])).contains("longpoll_redirect"));
        assert!(err(client("out", &[url.clone(), ("file", Value::str("rel"))])).contains("absolute"));
        assert!(client("not a path", std::slice::from_ref(&url)).validate().is_ok(), "kept in the state directory");
        assert!(client("/out", &[url]).validate().is_ok());
    }

    #[test]
    fn retry_after_takes_seconds_or_a_date() {
        let reply = |status: u16, value: &str| {
            let mut headers = hyper::HeaderMap::new();
            headers.insert("retry-after", value.parse().unwrap());
            Reply { status, headers, body: Bytes::new(), url: Url::parse("http://h/").unwrap() }
        };
        assert_eq!(retry_after(&reply(503, "3")), Some(Duration::from_secs(3)));
        assert_eq!(retry_after(&reply(200, "3")), None);
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(30));
        assert!(retry_after(&reply(503, &later)).is_some_and(|d| d > Duration::from_secs(25)));
    }
}
