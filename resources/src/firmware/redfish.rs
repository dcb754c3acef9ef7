//! A small Redfish client (DMTF DSP0266) for the `bmc:*` kinds: basic authentication on
//! every request, JSON bodies, the first system of `/redfish/v1/Systems`, its power state
//! and reset action; the first manager of `/redfish/v1/Managers` (the BMC itself), its
//! firmware version, and a push of a firmware image through the UpdateService
//! (`MultipartHttpPushUri`, else `HttpPushUri`) followed through its task. It sits behind
//! the [`Bmc`] trait.
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
    /// The BMC's own firmware version.
    async fn firmware_version(&self) -> Result<String, String>;
    /// Pushes the firmware `image` (named `file_name`) to the BMC, and follows the update's
    /// task until it ends, for at most [`UPDATE_TIMEOUT`].
    async fn push_firmware(&self, image: Bytes, file_name: &str) -> Result<(), String>;
}

/// How long a firmware update's task may run.
pub const UPDATE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// How often an update's task is asked about.
const TASK_POLL: std::time::Duration = std::time::Duration::from_secs(1);

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

    /// Sends one request; a reply outside 2xx is an error that says what the BMC said.
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, Bytes)>,
    ) -> Result<http_client::Reply, String> {
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
            200..=299 => Ok(reply),
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

    async fn request(&self, method: Method, path: &str, body: Option<(&str, Bytes)>) -> Result<Json, String> {
        let reply = self.send(method, path, body).await?;
        self.json_of(path, &reply.body)
    }

    fn json_of(&self, path: &str, body: &[u8]) -> Result<Json, String> {
        if body.is_empty() {
            return Ok(Json::Null);
        }
        serde_json::from_slice(body)
            .map_err(|e| format!("the BMC at {} answered {path} with no JSON: {e}", self.address()))
    }

    async fn get(&self, path: &str) -> Result<Json, String> {
        self.request(Method::GET, path, None).await
    }

    /// The `@odata.id` of the first system the BMC manages.
    async fn system(&self) -> Result<String, String> {
        self.first_member("/redfish/v1/Systems", "manages no system").await
    }

    /// The `@odata.id` of the first manager: the BMC itself.
    async fn manager(&self) -> Result<String, String> {
        self.first_member("/redfish/v1/Managers", "lists no manager").await
    }

    /// The first member of the collection at `path`; else an error saying the BMC `none`.
    async fn first_member(&self, path: &str, none: &str) -> Result<String, String> {
        let collection = self.get(path).await?;
        odata_ids(&collection["Members"])
            .into_iter()
            .next()
            .ok_or_else(|| format!("the BMC at {} {none}", self.address()))
    }

    /// Follows an update's task from the reply to the push until it ends.
    async fn follow_task(&self, pushed: http_client::Reply) -> Result<(), String> {
        let body = self.json_of("the update", &pushed.body)?;
        // A task monitor (the `Location` of a 202), else the task the reply is.
        let monitor = match (pushed.header("location"), body["@odata.id"].as_str()) {
            (Some(location), _) => location.to_string(),
            (None, Some(task)) if body.get("TaskState").is_some() => task.to_string(),
            // Done at once.
            _ => return task_outcome(&body).unwrap_or(Ok(())),
        };
        let until = tokio::time::Instant::now() + UPDATE_TIMEOUT;
        let mut last;
        loop {
            tokio::time::sleep(TASK_POLL).await;
            // The BMC may restart while updating: a failed request is asked again.
            match self.send(Method::GET, &monitor, None).await {
                Ok(reply) => {
                    let task = self.json_of(&monitor, &reply.body)?;
                    match task_outcome(&task) {
                        Some(outcome) => return outcome,
                        // A monitor answers 202 while the task runs, and the final reply after.
                        None if reply.status != 202 && task.get("TaskState").is_none() => return Ok(()),
                        None => last = format!("task {}", task["TaskState"].as_str().unwrap_or("running")),
                    }
                }
                Err(e) => last = e,
            }
            if tokio::time::Instant::now() >= until {
                return Err(format!(
                    "the firmware update on the BMC at {} did not end within {UPDATE_TIMEOUT:?} (last: {last})",
                    self.address()
                ));
            }
        }
    }
}

/// How a Redfish task ended, if it has: `TaskState` `Completed` is done (unless its
/// `TaskStatus` is `Critical`), `Exception`, `Killed` and `Cancelled` failed, with the
/// task's first message.
fn task_outcome(task: &Json) -> Option<Result<(), String>> {
    let message = || {
        task["Messages"]
            .get(0)
            .and_then(|m| m["Message"].as_str())
            .map(|m| format!(": {}", m.chars().take(300).collect::<String>()))
            .unwrap_or_default()
    };
    match task["TaskState"].as_str()? {
        "Completed" if task["TaskStatus"].as_str() == Some("Critical") => {
            Some(Err(format!("the firmware update failed{}", message())))
        }
        "Completed" => Some(Ok(())),
        state @ ("Exception" | "Killed" | "Cancelled") => {
            Some(Err(format!("the firmware update ended `{state}`{}", message())))
        }
        _ => None,
    }
}

/// A `multipart/form-data` body with the parts Redfish's `MultipartHttpPushUri` takes:
/// `UpdateParameters` (JSON) and `UpdateFile` (the image). Returns its content type too.
fn multipart(parameters: &Json, image: &[u8], file_name: &str) -> (String, Bytes) {
    // A boundary the image cannot hold (it is looked for, and changed until absent).
    let mut boundary = format!("tend-firmware-{:016x}", rand::random::<u64>());
    while memchr::memmem::find(image, boundary.as_bytes()).is_some() {
        boundary = format!("tend-firmware-{:016x}", rand::random::<u64>());
    }
    let file_name: String = file_name.chars().filter(|c| !matches!(c, '"' | '\\' | '\r' | '\n')).collect();
    let mut body = Vec::with_capacity(image.len() + 512);
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"UpdateParameters\"\r\n\
             Content-Type: application/json\r\n\r\n{parameters}\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"UpdateFile\"; filename=\"{file_name}\"\r\n\
             Content-Type: application/octet-stream\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(image);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), Bytes::from(body))
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

    async fn firmware_version(&self) -> Result<String, String> {
        let manager = self.manager().await?;
        let state = self.get(&manager).await?;
        state["FirmwareVersion"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("the BMC at {} does not report its firmware version", self.address()))
    }

    async fn push_firmware(&self, image: Bytes, file_name: &str) -> Result<(), String> {
        let service = self.get("/redfish/v1/UpdateService").await?;
        let pushed = if let Some(uri) = service["MultipartHttpPushUri"].as_str() {
            let manager = self.manager().await?;
            let parameters = json!({ "Targets": [manager], "@Redfish.OperationApplyTime": "Immediate" });
            let (content_type, body) = multipart(&parameters, &image, file_name);
            self.send(Method::POST, uri, Some((&content_type, body))).await?
        } else if let Some(uri) = service["HttpPushUri"].as_str() {
            self.send(Method::POST, uri, Some(("application/octet-stream", image))).await?
        } else {
            return Err(format!(
                "the BMC at {} takes no pushed firmware (its UpdateService has no MultipartHttpPushUri or HttpPushUri)",
                self.address()
            ));
        };
        self.follow_task(pushed).await
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
    fn tasks_end_completed_or_failed_with_their_message() {
        assert_eq!(task_outcome(&json!({"TaskState": "Running"})), None);
        assert_eq!(task_outcome(&json!({"TaskState": "Completed", "TaskStatus": "OK"})), Some(Ok(())));
        let failed = json!({"TaskState": "Exception", "Messages": [{"Message": "Image is not signed"}]});
        assert_eq!(
            task_outcome(&failed),
            Some(Err("the firmware update ended `Exception`: Image is not signed".into()))
        );
        let critical = json!({"TaskState": "Completed", "TaskStatus": "Critical"});
        assert!(matches!(task_outcome(&critical), Some(Err(_))));
    }

    #[test]
    fn a_multipart_body_holds_the_parameters_and_the_image_between_boundaries() {
        let (content_type, body) = multipart(&json!({"Targets": ["/m/1"]}), b"\x00image\xff", "fw\".bin");
        let boundary = content_type.strip_prefix("multipart/form-data; boundary=").unwrap();
        let text = String::from_utf8_lossy(&body);
        assert!(text.starts_with(&format!("--{boundary}\r\n")), "{text}");
        assert!(text.contains(
            "name=\"UpdateParameters\"\r\nContent-Type: application/json\r\n\r\n{\"Targets\":[\"/m/1\"]}\r\n"
        ));
        assert!(text.contains("filename=\"fw.bin\""), "{text}");
        assert!(body.windows(7).any(|w| w == b"\x00image\xff"));
        assert!(text.ends_with(&format!("\r\n--{boundary}--\r\n")));
    }

    #[test]
    fn members_are_read_by_their_ids() {
        let v = json!({"Members": [{"@odata.id": "/redfish/v1/Systems/a"}, {"x": 1}]});
        assert_eq!(odata_ids(&v["Members"]), ["/redfish/v1/Systems/a"]);
    }
}
