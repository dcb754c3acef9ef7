//! What the listening kinds (`http:server`, `tftp:server`) share: Go-style listen
//! addresses, binding the first address that works, and the `root` directory check.

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};

/// Splits a Go-style listen address (`:80`, `127.0.0.1:80`, `[::1]:80`) into the IP (none:
/// all interfaces) and the port.
pub fn parse_listen(addr: &str) -> Result<(Option<IpAddr>, u16), String> {
    let (host, port) = if let Some(rest) = addr.strip_prefix('[') {
        let (host, port) = rest.split_once("]:").ok_or_else(|| format!("missing port in address `{addr}`"))?;
        (host, port)
    } else {
        let (host, port) = addr.rsplit_once(':').ok_or_else(|| format!("missing port in address `{addr}`"))?;
        if host.contains(':') {
            return Err(format!("too many colons in address `{addr}`"));
        }
        (host, port)
    };
    let port: u16 = port.parse().map_err(|_| format!("invalid port `{port}` in address `{addr}`"))?;
    if host.is_empty() {
        return Ok((None, port));
    }
    let ip: IpAddr = host.parse().map_err(|_| format!("the address is not a valid IP: {host}"))?;
    Ok((Some(ip), port))
}

/// The socket addresses to try for a listen address: all interfaces means IPv6 `::`
/// (dual-stack on Linux) and then IPv4 `0.0.0.0`.
pub fn listen_candidates(addr: &str) -> Result<Vec<SocketAddr>, String> {
    let (ip, port) = parse_listen(addr)?;
    Ok(match ip {
        Some(ip) => vec![SocketAddr::new(ip, port)],
        None => vec![
            SocketAddr::new(IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED), port),
            SocketAddr::new(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), port),
        ],
    })
}

/// Binds the first of `address`'s candidates that works (see [`listen_candidates`]).
pub async fn bind_first<S, F, Fut>(address: &str, bind: F) -> io::Result<S>
where
    F: Fn(SocketAddr) -> Fut,
    Fut: Future<Output = io::Result<S>>,
{
    let candidates = listen_candidates(address).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let mut last = None;
    for addr in candidates {
        match bind(addr).await {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no address to bind")))
}

/// Where each running server of one kind listens, by name (tests and `send` read it).
#[derive(Default)]
pub struct Bound(std::sync::Mutex<std::collections::BTreeMap<String, SocketAddr>>);

impl Bound {
    /// Where the server called `name` listens, while it does.
    pub fn get(&self, name: &str) -> Option<SocketAddr> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).get(name).copied()
    }

    /// Records (`Some`) or forgets where the server called `name` listens.
    pub fn set(&self, name: &str, addr: Option<SocketAddr>) {
        let mut bound = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match addr {
            Some(a) => bound.insert(name.to_string(), a),
            None => bound.remove(name),
        };
    }
}

/// The address a server resource listens on: its `address` param, else its name.
pub fn address<'a>(param: &'a str, name: &'a str) -> &'a str {
    if param.is_empty() { name } else { param }
}

/// A server's own params as `validate` checks them: a listen address, and a `root` that
/// is empty or an absolute directory path in normal form (ending with `/`). The field at
/// fault and why.
pub fn validate(address: &str, root: &str) -> Result<(), (&'static str, String)> {
    if address.is_empty() {
        return Err(("address", "empty address".into()));
    }
    parse_listen(address).map_err(|e| ("address", e))?;
    if !root.is_empty() {
        crate::util::path::check(root).map_err(|m| ("root", m))?;
        if !root.ends_with('/') {
            return Err(("root", "the root must be a directory (end with `/`)".into()));
        }
    }
    Ok(())
}

/// A server's `root` param: empty, or a directory. A root that does not exist yet is only
/// warned about (another resource may create it; until then lookups under it fail).
pub fn check_root(key: &str, root: &str) -> Result<(), String> {
    if root.is_empty() {
        return Ok(());
    }
    match std::fs::metadata(root) {
        Ok(m) if !m.is_dir() => Err(format!("`{root}` is not a directory")),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            tracing::warn!(resource = %key, "root `{root}` does not exist (yet)");
            Ok(())
        }
        Err(e) => Err(format!("cannot stat `{root}`: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_parse_like_go() {
        assert_eq!(parse_listen(":8080"), Ok((None, 8080)));
        assert_eq!(parse_listen("127.0.0.1:80"), Ok((Some("127.0.0.1".parse().unwrap()), 80)));
        assert_eq!(parse_listen("[::1]:80"), Ok((Some("::1".parse().unwrap()), 80)));
        assert!(parse_listen("8080").unwrap_err().contains("missing port"));
        assert!(parse_listen("::1:80").unwrap_err().contains("too many colons"));
        assert!(parse_listen("example.com:80").unwrap_err().contains("not a valid IP"));
        assert!(parse_listen(":http").unwrap_err().contains("invalid port"));
        assert_eq!(listen_candidates(":0").unwrap().len(), 2);
    }
}
