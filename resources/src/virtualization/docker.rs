//! `docker:image`: a docker image named by the resource (`nginx`, `nginx:1.27`,
//! `registry:5000/team/app`, ...; `:latest` is implied without a tag or digest) that
//! `exists` (pulled when missing; the default) or is `absent` (removed), through the
//! host's [`Docker`] backend (the real one drives the `docker` CLI; [`FakeDocker`] is the
//! in-memory double). `apiversion` (`v1.41`) pins the client API version
//! (`DOCKER_API_VERSION`).
//!
//! Watch: poll-free, from `docker events --filter type=image` (every image event counts:
//! delete events name images by id only, and a spurious check is one `inspect`),
//! respawned after a daemon restart.

use lang::params::ParamMap;
#[cfg(any(test, feature = "fakes"))]
use std::collections::BTreeMap;
use std::sync::Arc;
#[cfg(any(test, feature = "fakes"))]
use std::sync::Mutex;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::contract::typed::Presence;
use crate::machine::Machine;
#[cfg(any(test, feature = "fakes"))]
use crate::util::events::broadcast_lines;
use crate::util::events::{Lines, follow, line_stream, run_tool, run_tool_ok};
#[cfg(any(test, feature = "fakes"))]
use crate::util::lock;

/// The docker daemon's images.
#[async_trait]
pub trait Docker: Send + Sync {
    /// The image's id, or `None` when it is not present locally.
    async fn image_id(&self, image: &str, api: &str) -> Result<Option<String>, ResError>;
    async fn pull(&self, image: &str, api: &str, cancel: &CancellationToken) -> Result<(), ResError>;
    async fn remove(&self, image: &str, api: &str) -> Result<(), ResError>;
    /// Image events, one line each (`ACTION ID`).
    fn events(&self, api: &str) -> Result<Lines, ResError>;
}

/// The `docker` command-line client, talking to the daemon it finds by itself
/// (`$DOCKER_HOST`, else the standard socket) or to `host` (`-H`, e.g. `unix:///run/x.sock`).
#[derive(Clone, Debug, Default)]
pub struct DockerCli {
    pub host: Option<String>,
}

impl DockerCli {
    fn argv(&self, args: &[&str]) -> Vec<String> {
        let mut argv = docker_argv(&[]);
        if let Some(host) = &self.host {
            argv.extend(["-H".to_string(), host.clone()]);
        }
        argv.extend(args.iter().map(|a| a.to_string()));
        argv
    }
}

/// `docker ARGS...`.
pub fn docker_argv(args: &[&str]) -> Vec<String> {
    std::iter::once("docker").chain(args.iter().copied()).map(str::to_string).collect()
}

/// `DOCKER_API_VERSION` for an `apiversion` param (`v1.41` -> `1.41`).
pub fn api_env(api: &str) -> Vec<(String, String)> {
    if api.is_empty() {
        Vec::new()
    } else {
        vec![("DOCKER_API_VERSION".to_string(), api.trim_start_matches('v').to_string())]
    }
}

/// The full reference of an image name: `:latest` unless it has a tag or a digest.
pub fn image_ref(name: &str) -> String {
    let last = name.rsplit('/').next().unwrap_or(name);
    if name.contains('@') || last.contains(':') { name.to_string() } else { format!("{name}:latest") }
}

/// mgmt's accepted form: `v` then a version like `1.41`.
pub(crate) fn valid_api_version(api: &str) -> bool {
    let Some((major, minor)) = api.strip_prefix('v').and_then(|v| v.split_once('.')) else { return false };
    major.len() == 1
        && major.chars().all(|c| ('1'..='9').contains(&c))
        && !minor.is_empty()
        && minor.chars().all(|c| c.is_ascii_digit())
}

#[async_trait]
impl Docker for DockerCli {
    async fn image_id(&self, image: &str, api: &str) -> Result<Option<String>, ResError> {
        let argv = self.argv(&["image", "inspect", "--format", "{{.Id}}", image]);
        let out = run_tool(&argv, &api_env(api), &CancellationToken::new()).await?;
        if out.success() {
            return Ok(Some(out.stdout.trim().to_string()));
        }
        if out.output.contains("No such image") {
            return Ok(None);
        }
        Err(ResError::new(format!("`{}` failed: {}", argv.join(" "), out.output.trim())))
    }
    async fn pull(&self, image: &str, api: &str, cancel: &CancellationToken) -> Result<(), ResError> {
        let argv = self.argv(&["image", "pull", "--quiet", image]);
        let out = run_tool(&argv, &api_env(api), cancel).await?;
        if out.success() {
            Ok(())
        } else {
            Err(ResError::new(format!("`{}` failed: {}", argv.join(" "), out.output.trim())))
        }
    }
    async fn remove(&self, image: &str, api: &str) -> Result<(), ResError> {
        run_tool_ok(&self.argv(&["image", "rm", image]), &api_env(api)).await.map(drop)
    }
    fn events(&self, api: &str) -> Result<Lines, ResError> {
        let argv = self.argv(&["events", "--filter", "type=image", "--format", "{{.Action}} {{.Actor.ID}}"]);
        line_stream(&argv, &api_env(api))
    }
}

/// An in-memory docker: `offer` puts an image in the "registry", pulls copy it locally,
/// every call is recorded and changes emit event lines.
#[cfg(any(test, feature = "fakes"))]
pub struct FakeDocker {
    registry: Mutex<BTreeMap<String, String>>,
    local: Mutex<BTreeMap<String, String>>,
    calls: Mutex<Vec<String>>,
    events: tokio::sync::broadcast::Sender<String>,
}

#[cfg(any(test, feature = "fakes"))]
impl Default for FakeDocker {
    fn default() -> Self {
        FakeDocker {
            registry: Mutex::default(),
            local: Mutex::default(),
            calls: Mutex::default(),
            events: tokio::sync::broadcast::channel(256).0,
        }
    }
}

#[cfg(any(test, feature = "fakes"))]
impl FakeDocker {
    /// Makes `image` (a full reference) pullable with the given id.
    pub fn offer(&self, image: &str, id: &str) {
        lock(&self.registry).insert(image.to_string(), id.to_string());
    }
    pub fn has(&self, image: &str) -> bool {
        lock(&self.local).contains_key(image)
    }
    pub fn calls(&self) -> Vec<String> {
        lock(&self.calls).clone()
    }
    /// Someone runs `docker image rm` outside the graph.
    pub fn remove_behind_our_back(&self, image: &str) {
        if let Some(id) = lock(&self.local).remove(image) {
            let _nobody_listening = self.events.send(format!("untag {id}"));
        }
    }
}

#[async_trait]
#[cfg(any(test, feature = "fakes"))]
impl Docker for FakeDocker {
    async fn image_id(&self, image: &str, _: &str) -> Result<Option<String>, ResError> {
        Ok(lock(&self.local).get(image).cloned())
    }
    async fn pull(&self, image: &str, api: &str, _: &CancellationToken) -> Result<(), ResError> {
        lock(&self.calls).push(format!("pull {image} {api}").trim_end().to_string());
        let id = lock(&self.registry)
            .get(image)
            .cloned()
            .ok_or_else(|| ResError::new(format!("Error response from daemon: manifest for {image} not found")))?;
        lock(&self.local).insert(image.to_string(), id);
        let _nobody_listening = self.events.send(format!("pull {image}"));
        Ok(())
    }
    async fn remove(&self, image: &str, _: &str) -> Result<(), ResError> {
        lock(&self.calls).push(format!("rm {image}"));
        if !self.has(image) {
            return Err(ResError::new(format!("Error response from daemon: No such image: {image}")));
        }
        self.remove_behind_our_back(image);
        Ok(())
    }
    fn events(&self, _: &str) -> Result<Lines, ResError> {
        Ok(broadcast_lines(&self.events))
    }
}

crate::params! {
    /// `docker:image`'s params; the name is the image reference.
    #[derive(Clone, Debug, PartialEq)]
    pub struct DockerImageParams {
        pub state: Presence = Presence::Exists,
        pub apiversion: String,
    }
}

pub struct DockerImage {
    raw: Raw,
    params: DockerImageParams,
    docker: Arc<dyn Docker>,
}

impl DockerImage {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<DockerImage, BuildError> {
        let (raw, params) = Raw::decoded("docker:image", name, values, DockerImageParams::decode)?;
        Ok(DockerImage { raw, params, docker: host.docker.clone() })
    }
}

#[async_trait]
impl Resource for DockerImage {
    fn validate(&self) -> Result<(), ResError> {
        let err = |field: Option<&str>, message: String| self.raw.invalid(field, message);
        if self.raw.name.is_empty() || self.raw.name.chars().any(char::is_whitespace) {
            return Err(err(None, "the name must be an image reference without white space".into()));
        }
        if self.params.state == Presence::Unset {
            return Err(err(Some("state"), "must be `exists` or `absent`".into()));
        }
        let api = &self.params.apiversion;
        if !api.is_empty() && !valid_api_version(api) {
            return Err(err(Some("apiversion"), format!("`{api}` is not an API version like `v1.41`")));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let (docker, api) = (self.docker.clone(), self.params.apiversion.clone());
        Box::pin(async move { follow(ctx, || docker.events(&api), |line| !line.trim().is_empty()).await })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let (image, api) = (image_ref(&self.raw.name), self.params.apiversion.clone());
        let present = self.docker.image_id(&image, &api).await?.is_some();
        let want = self.params.state == Presence::Exists;
        if present == want {
            return Ok(true);
        }
        let action = if want { "pull" } else { "remove" };
        if !apply {
            ctx.report(format!("docker:image[{}]: would {action} {image}", self.raw.name));
        } else if want {
            self.docker.pull(&image, &api, &ctx.cancel).await?;
        } else {
            self.docker.remove(&image, &api).await?;
        }
        Ok(false)
    }

    crate::fingerprint_by_params!();
}

/// The `docker:image` kind: its params and send fields as the type checker sees them, and its constructor.
pub const DOCKER_IMAGE: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("docker:image", DockerImageParams::FIELDS, crate::built_on_host!(DockerImage));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_command_lines_and_api_versions() {
        assert_eq!(image_ref("nginx"), "nginx:latest");
        assert_eq!(image_ref("nginx:1.27"), "nginx:1.27");
        assert_eq!(image_ref("registry:5000/team/app"), "registry:5000/team/app:latest");
        assert_eq!(image_ref("alpine@sha256:abc"), "alpine@sha256:abc");
        assert_eq!(
            docker_argv(&["image", "inspect", "--format", "{{.Id}}", "nginx:latest"]),
            ["docker", "image", "inspect", "--format", "{{.Id}}", "nginx:latest"]
        );
        assert_eq!(api_env("v1.41"), [("DOCKER_API_VERSION".to_string(), "1.41".to_string())]);
        assert!(api_env("").is_empty());
        assert!(valid_api_version("v1.41") && valid_api_version("v2.0"));
        assert!(
            !valid_api_version("1.41")
                && !valid_api_version("v0.1")
                && !valid_api_version("v1.")
                && !valid_api_version("v12.1")
        );
    }
}
