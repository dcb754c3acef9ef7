//! `dhcp:server`: a DHCPv4 server on UDP `address` (default the name, mgmt's `:67`) bound
//! to `interface`, answering while its watch runs. Each request is answered from the
//! `dhcp:host` entries first (by MAC), then the `dhcp:range`s, looked up per request, so a
//! changed host or range applies at once. Replies carry the server id (`serverid`, else the
//! address's or the interface's first IPv4 address; `""` sends none), the lease time
//! (`leasetime`, Go syntax, default 10m; `""` sends none), the subnet mask, `routers`,
//! `dns` (when asked for) and the boot server and file (`nbp`, when asked for). Beyond
//! mgmt: a REQUEST for an address other than the one this server holds for the client is
//! answered with a NAK (so a client moves to a changed range at once), a REQUEST for another
//! server is left alone, and a RELEASE frees the lease.

use lang::params::ParamMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use dhcproto::v4::{DhcpOption, HType, Message, MessageType, Opcode, OptionCode};
use dhcproto::{Decodable, Decoder, Encodable};
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use tokio::net::UdpSocket;

use super::{DhcpHub, HostEntry, Mac, Nbp, RangeEntry, parse_go_duration, validate_nbp};
use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;

/// mgmt's default lease time.
pub const DEFAULT_LEASE: &str = "10m";
const CLIENT_PORT: u16 = 68;
const SERVER_PORT: u16 = 67;

crate::params! {
    /// `dhcp:server`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct ServerParams {
        pub address: String,
        pub interface: String,
        /// Absent: found from the address or interface; `""`: none is sent.
        pub serverid: Option<String> as "str" => |p, f| p.opt_str(f),
        /// Absent: 10m; `""`: none is sent.
        pub leasetime: Option<String> as "str" => |p, f| p.opt_str(f),
        pub dns: Vec<String>,
        pub routers: Vec<String>,
        pub nbp: String,
    }
}

pub struct DhcpServer {
    raw: Raw,
    params: ServerParams,
    hub: Arc<DhcpHub>,
}

/// What answering a request needs besides the hosts and ranges.
#[derive(Clone, Debug, Default)]
pub struct Config {
    pub server_id: Option<Ipv4Addr>,
    pub lease: Option<Duration>,
    pub dns: Vec<Ipv4Addr>,
    pub routers: Vec<Ipv4Addr>,
    pub nbp: String,
}

fn ipv4s(list: &[String]) -> Result<Vec<Ipv4Addr>, String> {
    list.iter().map(|a| a.parse().map_err(|_| format!("{a:?} is not an IPv4 address"))).collect()
}

/// `HOST:PORT` with an empty host meaning every address (mgmt's `:67`).
fn listen_addr(text: &str) -> Result<SocketAddrV4, String> {
    let (host, port) = text.rsplit_once(':').ok_or_else(|| format!("{text:?} is not HOST:PORT (mgmt writes :67)"))?;
    let port: u16 = port.parse().map_err(|_| format!("{port:?} is not a port"))?;
    let ip = if host.is_empty() {
        Ipv4Addr::UNSPECIFIED
    } else {
        host.parse().map_err(|_| format!("{host:?} is not an IPv4 address"))?
    };
    Ok(SocketAddrV4::new(ip, port))
}

/// The first IPv4 address of `interface`.
fn interface_ipv4(interface: &str) -> Result<Ipv4Addr, String> {
    let addrs = nix::ifaddrs::getifaddrs().map_err(|e| format!("could not list the interfaces: {e}"))?;
    let mut found = false;
    for a in addrs.filter(|a| a.interface_name == interface) {
        found = true;
        if let Some(sin) = a.address.as_ref().and_then(|s| s.as_sockaddr_in()) {
            return Ok(sin.ip());
        }
    }
    Err(if found { format!("{interface} has no IPv4 address") } else { format!("there is no interface {interface}") })
}

impl DhcpServer {
    pub fn build(hub: Arc<DhcpHub>, name: &str, values: &ParamMap) -> Result<DhcpServer, BuildError> {
        let (raw, params) = Raw::decoded("dhcp:server", name, values, ServerParams::decode)?;
        Ok(DhcpServer { raw, params, hub })
    }

    fn address(&self) -> &str {
        crate::util::listen::address(&self.params.address, &self.raw.name)
    }

    fn err(&self, field: &str, message: impl Into<String>) -> ResError {
        self.raw.invalid(Some(field), message)
    }

    /// The reply settings, and the interface whose address is the server id when that
    /// must be looked up (at each request until found: the interface may get its address
    /// after the server starts).
    fn config(&self) -> Result<(Config, Option<String>), ResError> {
        let p = &self.params;
        let (server_id, lookup) = match p.serverid.as_deref() {
            Some("") => (None, None),
            Some(id) => {
                (Some(id.parse().map_err(|_| self.err("serverid", format!("{id:?} is not an IPv4 address")))?), None)
            }
            None => {
                let addr = listen_addr(self.address()).map_err(|m| self.err("address", m))?;
                if addr.ip().is_unspecified() { (None, Some(p.interface.clone())) } else { (Some(*addr.ip()), None) }
            }
        };
        let lease = match p.leasetime.as_deref() {
            Some("") => None,
            other => Some(parse_go_duration(other.unwrap_or(DEFAULT_LEASE)).map_err(|m| self.err("leasetime", m))?),
        };
        let config = Config {
            server_id,
            lease,
            dns: ipv4s(&p.dns).map_err(|m| self.err("dns", m))?,
            routers: ipv4s(&p.routers).map_err(|m| self.err("routers", m))?,
            nbp: p.nbp.clone(),
        };
        Ok((config, lookup))
    }
}

#[async_trait]
impl Resource for DhcpServer {
    fn validate(&self) -> Result<(), ResError> {
        let p = &self.params;
        if p.interface.is_empty() {
            return Err(self.err("interface", "name the interface to serve (for example eth0)"));
        }
        listen_addr(self.address()).map_err(|m| self.err("address", m))?;
        if let Some(id) = p.serverid.as_deref().filter(|id| !id.is_empty()) {
            id.parse::<Ipv4Addr>().map_err(|_| self.err("serverid", format!("{id:?} is not an IPv4 address")))?;
        }
        if let Some(t) = p.leasetime.as_deref().filter(|t| !t.is_empty()) {
            parse_go_duration(t).map_err(|m| self.err("leasetime", m))?;
        }
        ipv4s(&p.dns).map_err(|m| self.err("dns", m))?;
        ipv4s(&p.routers).map_err(|m| self.err("routers", m))?;
        validate_nbp(&p.nbp).map_err(|m| self.err("nbp", m))
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let key = format!("dhcp:server[{}]", self.raw.name);
        let name = self.raw.name.clone();
        let interface = self.params.interface.clone();
        let address = listen_addr(self.address());
        let hub = self.hub.clone();
        let config = self.config();
        Box::pin(async move {
            let fail = |m: String| ResError::transient(format!("{key}: {m}"));
            let (mut cfg, lookup) = config?;
            let address = address.map_err(fail)?;
            let sock = bind(address, &interface)
                .map_err(|e| fail(format!("could not listen on {address} on {interface}: {e}")))?;
            tracing::info!(resource = %key, %address, %interface, "dhcp listening");
            hub.bound.set(&name, Some(SocketAddr::V4(address)));
            ctx.event();
            let mut buf = vec![0u8; 4096];
            let result = loop {
                tokio::select! {
                    _ = ctx.cancelled() => break Ok(()),
                    got = sock.recv_from(&mut buf) => {
                        let n = match got {
                            Ok((n, _)) => n,
                            Err(e) if matches!(e.kind(), std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::Interrupted) => continue,
                            Err(e) => break Err(fail(format!("receiving: {e}"))),
                        };
                        let Ok(req) = Message::decode(&mut Decoder::new(&buf[..n])) else {
                            tracing::debug!(resource = %key, "not a DHCP packet");
                            continue;
                        };
                        if let (None, Some(iface)) = (cfg.server_id, &lookup) {
                            match interface_ipv4(iface) {
                                Ok(id) => cfg.server_id = Some(id),
                                Err(e) => {
                                    tracing::warn!(resource = %key, error = %e, "no server id yet: request dropped");
                                    continue;
                                }
                            }
                        }
                        let hosts = hub.hosts.members(&name);
                        let ranges = hub.ranges.members(&name);
                        if let Some((reply, to)) = answer(&req, &cfg, &hosts, &ranges) {
                            match reply.to_vec() {
                                Ok(bytes) => {
                                    if let Err(e) = sock.send_to(&bytes, to).await {
                                        tracing::warn!(resource = %key, %to, error = %e, "could not send the reply");
                                    }
                                }
                                Err(e) => tracing::warn!(resource = %key, error = %e, "could not encode the reply"),
                            }
                        }
                    }
                }
            };
            if hub.bound(&name) == Some(SocketAddr::V4(address)) {
                hub.bound.set(&name, None);
            }
            result
        })
    }

    async fn check_apply(&mut self, _ctx: &mut ApplyCtx, _apply: bool) -> Result<bool, ResError> {
        let key = format!("dhcp:server[{}]", self.raw.name);
        let (_, lookup) = self.config()?;
        if let Some(iface) = lookup {
            interface_ipv4(&iface).map_err(|m| ResError::transient(format!("{key}: the server id: {m}")))?;
        }
        if self.hub.bound(&self.raw.name).is_none() {
            return Err(ResError::transient(format!(
                "{key}: not listening on {} on {}",
                self.address(),
                self.params.interface
            )));
        }
        Ok(true)
    }

    crate::fingerprint_by_params!();
}

/// A UDP socket on `address`, bound to `interface`, that may send broadcasts.
fn bind(address: SocketAddrV4, interface: &str) -> std::io::Result<UdpSocket> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, SockaddrIn, setsockopt, socket, sockopt};
    let fd: OwnedFd =
        socket(AddressFamily::Inet, SockType::Datagram, SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC, None)?;
    setsockopt(&fd, sockopt::ReuseAddr, &true)?;
    setsockopt(&fd, sockopt::Broadcast, &true)?;
    setsockopt(&fd, sockopt::BindToDevice, &std::ffi::OsString::from(interface))?;
    nix::sys::socket::bind(std::os::fd::AsRawFd::as_raw_fd(&fd), &SockaddrIn::from(address))?;
    UdpSocket::from_std(std::net::UdpSocket::from(fd))
}

fn requested(req: &Message, code: OptionCode) -> bool {
    matches!(req.opts().get(OptionCode::ParameterRequestList), Some(DhcpOption::ParameterRequestList(l)) if l.contains(&code))
}

/// What a client is given: its address, the subnet mask, and the boot settings.
struct Assignment<'a> {
    ip: Ipv4Addr,
    mask: Ipv4Addr,
    nbp: &'a Nbp,
}

/// The reply to `req` and where it goes, or `None` when nothing is to be sent.
pub fn answer(
    req: &Message,
    cfg: &Config,
    hosts: &[Arc<HostEntry>],
    ranges: &[Arc<RangeEntry>],
) -> Option<(Message, SocketAddr)> {
    if req.opcode() != Opcode::BootRequest || req.htype() != HType::Eth || req.hlen() != 6 {
        return None;
    }
    let mut mac = [0u8; 6];
    mac.copy_from_slice(&req.chaddr()[..6]);
    let mac = Mac(mac);
    let kind = req.opts().msg_type()?;
    let asked_server = match req.opts().get(OptionCode::ServerIdentifier) {
        Some(DhcpOption::ServerIdentifier(id)) => Some(*id),
        _ => None,
    };
    let for_us = match (asked_server, cfg.server_id) {
        (Some(asked), Some(ours)) => asked == ours,
        _ => true,
    };
    if !for_us {
        return None; // the client chose another server
    }
    let wanted = match req.opts().get(OptionCode::RequestedIpAddress) {
        Some(DhcpOption::RequestedIpAddress(ip)) => Some(*ip),
        _ => Some(req.ciaddr()).filter(|ip| !ip.is_unspecified()),
    };
    match kind {
        MessageType::Release => {
            for r in ranges {
                r.release(&mac);
            }
            return None;
        }
        MessageType::Decline => {
            tracing::warn!(%mac, address = ?wanted, "the client says the address is in use elsewhere");
            for r in ranges {
                r.release(&mac);
            }
            return None;
        }
        MessageType::Discover | MessageType::Request | MessageType::Inform => {}
        _ => return None,
    }
    let lease = cfg.lease.unwrap_or(Duration::from_secs(600));
    let assigned = if let Some(h) = hosts.iter().find(|h| h.mac == mac) {
        Some(Assignment { ip: h.ip, mask: h.mask, nbp: &h.nbp })
    } else {
        // Never a host entry's address, nor the server's own.
        let taken = |ip: Ipv4Addr| hosts.iter().any(|h| h.ip == ip) || cfg.server_id == Some(ip);
        ranges.iter().find_map(|r| {
            let ip = if kind == MessageType::Inform {
                wanted.filter(|ip| r.lease_of(&mac).is_some_and(|l| l.ip == *ip))?
            } else {
                r.offer(&mac, wanted, lease, &taken)?
            };
            Some(Assignment { ip, mask: r.span.mask, nbp: &r.nbp })
        })
    };
    let reply_type = match (kind, &assigned) {
        (MessageType::Discover, Some(_)) => MessageType::Offer,
        (MessageType::Discover, None) => {
            tracing::warn!(%mac, "no address to offer (no host entry, every range full)");
            return None;
        }
        (MessageType::Request, Some(a)) if wanted.is_none_or(|w| w == a.ip) => MessageType::Ack,
        // A request for another address, or for one we cannot give: refuse it, but only when
        // the client asked this server (a renewal names no server and may be another's).
        (MessageType::Request, _) if asked_server.is_some() || assigned.is_some() => MessageType::Nak,
        (MessageType::Request, _) => return None,
        (MessageType::Inform, _) => MessageType::Ack,
        _ => return None,
    };
    let mut reply = Message::new_with_id(
        req.xid(),
        Ipv4Addr::UNSPECIFIED,
        Ipv4Addr::UNSPECIFIED,
        Ipv4Addr::UNSPECIFIED,
        req.giaddr(),
        &mac.0,
    );
    reply.set_opcode(Opcode::BootReply).set_htype(HType::Eth).set_flags(req.flags());
    let opts = reply.opts_mut();
    opts.insert(DhcpOption::MessageType(reply_type));
    if let Some(id) = cfg.server_id {
        opts.insert(DhcpOption::ServerIdentifier(id));
    }
    if reply_type != MessageType::Nak
        && let Some(a) = &assigned
    {
        opts.insert(DhcpOption::SubnetMask(a.mask));
        if kind != MessageType::Inform
            && let Some(l) = cfg.lease
        {
            opts.insert(DhcpOption::AddressLeaseTime(u32::try_from(l.as_secs()).unwrap_or(u32::MAX)));
        }
        if !cfg.routers.is_empty() {
            opts.insert(DhcpOption::Router(cfg.routers.clone()));
        }
        if !cfg.dns.is_empty() && requested(req, OptionCode::DomainNameServer) {
            opts.insert(DhcpOption::DomainNameServer(cfg.dns.clone()));
        }
        let (tftp, file) = a.nbp.resolve(&cfg.nbp);
        if let Some(t) = tftp.as_ref().filter(|_| requested(req, OptionCode::TFTPServerName)) {
            opts.insert(DhcpOption::TFTPServerName(t.clone().into_bytes()));
        }
        if let Some(f) = file.as_ref().filter(|_| requested(req, OptionCode::BootfileName)) {
            opts.insert(DhcpOption::BootfileName(f.clone().into_bytes()));
        }
        if kind == MessageType::Inform {
            reply.set_ciaddr(req.ciaddr());
        } else {
            reply.set_yiaddr(a.ip);
        }
        // The BOOTP header's next server and file, which PXE firmware reads: the boot
        // server when it is an address, else this server (as mgmt).
        let next = tftp.as_deref().and_then(|t| t.parse::<Ipv4Addr>().ok()).or(cfg.server_id);
        if let Some(next) = next {
            reply.set_siaddr(next);
        }
        if let Some(f) = file.filter(|f| f.len() < 128) {
            reply.set_fname_str(f);
        }
    }
    let broadcast = SocketAddr::from((Ipv4Addr::BROADCAST, CLIENT_PORT));
    let to = if !req.giaddr().is_unspecified() {
        SocketAddr::from((req.giaddr(), SERVER_PORT))
    } else if reply_type == MessageType::Nak {
        broadcast
    } else if !req.ciaddr().is_unspecified() {
        SocketAddr::from((req.ciaddr(), CLIENT_PORT))
    } else {
        broadcast
    };
    if let Some(a) = &assigned
        && reply_type != MessageType::Nak
    {
        tracing::info!(%mac, ip = %a.ip, reply = ?reply_type, "dhcp");
    }
    Some((reply, to))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn request(kind: MessageType, mac: [u8; 6], opts: Vec<DhcpOption>) -> Message {
        let mut m = Message::new_with_id(
            7,
            Ipv4Addr::UNSPECIFIED,
            Ipv4Addr::UNSPECIFIED,
            Ipv4Addr::UNSPECIFIED,
            Ipv4Addr::UNSPECIFIED,
            &mac,
        );
        m.opts_mut().insert(DhcpOption::MessageType(kind));
        for o in opts {
            m.opts_mut().insert(o);
        }
        m
    }

    fn msg_type(m: &Message) -> MessageType {
        m.opts().msg_type().unwrap()
    }

    #[test]
    fn a_client_is_offered_acked_and_refused_another_address() {
        let span = super::super::pool::span(
            &super::super::pool::RangeParams { network: "10.5.0.0/24".into(), ..Default::default() },
            "x",
        )
        .unwrap();
        let range = Arc::new(RangeEntry::new("r", span, BTreeSet::new(), Nbp::default()));
        let host = Arc::new(HostEntry {
            name: "h".into(),
            mac: Mac([2, 0, 0, 0, 0, 0x42]),
            ip: "10.5.0.42".parse().unwrap(),
            mask: "255.255.255.0".parse().unwrap(),
            nbp: Nbp::new("tftp://10.5.0.1/pxelinux.0", "").unwrap(),
        });
        let me: Ipv4Addr = "10.5.0.1".parse().unwrap();
        let cfg = Config {
            server_id: Some(me),
            lease: Some(Duration::from_secs(60)),
            dns: vec![me],
            routers: vec![me],
            nbp: String::new(),
        };
        let prl = DhcpOption::ParameterRequestList(vec![OptionCode::DomainNameServer, OptionCode::BootfileName]);
        let ranges = [range.clone()];
        let hosts = [host];

        let (offer, to) =
            answer(&request(MessageType::Discover, [2, 0, 0, 0, 0, 1], vec![prl.clone()]), &cfg, &hosts, &ranges)
                .unwrap();
        assert_eq!(msg_type(&offer), MessageType::Offer);
        assert_eq!(offer.yiaddr(), "10.5.0.2".parse::<Ipv4Addr>().unwrap(), "the lowest free but the server's own");
        assert_eq!(to, SocketAddr::from((Ipv4Addr::BROADCAST, 68)));
        assert_eq!(
            offer.opts().get(OptionCode::SubnetMask),
            Some(&DhcpOption::SubnetMask("255.255.255.0".parse().unwrap()))
        );
        assert_eq!(offer.opts().get(OptionCode::AddressLeaseTime), Some(&DhcpOption::AddressLeaseTime(60)));
        assert!(offer.opts().get(OptionCode::DomainNameServer).is_some());

        let ok = vec![DhcpOption::RequestedIpAddress(offer.yiaddr()), DhcpOption::ServerIdentifier(me)];
        let (ack, _) = answer(&request(MessageType::Request, [2, 0, 0, 0, 0, 1], ok), &cfg, &hosts, &ranges).unwrap();
        assert_eq!((msg_type(&ack), ack.yiaddr()), (MessageType::Ack, offer.yiaddr()));

        let other =
            vec![DhcpOption::RequestedIpAddress("10.5.0.200".parse().unwrap()), DhcpOption::ServerIdentifier(me)];
        let (nak, to) =
            answer(&request(MessageType::Request, [2, 0, 0, 0, 0, 1], other), &cfg, &hosts, &ranges).unwrap();
        assert_eq!((msg_type(&nak), nak.yiaddr(), to.port()), (MessageType::Nak, Ipv4Addr::UNSPECIFIED, 68));

        let elsewhere = vec![DhcpOption::ServerIdentifier("10.5.0.254".parse().unwrap())];
        assert!(answer(&request(MessageType::Request, [2, 0, 0, 0, 0, 1], elsewhere), &cfg, &hosts, &ranges).is_none());

        // The host entry wins for its MAC, with its boot file.
        let (offer, _) =
            answer(&request(MessageType::Discover, [2, 0, 0, 0, 0, 0x42], vec![prl]), &cfg, &hosts, &ranges).unwrap();
        assert_eq!(offer.yiaddr(), "10.5.0.42".parse::<Ipv4Addr>().unwrap());
        assert_eq!(
            offer.opts().get(OptionCode::BootfileName),
            Some(&DhcpOption::BootfileName(b"/pxelinux.0".to_vec()))
        );

        // A release frees the address for the next client.
        answer(&request(MessageType::Release, [2, 0, 0, 0, 0, 1], vec![]), &cfg, &hosts, &ranges);
        let (offer, _) =
            answer(&request(MessageType::Discover, [2, 0, 0, 0, 0, 2], vec![]), &cfg, &hosts, &ranges).unwrap();
        assert_eq!(offer.yiaddr(), "10.5.0.2".parse::<Ipv4Addr>().unwrap(), "freed, and lowest");
    }
}
