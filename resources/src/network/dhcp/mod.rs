//! The DHCP kinds, as mgmt's: `dhcp:server` answers DHCPv4 on one interface from the
//! `dhcp:host` and `dhcp:range` resources that name it (`server`; any server when empty).
//! This file holds what they share: the hub they meet in, MAC addresses, network boot
//! (`nbp`) settings and the small parsers; `server` and `pool` hold the kinds.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::util::registry::Registry;

pub mod pool;
pub mod server;

pub use pool::{HostEntry, RangeEntry};

/// What the DHCP kinds of one engine share.
pub struct DhcpHub {
    pub hosts: Arc<Registry<HostEntry>>,
    pub ranges: Arc<Registry<RangeEntry>>,
    /// Each range's leases by range name, so they outlive a change of its params.
    leases: Mutex<HashMap<String, Arc<Mutex<pool::Leases>>>>,
    bound: crate::util::listen::Bound,
}

impl DhcpHub {
    pub fn new() -> Arc<DhcpHub> {
        Arc::new(DhcpHub {
            hosts: Registry::new(),
            ranges: Registry::new(),
            leases: Mutex::default(),
            bound: Default::default(),
        })
    }

    fn leases_of(&self, range: &str) -> Arc<Mutex<pool::Leases>> {
        self.leases.lock().unwrap_or_else(|p| p.into_inner()).entry(range.to_string()).or_default().clone()
    }

    /// Where the `dhcp:server` called `name` listens, while it does.
    pub fn bound(&self, name: &str) -> Option<std::net::SocketAddr> {
        self.bound.get(name)
    }
}

/// An Ethernet address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mac(pub [u8; 6]);

impl Mac {
    /// `aa:bb:cc:dd:ee:ff` (or with dashes), either case.
    pub fn parse(text: &str) -> Result<Mac, String> {
        let bad = || format!("{text:?} is not a MAC address (aa:bb:cc:dd:ee:ff)");
        let parts: Vec<&str> = text.split([':', '-']).collect();
        if parts.len() != 6 {
            return Err(bad());
        }
        let mut mac = [0u8; 6];
        for (byte, part) in mac.iter_mut().zip(parts) {
            if part.len() != 2 {
                return Err(bad());
            }
            *byte = u8::from_str_radix(part, 16).map_err(|_| bad())?;
        }
        Ok(Mac(mac))
    }
}

impl std::fmt::Display for Mac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

/// The network boot program of a host or range: its own `nbp` URL (else the server's) and
/// `nbp_path`, which overrides the URL's path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Nbp {
    url: String,
    path: String,
}

impl Nbp {
    pub fn new(url: &str, path: &str) -> Result<Nbp, String> {
        validate_nbp(url)?;
        Ok(Nbp { url: url.into(), path: path.into() })
    }

    /// The TFTP server name (option 66) and boot file (option 67) to send, given the
    /// server's own `nbp`.
    pub fn resolve(&self, server_nbp: &str) -> (Option<String>, Option<String>) {
        let url = if self.url.is_empty() { server_nbp } else { &self.url };
        let rest = url.strip_prefix("tftp://").unwrap_or("");
        let (host, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let path = if self.path.is_empty() { path } else { &self.path };
        let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
        (some(host), some(path))
    }
}

/// An `nbp` URL: empty, or `tftp://HOST[/PATH]` (the only scheme DHCPv4 boots from).
pub fn validate_nbp(nbp: &str) -> Result<(), String> {
    if nbp.is_empty() {
        return Ok(());
    }
    let Some((scheme, rest)) = nbp.split_once("://") else {
        return Err(format!("{nbp:?} has no scheme: write tftp://HOST/PATH"));
    };
    if scheme != "tftp" {
        return Err(format!("the scheme of {nbp:?} must be `tftp` for DHCPv4"));
    }
    if rest.is_empty() || rest.starts_with('/') {
        return Err(format!("{nbp:?} names no TFTP server"));
    }
    Ok(())
}

/// The mask of a prefix length (0-32).
pub fn mask_of_prefix(prefix: u8) -> Ipv4Addr {
    Ipv4Addr::from(u32::MAX.checked_shl(32 - u32::from(prefix.min(32))).unwrap_or(0))
}

/// A mask in dotted form or as `/N`; it must be contiguous ones.
pub fn parse_mask(text: &str) -> Result<Ipv4Addr, String> {
    if let Some(n) = text.strip_prefix('/') {
        return n
            .parse::<u8>()
            .ok()
            .filter(|n| *n <= 32)
            .map(mask_of_prefix)
            .ok_or_else(|| format!("{text:?} is not /0 to /32"));
    }
    let mask: Ipv4Addr = text.parse().map_err(|_| format!("{text:?} is not a mask (255.255.255.0 or /24)"))?;
    let bits = u32::from(mask);
    if bits.leading_ones() + bits.trailing_zeros() != 32 || bits == 0 {
        return Err(format!("{text:?} is not a contiguous mask"));
    }
    Ok(mask)
}

/// A duration as Go writes one (`90s`, `10m`, `1h42m13s`, `1.5h`), as mgmt's `leasetime`.
pub fn parse_go_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?} is not a duration (for example 10m, 1h30m, 90s)");
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let mut rest = text;
    let mut total = 0f64;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let num_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(bad)?;
        let value: f64 = rest[..num_end].parse().map_err(|_| bad())?;
        rest = &rest[num_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        total += value * scale;
        rest = &rest[unit_end..];
    }
    Duration::try_from_secs_f64(total).map_err(|_| bad())
}

/// A server comes after the `net` resource that brings its interface up (mgmt's
/// examples write that edge by hand).
fn server_requires(
    index: &crate::contract::autoedge::Index<'_>,
    idx: usize,
    _name: &str,
    params: &lang::params::ParamMap,
    edges: &mut crate::contract::autoedge::Edges,
) {
    if let Some(iface) = crate::contract::autoedge::str_param(params, "interface") {
        edges.extend(index.resource("net", iface).map(|n| (n, idx)));
    }
}

/// The `dhcp:server` kind.
pub const DHCP_SERVER: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("dhcp:server", server::ServerParams::FIELDS, |host, name, params| {
        Ok(Box::new(server::DhcpServer::build(host.dhcp.clone(), name, params)?))
    })
    .autoedges(crate::contract::autoedge::Rules {
        provides: None,
        requires: Some(server_requires),
        reads: &["interface"],
    });

/// The `dhcp:host` kind.
pub const DHCP_HOST: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("dhcp:host", pool::HostParams::FIELDS, |host, name, params| {
        Ok(Box::new(pool::DhcpHost::build(host.dhcp.clone(), name, params)?))
    });

/// The `dhcp:range` kind.
pub const DHCP_RANGE: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("dhcp:range", pool::RangeParams::FIELDS, |host, name, params| {
        Ok(Box::new(pool::DhcpRange::build(host.dhcp.clone(), host.root.clone(), name, params)?))
    });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs_masks_durations_and_nbps_parse_as_mgmt_writes_them() {
        let mac = Mac::parse("02:AB:00:00:00:0f").unwrap();
        assert_eq!(mac.to_string(), "02:ab:00:00:00:0f");
        assert!(Mac::parse("02:ab:00:00:00").is_err());
        assert!(Mac::parse("02:ab:00:00:00:0g").is_err());
        assert_eq!(parse_mask("/24").unwrap(), Ipv4Addr::new(255, 255, 255, 0));
        assert_eq!(parse_mask("255.255.240.0").unwrap(), mask_of_prefix(20));
        assert!(parse_mask("255.0.255.0").is_err());
        assert_eq!(mask_of_prefix(0), Ipv4Addr::new(0, 0, 0, 0));
        assert_eq!(parse_go_duration("1h42m13s").unwrap(), Duration::from_secs(3600 + 42 * 60 + 13));
        assert_eq!(parse_go_duration("1.5m").unwrap(), Duration::from_secs(90));
        assert!(parse_go_duration("10 minutes").is_err());
        assert!(parse_go_duration("").is_err());
        let nbp = Nbp::new("", "pxelinux.0").unwrap();
        assert_eq!(nbp.resolve("tftp://192.0.2.13/boot/x.efi"), (Some("192.0.2.13".into()), Some("pxelinux.0".into())));
        assert_eq!(Nbp::default().resolve("tftp://192.0.2.13/boot/x.efi").1.as_deref(), Some("/boot/x.efi"));
        assert_eq!(Nbp::default().resolve(""), (None, None));
        assert!(validate_nbp("http://x/y").is_err());
        assert!(validate_nbp("192.0.2.1/pxelinux.0").is_err());
    }
}
