//! `consul:kv`: one key of a Consul key/value store set to `value`, over Consul's HTTP API
//! (`GET`/`PUT /v1/kv/KEY`, with `X-Consul-Token` when `token` is set). The key is `key`,
//! or else the name, which may also carry the server as a URL
//! (`http://127.0.0.1:8500/my/key`); `scheme` (`http` or `https`) and `address`
//! (`host:port`) override it. Defaults: `http`, `$CONSUL_HTTP_ADDR` or `127.0.0.1:8500`,
//! token `$CONSUL_HTTP_TOKEN`. Watch: Consul blocking queries (`?index=N&wait=…`) on the
//! key. The HTTP/1.1 client is `util::http_client` (hyper; rustls with webpki roots for https).

use lang::params::ParamMap;
use std::time::Duration;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use hyper::Method;
use hyper::body::Bytes;
use hyper::header::HeaderName;

use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::util::http_client::{self, Url};

/// How long one blocking query may wait on the server.
pub const BLOCK: Duration = Duration::from_secs(300);

/// Where a key lives and how to reach it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub scheme: String,
    pub address: String,
    pub key: String,
    pub token: String,
}

/// What one HTTP exchange returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    /// `X-Consul-Index`, when present.
    pub index: Option<u64>,
    pub body: Vec<u8>,
}

crate::params! {
    /// `consul:kv`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct ConsulKvParams {
        pub key: String,
        pub value: String,
        pub scheme: String,
        pub address: String,
        pub token: String,
    }
}

/// Resolves the target from the params and the name (see the module doc).
pub fn target(name: &str, p: &ConsulKvParams) -> Target {
    let (mut scheme, mut address, mut key) = (String::new(), String::new(), p.key.clone());
    if key.is_empty() {
        match name.split_once("://") {
            Some((s, rest)) => {
                let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
                (scheme, address, key) = (s.to_string(), host.to_string(), path.to_string());
            }
            None => key = name.to_string(),
        }
    }
    if !p.scheme.is_empty() {
        scheme = p.scheme.clone();
    }
    if !p.address.is_empty() {
        address = p.address.clone();
    }
    if scheme.is_empty() {
        scheme = "http".into();
    }
    if address.is_empty() {
        address = std::env::var("CONSUL_HTTP_ADDR").unwrap_or_else(|_| "127.0.0.1:8500".into());
    }
    let token =
        if p.token.is_empty() { std::env::var("CONSUL_HTTP_TOKEN").unwrap_or_default() } else { p.token.clone() };
    Target { scheme, address, key: key.trim_start_matches('/').to_string(), token }
}

/// The request path for a key: `/v1/kv/` plus the key, percent-encoded except `/`.
pub fn kv_path(key: &str) -> String {
    let mut out = String::from("/v1/kv/");
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One HTTP request to the target's server (a fresh connection each time).
pub async fn request(t: &Target, method: Method, path: &str, body: Option<&str>) -> Result<Reply, ResError> {
    // Failing to reach the server may pass (it restarts, the network comes back).
    let fail = |e: String| ResError::transient(format!("consul {method} {}://{}{path}: {e}", t.scheme, t.address));
    let url = Url::parse(&format!("{}://{}{path}", t.scheme, t.address)).map_err(fail)?;
    let mut headers = Vec::new();
    if !t.token.is_empty() {
        headers.push((HeaderName::from_static("x-consul-token"), t.token.clone()));
    }
    let body = Bytes::from(body.unwrap_or_default().to_string());
    let reply = http_client::send(&url, &method, &headers, &body).await.map_err(fail)?;
    let index = reply.header("X-Consul-Index").and_then(|v| v.parse().ok());
    Ok(Reply { status: reply.status, index, body: reply.body.to_vec() })
}

/// The key's current value (`None` when it does not exist).
pub async fn get(t: &Target) -> Result<Option<String>, ResError> {
    let reply = request(t, Method::GET, &format!("{}?raw", kv_path(&t.key)), None).await?;
    match reply.status {
        200 => Ok(Some(String::from_utf8_lossy(&reply.body).into_owned())),
        404 => Ok(None),
        s => {
            let message = format!("consul: reading key `{}`: HTTP {s}: {}", t.key, body_text(&reply));
            Err(if s >= 500 { ResError::transient(message) } else { ResError::new(message) })
        }
    }
}

/// Sets the key.
pub async fn put(t: &Target, value: &str) -> Result<(), ResError> {
    let reply = request(t, Method::PUT, &kv_path(&t.key), Some(value)).await?;
    if reply.status != 200 || body_text(&reply) != "true" {
        return Err(ResError::new(format!(
            "consul: writing key `{}`: HTTP {}: {}",
            t.key,
            reply.status,
            body_text(&reply)
        )));
    }
    Ok(())
}

/// A blocking query: returns the key's modify index once it differs from `index` (or the
/// server's wait ran out). `index` 0 returns at once.
pub async fn wait(t: &Target, index: u64, block: Duration) -> Result<u64, ResError> {
    let path = if index == 0 {
        kv_path(&t.key)
    } else {
        format!("{}?index={index}&wait={}s", kv_path(&t.key), block.as_secs().max(1))
    };
    let reply = request(t, Method::GET, &path, None).await?;
    if reply.status != 200 && reply.status != 404 {
        return Err(ResError::new(format!(
            "consul: watching key `{}`: HTTP {}: {}",
            t.key,
            reply.status,
            body_text(&reply)
        )));
    }
    reply.index.ok_or_else(|| ResError::new(format!("consul: watching key `{}`: no X-Consul-Index header", t.key)))
}

fn body_text(reply: &Reply) -> String {
    String::from_utf8_lossy(&reply.body).trim().to_string()
}

pub struct ConsulKv {
    raw: Raw,
    params: ConsulKvParams,
}

impl ConsulKv {
    pub fn build(name: &str, values: &ParamMap) -> Result<ConsulKv, BuildError> {
        let (raw, params) = Raw::decoded("consul:kv", name, values, ConsulKvParams::decode)?;
        Ok(ConsulKv { raw, params })
    }

    fn target(&self) -> Target {
        target(&self.raw.name, &self.params)
    }
}

#[async_trait]
impl Resource for ConsulKv {
    fn validate(&self) -> Result<(), ResError> {
        let err = |field: Option<&str>, message: &str| self.raw.invalid(field, message);
        let t = self.target();
        if t.key.is_empty() {
            return Err(err(Some("key"), "the key is empty (set `key`, or name the resource after the key)"));
        }
        if !matches!(t.scheme.as_str(), "http" | "https") {
            return Err(err(Some("scheme"), "must be `http` or `https`"));
        }
        if t.address.is_empty() || t.address.contains('/') {
            return Err(err(Some("address"), "must be HOST:PORT"));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let t = self.target();
        Box::pin(async move {
            let mut index = 0;
            loop {
                let next = tokio::select! {
                    next = wait(&t, index, BLOCK) => next?,
                    _ = ctx.cancelled() => return Ok(()),
                };
                // The first answer means "listening"; later ones report a change. An index
                // that went backwards (a restored server) starts over.
                if index == 0 || next != index {
                    ctx.event();
                }
                index = if next < index { 0 } else { next };
                if index == 0 {
                    // Never spin against a server that answers index 0.
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let t = self.target();
        if get(&t).await?.as_deref() == Some(self.params.value.as_str()) {
            return Ok(true);
        }
        if apply {
            put(&t, &self.params.value).await?;
        } else {
            ctx.report(format!("consul:kv[{}]: would set `{}` to `{}`", self.raw.name, t.key, self.params.value));
        }
        Ok(false)
    }

    crate::fingerprint_by_params!();
}

/// The `consul:kv` kind: its params and send fields as the type checker sees them, and its constructor.
pub const CONSUL_KV: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("consul:kv", ConsulKvParams::FIELDS, |_host, name, params| {
        Ok(Box::new(ConsulKv::build(name, params)?))
    });

#[cfg(test)]
mod tests {
    use super::*;
    use lang::value::Value;

    fn params(key: &str, scheme: &str, address: &str) -> ConsulKvParams {
        ConsulKvParams {
            key: key.into(),
            value: "v".into(),
            scheme: scheme.into(),
            address: address.into(),
            token: "t".into(),
        }
    }

    #[test]
    fn the_target_comes_from_params_or_the_name() {
        let t = target("love", &params("mgmt/love", "", "10.0.0.1:8500"));
        assert_eq!((t.scheme.as_str(), t.address.as_str(), t.key.as_str()), ("http", "10.0.0.1:8500", "mgmt/love"));
        let t = target("https://consul.example:8501/a/b", &params("", "", ""));
        assert_eq!((t.scheme.as_str(), t.address.as_str(), t.key.as_str()), ("https", "consul.example:8501", "a/b"));
        let t = target("https://consul.example:8501/a/b", &params("", "http", "127.0.0.1:1"));
        assert_eq!((t.scheme.as_str(), t.address.as_str(), t.key.as_str()), ("http", "127.0.0.1:1", "a/b"));
        assert_eq!(target("plain", &params("", "", "h:1")).key, "plain");
        assert_eq!(t.token, "t");
    }

    #[test]
    fn paths_are_percent_encoded() {
        assert_eq!(kv_path("mgmt/time"), "/v1/kv/mgmt/time");
        assert_eq!(kv_path("a b?c"), "/v1/kv/a%20b%3Fc");
    }

    #[test]
    fn validation_names_the_field() {
        let build = |name: &str, pairs: &[(&str, &str)]| {
            let values = pairs.iter().map(|(k, v)| (k.to_string(), Value::str(*v))).collect();
            ConsulKv::build(name, &values).unwrap()
        };
        let err = build("love", &[("scheme", "ftp")]).validate().unwrap_err();
        assert!(err.message.contains("consul:kv[love]: field `scheme`"), "{err}");
        let err = build("http://h:1/", &[]).validate().unwrap_err();
        assert!(err.message.contains("field `key`"), "{err}");
        assert!(build("love", &[("key", "mgmt/love"), ("value", "YES")]).validate().is_ok());
    }
}
