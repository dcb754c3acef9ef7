//! `firewalld`: `services` (`dhcp`, `tftp`) and `ports` (`4280/tcp`) opened (`state =>
//! "exists"`, also the default) or closed (`absent`) in a firewalld `zone` (default: the
//! default zone), in both the runtime and the permanent configuration, through the
//! [`Firewall`] backend (`firewall-cmd` on a real host, [`FakeFirewall`] in tests). The
//! name only identifies the resource. A port counts as open when a listed port range of the
//! same protocol covers it. Watch: the permanent configuration under `/etc/firewalld`, plus
//! the runtime state polled every [`POLL`] (mgmt follows nftables events instead).

use lang::params::ParamMap;
#[cfg(any(test, feature = "fakes"))]
use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
#[cfg(any(test, feature = "fakes"))]
use std::sync::Mutex;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;

use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::contract::typed::Presence;
use crate::machine::Machine;
use crate::util::command::{self, CmdSpec};
use crate::util::watch::FileWatch;

/// How often the watch re-reads the runtime configuration.
pub const POLL: std::time::Duration = std::time::Duration::from_secs(10);

/// Which configuration a call reads or changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Layer {
    Runtime,
    Permanent,
}

/// What is open in one zone: service names and `port/proto` or `from-to/proto` entries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneState {
    pub services: BTreeSet<String>,
    pub ports: BTreeSet<String>,
}

#[async_trait]
pub trait Firewall: Send + Sync {
    async fn default_zone(&self) -> Result<String, ResError>;
    async fn zone(&self, zone: &str, layer: Layer) -> Result<ZoneState, ResError>;
    /// Opens (`open`) or closes one service in a zone.
    async fn set_service(&self, zone: &str, layer: Layer, service: &str, open: bool) -> Result<(), ResError>;
    /// Opens or closes one `port/proto` in a zone.
    async fn set_port(&self, zone: &str, layer: Layer, port: &str, open: bool) -> Result<(), ResError>;
    /// Files whose change may mean the permanent configuration changed.
    fn config_paths(&self) -> Vec<PathBuf>;
}

// ---------------------------------------------------------------------------------------
// Pure helpers

/// The `firewall-cmd` argv for `args` in `zone` and `layer`.
pub fn firewall_cmd_argv(zone: &str, layer: Layer, args: &[&str]) -> Vec<String> {
    let mut argv = vec!["firewall-cmd".to_string()];
    if layer == Layer::Permanent {
        argv.push("--permanent".into());
    }
    argv.push(format!("--zone={zone}"));
    argv.extend(args.iter().map(|a| a.to_string()));
    argv
}

/// Splits `4280/tcp` into (4280, "tcp").
pub fn parse_port(text: &str) -> Result<(u16, &str), String> {
    let (num, proto) = text.split_once('/').ok_or_else(|| format!("`{text}` is not PORT/PROTOCOL"))?;
    let num: u16 = num.parse().ok().filter(|n| *n > 0).ok_or_else(|| format!("`{num}` in `{text}` is not a port"))?;
    if proto.is_empty() || proto.contains('/') {
        return Err(format!("`{text}` has no protocol after the `/`"));
    }
    Ok((num, proto))
}

/// Whether `entry` (`80/tcp` or `1025-65535/udp` as firewalld lists them) covers `port`.
pub fn covers(entry: &str, port: u16, proto: &str) -> bool {
    let Some((range, p)) = entry.split_once('/') else { return false };
    if p != proto {
        return false;
    }
    let (lo, hi) = range.split_once('-').unwrap_or((range, range));
    matches!((lo.parse::<u16>(), hi.parse::<u16>()), (Ok(lo), Ok(hi)) if lo <= port && port <= hi)
}

// ---------------------------------------------------------------------------------------
// Real backend

/// `firewall-cmd`; `root` prefixes the watched configuration directory.
pub struct FirewallCmd {
    pub root: PathBuf,
}

async fn firewall_cmd(argv: Vec<String>) -> Result<String, ResError> {
    let spec = CmdSpec { cmd: argv[0].clone(), args: argv[1..].to_vec(), ..CmdSpec::default() };
    let out = command::run(&spec, &Default::default()).await?;
    if !out.success() {
        return Err(ResError::new(format!("`{}` failed: {}", argv.join(" "), out.output.trim())));
    }
    Ok(out.stdout)
}

#[async_trait]
impl Firewall for FirewallCmd {
    async fn default_zone(&self) -> Result<String, ResError> {
        let zone = firewall_cmd(vec!["firewall-cmd".into(), "--get-default-zone".into()]).await?;
        Ok(zone.trim().to_string())
    }
    async fn zone(&self, zone: &str, layer: Layer) -> Result<ZoneState, ResError> {
        let words = |s: String| s.split_whitespace().map(str::to_string).collect();
        Ok(ZoneState {
            services: words(firewall_cmd(firewall_cmd_argv(zone, layer, &["--list-services"])).await?),
            ports: words(firewall_cmd(firewall_cmd_argv(zone, layer, &["--list-ports"])).await?),
        })
    }
    async fn set_service(&self, zone: &str, layer: Layer, service: &str, open: bool) -> Result<(), ResError> {
        let arg = format!("--{}-service={service}", if open { "add" } else { "remove" });
        firewall_cmd(firewall_cmd_argv(zone, layer, &[&arg])).await.map(drop)
    }
    async fn set_port(&self, zone: &str, layer: Layer, port: &str, open: bool) -> Result<(), ResError> {
        let arg = format!("--{}-port={port}", if open { "add" } else { "remove" });
        firewall_cmd(firewall_cmd_argv(zone, layer, &[&arg])).await.map(drop)
    }
    fn config_paths(&self) -> Vec<PathBuf> {
        vec![self.root.join("etc/firewalld")]
    }
}

// ---------------------------------------------------------------------------------------
// Fake backend

/// In-memory zones for tests (the default zone is `public`); every change is recorded.
#[derive(Default)]
#[cfg(any(test, feature = "fakes"))]
pub struct FakeFirewall {
    zones: Mutex<BTreeMap<(String, Layer), ZoneState>>,
    calls: Mutex<Vec<String>>,
}

#[cfg(any(test, feature = "fakes"))]
impl FakeFirewall {
    pub fn state(&self, zone: &str, layer: Layer) -> ZoneState {
        self.zones
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(zone.to_string(), layer))
            .cloned()
            .unwrap_or_default()
    }
    /// Changes a zone behind the resource's back.
    pub fn tamper(&self, zone: &str, layer: Layer, f: impl FnOnce(&mut ZoneState)) {
        f(self.zones.lock().unwrap_or_else(|e| e.into_inner()).entry((zone.to_string(), layer)).or_default());
    }
    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    fn change(&self, call: String, zone: &str, layer: Layer, f: impl FnOnce(&mut ZoneState)) {
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).push(call);
        self.tamper(zone, layer, f);
    }
}

#[async_trait]
#[cfg(any(test, feature = "fakes"))]
impl Firewall for FakeFirewall {
    async fn default_zone(&self) -> Result<String, ResError> {
        Ok("public".into())
    }
    async fn zone(&self, zone: &str, layer: Layer) -> Result<ZoneState, ResError> {
        Ok(self.state(zone, layer))
    }
    async fn set_service(&self, zone: &str, layer: Layer, service: &str, open: bool) -> Result<(), ResError> {
        self.change(format!("{layer:?} {zone} service {service} {open}"), zone, layer, |z| {
            if open {
                z.services.insert(service.into())
            } else {
                z.services.remove(service)
            };
        });
        Ok(())
    }
    async fn set_port(&self, zone: &str, layer: Layer, port: &str, open: bool) -> Result<(), ResError> {
        self.change(format!("{layer:?} {zone} port {port} {open}"), zone, layer, |z| {
            if open {
                z.ports.insert(port.into())
            } else {
                z.ports.remove(port)
            };
        });
        Ok(())
    }
    fn config_paths(&self) -> Vec<PathBuf> {
        Vec::new()
    }
}

// ---------------------------------------------------------------------------------------
// The resource

crate::params! {
    /// `firewalld`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct FirewalldParams {
        pub zone: String,
        /// Unset means `exists`.
        pub state: Presence,
        pub services: Vec<String>,
        pub ports: Vec<String>,
    }
}

pub struct Firewalld {
    raw: Raw,
    params: FirewalldParams,
    firewall: Arc<dyn Firewall>,
}

/// One change a check found.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Fix {
    Service(Layer, String),
    Port(Layer, String),
}

impl Firewalld {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<Firewalld, BuildError> {
        let (raw, params) = Raw::decoded("firewalld", name, values, FirewalldParams::decode)?;
        Ok(Firewalld { raw, params, firewall: host.firewall.clone() })
    }

    fn open(&self) -> bool {
        self.params.state != Presence::Absent
    }

    /// The changes needed in one layer of a zone; an error for a port that is only open
    /// as part of a wider range (closing it would need the range split).
    fn fixes(&self, layer: Layer, have: &ZoneState) -> Result<Vec<Fix>, ResError> {
        let open = self.open();
        let mut fixes = Vec::new();
        for service in &self.params.services {
            if have.services.contains(service) != open {
                fixes.push(Fix::Service(layer, service.clone()));
            }
        }
        for port in &self.params.ports {
            let Ok((num, proto)) = parse_port(port) else { continue };
            let found = have.ports.iter().any(|e| covers(e, num, proto));
            if found == open {
                continue;
            }
            if !open && !have.ports.contains(port) {
                let range = have.ports.iter().find(|e| covers(e, num, proto)).cloned().unwrap_or_default();
                return Err(ResError::new(format!(
                    "firewalld[{}]: cannot close {port}: it is open as part of the range {range}",
                    self.raw.name
                )));
            }
            fixes.push(Fix::Port(layer, port.clone()));
        }
        Ok(fixes)
    }

    async fn zone_name(firewall: &dyn Firewall, zone: &str) -> Result<String, ResError> {
        if !zone.is_empty() {
            return Ok(zone.to_string());
        }
        let zone = firewall.default_zone().await?;
        if zone.is_empty() { Err(ResError::new("firewalld reported an empty default zone")) } else { Ok(zone) }
    }
}

#[async_trait]
impl Resource for Firewalld {
    fn validate(&self) -> Result<(), ResError> {
        let err = |field: &str, message: String| self.raw.invalid(Some(field), message);
        let p = &self.params;
        if let Some(i) = p.services.iter().position(|s| s.is_empty() || s.contains(char::is_whitespace)) {
            return Err(err("services", format!("entry {i} is not a service name")));
        }
        for (i, port) in p.ports.iter().enumerate() {
            parse_port(port).map_err(|m| err("ports", format!("entry {i}: {m}")))?;
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let firewall = self.firewall.clone();
        let paths = firewall.config_paths();
        let this = Firewalld { raw: self.raw.clone(), params: self.params.clone(), firewall: firewall.clone() };
        Box::pin(async move {
            let mut files = if paths.is_empty() { None } else { Some(FileWatch::new(paths, true)?) };
            ctx.event();
            let poll = async {
                let mut ticker = tokio::time::interval(POLL);
                ticker.tick().await;
                loop {
                    ticker.tick().await;
                    let zone = Firewalld::zone_name(firewall.as_ref(), &this.params.zone).await?;
                    let have = firewall.zone(&zone, Layer::Runtime).await?;
                    if !this.fixes(Layer::Runtime, &have).map(|f| f.is_empty()).unwrap_or(false) {
                        ctx.event();
                    }
                }
            };
            tokio::pin!(poll);
            loop {
                tokio::select! {
                    out = &mut poll => return out,
                    changed = async { match files.as_mut() { Some(w) => w.changed().await, None => std::future::pending().await } } => {
                        changed?;
                        ctx.event();
                    }
                    _ = ctx.cancelled() => return Ok(()),
                }
            }
        })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let zone = Self::zone_name(self.firewall.as_ref(), &self.params.zone).await?;
        let open = self.open();
        let verb = if open { "open" } else { "close" };
        let mut ok = true;
        for layer in [Layer::Runtime, Layer::Permanent] {
            let have = self.firewall.zone(&zone, layer).await?;
            for fix in self.fixes(layer, &have)? {
                ok = false;
                let (what, name) = match &fix {
                    Fix::Service(_, s) => ("service", s),
                    Fix::Port(_, p) => ("port", p),
                };
                if !apply {
                    ctx.report(format!(
                        "firewalld[{}]: would {verb} {what} {name} in zone {zone} ({layer:?})",
                        self.raw.name
                    ));
                    continue;
                }
                match fix {
                    Fix::Service(layer, s) => self.firewall.set_service(&zone, layer, &s, open).await?,
                    Fix::Port(layer, p) => self.firewall.set_port(&zone, layer, &p, open).await?,
                }
            }
        }
        Ok(ok)
    }

    crate::fingerprint_by_params!();
}

/// The `firewalld` kind: its params and send fields as the type checker sees them, and its constructor.
pub const FIREWALLD: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("firewalld", FirewalldParams::FIELDS, crate::built_on_host!(Firewalld));

#[cfg(test)]
mod tests {
    use super::*;
    use lang::value::Value;

    #[test]
    fn ports_parse_and_ranges_cover() {
        assert_eq!(parse_port("4280/tcp").unwrap(), (4280, "tcp"));
        assert!(parse_port("4280").unwrap_err().contains("PORT/PROTOCOL"));
        assert!(parse_port("0/tcp").unwrap_err().contains("not a port"));
        assert!(parse_port("70000/udp").unwrap_err().contains("not a port"));
        assert!(parse_port("53/").unwrap_err().contains("no protocol"));
        assert!(covers("4280/tcp", 4280, "tcp"));
        assert!(!covers("4280/udp", 4280, "tcp"));
        assert!(covers("1025-65535/udp", 4280, "udp"));
        assert!(!covers("1025-2000/udp", 4280, "udp"));
    }

    #[test]
    fn command_lines() {
        assert_eq!(
            firewall_cmd_argv("public", Layer::Permanent, &["--add-port=4280/tcp"]).join(" "),
            "firewall-cmd --permanent --zone=public --add-port=4280/tcp"
        );
        assert_eq!(
            firewall_cmd_argv("dmz", Layer::Runtime, &["--list-services"]).join(" "),
            "firewall-cmd --zone=dmz --list-services"
        );
    }

    #[test]
    fn fixes_follow_the_listing() {
        let host = Machine::sandbox("/nonexistent");
        let values = ParamMap::from([
            ("services".to_string(), Value::list(vec![Value::str("dhcp"), Value::str("tftp")])),
            ("ports".to_string(), Value::list(vec![Value::str("4280/tcp")])),
            ("state".to_string(), Value::str("absent")),
        ]);
        let fw = Firewalld::build(&host, "misc", &values).unwrap();
        // Sample `firewall-cmd --list-services` / `--list-ports` output, split on whitespace.
        let listed = ZoneState {
            services: "dhcp ssh\n".split_whitespace().map(str::to_string).collect(),
            ports: "4280/tcp 9000-9100/udp\n".split_whitespace().map(str::to_string).collect(),
        };
        let fixes = fw.fixes(Layer::Runtime, &listed).unwrap();
        assert_eq!(fixes, [Fix::Service(Layer::Runtime, "dhcp".into()), Fix::Port(Layer::Runtime, "4280/tcp".into())]);
        let ranged = ZoneState { ports: ["4000-5000/tcp".to_string()].into(), ..ZoneState::default() };
        assert!(fw.fixes(Layer::Runtime, &ranged).unwrap_err().message.contains("range 4000-5000/tcp"));
        let bad =
            Firewalld::build(&host, "x", &ParamMap::from([("ports".to_string(), Value::list(vec![Value::str("80")]))]))
                .unwrap();
        assert!(bad.validate().unwrap_err().message.contains("firewalld[x]: field `ports`: entry 0"));
    }
}
