//! A small HTTP/1.1 client on hyper: one request per fresh connection (rustls with the
//! webpki roots for `https`, or a Unix socket), redirects followed as Go's client follows
//! them, the body read whole or streamed. `http:client`, `consul:kv` and the Docker Engine
//! API (`docker:container`) use it.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};

/// How many redirects one request follows, as Go's client.
pub const MAX_REDIRECTS: usize = 10;

/// An `http` or `https` URL, split for connecting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    pub scheme: String,
    /// The host without brackets (`::1` for `[::1]`).
    pub host: String,
    pub port: u16,
    /// The path and query, `/` when the URL has none.
    pub target: String,
    /// `user:password` before an `@`, sent as basic authentication.
    pub userinfo: Option<String>,
}

impl Url {
    /// Parses an absolute `http://` or `https://` URL with a host.
    pub fn parse(text: &str) -> Result<Url, String> {
        let (scheme, rest) = text.split_once("://").ok_or_else(|| format!("`{text}` is not an absolute URL"))?;
        let scheme = scheme.to_ascii_lowercase();
        let default_port = match scheme.as_str() {
            "http" => 80,
            "https" => 443,
            other => return Err(format!("the URL scheme must be http or https, got `{other}`")),
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let tail = tail.split('#').next().unwrap_or_default();
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u.to_string()), h),
            None => (None, authority),
        };
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or_else(|| format!("`{text}`: unclosed `[` in the host"))?;
            (h.to_string(), after.strip_prefix(':'))
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (hostport.to_string(), None),
            }
        };
        if host.is_empty() {
            return Err(format!("`{text}` has no host"));
        }
        let port = match port {
            None | Some("") => default_port,
            Some(p) => p.parse().map_err(|_| format!("`{text}`: `{p}` is not a port"))?,
        };
        let target = if tail.starts_with('/') { tail.to_string() } else { format!("/{tail}") };
        if target.chars().any(|c| c.is_ascii_whitespace() || c.is_ascii_control()) {
            return Err(format!("`{text}`: spaces and control characters must be percent-encoded"));
        }
        Ok(Url { scheme, host, port, target, userinfo })
    }

    /// `host[:port]`, the port left out when it is the scheme's own.
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        let default = if self.scheme == "https" { 443 } else { 80 };
        if self.port == default { host } else { format!("{host}:{}", self.port) }
    }

    /// The URL a `Location` header points to, relative to this one.
    pub fn join(&self, location: &str) -> Result<Url, String> {
        if location.contains("://") {
            return Url::parse(location);
        }
        if let Some(rest) = location.strip_prefix("//") {
            return Url::parse(&format!("{}://{rest}", self.scheme));
        }
        let target = if location.starts_with('/') {
            location.to_string()
        } else {
            let path = self.target.split('?').next().unwrap_or("/");
            let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
            format!("{dir}{location}")
        };
        Ok(Url { target, ..self.clone() })
    }
}

impl std::fmt::Display for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the credentials: URLs end up in logs and errors.
        write!(f, "{}://{}{}", self.scheme, self.authority(), self.target)
    }
}

/// A whole response.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// Where the answer came from, after redirects.
    pub url: Url,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The status line's text, `404 Not Found`.
    pub fn status_text(&self) -> String {
        let reason = hyper::StatusCode::from_u16(self.status).ok().and_then(|s| s.canonical_reason());
        match reason {
            Some(r) => format!("{} {r}", self.status),
            None => self.status.to_string(),
        }
    }
}

/// Aborts the spawned connection driver when the exchange ends or is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One exchange on a fresh connection; redirects are not followed.
pub async fn send(url: &Url, method: &Method, headers: &[(HeaderName, String)], body: &Bytes) -> Result<Reply, String> {
    send_trusting(url, method, headers, body, None).await
}

/// [`send`], with `https` trusting the roots of `trust` instead of the webpki roots.
pub async fn send_trusting(
    url: &Url,
    method: &Method,
    headers: &[(HeaderName, String)],
    body: &Bytes,
    trust: Option<&Arc<tokio_rustls::rustls::ClientConfig>>,
) -> Result<Reply, String> {
    let mut req =
        Request::builder().method(method.clone()).uri(&url.target).header(hyper::header::HOST, url.authority());
    if let Some(user) = &url.userinfo {
        use base64::Engine as _;
        let token = base64::engine::general_purpose::STANDARD.encode(percent_decode(user));
        req = req.header(hyper::header::AUTHORIZATION, format!("Basic {token}"));
    }
    for (name, value) in headers {
        let value = HeaderValue::from_str(value).map_err(|_| format!("header `{name}` holds a character it cannot"))?;
        req = req.header(name, value);
    }
    let req = req.body(Full::new(body.clone())).map_err(|e| e.to_string())?;
    let tcp = tokio::net::TcpStream::connect((url.host.as_str(), url.port)).await.map_err(|e| e.to_string())?;
    let (status, headers, body) = if url.scheme == "https" {
        exchange(tls(&url.host, tcp, trust).await?, req).await?
    } else {
        exchange(tcp, req).await?
    };
    Ok(Reply { status, headers, body, url: url.clone() })
}

/// [`send`], following redirects (at most [`MAX_REDIRECTS`]) as Go's client does: a 301,
/// 302 or 303 becomes a GET without a body (a HEAD stays a HEAD), a 307 or 308 repeats the
/// request. `on_redirect` hears each redirect before it is followed.
pub async fn send_following(
    url: &Url,
    method: &Method,
    headers: &[(HeaderName, String)],
    body: &Bytes,
    mut on_redirect: impl FnMut(&Url),
) -> Result<Reply, String> {
    let (mut url, mut method, mut body) = (url.clone(), method.clone(), body.clone());
    for _ in 0..=MAX_REDIRECTS {
        let reply = send(&url, &method, headers, &body).await?;
        let location = reply.header("location").map(str::to_string);
        let next = match (reply.status, location) {
            (301..=303, Some(l)) => {
                if method != Method::HEAD {
                    method = Method::GET;
                }
                body = Bytes::new();
                l
            }
            (307 | 308, Some(l)) => l,
            _ => return Ok(reply),
        };
        url = url.join(&next).map_err(|e| format!("a redirect to {e}"))?;
        on_redirect(&url);
    }
    Err(format!("stopped after {MAX_REDIRECTS} redirects"))
}

/// A request to a server on a Unix socket (the Docker Engine API): the status and the
/// whole body.
pub async fn send_unix(
    socket: &std::path::Path,
    method: &Method,
    target: &str,
    body: Option<Vec<u8>>,
) -> Result<(u16, Bytes), String> {
    let (status, body, _conn) = open_unix(socket, method, target, body).await?;
    let body = body.collect().await.map_err(|e| format!("reading the body: {e}"))?.to_bytes();
    Ok((status, body))
}

/// A streamed answer: its body, and the connection that must live as long as it is read.
pub struct Streamed {
    pub status: u16,
    pub body: hyper::body::Incoming,
    _conn: AbortOnDrop,
}

/// [`send_unix`] for answers that go on (an event stream): the body is read as it comes.
pub async fn stream_unix(socket: &std::path::Path, method: &Method, target: &str) -> Result<Streamed, String> {
    let (status, body, conn) = open_unix(socket, method, target, None).await?;
    Ok(Streamed { status, body, _conn: conn })
}

async fn open_unix(
    socket: &std::path::Path,
    method: &Method,
    target: &str,
    body: Option<Vec<u8>>,
) -> Result<(u16, hyper::body::Incoming, AbortOnDrop), String> {
    let mut req = Request::builder().method(method.clone()).uri(target).header(hyper::header::HOST, "docker");
    if body.is_some() {
        req = req.header(hyper::header::CONTENT_TYPE, "application/json");
    }
    let req = req.body(Full::new(Bytes::from(body.unwrap_or_default()))).map_err(|e| e.to_string())?;
    let io = tokio::net::UnixStream::connect(socket).await.map_err(|e| format!("{}: {e}", socket.display()))?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(io)).await.map_err(|e| e.to_string())?;
    let driver = AbortOnDrop(tokio::spawn(async move {
        let _closed = conn.await;
    }));
    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    Ok((resp.status().as_u16(), resp.into_body(), driver))
}

async fn exchange<IO>(io: IO, req: Request<Full<Bytes>>) -> Result<(u16, HeaderMap, Bytes), String>
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(io)).await.map_err(|e| e.to_string())?;
    let _driver = AbortOnDrop(tokio::spawn(async move {
        let _closed = conn.await;
    }));
    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.map_err(|e| format!("reading the body: {e}"))?.to_bytes();
    Ok((status, headers, body))
}

/// A client configuration trusting `roots` (the webpki roots when `None`).
pub fn tls_config(
    roots: Option<tokio_rustls::rustls::RootCertStore>,
) -> Result<Arc<tokio_rustls::rustls::ClientConfig>, String> {
    use tokio_rustls::rustls;
    let roots = roots.unwrap_or_else(|| {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        roots
    });
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

async fn tls(
    host: &str,
    tcp: tokio::net::TcpStream,
    trust: Option<&Arc<tokio_rustls::rustls::ClientConfig>>,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
    use tokio_rustls::rustls;
    let config = match trust {
        Some(config) => config.clone(),
        None => tls_config(None)?,
    };
    let name =
        rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|e| format!("bad server name: {e}"))?;
    tokio_rustls::TlsConnector::from(config).connect(name, tcp).await.map_err(|e| format!("TLS: {e}"))
}

/// `text` with every byte but RFC 3986's unreserved characters as `%XX` (a query value;
/// what AWS's Signature Version 4 signs).
pub fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `%XX` escapes decoded (the user and password of a URL).
fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let escaped = (b[i] == b'%' && i + 3 <= b.len())
            .then(|| std::str::from_utf8(&b[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok()))
            .flatten();
        match escaped {
            Some(v) => {
                out.push(v);
                i += 3;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_and_join() {
        let u = Url::parse("http://me:p%40ss@example.com:8080/a/b?x=1#frag").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.target.as_str()), ("example.com", 8080, "/a/b?x=1"));
        assert_eq!(u.userinfo.as_deref(), Some("me:p%40ss"));
        assert_eq!(u.to_string(), "http://example.com:8080/a/b?x=1", "no credentials shown");
        assert_eq!(percent_decode("me:p%40ss"), b"me:p@ss");
        let v6 = Url::parse("https://[::1]/").unwrap();
        assert_eq!((v6.host.as_str(), v6.port, v6.authority()), ("::1", 443, "[::1]".to_string()));
        assert_eq!(Url::parse("http://h").unwrap().target, "/");
        assert!(Url::parse("ftp://h/").is_err());
        assert!(Url::parse("http:///x").is_err());
        assert!(Url::parse("/just/a/path").is_err());
        assert!(Url::parse("http://h:99999/").is_err());
        assert_eq!(u.join("/c").unwrap().target, "/c");
        assert_eq!(u.join("c").unwrap().target, "/a/c");
        assert_eq!(u.join("//other/x").unwrap().host, "other");
        assert_eq!(u.join("https://s/").unwrap().scheme, "https");
    }
}
