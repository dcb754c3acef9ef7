//! `net`: one network interface (the resource name): admin `state` (`up`, `down`, or ""
//! to leave alone), the exact set of `addrs` (CIDR; unset = leave alone), the default
//! `gateway` through this interface, and `ip_forward` (IPv4 forwarding on the interface).
//! With a `state`, the settings are also kept in a systemd-networkd file
//! (`/etc/systemd/network/tend-<name>.network`; removed for `down`) so they survive a
//! reboot. Live changes go through the [`NetLinks`] backend: iproute2's `ip` command and
//! `/proc/sys/net/ipv4/conf/<name>/forwarding` on a real host, [`FakeNet`] in tests. Watch:
//! `ip monitor` lines naming the interface, plus the networkd file.
//!
//! IPv6 link-local addresses (`fe80::/10`, which the kernel adds by itself) are not counted
//! as addresses of the interface unless `addrs` lists one. Reversible: the reversal puts
//! back the link state, addresses, gateway, forwarding and networkd file found at init.

use lang::params::ParamMap;
#[cfg(any(test, feature = "fakes"))]
use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use engine::{ApplyCtx, InitCtx, IoAt, ResError, Resource, WatchCtx};
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;

use crate::contract::common::{Raw, res_error};
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint;
use crate::machine::Machine;
use crate::util::command::{self, CmdOutput, CmdSpec};
use crate::util::fs::atomic_write;
use crate::util::watch::FileWatch;

/// Where the networkd files go (under the host root).
pub const NETWORKD_DIR: &str = "/etc/systemd/network";

/// What the backend reports about one interface.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkState {
    /// Administratively up (the `UP` flag).
    pub up: bool,
    /// Addresses in canonical CIDR form (see [`parse_cidr`]).
    pub addrs: Vec<String>,
}

/// Live network configuration, by interface name.
#[async_trait]
pub trait NetLinks: Send + Sync {
    /// The interface's state; `None` when there is no such interface.
    async fn link(&self, name: &str) -> Result<Option<LinkState>, ResError>;
    async fn set_up(&self, name: &str, up: bool) -> Result<(), ResError>;
    async fn add_addr(&self, name: &str, cidr: &str) -> Result<(), ResError>;
    async fn del_addr(&self, name: &str, cidr: &str) -> Result<(), ResError>;
    /// The gateways of the default routes through this interface.
    async fn default_gateways(&self, name: &str) -> Result<Vec<String>, ResError>;
    async fn del_default_route(&self, name: &str, gateway: &str) -> Result<(), ResError>;
    /// Adds or replaces the default route so it goes through `gateway` on this interface.
    async fn replace_default_route(&self, name: &str, gateway: &str) -> Result<(), ResError>;
    async fn forwarding(&self, name: &str) -> Result<bool, ResError>;
    async fn set_forwarding(&self, name: &str, on: bool) -> Result<(), ResError>;
    /// One item per change that may concern the interface, until dropped.
    fn monitor(&self, name: &str) -> Result<BoxStream<'static, Result<(), ResError>>, ResError>;
}

// ---------------------------------------------------------------------------------------
// Pure helpers

/// Parses `ip/prefix` and renders it canonically (`2001:DB8::1/64` -> `2001:db8::1/64`).
pub fn parse_cidr(text: &str) -> Result<String, String> {
    let (ip, prefix) = crate::util::cidr::parse(text)?;
    Ok(format!("{ip}/{prefix}"))
}

fn is_link_local(cidr: &str) -> bool {
    let ip = cidr.split('/').next().unwrap_or_default();
    matches!(ip.parse::<IpAddr>(), Ok(IpAddr::V6(v6)) if (v6.segments()[0] & 0xffc0) == 0xfe80)
}

/// The interface in the output of `ip -json addr show dev NAME`.
pub fn parse_ip_addr_json(text: &str) -> Result<Option<LinkState>, ResError> {
    let bad = |what: &str| ResError::new(format!("unexpected `ip -json addr` output: {what}"));
    let json: serde_json::Value = serde_json::from_str(text.trim()).map_err(|e| bad(&e.to_string()))?;
    let list = json.as_array().ok_or_else(|| bad("not a list"))?;
    let Some(link) = list.first() else { return Ok(None) };
    let up = link["flags"].as_array().is_some_and(|flags| flags.iter().any(|f| f == "UP"));
    let mut addrs = Vec::new();
    for info in link["addr_info"].as_array().map(Vec::as_slice).unwrap_or_default() {
        let (Some(local), Some(prefix)) = (info["local"].as_str(), info["prefixlen"].as_u64()) else { continue };
        addrs.push(parse_cidr(&format!("{local}/{prefix}")).map_err(|e| bad(&e))?);
    }
    Ok(Some(LinkState { up, addrs }))
}

/// The gateways in the output of `ip -json route show default dev NAME`.
pub fn parse_route_json(text: &str) -> Result<Vec<String>, ResError> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let json: serde_json::Value = serde_json::from_str(text.trim())
        .map_err(|e| ResError::new(format!("unexpected `ip -json route` output: {e}")))?;
    Ok(json
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|r| r["gateway"].as_str().map(str::to_string))
        .collect())
}

/// Whether an `ip monitor` line concerns interface `name` (`2: eth0: <...>`, `dev eth0`).
pub fn monitor_line_mentions(line: &str, name: &str) -> bool {
    line.split(|c: char| c.is_whitespace() || c == ':' || c == '@').any(|word| word == name)
}

/// The argv of every `ip` invocation the real backend makes (what it changes).
pub fn ip_argv(op: &IpOp<'_>) -> Vec<String> {
    let v: Vec<&str> = match *op {
        IpOp::Show(name) => vec!["-json", "addr", "show", "dev", name],
        IpOp::SetUp(name, up) => vec!["link", "set", "dev", name, if up { "up" } else { "down" }],
        IpOp::AddAddr(name, cidr) => vec!["addr", "add", cidr, "dev", name],
        IpOp::DelAddr(name, cidr) => vec!["addr", "del", cidr, "dev", name],
        IpOp::Defaults(name) => vec!["-json", "route", "show", "default", "dev", name],
        IpOp::DelDefault(name, gw) => vec!["route", "del", "default", "via", gw, "dev", name],
        IpOp::ReplaceDefault(name, gw) => {
            vec!["route", "replace", "default", "via", gw, "dev", name, "proto", "static"]
        }
    };
    std::iter::once("ip").chain(v).map(str::to_string).collect()
}

/// One `ip` invocation.
#[derive(Clone, Copy, Debug)]
pub enum IpOp<'a> {
    Show(&'a str),
    SetUp(&'a str, bool),
    AddAddr(&'a str, &'a str),
    DelAddr(&'a str, &'a str),
    Defaults(&'a str),
    DelDefault(&'a str, &'a str),
    ReplaceDefault(&'a str, &'a str),
}

// ---------------------------------------------------------------------------------------
// Real backend

/// iproute2 and `/proc/sys` under `proc_root` (`/` on a real host).
pub struct IpRoute2 {
    pub proc_root: PathBuf,
}

impl IpRoute2 {
    async fn ip(&self, op: IpOp<'_>) -> Result<CmdOutput, ResError> {
        let argv = ip_argv(&op);
        let spec = CmdSpec { cmd: argv[0].clone(), args: argv[1..].to_vec(), ..CmdSpec::default() };
        command::run(&spec, &tokio_util::sync::CancellationToken::new()).await
    }

    async fn ip_ok(&self, op: IpOp<'_>) -> Result<String, ResError> {
        let out = self.ip(op).await?;
        if out.success() {
            Ok(out.stdout)
        } else {
            Err(ResError::new(format!("`{}` failed: {}", ip_argv(&op).join(" "), out.output.trim())))
        }
    }

    fn forwarding_path(&self, name: &str) -> PathBuf {
        self.proc_root.join(format!("proc/sys/net/ipv4/conf/{name}/forwarding"))
    }
}

#[async_trait]
impl NetLinks for IpRoute2 {
    async fn link(&self, name: &str) -> Result<Option<LinkState>, ResError> {
        let out = self.ip(IpOp::Show(name)).await?;
        if !out.success() {
            // `Device "x" does not exist.`
            if out.stderr.contains("does not exist") {
                return Ok(None);
            }
            return Err(ResError::new(format!("`ip addr show dev {name}` failed: {}", out.output.trim())));
        }
        parse_ip_addr_json(&out.stdout)
    }
    async fn set_up(&self, name: &str, up: bool) -> Result<(), ResError> {
        self.ip_ok(IpOp::SetUp(name, up)).await.map(drop)
    }
    async fn add_addr(&self, name: &str, cidr: &str) -> Result<(), ResError> {
        self.ip_ok(IpOp::AddAddr(name, cidr)).await.map(drop)
    }
    async fn del_addr(&self, name: &str, cidr: &str) -> Result<(), ResError> {
        self.ip_ok(IpOp::DelAddr(name, cidr)).await.map(drop)
    }
    async fn default_gateways(&self, name: &str) -> Result<Vec<String>, ResError> {
        parse_route_json(&self.ip_ok(IpOp::Defaults(name)).await?)
    }
    async fn del_default_route(&self, name: &str, gateway: &str) -> Result<(), ResError> {
        self.ip_ok(IpOp::DelDefault(name, gateway)).await.map(drop)
    }
    async fn replace_default_route(&self, name: &str, gateway: &str) -> Result<(), ResError> {
        self.ip_ok(IpOp::ReplaceDefault(name, gateway)).await.map(drop)
    }
    async fn forwarding(&self, name: &str) -> Result<bool, ResError> {
        let path = self.forwarding_path(name);
        let text = std::fs::read_to_string(&path).map_err(|e| ResError::new(format!("{}: {e}", path.display())))?;
        Ok(text.trim() == "1")
    }
    async fn set_forwarding(&self, name: &str, on: bool) -> Result<(), ResError> {
        let path = self.forwarding_path(name);
        std::fs::write(&path, if on { "1\n" } else { "0\n" })
            .map_err(|e| ResError::new(format!("{}: {e}", path.display())))
    }
    fn monitor(&self, name: &str) -> Result<BoxStream<'static, Result<(), ResError>>, ResError> {
        let argv = ["ip", "monitor", "link", "address", "route"].map(String::from);
        let lines = crate::util::events::line_stream(&argv, &[])?;
        let name = name.to_string();
        // The lines about this interface are its changes; the process goes with the stream.
        let mentions = move |line: &Result<String, ResError>| {
            std::future::ready(line.as_ref().map_or(true, |l| monitor_line_mentions(l, &name)))
        };
        Ok(futures::TryStreamExt::map_ok(lines.filter(mentions), |_| ()).boxed())
    }
}

// ---------------------------------------------------------------------------------------
// Fake backend

/// One interface of [`FakeNet`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg(any(test, feature = "fakes"))]
pub struct FakeLink {
    pub up: bool,
    pub addrs: BTreeSet<String>,
    pub gateways: Vec<String>,
    pub forwarding: bool,
}

/// In-memory interfaces for tests; every change bumps a counter that [`NetLinks::monitor`]
/// streams follow. Interfaces must be added with [`FakeNet::add`].
#[cfg(any(test, feature = "fakes"))]
#[derive(Default)]
pub struct FakeNet(crate::util::fake::Fake<BTreeMap<String, FakeLink>>);

#[cfg(any(test, feature = "fakes"))]
impl FakeNet {
    pub fn add(&self, name: &str, link: FakeLink) {
        self.0.state().insert(name.to_string(), link);
        self.0.changed();
    }
    pub fn get(&self, name: &str) -> Option<FakeLink> {
        self.0.state().get(name).cloned()
    }
    /// Changes an interface behind the resource's back (as another tool would).
    pub fn tamper(&self, name: &str, f: impl FnOnce(&mut FakeLink)) {
        if let Some(link) = self.0.state().get_mut(name) {
            f(link);
        }
        self.0.changed();
    }
    pub fn calls(&self) -> Vec<String> {
        self.0.calls()
    }
    fn change<T>(&self, call: String, name: &str, f: impl FnOnce(&mut FakeLink) -> T) -> Result<T, ResError> {
        self.0.record(call);
        let out = {
            let mut links = self.0.state();
            let link =
                links.get_mut(name).ok_or_else(|| ResError::new(format!("Device \"{name}\" does not exist.")))?;
            f(link)
        };
        self.0.changed();
        Ok(out)
    }
}

#[async_trait]
#[cfg(any(test, feature = "fakes"))]
impl NetLinks for FakeNet {
    async fn link(&self, name: &str) -> Result<Option<LinkState>, ResError> {
        Ok(self.get(name).map(|l| LinkState { up: l.up, addrs: l.addrs.into_iter().collect() }))
    }
    async fn set_up(&self, name: &str, up: bool) -> Result<(), ResError> {
        self.change(format!("link {name} {}", if up { "up" } else { "down" }), name, |l| l.up = up)
    }
    async fn add_addr(&self, name: &str, cidr: &str) -> Result<(), ResError> {
        self.change(format!("addr add {cidr} {name}"), name, |l| l.addrs.insert(cidr.to_string())).map(drop)
    }
    async fn del_addr(&self, name: &str, cidr: &str) -> Result<(), ResError> {
        self.change(format!("addr del {cidr} {name}"), name, |l| l.addrs.remove(cidr)).map(drop)
    }
    async fn default_gateways(&self, name: &str) -> Result<Vec<String>, ResError> {
        Ok(self.get(name).map(|l| l.gateways).unwrap_or_default())
    }
    async fn del_default_route(&self, name: &str, gateway: &str) -> Result<(), ResError> {
        self.change(format!("route del {gateway} {name}"), name, |l| l.gateways.retain(|g| g != gateway))
    }
    async fn replace_default_route(&self, name: &str, gateway: &str) -> Result<(), ResError> {
        self.change(format!("route replace {gateway} {name}"), name, |l| l.gateways = vec![gateway.to_string()])
    }
    async fn forwarding(&self, name: &str) -> Result<bool, ResError> {
        Ok(self.get(name).is_some_and(|l| l.forwarding))
    }
    async fn set_forwarding(&self, name: &str, on: bool) -> Result<(), ResError> {
        self.change(format!("forwarding {name} {on}"), name, |l| l.forwarding = on)
    }
    fn monitor(&self, _name: &str) -> Result<BoxStream<'static, Result<(), ResError>>, ResError> {
        Ok(self.0.monitor())
    }
}

// ---------------------------------------------------------------------------------------
// The resource

crate::choice! {
    /// A link's admin state; unset leaves it (and the networkd file) alone.
    #[derive(Default)]
    pub enum AdminState {
        #[default]
        Unset = "",
        Up = "up",
        Down = "down",
    }
}
crate::choice_default_when_absent!(AdminState);

crate::params! {
    /// `net`'s params; the name is the interface.
    #[derive(Clone, Debug, PartialEq)]
    pub struct NetParams {
        pub state: AdminState,
        /// `None`: addresses are not managed.
        pub addrs: Option<Vec<String>>,
        pub gateway: String,
        pub ip_forward: Option<bool>,
    }
}

/// What happens to the networkd file.
#[derive(Clone, Debug, PartialEq)]
enum UnitFile {
    /// Follow the params (the normal case).
    FromParams,
    /// Put back this content (`None`: remove the file); used by reversals.
    Restore(Option<String>),
}

/// The state found at init, for the reversal.
#[derive(Clone, Debug)]
struct Snapshot {
    link: LinkState,
    gateways: Vec<String>,
    forwarding: bool,
    unit: Option<String>,
}

pub struct Net {
    raw: Raw,
    params: NetParams,
    links: Arc<dyn NetLinks>,
    unit_path: PathBuf,
    unit_file: UnitFile,
    snapshot: Option<Snapshot>,
}

impl Net {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<Net, BuildError> {
        let (raw, params) = Raw::decoded("net", name, values, NetParams::decode)?;
        Ok(Net {
            raw,
            params,
            links: host.net.clone(),
            unit_path: unit_path(&host.root, name),
            unit_file: UnitFile::FromParams,
            snapshot: None,
        })
    }

    fn key(&self) -> String {
        format!("net[{}]", self.raw.name)
    }

    /// The networkd file for the params.
    pub fn unit_contents(&self) -> String {
        let p = &self.params;
        let mut text = format!("[Match]\nName={}\n\n[Network]\n", self.raw.name);
        for addr in p.addrs.iter().flatten() {
            text.push_str(&format!("Address={addr}\n"));
        }
        if !p.gateway.is_empty() {
            text.push_str(&format!("Gateway={}\n", p.gateway));
        }
        if let Some(on) = p.ip_forward {
            text.push_str(&format!("IPForward={}\n", if on { "yes" } else { "no" }));
        }
        text
    }

    /// The file content wanted (`None`: no file), or `Err(())` to leave the file alone.
    fn wanted_unit(&self) -> Result<Option<String>, ()> {
        match &self.unit_file {
            UnitFile::Restore(content) => Ok(content.clone()),
            UnitFile::FromParams => match self.params.state {
                AdminState::Up => Ok(Some(self.unit_contents())),
                AdminState::Down => Ok(None),
                AdminState::Unset => Err(()),
            },
        }
    }

    fn unit_check_apply(&self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let Ok(wanted) = self.wanted_unit() else { return Ok(true) };
        let current = match std::fs::read_to_string(&self.unit_path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(ResError::new(format!("{}: {}: {e}", self.key(), self.unit_path.display()))),
        };
        if current == wanted {
            return Ok(true);
        }
        let path = self.unit_path.display();
        if !apply {
            ctx.report(match &wanted {
                Some(_) => format!("{}: would write {path}", self.key()),
                None => format!("{}: would remove {path}", self.key()),
            });
            return Ok(false);
        }
        match wanted {
            Some(text) => {
                if let Some(dir) = self.unit_path.parent() {
                    std::fs::create_dir_all(dir).at(dir)?;
                }
                atomic_write(&self.unit_path, text.as_bytes(), Some(0o644)).at(&self.unit_path)?;
            }
            None => std::fs::remove_file(&self.unit_path).at(&self.unit_path)?,
        }
        Ok(false)
    }

    fn invalid(&self, field: &str, message: String) -> ResError {
        self.raw.invalid(Some(field), message)
    }
}

/// One change step: report it in noop mode, do it in apply mode.
async fn step<F>(ctx: &mut ApplyCtx, apply: bool, what: String, act: F) -> Result<(), ResError>
where
    F: std::future::Future<Output = Result<(), ResError>>,
{
    if apply {
        act.await
    } else {
        ctx.report(what);
        Ok(())
    }
}

#[async_trait]
impl Resource for Net {
    fn validate(&self) -> Result<(), ResError> {
        let p = &self.params;
        let name = &self.raw.name;
        if name.is_empty() || name.len() > 15 || name.contains(['/', ' ']) || name == "." || name == ".." {
            return Err(res_error(BuildError {
                kind: "net".into(),
                name: name.clone(),
                field: None,
                message: "the name must be an interface name (1 to 15 characters, no `/` or spaces)".into(),
            }));
        }
        for (i, addr) in p.addrs.iter().flatten().enumerate() {
            parse_cidr(addr).map_err(|e| self.invalid("addrs", format!("entry {i}: {e}")))?;
        }
        if !p.gateway.is_empty() && p.gateway.parse::<IpAddr>().is_err() {
            return Err(self.invalid("gateway", format!("`{}` is not an IP address", p.gateway)));
        }
        Ok(())
    }

    async fn init(&mut self, _ctx: &InitCtx) -> Result<(), ResError> {
        let name = &self.raw.name;
        if let Some(link) = self.links.link(name).await? {
            self.snapshot = Some(Snapshot {
                gateways: self.links.default_gateways(name).await?,
                forwarding: self.links.forwarding(name).await.unwrap_or(false),
                unit: std::fs::read_to_string(&self.unit_path).ok(),
                link,
            });
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let monitor = self.links.monitor(&self.raw.name);
        let unit_path = self.unit_path.clone();
        Box::pin(async move {
            let mut monitor = monitor?;
            let mut files = FileWatch::new(vec![unit_path], false)?;
            ctx.event();
            loop {
                tokio::select! {
                    item = monitor.next() => match item {
                        Some(Ok(())) => ctx.event(),
                        Some(Err(e)) => return Err(e),
                        None => return Err(ResError::new("the interface monitor stopped")),
                    },
                    changed = files.changed() => { changed?; ctx.event(); }
                    _ = ctx.cancelled() => return Ok(()),
                }
            }
        })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let name = self.raw.name.clone();
        let key = self.key();
        let links = self.links.clone();
        let Some(link) = links.link(&name).await? else {
            return Err(ResError::new(format!("{key}: no network interface named `{name}`")));
        };
        let mut ok = self.unit_check_apply(ctx, apply)?;
        let p = self.params.clone();

        if p.state != AdminState::Unset && link.up != (p.state == AdminState::Up) {
            ok = false;
            step(
                ctx,
                apply,
                format!("{key}: would set the link {}", p.state),
                links.set_up(&name, p.state == AdminState::Up),
            )
            .await?;
        }
        if p.state == AdminState::Down {
            return Ok(ok);
        }

        if let Some(addrs) = &p.addrs {
            let wanted: BTreeSet<String> = addrs.iter().filter_map(|a| parse_cidr(a).ok()).collect();
            let have: BTreeSet<String> =
                link.addrs.iter().filter(|a| wanted.contains(*a) || !is_link_local(a)).cloned().collect();
            for extra in have.difference(&wanted) {
                ok = false;
                step(ctx, apply, format!("{key}: would remove address {extra}"), links.del_addr(&name, extra)).await?;
            }
            for missing in wanted.difference(&have) {
                ok = false;
                step(ctx, apply, format!("{key}: would add address {missing}"), links.add_addr(&name, missing)).await?;
            }
        }

        if !p.gateway.is_empty() {
            let gateways = links.default_gateways(&name).await?;
            if gateways != [p.gateway.clone()] {
                ok = false;
                for other in gateways.iter().filter(|g| **g != p.gateway) {
                    let what = format!("{key}: would remove the default route via {other}");
                    step(ctx, apply, what, links.del_default_route(&name, other)).await?;
                }
                step(
                    ctx,
                    apply,
                    format!("{key}: would route default traffic via {}", p.gateway),
                    links.replace_default_route(&name, &p.gateway),
                )
                .await?;
            }
        }

        if let Some(on) = p.ip_forward
            && links.forwarding(&name).await? != on
        {
            ok = false;
            let what = format!("{key}: would turn forwarding {}", if on { "on" } else { "off" });
            step(ctx, apply, what, links.set_forwarding(&name, on)).await?;
        }
        Ok(ok)
    }

    fn fingerprint(&self) -> String {
        let mut out = self.params.fingerprint();
        match &self.unit_file {
            UnitFile::FromParams => out.push('p'),
            UnitFile::Restore(content) => {
                out.push('r');
                content.fingerprint_into(&mut out);
            }
        }
        out
    }

    fn reversal(&self) -> Result<Option<Box<dyn Resource>>, ResError> {
        let Some(before) = &self.snapshot else { return Ok(None) };
        let params = NetParams {
            state: if before.link.up { AdminState::Up } else { AdminState::Down },
            addrs: before.link.up.then(|| before.link.addrs.iter().filter(|a| !is_link_local(a)).cloned().collect()),
            gateway: match before.gateways.as_slice() {
                [one] => one.clone(),
                _ => String::new(),
            },
            ip_forward: Some(before.forwarding),
        };
        Ok(Some(Box::new(Net {
            raw: self.raw.clone(),
            params,
            links: self.links.clone(),
            unit_path: self.unit_path.clone(),
            unit_file: UnitFile::Restore(before.unit.clone()),
            snapshot: None,
        })))
    }
}

/// The networkd file path for interface `name` under `root`.
pub fn unit_path(root: &Path, name: &str) -> PathBuf {
    root.join(NETWORKD_DIR.trim_start_matches('/')).join(format!("tend-{name}.network"))
}

/// The `net` kind: its params and send fields as the type checker sees them, and its constructor.
pub const NET: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("net", NetParams::FIELDS, crate::built_on_host!(Net));

#[cfg(test)]
mod tests {
    use super::*;
    use lang::value::Value;

    #[test]
    fn cidrs_are_checked_and_canonical() {
        assert_eq!(parse_cidr("192.168.42.1/24").unwrap(), "192.168.42.1/24");
        assert_eq!(parse_cidr("2001:DB8:0::1/64").unwrap(), "2001:db8::1/64");
        assert!(parse_cidr("192.168.42.1").unwrap_err().contains("CIDR"));
        assert!(parse_cidr("192.168.42.1/33").unwrap_err().contains("0 to 32"));
        assert!(parse_cidr("300.1.1.1/8").unwrap_err().contains("not an IP"));
        assert!(is_link_local("fe80::1c2:3ff:fe04:506/64"));
        assert!(!is_link_local("2001:db8::1/64") && !is_link_local("10.0.0.1/8"));
    }

    /// Captured from `ip -json addr show dev eth0` (iproute2 6.1), trimmed.
    const ADDR_SAMPLE: &str = r#"[{"ifindex":2,"ifname":"eth0","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":1500,"qdisc":"fq_codel","operstate":"UP","group":"default","txqlen":1000,"link_type":"ether","address":"52:54:00:12:34:56","broadcast":"ff:ff:ff:ff:ff:ff","addr_info":[{"family":"inet","local":"192.168.42.1","prefixlen":24,"broadcast":"192.168.42.255","scope":"global","label":"eth0","valid_life_time":4294967295,"preferred_life_time":4294967295},{"family":"inet6","local":"fe80::5054:ff:fe12:3456","prefixlen":64,"scope":"link","valid_life_time":4294967295,"preferred_life_time":4294967295}]}]
"#;

    #[test]
    fn ip_addr_json_is_parsed() {
        let link = parse_ip_addr_json(ADDR_SAMPLE).unwrap().unwrap();
        assert!(link.up);
        assert_eq!(link.addrs, ["192.168.42.1/24", "fe80::5054:ff:fe12:3456/64"]);
        let down = r#"[{"ifindex":3,"ifname":"meth0","flags":["BROADCAST","MULTICAST"],"addr_info":[]}]"#;
        assert_eq!(parse_ip_addr_json(down).unwrap(), Some(LinkState { up: false, addrs: vec![] }));
        assert_eq!(parse_ip_addr_json("[]").unwrap(), None);
        assert!(parse_ip_addr_json("Device \"x\" does not exist.").is_err());
    }

    #[test]
    fn route_json_and_monitor_lines_are_parsed() {
        let routes = r#"[{"dst":"default","gateway":"192.168.42.254","dev":"eth0","protocol":"static","flags":[]}]"#;
        assert_eq!(parse_route_json(routes).unwrap(), ["192.168.42.254"]);
        assert_eq!(parse_route_json("[]\n").unwrap(), Vec::<String>::new());
        assert_eq!(parse_route_json("").unwrap(), Vec::<String>::new());
        assert!(monitor_line_mentions("3: meth0: <BROADCAST,MULTICAST> mtu 1500 qdisc noop state DOWN", "meth0"));
        assert!(monitor_line_mentions("Deleted 192.168.42.0/24 dev meth0 proto kernel scope link", "meth0"));
        assert!(!monitor_line_mentions("2: eth0: <BROADCAST,UP> mtu 1500", "meth0"));
        assert!(!monitor_line_mentions("2: meth01: <UP>", "meth0"));
    }

    #[test]
    fn ip_command_lines() {
        assert_eq!(ip_argv(&IpOp::SetUp("eth0", true)).join(" "), "ip link set dev eth0 up");
        assert_eq!(ip_argv(&IpOp::AddAddr("eth0", "10.0.0.1/8")).join(" "), "ip addr add 10.0.0.1/8 dev eth0");
        assert_eq!(ip_argv(&IpOp::DelAddr("eth0", "10.0.0.1/8")).join(" "), "ip addr del 10.0.0.1/8 dev eth0");
        assert_eq!(
            ip_argv(&IpOp::ReplaceDefault("eth0", "10.0.0.254")).join(" "),
            "ip route replace default via 10.0.0.254 dev eth0 proto static"
        );
        assert_eq!(ip_argv(&IpOp::Show("eth0")).join(" "), "ip -json addr show dev eth0");
    }

    #[test]
    fn unit_file_lists_the_params() {
        let host = Machine::sandbox("/nonexistent");
        let values = ParamMap::from([
            ("state".to_string(), Value::str("up")),
            ("addrs".to_string(), Value::list(vec![Value::str("192.168.42.1/24")])),
            ("gateway".to_string(), Value::str("192.168.42.254")),
            ("ip_forward".to_string(), Value::Bool(true)),
        ]);
        let net = Net::build(&host, "meth0", &values).unwrap();
        assert_eq!(
            net.unit_contents(),
            "[Match]\nName=meth0\n\n[Network]\nAddress=192.168.42.1/24\nGateway=192.168.42.254\nIPForward=yes\n"
        );
        assert_eq!(net.unit_path, unit_path(Path::new("/nonexistent"), "meth0"));
    }

    #[test]
    fn validation_names_the_field() {
        let host = Machine::sandbox("/nonexistent");
        let build = |k: &str, v: Value| Net::build(&host, "eth0", &ParamMap::from([(k.to_string(), v)])).unwrap();
        let err =
            Net::build(&host, "eth0", &ParamMap::from([("state".to_string(), Value::str("sideways"))])).err().unwrap();
        assert!(err.to_string().contains("net[eth0]: field `state`: `sideways` is not one of"), "{err}");
        let err = build("addrs", Value::list(vec![Value::str("10.0.0.1")])).validate().unwrap_err();
        assert!(err.message.contains("field `addrs`: entry 0"), "{err}");
        let err = build("gateway", Value::str("nope")).validate().unwrap_err();
        assert!(err.message.contains("field `gateway`"), "{err}");
        assert!(build("state", Value::str("up")).validate().is_ok());
        let long = Net::build(&host, "a-very-long-interface", &ParamMap::new()).unwrap();
        assert!(long.validate().is_err());
    }
}
