//! The fwupd kinds, over the fwupd daemon's D-Bus API (`org.freedesktop.fwupd` on the
//! system bus, the API `fwupdmgr` uses):
//!
//! - `fwupd:device`: one device (by GUID or device id, default the name) at an exact
//!   `version`, found among the releases the daemon's metadata lists, downloaded,
//!   checksum-verified and handed to the daemon to flash; a downgrade only with
//!   `allow_downgrade`.
//! - `fwupd:remote`: a remote (the name is its id) `enabled` or not, and with
//!   `refresh_age` its metadata downloaded again once older than that.
//! - `fwupd:system`: with `state => "newest"` every updatable device (but those in
//!   `exclude`) at the newest release its metadata offers.
//!
//! A device whose update waits for a reboot counts as done (nothing can be flashed before
//! it); `sys/fwupd.reboot_needed()` tells the program. The watches follow the daemon's
//! signals (`Changed`, `DeviceAdded`, `DeviceRemoved`, `DeviceChanged`), so nothing polls.

use lang::params::ParamMap;
use std::collections::HashMap;
use std::io::{Seek, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::StreamExt;
use futures::future::BoxFuture;
use zbus::{Connection, OwnedVariant};

use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::machine::Machine;

/// The system bus when `DBUS_SYSTEM_BUS_ADDRESS` does not say otherwise.
const SYSTEM_BUS: &str = "unix:path=/run/dbus/system_bus_socket";
/// A method call's limit; an install may take minutes.
const CALL_TIMEOUT: Duration = Duration::from_secs(900);

const DEVICE_FLAG_UPDATABLE: u64 = 1 << 1;
const DEVICE_FLAG_NEEDS_REBOOT: u64 = 1 << 8;
const RELEASE_FLAG_IS_UPGRADE: u64 = 1 << 2;
const RELEASE_FLAG_IS_DOWNGRADE: u64 = 1 << 3;
/// `UpdateState`: deployed, waiting for a reboot.
pub const UPDATE_STATE_NEEDS_REBOOT: u32 = 4;

#[zbus::proxy(interface = "org.freedesktop.fwupd", default_service = "org.freedesktop.fwupd", default_path = "/")]
trait Daemon {
    fn get_devices(&self) -> zbus::Result<Vec<HashMap<String, OwnedVariant>>>;
    fn get_releases(&self, device_id: &str) -> zbus::Result<Vec<HashMap<String, OwnedVariant>>>;
    fn get_remotes(&self) -> zbus::Result<Vec<HashMap<String, OwnedVariant>>>;
    fn modify_remote(&self, remote_id: &str, key: &str, value: &str) -> zbus::Result<()>;
    fn install(&self, id: &str, handle: zbus::Fd<'_>, options: HashMap<&str, zbus::Variant<'_>>) -> zbus::Result<()>;
    fn update_metadata(&self, remote_id: &str, data: zbus::Fd<'_>, signature: zbus::Fd<'_>) -> zbus::Result<()>;
}

/// A device as the daemon lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    pub id: String,
    pub name: String,
    pub guids: Vec<String>,
    pub version: String,
    pub flags: u64,
    pub update_state: u32,
}

impl Device {
    fn matches(&self, id: &str) -> bool {
        self.id == id || self.guids.iter().any(|g| g.eq_ignore_ascii_case(id))
    }

    fn updatable(&self) -> bool {
        self.flags & DEVICE_FLAG_UPDATABLE != 0
    }

    /// Deployed and waiting for a reboot: the `needs-reboot` state, or (as the test
    /// plugin and some real ones leave it) the `needs-reboot` flag after a success.
    fn waits_for_reboot(&self) -> bool {
        self.update_state == UPDATE_STATE_NEEDS_REBOOT || self.flags & DEVICE_FLAG_NEEDS_REBOOT != 0
    }
}

/// A release of a device's firmware.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Release {
    pub version: String,
    pub remote: String,
    pub locations: Vec<String>,
    pub checksums: Vec<String>,
    pub flags: u64,
}

/// A remote (a source of metadata and firmware).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remote {
    pub id: String,
    pub enabled: bool,
    pub metadata_uri: String,
    pub firmware_base_uri: String,
    /// The metadata's file on this machine (all a local remote has).
    pub metadata_file: String,
    /// Unix seconds of the metadata's last import; 0 when never.
    pub modified: u64,
}

fn text(m: &HashMap<String, OwnedVariant>, key: &str) -> String {
    m.get(key).and_then(|v| String::try_from(v.clone()).ok()).unwrap_or_default()
}

fn texts(m: &HashMap<String, OwnedVariant>, key: &str) -> Vec<String> {
    m.get(key).and_then(|v| Vec::<String>::try_from(v.clone()).ok()).unwrap_or_default()
}

fn number(m: &HashMap<String, OwnedVariant>, key: &str) -> u64 {
    use zbus::Variant;
    match m.get(key).map(|v| &**v) {
        Some(Variant::U64(n)) => *n,
        Some(Variant::U32(n)) => u64::from(*n),
        Some(Variant::I64(n)) => u64::try_from(*n).unwrap_or(0),
        _ => 0,
    }
}

fn boolean(m: &HashMap<String, OwnedVariant>, key: &str) -> bool {
    matches!(m.get(key).map(|v| &**v), Some(zbus::Variant::Bool(true)))
}

/// The daemon, reached over a bus (the system bus, or a test's private one).
pub struct Fwupd {
    address: Option<String>,
    open: Mutex<Option<Connection>>,
}

impl Fwupd {
    /// The daemon on the bus at `address` (`None`: the system bus).
    pub fn at(address: Option<String>) -> Arc<Fwupd> {
        Arc::new(Fwupd { address, open: Mutex::new(None) })
    }

    async fn daemon(&self) -> Result<DaemonProxy<'static>, String> {
        let cached = self.open.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let conn = match cached {
            Some(conn) => conn,
            None => {
                let address = self.address.clone().unwrap_or_else(|| {
                    std::env::var("DBUS_SYSTEM_BUS_ADDRESS").unwrap_or_else(|_| SYSTEM_BUS.to_string())
                });
                let conn = zbus::connection::Builder::address(address.as_str())
                    .method_timeout(CALL_TIMEOUT)
                    .build()
                    .await
                    .map_err(|e| format!("no system bus at {address} ({e})"))?;
                *self.open.lock().unwrap_or_else(|e| e.into_inner()) = Some(conn.clone());
                conn
            }
        };
        DaemonProxy::new(&conn).await.map_err(|e| self.failed("reach the daemon", e))
    }

    fn failed(&self, what: &str, e: zbus::Error) -> String {
        if matches!(e, zbus::Error::InputOutput(_)) {
            *self.open.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
        match e {
            zbus::Error::MethodError(name, Some(message), _) => format!("fwupd: {what}: {message} ({name})"),
            other => format!("fwupd: {what}: {other} (is the fwupd daemon running?)"),
        }
    }

    pub async fn devices(&self) -> Result<Vec<Device>, String> {
        let raw = self.daemon().await?.get_devices().await.map_err(|e| self.failed("list the devices", e))?;
        Ok(raw
            .iter()
            .map(|m| Device {
                id: text(m, "DeviceId"),
                name: text(m, "Name"),
                guids: texts(m, "Guid"),
                version: text(m, "Version"),
                flags: number(m, "Flags"),
                update_state: number(m, "UpdateState") as u32,
            })
            .collect())
    }

    pub async fn device(&self, id: &str) -> Result<Device, String> {
        let devices = self.devices().await?;
        devices.into_iter().find(|d| d.matches(id)).ok_or_else(|| format!("fwupd has no device `{id}`"))
    }

    pub async fn releases(&self, device: &Device) -> Result<Vec<Release>, String> {
        let daemon = self.daemon().await?;
        let raw = match daemon.get_releases(&device.id).await {
            Ok(raw) => raw,
            // The daemon answers "no releases" with an error.
            Err(zbus::Error::MethodError(name, _, _))
                if name.as_str().ends_with("NothingToDo") || name.as_str().ends_with("NotFound") =>
            {
                Vec::new()
            }
            Err(e) => return Err(self.failed(&format!("list the releases of {}", device.id), e)),
        };
        Ok(raw
            .iter()
            .map(|m| {
                let mut locations = texts(m, "Locations");
                if locations.is_empty() && !text(m, "Uri").is_empty() {
                    locations.push(text(m, "Uri"));
                }
                let flags = match number(m, "Flags") {
                    0 => number(m, "TrustFlags"),
                    f => f,
                };
                Release {
                    version: text(m, "Version"),
                    remote: text(m, "RemoteId"),
                    locations,
                    checksums: texts(m, "Checksum"),
                    flags,
                }
            })
            .collect())
    }

    pub async fn remotes(&self) -> Result<Vec<Remote>, String> {
        let raw = self.daemon().await?.get_remotes().await.map_err(|e| self.failed("list the remotes", e))?;
        Ok(raw
            .iter()
            .map(|m| Remote {
                id: text(m, "RemoteId"),
                enabled: boolean(m, "Enabled"),
                metadata_uri: text(m, "Uri"),
                firmware_base_uri: text(m, "FirmwareBaseUri"),
                metadata_file: text(m, "FilenameCache"),
                modified: number(m, "ModificationTime"),
            })
            .collect())
    }

    pub async fn modify_remote(&self, id: &str, key: &str, value: &str) -> Result<(), String> {
        let daemon = self.daemon().await?;
        daemon.modify_remote(id, key, value).await.map_err(|e| self.failed(&format!("set {key} of remote {id}"), e))
    }

    /// Downloads the release, checks it against its checksums and hands it to the daemon.
    pub async fn install(&self, device: &Device, release: &Release, allow_older: bool) -> Result<(), String> {
        let remotes = self.remotes().await?;
        let remote = remotes.iter().find(|r| r.id == release.remote);
        let location =
            release.locations.first().ok_or_else(|| format!("release {} has no location", release.version))?;
        let uri = resolve(remote, location);
        let file = download(&uri).await?;
        verify(&file, &release.checksums).map_err(|e| format!("{uri}: {e}"))?;
        let mut options: HashMap<&str, zbus::Variant<'_>> = HashMap::new();
        options.insert("allow-older", zbus::Variant::Bool(allow_older));
        let daemon = self.daemon().await?;
        daemon
            .install(&device.id, zbus::Fd::from(&file), options)
            .await
            .map_err(|e| self.failed(&format!("install {} on {}", release.version, device.id), e))
    }

    /// Downloads a remote's metadata and its signature and hands both to the daemon.
    pub async fn refresh(&self, remote: &Remote) -> Result<(), String> {
        if remote.metadata_uri.is_empty() {
            return Err(format!("remote {} has no metadata URI", remote.id));
        }
        let data = download(&remote.metadata_uri).await?;
        let signature = download(&format!("{}.jcat", remote.metadata_uri)).await?;
        let daemon = self.daemon().await?;
        daemon
            .update_metadata(&remote.id, zbus::Fd::from(&data), zbus::Fd::from(&signature))
            .await
            .map_err(|e| self.failed(&format!("import the metadata of remote {}", remote.id), e))
    }

    /// A stream of every signal of the daemon.
    pub async fn signals(&self) -> Result<zbus::MessageStream, String> {
        let daemon = self.daemon().await?;
        let conn = daemon.inner().connection().clone();
        let rule = zbus::MatchRule::builder().msg_type(zbus::message::Type::Signal).interface("org.freedesktop.fwupd");
        let rule = rule.build().map_err(|e| self.failed("follow the daemon's signals", e))?;
        let stream = zbus::MessageStream::for_match_rule(rule, &conn, std::num::NonZeroUsize::new(64))
            .await
            .map_err(|e| self.failed("follow the daemon's signals", e))?;
        Ok(stream)
    }

    /// Whether some device has an update deployed that waits for a reboot.
    pub async fn reboot_needed(&self) -> Result<bool, String> {
        Ok(self.devices().await?.iter().any(Device::waits_for_reboot))
    }

    /// Bumps `changes` on every signal of the daemon (and on each connection, so a daemon
    /// that comes back is asked again), trying again every 10 s while it cannot be
    /// followed; returns once nobody receives `changes` any more.
    pub async fn follow(self: Arc<Self>, changes: tokio::sync::watch::Sender<u64>) {
        while !changes.is_closed() {
            if let Ok(mut signals) = self.signals().await {
                changes.send_modify(|n| *n += 1);
                while let Some(Ok(_)) = signals.next().await {
                    changes.send_modify(|n| *n += 1);
                    if changes.is_closed() {
                        return;
                    }
                }
            }
            tokio::time::sleep(Duration::from_secs(10)).await;
        }
    }
}

/// A release location made absolute: against the remote's firmware base URI, or next to
/// its metadata (its URI, or for a local remote its file).
fn resolve(remote: Option<&Remote>, location: &str) -> String {
    if location.contains("://") || location.starts_with('/') {
        return location.to_string();
    }
    let bare = location.trim_start_matches("./");
    match remote {
        Some(r) if !r.firmware_base_uri.is_empty() => format!("{}/{bare}", r.firmware_base_uri.trim_end_matches('/')),
        Some(r) if !r.metadata_uri.is_empty() => match r.metadata_uri.rsplit_once('/') {
            Some((dir, _)) => format!("{dir}/{bare}"),
            None => bare.to_string(),
        },
        Some(r) if r.metadata_file.starts_with('/') => match r.metadata_file.rsplit_once('/') {
            Some((dir, _)) => format!("file://{dir}/{bare}"),
            None => bare.to_string(),
        },
        _ => location.to_string(),
    }
}

/// The content at `uri` (`file://`, an absolute path, `http(s)://`) in an unlinked
/// temporary file, rewound.
async fn download(uri: &str) -> Result<std::fs::File, String> {
    let fail = |e: std::io::Error| format!("{uri}: {e}");
    if let Some(path) = uri.strip_prefix("file://").or_else(|| uri.starts_with('/').then_some(uri)) {
        return std::fs::File::open(path).map_err(fail);
    }
    let url = crate::util::http_client::Url::parse(uri)?;
    let reply = crate::util::http_client::send_following(&url, &hyper::Method::GET, &[], &bytes::Bytes::new(), |_| {})
        .await
        .map_err(|e| format!("downloading {url}: {e}"))?;
    if reply.status != 200 {
        return Err(format!("downloading {url}: {}", reply.status_text()));
    }
    let mut file = tempfile::tempfile().map_err(fail)?;
    file.write_all(&reply.body).map_err(fail)?;
    file.rewind().map_err(fail)?;
    Ok(file)
}

/// Checks `file` against the strongest of `checksums` (SHA-256, else SHA-1), rewinding it.
fn verify(mut file: &std::fs::File, checksums: &[String]) -> Result<(), String> {
    use sha2::Digest as _;
    if checksums.is_empty() {
        return Ok(());
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut file, &mut bytes).map_err(|e| e.to_string())?;
    file.rewind().map_err(|e| e.to_string())?;
    let hex = |d: &[u8]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let (len, computed) = if checksums.iter().any(|c| c.len() == 64) {
        (64, hex(&sha2::Sha256::digest(&bytes)))
    } else if checksums.iter().any(|c| c.len() == 40) {
        (40, hex(&sha1::Sha1::digest(&bytes)))
    } else {
        return Err(format!("no checksum of a known kind among {}", checksums.join(", ")));
    };
    if checksums.iter().any(|c| c.len() == len && c.eq_ignore_ascii_case(&computed)) {
        Ok(())
    } else {
        Err(format!("the download's checksum {computed} is not the release's ({})", checksums.join(", ")))
    }
}

/// A watch that raises an event on each daemon signal that `wanted` keeps (and, with
/// `every`, at that interval).
fn watch_signals(
    fwupd: Arc<Fwupd>,
    ctx: WatchCtx,
    every: Option<Duration>,
    wanted: impl Fn(&zbus::Message) -> bool + Send + 'static,
) -> BoxFuture<'static, Result<(), ResError>> {
    Box::pin(async move {
        let mut signals = fwupd.signals().await.map_err(ResError::transient)?;
        ctx.event();
        let period = every.unwrap_or(Duration::from_secs(3600));
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        loop {
            tokio::select! {
                signal = signals.next() => match signal {
                    Some(Ok(message)) => if wanted(&message) { ctx.event() },
                    Some(Err(e)) => return Err(ResError::transient(format!("fwupd: following the daemon: {e}"))),
                    None => return Err(ResError::transient("fwupd: the bus connection closed")),
                },
                _ = ticks.tick(), if every.is_some() => ctx.event(),
                _ = ctx.cancelled() => return Ok(()),
            }
        }
    })
}

/// The member name of a signal.
fn member(message: &zbus::Message) -> String {
    message.header().member().map(|m| m.to_string()).unwrap_or_default()
}

/// Whether a device signal is about the device `id` (other signals always count).
fn about_device(message: &zbus::Message, id: &str) -> bool {
    if !matches!(member(message).as_str(), "DeviceAdded" | "DeviceRemoved" | "DeviceChanged") {
        return true;
    }
    match message.body().deserialize::<HashMap<String, OwnedVariant>>() {
        Ok(m) => text(&m, "DeviceId") == id || texts(&m, "Guid").iter().any(|g| g.eq_ignore_ascii_case(id)),
        Err(_) => true,
    }
}

crate::params! {
    /// `fwupd:device`'s params; the name is the device unless `device` is set.
    #[derive(Clone, Debug, PartialEq)]
    pub struct FwupdDeviceParams {
        pub device: String => |p, f| p.str_or(f, p.name),
        pub version: String,
        pub allow_downgrade: bool,
    }
}

pub struct FwupdDevice {
    raw: Raw,
    params: FwupdDeviceParams,
    fwupd: Arc<Fwupd>,
}

impl FwupdDevice {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<FwupdDevice, BuildError> {
        let (raw, params) = Raw::decoded("fwupd:device", name, values, FwupdDeviceParams::decode)?;
        Ok(FwupdDevice { raw, params, fwupd: host.fwupd.clone() })
    }

    async fn converge(&self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, String> {
        let key = format!("fwupd:device[{}]", self.raw.name);
        let p = &self.params;
        let device = self.fwupd.device(&p.device).await?;
        if device.version == p.version || device.waits_for_reboot() {
            return Ok(true);
        }
        let releases = self.fwupd.releases(&device).await?;
        let Some(release) = releases.iter().find(|r| r.version == p.version) else {
            let known: Vec<&str> = releases.iter().map(|r| r.version.as_str()).collect();
            return Err(format!(
                "device {} ({}) has no release {} in the metadata of the enabled remotes (known: {})",
                device.id,
                device.name,
                p.version,
                if known.is_empty() { "none".to_string() } else { known.join(", ") }
            ));
        };
        if release.flags & RELEASE_FLAG_IS_DOWNGRADE != 0 && !p.allow_downgrade {
            return Err(format!(
                "device {} is at {}: {} is a downgrade, which `allow_downgrade => true` allows",
                device.id, device.version, p.version
            ));
        }
        if !apply {
            ctx.report(format!("{key}: would flash {} -> {}", device.version, p.version));
            return Ok(false);
        }
        self.fwupd.install(&device, release, p.allow_downgrade).await?;
        tracing::info!(resource = %key, "{}: {} -> {}", device.name, device.version, p.version);
        Ok(false)
    }
}

#[async_trait]
impl Resource for FwupdDevice {
    fn validate(&self) -> Result<(), ResError> {
        if self.params.device.is_empty() {
            return Err(self.raw.invalid(Some("device"), "must name a device (a GUID or a device id)"));
        }
        if self.params.version.is_empty() {
            return Err(self.raw.invalid(Some("version"), "must not be empty"));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let id = self.params.device.clone();
        watch_signals(self.fwupd.clone(), ctx, None, move |m| about_device(m, &id))
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let key = format!("fwupd:device[{}]", self.raw.name);
        self.converge(ctx, apply).await.map_err(|e| ResError::transient(format!("{key}: {e}")))
    }

    crate::fingerprint_by_params!();
}

crate::params! {
    /// `fwupd:remote`'s params; the name is the remote's id.
    #[derive(Clone, Debug, PartialEq)]
    pub struct FwupdRemoteParams {
        pub enabled: Option<bool>,
        /// How old the metadata may get (`24h`, `30m`); empty: never refreshed.
        pub refresh_age: String,
    }
}

/// A Go duration (`24h`, `1h30m`, `90s`, `500ms`) in seconds.
pub fn go_duration(text: &str) -> Option<Duration> {
    let mut total = 0f64;
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let n: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            "us" | "µs" => 0.000_001,
            "ns" => 0.000_000_001,
            _ => return None,
        };
        total += n * scale;
        rest = &rest[unit_len..];
    }
    Some(Duration::from_secs_f64(total))
}

pub struct FwupdRemote {
    raw: Raw,
    params: FwupdRemoteParams,
    fwupd: Arc<Fwupd>,
}

impl FwupdRemote {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<FwupdRemote, BuildError> {
        let (raw, params) = Raw::decoded("fwupd:remote", name, values, FwupdRemoteParams::decode)?;
        Ok(FwupdRemote { raw, params, fwupd: host.fwupd.clone() })
    }

    fn age(&self) -> Option<Duration> {
        go_duration(&self.params.refresh_age).filter(|d| !d.is_zero())
    }

    async fn converge(&self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, String> {
        let key = format!("fwupd:remote[{}]", self.raw.name);
        let remotes = self.fwupd.remotes().await?;
        let Some(mut remote) = remotes.into_iter().find(|r| r.id == self.raw.name) else {
            return Err(format!("fwupd has no remote `{}`", self.raw.name));
        };
        let mut ok = true;
        if let Some(enabled) = self.params.enabled
            && remote.enabled != enabled
        {
            if !apply {
                ctx.report(format!("{key}: would {} the remote", if enabled { "enable" } else { "disable" }));
                return Ok(false);
            }
            self.fwupd.modify_remote(&remote.id, "Enabled", if enabled { "true" } else { "false" }).await?;
            tracing::info!(resource = %key, "{}", if enabled { "enabled" } else { "disabled" });
            remote.enabled = enabled;
            ok = false;
        }
        if let Some(age) = self.age()
            && remote.enabled
        {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            if now.saturating_sub(Duration::from_secs(remote.modified)) > age {
                if !apply {
                    ctx.report(format!("{key}: would refresh the metadata"));
                    return Ok(false);
                }
                self.fwupd.refresh(&remote).await?;
                tracing::info!(resource = %key, "refreshed the metadata");
                ok = false;
            }
        }
        Ok(ok)
    }
}

#[async_trait]
impl Resource for FwupdRemote {
    fn validate(&self) -> Result<(), ResError> {
        let p = &self.params;
        if !p.refresh_age.is_empty() && self.age().is_none() {
            return Err(self.raw.invalid(
                Some("refresh_age"),
                format!("`{}` is not a positive duration (`24h`, `30m`)", p.refresh_age),
            ));
        }
        if self.age().is_some() && p.enabled == Some(false) {
            return Err(self.raw.invalid(Some("refresh_age"), "cannot refresh a remote it disables"));
        }
        if self.age().is_none() && p.enabled.is_none() {
            return Err(self.raw.invalid(None, "nothing to manage: set `enabled` or `refresh_age`"));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        // Metadata ages silently: look again at half the age.
        let every = self.age().map(|a| (a / 2).max(Duration::from_secs(1)));
        watch_signals(self.fwupd.clone(), ctx, every, |m| member(m) == "Changed")
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let key = format!("fwupd:remote[{}]", self.raw.name);
        self.converge(ctx, apply).await.map_err(|e| ResError::transient(format!("{key}: {e}")))
    }

    crate::fingerprint_by_params!();
}

crate::params! {
    /// `fwupd:system`'s params; the name does not matter.
    #[derive(Clone, Debug, PartialEq)]
    pub struct FwupdSystemParams {
        pub state: String,
        /// Devices left alone (GUIDs or device ids).
        pub exclude: Vec<String>,
    }
}

pub struct FwupdSystem {
    raw: Raw,
    params: FwupdSystemParams,
    fwupd: Arc<Fwupd>,
}

impl FwupdSystem {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<FwupdSystem, BuildError> {
        let (raw, params) = Raw::decoded("fwupd:system", name, values, FwupdSystemParams::decode)?;
        Ok(FwupdSystem { raw, params, fwupd: host.fwupd.clone() })
    }

    async fn converge(&self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, String> {
        let key = format!("fwupd:system[{}]", self.raw.name);
        let mut ok = true;
        for device in self.fwupd.devices().await? {
            if !device.updatable() || device.waits_for_reboot() || self.params.exclude.iter().any(|x| device.matches(x))
            {
                continue;
            }
            // A device without releases has nothing newer (its remote may be off).
            let releases = self.fwupd.releases(&device).await.unwrap_or_default();
            // The daemon lists the newest first.
            let Some(newest) = releases.iter().find(|r| r.flags & RELEASE_FLAG_IS_UPGRADE != 0) else {
                continue;
            };
            ok = false;
            if !apply {
                ctx.report(format!("{key}: would flash {} {} -> {}", device.name, device.version, newest.version));
                continue;
            }
            self.fwupd.install(&device, newest, false).await?;
            tracing::info!(resource = %key, "{}: {} -> {}", device.name, device.version, newest.version);
        }
        Ok(ok)
    }
}

#[async_trait]
impl Resource for FwupdSystem {
    fn validate(&self) -> Result<(), ResError> {
        if self.params.state != "newest" {
            return Err(self.raw.invalid(Some("state"), format!("`{}` is not `newest`", self.params.state)));
        }
        if self.params.exclude.iter().any(String::is_empty) {
            return Err(self.raw.invalid(Some("exclude"), "an entry is empty"));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        watch_signals(self.fwupd.clone(), ctx, None, |_| true)
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let key = format!("fwupd:system[{}]", self.raw.name);
        self.converge(ctx, apply).await.map_err(|e| ResError::transient(format!("{key}: {e}")))
    }

    crate::fingerprint_by_params!();
}

use crate::contract::autoedge::{Edges, Index, Rules};

/// A remote comes after the daemon's `svc` and the `file` of its configuration.
fn remote_provides<'a>(index: &mut Index<'a>, idx: usize, _name: &'a str, _params: &'a ParamMap) {
    index.add_fwupd_remote(idx);
}

fn remote_requires(index: &Index<'_>, idx: usize, name: &str, _params: &ParamMap, edges: &mut Edges) {
    for unit in ["fwupd", "fwupd.service"] {
        edges.extend(index.resource("svc", unit).map(|s| (s, idx)));
    }
    edges.extend(index.file(&format!("/etc/fwupd/remotes.d/{name}.conf")).map(|f| (f, idx)));
}

/// A device or the system comes after every remote: any may offer the release.
fn consumer_requires(index: &Index<'_>, idx: usize, _name: &str, _params: &ParamMap, edges: &mut Edges) {
    edges.extend(index.fwupd_remotes().iter().map(|r| (*r, idx)));
}

const CONSUMER: Rules = Rules { provides: None, requires: Some(consumer_requires), reads: &[] };

/// The `fwupd:device` kind.
pub const FWUPD_DEVICE: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("fwupd:device", FwupdDeviceParams::FIELDS, crate::built_on_host!(FwupdDevice))
        .autoedges(CONSUMER);
/// The `fwupd:remote` kind.
pub const FWUPD_REMOTE: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("fwupd:remote", FwupdRemoteParams::FIELDS, crate::built_on_host!(FwupdRemote))
        .autoedges(Rules { provides: Some(remote_provides), requires: Some(remote_requires), reads: &[] });
/// The `fwupd:system` kind.
pub const FWUPD_SYSTEM: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("fwupd:system", FwupdSystemParams::FIELDS, crate::built_on_host!(FwupdSystem))
        .autoedges(CONSUMER);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse() {
        assert_eq!(go_duration("24h"), Some(Duration::from_secs(86_400)));
        assert_eq!(go_duration("1h30m"), Some(Duration::from_secs(5_400)));
        assert_eq!(go_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(go_duration("1d"), None);
        assert_eq!(go_duration(""), None);
        assert_eq!(go_duration("h"), None);
    }

    #[test]
    fn locations_resolve_against_the_remote() {
        let remote = Remote {
            id: "t".into(),
            enabled: true,
            metadata_uri: "file:///usr/share/x/fwupd-tests.xml".into(),
            firmware_base_uri: String::new(),
            metadata_file: String::new(),
            modified: 0,
        };
        assert_eq!(resolve(Some(&remote), "./fake.cab"), "file:///usr/share/x/fake.cab");
        assert_eq!(resolve(Some(&remote), "https://cdn/x.cab"), "https://cdn/x.cab");
        let based = Remote { firmware_base_uri: "https://mirror/fw/".into(), ..remote.clone() };
        assert_eq!(resolve(Some(&based), "x.cab"), "https://mirror/fw/x.cab");
        let local = Remote { metadata_uri: String::new(), metadata_file: "/usr/share/t/m.xml".into(), ..remote };
        assert_eq!(resolve(Some(&local), "./fake.cab"), "file:///usr/share/t/fake.cab");
    }

    #[test]
    fn checksums_are_verified_with_the_strongest_known() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"abc").unwrap();
        f.rewind().unwrap();
        let sha1 = "a9993e364706816aba3e25717850c26c9cd0d89d".to_string();
        let sha256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".to_string();
        assert!(verify(&f, std::slice::from_ref(&sha1)).is_ok());
        assert!(verify(&f, &[sha1.clone(), sha256]).is_ok());
        let err = verify(&f, &["0".repeat(64), sha1]).unwrap_err();
        assert!(err.contains("is not the release's"), "{err}");
    }
}
