//! `remote`: runs this very `tend` binary, with the program this agent runs, on another
//! host over SSH, as mgmt's remote execution. The name (or `remote`) is the target,
//! `ssh://user@host:port/` (root and 22 by default). The watch holds the SSH connection:
//! it copies the binary into a working directory under the remote user's
//! `~/.tend/remote/` (kept, and not copied again while it matches, with `caching`), copies
//! the program's files beside it (at each connection, and again with each new deploy this
//! agent runs: the remote agent live-edits with them; an edit of a program run from disk
//! reaches it at the next connection), and supervises the remote agent that check-apply
//! starts: `tend run` as `hostname` (default: the remote host's own name), exiting once converged
//! with `converger_timeout`. When this agent is on a cluster, the remote agent joins it:
//! through a reverse tunnel over the SSH connection (`tunnelled`, listening on
//! `tunnel_addr` there) or directly. Without a cluster the remote agent has its own local
//! world.
//!
//! `transient` (default): the remote agent lives as long as this resource and the
//! connection — when either goes, so does it (its shell kills it when the SSH channel
//! closes). Otherwise it is started detached and kept running: its pid is checked every
//! 5 s (mgmt: 30 s) over the held connection, and a dead agent is started again. `state => "stopped"` stops a
//! remote agent this resource started. The host key must be known: `hostkey` (the base64
//! part of a known_hosts line), else the agent user's `~/.ssh/known_hosts`; an unknown key
//! is refused with its fingerprint, never trusted on first use. Authentication is by key
//! (`ssh_id`, else `~/.ssh/id_ed25519`, `id_ecdsa`, `id_rsa`), then a password in the URL
//! only with `allow_cleartext_password`. tend never prompts (`interactive` is refused), and
//! needs no packages on the remote host (`install_deps` has nothing to install).

use lang::params::ParamMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use russh::ChannelMsg;
use russh::client::ChannelOpenHandle;
use russh::client::{self, Handle};
use russh::keys::{HashAlg, PrivateKeyWithHashAlg, PublicKey, PublicKeyOrCertificate};
use sha2::{Digest, Sha256};
use tokio::sync::watch;

use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::files::deploy_tar::ProgramRoot;

/// How long a TCP connect and the SSH handshake may take.
const CONNECT: Duration = Duration::from_secs(15);
/// How long a stopped remote agent has to exit before it is killed.
const STOP_GRACE_TENTHS: u32 = 300;
/// Reconnection back-off bounds.
const BACKOFF_MIN: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(30);

crate::params! {
    /// `remote`'s params (mgmt's names and defaults).
    #[derive(Clone, Debug, PartialEq)]
    pub struct RemoteParams {
        pub remote: String,
        pub hostname: String,
        pub state: String = "running".into(),
        /// Absent: the usual keys under `~/.ssh`; `""`: no key.
        pub ssh_id: Option<String> as "str" => |p, f| p.opt_str(f),
        pub hostkey: String,
        pub interactive: bool,
        pub interactive_timeout: i64,
        pub max_password_tries: i64,
        pub allow_cleartext_password: bool,
        pub caching: bool = true,
        pub transient: bool = true,
        pub tunnelled: bool = true,
        pub tunnel_addr: String = "127.0.0.1:2379".into(),
        pub install_deps: bool,
        pub converger_timeout: Option<i64> as "int" => |p, f| p.opt_int_in(f, 0, i64::from(i32::MAX), "int"),
    }
}

/// Where to connect, from `ssh://user[:password]@host[:port][/]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub user: String,
    pub host: String,
    pub port: u16,
    pub password: Option<String>,
}

impl Target {
    pub fn parse(url: &str) -> Result<Target, String> {
        let rest = url.strip_prefix("ssh://").ok_or_else(|| format!("{url:?} is not an ssh:// URL"))?;
        let rest = rest.trim_end_matches('/');
        if rest.contains('/') {
            return Err(format!("{url:?} has a path; write ssh://user@host:port/"));
        }
        let (userinfo, hostport) = match rest.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, rest),
        };
        let (user, password) = match userinfo.map(|u| u.split_once(':').map_or((u, None), |(u, p)| (u, Some(p)))) {
            Some((u, p)) => (u.to_string(), p.map(str::to_string)),
            None => ("root".to_string(), None),
        };
        let (host, port) = match hostport.strip_prefix('[').and_then(|h| h.split_once(']')) {
            Some((h, p)) => (h.to_string(), p.strip_prefix(':')),
            None => match hostport.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (hostport.to_string(), None),
            },
        };
        let port = match port {
            Some(p) => p.parse().map_err(|_| format!("{p:?} is not a port"))?,
            None => 22,
        };
        if host.is_empty() || user.is_empty() {
            return Err(format!("{url:?} names no host or user"));
        }
        Ok(Target { user, host, port, password })
    }

    /// `user@host:port`, never the password.
    pub fn shown(&self) -> String {
        format!("{}@{}:{}", self.user, self.host, self.port)
    }
}

/// Quotes `s` for a POSIX shell.
fn sh(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

// ---------------------------------------------------------------------------------------
// The SSH connection

/// What the connection checks and forwards.
struct Client {
    host: String,
    port: u16,
    hostkey: Option<PublicKey>,
    /// The fingerprint of a host key refused, for the error.
    refused: Arc<Mutex<Option<String>>>,
    /// Where a connection the remote side opens through the tunnel goes (`host:port`).
    forward_to: Option<String>,
}

impl client::Handler for Client {
    type Error = russh::Error;

    async fn check_server_key(&mut self, key: &PublicKeyOrCertificate) -> Result<bool, Self::Error> {
        let PublicKeyOrCertificate::PublicKey { key, .. } = key else {
            *self.refused.lock().unwrap_or_else(|p| p.into_inner()) = Some("a host certificate".into());
            return Ok(false);
        };
        let trusted = match &self.hostkey {
            Some(k) => k.key_data() == key.key_data(),
            None => russh::keys::check_known_hosts(&self.host, self.port, key).unwrap_or(false),
        };
        if !trusted {
            let fp = format!("{} {}", key.algorithm(), key.fingerprint(HashAlg::Sha256));
            *self.refused.lock().unwrap_or_else(|p| p.into_inner()) = Some(fp);
        }
        Ok(trusted)
    }

    async fn server_channel_open_forwarded_tcpip(
        &mut self,
        channel: russh::Channel<client::Msg>,
        _connected_address: &str,
        _connected_port: u32,
        _originator_address: &str,
        _originator_port: u32,
        reply: ChannelOpenHandle,
        _session: &mut client::Session,
    ) -> Result<(), Self::Error> {
        let Some(to) = self.forward_to.clone() else {
            drop(reply); // refused
            return Ok(());
        };
        reply.accept().await;
        tokio::spawn(async move {
            match tokio::net::TcpStream::connect(&to).await {
                Ok(mut tcp) => {
                    let mut stream = channel.into_stream();
                    let _ = tokio::io::copy_bidirectional(&mut stream, &mut tcp).await;
                }
                Err(e) => tracing::warn!(%to, error = %e, "the tunnel could not reach the cluster"),
            }
        });
        Ok(())
    }
}

/// The keys to offer.
fn key_paths(ssh_id: Option<&str>) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/root"));
    match ssh_id {
        Some("") => Vec::new(),
        Some(p) => vec![match p.strip_prefix("~/") {
            Some(rest) => home.join(rest),
            None => PathBuf::from(p),
        }],
        None => ["id_ed25519", "id_ecdsa", "id_rsa"]
            .iter()
            .map(|k| home.join(".ssh").join(k))
            .filter(|p| p.exists())
            .collect(),
    }
}

/// An authenticated connection.
struct Link {
    handle: Handle<Client>,
}

/// A command's exit status and its merged output.
struct Ran {
    code: u32,
    output: String,
}

impl Link {
    async fn connect(p: &RemoteParams, target: &Target, forward_to: Option<String>) -> Result<Link, String> {
        let hostkey = if p.hostkey.is_empty() { None } else { Some(parse_hostkey(&p.hostkey)?) };
        let refused = Arc::new(Mutex::new(None));
        let handler =
            Client { host: target.host.clone(), port: target.port, hostkey, refused: refused.clone(), forward_to };
        let config = Arc::new(client::Config {
            keepalive_interval: Some(Duration::from_secs(15)),
            keepalive_max: 3,
            ..Default::default()
        });
        let connecting = client::connect(config, (target.host.as_str(), target.port), handler);
        let mut handle = match tokio::time::timeout(CONNECT, connecting).await {
            Err(_) => return Err(format!("{} did not answer within {}s", target.shown(), CONNECT.as_secs())),
            Ok(Err(e)) => {
                if let Some(fp) = refused.lock().unwrap_or_else(|p| p.into_inner()).take() {
                    return Err(format!(
                        "the host key of {} is not trusted ({fp}): add it to known_hosts or give it as `hostkey`",
                        target.shown()
                    ));
                }
                return Err(format!("could not connect to {}: {e}", target.shown()));
            }
            Ok(Ok(h)) => h,
        };
        let mut tried = Vec::new();
        for path in key_paths(p.ssh_id.as_deref()) {
            let key = match russh::keys::load_secret_key(&path, None) {
                Ok(k) => k,
                Err(e) => {
                    tried.push(format!("{}: {e}", path.display()));
                    continue;
                }
            };
            let hash = handle.best_supported_rsa_hash().await.map_err(|e| e.to_string())?.flatten();
            let auth = handle
                .authenticate_publickey(&target.user, PrivateKeyWithHashAlg::new(Arc::new(key), hash))
                .await
                .map_err(|e| format!("{}: {e}", target.shown()))?;
            if auth.success() {
                return Ok(Link { handle });
            }
            tried.push(format!("{} was refused", path.display()));
        }
        if let Some(pw) = target.password.as_deref().filter(|_| p.allow_cleartext_password) {
            let auth =
                handle.authenticate_password(&target.user, pw).await.map_err(|e| format!("{}: {e}", target.shown()))?;
            if auth.success() {
                return Ok(Link { handle });
            }
            tried.push("the password was refused".into());
        }
        if tried.is_empty() {
            tried.push("no key to offer (give `ssh_id`)".into());
        }
        Err(format!("{} refused every credential: {}", target.shown(), tried.join("; ")))
    }

    /// Runs `cmd` in the remote user's shell with `input` on its stdin.
    async fn run(&self, cmd: &str, input: &[u8]) -> Result<Ran, String> {
        let mut ch = self.handle.channel_open_session().await.map_err(|e| format!("opening a channel: {e}"))?;
        ch.exec(true, cmd).await.map_err(|e| format!("running a command: {e}"))?;
        if !input.is_empty() {
            ch.data(input).await.map_err(|e| format!("sending data: {e}"))?;
        }
        ch.eof().await.map_err(|e| format!("sending data: {e}"))?;
        let mut output = Vec::new();
        let mut code = None;
        while let Some(msg) = ch.wait().await {
            match msg {
                ChannelMsg::Data { data } | ChannelMsg::ExtendedData { data, .. } => output.extend_from_slice(&data),
                ChannelMsg::ExitStatus { exit_status } => code = Some(exit_status),
                _ => {}
            }
        }
        Ok(Ran { code: code.unwrap_or(255), output: String::from_utf8_lossy(&output).into_owned() })
    }

    /// Runs `cmd`, failing with its output unless it exits 0.
    async fn ok(&self, what: &str, cmd: &str, input: &[u8]) -> Result<String, String> {
        let ran = self.run(cmd, input).await?;
        if ran.code != 0 {
            return Err(format!("{what} failed ({}): {}", ran.code, ran.output.trim()));
        }
        Ok(ran.output)
    }

    async fn close(&self) {
        let _ = self.handle.disconnect(russh::Disconnect::ByApplication, "", "en").await;
    }
}

fn parse_hostkey(text: &str) -> Result<PublicKey, String> {
    // The base64 part of a known_hosts line; a whole `type base64` pair is taken too.
    let b64 = text.split_whitespace().find(|w| w.starts_with("AAAA")).unwrap_or(text.trim());
    russh::keys::parse_public_key_base64(b64).map_err(|e| format!("{text:?} is not a host key: {e}"))
}

// ---------------------------------------------------------------------------------------
// What runs remotely

/// This binary's path and sha256, read once per process: each connection compares the
/// copy there with it, and reads the binary again only to send it.
async fn this_binary() -> Result<(PathBuf, String), String> {
    static THIS: std::sync::OnceLock<(PathBuf, String)> = std::sync::OnceLock::new();
    if let Some(known) = THIS.get() {
        return Ok(known.clone());
    }
    let exe = std::env::current_exe().map_err(|e| format!("this binary's path: {e}"))?;
    let path = exe.clone();
    let digest = tokio::task::spawn_blocking(move || {
        let bytes = std::fs::read(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        Ok::<_, String>(Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect::<String>())
    })
    .await
    .map_err(|e| e.to_string())??;
    Ok(THIS.get_or_init(|| (exe, digest)).clone())
}

/// The remote agent's working directory, from the agent's host name and the resource's.
fn work_id(local: &str, name: &str) -> String {
    let digest = Sha256::digest(format!("{local}\0{name}").as_bytes());
    digest.iter().take(5).map(|b| format!("{b:02x}")).collect()
}

/// The shell that starts the remote agent and, for a transient one, kills it when the SSH
/// channel closes (its stdin ends), then reports its exit.
fn start_script(wd: &str, args: &str, transient: bool) -> String {
    let wd = sh(wd);
    if transient {
        format!(
            "cd {wd} || exit 97\nexec 3<&0\n./tend {args} </dev/null >>tend.log 2>&1 &\nchild=$!\necho $child > pid\n\
             ( cat <&3 >/dev/null 2>&1; kill -TERM $child 2>/dev/null ) >/dev/null 2>&1 &\n\
             wait $child\nstatus=$?\necho $status > exit\nexit $status\n"
        )
    } else {
        format!(
            "cd {wd} || exit 97\nif [ -r pid ] && kill -0 \"$(cat pid)\" 2>/dev/null; then exit 0; fi\n\
             rm -f exit\nsetsid ./tend {args} </dev/null >>tend.log 2>&1 &\necho $! > pid\n"
        )
    }
}

/// `tend`'s arguments for the remote agent.
fn agent_args(p: &RemoteParams, entry: &str, wd: &str, seeds: Option<&str>) -> String {
    let mut args = format!("run {} --prefix {}", sh(&format!("{wd}/program{entry}")), sh(&format!("{wd}/prefix")));
    if !p.hostname.is_empty() {
        args.push_str(&format!(" --hostname {}", sh(&p.hostname)));
    }
    if let Some(s) = seeds {
        args.push_str(&format!(" --seeds {}", sh(s)));
    }
    if let Some(t) = p.converger_timeout {
        args.push_str(&format!(" --converged-timeout {t}"));
    }
    args
}

/// Stops the agent whose pid is in `wd`: TERM, then KILL after the grace period.
fn stop_script(wd: &str) -> String {
    format!(
        "cd {} 2>/dev/null || exit 0\n[ -r pid ] || exit 0\np=$(cat pid)\nkill -TERM \"$p\" 2>/dev/null || {{ rm -f pid; exit 0; }}\n\
         i=0\nwhile kill -0 \"$p\" 2>/dev/null && [ $i -lt {STOP_GRACE_TENTHS} ]; do sleep 0.1; i=$((i+1)); done\n\
         kill -KILL \"$p\" 2>/dev/null\nrm -f pid\n",
        sh(wd)
    )
}

/// The program's files as a tar stream: the tree under `root`, without hidden entries,
/// symlinks and the directories `skip` names (the agent's own state).
fn program_tar(root: &Path, skip: &[PathBuf]) -> Result<Vec<u8>, String> {
    fn walk(b: &mut tar::Builder<Vec<u8>>, dir: &Path, rel: &Path, skip: &[PathBuf]) -> std::io::Result<()> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)?.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name();
            let path = e.path();
            if name.to_string_lossy().starts_with('.') || skip.iter().any(|s| path.starts_with(s)) {
                continue;
            }
            let ty = e.file_type()?;
            if ty.is_dir() {
                walk(b, &path, &rel.join(&name), skip)?;
            } else if ty.is_file() {
                b.append_path_with_name(&path, rel.join(&name))?;
            }
        }
        Ok(())
    }
    let mut b = tar::Builder::new(Vec::new());
    b.mode(tar::HeaderMode::Deterministic);
    walk(&mut b, root, Path::new(""), skip)
        .map_err(|e| format!("reading the program under {}: {e}", root.display()))?;
    b.into_inner().map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------------------
// The resource

/// What the watch's supervisor knows of the remote agent.
#[derive(Clone, Debug, PartialEq)]
enum Status {
    Connecting,
    Unreachable(String),
    /// Connected and prepared; no agent running.
    Ready,
    Running,
    /// The agent exited with `code` (`None`: the connection went), its log's last lines.
    Exited {
        code: Option<u32>,
        log: String,
    },
}

/// The connection while the watch holds one.
#[derive(Clone)]
struct Session {
    link: Arc<Link>,
    wd: String,
    seeds: Option<String>,
}

/// What check-apply and the watch share. Check-apply starts the agent itself on the
/// watch's connection and hands its channel over: it never waits for the watch (which the
/// engine may poll only between check-applies).
struct Shared {
    status: watch::Sender<Status>,
    session: Mutex<Option<Session>>,
    handover: Mutex<Option<russh::Channel<client::Msg>>>,
    handed: tokio::sync::Notify,
}

impl Shared {
    fn set(&self, status: Status) {
        self.status.send_if_modified(|now| {
            let changed = *now != status;
            *now = status;
            changed
        });
    }

    fn session(&self) -> Option<Session> {
        self.session.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

pub struct Remote {
    raw: Raw,
    params: RemoteParams,
    program: Arc<ProgramRoot>,
    world: Arc<dyn world::World>,
    shared: Arc<Shared>,
}

impl Remote {
    pub fn build(host: &crate::Machine, name: &str, values: &ParamMap) -> Result<Remote, BuildError> {
        let (raw, params) = Raw::decoded("remote", name, values, RemoteParams::decode)?;
        let shared = Arc::new(Shared {
            status: watch::Sender::new(Status::Connecting),
            session: Mutex::default(),
            handover: Mutex::default(),
            handed: tokio::sync::Notify::new(),
        });
        Ok(Remote { raw, params, program: host.program.clone(), world: host.world.clone(), shared })
    }

    fn url(&self) -> &str {
        if self.params.remote.is_empty() { &self.raw.name } else { &self.params.remote }
    }

    fn key(&self) -> String {
        format!("remote[{}]", self.raw.name)
    }

    fn wd_expr(&self) -> String {
        format!(".tend/remote/{}", work_id(self.world.hostname(), &self.raw.name))
    }
}

/// Everything the supervisor task needs, owned.
struct Plan {
    key: String,
    params: RemoteParams,
    target: Target,
    wd_rel: String,
    program: Arc<ProgramRoot>,
    cluster: Vec<String>,
    shared: Arc<Shared>,
}

impl Plan {
    /// Connects and prepares the working directory, binary and program; returns the
    /// link, the working directory and the seeds the remote agent gets.
    async fn prepare(&self) -> Result<(Link, String, Option<String>), String> {
        let p = &self.params;
        let forward_to =
            self.cluster.first().map(|u| u.trim_start_matches("http://").trim_end_matches('/').to_string());
        let tunnel = p.tunnelled && forward_to.is_some();
        let link = Link::connect(p, &self.target, if tunnel { forward_to } else { None }).await?;
        let wd = link
            .ok(
                "making the working directory",
                &format!("mkdir -p \"$HOME\"/{0} && cd \"$HOME\"/{0} && pwd", sh(&self.wd_rel)),
                b"",
            )
            .await?
            .trim()
            .to_string();
        // The binary: copied unless the one there matches.
        let (exe, digest) = this_binary().await?;
        let there = link.run(&format!("sha256sum {}/tend 2>/dev/null", sh(&wd)), b"").await?;
        if !(p.caching && there.output.starts_with(&digest)) {
            let bytes = tokio::fs::read(&exe).await.map_err(|e| format!("reading {}: {e}", exe.display()))?;
            let cmd = format!("cd {0} && cat > tend.part && chmod 0755 tend.part && mv -f tend.part tend", sh(&wd));
            link.ok("copying the tend binary", &cmd, &bytes).await?;
            tracing::info!(resource = %self.key, bytes = bytes.len(), "binary copied");
        }
        self.push_program(&link, &wd).await?;
        let seeds = if tunnel {
            let (addr, port) =
                p.tunnel_addr.rsplit_once(':').ok_or_else(|| format!("{:?} is not HOST:PORT", p.tunnel_addr))?;
            let port: u32 = port.parse().map_err(|_| format!("{port:?} is not a port"))?;
            let bound = link
                .handle
                .tcpip_forward(addr, port)
                .await
                .map_err(|e| format!("the tunnel on {}: {e}", p.tunnel_addr))?;
            let bound = if port == 0 { bound } else { port };
            Some(format!("http://{addr}:{bound}"))
        } else if !self.cluster.is_empty() {
            Some(self.cluster.join(","))
        } else {
            None
        };
        if p.install_deps {
            tracing::info!(resource = %self.key, "install_deps: the tend binary needs no packages on the remote host");
        }
        Ok((link, wd, seeds))
    }

    async fn push_program(&self, link: &Link, wd: &str) -> Result<(), String> {
        let root = self.program.get();
        if root.as_os_str().is_empty() {
            return Err("this agent runs no program from disk to send".into());
        }
        let skip = self.program.kept_out();
        let tar = tokio::task::spawn_blocking(move || program_tar(&root, &skip)).await.map_err(|e| e.to_string())??;
        let cmd = format!("mkdir -p {0}/program && tar -xf - -C {0}/program", sh(wd));
        link.ok("copying the program", &cmd, &tar).await?;
        Ok(())
    }

    fn set(&self, status: Status) {
        self.shared.set(status);
    }

    /// Holds the connection until `ctx` is cancelled, reconnecting with back-off.
    async fn supervise(self, ctx: WatchCtx) -> Result<(), ResError> {
        let mut backoff = BACKOFF_MIN;
        ctx.event();
        loop {
            self.set(Status::Connecting);
            let prepared = tokio::select! {
                p = self.prepare() => p,
                _ = ctx.cancelled() => return Ok(()),
            };
            let (link, wd, seeds) = match prepared {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!(resource = %self.key, error = %e, "remote unreachable; retrying in {}s", backoff.as_secs());
                    self.set(Status::Unreachable(e));
                    ctx.event();
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = ctx.cancelled() => return Ok(()),
                    }
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                    continue;
                }
            };
            backoff = BACKOFF_MIN;
            let link = Arc::new(link);
            *self.shared.session.lock().unwrap_or_else(|p| p.into_inner()) =
                Some(Session { link: link.clone(), wd: wd.clone(), seeds });
            self.set(Status::Ready);
            ctx.event();
            let served = self.serve(&link, &wd, &ctx).await;
            *self.shared.session.lock().unwrap_or_else(|p| p.into_inner()) = None;
            match served {
                Some(child) => {
                    // Stopping: the agent's shell kills it once its stdin ends (the EOF
                    // sent); the rest is done apart, so it outlives the engine's wait for
                    // this watch (the dropped connection would kill the agent anyway).
                    // A detached (not transient) agent outlives this resource, and keeps its
                    // directory.
                    let (caching, transient) = (self.params.caching, self.params.transient);
                    tokio::spawn(async move {
                        if let Some(mut ch) = child {
                            let grace = Duration::from_secs(u64::from(STOP_GRACE_TENTHS) / 10);
                            let _ = tokio::time::timeout(grace, async { while ch.wait().await.is_some() {} }).await;
                        }
                        if transient {
                            let _ = link.run(&stop_script(&wd), b"").await;
                            if !caching {
                                let _ = link.run(&format!("rm -rf {}", sh(&wd)), b"").await;
                            }
                        }
                        link.close().await;
                    });
                    return Ok(());
                }
                None => {
                    tracing::warn!(resource = %self.key, "the connection to {} was lost; reconnecting", self.target.shown());
                    ctx.event();
                }
            }
        }
    }

    /// Serves start requests and watches the agent until the resource stops (then the
    /// agent's channel, its stdin closed, if one runs) or the connection is lost (`None`).
    async fn serve(&self, link: &Link, wd: &str, ctx: &WatchCtx) -> Option<Option<russh::Channel<client::Msg>>> {
        let mut program = self.program.changes();
        program.borrow_and_update();
        let mut child: Option<russh::Channel<client::Msg>> = None;
        let mut code: Option<u32> = None;
        let mut check = tokio::time::interval(Duration::from_secs(5));
        loop {
            tokio::select! {
                _ = ctx.cancelled() => {
                    if let Some(ch) = &child {
                        let _ = ch.eof().await;
                    }
                    return Some(child);
                }
                _ = self.shared.handed.notified() => {
                    if let Some(ch) = self.shared.handover.lock().unwrap_or_else(|p| p.into_inner()).take() {
                        child = Some(ch);
                        code = None;
                    }
                }
                msg = async { match child.as_mut() { Some(ch) => ch.wait().await, None => std::future::pending().await } } => {
                    match msg {
                        Some(ChannelMsg::ExitStatus { exit_status }) => code = Some(exit_status),
                        Some(_) => {}
                        None => {
                            child = None;
                            if self.params.transient || code.is_some_and(|c| c != 0) {
                                self.exited(link, wd, code).await;
                                ctx.event();
                            }
                            if link.handle.is_closed() {
                                return None;
                            }
                        }
                    }
                }
                changed = program.changed() => {
                    if changed.is_ok() && let Err(e) = self.push_program(link, wd).await {
                        tracing::warn!(resource = %self.key, error = %e, "could not send the changed program");
                    }
                }
                _ = check.tick() => {
                    if link.handle.is_closed() {
                        return None;
                    }
                    // A detached agent is watched through its pid.
                    if !self.params.transient && *self.shared.status.borrow() == Status::Running {
                        let alive = link.run(&format!("cd {} && kill -0 \"$(cat pid)\"", sh(wd)), b"").await;
                        if alive.is_ok_and(|r| r.code != 0) {
                            self.exited(link, wd, None).await;
                            ctx.event();
                        }
                    }
                }
            }
        }
    }

    async fn exited(&self, link: &Link, wd: &str, code: Option<u32>) {
        let log = link.run(&format!("tail -n 20 {}/tend.log", sh(wd)), b"").await.map(|r| r.output).unwrap_or_default();
        match code {
            Some(0) => tracing::info!(resource = %self.key, "the remote agent exited"),
            _ => tracing::warn!(resource = %self.key, code = ?code, "the remote agent exited:\n{log}"),
        }
        self.set(Status::Exited { code, log });
    }
}

#[async_trait]
impl Resource for Remote {
    fn validate(&self) -> Result<(), ResError> {
        let p = &self.params;
        let field = if p.remote.is_empty() { None } else { Some("remote") };
        let target = Target::parse(self.url()).map_err(|m| self.raw.invalid(field, m))?;
        if target.password.is_some() && !p.allow_cleartext_password {
            let m = "the URL holds a password: set allow_cleartext_password (it ends up in logs), or use a key";
            return Err(self.raw.invalid(field, m));
        }
        if p.state != "running" && p.state != "stopped" {
            return Err(self.raw.invalid(Some("state"), format!("{:?} is not running or stopped", p.state)));
        }
        if p.interactive {
            return Err(self.raw.invalid(Some("interactive"), "tend never prompts for a password: use a key (ssh_id)"));
        }
        if p.tunnelled && !p.transient {
            return Err(self
                .raw
                .invalid(Some("tunnelled"), "a tunnel needs transient => true (it closes with this resource)"));
        }
        if p.converger_timeout.is_some() && !p.transient {
            return Err(self.raw.invalid(Some("converger_timeout"), "needs transient => true"));
        }
        if !p.hostkey.is_empty() {
            parse_hostkey(&p.hostkey).map_err(|m| self.raw.invalid(Some("hostkey"), m))?;
        }
        if p.tunnelled && !p.tunnel_addr.contains(':') {
            return Err(self.raw.invalid(Some("tunnel_addr"), format!("{:?} is not HOST:PORT", p.tunnel_addr)));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let target = Target::parse(self.url());
        if self.params.state == "stopped" {
            return Box::pin(async move {
                ctx.event();
                ctx.cancelled().await;
                Ok(())
            });
        }
        let plan = target.map(|target| Plan {
            key: self.key(),
            params: self.params.clone(),
            target,
            wd_rel: self.wd_expr(),
            program: self.program.clone(),
            cluster: self.world.client_urls(),
            shared: self.shared.clone(),
        });
        Box::pin(async move {
            match plan {
                Ok(plan) => plan.supervise(ctx).await,
                Err(e) => Err(ResError::new(e)),
            }
        })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let key = self.key();
        let target = Target::parse(self.url()).map_err(|m| ResError::new(format!("{key}: {m}")))?;
        if self.params.state == "stopped" {
            return self.ensure_stopped(&key, &target, ctx, apply).await;
        }
        let now = self.shared.status.borrow().clone();
        match now {
            Status::Connecting => Err(ResError::transient(format!("{key}: not connected to {} yet", target.shown()))),
            Status::Unreachable(e) => Err(ResError::transient(format!("{key}: {e}"))),
            Status::Running => Ok(true),
            Status::Exited { code: Some(0), .. } if self.params.converger_timeout.is_some() => Ok(true),
            Status::Ready | Status::Exited { .. } => {
                if let Status::Exited { code, log } = &now {
                    tracing::warn!(resource = %key, code = ?code, "starting the remote agent again after its exit:\n{log}");
                }
                if !apply {
                    ctx.report(format!("would start the remote agent on {}", target.shown()));
                    return Ok(false);
                }
                self.start(&key, &target).await?;
                ctx.report(format!("started the remote agent on {}", target.shown()));
                Ok(false)
            }
        }
    }

    crate::fingerprint_by_params!();
}

impl Remote {
    /// Starts the agent on the watch's connection and hands its channel to the watch; an
    /// agent that exits at once (a program that does not compile there) is an error that
    /// shows its log.
    async fn start(&self, key: &str, target: &Target) -> Result<(), ResError> {
        let fail = |m: String| ResError::transient(format!("{key}: {m}"));
        let session = self.shared.session().ok_or_else(|| fail(format!("not connected to {}", target.shown())))?;
        let args = agent_args(&self.params, &self.program.entry(), &session.wd, session.seeds.as_deref());
        let script = start_script(&session.wd, &args, self.params.transient);
        let mut ch = session.link.handle.channel_open_session().await.map_err(|e| fail(e.to_string()))?;
        ch.exec(true, script.as_bytes()).await.map_err(|e| fail(e.to_string()))?;
        let early = tokio::time::timeout(Duration::from_millis(1500), async {
            loop {
                match ch.wait().await {
                    Some(ChannelMsg::ExitStatus { exit_status }) => return Some(exit_status),
                    Some(_) => {}
                    None => return Some(255),
                }
            }
        })
        .await;
        if let Ok(Some(code)) = early
            && (self.params.transient || code != 0)
        {
            let tail = format!("tail -n 20 {}/tend.log", sh(&session.wd));
            let log = session.link.run(&tail, b"").await.map(|r| r.output).unwrap_or_default();
            self.shared.set(Status::Exited { code: Some(code), log: log.clone() });
            return Err(ResError::new(format!("{key}: the remote agent exited at once ({code}):\n{log}")));
        }
        tracing::info!(resource = %key, host = %target.shown(), "remote agent started");
        if self.params.transient {
            *self.shared.handover.lock().unwrap_or_else(|p| p.into_inner()) = Some(ch);
            self.shared.handed.notify_one();
        }
        self.shared.set(Status::Running);
        Ok(())
    }

    async fn ensure_stopped(
        &self,
        key: &str,
        target: &Target,
        ctx: &mut ApplyCtx,
        apply: bool,
    ) -> Result<bool, ResError> {
        let link =
            Link::connect(&self.params, target, None).await.map_err(|e| ResError::transient(format!("{key}: {e}")))?;
        let wd = format!("\"$HOME\"/{}", sh(&self.wd_expr()));
        let alive =
            link.run(&format!("cd {wd} 2>/dev/null && [ -r pid ] && kill -0 \"$(cat pid)\" 2>/dev/null"), b"").await;
        let alive = alive.map_err(|e| ResError::transient(format!("{key}: {e}")))?.code == 0;
        let result = if !alive {
            Ok(true)
        } else if !apply {
            ctx.report(format!("would stop the remote agent on {}", target.shown()));
            Ok(false)
        } else {
            let dir = link.ok("finding the working directory", &format!("cd {wd} && pwd"), b"").await;
            let dir = dir.map_err(|e| ResError::transient(format!("{key}: {e}")))?;
            link.run(&stop_script(dir.trim()), b"").await.map_err(|e| ResError::transient(format!("{key}: {e}")))?;
            ctx.report(format!("stopped the remote agent on {}", target.shown()));
            Ok(false)
        };
        link.close().await;
        result
    }
}

/// The `remote` kind.
pub const REMOTE: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("remote", RemoteParams::FIELDS, |host, name, params| {
        Ok(Box::new(Remote::build(host, name, params)?))
    });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_as_mgmt_writes_them() {
        let t = Target::parse("ssh://root@192.168.100.1:22/").unwrap();
        assert_eq!((t.user.as_str(), t.host.as_str(), t.port, t.password), ("root", "192.168.100.1", 22, None));
        let t = Target::parse("ssh://host2").unwrap();
        assert_eq!((t.user.as_str(), t.port), ("root", 22));
        let t = Target::parse("ssh://admin:hunter2@[::1]:2222/").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.password.as_deref()), ("::1", 2222, Some("hunter2")));
        assert!(!t.shown().contains("hunter2"));
        assert!(Target::parse("http://host").is_err());
        assert!(Target::parse("ssh://host/path").is_err());
        assert!(Target::parse("ssh://host:port").is_err());
    }

    #[test]
    fn the_start_script_quotes_and_kills_its_agent_when_the_channel_closes() {
        let s = start_script("/home/o'k/.tend/remote/x", "run 'p'", true);
        assert!(s.starts_with("cd '/home/o'\\''k/.tend/remote/x' || exit 97"), "{s}");
        assert!(s.contains("cat <&3") && s.contains("kill -TERM $child"), "{s}");
        assert!(start_script("/w", "run", false).contains("setsid ./tend run"));
        assert_eq!(work_id("a", "b"), work_id("a", "b"));
        assert_ne!(work_id("a", "b"), work_id("a", "c"));
        assert_eq!(work_id("a", "b").len(), 10);
    }
}
