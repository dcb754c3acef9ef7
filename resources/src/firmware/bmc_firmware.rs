//! `bmc:firmware`: the firmware of a BMC itself, brought to `version` by pushing `file`
//! through the BMC's Redfish UpdateService ([`super::redfish`]).
//!
//! mgmt drives vendor tools picked by `provider` (`supermicro`...); tend speaks the
//! standard instead: the version is the BMC's (its first manager's `FirmwareVersion`),
//! the image goes to `MultipartHttpPushUri` (targeted at that manager) or, on an older BMC,
//! to `HttpPushUri`, and the update's task is followed until it ends. `provider` is kept
//! and must be set, as in mgmt, but chooses nothing. The BMC's address, user and password
//! are found as `bmc:power` finds them (the name may be the BMC's URL; `password_file`
//! and `ca` are tend's extensions); the scheme defaults to HTTPS (`gofishs`) on port 443.
//!
//! `hash` (a sha256 of `file`) is checked before anything is sent. While it updates, the
//! resource holds its BMC and the `bmc:power` resource `block` names (by name, or by the
//! BMC of its URL), so that power is not changed under an update. After the task, the BMC
//! usually restarts: the apply waits until it reports `version`, for at most
//! [`VERSION_WAIT`], asking again through the restart. mgmt needs `Meta:poll` here; the
//! watch itself asks the BMC every [`POLL`] instead, raising an event only on a change.

use lang::params::ParamMap;
use std::time::Duration;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;

use super::bmc::{Login, lock_bmcs, power_lock_keys, watch_bmc};
use super::redfish::Bmc;
use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::machine::Machine;

/// How often the watch asks the BMC for its firmware version (mgmt's example polls at 60 s).
pub const POLL: Duration = Duration::from_secs(60);

/// How long a BMC may take after an update to report the new version.
pub const VERSION_WAIT: Duration = Duration::from_secs(10 * 60);

/// How often the version is asked for while waiting.
const VERSION_POLL: Duration = Duration::from_secs(1);

crate::params! {
    /// `bmc:firmware`'s params; the name may be the BMC's URL.
    #[derive(Clone, Debug, PartialEq)]
    pub struct BmcFirmwareParams {
        pub hostname: String,
        pub port: i64,
        pub username: String,
        pub password: String,
        /// Take the password from the name's URL (it then shows wherever the name does).
        pub insecure_password: bool,
        /// A file holding the password (tend's extension; read at each use).
        pub password_file: String,
        /// `gofish` (Redfish over HTTP) or `gofishs` (HTTPS, the default) (tend's extension).
        pub driver: String,
        /// A PEM file of the certificates trusted for the BMC's HTTPS (tend's extension).
        pub ca: String,
        /// The machine's vendor, as mgmt asks for it (Redfish needs no vendor tool).
        pub provider: String,
        /// The firmware image, an absolute path.
        pub file: String,
        /// The sha256 of `file`, checked before it is sent.
        pub hash: String,
        /// The version the BMC reports once `file` is installed.
        pub version: String,
        /// The name of a `bmc:power` resource held while updating.
        pub block: String,
    }
}

pub struct BmcFirmware {
    raw: Raw,
    params: BmcFirmwareParams,
    /// The sha256 of the image this resource last installed, and the version the BMC
    /// reported after it: an image that brings another version than `version` is not
    /// flashed again and again.
    installed: Option<(String, String)>,
}

impl BmcFirmware {
    pub fn build(_host: &Machine, name: &str, values: &ParamMap) -> Result<BmcFirmware, BuildError> {
        let (raw, params) = Raw::decoded("bmc:firmware", name, values, BmcFirmwareParams::decode)?;
        Ok(BmcFirmware { raw, params, installed: None })
    }

    fn key(&self) -> String {
        format!("bmc:firmware[{}]", self.raw.name)
    }

    fn login(&self) -> Login<'_> {
        let p = &self.params;
        // HTTPS unless the name's scheme or `driver` says otherwise.
        let driver = if p.driver.is_empty() && !self.raw.name.contains("://") { "gofishs" } else { &p.driver };
        Login {
            raw: &self.raw,
            hostname: &p.hostname,
            port: p.port,
            username: &p.username,
            driver,
            password: &p.password,
            password_file: &p.password_file,
            insecure_password: p.insecure_password,
            ca: &p.ca,
        }
    }

    /// The image and its sha256, checked against `hash`.
    fn image(&self) -> Result<(bytes::Bytes, String), ResError> {
        use sha2::Digest as _;
        let p = &self.params;
        let image = std::fs::read(&p.file)
            .map_err(|e| ResError::transient(format!("{}: field `file`: {}: {e}", self.key(), p.file)))?;
        let got = hex(&sha2::Sha256::digest(&image));
        if !p.hash.is_empty() && !got.eq_ignore_ascii_case(&p.hash) {
            return Err(ResError::transient(format!(
                "{}: {} has the sha256 {got}, not the `hash` {}: nothing was sent to the BMC",
                self.key(),
                p.file,
                p.hash
            )));
        }
        Ok((bytes::Bytes::from(image), got))
    }

    /// The error for an image that installed `got` where `version` was asked for.
    fn wrong_version(&self, got: &str) -> ResError {
        ResError::new(format!(
            "{}: {} installs the BMC firmware version {got}, not the `version` {}: it is not sent again until \
             `file` or `version` changes",
            self.key(),
            self.params.file,
            self.params.version
        ))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[async_trait]
impl Resource for BmcFirmware {
    fn validate(&self) -> Result<(), ResError> {
        let p = &self.params;
        self.login().validate()?;
        if p.provider.is_empty() {
            return Err(self.raw.invalid(Some("provider"), "is needed (the machine's vendor, e.g. `supermicro`)"));
        }
        if !p.file.starts_with('/') || p.file.ends_with('/') {
            return Err(self.raw.invalid(Some("file"), "must be the absolute path of a file"));
        }
        if p.version.is_empty() {
            return Err(self.raw.invalid(Some("version"), "is needed: the version the BMC reports once updated"));
        }
        if !p.hash.is_empty() && (p.hash.len() != 64 || !p.hash.bytes().all(|b| b.is_ascii_hexdigit())) {
            return Err(self.raw.invalid(Some("hash"), "must be a sha256: 64 hexadecimal digits"));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        watch_bmc(ctx, self.login().connect(&self.key()), POLL, |bmc| async move { bmc.firmware_version().await })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let key = self.key();
        let (target, client) = self.login().connect(&key)?;
        let mut keys = vec![target.lock_key()];
        if !self.params.block.is_empty() {
            keys.extend(power_lock_keys(&self.params.block));
        }
        let _held = lock_bmcs(keys).await;
        let fail = |e: String| ResError::transient(format!("{key}: {e}"));
        let now = client.firmware_version().await.map_err(fail)?;
        let want = &self.params.version;
        if now == *want {
            return Ok(true);
        }
        if !apply {
            ctx.report(format!("{key}: would update the BMC's firmware from {now} to {want}"));
            return Ok(false);
        }
        let (image, sha) = self.image()?;
        if self.installed.as_ref().is_some_and(|(done, after)| *done == sha && *after == now) {
            return Err(self.wrong_version(&now));
        }
        let file_name = self.params.file.rsplit('/').next().unwrap_or("firmware.bin").to_string();
        tracing::info!(resource = %key, from = %now, to = %want, "updating the BMC's firmware");
        client.push_firmware(image, &file_name).await.map_err(fail)?;
        let until = tokio::time::Instant::now() + VERSION_WAIT;
        loop {
            // Through the BMC's restart, a failed request is asked again.
            if let Ok(version) = client.firmware_version().await {
                if version == *want {
                    tracing::info!(resource = %key, version = %want, "the BMC's firmware is updated");
                    self.installed = Some((sha, version));
                    return Ok(false);
                }
                if version != now {
                    let err = self.wrong_version(&version);
                    self.installed = Some((sha, version));
                    return Err(err);
                }
            }
            if tokio::time::Instant::now() >= until {
                return Err(fail(format!(
                    "the update ended but the BMC at {} still reports version {now}, not {want}, after {VERSION_WAIT:?}",
                    client.address()
                )));
            }
            tokio::time::sleep(VERSION_POLL).await;
        }
    }

    crate::fingerprint_by_params!();
}

/// The `bmc:firmware` kind: its params as the type checker sees them, and its constructor.
pub const BMC_FIRMWARE: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("bmc:firmware", BmcFirmwareParams::FIELDS, crate::built_on_host!(BmcFirmware));
