//! `bmc:power`: a machine's power, set through its BMC over Redfish ([`super::redfish`]).
//!
//! The name may be the BMC's URL, `gofishs://ADMIN@bmc.example:8800`, whose scheme is the
//! driver (`gofish` speaks Redfish over HTTP, `gofishs` over HTTPS) and whose user, host
//! and port stand in for the params left unset; the port defaults to 443, as in mgmt. The
//! password comes from `password`, from `password_file` (a file read at each use, so it never
//! passes through the program), or with `insecure_password` from the name itself. A
//! password is never logged, reported or put in an error.
//!
//! `state` is `on`, `off` (a forced power-off) or `soft` (a graceful shutdown; the state
//! reached is off). A BMC changes power some seconds after it is asked, so a change waits
//! until the BMC reports the state, for at most [`SETTLE`]. mgmt's BMC kinds need
//! `Meta:poll`; here the watch itself asks the BMC every [`POLL`] and raises an event only
//! when the power or the BMC's reachability changed, and an explicit `Meta:poll` still
//! works. HTTPS is verified against the public roots, or against `ca` (a PEM file) for a
//! BMC with a certificate of its own.
//!
//! mgmt's `rpc` driver (bmclib's RPC provider) is not offered: it is refused by name.

use lang::params::ParamMap;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;

use super::redfish::{Bmc, Power, Redfish};
use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::machine::Machine;

/// How often the watch asks the BMC for the power state.
pub const POLL: Duration = Duration::from_secs(10);

/// How long a change may take to show before it counts as failed (and is retried).
pub const SETTLE: Duration = Duration::from_secs(120);

/// mgmt's default port for every BMC driver.
pub const DEFAULT_PORT: u16 = 443;

crate::params! {
    /// `bmc:power`'s params; the name may be the BMC's URL.
    #[derive(Clone, Debug, PartialEq)]
    pub struct BmcPowerParams {
        pub hostname: String,
        pub port: i64,
        pub username: String,
        pub password: String,
        /// Take the password from the name's URL (it then shows wherever the name does).
        pub insecure_password: bool,
        /// A file holding the password (tend's extension; read at each use).
        pub password_file: String,
        /// `gofish` (Redfish over HTTP) or `gofishs` (over HTTPS); the name's scheme when unset.
        pub driver: String,
        /// A PEM file of the certificates trusted for the BMC's HTTPS (tend's extension).
        pub ca: String,
        pub state: String,
    }
}

/// Where a BMC is and who logs in, from the params and the name.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    pub scheme: &'static str,
    pub host: String,
    pub port: u16,
    pub user: String,
}

/// The parts of a `scheme://user:password@host:port/...` name.
#[derive(Default)]
struct NameUrl {
    scheme: String,
    user: String,
    password: Option<String>,
    host: String,
    port: Option<String>,
}

fn name_url(name: &str) -> NameUrl {
    let Some((scheme, rest)) = name.split_once("://") else {
        return NameUrl::default();
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let (user, password) = match userinfo {
        Some(u) => match u.split_once(':') {
            Some((user, pass)) => (user.to_string(), Some(pass.to_string())),
            None => (u.to_string(), None),
        },
        None => (String::new(), None),
    };
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, after)) => (h.to_string(), after.strip_prefix(':').map(str::to_string)),
            None => (String::new(), None),
        }
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p.to_string())),
            None => (hostport.to_string(), None),
        }
    };
    NameUrl { scheme: scheme.to_ascii_lowercase(), user, password, host, port }
}

/// The BMC's address and user from `hostname`/`port`/`username`/`driver`, each falling
/// back on the name's URL; an error names the field at fault.
pub fn target(
    name: &str,
    hostname: &str,
    port: i64,
    username: &str,
    driver: &str,
) -> Result<Target, (&'static str, String)> {
    let url = name_url(name);
    let driver = if driver.is_empty() { url.scheme.as_str() } else { driver };
    let scheme = match driver {
        "gofish" => "http",
        "gofishs" => "https",
        "rpc" | "rpcs" => {
            return Err((
                "driver",
                "mgmt's `rpc` driver is not offered by tend; use `gofish` or `gofishs` (Redfish)".into(),
            ));
        }
        "" => {
            return Err((
                "driver",
                "is needed: set it, or name the resource by the BMC's URL (`gofishs://host`)".into(),
            ));
        }
        other => return Err(("driver", format!("`{other}` is not a driver; use `gofish` or `gofishs` (Redfish)"))),
    };
    let host = if hostname.is_empty() { url.host } else { hostname.to_string() };
    if host.is_empty() {
        return Err(("hostname", "is needed: set it, or name the resource by the BMC's URL".into()));
    }
    if host.contains(['/', '@', ' ']) {
        return Err(("hostname", format!("`{host}` is not a host name or address")));
    }
    let port = if port != 0 {
        u16::try_from(port).ok().filter(|p| *p > 0).ok_or(("port", format!("{port} is not a TCP port")))?
    } else {
        match url.port.as_deref() {
            None | Some("") => DEFAULT_PORT,
            Some(p) => p
                .parse()
                .ok()
                .filter(|p: &u16| *p > 0)
                .ok_or(("port", format!("`{p}` in the name is not a TCP port")))?,
        }
    };
    let user = if username.is_empty() { url.user } else { username.to_string() };
    Ok(Target { scheme, host, port, user })
}

/// The password: `password`, the file's first line, or (with `insecure`) the name's.
pub fn password(name: &str, inline: &str, file: &str, insecure: bool) -> Result<String, String> {
    if !file.is_empty() {
        let text = std::fs::read_to_string(file).map_err(|e| format!("field `password_file`: {file}: {e}"))?;
        return Ok(text.lines().next().unwrap_or_default().to_string());
    }
    if inline.is_empty() && insecure {
        return Ok(name_url(name).password.unwrap_or_default());
    }
    Ok(inline.to_string())
}

/// How a `bmc:*` resource reaches its BMC: the params `bmc:power` and `bmc:firmware` share.
pub(crate) struct Login<'a> {
    pub(crate) raw: &'a Raw,
    pub(crate) hostname: &'a str,
    pub(crate) port: i64,
    pub(crate) username: &'a str,
    pub(crate) driver: &'a str,
    pub(crate) password: &'a str,
    pub(crate) password_file: &'a str,
    pub(crate) insecure_password: bool,
    pub(crate) ca: &'a str,
}

impl Login<'_> {
    pub(crate) fn target(&self) -> Result<Target, ResError> {
        target(&self.raw.name, self.hostname, self.port, self.username, self.driver)
            .map_err(|(field, message)| self.raw.invalid(Some(field), message))
    }

    /// The address and the credential params, as `validate` checks them.
    pub(crate) fn validate(&self) -> Result<(), ResError> {
        self.target()?;
        if !self.password.is_empty() && !self.password_file.is_empty() {
            return Err(self.raw.invalid(Some("password_file"), "cannot be combined with `password`"));
        }
        if !self.password_file.is_empty() && !self.password_file.starts_with('/') {
            return Err(self.raw.invalid(Some("password_file"), "must be an absolute path"));
        }
        if !self.ca.is_empty() && !self.ca.starts_with('/') {
            return Err(self.raw.invalid(Some("ca"), "must be an absolute path"));
        }
        Ok(())
    }

    /// A client for the BMC, its password and CA read now; errors start with `key`.
    pub(crate) fn connect(&self, key: &str) -> Result<(Target, Redfish), ResError> {
        let t = self.target()?;
        let pass = password(&self.raw.name, self.password, self.password_file, self.insecure_password)
            .map_err(|e| ResError::new(format!("{key}: {e}")))?;
        let ca = match self.ca {
            "" => None,
            path => Some(std::fs::read(path).map_err(|e| ResError::new(format!("{key}: field `ca`: {path}: {e}")))?),
        };
        let client = Redfish::new(t.scheme, &t.host, t.port, &t.user, &pass, ca.as_deref())
            .map_err(|e| ResError::new(format!("{key}: {e}")))?;
        Ok((t, client))
    }
}

/// The watch of a `bmc:*` resource: `probe` of the BMC every `every`, an event when its
/// answer changes. Without a client (a missing password file), check_apply reports why and
/// the engine's retries try again.
pub(crate) fn watch_bmc<T, F, Fut>(
    ctx: WatchCtx,
    client: Result<(Target, Redfish), ResError>,
    every: Duration,
    probe: F,
) -> BoxFuture<'static, Result<(), ResError>>
where
    T: PartialEq + Send + 'static,
    F: Fn(Arc<Redfish>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<T, String>> + Send + 'static,
{
    match client {
        Ok((_, client)) => {
            let client = Arc::new(client);
            crate::util::poll::watch_by_polling(ctx, every, move || probe(client.clone()))
        }
        Err(_) => crate::util::poll::startup_only(ctx),
    }
}

/// Holds the BMC locks named by `keys` (in a fixed order, so two holders never wait on
/// each other): two resources never drive the same BMC at once. A BMC is named by
/// `host:port`, and a `bmc:power` resource by `res:NAME` too (what `bmc:firmware`'s
/// `block` names).
pub async fn lock_bmcs(mut keys: Vec<String>) -> Vec<tokio::sync::OwnedMutexGuard<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>> = OnceLock::new();
    keys.sort();
    keys.dedup();
    let locks: Vec<_> = {
        let mut map = LOCKS.get_or_init(Mutex::default).lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, l| Arc::strong_count(l) > 1);
        keys.iter().map(|k| map.entry(k.clone()).or_default().clone()).collect()
    };
    let mut held = Vec::with_capacity(locks.len());
    for lock in locks {
        held.push(lock.lock_owned().await);
    }
    held
}

impl Target {
    /// The BMC's lock key (see [`lock_bmcs`]).
    pub fn lock_key(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// The lock keys of the `bmc:power` resource named `name`: the resource, and its BMC
/// when the name is the BMC's URL.
pub fn power_lock_keys(name: &str) -> Vec<String> {
    let mut keys = vec![format!("res:{name}")];
    let url = name_url(name);
    if !url.host.is_empty() {
        let port = url.port.as_deref().and_then(|p| p.parse().ok()).unwrap_or(DEFAULT_PORT);
        keys.push(format!("{}:{port}", url.host));
    }
    keys
}

pub struct BmcPower {
    raw: Raw,
    params: BmcPowerParams,
}

impl BmcPower {
    pub fn build(_host: &Machine, name: &str, values: &ParamMap) -> Result<BmcPower, BuildError> {
        let (raw, params) = Raw::decoded("bmc:power", name, values, BmcPowerParams::decode)?;
        Ok(BmcPower { raw, params })
    }

    fn key(&self) -> String {
        format!("bmc:power[{}]", self.raw.name)
    }

    fn login(&self) -> Login<'_> {
        let p = &self.params;
        Login {
            raw: &self.raw,
            hostname: &p.hostname,
            port: p.port,
            username: &p.username,
            driver: &p.driver,
            password: &p.password,
            password_file: &p.password_file,
            insecure_password: p.insecure_password,
            ca: &p.ca,
        }
    }

    /// The power this resource wants, and the reset that brings it.
    fn wanted(&self) -> (Power, &'static str) {
        match self.params.state.as_str() {
            "on" => (Power::On, "On"),
            "soft" => (Power::Off, "GracefulShutdown"),
            _ => (Power::Off, "ForceOff"),
        }
    }
}

#[async_trait]
impl Resource for BmcPower {
    fn validate(&self) -> Result<(), ResError> {
        let p = &self.params;
        self.login().validate()?;
        if !matches!(p.state.as_str(), "on" | "off" | "soft") {
            return Err(self.raw.invalid(Some("state"), format!("`{}` is not `on`, `off` or `soft`", p.state)));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        watch_bmc(ctx, self.login().connect(&self.key()), POLL, |bmc| async move { bmc.power().await })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let key = self.key();
        let (target, client) = self.login().connect(&key)?;
        let mut keys = power_lock_keys(&self.raw.name);
        keys.push(target.lock_key());
        let _one_at_a_time = lock_bmcs(keys).await;
        let fail = |e: String| ResError::transient(format!("{key}: {e}"));
        let (want, reset) = self.wanted();
        let mut now = client.power().await.map_err(fail)?;
        if now == Power::Changing {
            now = settle(&client, None).await.map_err(fail)?;
        }
        if now == want {
            return Ok(true);
        }
        if !apply {
            ctx.report(format!("{key}: would power {}", self.params.state));
            return Ok(false);
        }
        client.reset(reset).await.map_err(fail)?;
        settle(&client, Some(want)).await.map_err(fail)?;
        tracing::info!(resource = %key, "powered {}", self.params.state);
        Ok(false)
    }

    crate::fingerprint_by_params!();
}

/// Asks the BMC until the power is `want` (or, with `None`, no longer changing), for at
/// most [`SETTLE`].
async fn settle(client: &Redfish, want: Option<Power>) -> Result<Power, String> {
    let until = tokio::time::Instant::now() + SETTLE;
    loop {
        let now = client.power().await?;
        match want {
            Some(w) if now == w => return Ok(now),
            None if now != Power::Changing => return Ok(now),
            _ => {}
        }
        if tokio::time::Instant::now() >= until {
            return Err(format!("the BMC at {} did not reach the power state within {SETTLE:?}", client.address()));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The `bmc:power` kind: its params as the type checker sees them, and its constructor.
pub const BMC_POWER: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("bmc:power", BmcPowerParams::FIELDS, crate::built_on_host!(BmcPower));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_fills_in_what_the_params_leave_out() {
        let t = target("gofishs://ADMIN@127.0.0.1:8800", "", 0, "", "").unwrap();
        assert_eq!(t, Target { scheme: "https", host: "127.0.0.1".into(), port: 8800, user: "ADMIN".into() });
        let t = target("gofish://root:pw@[::1]", "", 0, "", "").unwrap();
        assert_eq!((t.scheme, t.host.as_str(), t.port, t.user.as_str()), ("http", "::1", 443, "root"));
        let t = target("my bmc", "bmc1", 8000, "admin", "gofish").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("bmc1", 8000));
        assert_eq!(target("rpcs://h", "", 0, "", "").unwrap_err().0, "driver");
        assert_eq!(target("plain", "", 0, "", "gofish").unwrap_err().0, "hostname");
        assert_eq!(target("gofish://h:x", "", 0, "", "").unwrap_err().0, "port");
        assert_eq!(target("gofish://h", "", 70000, "", "").unwrap_err().0, "port");
    }

    #[test]
    fn the_password_comes_from_the_name_only_when_asked() {
        assert_eq!(password("gofish://u:secret@h", "", "", false).unwrap(), "");
        assert_eq!(password("gofish://u:secret@h", "", "", true).unwrap(), "secret");
        assert_eq!(password("gofish://u:secret@h", "given", "", true).unwrap(), "given");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, "from-file\n").unwrap();
        assert_eq!(password("x", "", file.to_str().unwrap(), false).unwrap(), "from-file");
        let err = password("x", "", "/nonexistent/pw", false).unwrap_err();
        assert!(err.contains("password_file") && err.contains("/nonexistent/pw"), "{err}");
    }
}
