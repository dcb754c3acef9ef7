//! `docker:container`: a container named by the resource, `running` (the default),
//! `stopped` or `removed`, made from `image` with `cmd`, `env` (`VAR=value`) and `ports`
//! (`{"tcp" => {HOST => CONTAINER}}`), through the Docker Engine API on the daemon's Unix
//! socket (`$DOCKER_HOST` when it is `unix://…`, else `/var/run/docker.sock`; `apiversion`
//! pins the API version, `v1.41`). As mgmt's: a container with another image is an error,
//! or with `force` is removed and made again; the image is pulled only when it is not
//! present. A `stopped` container that does not exist is left so.
//!
//! Watch: the daemon's container event stream, followed again (with an event) after the
//! daemon restarts or comes up, so a container stopped or removed behind tend's back is
//! put back at once.

use lang::params::ParamMap;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use http_body_util::BodyExt;
use hyper::Method;
use lang::value::Value;
use serde_json::json;

use crate::contract::common::Raw;
use crate::contract::params::{BuildError, Params};
use crate::contract::typed::{Fingerprint, Param, ParamType};
use crate::util::http_client;

/// The states a container may be asked to be in.
const STATES: &[&str] = &["running", "stopped", "removed"];

/// `ports`: protocol -> host port -> container port.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ports(pub BTreeMap<String, BTreeMap<i64, i64>>);

impl ParamType for Ports {
    const TYPE: &'static str = "map{str: map{int: int}}";
    fn from_value(p: &Params<'_>, field: &str, value: &Value) -> Result<Self, BuildError> {
        let bad = || p.error(Some(field), format!("expected a {}, found {value}", <Ports as ParamType>::TYPE));
        let Value::Map(outer) = value else { return Err(bad()) };
        let mut ports = BTreeMap::new();
        for (proto, inner) in outer.iter() {
            let (Some(proto), Value::Map(inner)) = (proto.as_str(), inner) else { return Err(bad()) };
            let mut pairs = BTreeMap::new();
            for (host, inside) in inner.iter() {
                let (Some(host), Some(inside)) = (host.as_int(), inside.as_int()) else { return Err(bad()) };
                pairs.insert(host, inside);
            }
            ports.insert(proto.to_string(), pairs);
        }
        Ok(Ports(ports))
    }
}

impl Param for Ports {
    const TYPE: &'static str = <Ports as ParamType>::TYPE;
    const ZERO_WHEN_ABSENT: bool = true;
    fn read(p: &Params<'_>, field: &str) -> Result<Self, BuildError> {
        Ok(<Option<Ports> as Param>::read(p, field)?.unwrap_or_default())
    }
}

impl Fingerprint for Ports {
    fn fingerprint_into(&self, out: &mut String) {
        self.0.fingerprint_into(out);
    }
}

crate::params! {
    /// `docker:container`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct ContainerParams {
        pub state: String => |p, f| p.str_or(f, "running"),
        pub image: String,
        pub cmd: Vec<String>,
        pub env: Vec<String>,
        pub ports: Ports,
        pub apiversion: String,
        pub force: bool,
    }
}

/// A container as the daemon lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub id: String,
    /// The image it was made from, as it was named then.
    pub image: String,
    /// Docker's state: `created`, `running`, `paused`, `restarting`, `exited`, `dead`.
    pub state: String,
}

/// What a container is made with.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    pub name: String,
    pub image: String,
    pub cmd: Vec<String>,
    pub env: Vec<String>,
    pub ports: Ports,
}

/// The docker daemon's containers (the real one is [`EngineApi`]; tests run a real daemon).
#[async_trait]
pub trait Containers: Send + Sync {
    async fn find(&self, name: &str) -> Result<Option<Found>, ResError>;
    async fn has_image(&self, image: &str) -> Result<bool, ResError>;
    async fn pull(&self, image: &str) -> Result<(), ResError>;
    /// Creates the container; its id.
    async fn create(&self, spec: &Spec) -> Result<String, ResError>;
    async fn start(&self, id: &str) -> Result<(), ResError>;
    async fn stop(&self, id: &str) -> Result<(), ResError>;
    async fn remove(&self, id: &str) -> Result<(), ResError>;
    /// Resolves when a container event came (`Ok(true)`), or the stream ended (`Ok(false)`).
    async fn next_event(&self, stream: &mut Option<http_client::Streamed>) -> Result<bool, ResError>;
}

/// The Docker Engine API over the daemon's Unix socket.
pub struct EngineApi {
    pub socket: PathBuf,
    /// `v1.41`, or empty for the daemon's own version.
    pub version: String,
}

impl EngineApi {
    /// The daemon `$DOCKER_HOST` names (a `unix://` one), else the standard socket.
    pub fn from_env(version: &str) -> EngineApi {
        let socket = std::env::var("DOCKER_HOST")
            .ok()
            .and_then(|h| h.strip_prefix("unix://").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("/var/run/docker.sock"));
        EngineApi { socket, version: version.to_string() }
    }

    fn path(&self, rest: &str) -> String {
        if self.version.is_empty() { rest.to_string() } else { format!("/{}{rest}", self.version) }
    }

    /// One request; a daemon that cannot be reached is a failure that may pass.
    async fn call(
        &self,
        method: Method,
        rest: &str,
        body: Option<serde_json::Value>,
    ) -> Result<(u16, Vec<u8>), ResError> {
        let body = body.map(|b| b.to_string().into_bytes());
        let (status, bytes) = http_client::send_unix(&self.socket, &method, &self.path(rest), body)
            .await
            .map_err(|e| ResError::transient(format!("cannot reach the docker daemon: {e}")))?;
        Ok((status, bytes.to_vec()))
    }

    /// A failed answer as an error: docker's own message; a server error may pass.
    fn refused(doing: &str, status: u16, body: &[u8]) -> ResError {
        let message = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(str::to_string))
            .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_string());
        let e = format!("docker: {doing}: {message} (HTTP {status})");
        if status >= 500 { ResError::transient(e) } else { ResError::new(e) }
    }
}

/// `?a=b` with the value percent-encoded.
fn query(key: &str, value: &str) -> String {
    let mut out = format!("?{key}=");
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[async_trait]
impl Containers for EngineApi {
    async fn find(&self, name: &str) -> Result<Option<Found>, ResError> {
        let filters = json!({ "name": [format!("^/{name}$")] }).to_string();
        let (status, body) =
            self.call(Method::GET, &format!("/containers/json{}&all=1", query("filters", &filters)), None).await?;
        if status != 200 {
            return Err(EngineApi::refused("listing containers", status, &body));
        }
        let list: Vec<serde_json::Value> =
            serde_json::from_slice(&body).map_err(|e| ResError::new(format!("docker: listing containers: {e}")))?;
        if list.len() > 1 {
            return Err(ResError::new(format!("docker: more than one container is named {name}")));
        }
        let text = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or_default().to_string();
        Ok(list.first().map(|c| Found { id: text(c, "Id"), image: text(c, "Image"), state: text(c, "State") }))
    }

    async fn has_image(&self, image: &str) -> Result<bool, ResError> {
        let (status, body) = self.call(Method::GET, &format!("/images/{image}/json"), None).await?;
        match status {
            200 => Ok(true),
            404 => Ok(false),
            s => Err(EngineApi::refused(&format!("inspecting image {image}"), s, &body)),
        }
    }

    async fn pull(&self, image: &str) -> Result<(), ResError> {
        let (status, body) =
            self.call(Method::POST, &format!("/images/create{}", query("fromImage", image)), None).await?;
        if status != 200 {
            return Err(EngineApi::refused(&format!("pulling {image}"), status, &body));
        }
        // The progress stream reports a failure as an `error` object, with status 200.
        for line in body.split(|b| *b == b'\n') {
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(line)
                && let Some(e) = v.get("error").and_then(|e| e.as_str())
            {
                return Err(ResError::transient(format!("docker: pulling {image}: {e}")));
            }
        }
        Ok(())
    }

    async fn create(&self, spec: &Spec) -> Result<String, ResError> {
        let mut exposed = serde_json::Map::new();
        let mut bindings = serde_json::Map::new();
        for (proto, pairs) in &spec.ports.0 {
            for (host, inside) in pairs {
                let port = format!("{inside}/{proto}");
                exposed.insert(port.clone(), json!({}));
                let entry = bindings.entry(port).or_insert_with(|| json!([]));
                if let Some(list) = entry.as_array_mut() {
                    list.push(json!({ "HostIp": "0.0.0.0", "HostPort": host.to_string() }));
                }
            }
        }
        let mut body = json!({
            "Image": spec.image,
            "Env": spec.env,
            "ExposedPorts": exposed,
            "HostConfig": { "PortBindings": bindings },
        });
        if !spec.cmd.is_empty() {
            body["Cmd"] = json!(spec.cmd);
        }
        let (status, reply) =
            self.call(Method::POST, &format!("/containers/create{}", query("name", &spec.name)), Some(body)).await?;
        if status != 201 {
            return Err(EngineApi::refused(&format!("creating container {}", spec.name), status, &reply));
        }
        let v: serde_json::Value = serde_json::from_slice(&reply)
            .map_err(|e| ResError::new(format!("docker: creating {}: {e}", spec.name)))?;
        Ok(v.get("Id").and_then(|i| i.as_str()).unwrap_or_default().to_string())
    }

    async fn start(&self, id: &str) -> Result<(), ResError> {
        let (status, body) = self.call(Method::POST, &format!("/containers/{id}/start"), None).await?;
        match status {
            204 | 304 => Ok(()),
            s => Err(EngineApi::refused("starting the container", s, &body)),
        }
    }

    async fn stop(&self, id: &str) -> Result<(), ResError> {
        let (status, body) = self.call(Method::POST, &format!("/containers/{id}/stop?t=10"), None).await?;
        match status {
            204 | 304 => Ok(()),
            s => Err(EngineApi::refused("stopping the container", s, &body)),
        }
    }

    async fn remove(&self, id: &str) -> Result<(), ResError> {
        let (status, body) = self.call(Method::DELETE, &format!("/containers/{id}?force=1"), None).await?;
        match status {
            204 | 404 => Ok(()),
            s => Err(EngineApi::refused("removing the container", s, &body)),
        }
    }

    async fn next_event(&self, stream: &mut Option<http_client::Streamed>) -> Result<bool, ResError> {
        if stream.is_none() {
            let filters = json!({ "type": ["container"] }).to_string();
            let s = http_client::stream_unix(
                &self.socket,
                &Method::GET,
                &self.path(&format!("/events{}", query("filters", &filters))),
            )
            .await
            .map_err(|e| ResError::transient(format!("cannot reach the docker daemon: {e}")))?;
            if s.status != 200 {
                return Err(ResError::transient(format!("docker: following events: HTTP {}", s.status)));
            }
            *stream = Some(s);
            return Ok(true);
        }
        let Some(s) = stream.as_mut() else { return Ok(false) };
        loop {
            match s.body.frame().await {
                Some(Ok(frame)) if frame.data_ref().is_some_and(|d| !d.is_empty()) => return Ok(true),
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => {
                    *stream = None;
                    return Ok(false);
                }
            }
        }
    }
}

pub struct DockerContainer {
    raw: Raw,
    params: ContainerParams,
    api: Arc<dyn Containers>,
}

impl DockerContainer {
    pub fn build(
        api: Option<Arc<dyn Containers>>,
        name: &str,
        values: &ParamMap,
    ) -> Result<DockerContainer, BuildError> {
        let (raw, params) = Raw::decoded("docker:container", name, values, ContainerParams::decode)?;
        let api = api.unwrap_or_else(|| Arc::new(EngineApi::from_env(&params.apiversion)));
        Ok(DockerContainer { raw, params, api })
    }

    fn fail(&self, e: ResError) -> ResError {
        ResError { message: format!("docker:container[{}]: {}", self.raw.name, e.message), ..e }
    }

    fn spec(&self) -> Spec {
        Spec {
            name: self.raw.name.clone(),
            image: self.params.image.clone(),
            cmd: self.params.cmd.clone(),
            env: self.params.env.clone(),
            ports: self.params.ports.clone(),
        }
    }

    async fn converge(&self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let want = self.params.state.as_str();
        let image = super::docker::image_ref(&self.params.image);
        let found = self.api.find(&self.raw.name).await?;
        let mut found = match found {
            None if want != "running" => return Ok(true),
            Some(c) if super::docker::image_ref(&c.image) != image && want != "removed" => {
                if !self.params.force {
                    return Err(ResError::new(format!(
                        "it exists with another image, {} (force replaces it)",
                        c.image
                    )));
                }
                if !apply {
                    ctx.report(format!("would replace the container of image {} with one of {image}", c.image));
                    return Ok(false);
                }
                self.api.remove(&c.id).await?;
                ctx.report(format!("removed the container of image {}", c.image));
                None
            }
            other => other,
        };
        let right = match (want, &found) {
            ("running", Some(c)) => c.state == "running",
            ("stopped", Some(c)) => c.state != "running" && c.state != "restarting",
            ("removed", c) => c.is_none(),
            _ => false,
        };
        if right {
            return Ok(true);
        }
        if !apply {
            ctx.report(format!("would make the container {want}"));
            return Ok(false);
        }
        match want {
            "removed" => {
                if let Some(c) = found {
                    self.api.remove(&c.id).await?;
                }
            }
            "stopped" => {
                if let Some(c) = found {
                    self.api.stop(&c.id).await?;
                }
            }
            _ => {
                if found.is_none() {
                    if !self.api.has_image(&image).await? {
                        self.api.pull(&image).await?;
                    }
                    let id = self.api.create(&self.spec()).await?;
                    found = Some(Found { id, image: image.clone(), state: "created".into() });
                }
                if let Some(c) = found {
                    self.api.start(&c.id).await?;
                }
            }
        }
        ctx.report(format!("made {want}"));
        Ok(false)
    }
}

#[async_trait]
impl Resource for DockerContainer {
    fn validate(&self) -> Result<(), ResError> {
        let p = &self.params;
        let err = |field: &str, m: String| self.raw.invalid(Some(field), m);
        if !STATES.contains(&p.state.as_str()) {
            return Err(err("state", format!("must be one of {}, got `{}`", STATES.join(", "), p.state)));
        }
        if p.image.is_empty() {
            return Err(err("image", "an image must be given".into()));
        }
        if let Some(bad) = p.env.iter().find(|e| !e.contains('=') || e.contains(' ')) {
            return Err(err("env", format!("`{bad}` is not VAR=value")));
        }
        for (proto, pairs) in &p.ports.0 {
            if !["tcp", "udp", "sctp"].contains(&proto.as_str()) {
                return Err(err("ports", format!("`{proto}` is not tcp, udp or sctp")));
            }
            if let Some((h, c)) = pairs.iter().find(|(h, c)| !(1..=65535).contains(*h) || !(1..=65535).contains(*c)) {
                return Err(err("ports", format!("{h} => {c}: ports are 1 to 65535")));
            }
        }
        if !p.apiversion.is_empty() && !super::docker::valid_api_version(&p.apiversion) {
            return Err(err("apiversion", format!("`{}` is not like v1.41", p.apiversion)));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let api = self.api.clone();
        let name = self.raw.name.clone();
        Box::pin(async move {
            let mut stream = None;
            let mut away = Duration::ZERO;
            loop {
                let next = tokio::select! {
                    n = api.next_event(&mut stream) => n,
                    _ = ctx.cancelled() => return Ok(()),
                };
                match next {
                    Ok(true) => {
                        if !away.is_zero() {
                            tracing::info!(resource = %name, "the docker daemon answers again");
                            away = Duration::ZERO;
                        }
                        ctx.event();
                    }
                    Ok(false) => ctx.event(),
                    Err(e) => {
                        // No daemon (yet): check now (the check says why it fails), then
                        // keep trying to follow it, 1 s doubling to 30 s.
                        if away.is_zero() {
                            tracing::warn!(resource = %name, "{}; following it again once it answers", e.message);
                            ctx.event();
                        }
                        away = (away * 2).clamp(Duration::from_secs(1), Duration::from_secs(30));
                        tokio::select! {
                            () = tokio::time::sleep(away) => {}
                            _ = ctx.cancelled() => return Ok(()),
                        }
                    }
                }
            }
        })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        self.converge(ctx, apply).await.map_err(|e| self.fail(e))
    }

    crate::fingerprint_by_params!();
}

/// The kind, built against the host's daemon ([`crate::Machine::containers`]).
pub const DOCKER_CONTAINER: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("docker:container", ContainerParams::FIELDS, |host, name, params| {
        Ok(Box::new(DockerContainer::build(host.containers.clone(), name, params)?))
    });

/// The socket of the daemon a path names (for tests and tools).
pub fn engine_at(socket: &Path) -> Arc<dyn Containers> {
    Arc::new(EngineApi { socket: socket.to_path_buf(), version: String::new() })
}
