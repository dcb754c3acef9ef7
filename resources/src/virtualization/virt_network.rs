//! `virt:network`, `virt:network:host` and `virt:network:range`: a libvirt network named
//! like the resource and the static DHCP hosts and dynamic DHCP ranges grouped into it,
//! through the host's [`Networks`] backend (the real one drives `virsh net-*`;
//! [`FakeNetworks`] is the in-memory double).
//!
//! `state` is `up`, `down` or "" (leave alone); `transient => false` keeps the network
//! defined, `transient => true` undefined (a transient network that is `down` does not
//! exist); `startup` (`enabled`/`disabled`/"") is autostart. A missing network is defined
//! or created from the params: forward `mode` (only `nat`, as in mgmt), bridge `device`
//! (default `virbr0`), bridge `mac`, router `ip` in CIDR form, and the DHCP block of its
//! hosts and ranges. When those base fields drift the definition is rewritten from the
//! params and the network restarted (other elements of a definition, such as `<dns>`,
//! are not kept). DHCP hosts (by MAC) and ranges are reconciled one by one with
//! `net-update`, in the persistent config and in the live network, without a restart;
//! `purge_hosts` / `purge_ranges` remove entries no grouped resource declares.
//!
//! Grouping: tend has no general autogrouping, so [`groups`] does it for these kinds when
//! the graph is built (`graph.rs`): a host or range joins the `virt:network` its `network`
//! param names, or the only one in the graph when it names none (`Meta:autogroup => false`
//! opts out). A grouped member does nothing itself (the network does the work); an
//! ungrouped one fails validation.
//!
//! Watch: poll-free, from `virsh net-event --loop --event lifecycle` plus a file watch on
//! libvirt's directory of persistent network definitions (seeing `net-define` and
//! `net-update --config`). Live-only DHCP edits by others raise no event and are repaired
//! at the next check.

use lang::params::ParamMap;
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::Arc;
#[cfg(any(test, feature = "fakes"))]
use std::sync::Mutex;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use lang::value::Value;

use crate::contract::common::{Raw, res_error};
use crate::contract::kind::{Grouped, InGraph};
use crate::contract::params::BuildError;
use crate::contract::typed::{Fingerprint, Startup};
use crate::machine::Machine;
use crate::network::net::AdminState;
#[cfg(any(test, feature = "fakes"))]
use crate::util::events::broadcast_lines;
use crate::util::events::{Lines, follow};
#[cfg(any(test, feature = "fakes"))]
use crate::util::lock;
use crate::util::text::escape_markup;
use crate::util::watch::FileWatch;
use crate::virtualization::virt::{Auth, Conn, parse_colon_table, virsh_ok, virsh_query, virsh_stream, virsh_with_xml};

/// The bridge used when `device` is empty.
pub const DEFAULT_DEVICE: &str = "virbr0";

/// The forward mode used when `mode` is empty.
pub const DEFAULT_MODE: &str = "nat";

// ---------------------------------------------------------------------------------------
// Network definitions

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DhcpHost {
    pub mac: String,
    pub name: String,
    pub ip: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct DhcpRange {
    pub start: String,
    pub end: String,
}

/// One `<ip>` element. `netmask` is always the dotted form (computed from `prefix=`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NetIp {
    pub family: String,
    pub address: String,
    pub netmask: String,
    pub hosts: Vec<DhcpHost>,
    pub ranges: Vec<DhcpRange>,
}

impl NetIp {
    pub fn is_ipv4(&self) -> bool {
        (self.family.is_empty() || self.family == "ipv4") && self.address.parse::<Ipv4Addr>().is_ok()
    }
}

/// The parts of a libvirt network definition this kind manages.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NetDef {
    pub name: String,
    pub uuid: String,
    pub forward_mode: String,
    pub bridge: String,
    pub mac: String,
    pub ips: Vec<NetIp>,
}

/// A prefix length as a dotted netmask.
pub fn prefix_to_mask(prefix: u8) -> Ipv4Addr {
    let bits = if prefix == 0 { 0 } else { u32::MAX << (32 - u32::from(prefix.min(32))) };
    Ipv4Addr::from(bits)
}

pub fn parse_network_xml(xml: &str) -> Result<NetDef, ResError> {
    let doc = roxmltree::Document::parse(xml).map_err(|e| ResError::new(format!("bad network XML: {e}")))?;
    let root = doc.root_element();
    let child = |name: &str| root.children().find(|n| n.has_tag_name(name));
    let text = |name: &str| child(name).and_then(|n| n.text()).map(|t| t.trim().to_string()).unwrap_or_default();
    let attr = |name: &str, a: &str| child(name).and_then(|n| n.attribute(a)).unwrap_or_default().to_string();
    let mut def = NetDef {
        name: text("name"),
        uuid: text("uuid"),
        forward_mode: attr("forward", "mode"),
        bridge: attr("bridge", "name"),
        mac: attr("mac", "address"),
        ips: Vec::new(),
    };
    if child("forward").is_some() && def.forward_mode.is_empty() {
        def.forward_mode = "nat".into(); // libvirt's default for a bare <forward/>
    }
    for ip in root.children().filter(|n| n.has_tag_name("ip")) {
        let netmask = match (ip.attribute("netmask"), ip.attribute("prefix").and_then(|p| p.parse().ok())) {
            (Some(m), _) => m.to_string(),
            (None, Some(prefix)) if ip.attribute("family") != Some("ipv6") => prefix_to_mask(prefix).to_string(),
            _ => String::new(),
        };
        let mut entry = NetIp {
            family: ip.attribute("family").unwrap_or_default().to_string(),
            address: ip.attribute("address").unwrap_or_default().to_string(),
            netmask,
            ..NetIp::default()
        };
        if let Some(dhcp) = ip.children().find(|n| n.has_tag_name("dhcp")) {
            for n in dhcp.children().filter(|n| n.is_element()) {
                let a = |k: &str| n.attribute(k).unwrap_or_default().to_string();
                if n.has_tag_name("host") {
                    entry.hosts.push(DhcpHost { mac: a("mac").to_lowercase(), name: a("name"), ip: a("ip") });
                } else if n.has_tag_name("range") {
                    entry.ranges.push(DhcpRange { start: a("start"), end: a("end") });
                }
            }
        }
        def.ips.push(entry);
    }
    Ok(def)
}

pub fn host_xml(h: &DhcpHost) -> String {
    let e = escape_markup;
    let name = if h.name.is_empty() { String::new() } else { format!(" name='{}'", e(&h.name)) };
    format!("<host mac='{}'{name} ip='{}'/>", e(&h.mac), e(&h.ip))
}

pub fn range_xml(r: &DhcpRange) -> String {
    format!("<range start='{}' end='{}'/>", escape_markup(&r.start), escape_markup(&r.end))
}

pub fn render_network_xml(def: &NetDef) -> String {
    let e = escape_markup;
    let mut x = format!("<network>\n  <name>{}</name>\n", e(&def.name));
    if !def.uuid.is_empty() {
        x += &format!("  <uuid>{}</uuid>\n", e(&def.uuid));
    }
    if !def.forward_mode.is_empty() {
        x += &format!("  <forward mode='{}'/>\n", e(&def.forward_mode));
    }
    if !def.bridge.is_empty() {
        x += &format!("  <bridge name='{}'/>\n", e(&def.bridge));
    }
    if !def.mac.is_empty() {
        x += &format!("  <mac address='{}'/>\n", e(&def.mac));
    }
    for ip in &def.ips {
        let family = if ip.family.is_empty() { String::new() } else { format!(" family='{}'", e(&ip.family)) };
        let mask = if ip.netmask.is_empty() { String::new() } else { format!(" netmask='{}'", e(&ip.netmask)) };
        x += &format!("  <ip{family} address='{}'{mask}", e(&ip.address));
        if ip.hosts.is_empty() && ip.ranges.is_empty() {
            x += "/>\n";
            continue;
        }
        x += ">\n    <dhcp>\n";
        for r in &ip.ranges {
            x += &format!("      {}\n", range_xml(r));
        }
        for h in &ip.hosts {
            x += &format!("      {}\n", host_xml(h));
        }
        x += "    </dhcp>\n  </ip>\n";
    }
    x += "</network>\n";
    x
}

// ---------------------------------------------------------------------------------------
// The backend

/// What `virsh net-info` says about a network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetInfo {
    pub active: bool,
    pub persistent: bool,
    pub autostart: bool,
}

pub fn parse_net_info(text: &str) -> Result<NetInfo, ResError> {
    let t = parse_colon_table(text);
    let yes = |k: &str| match t.get(k).map(String::as_str) {
        Some("yes") => Ok(true),
        Some("no") => Ok(false),
        _ => Err(ResError::new(format!("net-info: no `{k}:` line"))),
    };
    Ok(NetInfo { active: yes("Active")?, persistent: yes("Persistent")?, autostart: yes("Autostart")? })
}

/// `net-update` commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateCmd {
    AddLast,
    Modify,
    Delete,
}

/// `net-update` sections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    DhcpHost,
    DhcpRange,
}

/// One `net-update` call: what, where (index of the `<ip>` element) and on which view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update {
    pub cmd: UpdateCmd,
    pub section: Section,
    pub parent_index: usize,
    pub xml: String,
    /// The live network (`--live`) or the persistent config (`--config`).
    pub live: bool,
}

/// The arguments of `virsh net-update` for `u` on network `name`.
pub fn update_args(name: &str, u: &Update) -> Vec<String> {
    let cmd = match u.cmd {
        UpdateCmd::AddLast => "add-last",
        UpdateCmd::Modify => "modify",
        UpdateCmd::Delete => "delete",
    };
    let section = match u.section {
        Section::DhcpHost => "ip-dhcp-host",
        Section::DhcpRange => "ip-dhcp-range",
    };
    let scope = if u.live { "--live" } else { "--config" };
    ["net-update", name, cmd, section, &u.xml, "--parent-index", &u.parent_index.to_string(), scope]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// libvirt networks, by name.
#[async_trait]
pub trait Networks: Send + Sync {
    async fn info(&self, conn: &Conn, name: &str) -> Result<Option<NetInfo>, ResError>;
    /// The definition: persistent config when `inactive`, else the live one.
    async fn xml(&self, conn: &Conn, name: &str, inactive: bool) -> Result<String, ResError>;
    async fn define(&self, conn: &Conn, xml: &str) -> Result<(), ResError>;
    /// Creates and starts a transient network.
    async fn create(&self, conn: &Conn, xml: &str) -> Result<(), ResError>;
    async fn start(&self, conn: &Conn, name: &str) -> Result<(), ResError>;
    async fn destroy(&self, conn: &Conn, name: &str) -> Result<(), ResError>;
    async fn undefine(&self, conn: &Conn, name: &str) -> Result<(), ResError>;
    async fn set_autostart(&self, conn: &Conn, name: &str, on: bool) -> Result<(), ResError>;
    async fn update(&self, conn: &Conn, name: &str, update: &Update) -> Result<(), ResError>;
    /// Network lifecycle events, one line each in `virsh net-event` format:
    /// `event 'lifecycle' for network 'NAME': Started`.
    fn events(&self, conn: &Conn) -> Result<Lines, ResError>;
    /// The directory of persistent definitions to watch, when there is one.
    fn config_dir(&self, uri: &str) -> Option<PathBuf>;
}

/// libvirt networks through `virsh`.
pub struct VirshNetworks;

const NO_NETWORK: &[&str] = &["Network not found", "failed to get network"];

/// Where libvirt keeps persistent network definitions for a qemu URI.
pub fn qemu_network_dir(uri: &str, home: Option<&str>, root: bool) -> Option<PathBuf> {
    let system = PathBuf::from("/etc/libvirt/qemu/networks");
    let session = home.map(|h| PathBuf::from(h).join(".config/libvirt/qemu/networks"));
    match uri {
        "" if root => Some(system),
        "" => session,
        u if u.starts_with("qemu") && u.ends_with("/system") => Some(system),
        u if u.starts_with("qemu") && u.ends_with("/session") => session,
        _ => None,
    }
}

#[async_trait]
impl Networks for VirshNetworks {
    async fn info(&self, conn: &Conn, name: &str) -> Result<Option<NetInfo>, ResError> {
        match virsh_query(conn, &["net-info", name], NO_NETWORK).await? {
            Some(text) => parse_net_info(&text).map(Some),
            None => Ok(None),
        }
    }
    async fn xml(&self, conn: &Conn, name: &str, inactive: bool) -> Result<String, ResError> {
        let args: &[&str] = if inactive { &["net-dumpxml", "--inactive", name] } else { &["net-dumpxml", name] };
        virsh_query(conn, args, &[]).await?.ok_or_else(|| ResError::new(format!("no network {name}")))
    }
    async fn define(&self, conn: &Conn, xml: &str) -> Result<(), ResError> {
        virsh_with_xml(conn, &["net-define"], xml, &[]).await
    }
    async fn create(&self, conn: &Conn, xml: &str) -> Result<(), ResError> {
        virsh_with_xml(conn, &["net-create"], xml, &[]).await
    }
    async fn start(&self, conn: &Conn, name: &str) -> Result<(), ResError> {
        virsh_ok(conn, &["net-start", name]).await
    }
    async fn destroy(&self, conn: &Conn, name: &str) -> Result<(), ResError> {
        virsh_ok(conn, &["net-destroy", name]).await
    }
    async fn undefine(&self, conn: &Conn, name: &str) -> Result<(), ResError> {
        virsh_ok(conn, &["net-undefine", name]).await
    }
    async fn set_autostart(&self, conn: &Conn, name: &str, on: bool) -> Result<(), ResError> {
        let args: &[&str] = if on { &["net-autostart", name] } else { &["net-autostart", "--disable", name] };
        virsh_ok(conn, args).await
    }
    async fn update(&self, conn: &Conn, name: &str, update: &Update) -> Result<(), ResError> {
        let args = update_args(name, update);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        virsh_ok(conn, &refs).await
    }
    fn events(&self, conn: &Conn) -> Result<Lines, ResError> {
        virsh_stream(conn, &["net-event", "--loop", "--event", "lifecycle"])
    }
    fn config_dir(&self, uri: &str) -> Option<PathBuf> {
        qemu_network_dir(uri, std::env::var("HOME").ok().as_deref(), nix::unistd::geteuid().is_root())
    }
}

/// The network name in a `virsh net-event` line.
pub fn event_network(line: &str) -> Option<&str> {
    let rest = line.split_once(" for network '")?.1;
    rest.rsplit_once("':").map(|(name, _)| name).or_else(|| rest.strip_suffix('\''))
}

#[derive(Clone, Debug)]
#[cfg(any(test, feature = "fakes"))]
struct FakeNet {
    persistent: bool,
    active: bool,
    autostart: bool,
    config: NetDef,
    live: Option<NetDef>,
}

/// In-memory libvirt networks (the URI is ignored): definitions are parsed and rendered
/// with the same code as the real ones, `net-update` edits them, every mutating call is
/// recorded and lifecycle changes emit event lines in virsh's format.
#[cfg(any(test, feature = "fakes"))]
pub struct FakeNetworks {
    nets: Mutex<BTreeMap<String, FakeNet>>,
    calls: Mutex<Vec<String>>,
    events: tokio::sync::broadcast::Sender<String>,
}

#[cfg(any(test, feature = "fakes"))]
impl Default for FakeNetworks {
    fn default() -> Self {
        FakeNetworks { nets: Mutex::default(), calls: Mutex::default(), events: tokio::sync::broadcast::channel(256).0 }
    }
}

#[cfg(any(test, feature = "fakes"))]
impl FakeNetworks {
    pub fn calls(&self) -> Vec<String> {
        lock(&self.calls).clone()
    }

    pub fn info_of(&self, name: &str) -> Option<NetInfo> {
        lock(&self.nets).get(name).map(|n| NetInfo {
            active: n.active,
            persistent: n.persistent,
            autostart: n.autostart,
        })
    }

    /// The persistent config (`live == false`) or the live definition.
    pub fn def(&self, name: &str, live: bool) -> Option<NetDef> {
        let nets = lock(&self.nets);
        let n = nets.get(name)?;
        if live { n.live.clone() } else { n.persistent.then(|| n.config.clone()) }
    }

    /// Someone else edits a view of the network (for drift tests).
    pub fn tamper(&self, name: &str, live: bool, edit: impl FnOnce(&mut NetDef)) {
        if let Some(n) = lock(&self.nets).get_mut(name) {
            if live {
                if let Some(l) = n.live.as_mut() {
                    edit(l);
                }
            } else {
                edit(&mut n.config);
            }
        }
    }

    /// Someone else stops the network.
    pub fn stop_behind_our_back(&self, name: &str) {
        let mut nets = lock(&self.nets);
        if let Some(n) = nets.get_mut(name) {
            n.active = false;
            n.live = None;
            if !n.persistent {
                nets.remove(name);
            }
        }
        self.emit(name, "Stopped");
    }

    fn emit(&self, name: &str, what: &str) {
        let _nobody_listening = self.events.send(format!("event 'lifecycle' for network '{name}': {what}"));
    }

    fn record(&self, call: String) {
        lock(&self.calls).push(call);
    }

    fn with<T>(&self, name: &str, f: impl FnOnce(&mut FakeNet) -> Result<T, ResError>) -> Result<T, ResError> {
        let mut nets = lock(&self.nets);
        let n = nets.get_mut(name).ok_or_else(|| ResError::new(format!("Network not found: '{name}'")))?;
        f(n)
    }
}

#[cfg(any(test, feature = "fakes"))]
fn fake_apply(def: &mut NetDef, u: &Update) -> Result<(), ResError> {
    let ip = def.ips.get_mut(u.parent_index).ok_or_else(|| ResError::new("no <ip> element at the parent index"))?;
    let doc = roxmltree::Document::parse(&u.xml).map_err(|e| ResError::new(format!("bad XML: {e}")))?;
    let el = doc.root_element();
    let a = |k: &str| el.attribute(k).unwrap_or_default().to_string();
    match u.section {
        Section::DhcpHost => {
            let host = DhcpHost { mac: a("mac").to_lowercase(), name: a("name"), ip: a("ip") };
            let pos = ip.hosts.iter().position(|h| h.mac == host.mac);
            match (u.cmd, pos) {
                (UpdateCmd::AddLast, None) => ip.hosts.push(host),
                (UpdateCmd::Modify, Some(i)) => ip.hosts[i] = host,
                (UpdateCmd::Delete, Some(i)) => drop(ip.hosts.remove(i)),
                (UpdateCmd::AddLast, Some(_)) => return Err(ResError::new("there is an existing dhcp host entry")),
                _ => return Err(ResError::new("couldn't locate a matching dhcp host entry")),
            }
        }
        Section::DhcpRange => {
            let range = DhcpRange { start: a("start"), end: a("end") };
            let pos = ip.ranges.iter().position(|r| *r == range);
            match (u.cmd, pos) {
                (UpdateCmd::AddLast, None) => ip.ranges.push(range),
                (UpdateCmd::Delete, Some(i)) => drop(ip.ranges.remove(i)),
                (UpdateCmd::AddLast, Some(_)) => return Err(ResError::new("there is an existing dhcp range entry")),
                _ => return Err(ResError::new("couldn't locate a matching dhcp range entry")),
            }
        }
    }
    Ok(())
}

#[async_trait]
#[cfg(any(test, feature = "fakes"))]
impl Networks for FakeNetworks {
    async fn info(&self, _: &Conn, name: &str) -> Result<Option<NetInfo>, ResError> {
        Ok(self.info_of(name))
    }
    async fn xml(&self, _: &Conn, name: &str, inactive: bool) -> Result<String, ResError> {
        self.with(name, |n| {
            let def = match (&n.live, inactive && n.persistent) {
                (Some(live), false) => live,
                _ => &n.config,
            };
            Ok(render_network_xml(def))
        })
    }
    async fn define(&self, _: &Conn, xml: &str) -> Result<(), ResError> {
        let mut def = parse_network_xml(xml)?;
        self.record(format!("net-define {}", def.name));
        let name = def.name.clone();
        let mut nets = lock(&self.nets);
        match nets.get_mut(&name) {
            Some(n) => {
                if !def.uuid.is_empty() && def.uuid != n.config.uuid {
                    return Err(ResError::new(format!("network '{name}' already exists with uuid {}", n.config.uuid)));
                }
                def.uuid = n.config.uuid.clone();
                n.persistent = true;
                n.config = def;
            }
            None => {
                if def.uuid.is_empty() {
                    def.uuid = format!("00000000-0000-4000-9000-{:012x}", nets.len() + 1);
                }
                nets.insert(
                    name.clone(),
                    FakeNet { persistent: true, active: false, autostart: false, config: def, live: None },
                );
            }
        }
        drop(nets);
        self.emit(&name, "Defined");
        Ok(())
    }
    async fn create(&self, _: &Conn, xml: &str) -> Result<(), ResError> {
        let mut def = parse_network_xml(xml)?;
        self.record(format!("net-create {}", def.name));
        let name = def.name.clone();
        let mut nets = lock(&self.nets);
        if nets.contains_key(&name) {
            return Err(ResError::new(format!("network '{name}' already exists")));
        }
        if def.uuid.is_empty() {
            def.uuid = format!("00000000-0000-4000-a000-{:012x}", nets.len() + 1);
        }
        nets.insert(
            name.clone(),
            FakeNet { persistent: false, active: true, autostart: false, config: def.clone(), live: Some(def) },
        );
        drop(nets);
        self.emit(&name, "Started");
        Ok(())
    }
    async fn start(&self, _: &Conn, name: &str) -> Result<(), ResError> {
        self.record(format!("net-start {name}"));
        self.with(name, |n| {
            if n.active {
                return Err(ResError::new("network is already active"));
            }
            n.active = true;
            n.live = Some(n.config.clone());
            Ok(())
        })?;
        self.emit(name, "Started");
        Ok(())
    }
    async fn destroy(&self, _: &Conn, name: &str) -> Result<(), ResError> {
        self.record(format!("net-destroy {name}"));
        self.with(name, |n| if n.active { Ok(()) } else { Err(ResError::new("network is not active")) })?;
        self.stop_behind_our_back(name);
        Ok(())
    }
    async fn undefine(&self, _: &Conn, name: &str) -> Result<(), ResError> {
        self.record(format!("net-undefine {name}"));
        let gone = self.with(name, |n| {
            n.persistent = false;
            n.autostart = false;
            Ok(!n.active)
        })?;
        if gone {
            lock(&self.nets).remove(name);
        }
        self.emit(name, "Undefined");
        Ok(())
    }
    async fn set_autostart(&self, _: &Conn, name: &str, on: bool) -> Result<(), ResError> {
        self.record(format!("net-autostart {name} {on}"));
        self.with(name, |n| {
            if !n.persistent {
                return Err(ResError::new("cannot set autostart for transient network"));
            }
            n.autostart = on;
            Ok(())
        })
    }
    async fn update(&self, _: &Conn, name: &str, u: &Update) -> Result<(), ResError> {
        self.record(update_args(name, u).join(" "));
        self.with(name, |n| {
            if u.live {
                fake_apply(n.live.as_mut().ok_or_else(|| ResError::new("network is not running"))?, u)
            } else if n.persistent {
                fake_apply(&mut n.config, u)
            } else {
                Err(ResError::new("cannot change the persistent config of a transient network"))
            }
        })
    }
    fn events(&self, _: &Conn) -> Result<Lines, ResError> {
        Ok(broadcast_lines(&self.events))
    }
    fn config_dir(&self, _: &str) -> Option<PathBuf> {
        None
    }
}

// ---------------------------------------------------------------------------------------
// Addresses

/// `a.b.c.d/n`.
pub fn parse_cidr(text: &str) -> Result<(Ipv4Addr, u8), String> {
    match crate::util::cidr::parse(text)? {
        (std::net::IpAddr::V4(addr), prefix) => Ok((addr, prefix)),
        (std::net::IpAddr::V6(_), _) => Err(format!("`{text}` is not an IPv4 address in CIDR form (a.b.c.d/n)")),
    }
}

fn mask_bits(prefix: u8) -> u32 {
    u32::from(prefix_to_mask(prefix))
}

/// Whether `ip` is a usable host address of the subnet `(net, prefix)`.
pub fn usable(ip: Ipv4Addr, net: Ipv4Addr, prefix: u8) -> Result<(), String> {
    let m = mask_bits(prefix);
    let (ip_bits, net_bits) = (u32::from(ip), u32::from(net) & m);
    if ip_bits & m != net_bits {
        return Err(format!("{ip} is outside {}/{prefix}", Ipv4Addr::from(net_bits)));
    }
    if prefix < 31 && (ip_bits == net_bits || ip_bits == net_bits | !m) {
        return Err(format!("{ip} is the network or broadcast address of {}/{prefix}", Ipv4Addr::from(net_bits)));
    }
    Ok(())
}

/// Lower-case, colon-separated, six octets.
pub fn canonical_mac(mac: &str) -> Result<(), String> {
    let parts: Vec<&str> = mac.split(':').collect();
    let ok = parts.len() == 6
        && parts.iter().all(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)));
    if ok {
        return Ok(());
    }
    let lower = mac.to_lowercase();
    if lower != mac && canonical_mac(&lower).is_ok() {
        return Err(format!("the mac address is not in the canonical format of: {lower}"));
    }
    Err(format!("`{mac}` is not a mac address like 52:54:00:12:34:56"))
}

fn valid_uuid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    let hex = |s: &str| s.chars().all(|c| c.is_ascii_hexdigit());
    (groups.iter().map(|g| g.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12] && groups.iter().all(|g| hex(g)))
        || (text.len() == 32 && hex(text))
}

// ---------------------------------------------------------------------------------------
// Grouping

/// One resource as grouping sees it: kind, name, params, `Meta:autogroup`.
pub use crate::contract::kind::GroupRes;

pub fn is_member_kind(kind: &str) -> bool {
    matches!(kind, "virt:network:host" | "virt:network:range")
}

/// Which network each host and range groups into: member index -> network index.
pub fn groups(res: &[GroupRes<'_>]) -> BTreeMap<usize, usize> {
    let networks: Vec<usize> = (0..res.len()).filter(|i| res[*i].0 == "virt:network" && res[*i].3).collect();
    let mut out = BTreeMap::new();
    for (i, (kind, _, params, autogroup)) in res.iter().enumerate() {
        if !is_member_kind(kind) || !autogroup {
            continue;
        }
        let wanted = params.get("network").and_then(Value::as_str).unwrap_or_default();
        let target = if wanted.is_empty() {
            (networks.len() == 1).then(|| networks[0])
        } else {
            networks.iter().copied().find(|n| res[*n].1 == wanted)
        };
        if let Some(n) = target {
            out.insert(i, n);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Members

/// A declared DHCP host: its resource name and entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostSpec {
    pub res: String,
    pub mac: String,
    pub hostname: String,
    /// CIDR, as written.
    pub ip: String,
}

/// A declared DHCP range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeSpec {
    pub res: String,
    pub start: String,
    pub end: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemberSpec {
    Host(HostSpec),
    Range(RangeSpec),
}

crate::fingerprint_fields!(HostSpec { res, mac, hostname, ip });
crate::fingerprint_fields!(RangeSpec { res, start, end });

impl crate::contract::typed::Fingerprint for MemberSpec {
    fn fingerprint_into(&self, out: &mut String) {
        match self {
            MemberSpec::Host(h) => {
                out.push('h');
                h.fingerprint_into(out);
            }
            MemberSpec::Range(r) => {
                out.push('r');
                r.fingerprint_into(out);
            }
        }
    }
}

impl MemberSpec {
    pub fn decode(kind: &'static str, name: &str, values: &ParamMap) -> Result<MemberSpec, BuildError> {
        let raw = Raw::new(kind, name, values);
        Ok(if kind == "virt:network:host" {
            let p = raw.decode(HostParams::decode)?;
            MemberSpec::Host(HostSpec { res: name.to_string(), mac: p.mac, hostname: p.hostname, ip: p.ip })
        } else {
            let p = raw.decode(RangeParams::decode)?;
            MemberSpec::Range(RangeSpec { res: name.to_string(), start: p.start, end: p.end })
        })
    }

    fn key(&self) -> String {
        match self {
            MemberSpec::Host(h) => format!("virt:network:host[{}]", h.res),
            MemberSpec::Range(r) => format!("virt:network:range[{}]", r.res),
        }
    }

    /// Checks that need no network.
    fn validate(&self) -> Result<(), (String, String)> {
        match self {
            MemberSpec::Host(h) => {
                canonical_mac(&h.mac).map_err(|m| ("mac".to_string(), m))?;
                parse_cidr(&h.ip).map_err(|m| ("ip".to_string(), m))?;
            }
            MemberSpec::Range(r) => {
                let start: Ipv4Addr = r
                    .start
                    .parse()
                    .map_err(|_| ("start".to_string(), format!("`{}` is not an IPv4 address", r.start)))?;
                let end: Ipv4Addr =
                    r.end.parse().map_err(|_| ("end".to_string(), format!("`{}` is not an IPv4 address", r.end)))?;
                if start > end {
                    return Err((
                        "start".into(),
                        format!("the start ({start}) must not be greater than the end ({end})"),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// `virt:network:host` / `virt:network:range`: declarations the network they group into
/// puts into effect.
pub struct NetworkMember {
    kind: &'static str,
    name: String,
    spec: MemberSpec,
    grouped_into: Option<String>,
}

impl NetworkMember {
    pub fn build(kind: &str, name: &str, values: &ParamMap) -> Result<NetworkMember, BuildError> {
        let kind: &'static str = if kind == "virt:network:host" { "virt:network:host" } else { "virt:network:range" };
        Ok(NetworkMember {
            kind,
            name: name.to_string(),
            spec: MemberSpec::decode(kind, name, values)?,
            grouped_into: None,
        })
    }

    /// Marks this member as grouped into the network `network`.
    pub fn grouped(mut self, network: &str) -> NetworkMember {
        self.grouped_into = Some(network.to_string());
        self
    }
}

#[async_trait]
impl Resource for NetworkMember {
    fn validate(&self) -> Result<(), ResError> {
        let err = |field: Option<String>, message: String| {
            res_error(BuildError { kind: self.kind.into(), name: self.name.clone(), field, message })
        };
        self.spec.validate().map_err(|(f, m)| err(Some(f), m))?;
        if self.grouped_into.is_none() {
            return Err(err(
                Some("network".into()),
                "there is no virt:network resource in the graph to group into (name one with `network`, or declare exactly one)"
                    .into(),
            ));
        }
        Ok(())
    }

    async fn check_apply(&mut self, _: &mut ApplyCtx, _: bool) -> Result<bool, ResError> {
        match &self.grouped_into {
            // The network reconciles its grouped members.
            Some(_) => Ok(true),
            None => Err(ResError::new(format!("{}: not grouped into any virt:network", self.spec.key()))),
        }
    }

    fn fingerprint(&self) -> String {
        let mut out = self.spec.fingerprint();
        self.grouped_into.fingerprint_into(&mut out);
        out
    }
}

// ---------------------------------------------------------------------------------------
// The network resource

crate::params! {
    /// `virt:network`'s params.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct NetworkParams {
        pub uri: String,
        pub state: AdminState,
        pub transient: bool,
        pub startup: Startup,
        pub uuid: String,
        pub device: String,
        pub mode: String,
        pub mac: String,
        pub ip: String,
        pub purge_hosts: bool,
        pub purge_ranges: bool,
        pub auth: Option<Auth> => crate::virtualization::virt::read_auth,
    }
}

crate::params! {
    /// `virt:network:host`'s params, as written (grouped into its network's).
    pub struct HostParams {
        /// The network it belongs to (read by the grouping).
        pub network: String,
        /// Defaults to the name.
        pub hostname: String => |p, f| Ok(p.opt_str(f)?.filter(|h| !h.is_empty()).unwrap_or_else(|| p.name.to_string())),
        pub mac: String,
        pub ip: String,
    }
}

crate::params! {
    /// `virt:network:range`'s params, as written (grouped into its network's).
    pub struct RangeParams {
        /// The network it belongs to (read by the grouping).
        pub network: String,
        pub start: String,
        pub end: String,
    }
}

impl NetworkParams {
    fn device(&self) -> &str {
        if self.device.is_empty() { DEFAULT_DEVICE } else { &self.device }
    }

    fn mode(&self) -> &str {
        if self.mode.is_empty() { DEFAULT_MODE } else { &self.mode }
    }

    /// Transient and down: the network must not exist, nothing else matters.
    fn teardown(&self) -> bool {
        self.transient && self.state == AdminState::Down
    }

    fn conn(&self) -> Conn {
        Conn { uri: self.uri.clone(), auth: self.auth.clone() }
    }
}

pub struct VirtNetwork {
    raw: Raw,
    params: NetworkParams,
    members: Vec<MemberSpec>,
    networks: Arc<dyn Networks>,
}

impl VirtNetwork {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<VirtNetwork, BuildError> {
        let (raw, params) = Raw::decoded("virt:network", name, values, NetworkParams::decode)?;
        Ok(VirtNetwork { raw, params, members: Vec::new(), networks: host.networks.clone() })
    }

    /// Groups hosts and ranges into this network.
    pub fn with_members(mut self, members: Vec<MemberSpec>) -> VirtNetwork {
        self.members = members;
        self
    }

    fn key(&self) -> String {
        format!("virt:network[{}]", self.raw.name)
    }

    /// The router address and prefix (valid after `validate`).
    fn cidr(&self) -> Result<(Ipv4Addr, u8), ResError> {
        parse_cidr(&self.params.ip).map_err(|e| ResError::new(format!("{}: field `ip`: {e}", self.key())))
    }

    fn desired_hosts(&self) -> Vec<DhcpHost> {
        self.members
            .iter()
            .filter_map(|m| match m {
                MemberSpec::Host(h) => Some(DhcpHost {
                    mac: h.mac.clone(),
                    name: h.hostname.clone(),
                    ip: h.ip.split('/').next().unwrap_or_default().to_string(),
                }),
                MemberSpec::Range(_) => None,
            })
            .collect()
    }

    fn desired_ranges(&self) -> Vec<DhcpRange> {
        self.members
            .iter()
            .filter_map(|m| match m {
                MemberSpec::Range(r) => Some(DhcpRange { start: r.start.clone(), end: r.end.clone() }),
                MemberSpec::Host(_) => None,
            })
            .collect()
    }

    /// The definition of a new network: base fields plus every grouped host and range.
    fn fresh_def(&self) -> Result<NetDef, ResError> {
        let (addr, prefix) = self.cidr()?;
        let p = &self.params;
        Ok(NetDef {
            name: self.raw.name.clone(),
            uuid: p.uuid.clone(),
            forward_mode: p.mode().to_string(),
            bridge: p.device().to_string(),
            mac: p.mac.clone(),
            ips: vec![NetIp {
                family: String::new(),
                address: addr.to_string(),
                netmask: prefix_to_mask(prefix).to_string(),
                hosts: self.desired_hosts(),
                ranges: self.desired_ranges(),
            }],
        })
    }

    /// The `<ip>` element this network owns: the one with the wanted address, else the
    /// only IPv4 one; `None` when there is none.
    fn ip_index(&self, def: &NetDef) -> Result<Option<usize>, ResError> {
        let (addr, _) = self.cidr()?;
        if let Some(i) = def.ips.iter().position(|ip| ip.address == addr.to_string()) {
            return Ok(Some(i));
        }
        let v4: Vec<usize> = (0..def.ips.len()).filter(|i| def.ips[*i].is_ipv4()).collect();
        match v4[..] {
            [] => Ok(None),
            [i] => Ok(Some(i)),
            _ => Err(ResError::new(format!(
                "{}: several IPv4 entries exist and none has the address {addr}",
                self.key()
            ))),
        }
    }

    fn base_matches(&self, def: &NetDef, idx: Option<usize>) -> Result<bool, ResError> {
        let (addr, prefix) = self.cidr()?;
        let p = &self.params;
        let Some(ip) = idx.and_then(|i| def.ips.get(i)) else { return Ok(false) };
        Ok((p.uuid.is_empty() || def.uuid == p.uuid)
            && def.forward_mode == p.mode()
            && def.bridge == p.device()
            && def.mac == p.mac
            && ip.address == addr.to_string()
            && ip.netmask == prefix_to_mask(prefix).to_string())
    }

    /// `def` with the base fields set from the params (DHCP entries kept).
    fn rebased(&self, def: &NetDef, idx: Option<usize>) -> Result<NetDef, ResError> {
        let (addr, prefix) = self.cidr()?;
        let p = &self.params;
        let mut new = def.clone();
        if !p.uuid.is_empty() {
            new.uuid = p.uuid.clone();
        }
        new.forward_mode = p.mode().to_string();
        new.bridge = p.device().to_string();
        new.mac = p.mac.clone();
        let i = match idx {
            Some(i) => i,
            None => {
                new.ips.push(NetIp::default());
                new.ips.len() - 1
            }
        };
        new.ips[i].address = addr.to_string();
        new.ips[i].netmask = prefix_to_mask(prefix).to_string();
        Ok(new)
    }

    /// Reconciles the DHCP hosts and ranges of one view (live or persistent config).
    async fn reconcile_dhcp(&self, ctx: &mut ApplyCtx, apply: bool, live: bool) -> Result<bool, ResError> {
        let (conn, name, key) = (self.params.conn(), &self.raw.name, self.key());
        let def = parse_network_xml(&self.networks.xml(&conn, name, !live).await?)?;
        let idx = self.ip_index(&def)?;
        let current_hosts = idx.map(|i| def.ips[i].hosts.clone()).unwrap_or_default();
        let current_ranges = idx.map(|i| def.ips[i].ranges.clone()).unwrap_or_default();
        let view = if live { "live" } else { "config" };
        let mut updates = Vec::new();
        let want_hosts = self.desired_hosts();
        for want in &want_hosts {
            match current_hosts.iter().find(|h| h.mac == want.mac) {
                Some(got) if got == want => {}
                Some(_) => updates.push((UpdateCmd::Modify, Section::DhcpHost, host_xml(want))),
                None => updates.push((UpdateCmd::AddLast, Section::DhcpHost, host_xml(want))),
            }
        }
        if self.params.purge_hosts {
            for got in current_hosts.iter().filter(|h| !want_hosts.iter().any(|w| w.mac == h.mac)) {
                updates.push((UpdateCmd::Delete, Section::DhcpHost, host_xml(got)));
            }
        }
        let want_ranges: BTreeSet<DhcpRange> = self.desired_ranges().into_iter().collect();
        for want in want_ranges.iter().filter(|r| !current_ranges.contains(r)) {
            updates.push((UpdateCmd::AddLast, Section::DhcpRange, range_xml(want)));
        }
        if self.params.purge_ranges {
            for got in current_ranges.iter().filter(|r| !want_ranges.contains(r)) {
                updates.push((UpdateCmd::Delete, Section::DhcpRange, range_xml(got)));
            }
        }
        if updates.is_empty() {
            return Ok(true);
        }
        let Some(parent_index) = idx else {
            return Err(ResError::new(format!("{key}: the {view} definition has no IPv4 entry for DHCP")));
        };
        for (cmd, section, xml) in updates {
            let update = Update { cmd, section, parent_index, xml, live };
            if apply {
                self.networks.update(&conn, name, &update).await?;
            } else {
                ctx.report(format!("{key}: would {:?} {} ({view})", update.cmd, update.xml));
            }
        }
        Ok(false)
    }
}

#[async_trait]
impl Resource for VirtNetwork {
    fn validate(&self) -> Result<(), ResError> {
        let p = &self.params;
        let err = |field: Option<&str>, message: String| self.raw.invalid(field, message);
        if p.transient && p.startup != Startup::Unset {
            return Err(err(Some("startup"), "a transient network cannot start on boot".into()));
        }
        if !p.uuid.is_empty() && !valid_uuid(&p.uuid) {
            return Err(err(Some("uuid"), format!("`{}` is not a UUID", p.uuid)));
        }
        if p.mode() != "nat" {
            return Err(err(Some("mode"), "must be `nat` (other forward modes are not supported)".into()));
        }
        if p.teardown() {
            return Ok(());
        }
        if p.mac.is_empty() {
            return Err(err(Some("mac"), "is required".into()));
        }
        canonical_mac(&p.mac).map_err(|m| err(Some("mac"), m))?;
        if p.ip.is_empty() {
            return Err(err(Some("ip"), "is required".into()));
        }
        let (addr, prefix) = parse_cidr(&p.ip).map_err(|m| err(Some("ip"), m))?;
        usable(addr, addr, prefix).map_err(|m| err(Some("ip"), m))?;

        // The grouped members: valid, inside the subnet, no duplicates, no overlaps.
        let mut macs: BTreeMap<String, String> = BTreeMap::new();
        let mut ips: BTreeMap<Ipv4Addr, String> = BTreeMap::from([(addr, self.key())]);
        for m in &self.members {
            if let Err((field, message)) = m.validate() {
                return Err(err(None, format!("grouped {}: field `{field}`: {message}", m.key())));
            }
            if let MemberSpec::Host(h) = m {
                let (ip, host_prefix) = parse_cidr(&h.ip).map_err(|e| err(None, e))?;
                if host_prefix != prefix {
                    return Err(err(
                        None,
                        format!("{}: prefix /{host_prefix} differs from the network's /{prefix}", m.key()),
                    ));
                }
                usable(ip, addr, prefix).map_err(|e| err(None, format!("{}: {e}", m.key())))?;
                if let Some(other) = macs.insert(h.mac.clone(), m.key()) {
                    return Err(err(None, format!("{} and {other} both reserve mac {}", m.key(), h.mac)));
                }
                if let Some(other) = ips.insert(ip, m.key()) {
                    return Err(err(None, format!("{} and {other} both reserve ip {ip}", m.key())));
                }
            }
        }
        let mut ranges: Vec<(Ipv4Addr, Ipv4Addr, String)> = Vec::new();
        for m in &self.members {
            if let MemberSpec::Range(r) = m {
                let (start, end): (Ipv4Addr, Ipv4Addr) =
                    (r.start.parse().unwrap_or(addr), r.end.parse().unwrap_or(addr));
                for bound in [start, end] {
                    usable(bound, addr, prefix).map_err(|e| err(None, format!("{}: {e}", m.key())))?;
                }
                if let Some((ip, owner)) = ips.iter().find(|(ip, _)| (start..=end).contains(*ip)) {
                    return Err(err(None, format!("{} contains {ip}, reserved by {owner}", m.key())));
                }
                if let Some((_, _, other)) = ranges.iter().find(|(s, e, _)| start <= *e && *s <= end) {
                    return Err(err(None, format!("{} overlaps {other}", m.key())));
                }
                ranges.push((start, end, m.key()));
            }
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let (networks, conn, name) = (self.networks.clone(), self.params.conn(), self.raw.name.clone());
        let dir = networks.config_dir(&self.params.uri);
        Box::pin(async move {
            let events = follow(ctx.clone(), || networks.events(&conn), |line| event_network(line) == Some(&name));
            let files = async {
                let Some(dir) = dir else { return std::future::pending().await };
                let mut watch = FileWatch::new(vec![dir], false)?;
                loop {
                    watch.changed().await?;
                    ctx.event();
                }
            };
            tokio::select! {
                out = events => out,
                out = files => out,
            }
        })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let p = self.params.clone();
        let (conn, name, key) = (p.conn(), self.raw.name.clone(), self.key());
        let nets = self.networks.clone();
        let mut ok = true;
        let mut info = nets.info(&conn, &name).await?;

        // Take down and undefine what must go.
        if let Some(mut i) = info {
            if i.active && p.state == AdminState::Down {
                ok = false;
                if apply {
                    nets.destroy(&conn, &name).await?;
                } else {
                    ctx.report(format!("{key}: would stop the network"));
                }
                i.active = false;
            }
            if i.persistent && p.transient {
                ok = false;
                if apply {
                    nets.undefine(&conn, &name).await?;
                } else {
                    ctx.report(format!("{key}: would undefine the network"));
                }
                i.persistent = false;
            }
            info = if apply { nets.info(&conn, &name).await? } else { (i.active || i.persistent).then_some(i) };
        }

        // Define or create what is missing, with every grouped host and range.
        let Some(mut info) = info else {
            if p.transient && p.state != AdminState::Up {
                return Ok(ok);
            }
            if !apply {
                ctx.report(format!("{key}: would {} the network", if p.transient { "create" } else { "define" }));
                return Ok(false);
            }
            let xml = render_network_xml(&self.fresh_def()?);
            if p.transient {
                nets.create(&conn, &xml).await?;
            } else {
                nets.define(&conn, &xml).await?;
                if p.state == AdminState::Up {
                    nets.start(&conn, &name).await?;
                }
                if let Some(enabled) = p.startup.wanted() {
                    nets.set_autostart(&conn, &name, enabled).await?;
                }
            }
            return Ok(false);
        };
        if p.transient && p.state != AdminState::Up && !info.active {
            return Ok(ok);
        }

        // A transient network that should be defined.
        if !p.transient && !info.persistent {
            ok = false;
            if apply {
                let mut def = parse_network_xml(&nets.xml(&conn, &name, false).await?)?;
                let idx = self.ip_index(&def)?;
                def = self.rebased(&def, idx)?;
                nets.define(&conn, &render_network_xml(&def)).await?;
                info.persistent = true;
            } else {
                ctx.report(format!("{key}: would define the running network"));
            }
        }

        // The base fields, compared with the persistent config (live for transient).
        if !(p.transient && p.state != AdminState::Up) {
            let def = parse_network_xml(&nets.xml(&conn, &name, !p.transient).await?)?;
            let idx = self.ip_index(&def)?;
            if !self.base_matches(&def, idx)? {
                ok = false;
                if !apply {
                    ctx.report(format!("{key}: would rewrite the network definition (bridge, mode, mac or ip)"));
                } else {
                    let xml = render_network_xml(&self.rebased(&def, idx)?);
                    if p.transient {
                        nets.destroy(&conn, &name).await?;
                        nets.create(&conn, &xml).await?;
                    } else {
                        nets.define(&conn, &xml).await?;
                        if info.active {
                            nets.destroy(&conn, &name).await?;
                            if p.state != AdminState::Down {
                                nets.start(&conn, &name).await?;
                            }
                        }
                    }
                    info = nets
                        .info(&conn, &name)
                        .await?
                        .ok_or_else(|| ResError::new(format!("{key}: the network vanished while being redefined")))?;
                }
            }
        }

        // Grouped hosts and ranges, in the persistent config and in the live network.
        if info.persistent && !self.reconcile_dhcp(ctx, apply, false).await? {
            ok = false;
        }
        if info.active && !self.reconcile_dhcp(ctx, apply, true).await? {
            ok = false;
        }

        // Up or down.
        if p.state == AdminState::Up && !info.active {
            ok = false;
            if apply {
                nets.start(&conn, &name).await?;
            } else {
                ctx.report(format!("{key}: would start the network"));
            }
        }

        // Autostart.
        if let Some(enabled) = p.startup.wanted()
            && info.persistent
            && info.autostart != enabled
        {
            ok = false;
            if apply {
                nets.set_autostart(&conn, &name, enabled).await?;
            } else {
                ctx.report(format!("{key}: would set autostart to {}", p.startup));
            }
        }
        Ok(ok)
    }

    fn fingerprint(&self) -> String {
        let mut out = self.params.fingerprint();
        self.members.fingerprint_into(&mut out);
        out
    }
}

/// A network in its graph: it finds the hosts and ranges grouped into it, and is built with them.
const NETWORK_IN_GRAPH: InGraph = InGraph { groups: Some(groups), build_grouped: Some(build_network), ..InGraph::NONE };

/// A host or range in its graph: built knowing the network it is grouped into.
const MEMBER_IN_GRAPH: InGraph = InGraph { build_grouped: Some(build_member), ..InGraph::NONE };

/// A network with the hosts and ranges grouped into it (a member that does not decode
/// reports its own build error).
fn build_network(host: &Machine, g: &Grouped<'_>) -> Result<Box<dyn engine::Resource>, BuildError> {
    let v = &g.graph.vertices[g.at];
    let members = g
        .members()
        .filter_map(|m| {
            let kind = if m.kind == "virt:network:host" { "virt:network:host" } else { "virt:network:range" };
            MemberSpec::decode(kind, &m.name, &m.params).ok()
        })
        .collect();
    Ok(Box::new(VirtNetwork::build(host, &v.name, &v.params)?.with_members(members)))
}

/// A host or range, told the network it is grouped into.
fn build_member(_host: &Machine, g: &Grouped<'_>) -> Result<Box<dyn engine::Resource>, BuildError> {
    let v = &g.graph.vertices[g.at];
    let member = NetworkMember::build(&v.kind, &v.name, &v.params)?;
    Ok(Box::new(match g.group() {
        Some(network) => member.grouped(&network.name),
        None => member,
    }))
}

/// The `virt:network` kind: its params as the type checker sees them, its constructor,
/// and its grouping.
pub const VIRT_NETWORK: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("virt:network", NetworkParams::FIELDS, crate::built_on_host!(VirtNetwork))
        .in_graph(NETWORK_IN_GRAPH);

/// The `virt:network:host` kind: its params and send fields as the type checker sees them, and its constructor.
pub const VIRT_NETWORK_HOST: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("virt:network:host", HostParams::FIELDS, |_host, name, params| {
        Ok(Box::new(NetworkMember::build("virt:network:host", name, params)?))
    })
    .in_graph(MEMBER_IN_GRAPH);

/// The `virt:network:range` kind: its params and send fields as the type checker sees them, and its constructor.
pub const VIRT_NETWORK_RANGE: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("virt:network:range", RangeParams::FIELDS, |_host, name, params| {
        Ok(Box::new(NetworkMember::build("virt:network:range", name, params)?))
    })
    .in_graph(MEMBER_IN_GRAPH);

#[cfg(test)]
mod tests {
    use super::*;

    const NET_INFO: &str = "\
Name:           default
UUID:           9a05da11-e96b-47f3-8253-a3a482e445f5
Active:         yes
Persistent:     yes
Autostart:      no
Bridge:         virbr0
";

    const NET_XML: &str = "\
<network>
  <name>default</name>
  <uuid>9a05da11-e96b-47f3-8253-a3a482e445f5</uuid>
  <forward mode='nat'>
    <nat>
      <port start='1024' end='65535'/>
    </nat>
  </forward>
  <bridge name='virbr0' stp='on' delay='0'/>
  <mac address='52:54:00:0A:CD:21'/>
  <ip address='192.168.122.1' prefix='24'>
    <dhcp>
      <range start='192.168.122.2' end='192.168.122.254'/>
      <host mac='52:54:00:AA:BB:CC' name='vm1' ip='192.168.122.10'/>
    </dhcp>
  </ip>
  <ip family='ipv6' address='fd00::1' prefix='64'/>
</network>
";

    #[test]
    fn net_info_and_definitions_are_parsed() {
        assert_eq!(parse_net_info(NET_INFO).unwrap(), NetInfo { active: true, persistent: true, autostart: false });
        assert!(parse_net_info("Name: x\n").is_err());
        let def = parse_network_xml(NET_XML).unwrap();
        assert_eq!((def.forward_mode.as_str(), def.bridge.as_str()), ("nat", "virbr0"));
        assert_eq!(def.ips.len(), 2);
        assert_eq!(def.ips[0].netmask, "255.255.255.0");
        assert!(def.ips[0].is_ipv4() && !def.ips[1].is_ipv4());
        assert_eq!(
            def.ips[0].hosts,
            [DhcpHost { mac: "52:54:00:aa:bb:cc".into(), name: "vm1".into(), ip: "192.168.122.10".into() }]
        );
        assert_eq!(def.ips[0].ranges[0].end, "192.168.122.254");
        let again = parse_network_xml(&render_network_xml(&def)).unwrap();
        assert_eq!(again, def, "render and parse round-trip");
    }

    #[test]
    fn net_update_and_event_command_lines() {
        let u = Update {
            cmd: UpdateCmd::AddLast,
            section: Section::DhcpHost,
            parent_index: 0,
            xml: host_xml(&DhcpHost {
                mac: "52:54:00:00:00:69".into(),
                name: "james".into(),
                ip: "192.168.42.7".into(),
            }),
            live: true,
        };
        assert_eq!(
            update_args("mgmtnet", &u),
            [
                "net-update",
                "mgmtnet",
                "add-last",
                "ip-dhcp-host",
                "<host mac='52:54:00:00:00:69' name='james' ip='192.168.42.7'/>",
                "--parent-index",
                "0",
                "--live"
            ]
        );
        let d = Update { cmd: UpdateCmd::Delete, section: Section::DhcpRange, live: false, ..u };
        assert_eq!(update_args("n", &d)[2..4], ["delete".to_string(), "ip-dhcp-range".to_string()]);
        assert_eq!(update_args("n", &d).last().map(String::as_str), Some("--config"));
        assert_eq!(event_network("event 'lifecycle' for network 'mgmtnet': Started"), Some("mgmtnet"));
        assert_eq!(event_network("event 'lifecycle' for domain 'x': Started"), None);
        assert_eq!(
            qemu_network_dir("qemu:///session", Some("/home/u"), false),
            Some(PathBuf::from("/home/u/.config/libvirt/qemu/networks"))
        );
        assert_eq!(qemu_network_dir("qemu:///system", None, false), Some(PathBuf::from("/etc/libvirt/qemu/networks")));
        assert_eq!(qemu_network_dir("lxc:///", None, true), None);
    }

    #[test]
    fn addresses_and_macs() {
        assert_eq!(parse_cidr("192.168.42.1/24"), Ok(("192.168.42.1".parse().unwrap(), 24)));
        assert!(parse_cidr("192.168.42.1").is_err() && parse_cidr("1.2.3.4/33").is_err());
        assert_eq!(prefix_to_mask(20).to_string(), "255.255.240.0");
        let net: Ipv4Addr = "192.168.42.1".parse().unwrap();
        assert!(usable("192.168.42.7".parse().unwrap(), net, 24).is_ok());
        assert!(usable("192.168.43.7".parse().unwrap(), net, 24).unwrap_err().contains("outside"));
        assert!(usable("192.168.42.255".parse().unwrap(), net, 24).unwrap_err().contains("broadcast"));
        assert!(canonical_mac("52:54:00:bd:00:01").is_ok());
        assert!(canonical_mac("52:54:00:BD:00:01").unwrap_err().contains("canonical format of: 52:54:00:bd:00:01"));
        assert!(canonical_mac("52-54-00-bd-00-01").is_err());
        assert!(valid_uuid("9a05da11-e96b-47f3-8253-a3a482e445f5") && !valid_uuid("nope"));
    }

    #[test]
    fn members_group_by_name_or_into_the_only_network() {
        let named = ParamMap::from([("network".to_string(), Value::str("b"))]);
        let none = ParamMap::new();
        let res: Vec<GroupRes<'_>> = vec![
            ("virt:network", "a", &none, true),
            ("virt:network:host", "h1", &named, true),
            ("virt:network:range", "r1", &none, true),
        ];
        assert_eq!(groups(&res), std::collections::BTreeMap::from([(2, 0)]), "h1 names a network that is not there");
        let res: Vec<GroupRes<'_>> = vec![
            ("virt:network", "a", &none, true),
            ("virt:network", "b", &none, true),
            ("virt:network:host", "h1", &named, true),
            ("virt:network:range", "r1", &none, true),
            ("virt:network:host", "h2", &named, false),
        ];
        assert_eq!(
            groups(&res),
            std::collections::BTreeMap::from([(2, 1)]),
            "no default with two networks; autogroup off"
        );
    }
}
