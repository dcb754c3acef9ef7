//! `tftp:server` and `tftp:file`: a read-only TFTP server (RFC 1350, with the RFC 2347
//! option negotiation for `blksize`, `tsize` and `timeout` that network boot firmware
//! uses) listening on UDP `address` (default the name) while its watch runs. A read request
//! is answered from the `tftp:file` resources registered for this server (`server` param,
//! any server when empty) by their public `filename` (default the name; a leading `/` is
//! optional on either side), then from `root`, else "file not found". Write requests are
//! refused. `timeout` (seconds, default 5) is how long a block waits for its ACK before it
//! is sent again (five tries).

use lang::params::ParamMap;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use tokio::net::UdpSocket;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::util::listen::{bind_first, check_root};
use crate::util::registry::Registry;

/// The most transfers one server runs at once; more requests get a "busy" error.
pub const MAX_TRANSFERS: usize = 256;

/// mgmt's default per-block timeout, in seconds.
pub const DEFAULT_TIMEOUT: u64 = 5;
/// Sends of one packet before a transfer is given up.
const TRIES: usize = 5;
const SEGMENT: usize = 512;

const RRQ: u16 = 1;
const WRQ: u16 = 2;
const DATA: u16 = 3;
const ACK: u16 = 4;
const ERROR: u16 = 5;
const OACK: u16 = 6;

/// TFTP error codes (RFC 1350 section 5).
const E_UNDEFINED: u16 = 0;
const E_NOT_FOUND: u16 = 1;
const E_ACCESS: u16 = 2;
const E_ILLEGAL: u16 = 4;

/// What the tftp kinds of one engine share: the files by server, and where servers listen.
pub struct TftpHub {
    pub files: Arc<Registry<TftpEntry>>,
    bound: crate::util::listen::Bound,
}

impl TftpHub {
    /// The process-wide hub of the real host.
    pub fn new() -> Arc<TftpHub> {
        Arc::new(TftpHub { files: Registry::new(), bound: Default::default() })
    }

    /// Where the `tftp:server` called `name` listens, while it does.
    pub fn bound(&self, name: &str) -> Option<SocketAddr> {
        self.bound.get(name)
    }

    fn set_bound(&self, name: &str, addr: Option<SocketAddr>) {
        self.bound.set(name, addr)
    }
}

/// One served file: its public name and where its bytes come from.
pub struct TftpEntry {
    filename: String,
    source: Source,
}

enum Source {
    Data(Vec<u8>),
    Path(PathBuf),
}

impl TftpEntry {
    fn matches(&self, requested: &str) -> bool {
        self.filename == requested || self.filename.trim_start_matches('/') == requested.trim_start_matches('/')
    }
}

crate::params! {
    /// `tftp:server`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct ServerParams {
        pub address: String,
        /// Seconds.
        pub timeout: u64 = DEFAULT_TIMEOUT,
        pub root: String,
    }
}

pub struct TftpServer {
    raw: Raw,
    params: ServerParams,
    hub: Arc<TftpHub>,
}

impl TftpServer {
    pub fn build(hub: Arc<TftpHub>, name: &str, values: &ParamMap) -> Result<TftpServer, BuildError> {
        let (raw, params) = Raw::decoded("tftp:server", name, values, ServerParams::decode)?;
        Ok(TftpServer { raw, params, hub })
    }

    fn address(&self) -> &str {
        crate::util::listen::address(&self.params.address, &self.raw.name)
    }

    fn err(&self, field: &str, message: impl Into<String>) -> ResError {
        self.raw.invalid(Some(field), message)
    }
}

/// What every transfer of one running server needs.
pub struct Serving {
    pub files: Arc<Registry<TftpEntry>>,
    /// The server's name, which `tftp:file` resources name in `server`.
    pub name: String,
    pub root: String,
    pub timeout: Duration,
}

#[async_trait]
impl Resource for TftpServer {
    fn validate(&self) -> Result<(), ResError> {
        crate::util::listen::validate(self.address(), &self.params.root).map_err(|(field, why)| self.err(field, why))
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let address = self.address().to_string();
        let key = format!("tftp:server[{}]", self.raw.name);
        let hub = self.hub.clone();
        let timeout = if self.params.timeout == 0 { DEFAULT_TIMEOUT } else { self.params.timeout };
        let serving = Arc::new(Serving {
            files: hub.files.clone(),
            name: self.raw.name.clone(),
            root: self.params.root.clone(),
            timeout: Duration::from_secs(timeout),
        });
        Box::pin(async move {
            let sock = bind_first(&address, UdpSocket::bind).await.map_err(|e| ResError::new(format!("{key}: {e}")))?;
            let local = sock.local_addr().map_err(|e| ResError::new(format!("{key}: {e}")))?;
            tracing::info!(resource = %key, %local, "listening");
            hub.set_bound(&serving.name, Some(local));
            ctx.event();
            let result = serve(sock, serving.clone(), ctx.token()).await;
            if hub.bound(&serving.name) == Some(local) {
                hub.set_bound(&serving.name, None);
            }
            result.map_err(|e| ResError::new(format!("{key}: the server errored: {e}")))
        })
    }

    async fn check_apply(&mut self, _ctx: &mut ApplyCtx, _apply: bool) -> Result<bool, ResError> {
        let key = format!("tftp:server[{}]", self.raw.name);
        check_root(&key, &self.params.root).map_err(|m| self.err("root", m))?;
        if self.hub.bound(&self.raw.name).is_none() {
            return Err(ResError::new(format!("tftp:server[{}]: not listening on {}", self.raw.name, self.address())));
        }
        Ok(true)
    }

    crate::fingerprint_by_params!();
}

/// Answers requests on `sock` until `stop`; each read runs as its own transfer (own port,
/// as the protocol wants) owned by a join set, so none outlives this future.
pub async fn serve(sock: UdpSocket, serving: Arc<Serving>, stop: CancellationToken) -> io::Result<()> {
    let local_ip = sock.local_addr()?.ip();
    let mut transfers = JoinSet::new();
    let mut buf = vec![0u8; 65536];
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            Some(_) = transfers.join_next(), if !transfers.is_empty() => {}
            got = sock.recv_from(&mut buf) => {
                let (n, peer) = match got {
                    Ok(got) => got,
                    // ICMP errors from earlier sends surface here; they are not ours to fail on.
                    Err(e) if matches!(e.kind(), io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionReset) => continue,
                    Err(e) => return Err(e),
                };
                match parse_request(&buf[..n]) {
                    // Each transfer holds a socket until its client is done or gone (five
                    // unanswered tries): a flood of requests cannot take every descriptor.
                    Ok(req) if req.op == RRQ && transfers.len() >= MAX_TRANSFERS => {
                        tracing::warn!(server = %serving.name, %peer, "{MAX_TRANSFERS} transfers running: request refused");
                        let _sent = sock.send_to(&error_packet(0, "server busy, try again"), peer).await;
                    }
                    Ok(req) if req.op == RRQ => {
                        tracing::info!(server = %serving.name, %peer, file = %req.filename, "tftp read");
                        let serving = serving.clone();
                        transfers.spawn(async move {
                            if let Err(e) = transfer(serving, local_ip, peer, req).await {
                                tracing::info!(%peer, error = %e, "tftp transfer failed");
                            }
                        });
                    }
                    Ok(_) => {
                        let _sent = sock.send_to(&error_packet(E_ACCESS, "writing is not supported"), peer).await;
                    }
                    Err(e) => {
                        let _sent = sock.send_to(&error_packet(E_ILLEGAL, &e), peer).await;
                    }
                }
            }
        }
    }
    transfers.shutdown().await;
    Ok(())
}

/// A parsed RRQ or WRQ.
#[derive(Debug, PartialEq)]
pub struct ReqPacket {
    pub op: u16,
    pub filename: String,
    pub mode: String,
    /// Option names lowercased, in order.
    pub options: Vec<(String, String)>,
}

pub fn parse_request(packet: &[u8]) -> Result<ReqPacket, String> {
    if packet.len() < 2 {
        return Err("short packet".into());
    }
    let op = u16::from_be_bytes([packet[0], packet[1]]);
    if op != RRQ && op != WRQ {
        return Err(format!("unexpected opcode {op}"));
    }
    let body = &packet[2..];
    if body.last() != Some(&0) {
        return Err("request is not NUL-terminated".into());
    }
    let fields: Vec<String> =
        body[..body.len() - 1].split(|b| *b == 0).map(|f| String::from_utf8_lossy(f).into_owned()).collect();
    if fields.len() < 2 || fields[0].is_empty() {
        return Err("missing filename or mode".into());
    }
    let options =
        fields[2..].chunks(2).filter(|c| c.len() == 2).map(|c| (c[0].to_ascii_lowercase(), c[1].clone())).collect();
    Ok(ReqPacket { op, filename: fields[0].clone(), mode: fields[1].to_ascii_lowercase(), options })
}

pub fn error_packet(code: u16, message: &str) -> Vec<u8> {
    let mut p = Vec::with_capacity(5 + message.len());
    p.extend_from_slice(&ERROR.to_be_bytes());
    p.extend_from_slice(&code.to_be_bytes());
    p.extend_from_slice(message.as_bytes());
    p.push(0);
    p
}

/// The bytes a read asks for, or the TFTP error to answer with.
async fn lookup(serving: &Serving, filename: &str) -> Result<Vec<u8>, (u16, String)> {
    let entry = serving.files.members(&serving.name).into_iter().find(|e| e.matches(filename));
    let not_found = || (E_NOT_FOUND, format!("file not found: {filename}"));
    let read = |e: io::Error| match e.kind() {
        io::ErrorKind::NotFound => not_found(),
        io::ErrorKind::PermissionDenied => (E_ACCESS, format!("access violation: {filename}")),
        _ => (E_UNDEFINED, format!("could not read: {filename}")),
    };
    match entry.as_deref() {
        Some(TftpEntry { source: Source::Data(d), .. }) => Ok(d.clone()),
        Some(TftpEntry { source: Source::Path(p), .. }) => tokio::fs::read(p).await.map_err(read),
        None if !serving.root.is_empty() => {
            let path = crate::http::join_under(Path::new(&serving.root), filename).ok_or_else(not_found)?;
            if tokio::fs::metadata(&path).await.is_ok_and(|m| m.is_dir()) {
                return Err(not_found());
            }
            tokio::fs::read(&path).await.map_err(read)
        }
        None => Err(not_found()),
    }
}

/// netascii: CR LF line ends, and a bare CR as CR NUL.
fn to_netascii(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / 16);
    for &b in data {
        match b {
            b'\n' => out.extend_from_slice(b"\r\n"),
            b'\r' => out.extend_from_slice(b"\r\0"),
            b => out.push(b),
        }
    }
    out
}

/// One read: negotiate options, then send each block until it is acknowledged.
async fn transfer(
    serving: Arc<Serving>,
    local_ip: std::net::IpAddr,
    peer: SocketAddr,
    req: ReqPacket,
) -> io::Result<()> {
    let sock = UdpSocket::bind(SocketAddr::new(local_ip, 0)).await?;
    sock.connect(peer).await?;
    let data = match req.mode.as_str() {
        "octet" | "netascii" => match lookup(&serving, &req.filename).await {
            Ok(d) if req.mode == "netascii" => to_netascii(&d),
            Ok(d) => d,
            Err((code, msg)) => {
                sock.send(&error_packet(code, &msg)).await?;
                return Ok(());
            }
        },
        other => {
            sock.send(&error_packet(E_ILLEGAL, &format!("unsupported mode `{other}`"))).await?;
            return Ok(());
        }
    };

    let mut block_size = SEGMENT;
    let mut timeout = serving.timeout;
    let mut accepted = Vec::new();
    for (name, value) in &req.options {
        match name.as_str() {
            "blksize" => {
                if let Ok(n) = value.parse::<usize>() {
                    block_size = n.clamp(8, 65464);
                    accepted.push((name.clone(), block_size.to_string()));
                }
            }
            "tsize" => accepted.push((name.clone(), data.len().to_string())),
            "timeout" => {
                if let Ok(n @ 1..=255) = value.parse::<u64>() {
                    timeout = Duration::from_secs(n);
                    accepted.push((name.clone(), n.to_string()));
                }
            }
            _ => {}
        }
    }
    if !accepted.is_empty() {
        let mut oack = OACK.to_be_bytes().to_vec();
        for (k, v) in &accepted {
            oack.extend_from_slice(k.as_bytes());
            oack.push(0);
            oack.extend_from_slice(v.as_bytes());
            oack.push(0);
        }
        send_until_acked(&sock, &oack, 0, timeout).await?;
    }

    // The last block is shorter than a full one (empty when the size is a multiple).
    let blocks = data.len() / block_size + 1;
    for i in 0..blocks {
        let block = ((i + 1) % 65536) as u16;
        let chunk = &data[i * block_size..((i + 1) * block_size).min(data.len())];
        let mut packet = Vec::with_capacity(4 + chunk.len());
        packet.extend_from_slice(&DATA.to_be_bytes());
        packet.extend_from_slice(&block.to_be_bytes());
        packet.extend_from_slice(chunk);
        send_until_acked(&sock, &packet, block, timeout).await?;
    }
    tracing::info!(%peer, file = %req.filename, bytes = data.len(), "tftp sent");
    Ok(())
}

/// Sends `packet` and waits for `ACK block`, resending on timeout; duplicate ACKs of
/// earlier blocks are ignored (no sorcerer's apprentice).
async fn send_until_acked(sock: &UdpSocket, packet: &[u8], block: u16, timeout: Duration) -> io::Result<()> {
    let mut buf = [0u8; 1024];
    for _ in 0..TRIES {
        sock.send(packet).await?;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let n = match tokio::time::timeout_at(deadline, sock.recv(&mut buf)).await {
                Err(_) => break,
                Ok(n) => n?,
            };
            if n < 4 {
                continue;
            }
            let op = u16::from_be_bytes([buf[0], buf[1]]);
            let arg = u16::from_be_bytes([buf[2], buf[3]]);
            match op {
                ACK if arg == block => return Ok(()),
                ERROR => {
                    let msg = String::from_utf8_lossy(&buf[4..n]).trim_end_matches('\0').to_string();
                    return Err(io::Error::other(format!("the client aborted: {msg}")));
                }
                _ => {}
            }
        }
    }
    Err(io::Error::new(io::ErrorKind::TimedOut, format!("no ACK for block {block}")))
}

crate::params! {
    /// `tftp:file`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct FileParams {
        pub server: String,
        pub filename: String,
        pub path: String,
        pub data: String,
    }
}

pub struct TftpFile {
    raw: Raw,
    params: FileParams,
    hub: Arc<TftpHub>,
    entry: Arc<TftpEntry>,
}

impl TftpFile {
    pub fn build(hub: Arc<TftpHub>, name: &str, values: &ParamMap) -> Result<TftpFile, BuildError> {
        let (raw, params) = Raw::decoded("tftp:file", name, values, FileParams::decode)?;
        let filename = if params.filename.is_empty() { name.to_string() } else { params.filename.clone() };
        let source = if params.path.is_empty() {
            Source::Data(params.data.as_bytes().to_vec())
        } else {
            Source::Path(PathBuf::from(&params.path))
        };
        Ok(TftpFile { raw, params, hub, entry: Arc::new(TftpEntry { filename, source }) })
    }

    fn err(&self, field: &str, message: impl Into<String>) -> ResError {
        self.raw.invalid(Some(field), message)
    }
}

#[async_trait]
impl Resource for TftpFile {
    fn validate(&self) -> Result<(), ResError> {
        if self.entry.filename.is_empty() {
            return Err(self.err("filename", "empty filename"));
        }
        if !self.params.path.is_empty() {
            crate::util::path::check(&self.params.path).map_err(|m| self.err("path", m))?;
        }
        if !self.params.path.is_empty() && !self.params.data.is_empty() {
            return Err(self.err("data", "must not specify both path and data"));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        self.hub.files.listed_while_running(self.params.server.clone(), self.entry.clone(), ctx)
    }

    async fn check_apply(&mut self, _ctx: &mut ApplyCtx, _apply: bool) -> Result<bool, ResError> {
        // Served on demand; nothing to converge.
        Ok(true)
    }

    crate::fingerprint_by_params!();
}

/// The `tftp:server` kind: its params and send fields as the type checker sees them, and its constructor.
pub const TFTP_SERVER: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("tftp:server", ServerParams::FIELDS, |host, name, params| {
        Ok(Box::new(TftpServer::build(host.tftp.clone(), name, params)?))
    });

/// The `tftp:file` kind: its params and send fields as the type checker sees them, and its constructor.
pub const TFTP_FILE: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("tftp:file", FileParams::FIELDS, |host, name, params| {
        Ok(Box::new(TftpFile::build(host.tftp.clone(), name, params)?))
    });

#[cfg(test)]
mod tests {
    use super::*;
    use lang::value::Value;

    /// A minimal RFC 1350 client: one read, ACKing every block; returns the bytes or the
    /// server's error.
    async fn read(
        server: SocketAddr,
        filename: &str,
        mode: &str,
        options: &[(&str, &str)],
    ) -> Result<Vec<u8>, (u16, String)> {
        let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let mut rrq = RRQ.to_be_bytes().to_vec();
        for field in [filename, mode].into_iter().chain(options.iter().flat_map(|(k, v)| [*k, *v])) {
            rrq.extend_from_slice(field.as_bytes());
            rrq.push(0);
        }
        sock.send_to(&rrq, server).await.unwrap();
        let mut block_size = 512;
        let mut out = Vec::new();
        let mut expect: u16 = 1;
        let mut buf = vec![0u8; 70000];
        loop {
            let (n, from) =
                tokio::time::timeout(Duration::from_secs(5), sock.recv_from(&mut buf)).await.unwrap().unwrap();
            assert_ne!(from, server, "transfers come from their own port");
            let op = u16::from_be_bytes([buf[0], buf[1]]);
            match op {
                ERROR => {
                    let code = u16::from_be_bytes([buf[2], buf[3]]);
                    return Err((code, String::from_utf8_lossy(&buf[4..n - 1]).into_owned()));
                }
                OACK => {
                    let fields: Vec<String> =
                        buf[2..n - 1].split(|b| *b == 0).map(|f| String::from_utf8_lossy(f).into_owned()).collect();
                    for kv in fields.chunks(2) {
                        if kv[0] == "blksize" {
                            block_size = kv[1].parse().unwrap();
                        }
                    }
                    sock.send_to(&[0, ACK as u8, 0, 0], from).await.unwrap();
                }
                DATA => {
                    let block = u16::from_be_bytes([buf[2], buf[3]]);
                    sock.send_to(&[0, ACK as u8, buf[2], buf[3]], from).await.unwrap();
                    if block != expect {
                        continue; // a resend of a block we already have
                    }
                    out.extend_from_slice(&buf[4..n]);
                    expect = expect.wrapping_add(1);
                    if n - 4 < block_size {
                        return Ok(out);
                    }
                }
                other => panic!("unexpected opcode {other}"),
            }
        }
    }

    async fn start(
        files: Arc<Registry<TftpEntry>>,
        root: &str,
    ) -> (SocketAddr, CancellationToken, tokio::task::JoinHandle<io::Result<()>>) {
        let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = sock.local_addr().unwrap();
        let serving =
            Arc::new(Serving { files, name: ":1069".into(), root: root.into(), timeout: Duration::from_secs(1) });
        let stop = CancellationToken::new();
        let task = tokio::spawn(serve(sock, serving, stop.clone()));
        (addr, stop, task)
    }

    /// Issue 44, defect 7: read requests whose client never acknowledges each held a
    /// socket for five tries; past [`MAX_TRANSFERS`] the server now answers "busy".
    #[tokio::test]
    async fn a_flood_of_requests_is_refused_past_the_transfer_cap() {
        let hub = TftpHub::new();
        let inline = file(&hub, "/f", &[("data", "x")]);
        let _reg = hub.files.register(&inline.params.server, inline.entry.clone());
        let (addr, stop, task) = start(hub.files.clone(), "").await;
        let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        for _ in 0..=MAX_TRANSFERS {
            sock.send_to(b"\x00\x01/f\x00octet\x00", addr).await.unwrap();
        }
        let mut buf = [0u8; 600];
        let busy = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                let (n, _) = sock.recv_from(&mut buf).await.unwrap();
                if buf[..2] == ERROR.to_be_bytes() && buf[4..n].starts_with(b"server busy") {
                    return;
                }
            }
        })
        .await;
        assert!(busy.is_ok(), "the request past the cap was refused");
        stop.cancel();
        task.await.unwrap().unwrap();
    }

    fn file(hub: &Arc<TftpHub>, name: &str, pairs: &[(&str, &str)]) -> TftpFile {
        let values = pairs.iter().map(|(k, v)| (k.to_string(), Value::str(*v))).collect();
        TftpFile::build(hub.clone(), name, &values).unwrap()
    }

    #[test]
    fn requests_parse_and_errors_encode() {
        let req = parse_request(b"\x00\x01/file1\x00octet\x00blksize\x001428\x00").unwrap();
        assert_eq!(req.filename, "/file1");
        assert_eq!(req.mode, "octet");
        assert_eq!(req.options, [("blksize".to_string(), "1428".to_string())]);
        assert!(parse_request(b"\x00\x03xx").is_err());
        assert!(parse_request(b"\x00\x01nomode").is_err());
        assert_eq!(error_packet(1, "x"), b"\x00\x05\x00\x01x\x00");
        assert_eq!(to_netascii(b"a\nb\rc"), b"a\r\nb\r\0c");
    }

    #[test]
    fn validation_names_the_field() {
        let hub = TftpHub::new();
        let both = file(&hub, "/f", &[("path", "/x"), ("data", "y")]);
        assert!(both.validate().unwrap_err().message.contains("tftp:file[/f]: field `data`"));
        let values = [("root".to_string(), Value::str("/srv"))].into_iter().collect();
        let server = TftpServer::build(hub, ":1069", &values).unwrap();
        assert!(server.validate().unwrap_err().message.contains("field `root`"));
        assert_eq!(server.params.timeout, DEFAULT_TIMEOUT);
    }

    #[tokio::test]
    async fn reads_registered_files_and_the_root_over_real_udp() {
        let hub = TftpHub::new();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file0"), "i'm file0\n").unwrap();
        let big: Vec<u8> = (0..1500u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(dir.path().join("big.bin"), &big).unwrap();
        let exact: Vec<u8> = vec![7u8; 1024];
        std::fs::write(dir.path().join("exact"), &exact).unwrap();

        let inline = file(&hub, "/file1", &[("data", "hello, world\n")]);
        let disk = file(&hub, "/file2", &[("path", &dir.path().join("big.bin").display().to_string())]);
        let elsewhere = file(&hub, "/nope/noway", &[("data", "hidden"), ("server", "someone else!")]);
        let _a = hub.files.register(&inline.params.server, inline.entry.clone());
        let _b = hub.files.register(&disk.params.server, disk.entry.clone());
        let _c = hub.files.register(&elsewhere.params.server, elsewhere.entry.clone());
        let root = format!("{}/", dir.path().display());
        let (addr, stop, task) = start(hub.files.clone(), &root).await;

        assert_eq!(read(addr, "/file1", "octet", &[]).await.unwrap(), b"hello, world\n");
        assert_eq!(read(addr, "file1", "octet", &[]).await.unwrap(), b"hello, world\n", "the slash is optional");
        assert_eq!(read(addr, "/file2", "octet", &[]).await.unwrap(), big, "three blocks");
        assert_eq!(read(addr, "/exact", "octet", &[]).await.unwrap(), exact, "a final empty block");
        assert_eq!(read(addr, "/file0", "netascii", &[]).await.unwrap(), b"i'm file0\r\n");
        assert_eq!(read(addr, "/file2", "octet", &[("blksize", "1024"), ("tsize", "0")]).await.unwrap(), big);
        assert_eq!(read(addr, "/nope/noway", "octet", &[]).await.unwrap_err().0, E_NOT_FOUND, "another server's file");
        assert_eq!(read(addr, "/../etc/passwd", "octet", &[]).await.unwrap_err().0, E_NOT_FOUND);
        assert_eq!(read(addr, "/missing", "octet", &[]).await.unwrap_err().0, E_NOT_FOUND);
        assert_eq!(read(addr, "/file1", "mail", &[]).await.unwrap_err().0, E_ILLEGAL);

        let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        sock.send_to(b"\x00\x02upload\x00octet\x00", addr).await.unwrap();
        let mut buf = [0u8; 100];
        let (n, _) = tokio::time::timeout(Duration::from_secs(5), sock.recv_from(&mut buf)).await.unwrap().unwrap();
        assert_eq!(&buf[..4], b"\x00\x05\x00\x02", "writes are refused: {:?}", &buf[..n]);

        stop.cancel();
        task.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn an_unacknowledged_block_is_resent() {
        let hub = TftpHub::new();
        let f = file(&hub, "/f", &[("data", "x")]);
        let _listed = hub.files.register("", f.entry.clone());
        let (addr, stop, _task) = start(hub.files.clone(), "").await;
        let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        sock.send_to(b"\x00\x01/f\x00octet\x00", addr).await.unwrap();
        let mut buf = [0u8; 600];
        let (n1, _) = sock.recv_from(&mut buf).await.unwrap();
        let first = buf[..n1].to_vec();
        // No ACK: the same block comes again after the (1 s) timeout.
        let (n2, from) = tokio::time::timeout(Duration::from_secs(3), sock.recv_from(&mut buf)).await.unwrap().unwrap();
        assert_eq!(buf[..n2], first[..]);
        sock.send_to(&[0, 4, 0, 1], from).await.unwrap();
        stop.cancel();
    }
}
