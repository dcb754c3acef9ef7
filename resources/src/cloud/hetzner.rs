//! `hetzner:vm`: a server in the Hetzner Cloud, named by the resource, through the Hetzner
//! Cloud API (`/v1`, bearer token) behind the [`HetznerApi`] trait.
//!
//! As in mgmt: `state` is `""` (leave the power alone), `exists`, `running`, `off` or
//! `absent`; a server whose `servertype`, `datacenter` or `image` differ from the params
//! needs a rebuild (delete and create), which `allowrebuild` refuses (`""`, an error),
//! skips (`ignore`) or does (`ifneeded`); `serverrescuemode` (`linux32`, `linux64`,
//! `freebsd64`, `""` for off) with `serverrescuekeys` (names of the project's keys); each
//! change waits for the server, asking every `waitinterval` seconds for at most
//! `waittimeout`. Unlike mgmt, only the specs that are set are compared, and no
//! `Meta:poll` is needed: the watch asks the API every [`POLL`] and raises an event only
//! when the server changed. The token (`apitoken`) is sent in a header and nowhere else.

use lang::params::ParamMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use hyper::Method;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderName};
use serde_json::{Value as Json, json};

use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::machine::Machine;
use crate::util::http_client::{self, Url, percent_encode};

/// The public API.
pub const PUBLIC_API: &str = "https://api.hetzner.cloud/v1";

/// How often the watch asks the API about the server (its rate limit is 3600 an hour).
pub const POLL: Duration = Duration::from_secs(30);

const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

crate::params! {
    /// `hetzner:vm`'s params; the name is the server's.
    #[derive(Clone, Debug, PartialEq)]
    pub struct HetznerVmParams {
        pub apitoken: String,
        pub state: String,
        pub allowrebuild: String,
        pub servertype: String,
        pub datacenter: String,
        pub image: String,
        pub userdata: String,
        pub serverrescuemode: String,
        pub serverrescuekeys: Vec<String>,
        pub waitinterval: u32 = 5,
        pub waittimeout: u32 = 300,
    }
}

/// A server as the API describes it (the fields this kind reads).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Server {
    pub id: u64,
    /// `running`, `off`, `initializing`, `starting`, `stopping`, `deleting`, ...
    pub status: String,
    pub server_type: String,
    pub datacenter: String,
    pub image: String,
    pub rescue_enabled: bool,
}

impl Server {
    fn from_json(v: &Json) -> Option<Server> {
        Some(Server {
            id: v["id"].as_u64()?,
            status: v["status"].as_str()?.to_string(),
            server_type: v["server_type"]["name"].as_str().unwrap_or_default().to_string(),
            datacenter: v["datacenter"]["name"].as_str().unwrap_or_default().to_string(),
            image: v["image"]["name"].as_str().unwrap_or_default().to_string(),
            rescue_enabled: v["rescue_enabled"].as_bool().unwrap_or(false),
        })
    }

    /// `running` or `off`: not on its way anywhere.
    fn steady(&self) -> bool {
        matches!(self.status.as_str(), "running" | "off")
    }
}

/// A server to create.
#[derive(Clone, Debug, PartialEq)]
pub struct NewServer {
    pub name: String,
    pub server_type: String,
    pub image: String,
    pub datacenter: String,
    pub user_data: String,
    pub start_after_create: bool,
    pub ssh_keys: Vec<u64>,
}

/// What `hetzner:vm` asks of the API.
#[async_trait]
pub trait HetznerApi: Send + Sync {
    async fn server(&self, name: &str) -> Result<Option<Server>, String>;
    async fn create(&self, server: &NewServer) -> Result<(), String>;
    async fn delete(&self, id: u64) -> Result<(), String>;
    /// A server action (`poweron`, `poweroff`, `enable_rescue`, `disable_rescue`).
    async fn action(&self, id: u64, action: &str, body: Json) -> Result<(), String>;
    /// The project's SSH keys, `(id, name)`.
    async fn ssh_keys(&self) -> Result<Vec<(u64, String)>, String>;
}

/// The API over HTTPS.
pub struct Hcloud {
    base: Url,
    token: String,
}

impl Hcloud {
    pub fn new(endpoint: &str, token: &str) -> Result<Hcloud, String> {
        Ok(Hcloud { base: Url::parse(endpoint.trim_end_matches('/'))?, token: token.to_string() })
    }

    async fn call(&self, method: Method, path: &str, body: Option<Json>) -> Result<Json, String> {
        let mut url = self.base.clone();
        url.target = format!("{}{path}", self.base.target.trim_end_matches('/'));
        let mut headers: Vec<(HeaderName, String)> = vec![(AUTHORIZATION, format!("Bearer {}", self.token))];
        let payload = match body {
            Some(b) => {
                headers.push((CONTENT_TYPE, "application/json".into()));
                Bytes::from(b.to_string())
            }
            None => Bytes::new(),
        };
        let reply =
            match tokio::time::timeout(REQUEST_TIMEOUT, http_client::send(&url, &method, &headers, &payload)).await {
                Err(_) => {
                    return Err(format!("the Hetzner API at {} did not answer within {REQUEST_TIMEOUT:?}", self.base));
                }
                Ok(Err(e)) => return Err(format!("cannot reach the Hetzner API at {}: {e}", self.base)),
                Ok(Ok(reply)) => reply,
            };
        let json: Json = serde_json::from_slice(&reply.body).unwrap_or(Json::Null);
        if (200..300).contains(&reply.status) {
            return Ok(json);
        }
        let error = &json["error"];
        let what = match (error["code"].as_str(), error["message"].as_str()) {
            (Some(code), Some(message)) => format!("{code}: {message}"),
            _ => reply.status_text(),
        };
        if reply.status == 401 {
            return Err(format!("the Hetzner API refused the token ({what})"));
        }
        Err(format!("the Hetzner API answered {method} {path} with {} ({what})", reply.status))
    }
}

#[async_trait]
impl HetznerApi for Hcloud {
    async fn server(&self, name: &str) -> Result<Option<Server>, String> {
        let found = self.call(Method::GET, &format!("/servers?name={}", percent_encode(name)), None).await?;
        let servers = found["servers"].as_array().cloned().unwrap_or_default();
        Ok(servers.iter().filter(|s| s["name"].as_str() == Some(name)).find_map(Server::from_json))
    }

    async fn create(&self, s: &NewServer) -> Result<(), String> {
        let mut body = json!({
            "name": s.name,
            "server_type": s.server_type,
            "image": s.image,
            "start_after_create": s.start_after_create,
            "ssh_keys": s.ssh_keys,
            "automount": false,
        });
        if !s.datacenter.is_empty() {
            body["datacenter"] = json!(s.datacenter);
        }
        if !s.user_data.is_empty() {
            body["user_data"] = json!(s.user_data);
        }
        self.call(Method::POST, "/servers", Some(body)).await.map(|_| ())
    }

    async fn delete(&self, id: u64) -> Result<(), String> {
        self.call(Method::DELETE, &format!("/servers/{id}"), None).await.map(|_| ())
    }

    async fn action(&self, id: u64, action: &str, body: Json) -> Result<(), String> {
        self.call(Method::POST, &format!("/servers/{id}/actions/{action}"), Some(body)).await.map(|_| ())
    }

    async fn ssh_keys(&self) -> Result<Vec<(u64, String)>, String> {
        let found = self.call(Method::GET, "/ssh_keys?per_page=50", None).await?;
        Ok(found["ssh_keys"]
            .as_array()
            .map(|keys| {
                keys.iter().filter_map(|k| Some((k["id"].as_u64()?, k["name"].as_str()?.to_string()))).collect()
            })
            .unwrap_or_default())
    }
}

pub struct HetznerVm {
    raw: Raw,
    params: HetznerVmParams,
    endpoint: String,
}

impl HetznerVm {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<HetznerVm, BuildError> {
        let (raw, params) = Raw::decoded("hetzner:vm", name, values, HetznerVmParams::decode)?;
        Ok(HetznerVm { raw, params, endpoint: host.clouds.hetzner.clone() })
    }

    fn key(&self) -> String {
        format!("hetzner:vm[{}]", self.raw.name)
    }

    fn api(&self) -> Result<Arc<dyn HetznerApi>, ResError> {
        let api = Hcloud::new(&self.endpoint, &self.params.apitoken)
            .map_err(|e| ResError::new(format!("{}: the Hetzner API endpoint: {e}", self.key())))?;
        Ok(Arc::new(api))
    }

    /// Asks for the server every `waitinterval` until `done` holds, for at most `waittimeout`.
    async fn wait_until(
        &self,
        api: &dyn HetznerApi,
        what: &str,
        done: impl Fn(Option<&Server>) -> bool,
    ) -> Result<Option<Server>, String> {
        let p = &self.params;
        let until = tokio::time::Instant::now() + Duration::from_secs(u64::from(p.waittimeout));
        let every = Duration::from_secs(u64::from(p.waitinterval)).max(Duration::from_millis(200));
        loop {
            let now = api.server(&self.raw.name).await?;
            if done(now.as_ref()) {
                return Ok(now);
            }
            if tokio::time::Instant::now() >= until {
                let status = now.map_or("absent".to_string(), |s| s.status);
                return Err(format!(
                    "the server is still {status} after {} s, waiting for it to be {what}",
                    p.waittimeout
                ));
            }
            tokio::time::sleep(every).await;
        }
    }

    /// The first spec of the server that differs from a param that is set.
    fn differing(&self, s: &Server) -> Option<(&'static str, String, String)> {
        let p = &self.params;
        [
            ("servertype", &p.servertype, &s.server_type),
            ("datacenter", &p.datacenter, &s.datacenter),
            ("image", &p.image, &s.image),
        ]
        .into_iter()
        .find(|(_, want, have)| !want.is_empty() && want != have)
        .map(|(field, want, have)| (field, want.clone(), have.clone()))
    }

    async fn create(&self, api: &dyn HetznerApi, start: bool) -> Result<Server, String> {
        let p = &self.params;
        let keys = api.ssh_keys().await?;
        if keys.is_empty() {
            tracing::warn!(resource = %self.key(), "the project has no SSH keys: the server is made without one");
        }
        let new = NewServer {
            name: self.raw.name.clone(),
            server_type: p.servertype.clone(),
            image: p.image.clone(),
            datacenter: p.datacenter.clone(),
            user_data: p.userdata.clone(),
            start_after_create: start,
            ssh_keys: keys.iter().map(|(id, _)| *id).collect(),
        };
        api.create(&new).await?;
        let made = self.wait_until(api, "made", |s| s.is_some_and(Server::steady)).await?;
        made.ok_or_else(|| "the server vanished as it was made".to_string())
    }

    /// Brings the power to `state`; the server as it ends.
    async fn power(&self, api: &dyn HetznerApi, server: Server, state: &str) -> Result<Server, String> {
        let action = if state == "running" { "poweron" } else { "poweroff" };
        api.action(server.id, action, json!({})).await?;
        // A server deleted meanwhile ends the wait at once (the next check makes it again).
        let after = self.wait_until(api, state, |s| s.is_none_or(|s| s.status == state)).await?;
        after.ok_or_else(|| "the server vanished while its power changed".to_string())
    }

    async fn delete(&self, api: &dyn HetznerApi, server: &Server) -> Result<(), String> {
        api.delete(server.id).await?;
        self.wait_until(api, "deleted", |s| s.is_none()).await.map(|_| ())
    }

    /// The whole check (and apply): the power state, a rebuild, the rescue mode.
    async fn converge(&self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, String> {
        let key = self.key();
        let p = &self.params;
        let api = self.api().map_err(|e| e.message)?;
        let api = api.as_ref();
        let mut ok = true;
        let mut server = api.server(&self.raw.name).await?;
        let state = p.state.as_str();

        if state == "absent" {
            let Some(s) = server else { return Ok(true) };
            if !apply {
                ctx.report(format!("{key}: would delete the server"));
                return Ok(false);
            }
            self.delete(api, &s).await?;
            tracing::info!(resource = %key, "deleted");
            return Ok(false);
        }
        if server.is_none() && !state.is_empty() {
            if !apply {
                ctx.report(format!("{key}: would create the server"));
                return Ok(false);
            }
            server = Some(self.create(api, state == "running").await?);
            tracing::info!(resource = %key, "created");
            ok = false;
        }
        let Some(mut s) = server else {
            // No state asked and no server: nothing to manage.
            return Ok(true);
        };
        if !s.steady() {
            s = self
                .wait_until(api, "running or off", |s| s.is_none_or(Server::steady))
                .await?
                .ok_or("the server vanished")?;
        }

        if let Some((field, want, have)) = self.differing(&s) {
            match p.allowrebuild.as_str() {
                "ignore" => {}
                "ifneeded" => {
                    if !apply {
                        ctx.report(format!("{key}: would rebuild the server ({field} `{have}` -> `{want}`)"));
                        return Ok(false);
                    }
                    let start = state == "running" || (state.is_empty() && s.status == "running");
                    self.delete(api, &s).await?;
                    s = self.create(api, start).await?;
                    tracing::info!(resource = %key, "rebuilt ({field} `{have}` -> `{want}`)");
                    ok = false;
                }
                _ => {
                    return Err(format!(
                        "the server's {field} is `{have}`, not `{want}`: that needs a rebuild (delete and create), which \
                         `allowrebuild => \"ifneeded\"` allows"
                    ));
                }
            }
        }

        if matches!(state, "running" | "off") && s.status != state {
            if !apply {
                ctx.report(format!("{key}: would power the server {}", if state == "running" { "on" } else { "off" }));
                return Ok(false);
            }
            s = self.power(api, s, state).await?;
            tracing::info!(resource = %key, "powered {}", if state == "running" { "on" } else { "off" });
            ok = false;
        }

        let want_rescue = !p.serverrescuemode.is_empty();
        if want_rescue != s.rescue_enabled {
            if !apply {
                ctx.report(format!("{key}: would {} rescue mode", if want_rescue { "enable" } else { "disable" }));
                return Ok(false);
            }
            if want_rescue {
                let keys = api.ssh_keys().await?;
                let mut ids = Vec::new();
                for name in &p.serverrescuekeys {
                    let id = keys.iter().find(|(_, n)| n == name).map(|(id, _)| *id);
                    ids.push(
                        id.ok_or_else(|| format!("field `serverrescuekeys`: the project has no SSH key `{name}`"))?,
                    );
                }
                api.action(s.id, "enable_rescue", json!({"type": p.serverrescuemode, "ssh_keys": ids})).await?;
            } else {
                api.action(s.id, "disable_rescue", json!({})).await?;
            }
            let after =
                self.wait_until(api, "in the rescue mode asked", |s| s.is_none_or(|s| s.rescue_enabled == want_rescue));
            after.await?.ok_or("the server vanished while its rescue mode changed")?;
            tracing::info!(resource = %key, "rescue mode {}", if want_rescue { "enabled" } else { "disabled" });
            ok = false;
        }
        Ok(ok)
    }
}

#[async_trait]
impl Resource for HetznerVm {
    fn validate(&self) -> Result<(), ResError> {
        let p = &self.params;
        let err = |field: &str, message: String| self.raw.invalid(Some(field), message);
        if p.apitoken.is_empty() {
            return Err(err("apitoken", "must not be empty".into()));
        }
        if !matches!(p.state.as_str(), "" | "exists" | "running" | "off" | "absent") {
            return Err(err("state", format!("`{}` is not ``, `exists`, `running`, `off` or `absent`", p.state)));
        }
        if !matches!(p.allowrebuild.as_str(), "" | "ignore" | "ifneeded") {
            return Err(err("allowrebuild", format!("`{}` is not ``, `ignore` or `ifneeded`", p.allowrebuild)));
        }
        if !matches!(p.serverrescuemode.as_str(), "" | "linux32" | "linux64" | "freebsd64") {
            return Err(err(
                "serverrescuemode",
                format!("`{}` is not ``, `linux32`, `linux64` or `freebsd64`", p.serverrescuemode),
            ));
        }
        if matches!(p.state.as_str(), "exists" | "running" | "off") {
            for (field, value) in [("servertype", &p.servertype), ("image", &p.image)] {
                if value.is_empty() {
                    return Err(err(field, format!("is needed to create the server (state `{}`)", p.state)));
                }
            }
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let name = self.raw.name.clone();
        match self.api() {
            Ok(api) => crate::util::poll::watch_by_polling(ctx, POLL, move || {
                let (api, name) = (api.clone(), name.clone());
                async move { api.server(&name).await }
            }),
            Err(_) => crate::util::poll::startup_only(ctx),
        }
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let key = self.key();
        self.converge(ctx, apply).await.map_err(|e| ResError::transient(format!("{key}: {e}")))
    }

    crate::fingerprint_by_params!();
}

/// The `hetzner:vm` kind: its params as the type checker sees them, and its constructor.
pub const HETZNER_VM: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("hetzner:vm", HetznerVmParams::FIELDS, crate::built_on_host!(HetznerVm));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_are_read_from_the_api_json() {
        let v = json!({"id": 42, "name": "a", "status": "running", "server_type": {"name": "cx22"},
            "datacenter": {"name": "fsn1-dc14"}, "image": null, "rescue_enabled": true});
        let s = Server::from_json(&v).unwrap();
        assert_eq!((s.id, s.status.as_str(), s.server_type.as_str(), s.image.as_str()), (42, "running", "cx22", ""));
        assert!(s.rescue_enabled && s.steady());
        assert!(Server::from_json(&json!({"name": "no id"})).is_none());
        assert_eq!(percent_encode("a b/é"), "a%20b%2F%C3%A9");
    }
}
