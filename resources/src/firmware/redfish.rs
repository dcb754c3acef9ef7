//! A small Redfish client (DMTF DSP0266) for the `bmc:*` kinds: basic authentication on
//! every request, JSON bodies, the first system of `/redfish/v1/Systems`, its power state
//! and reset action. It sits behind the [`Bmc`] trait.
//!
//! Errors never carry the password: they name the BMC by scheme, host and port, and the
//! user by name.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use hyper::Method;
use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderName};
use serde_json::{Value as Json, json};
use tokio_rustls::rustls;

use crate::util::http_client::{self, Url};

/// How long one request may take before the BMC counts as unreachable.
const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// A system's power as Redfish reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Power {
    On,
    Off,
    /// `PoweringOn` or `PoweringOff`: on its way.
    Changing,
}

/// What the `bmc:*` kinds ask of a BMC.
#[async_trait]
pub trait Bmc: Send + Sync {
    async fn power(&self) -> Result<Power, String>;
    /// Sends a `ComputerSystem.Reset` of `reset_type` (`On`, `ForceOff`, `GracefulShutdown`).
    async fn reset(&self, reset_type: &str) -> Result<(), String>;
}

/// A BMC reached over Redfish.
pub struct Redfish {
    base: Url,
    user: String,
    password: String,
    trust: Option<Arc<rustls::ClientConfig>>,
}

impl Redfish {
    /// A client of the BMC at `scheme://host:port`; `ca` (PEM text) is trusted for `https`
    /// instead of the public roots.
    pub fn new(
        scheme: &str,
        host: &str,
        port: u16,
        user: &str,
        password: &str,
        ca: Option<&[u8]>,
    ) -> Result<Redfish, String> {
        let host = if host.contains(':') { format!("[{host}]") } else { host.to_string() };
        let base = Url::parse(&format!("{scheme}://{host}:{port}/"))?;
        let trust = match ca {
            None => None,
            Some(pem) => {
                use rustls::pki_types::CertificateDer;
                use rustls::pki_types::pem::PemObject as _;
                let mut roots = rustls::RootCertStore::empty();
                for cert in CertificateDer::pem_slice_iter(pem) {
                    let cert = cert.map_err(|e| format!("the CA is not PEM certificates: {e}"))?;
                    roots.add(cert).map_err(|e| format!("the CA holds a certificate rustls refuses: {e}"))?;
                }
                if roots.is_empty() {
                    return Err("the CA holds no certificate".into());
                }
                Some(http_client::tls_config(Some(roots))?)
            }
        };
        Ok(Redfish { base, user: user.to_string(), password: password.to_string(), trust })
    }

    /// `scheme://host:port`, for messages.
    pub fn address(&self) -> String {
        format!("{}://{}", self.base.scheme, self.base.authority())
    }

    async fn request(&self, method: Method, path: &str, body: Option<(&str, Bytes)>) -> Result<Json, String> {
        use base64::Engine as _;
        let url = self.base.join(path).map_err(|e| format!("{}: {e}", self.address()))?;
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", self.user, self.password));
        let mut headers: Vec<(HeaderName, String)> =
            vec![(AUTHORIZATION, format!("Basic {token}")), (ACCEPT, "application/json".into())];
        let payload = match body {
            Some((content_type, bytes)) => {
                headers.push((CONTENT_TYPE, content_type.to_string()));
                bytes
            }
            None => Bytes::new(),
        };
        let sent = http_client::send_trusting(&url, &method, &headers, &payload, self.trust.as_ref());
        let reply = match tokio::time::timeout(REQUEST_TIMEOUT, sent).await {
            Err(_) => return Err(format!("the BMC at {} did not answer within {REQUEST_TIMEOUT:?}", self.address())),
            Ok(Err(e)) => return Err(format!("cannot reach the BMC at {}: {e}", self.address())),
            Ok(Ok(reply)) => reply,
        };
        match reply.status {
            200..=299 if reply.body.is_empty() => Ok(Json::Null),
            200..=299 => serde_json::from_slice(&reply.body)
                .map_err(|e| format!("the BMC at {} answered {path} with no JSON: {e}", self.address())),
            401 | 403 => Err(format!(
                "the BMC at {} refused the credentials of user `{}` ({})",
                self.address(),
                self.user,
                reply.status_text()
            )),
            _ => Err(format!(
                "the BMC at {} answered {method} {path} with {}{}",
                self.address(),
                reply.status_text(),
                redfish_message(&reply.body).map(|m| format!(": {m}")).unwrap_or_default()
            )),
        }
    }

    async fn get(&self, path: &str) -> Result<Json, String> {
        self.request(Method::GET, path, None).await
    }

    /// The `@odata.id` of the first system the BMC manages.
    async fn system(&self) -> Result<String, String> {
        let systems = self.get("/redfish/v1/Systems").await?;
        odata_ids(&systems["Members"])
            .into_iter()
            .next()
            .ok_or_else(|| format!("the BMC at {} manages no system", self.address()))
    }
}

/// The `@odata.id`s of a Redfish collection's members.
fn odata_ids(members: &Json) -> Vec<String> {
    members
        .as_array()
        .map(|m| m.iter().filter_map(|x| x["@odata.id"].as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// The message of a Redfish error body (`error.message`, or its first extended message).
fn redfish_message(body: &[u8]) -> Option<String> {
    let v: Json = serde_json::from_slice(body).ok()?;
    let e = &v["error"];
    let extended = e["@Message.ExtendedInfo"].get(0).and_then(|m| m["Message"].as_str());
    extended.or_else(|| e["message"].as_str()).map(|m| m.chars().take(300).collect())
}

#[async_trait]
impl Bmc for Redfish {
    async fn power(&self) -> Result<Power, String> {
        let system = self.system().await?;
        let state = self.get(&system).await?;
        match state["PowerState"].as_str() {
            Some("On") => Ok(Power::On),
            Some("Off") => Ok(Power::Off),
            Some("PoweringOn" | "PoweringOff" | "Paused") => Ok(Power::Changing),
            other => Err(format!("the BMC at {} reports the power state {other:?}", self.address())),
        }
    }

    async fn reset(&self, reset_type: &str) -> Result<(), String> {
        let system = self.system().await?;
        let state = self.get(&system).await?;
        let target = state["Actions"]["#ComputerSystem.Reset"]["target"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| format!("{}/Actions/ComputerSystem.Reset", system.trim_end_matches('/')));
        let body = Bytes::from(json!({ "ResetType": reset_type }).to_string());
        self.request(Method::POST, &target, Some(("application/json", body))).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_give_their_message() {
        let body = br#"{"error":{"code":"Base.1.0.GeneralError","message":"General","@Message.ExtendedInfo":[{"Message":"Power state Foo is not supported"}]}}"#;
        assert_eq!(redfish_message(body).as_deref(), Some("Power state Foo is not supported"));
        assert_eq!(redfish_message(br#"{"error":{"message":"nope"}}"#).as_deref(), Some("nope"));
        assert_eq!(redfish_message(b"<html>"), None);
    }

    #[test]
    fn members_are_read_by_their_ids() {
        let v = json!({"Members": [{"@odata.id": "/redfish/v1/Systems/a"}, {"x": 1}]});
        assert_eq!(odata_ids(&v["Members"]), ["/redfish/v1/Systems/a"]);
    }
}
