//! The `net` package: address parsers and local interfaces.

use super::streams::poll;
use super::{str_list, strukt, typed};
use crate::api::{FuncError, FuncResult};
use crate::builtin;
use crate::registry::Registry;
use crate::streaming;
use lang::value::Value;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

pub fn register(r: &mut Registry) {
    typed(r, "net.cidr_to_ip", cidr_to_ip::DEF);
    typed(r, "net.cidr_to_prefix", cidr_to_prefix::DEF);
    typed(r, "net.cidr_to_mask", cidr_to_mask::DEF);
    typed(r, "net.cidr_to_network", cidr_to_network::DEF);
    typed(r, "net.cidr_to_first", cidr_to_first::DEF);
    typed(r, "net.cidr_to_last", cidr_to_last::DEF);
    typed(r, "net.ip_in_cidr", ip_in_cidr::DEF);
    typed(r, "net.is_mac", is_mac::DEF);
    typed(r, "net.macfmt", macfmt::DEF);
    typed(r, "net.oldmacfmt", oldmacfmt::DEF);
    typed(r, "net.split_hostport", split_hostport::DEF);
    typed(r, "net.url_parser", url_parser::DEF);
    typed(r, "net.macs", macs::DEF);
    typed(r, "net.wired_interface", wired_interface::DEF);
    typed(r, "net.interface_cidr", interface_cidr::DEF);
}

fn bad(what: &str, s: &str) -> FuncError {
    FuncError::catchable(format!("invalid {what}: {s:?}"))
}

/// `addr/prefix` -> (addr, prefix); spaces around it are ignored, as mgmt does.
pub fn parse_cidr(s: &str) -> Result<(IpAddr, u32), FuncError> {
    let s = s.trim();
    let (a, p) = s.split_once('/').ok_or_else(|| bad("CIDR address", s))?;
    let ip: IpAddr = a.parse().map_err(|_| bad("CIDR address", s))?;
    let bits = if ip.is_ipv4() { 32 } else { 128 };
    let prefix: u32 = p.parse().ok().filter(|p| *p <= bits).ok_or_else(|| bad("CIDR address", s))?;
    if p.starts_with('+') || (p.len() > 1 && p.starts_with('0')) {
        return Err(bad("CIDR address", s));
    }
    Ok((ip, prefix))
}

fn bits_of(ip: IpAddr) -> (u128, u32) {
    match ip {
        IpAddr::V4(a) => (u32::from(a) as u128, 32),
        IpAddr::V6(a) => (u128::from(a), 128),
    }
}

fn ip_of(v: u128, width: u32) -> IpAddr {
    if width == 32 { IpAddr::V4(Ipv4Addr::from(v as u32)) } else { IpAddr::V6(Ipv6Addr::from(v)) }
}

fn mask_bits(prefix: u32, width: u32) -> u128 {
    let all: u128 = if width == 32 { u32::MAX as u128 } else { u128::MAX };
    if prefix == 0 { 0 } else { (all << (width - prefix)) & all }
}

/// (network, broadcast, width) of a CIDR.
fn range_of(s: &str) -> Result<(u128, u128, u32, u32), FuncError> {
    let (ip, prefix) = parse_cidr(s)?;
    let (v, width) = bits_of(ip);
    let mask = mask_bits(prefix, width);
    let all: u128 = if width == 32 { u32::MAX as u128 } else { u128::MAX };
    Ok((v & mask, (v & mask) | (!mask & all), width, prefix))
}

builtin! {
    /// the address part of a CIDR
    fn cidr_to_ip(a: &str) -> Result<String, FuncError> {
        Ok(parse_cidr(a)?.0.to_string())
    }
}
builtin! {
    /// the prefix length of a CIDR
    fn cidr_to_prefix(a: &str) -> Result<String, FuncError> {
        Ok(parse_cidr(a)?.1.to_string())
    }
}
builtin! {
    /// the netmask of a CIDR
    fn cidr_to_mask(a: &str) -> Result<String, FuncError> {
        let (ip, prefix) = parse_cidr(a)?;
        let width = bits_of(ip).1;
        Ok(ip_of(mask_bits(prefix, width), width).to_string())
    }
}
builtin! {
    /// the network of a CIDR, as a CIDR (`192.0.2.0/24` for `192.0.2.12/24`)
    fn cidr_to_network(a: &str) -> Result<String, FuncError> {
        let (net, _, width, prefix) = range_of(a)?;
        Ok(format!("{}/{prefix}", ip_of(net, width)))
    }
}
builtin! {
    /// the address after a CIDR's address, when the prefix holds it (mgmt's first usable)
    fn cidr_to_first(a: &str) -> Result<String, FuncError> {
        let (ip, _) = parse_cidr(a)?;
        let (net, bcast, width, _) = range_of(a)?;
        let (v, _) = bits_of(ip);
        match v.checked_add(1).filter(|n| *n >= net && *n <= bcast) {
            Some(next) => Ok(ip_of(next, width).to_string()),
            None => Err(FuncError::catchable(format!("no usable next address in {}", a.trim()))),
        }
    }
}
builtin! {
    /// the last address of a CIDR (its broadcast address for IPv4)
    fn cidr_to_last(a: &str) -> Result<String, FuncError> {
        let (_, bcast, width, _) = range_of(a)?;
        Ok(ip_of(bcast, width).to_string())
    }
}
builtin! {
    /// whether an address is inside a CIDR
    fn ip_in_cidr(ip: &str, cidr: &str) -> Result<bool, FuncError> {
        let addr: IpAddr = ip.parse().map_err(|_| bad("IP address", ip))?;
        let (net, bcast, width, _) = range_of(cidr)?;
        let (v, w) = bits_of(addr);
        Ok(w == width && v >= net && v <= bcast)
    }
}

/// The six bytes of a MAC written with `:` or `-` separators.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let sep = if s.contains(':') { ':' } else { '-' };
    let parts: Vec<&str> = s.split(sep).collect();
    if parts.len() != 6 {
        return None;
    }
    let mut out = [0u8; 6];
    for (o, p) in out.iter_mut().zip(parts) {
        if p.len() != 2 {
            return None;
        }
        *o = u8::from_str_radix(p, 16).ok()?;
    }
    Some(out)
}

builtin! {
    /// whether a string is a MAC address
    fn is_mac(a: &str) -> bool {
        parse_mac(a).is_some()
    }
}

fn mac_with(s: &str, sep: &str) -> Result<String, FuncError> {
    let b = parse_mac(s).ok_or_else(|| bad("MAC address", s))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(sep))
}
builtin! {
    /// a MAC address with colons
    fn macfmt(a: &str) -> Result<String, FuncError> {
        mac_with(a, ":")
    }
}
builtin! {
    /// a MAC address with hyphens
    fn oldmacfmt(a: &str) -> Result<String, FuncError> {
        mac_with(a, "-")
    }
}

/// Go's `net.SplitHostPort`.
pub fn split_host_port(s: &str) -> Result<(String, String), FuncError> {
    let missing = || FuncError::catchable(format!("address {s}: missing port in address"));
    if let Some(rest) = s.strip_prefix('[') {
        let (host, tail) =
            rest.split_once(']').ok_or_else(|| FuncError::catchable(format!("address {s}: missing ']' in address")))?;
        let port = tail.strip_prefix(':').ok_or_else(missing)?;
        return Ok((host.to_string(), port.to_string()));
    }
    let i = s.rfind(':').ok_or_else(missing)?;
    let (host, port) = (&s[..i], &s[i + 1..]);
    if host.contains(':') {
        return Err(FuncError::catchable(format!("address {s}: too many colons in address")));
    }
    Ok((host.to_string(), port.to_string()))
}

builtin! {
    /// splits host:port
    fn split_hostport(a: &str) -> Result<Value, FuncError> as "struct{host str; port str}" {
        let (h, p) = split_host_port(a)?;
        Ok(strukt([("host", Value::str(h)), ("port", Value::str(p))]))
    }
}

/// The parts of a URL the way Go's `url.Parse` splits them.
pub fn parse_url(s: &str) -> Result<(String, String, String, String), FuncError> {
    let err = |why: &str| FuncError::catchable(format!("parse {s:?}: {why}"));
    let s_nofrag = s.split_once('#').map(|(a, _)| a).unwrap_or(s);
    let (mut scheme, mut rest) = (String::new(), s_nofrag);
    if let Some(i) = s_nofrag.find(':') {
        let cand = &s_nofrag[..i];
        let valid = cand.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && cand.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if valid {
            scheme = cand.to_ascii_lowercase();
            rest = &s_nofrag[i + 1..];
        } else if i == 0 {
            return Err(err("missing protocol scheme"));
        }
    }
    let (rest, query) = match rest.split_once('?') {
        Some((a, q)) => (a, q.to_string()),
        None => (rest, String::new()),
    };
    let (host, path) = match rest.strip_prefix("//") {
        Some(after) => {
            let (authority, path) = match after.find('/') {
                Some(i) => (&after[..i], &after[i..]),
                None => (after, ""),
            };
            let host = authority.rsplit_once('@').map(|(_, h)| h).unwrap_or(authority);
            (host.to_string(), path)
        }
        None => (String::new(), rest),
    };
    let path = lang::value::percent_decode(path).map_err(|e| err(&e))?;
    Ok((scheme, host, path, query))
}

builtin! {
    /// the parts of a URL
    fn url_parser(a: &str) -> Result<Value, FuncError> as "struct{scheme str; host str; path str; raw_query str}" {
        let (scheme, host, path, q) = parse_url(a)?;
        Ok(strukt([
            ("scheme", Value::str(scheme)),
            ("host", Value::str(host)),
            ("path", Value::str(path)),
            ("raw_query", Value::str(q)),
        ]))
    }
}

/// (name, MAC) of every non-loopback interface, sorted by name.
pub fn local_macs() -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/sys/class/net") {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(addr) = std::fs::read_to_string(e.path().join("address")) else { continue };
            let addr = addr.trim().to_string();
            if name == "lo" || addr.is_empty() || addr == "00:00:00:00:00:00" {
                continue;
            }
            out.push((name, addr));
        }
    }
    out.sort();
    out
}

streaming! {
    /// the MAC addresses of the local interfaces
    fn macs(em) -> "[]str" {
        poll(em, Duration::from_secs(5), || {
            let mut m: Vec<String> = local_macs().into_iter().map(|(_, m)| m).collect();
            m.sort();
            m.dedup();
            Ok(str_list(m))
        })
        .await
    }
}

/// The wired interfaces (a device behind them, no radio), sorted by name.
pub fn wired_interfaces() -> Vec<String> {
    let wired = |n: &String| {
        let base = std::path::Path::new("/sys/class/net").join(n);
        base.join("device").exists() && !base.join("wireless").exists() && !base.join("phy80211").exists()
    };
    local_macs().into_iter().map(|(n, _)| n).filter(wired).collect()
}

fn first_wired() -> FuncResult {
    Ok(Value::str(wired_interfaces().into_iter().next().unwrap_or_default()))
}

streaming! {
    /// the name of the first wired interface
    fn wired_interface(em) -> "str" {
        poll(em, Duration::from_secs(5), first_wired).await
    }
}

/// The first IPv4 `addr/prefix` of an interface, from `ip -o -4 addr show dev IFACE`.
async fn iface_cidr(name: &str) -> FuncResult {
    let out = crate::command::new("ip")
        .args(["-o", "-4", "addr", "show", "dev", name])
        .output()
        .await
        .map_err(|e| FuncError::catchable(format!("can't run `ip addr`: {e}")))?;
    if !out.status.success() {
        return Err(FuncError::catchable(format!("interface {name:?} not found")));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let cidr = text.split_whitespace().skip_while(|w| *w != "inet").nth(1).unwrap_or("");
    Ok(Value::str(cidr))
}

streaming! {
    /// the first IPv4 CIDR of an interface
    fn interface_cidr(em, interface: String) -> "str" {
        let mut last: Option<FuncResult> = None;
        loop {
            let r = iface_cidr(&interface).await;
            if last.as_ref() != Some(&r) {
                if !em.send(r.clone()).await {
                    return;
                }
                last = Some(r);
            }
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
    }
}
