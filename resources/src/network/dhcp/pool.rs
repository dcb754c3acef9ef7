//! `dhcp:host` and `dhcp:range`, the address sources of a `dhcp:server` (mgmt groups them
//! into it; here each lists itself in the server hub's registry while its watch runs, so a
//! changed host or range takes effect at the next request, without restarting the server).
//!
//! A host pins `ip` (with its prefix, which gives the subnet mask) to one `mac`. A range
//! hands out addresses from `network` (the network and broadcast addresses excluded), or
//! from `from` to `to` inclusive with a mask given by a CIDR suffix on them or by `mask`,
//! never an address in `skip` nor one a host entry holds. Leases live as long as the
//! server's `leasetime`, are renewed by the same client, and are freed by a release or
//! once expired. With `persist`, a range's leases are kept in a file under the machine's
//! root (`var/lib/tend/dhcp/`) and read back when the range starts again.

use lang::params::ParamMap;
use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;

use super::{DhcpHub, Mac, Nbp, mask_of_prefix, parse_mask, validate_nbp};
use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;

crate::params! {
    /// `dhcp:host`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct HostParams {
        pub server: String,
        pub mac: String,
        /// `a.b.c.d/prefix`.
        pub ip: String,
        pub nbp: String,
        pub nbp_path: String,
    }
}

/// A host entry as the server reads it.
#[derive(Debug)]
pub struct HostEntry {
    pub name: String,
    pub mac: Mac,
    pub ip: Ipv4Addr,
    pub mask: Ipv4Addr,
    pub nbp: Nbp,
}

pub struct DhcpHost {
    raw: Raw,
    params: HostParams,
    hub: Arc<DhcpHub>,
}

impl DhcpHost {
    pub fn build(hub: Arc<DhcpHub>, name: &str, values: &ParamMap) -> Result<DhcpHost, BuildError> {
        let (raw, params) = Raw::decoded("dhcp:host", name, values, HostParams::decode)?;
        Ok(DhcpHost { raw, params, hub })
    }

    fn entry(&self) -> Result<HostEntry, ResError> {
        let p = &self.params;
        let mac = Mac::parse(&p.mac).map_err(|m| self.raw.invalid(Some("mac"), m))?;
        let (ip, prefix) = parse_cidr(&p.ip).map_err(|m| self.raw.invalid(Some("ip"), m))?;
        let nbp = Nbp::new(&p.nbp, &p.nbp_path).map_err(|m| self.raw.invalid(Some("nbp"), m))?;
        Ok(HostEntry { name: self.raw.name.clone(), mac, ip, mask: mask_of_prefix(prefix), nbp })
    }
}

#[async_trait]
impl Resource for DhcpHost {
    fn validate(&self) -> Result<(), ResError> {
        // `entry` checks each field; mgmt also wants the MAC as Go prints it.
        let mac = self.entry()?.mac;
        if mac.to_string() != self.params.mac {
            let m = format!("write the mac address as {mac} (lower case, colons), not {:?}", self.params.mac);
            return Err(self.raw.invalid(Some("mac"), m));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        match self.entry() {
            Ok(entry) => self.hub.hosts.listed_while_running(self.params.server.clone(), Arc::new(entry), ctx),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }

    async fn check_apply(&mut self, _ctx: &mut ApplyCtx, _apply: bool) -> Result<bool, ResError> {
        self.entry()?;
        Ok(true)
    }

    crate::fingerprint_by_params!();
}

crate::params! {
    /// `dhcp:range`'s params.
    #[derive(Clone, Debug, Default, PartialEq)]
    pub struct RangeParams {
        pub server: String,
        pub network: String,
        pub from: String,
        pub to: String,
        pub mask: String,
        pub skip: Vec<String>,
        pub persist: bool,
        pub nbp: String,
        pub nbp_path: String,
    }
}

/// The addresses a range hands out, inclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub from: Ipv4Addr,
    pub to: Ipv4Addr,
    pub mask: Ipv4Addr,
}

/// `a.b.c.d/n`.
pub fn parse_cidr(text: &str) -> Result<(Ipv4Addr, u8), String> {
    let (addr, prefix) = text.split_once('/').ok_or_else(|| format!("{text:?} is not ADDRESS/PREFIX"))?;
    let addr: Ipv4Addr = addr.parse().map_err(|_| format!("{addr:?} is not an IPv4 address"))?;
    let prefix: u8 =
        prefix.parse().ok().filter(|p| *p <= 32).ok_or_else(|| format!("{prefix:?} is not a prefix length (0-32)"))?;
    Ok((addr, prefix))
}

/// `a.b.c.d` or `a.b.c.d/n`.
fn parse_addr(text: &str) -> Result<(Ipv4Addr, Option<u8>), String> {
    if text.contains('/') {
        parse_cidr(text).map(|(a, p)| (a, Some(p)))
    } else {
        text.parse().map(|a| (a, None)).map_err(|_| format!("{text:?} is not an IPv4 address"))
    }
}

/// The span a range's params give (`network`, else `from`/`to` with a mask, else the name
/// as a network), or what is wrong and with which param.
pub fn span(p: &RangeParams, name: &str) -> Result<Span, (&'static str, String)> {
    if p.from.is_empty() != p.to.is_empty() {
        return Err(("from", "give both `from` and `to`, or neither".into()));
    }
    if !p.from.is_empty() {
        if !p.network.is_empty() {
            return Err(("network", "give `network` or `from` and `to`, not both".into()));
        }
        let (from, fp) = parse_addr(&p.from).map_err(|m| ("from", m))?;
        let (to, tp) = parse_addr(&p.to).map_err(|m| ("to", m))?;
        let prefix = match (fp, tp) {
            (Some(a), Some(b)) if a != b => {
                return Err(("to", format!("the prefixes of `from` (/{a}) and `to` (/{b}) differ")));
            }
            (a, b) => a.or(b),
        };
        let mask = match (prefix, p.mask.as_str()) {
            (Some(_), m) if !m.is_empty() => {
                return Err(("mask", "`mask` is for addresses given without a prefix".into()));
            }
            (Some(n), _) => mask_of_prefix(n),
            (None, "") => return Err(("mask", "give the mask: a prefix on `from`/`to`, or `mask`".into())),
            (None, m) => parse_mask(m).map_err(|e| ("mask", e))?,
        };
        if u32::from(from) > u32::from(to) {
            return Err(("from", format!("{from} comes after {to}")));
        }
        let net = u32::from(mask);
        if u32::from(from) & net != u32::from(to) & net {
            return Err(("to", format!("{from} and {to} are not in one network of mask {mask}")));
        }
        return Ok(Span { from, to, mask });
    }
    if !p.mask.is_empty() {
        return Err(("mask", "`mask` goes with `from` and `to`, not with a network".into()));
    }
    let (field, text) = if p.network.is_empty() { ("network", name) } else { ("network", p.network.as_str()) };
    let (addr, prefix) = parse_cidr(text).map_err(|m| (field, m))?;
    if prefix > 30 {
        return Err((field, format!("/{prefix} leaves no address to hand out")));
    }
    let mask = mask_of_prefix(prefix);
    let network = u32::from(addr) & u32::from(mask);
    let broadcast = network | !u32::from(mask);
    Ok(Span { from: Ipv4Addr::from(network + 1), to: Ipv4Addr::from(broadcast - 1), mask })
}

/// One client's lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    pub ip: Ipv4Addr,
    /// Seconds since the epoch.
    pub expires: u64,
}

/// A range's leases by client.
#[derive(Debug, Default)]
pub struct Leases {
    by_mac: BTreeMap<Mac, Lease>,
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl Leases {
    fn drop_expired(&mut self, now: u64) {
        self.by_mac.retain(|_, l| l.expires > now);
    }

    /// The leases as the persist file holds them: `MAC IP EXPIRES` lines.
    fn to_text(&self) -> String {
        self.by_mac.iter().map(|(m, l)| format!("{m} {} {}\n", l.ip, l.expires)).collect()
    }

    fn from_text(text: &str) -> Leases {
        let mut by_mac = BTreeMap::new();
        for line in text.lines() {
            let mut f = line.split_whitespace();
            if let (Some(m), Some(ip), Some(exp)) = (f.next(), f.next(), f.next())
                && let (Ok(mac), Ok(ip), Ok(expires)) = (Mac::parse(m), ip.parse(), exp.parse())
            {
                by_mac.insert(mac, Lease { ip, expires });
            }
        }
        Leases { by_mac }
    }

    /// The lease of `mac` (a client's own lease renewed).
    pub fn get(&self, mac: &Mac) -> Option<&Lease> {
        self.by_mac.get(mac)
    }
}

/// A range as the server reads it.
pub struct RangeEntry {
    pub name: String,
    pub span: Span,
    skip: BTreeSet<Ipv4Addr>,
    pub nbp: Nbp,
    leases: Arc<Mutex<Leases>>,
    persist: Option<PathBuf>,
}

impl std::fmt::Debug for RangeEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "dhcp:range[{}] {}-{}", self.name, self.span.from, self.span.to)
    }
}

impl RangeEntry {
    pub fn new(name: &str, span: Span, skip: BTreeSet<Ipv4Addr>, nbp: Nbp) -> RangeEntry {
        RangeEntry { name: name.into(), span, skip, nbp, leases: Arc::default(), persist: None }
    }

    fn holds(&self, ip: Ipv4Addr) -> bool {
        (u32::from(self.span.from)..=u32::from(self.span.to)).contains(&u32::from(ip)) && !self.skip.contains(&ip)
    }

    /// The address for `mac` for `lease` from now: its current lease (renewed), else the
    /// address it asks for when free, else the lowest free one; `None` when the range is
    /// full. `taken` says which addresses are held elsewhere (host entries).
    pub fn offer(
        &self,
        mac: &Mac,
        wanted: Option<Ipv4Addr>,
        lease: Duration,
        taken: &dyn Fn(Ipv4Addr) -> bool,
    ) -> Option<Ipv4Addr> {
        let now = now_secs();
        let mut leases = self.leases.lock().unwrap_or_else(|p| p.into_inner());
        leases.drop_expired(now);
        let expires = now + lease.as_secs().max(1);
        if let Some(l) = leases.by_mac.get_mut(mac)
            && self.holds(l.ip)
            && !taken(l.ip)
        {
            l.expires = l.expires.max(expires);
            let ip = l.ip;
            drop(leases);
            self.save();
            return Some(ip);
        }
        let used: BTreeSet<Ipv4Addr> = leases.by_mac.iter().filter(|(m, _)| *m != mac).map(|(_, l)| l.ip).collect();
        let free = |ip: Ipv4Addr| self.holds(ip) && !used.contains(&ip) && !taken(ip);
        let ip = wanted.filter(|ip| free(*ip)).or_else(|| {
            (u32::from(self.span.from)..=u32::from(self.span.to)).map(Ipv4Addr::from).find(|ip| free(*ip))
        })?;
        leases.by_mac.insert(*mac, Lease { ip, expires });
        drop(leases);
        self.save();
        tracing::info!(range = %self.name, %mac, %ip, "leased");
        Some(ip)
    }

    /// Frees the lease of `mac` (a DHCPRELEASE).
    pub fn release(&self, mac: &Mac) {
        let gone = self.leases.lock().unwrap_or_else(|p| p.into_inner()).by_mac.remove(mac);
        if let Some(l) = gone {
            tracing::info!(range = %self.name, %mac, ip = %l.ip, "released");
            self.save();
        }
    }

    /// The current lease of `mac`, if any.
    pub fn lease_of(&self, mac: &Mac) -> Option<Lease> {
        self.leases.lock().unwrap_or_else(|p| p.into_inner()).get(mac).cloned()
    }

    fn save(&self) {
        let Some(path) = &self.persist else { return };
        let text = self.leases.lock().unwrap_or_else(|p| p.into_inner()).to_text();
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| crate::util::fs::atomic_write(path, text.as_bytes(), Some(0o600)));
        if let Err(e) = written {
            tracing::warn!(range = %self.name, path = %path.display(), error = %e, "could not persist the leases");
        }
    }
}

pub struct DhcpRange {
    raw: Raw,
    params: RangeParams,
    hub: Arc<DhcpHub>,
    root: PathBuf,
}

impl DhcpRange {
    pub fn build(hub: Arc<DhcpHub>, root: PathBuf, name: &str, values: &ParamMap) -> Result<DhcpRange, BuildError> {
        let (raw, params) = Raw::decoded("dhcp:range", name, values, RangeParams::decode)?;
        Ok(DhcpRange { raw, params, hub, root })
    }

    fn entry(&self) -> Result<RangeEntry, ResError> {
        let p = &self.params;
        let span = span(p, &self.raw.name).map_err(|(f, m)| self.raw.invalid(Some(f), m))?;
        let mut skip = BTreeSet::new();
        for s in &p.skip {
            let (ip, _) = parse_addr(s).map_err(|m| self.raw.invalid(Some("skip"), m))?;
            skip.insert(ip);
        }
        let nbp = Nbp::new(&p.nbp, &p.nbp_path).map_err(|m| self.raw.invalid(Some("nbp"), m))?;
        let mut entry = RangeEntry::new(&self.raw.name, span, skip, nbp);
        // The leases of this range carry over a change of its params (those still inside).
        entry.leases = self.hub.leases_of(&self.raw.name);
        if p.persist {
            let file: String =
                self.raw.name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '_' }).collect();
            let path = self.root.join("var/lib/tend/dhcp").join(format!("{file}.leases"));
            {
                let mut leases = entry.leases.lock().unwrap_or_else(|p| p.into_inner());
                if leases.by_mac.is_empty()
                    && let Ok(text) = std::fs::read_to_string(&path)
                {
                    *leases = Leases::from_text(&text);
                }
            }
            entry.persist = Some(path);
        }
        Ok(entry)
    }
}

#[async_trait]
impl Resource for DhcpRange {
    fn validate(&self) -> Result<(), ResError> {
        validate_nbp(&self.params.nbp).map_err(|m| self.raw.invalid(Some("nbp"), m))?;
        span(&self.params, &self.raw.name).map_err(|(f, m)| self.raw.invalid(Some(f), m))?;
        for s in &self.params.skip {
            parse_addr(s).map_err(|m| self.raw.invalid(Some("skip"), m))?;
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        match self.entry() {
            Ok(entry) => self.hub.ranges.listed_while_running(self.params.server.clone(), Arc::new(entry), ctx),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }

    async fn check_apply(&mut self, _ctx: &mut ApplyCtx, _apply: bool) -> Result<bool, ResError> {
        span(&self.params, &self.raw.name).map_err(|(f, m)| self.raw.invalid(Some(f), m))?;
        Ok(true)
    }

    crate::fingerprint_by_params!();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(network: &str) -> RangeParams {
        RangeParams { network: network.into(), ..RangeParams::default() }
    }

    #[test]
    fn a_network_gives_every_address_but_its_own_and_the_broadcast() {
        let s = span(&range("192.168.42.0/24"), "x").unwrap();
        assert_eq!(
            (s.from, s.to, s.mask),
            ("192.168.42.1".parse().unwrap(), "192.168.42.254".parse().unwrap(), "255.255.255.0".parse().unwrap())
        );
        // The name stands for the network when nothing else is given.
        assert_eq!(span(&RangeParams::default(), "10.0.0.0/30").unwrap().to, "10.0.0.2".parse::<Ipv4Addr>().unwrap());
        assert!(span(&range("10.0.0.0/31"), "x").is_err());
    }

    #[test]
    fn from_and_to_need_one_mask_and_one_network() {
        let p = |from: &str, to: &str, mask: &str| RangeParams {
            from: from.into(),
            to: to.into(),
            mask: mask.into(),
            ..RangeParams::default()
        };
        let s = span(&p("10.1.0.10/24", "10.1.0.20/24", ""), "x").unwrap();
        assert_eq!((s.from.octets()[3], s.to.octets()[3]), (10, 20));
        assert_eq!(span(&p("10.1.0.10", "10.1.0.20", "255.255.255.0"), "x").unwrap().mask, s.mask);
        assert_eq!(span(&p("10.1.0.10", "10.1.0.20", "/24"), "x").unwrap().mask, s.mask);
        assert_eq!(span(&p("10.1.0.10", "10.1.0.20", ""), "x").unwrap_err().0, "mask");
        assert_eq!(span(&p("10.1.0.10/24", "10.1.0.20", "/24"), "x").unwrap_err().0, "mask");
        assert_eq!(span(&p("10.1.0.30/24", "10.1.0.20/24", ""), "x").unwrap_err().0, "from");
        assert_eq!(span(&p("10.1.0.10/24", "10.1.1.20/24", ""), "x").unwrap_err().0, "to");
        assert_eq!(span(&p("10.1.0.10", "", ""), "x").unwrap_err().0, "from");
        assert_eq!(span(&p("10.1.0.10", "10.1.0.20", "255.0.255.0"), "x").unwrap_err().0, "mask");
    }

    #[test]
    fn offers_keep_a_client_its_address_and_skip_what_is_taken() {
        let s = span(&range("10.9.0.0/29"), "x").unwrap(); // .1 to .6
        let skip: BTreeSet<Ipv4Addr> = ["10.9.0.1".parse().unwrap()].into();
        let r = RangeEntry::new("r", s, skip, Nbp::default());
        let hosts = |ip: Ipv4Addr| ip == "10.9.0.2".parse::<Ipv4Addr>().unwrap();
        let a = Mac([2, 0, 0, 0, 0, 1]);
        let b = Mac([2, 0, 0, 0, 0, 2]);
        let lease = Duration::from_secs(60);
        assert_eq!(r.offer(&a, None, lease, &hosts), Some("10.9.0.3".parse().unwrap()));
        assert_eq!(r.offer(&a, None, lease, &hosts), Some("10.9.0.3".parse().unwrap()), "renewed, not moved");
        assert_eq!(
            r.offer(&b, Some("10.9.0.3".parse().unwrap()), lease, &hosts),
            Some("10.9.0.4".parse().unwrap()),
            "not another's"
        );
        r.release(&a);
        let c = Mac([2, 0, 0, 0, 0, 3]);
        assert_eq!(
            r.offer(&c, Some("10.9.0.3".parse().unwrap()), lease, &hosts),
            Some("10.9.0.3".parse().unwrap()),
            "asked, and free"
        );
        assert_eq!(
            r.offer(&b, Some("10.9.0.5".parse().unwrap()), lease, &hosts),
            Some("10.9.0.4".parse().unwrap()),
            "a lease held is kept"
        );
        for i in 3..=6 {
            let _ = r.offer(&Mac([2, 0, 0, 0, 1, i]), None, lease, &hosts);
        }
        assert_eq!(r.offer(&Mac([2, 0, 0, 0, 9, 9]), None, lease, &hosts), None, "full");
        let text = r.leases.lock().unwrap().to_text();
        assert_eq!(Leases::from_text(&text).by_mac, r.leases.lock().unwrap().by_mac, "the persist format reads back");
    }
}
