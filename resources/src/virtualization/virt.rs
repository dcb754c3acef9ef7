//! `virt`: a libvirt domain named like the resource, through the host's [`Libvirt`]
//! backend (the real one drives `virsh`; [`FakeLibvirt`] is the in-memory double).
//!
//! `state` is `running`, `paused`, `shutoff` or "" (leave the run state alone; a missing
//! persistent domain is then only defined); `transient => false` keeps the domain
//! defined (persistent), `transient => true` keeps it undefined, so a transient domain
//! that is `shutoff` is one that does not exist. A missing domain is created from a
//! definition built from the params (`uri`'s scheme `lxc` gives an lxc container, anything
//! else a kvm guest; `boot`, `disk`, `cdrom`, `network`, `filesystem`, `osinit`); the
//! devices of an existing domain are not compared with the params (as in mgmt). `cpus`
//! and `memory` (KiB) are applied live (`setvcpus`/`setmem`, plus the persistent config
//! for a defined domain) when `hotcpus` allows it; `maxcpus` is the number of vcpu slots,
//! which only changes when the domain is off. A change that needs a restart (different
//! slot count, more memory than the domain's maximum, cpus with `hotcpus => false`)
//! follows `restartondiverge`: `error` (the default) reports it, `ignore` leaves the
//! domain alone, `ifneeded` (or "") shuts the guest down (ACPI, waiting up to five
//! minutes), redefines it and starts it again. `restartonrefresh` restarts on a
//! notification. `auth` credentials go to virsh through a private `LIBVIRT_AUTH_FILE`.
//!
//! Watch: poll-free, from `virsh event --loop --all` (every event of the domain:
//! lifecycle, balloon, device and tunable changes, ...), respawned after a libvirtd
//! restart. A vcpu count changed by someone else raises no event of its own; it is
//! corrected at the next check.
//! Not done: onlining hot-plugged cpus inside the guest through the qemu guest agent.

use lang::params::ParamMap;
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;
#[cfg(any(test, feature = "fakes"))]
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use engine::{ApplyCtx, IoAt, ResError, Resource, WatchCtx};
use futures::StreamExt;
use futures::future::BoxFuture;
use lang::value::Value;

use crate::contract::common::Raw;
use crate::contract::params::{BuildError, Fields, Params};
use crate::contract::typed::Fingerprint as _;
use crate::machine::Machine;
#[cfg(any(test, feature = "fakes"))]
use crate::util::events::broadcast_lines;
use crate::util::events::{Lines, follow, line_stream, run_tool, run_tool_ok};
#[cfg(any(test, feature = "fakes"))]
use crate::util::lock;
use crate::util::text::escape_markup;

/// mgmt's default number of vcpu slots.
pub const DEFAULT_MAX_CPUS: i64 = 32;

/// How long a restart waits for the guest to power off.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(300);

/// How often a restart looks at the domain while waiting for it to power off.
const SHUTDOWN_POLL: Duration = Duration::from_secs(1);

// ---------------------------------------------------------------------------------------
// The backend

/// Which libvirt to talk to, and how to log in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conn {
    pub uri: String,
    pub auth: Option<Auth>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Auth {
    pub username: String,
    pub password: String,
}

crate::fingerprint_fields!(Auth { username, password });

impl crate::contract::typed::StructParam for Auth {
    const TYPE: &'static str = "struct{username str; password str}";
    const LIST_TYPE: &'static str = "[]struct{username str; password str}";
    fn from_fields(f: Fields<'_>) -> Auth {
        Auth { username: f.str("username"), password: f.str("password") }
    }
}

impl crate::contract::typed::ParamType for Auth {
    const TYPE: &'static str = <Auth as crate::contract::typed::StructParam>::TYPE;
    fn from_value(_: &Params<'_>, _: &str, value: &Value) -> Result<Auth, BuildError> {
        Ok(crate::contract::typed::struct_of(value))
    }
}

/// Credentials given, if any (empty ones are none).
pub(crate) fn read_auth(p: &Params<'_>, field: &str) -> Result<Option<Auth>, BuildError> {
    let auth = <Option<Auth> as crate::contract::typed::Param>::read(p, field)?;
    Ok(auth.filter(|a| !a.username.is_empty() || !a.password.is_empty()))
}

/// A domain's run state as libvirt reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DomState {
    Running,
    /// Running but idle ("blocked" on a resource).
    Blocked,
    Paused,
    ShuttingDown,
    ShutOff,
    Crashed,
    PmSuspended,
    Unknown,
}

impl DomState {
    /// From `virsh dominfo`'s `State:` text.
    pub fn parse(text: &str) -> DomState {
        match text.trim() {
            "running" => DomState::Running,
            "idle" | "blocked" => DomState::Blocked,
            "paused" => DomState::Paused,
            "in shutdown" => DomState::ShuttingDown,
            "shut off" => DomState::ShutOff,
            "crashed" => DomState::Crashed,
            "pmsuspended" => DomState::PmSuspended,
            _ => DomState::Unknown,
        }
    }

    pub fn text(self) -> &'static str {
        match self {
            DomState::Running => "running",
            DomState::Blocked => "idle",
            DomState::Paused => "paused",
            DomState::ShuttingDown => "in shutdown",
            DomState::ShutOff => "shut off",
            DomState::Crashed => "crashed",
            DomState::PmSuspended => "pmsuspended",
            DomState::Unknown => "no state",
        }
    }

    /// Whether a qemu process exists for it.
    pub fn active(self) -> bool {
        !matches!(self, DomState::ShutOff | DomState::Crashed)
    }
}

/// What the backend knows about one domain (live values when it runs, the persistent
/// config otherwise).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainInfo {
    pub uuid: String,
    pub state: DomState,
    pub persistent: bool,
    pub vcpus: u64,
    pub max_vcpus: u64,
    /// KiB.
    pub memory: u64,
    pub max_memory: u64,
}

/// Where a vcpu or memory change applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scope {
    pub live: bool,
    pub config: bool,
}

/// libvirt domains, by name.
#[async_trait]
pub trait Libvirt: Send + Sync {
    async fn info(&self, conn: &Conn, name: &str) -> Result<Option<DomainInfo>, ResError>;
    /// Defines (or redefines) a persistent domain from its XML.
    async fn define(&self, conn: &Conn, xml: &str) -> Result<(), ResError>;
    /// Creates and starts a transient domain.
    async fn create(&self, conn: &Conn, xml: &str, paused: bool) -> Result<(), ResError>;
    async fn start(&self, conn: &Conn, name: &str, paused: bool) -> Result<(), ResError>;
    async fn resume(&self, conn: &Conn, name: &str) -> Result<(), ResError>;
    async fn suspend(&self, conn: &Conn, name: &str) -> Result<(), ResError>;
    /// Asks the guest to power off (returns at once).
    async fn shutdown(&self, conn: &Conn, name: &str) -> Result<(), ResError>;
    /// Pulls the plug.
    async fn destroy(&self, conn: &Conn, name: &str) -> Result<(), ResError>;
    async fn undefine(&self, conn: &Conn, name: &str) -> Result<(), ResError>;
    /// The persistent definition (to make a transient domain persistent).
    async fn inactive_xml(&self, conn: &Conn, name: &str) -> Result<String, ResError>;
    async fn set_vcpus(&self, conn: &Conn, name: &str, count: u64, scope: Scope) -> Result<(), ResError>;
    async fn set_memory(&self, conn: &Conn, name: &str, kib: u64, scope: Scope) -> Result<(), ResError>;
    /// Every domain event of the connection, one line each in `virsh event` format:
    /// `event 'lifecycle' for domain 'NAME': Started Booted`.
    fn events(&self, conn: &Conn) -> Result<Lines, ResError>;
}

/// libvirt through the `virsh` command-line client.
pub struct Virsh;

/// A private auth file for one virsh call, with the env var pointing at it.
pub(crate) struct AuthFile {
    _file: Option<tempfile::NamedTempFile>,
    pub(crate) env: Vec<(String, String)>,
}

/// libvirt's client auth file format: one credential set used for every host.
pub(crate) fn auth_file_text(auth: &Auth) -> String {
    format!(
        "[credentials-tend]\nauthname={}\npassword={}\n\n[auth-libvirt-default]\ncredentials=tend\n",
        auth.username, auth.password
    )
}

pub(crate) fn auth_file(conn: &Conn) -> Result<AuthFile, ResError> {
    let Some(auth) = conn.auth.as_ref() else { return Ok(AuthFile { _file: None, env: Vec::new() }) };
    // tempfile creates the file with mode 0600.
    let mut file = tempfile::NamedTempFile::new().at(std::env::temp_dir())?;
    file.write_all(auth_file_text(auth).as_bytes()).at(file.path())?;
    let env = vec![("LIBVIRT_AUTH_FILE".to_string(), file.path().display().to_string())];
    Ok(AuthFile { _file: Some(file), env })
}

/// `virsh [-c URI] ARGS...`.
pub(crate) fn virsh_argv(conn: &Conn, args: &[&str]) -> Vec<String> {
    let mut argv = vec!["virsh".to_string()];
    if !conn.uri.is_empty() {
        argv.push("-c".into());
        argv.push(conn.uri.clone());
    }
    argv.extend(args.iter().map(|s| s.to_string()));
    argv
}

/// Runs virsh; the output when it succeeded, `Ok(None)` when it says the object is missing.
pub(crate) async fn virsh_query(conn: &Conn, args: &[&str], missing: &[&str]) -> Result<Option<String>, ResError> {
    let auth = auth_file(conn)?;
    let argv = virsh_argv(conn, args);
    let out = run_tool(&argv, &auth.env, &tokio_util::sync::CancellationToken::new()).await?;
    if out.success() {
        return Ok(Some(out.stdout));
    }
    if missing.iter().any(|m| out.output.contains(m)) {
        return Ok(None);
    }
    Err(ResError::new(format!("`{}` failed: {}", argv.join(" "), out.output.trim())))
}

pub(crate) async fn virsh_ok(conn: &Conn, args: &[&str]) -> Result<(), ResError> {
    let auth = auth_file(conn)?;
    run_tool_ok(&virsh_argv(conn, args), &auth.env).await.map(drop)
}

/// Runs a virsh command that takes an XML file (written to a private temporary file).
pub(crate) async fn virsh_with_xml(conn: &Conn, args: &[&str], xml: &str, trailing: &[&str]) -> Result<(), ResError> {
    let mut file = tempfile::NamedTempFile::new().at(std::env::temp_dir())?;
    file.write_all(xml.as_bytes()).at(file.path())?;
    let path = file.path().display().to_string();
    let mut all: Vec<&str> = args.to_vec();
    all.push(&path);
    all.extend_from_slice(trailing);
    virsh_ok(conn, &all).await
}

/// A long-running virsh (event loop) as a line stream; the auth file lives as long as it.
pub(crate) fn virsh_stream(conn: &Conn, args: &[&str]) -> Result<Lines, ResError> {
    let auth = auth_file(conn)?;
    let lines = line_stream(&virsh_argv(conn, args), &auth.env)?;
    Ok(lines
        .map(move |line| {
            let _kept = &auth;
            line
        })
        .boxed())
}

/// What virsh prints for a domain that does not exist.
const NO_DOMAIN: &[&str] = &["Domain not found", "failed to get domain"];

/// `virsh dominfo` as key/value pairs.
pub fn parse_colon_table(text: &str) -> BTreeMap<String, String> {
    text.lines().filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_string(), v.trim().to_string())).collect()
}

/// `124 KiB` -> 124.
fn kib(text: &str) -> u64 {
    text.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// The domain facts in `virsh dominfo` output (max vcpus comes from `vcpucount`).
pub fn parse_dominfo(text: &str) -> Result<DomainInfo, ResError> {
    let t = parse_colon_table(text);
    let get = |k: &str| t.get(k).map(String::as_str).ok_or_else(|| ResError::new(format!("dominfo: no `{k}:` line")));
    let vcpus: u64 = get("CPU(s)")?.parse().map_err(|_| ResError::new("dominfo: bad `CPU(s):`"))?;
    Ok(DomainInfo {
        uuid: get("UUID")?.to_string(),
        state: DomState::parse(get("State")?),
        persistent: get("Persistent")? == "yes",
        vcpus,
        max_vcpus: vcpus,
        memory: kib(get("Used memory")?),
        max_memory: kib(get("Max memory")?),
    })
}

/// The maximum vcpu count in `virsh vcpucount` output: live when running, else config.
pub fn parse_vcpucount_max(text: &str) -> Option<u64> {
    let mut live = None;
    let mut config = None;
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if let [what, scope, n] = f[..]
            && what == "maximum"
        {
            match scope {
                "live" => live = n.parse().ok(),
                "config" => config = n.parse().ok(),
                _ => {}
            }
        }
    }
    live.or(config)
}

/// The domain name in a `virsh event` line.
pub fn event_domain(line: &str) -> Option<&str> {
    let rest = line.split_once(" for domain '")?.1;
    rest.rsplit_once("':").map(|(name, _)| name).or_else(|| rest.strip_suffix('\''))
}

fn scope_flags(scope: Scope) -> Vec<&'static str> {
    let mut f = Vec::new();
    if scope.live {
        f.push("--live");
    }
    if scope.config {
        f.push("--config");
    }
    f
}

#[async_trait]
impl Libvirt for Virsh {
    async fn info(&self, conn: &Conn, name: &str) -> Result<Option<DomainInfo>, ResError> {
        let Some(text) = virsh_query(conn, &["dominfo", name], NO_DOMAIN).await? else { return Ok(None) };
        let mut info = parse_dominfo(&text)?;
        if let Some(counts) = virsh_query(conn, &["vcpucount", name], NO_DOMAIN).await?
            && let Some(max) = parse_vcpucount_max(&counts)
        {
            info.max_vcpus = max;
        }
        Ok(Some(info))
    }
    async fn define(&self, conn: &Conn, xml: &str) -> Result<(), ResError> {
        virsh_with_xml(conn, &["define"], xml, &[]).await
    }
    async fn create(&self, conn: &Conn, xml: &str, paused: bool) -> Result<(), ResError> {
        virsh_with_xml(conn, &["create"], xml, if paused { &["--paused"] } else { &[] }).await
    }
    async fn start(&self, conn: &Conn, name: &str, paused: bool) -> Result<(), ResError> {
        let mut args = vec!["start", name];
        if paused {
            args.push("--paused");
        }
        virsh_ok(conn, &args).await
    }
    async fn resume(&self, conn: &Conn, name: &str) -> Result<(), ResError> {
        virsh_ok(conn, &["resume", name]).await
    }
    async fn suspend(&self, conn: &Conn, name: &str) -> Result<(), ResError> {
        virsh_ok(conn, &["suspend", name]).await
    }
    async fn shutdown(&self, conn: &Conn, name: &str) -> Result<(), ResError> {
        virsh_ok(conn, &["shutdown", name]).await
    }
    async fn destroy(&self, conn: &Conn, name: &str) -> Result<(), ResError> {
        virsh_ok(conn, &["destroy", name]).await
    }
    async fn undefine(&self, conn: &Conn, name: &str) -> Result<(), ResError> {
        virsh_ok(conn, &["undefine", name]).await
    }
    async fn inactive_xml(&self, conn: &Conn, name: &str) -> Result<String, ResError> {
        virsh_query(conn, &["dumpxml", "--inactive", name], &[])
            .await?
            .ok_or_else(|| ResError::new(format!("no definition for domain {name}")))
    }
    async fn set_vcpus(&self, conn: &Conn, name: &str, count: u64, scope: Scope) -> Result<(), ResError> {
        let n = count.to_string();
        let mut args = vec!["setvcpus", name, &n];
        args.extend(scope_flags(scope));
        virsh_ok(conn, &args).await
    }
    async fn set_memory(&self, conn: &Conn, name: &str, kib: u64, scope: Scope) -> Result<(), ResError> {
        let size = format!("{kib}KiB");
        let mut args = vec!["setmem", name, &size];
        args.extend(scope_flags(scope));
        virsh_ok(conn, &args).await
    }
    fn events(&self, conn: &Conn) -> Result<Lines, ResError> {
        virsh_stream(conn, &["event", "--loop", "--all"])
    }
}

// ---------------------------------------------------------------------------------------
// The fake

/// One domain in [`FakeLibvirt`]: its persistent config and, while it runs, its live values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg(any(test, feature = "fakes"))]
pub struct FakeSpec {
    pub vcpus: u64,
    pub max_vcpus: u64,
    pub memory: u64,
    pub max_memory: u64,
}

#[derive(Clone, Debug)]
#[cfg(any(test, feature = "fakes"))]
struct FakeDomain {
    uuid: String,
    persistent: bool,
    state: DomState,
    config: FakeSpec,
    live: Option<FakeSpec>,
    xml: String,
}

/// An in-memory libvirt: domains keyed by name (the URI is ignored), every mutating call
/// recorded, and an event line in virsh's format for every lifecycle change.
#[cfg(any(test, feature = "fakes"))]
pub struct FakeLibvirt {
    domains: Mutex<BTreeMap<String, FakeDomain>>,
    calls: Mutex<Vec<String>>,
    events: tokio::sync::broadcast::Sender<String>,
    next_uuid: Mutex<u64>,
}

#[cfg(any(test, feature = "fakes"))]
impl Default for FakeLibvirt {
    fn default() -> Self {
        FakeLibvirt {
            domains: Mutex::default(),
            calls: Mutex::default(),
            events: tokio::sync::broadcast::channel(256).0,
            next_uuid: Mutex::new(1),
        }
    }
}

/// The facts the fake needs from a domain definition: name, uuid and sizing.
#[cfg(any(test, feature = "fakes"))]
pub fn parse_domain_xml(xml: &str) -> Result<(String, Option<String>, FakeSpec), ResError> {
    let doc = roxmltree::Document::parse(xml).map_err(|e| ResError::new(format!("bad domain XML: {e}")))?;
    let root = doc.root_element();
    let child = |name: &str| root.children().find(|n| n.has_tag_name(name));
    let text = |name: &str| child(name).and_then(|n| n.text()).map(|t| t.trim().to_string());
    let name = text("name").ok_or_else(|| ResError::new("domain XML without <name>"))?;
    let memory: u64 = text("memory").and_then(|t| t.parse().ok()).unwrap_or(0);
    let vcpu = child("vcpu");
    let max_vcpus: u64 = vcpu.and_then(|n| n.text()).and_then(|t| t.trim().parse().ok()).unwrap_or(1);
    let vcpus = vcpu.and_then(|n| n.attribute("current")).and_then(|t| t.parse().ok()).unwrap_or(max_vcpus);
    Ok((name, text("uuid"), FakeSpec { vcpus, max_vcpus, memory, max_memory: memory }))
}

#[cfg(any(test, feature = "fakes"))]
impl FakeLibvirt {
    /// Every mutating call so far, like `start mgmt3`.
    pub fn calls(&self) -> Vec<String> {
        lock(&self.calls).clone()
    }

    pub fn domain(&self, name: &str) -> Option<DomainInfo> {
        lock(&self.domains).get(name).map(Self::info_of)
    }

    /// The last definition given for the domain.
    pub fn xml(&self, name: &str) -> Option<String> {
        lock(&self.domains).get(name).map(|d| d.xml.clone())
    }

    /// Something outside the graph powers the domain off (transient ones disappear).
    pub fn power_off_behind_our_back(&self, name: &str) {
        let mut domains = lock(&self.domains);
        if let Some(d) = domains.get_mut(name) {
            d.state = DomState::ShutOff;
            d.live = None;
            if !d.persistent {
                domains.remove(name);
            }
            self.emit(name, "Stopped Destroyed");
        }
    }

    fn info_of(d: &FakeDomain) -> DomainInfo {
        let spec = d.live.as_ref().unwrap_or(&d.config);
        DomainInfo {
            uuid: d.uuid.clone(),
            state: d.state,
            persistent: d.persistent,
            vcpus: spec.vcpus,
            max_vcpus: spec.max_vcpus,
            memory: spec.memory,
            max_memory: spec.max_memory,
        }
    }

    fn emit(&self, name: &str, what: &str) {
        let _nobody_listening = self.events.send(format!("event 'lifecycle' for domain '{name}': {what}"));
    }

    fn record(&self, call: String) {
        lock(&self.calls).push(call);
    }

    fn uuid(&self) -> String {
        let mut n = lock(&self.next_uuid);
        *n += 1;
        format!("00000000-0000-4000-8000-{:012x}", *n)
    }

    fn with<T>(&self, name: &str, f: impl FnOnce(&mut FakeDomain) -> Result<T, ResError>) -> Result<T, ResError> {
        let mut domains = lock(&self.domains);
        let d = domains.get_mut(name).ok_or_else(|| ResError::new(format!("Domain not found: '{name}'")))?;
        f(d)
    }
}

#[async_trait]
#[cfg(any(test, feature = "fakes"))]
impl Libvirt for FakeLibvirt {
    async fn info(&self, _: &Conn, name: &str) -> Result<Option<DomainInfo>, ResError> {
        Ok(self.domain(name))
    }
    async fn define(&self, _: &Conn, xml: &str) -> Result<(), ResError> {
        let (name, uuid, spec) = parse_domain_xml(xml)?;
        self.record(format!("define {name}"));
        let mut domains = lock(&self.domains);
        if let Some(d) = domains.get_mut(&name) {
            if let Some(u) = &uuid
                && *u != d.uuid
            {
                return Err(ResError::new(format!("domain '{name}' already exists with uuid {}", d.uuid)));
            }
            d.persistent = true;
            d.config = spec;
            d.xml = xml.to_string();
        } else {
            let uuid = uuid.unwrap_or_else(|| self.uuid());
            let d = FakeDomain {
                uuid,
                persistent: true,
                state: DomState::ShutOff,
                config: spec,
                live: None,
                xml: xml.to_string(),
            };
            domains.insert(name.clone(), d);
        }
        self.emit(&name, "Defined Added");
        Ok(())
    }
    async fn create(&self, _: &Conn, xml: &str, paused: bool) -> Result<(), ResError> {
        let (name, uuid, spec) = parse_domain_xml(xml)?;
        self.record(format!("create {name}{}", if paused { " --paused" } else { "" }));
        let mut domains = lock(&self.domains);
        if domains.contains_key(&name) {
            return Err(ResError::new(format!("domain '{name}' already exists")));
        }
        let d = FakeDomain {
            uuid: uuid.unwrap_or_else(|| self.uuid()),
            persistent: false,
            state: if paused { DomState::Paused } else { DomState::Running },
            config: spec.clone(),
            live: Some(spec),
            xml: xml.to_string(),
        };
        domains.insert(name.clone(), d);
        self.emit(&name, "Started Booted");
        Ok(())
    }
    async fn start(&self, _: &Conn, name: &str, paused: bool) -> Result<(), ResError> {
        self.record(format!("start {name}{}", if paused { " --paused" } else { "" }));
        self.with(name, |d| {
            if d.state.active() {
                return Err(ResError::new("Requested operation is not valid: domain is already running"));
            }
            d.state = if paused { DomState::Paused } else { DomState::Running };
            d.live = Some(d.config.clone());
            Ok(())
        })?;
        self.emit(name, "Started Booted");
        Ok(())
    }
    async fn resume(&self, _: &Conn, name: &str) -> Result<(), ResError> {
        self.record(format!("resume {name}"));
        self.with(name, |d| {
            if d.state != DomState::Paused {
                return Err(ResError::new("Requested operation is not valid: domain is not paused"));
            }
            d.state = DomState::Running;
            Ok(())
        })?;
        self.emit(name, "Resumed Unpaused");
        Ok(())
    }
    async fn suspend(&self, _: &Conn, name: &str) -> Result<(), ResError> {
        self.record(format!("suspend {name}"));
        self.with(name, |d| {
            if !d.state.active() {
                return Err(ResError::new("Requested operation is not valid: domain is not running"));
            }
            d.state = DomState::Paused;
            Ok(())
        })?;
        self.emit(name, "Suspended Paused");
        Ok(())
    }
    async fn shutdown(&self, _: &Conn, name: &str) -> Result<(), ResError> {
        self.record(format!("shutdown {name}"));
        self.with(name, |d| if d.state.active() { Ok(()) } else { Err(ResError::new("domain is not running")) })?;
        // The fake guest obeys at once.
        self.power_off_behind_our_back(name);
        Ok(())
    }
    async fn destroy(&self, _: &Conn, name: &str) -> Result<(), ResError> {
        self.record(format!("destroy {name}"));
        self.with(name, |d| if d.state.active() { Ok(()) } else { Err(ResError::new("domain is not running")) })?;
        self.power_off_behind_our_back(name);
        Ok(())
    }
    async fn undefine(&self, _: &Conn, name: &str) -> Result<(), ResError> {
        self.record(format!("undefine {name}"));
        let gone = self.with(name, |d| {
            d.persistent = false;
            Ok(!d.state.active())
        })?;
        if gone {
            lock(&self.domains).remove(name);
        }
        self.emit(name, "Undefined Removed");
        Ok(())
    }
    async fn inactive_xml(&self, _: &Conn, name: &str) -> Result<String, ResError> {
        self.with(name, |d| Ok(d.xml.clone()))
    }
    async fn set_vcpus(&self, _: &Conn, name: &str, count: u64, scope: Scope) -> Result<(), ResError> {
        self.record(format!("setvcpus {name} {count} {}", scope_flags(scope).join(" ")));
        self.with(name, |d| {
            if scope.live {
                let live = d.live.as_mut().ok_or_else(|| ResError::new("domain is not running"))?;
                if count > live.max_vcpus {
                    return Err(ResError::new("requested vcpus is greater than max allowable vcpus"));
                }
                live.vcpus = count;
            }
            if scope.config {
                if count > d.config.max_vcpus {
                    return Err(ResError::new("requested vcpus is greater than max allowable vcpus"));
                }
                d.config.vcpus = count;
            }
            Ok(())
        })
    }
    async fn set_memory(&self, _: &Conn, name: &str, kib: u64, scope: Scope) -> Result<(), ResError> {
        self.record(format!("setmem {name} {kib}KiB {}", scope_flags(scope).join(" ")));
        self.with(name, |d| {
            if scope.live {
                let live = d.live.as_mut().ok_or_else(|| ResError::new("domain is not running"))?;
                if kib > live.max_memory {
                    return Err(ResError::new("cannot set memory higher than max memory"));
                }
                live.memory = kib;
            }
            if scope.config {
                if kib > d.config.max_memory {
                    return Err(ResError::new("cannot set memory higher than max memory"));
                }
                d.config.memory = kib;
            }
            Ok(())
        })
    }
    fn events(&self, _: &Conn) -> Result<Lines, ResError> {
        Ok(broadcast_lines(&self.events))
    }
}

// ---------------------------------------------------------------------------------------
// The resource

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Disk {
    pub source: String,
    pub kind: String,
}

crate::fingerprint_fields!(Disk { source, kind });

impl crate::contract::typed::StructParam for Disk {
    const TYPE: &'static str = "struct{source str; type str}";
    const LIST_TYPE: &'static str = "[]struct{source str; type str}";
    fn from_fields(f: Fields<'_>) -> Disk {
        Disk { source: f.str("source"), kind: f.str("type") }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Nic {
    pub name: String,
    pub mac: String,
}

crate::fingerprint_fields!(Nic { name, mac });

impl crate::contract::typed::StructParam for Nic {
    const TYPE: &'static str = "struct{name str; mac str}";
    const LIST_TYPE: &'static str = "[]struct{name str; mac str}";
    fn from_fields(f: Fields<'_>) -> Nic {
        Nic { name: f.str("name"), mac: f.str("mac") }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filesystem {
    pub access: String,
    pub source: String,
    pub target: String,
    pub read_only: bool,
}

crate::fingerprint_fields!(Filesystem { access, source, target, read_only });

impl crate::contract::typed::StructParam for Filesystem {
    const TYPE: &'static str = "struct{access str; source str; target str; read_only bool}";
    const LIST_TYPE: &'static str = "[]struct{access str; source str; target str; read_only bool}";
    fn from_fields(f: Fields<'_>) -> Filesystem {
        Filesystem {
            access: f.str("access"),
            source: f.str("source"),
            target: f.str("target"),
            read_only: f.bool("read_only"),
        }
    }
}

crate::choice! {
    /// The run state wanted of a domain; unset leaves it as it is.
    #[derive(Default)]
    pub enum RunState {
        #[default]
        Unset = "",
        Running = "running",
        Paused = "paused",
        Shutoff = "shutoff",
    }
}
crate::choice_default_when_absent!(RunState);

crate::choice! {
    /// What a running domain whose params need a restart gets (`restartondiverge`).
    pub enum Diverge {
        /// Restart it if needed (also what an explicit empty value means).
        Unset = "",
        Ignore = "ignore",
        IfNeeded = "ifneeded",
        Error = "error",
    }
}

/// A uint param (range-checked like Go's `uint`) with a default.
fn uint(p: &Params<'_>, field: &str, default: i64) -> Result<i64, BuildError> {
    Ok(p.opt_int_in(field, 0, i64::MAX, "uint")?.unwrap_or(default))
}

crate::params! {
    /// `virt`'s params.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct VirtParams {
        pub uri: String,
        pub state: RunState,
        pub transient: bool,
        pub cpus: i64 => |p, f| uint(p, f, 0),
        pub maxcpus: i64 => |p, f| uint(p, f, DEFAULT_MAX_CPUS),
        pub hotcpus: bool = true,
        /// KiB.
        pub memory: i64 => |p, f| uint(p, f, 0),
        pub osinit: String,
        pub boot: Vec<String>,
        pub disk: Vec<Disk>,
        pub cdrom: Vec<Disk>,
        pub network: Vec<Nic>,
        pub filesystem: Vec<Filesystem>,
        pub auth: Option<Auth> => read_auth,
        pub restartondiverge: Diverge = Diverge::Error,
        pub restartonrefresh: bool,
    }
}

impl VirtParams {
    /// A transient domain that is `shutoff` is one that does not exist.
    pub fn absent(&self) -> bool {
        self.transient && self.state == RunState::Shutoff
    }

    /// The vcpu slots the domain should have: `maxcpus` when cpus hot-plug, else `cpus`.
    pub fn slots(&self) -> u64 {
        (if self.hotcpus { self.maxcpus } else { self.cpus }) as u64
    }

    fn lxc(&self) -> bool {
        self.uri.split_once(':').is_some_and(|(scheme, _)| scheme.split('+').next() == Some("lxc"))
    }

    fn conn(&self) -> Conn {
        Conn { uri: self.uri.clone(), auth: self.auth.clone() }
    }
}

/// `~/x` with the home directory.
fn expand_home(path: &str) -> String {
    match (path.strip_prefix("~/"), std::env::var("HOME")) {
        (Some(rest), Ok(home)) => format!("{}/{rest}", home.trim_end_matches('/')),
        _ => path.to_string(),
    }
}

/// 0 -> a, 25 -> z, 26 -> aa (disk target names).
pub fn disk_suffix(mut n: usize) -> String {
    let mut out = Vec::new();
    loop {
        out.push(b'a' + (n % 26) as u8);
        if n < 26 {
            break;
        }
        n = n / 26 - 1;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// The domain definition for `name` from the params (with `uuid` when redefining).
pub fn domain_xml(name: &str, p: &VirtParams, uuid: Option<&str>) -> String {
    let e = escape_markup;
    let lxc = p.lxc();
    let mut x = format!("<domain type='{}'>\n", if lxc { "lxc" } else { "kvm" });
    x += &format!("  <name>{}</name>\n", e(name));
    if let Some(uuid) = uuid {
        x += &format!("  <uuid>{}</uuid>\n", e(uuid));
    }
    x += &format!("  <memory unit='KiB'>{}</memory>\n", p.memory);
    if p.hotcpus {
        x += &format!("  <vcpu current='{}'>{}</vcpu>\n  <vcpus>\n", p.cpus, p.maxcpus);
        x += "    <vcpu id='0' enabled='yes' hotpluggable='no' order='1'/>\n";
        for i in 1..p.maxcpus {
            let enabled = if i < p.cpus { "yes" } else { "no" };
            x += &format!("    <vcpu id='{i}' enabled='{enabled}' hotpluggable='yes'/>\n");
        }
        x += "  </vcpus>\n";
    } else {
        x += &format!("  <vcpu>{}</vcpu>\n", p.cpus);
    }
    x += "  <os>\n";
    x += if lxc { "    <type>exe</type>\n" } else { "    <type>hvm</type>\n" };
    if lxc && !p.osinit.is_empty() {
        x += &format!("    <init>{}</init>\n", e(&p.osinit));
    }
    for dev in &p.boot {
        x += &format!("    <boot dev='{}'/>\n", e(dev));
    }
    x += "  </os>\n";
    if p.hotcpus {
        // ACPI is what lets the guest see hot-plugged cpus.
        x += "  <features>\n    <acpi/>\n  </features>\n";
    }
    x += "  <devices>\n";
    for (i, d) in p.disk.iter().enumerate() {
        x += "    <disk type='file' device='disk'>\n";
        x += &format!("      <driver name='qemu' type='{}'/>\n", e(&d.kind));
        x += &format!("      <source file='{}'/>\n", e(&expand_home(&d.source)));
        x += &format!("      <target dev='vd{}' bus='virtio'/>\n    </disk>\n", disk_suffix(i));
    }
    for (i, d) in p.cdrom.iter().enumerate() {
        x += "    <disk type='file' device='cdrom'>\n";
        x += &format!("      <driver name='qemu' type='{}'/>\n", e(&d.kind));
        x += &format!("      <source file='{}'/>\n", e(&expand_home(&d.source)));
        x += &format!("      <target dev='hd{}' bus='ide'/>\n      <readonly/>\n    </disk>\n", disk_suffix(i));
    }
    for n in &p.network {
        x += "    <interface type='network'>\n";
        if !n.mac.is_empty() {
            x += &format!("      <mac address='{}'/>\n", e(&n.mac));
        }
        x += &format!("      <source network='{}'/>\n    </interface>\n", e(&n.name));
    }
    for f in &p.filesystem {
        x += &if f.access.is_empty() {
            "    <filesystem>\n".to_string()
        } else {
            format!("    <filesystem accessmode='{}'>\n", e(&f.access))
        };
        x += &format!("      <source dir='{}'/>\n", e(&expand_home(&f.source)));
        x += &format!("      <target dir='{}'/>\n", e(&f.target));
        if f.read_only {
            x += "      <readonly/>\n";
        }
        x += "    </filesystem>\n";
    }
    if p.hotcpus {
        // The host side of the qemu guest agent channel.
        x += "    <channel type='unix'>\n      <source mode='bind'/>\n";
        x += "      <target type='virtio' name='org.qemu.guest_agent.0'/>\n    </channel>\n";
    }
    x += "    <serial type='pty'>\n      <target port='0'/>\n    </serial>\n";
    x += "    <console type='pty'>\n      <target type='serial' port='0'/>\n    </console>\n";
    x += "  </devices>\n</domain>\n";
    x
}

pub struct Virt {
    raw: Raw,
    params: VirtParams,
    libvirt: Arc<dyn Libvirt>,
}

impl Virt {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<Virt, BuildError> {
        let (raw, params) = Raw::decoded("virt", name, values, VirtParams::decode)?;
        Ok(Virt { raw, params, libvirt: host.libvirt.clone() })
    }

    fn key(&self) -> String {
        format!("virt[{}]", self.raw.name)
    }

    /// Creates the missing domain in the wanted state.
    async fn create(&self, ctx: &mut ApplyCtx, apply: bool) -> Result<(), ResError> {
        let (p, name, conn) = (&self.params, &self.raw.name, self.params.conn());
        let xml = domain_xml(name, p, None);
        if !apply {
            let how = if p.transient { "create (transient)" } else { "define" };
            ctx.report(format!("{}: would {how} the domain", self.key()));
            return Ok(());
        }
        let paused = p.state == RunState::Paused;
        if p.transient {
            self.libvirt.create(&conn, &xml, paused).await
        } else {
            self.libvirt.define(&conn, &xml).await?;
            if matches!(p.state, RunState::Running | RunState::Paused) {
                self.libvirt.start(&conn, name, paused).await
            } else {
                Ok(())
            }
        }
    }

    /// Waits until the domain is off (or gone, for a transient one).
    async fn wait_off(&self, ctx: &ApplyCtx) -> Result<Option<DomainInfo>, ResError> {
        let conn = self.params.conn();
        let deadline = tokio::time::Instant::now() + SHUTDOWN_TIMEOUT;
        loop {
            let info = self.libvirt.info(&conn, &self.raw.name).await?;
            if info.as_ref().is_none_or(|i| !i.state.active()) {
                return Ok(info);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ResError::new(format!(
                    "{}: the domain did not power off within {}s",
                    self.key(),
                    SHUTDOWN_TIMEOUT.as_secs()
                )));
            }
            tokio::select! {
                _ = ctx.cancel.cancelled() => return Err(ResError::new(format!("{}: interrupted while waiting for shutdown", self.key()))),
                _ = tokio::time::sleep(SHUTDOWN_POLL) => {}
            }
        }
    }

    /// Why the running domain cannot take the params without a restart, if it cannot.
    fn divergence(&self, info: &DomainInfo) -> Option<String> {
        let p = &self.params;
        if !info.state.active() || p.state == RunState::Shutoff {
            return None;
        }
        if info.max_vcpus != p.slots() {
            return Some(format!("the domain has {} vcpu slots, the params ask for {}", info.max_vcpus, p.slots()));
        }
        if p.memory as u64 > info.max_memory {
            return Some(format!("memory {} KiB is above the domain's maximum of {} KiB", p.memory, info.max_memory));
        }
        if !p.hotcpus && info.vcpus != p.cpus as u64 {
            return Some(format!("cpus changed from {} to {} and hotcpus is off", info.vcpus, p.cpus));
        }
        None
    }

    /// Shuts the domain down, redefines it (when persistent) and lets the caller start it.
    async fn restart(&self, ctx: &mut ApplyCtx, info: &DomainInfo, why: &str) -> Result<Option<DomainInfo>, ResError> {
        let (conn, name) = (self.params.conn(), &self.raw.name);
        tracing::info!(resource = %self.key(), reason = why, "restarting the domain");
        if info.state.active() {
            self.libvirt.shutdown(&conn, name).await?;
        }
        let off = self.wait_off(ctx).await?;
        if let Some(i) = &off
            && i.persistent
        {
            self.libvirt.define(&conn, &domain_xml(name, &self.params, Some(&i.uuid))).await?;
            // With no wanted state the domain goes back to how it was.
            if self.params.state == RunState::Unset && info.state.active() {
                self.libvirt.start(&conn, name, info.state == DomState::Paused).await?;
            }
        }
        self.libvirt.info(&conn, name).await
    }

    /// Brings cpus and memory to the params: live (when it runs) and in the persistent
    /// config; a shut-off domain whose slots or maximum memory differ is redefined.
    async fn attrs(&self, ctx: &mut ApplyCtx, apply: bool, info: &DomainInfo) -> Result<bool, ResError> {
        let (p, key, name, conn) = (&self.params, self.key(), &self.raw.name, self.params.conn());
        if self.divergence(info).is_some() {
            return Ok(true); // handled (or deliberately ignored) by the restart policy
        }
        let scope = Scope { live: info.state.active(), config: info.persistent };
        let (cpus, memory) = (p.cpus as u64, p.memory as u64);
        if !info.state.active() && (info.max_vcpus != p.slots() || memory > info.max_memory) {
            if apply {
                self.libvirt.define(&conn, &domain_xml(name, p, Some(&info.uuid))).await?;
            } else {
                ctx.report(format!("{key}: would redefine the domain with {} vcpu slots", p.slots()));
            }
            return Ok(false);
        }
        let mut ok = true;
        if info.vcpus != cpus && (scope.live || scope.config) {
            ok = false;
            if apply {
                self.libvirt.set_vcpus(&conn, name, cpus, scope).await?;
            } else {
                ctx.report(format!("{key}: would set cpus from {} to {cpus}", info.vcpus));
            }
        }
        if info.memory != memory && (scope.live || scope.config) {
            ok = false;
            if apply {
                self.libvirt.set_memory(&conn, name, memory, scope).await?;
            } else {
                ctx.report(format!("{key}: would set memory from {} to {memory} KiB", info.memory));
            }
        }
        Ok(ok)
    }
}

#[async_trait]
impl Resource for Virt {
    fn validate(&self) -> Result<(), ResError> {
        let p = &self.params;
        let err = |field: &str, message: String| self.raw.invalid(Some(field), message);
        if p.cpus > p.maxcpus {
            return Err(err(
                "cpus",
                format!("the number of CPUs ({}) must not be greater than maxcpus ({})", p.cpus, p.maxcpus),
            ));
        }
        if !p.absent() {
            if p.cpus < 1 {
                return Err(err("cpus", "a domain needs at least one cpu".into()));
            }
            if p.memory < 1 {
                return Err(err("memory", "must be the domain's memory size in KiB".into()));
            }
        }
        for dev in &p.boot {
            if !matches!(dev.as_str(), "fd" | "hd" | "cdrom" | "network") {
                return Err(err("boot", format!("`{dev}` is not one of `fd`, `hd`, `cdrom`, `network`")));
            }
        }
        for (field, list) in [("disk", &p.disk), ("cdrom", &p.cdrom)] {
            if list.iter().any(|d| d.source.is_empty()) {
                return Err(err(field, "every device needs a source".into()));
            }
        }
        if p.network.iter().any(|n| n.name.is_empty()) {
            return Err(err("network", "every device needs the name of its libvirt network".into()));
        }
        if p.filesystem.iter().any(|f| f.source.is_empty() || f.target.is_empty()) {
            return Err(err("filesystem", "every device needs a source and a target".into()));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let (libvirt, conn, name) = (self.libvirt.clone(), self.params.conn(), self.raw.name.clone());
        Box::pin(async move { follow(ctx, || libvirt.events(&conn), |line| event_domain(line) == Some(&name)).await })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let p = self.params.clone();
        let (conn, name, key) = (p.conn(), self.raw.name.clone(), self.key());
        let libvirt = self.libvirt.clone();
        let mut ok = true;

        let Some(mut info) = libvirt.info(&conn, &name).await? else {
            if p.absent() {
                return Ok(true);
            }
            self.create(ctx, apply).await?;
            return Ok(false);
        };

        // Defined or not.
        if info.persistent == p.transient {
            ok = false;
            if !apply {
                let what = if p.transient { "undefine" } else { "define" };
                ctx.report(format!("{key}: would {what} the domain"));
            } else if info.persistent {
                libvirt.undefine(&conn, &name).await?;
            } else {
                let xml = libvirt.inactive_xml(&conn, &name).await?;
                libvirt.define(&conn, &xml).await?;
            }
            if apply {
                match libvirt.info(&conn, &name).await? {
                    Some(i) => info = i,
                    None if p.absent() => return Ok(false),
                    None => {
                        self.create(ctx, apply).await?;
                        return Ok(false);
                    }
                }
            }
        }

        // Changes that need the guest off first.
        if !p.absent() {
            let mut restart = None;
            if p.restartonrefresh && ctx.refresh && info.state.active() {
                restart = Some("a notification asked for it".to_string());
            }
            if let Some(why) = self.divergence(&info) {
                match p.restartondiverge {
                    Diverge::Ignore => {}
                    Diverge::Error => {
                        return Err(ResError::new(format!(
                            "{key}: {why}; the domain needs a restart (restartondiverge is `error`)"
                        )));
                    }
                    _ => restart = Some(why),
                }
            }
            if let Some(why) = restart {
                ok = false;
                if !apply {
                    ctx.report(format!("{key}: would restart the domain: {why}"));
                } else {
                    match self.restart(ctx, &info, &why).await? {
                        Some(i) => info = i,
                        None => {
                            self.create(ctx, apply).await?;
                            return Ok(false);
                        }
                    }
                }
            }
        }

        // cpus and memory, live (when it runs) and in the persistent config. A running
        // domain that must go off is reshaped once it is off.
        let off_later = p.state == RunState::Shutoff && info.state.active();
        if !p.absent() && !off_later && !self.attrs(ctx, apply, &info).await? {
            ok = false;
        }

        // The run state.
        use DomState::*;
        if info.state == ShuttingDown && p.state != RunState::Shutoff && apply {
            match self.wait_off(ctx).await? {
                Some(i) => info = i,
                None => {
                    // A transient domain is gone once off: create it again.
                    self.create(ctx, apply).await?;
                    return Ok(false);
                }
            }
        }
        let state = info.state;
        let action: Option<&str> = match (p.state, state) {
            (RunState::Unset, _)
            | (RunState::Running, Running | Blocked)
            | (RunState::Paused, Paused)
            | (RunState::Shutoff, ShutOff) => None,
            (RunState::Running, Paused | PmSuspended) => Some("resume"),
            (RunState::Running, _) => Some("start"),
            (RunState::Paused, Running | Blocked) => Some("suspend"),
            (RunState::Paused, _) => Some("start --paused"),
            (RunState::Shutoff, _) => Some("destroy"),
        };
        if let Some(action) = action {
            ok = false;
            if !apply {
                ctx.report(format!("{key}: would {action} the domain (it is {})", info.state.text()));
            } else {
                match action {
                    "resume" => libvirt.resume(&conn, &name).await?,
                    "start" => libvirt.start(&conn, &name, false).await?,
                    "suspend" => libvirt.suspend(&conn, &name).await?,
                    "start --paused" => libvirt.start(&conn, &name, true).await?,
                    _ => libvirt.destroy(&conn, &name).await?,
                }
            }
        }
        if off_later
            && apply
            && !p.absent()
            && let Some(info) = libvirt.info(&conn, &name).await?
        {
            self.attrs(ctx, apply, &info).await?;
        }
        Ok(ok)
    }

    crate::fingerprint_by_params!();

    fn refreshable(&self) -> bool {
        true
    }
}

/// The `virt` kind: its params and send fields as the type checker sees them, and its constructor.
pub const VIRT: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("virt", VirtParams::FIELDS, crate::built_on_host!(Virt));

#[cfg(test)]
mod tests {
    use super::*;

    const DOMINFO: &str = "\
Id:             3
Name:           mgmt3
UUID:           4b5e2a9c-3c1e-4d6f-9f7a-2f0c1a9b8e11
OS Type:        hvm
State:          running
CPU(s):         2
CPU time:       12.3s
Max memory:     1048576 KiB
Used memory:    524288 KiB
Persistent:     no
Autostart:      disable
Managed save:   no
Security model: none
Security DOI:   0
";

    const DOMINFO_OFF: &str = "\
Id:             -
Name:           mgmt4
UUID:           0f6c3d1e-8a2b-4c5d-9e7f-112233445566
OS Type:        hvm
State:          shut off
CPU(s):         1
Max memory:     524288 KiB
Used memory:    524288 KiB
Persistent:     yes
Autostart:      disable
Managed save:   no
Security model: selinux
Security DOI:   0
";

    const VCPUCOUNT: &str = "\
maximum      config         8
maximum      live           8
current      config         2
current      live           2
";

    #[test]
    fn dominfo_and_vcpucount_are_parsed() {
        let info = parse_dominfo(DOMINFO).unwrap();
        assert_eq!(info.state, DomState::Running);
        assert_eq!((info.vcpus, info.memory, info.max_memory), (2, 524288, 1048576));
        assert!(!info.persistent);
        assert_eq!(info.uuid, "4b5e2a9c-3c1e-4d6f-9f7a-2f0c1a9b8e11");
        let off = parse_dominfo(DOMINFO_OFF).unwrap();
        assert_eq!(off.state, DomState::ShutOff);
        assert!(off.persistent && !off.state.active());
        assert_eq!(parse_vcpucount_max(VCPUCOUNT), Some(8));
        assert_eq!(parse_vcpucount_max("maximum      config         4\ncurrent      config         1\n"), Some(4));
        assert!(parse_dominfo("Name: x\n").is_err());
    }

    #[test]
    fn event_lines_name_their_domain() {
        assert_eq!(event_domain("event 'lifecycle' for domain 'mgmt3': Started Booted"), Some("mgmt3"));
        assert_eq!(event_domain("event 'balloon-change' for domain 'a b': 524288KiB"), Some("a b"));
        assert_eq!(event_domain("event 'reboot' for domain 'vm1'"), Some("vm1"));
        assert_eq!(event_domain("event loop timed out"), None);
    }

    #[test]
    fn virsh_command_lines() {
        let conn = Conn { uri: "qemu:///session".into(), auth: None };
        assert_eq!(virsh_argv(&conn, &["dominfo", "mgmt3"]), ["virsh", "-c", "qemu:///session", "dominfo", "mgmt3"]);
        assert_eq!(virsh_argv(&Conn::default(), &["event", "--loop", "--all"]), ["virsh", "event", "--loop", "--all"]);
        assert_eq!(scope_flags(Scope { live: true, config: true }), ["--live", "--config"]);
        assert_eq!(scope_flags(Scope { live: false, config: true }), ["--config"]);
        let auth = Auth { username: "u".into(), password: "p".into() };
        assert_eq!(
            auth_file_text(&auth),
            "[credentials-tend]\nauthname=u\npassword=p\n\n[auth-libvirt-default]\ncredentials=tend\n"
        );
        let file = auth_file(&Conn { uri: String::new(), auth: Some(auth) }).unwrap();
        let path = &file.env[0].1;
        assert_eq!(file.env[0].0, "LIBVIRT_AUTH_FILE");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(path).unwrap().permissions().mode() & 0o777, 0o600);
        assert!(auth_file(&conn).unwrap().env.is_empty());
    }

    fn params(pairs: &[(&str, Value)]) -> VirtParams {
        let values: ParamMap = pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        Raw::new("virt", "vm", &values).decode(VirtParams::decode).unwrap()
    }

    #[test]
    fn defaults_follow_mgmt() {
        let p = params(&[]);
        assert_eq!((p.maxcpus, p.hotcpus, p.restartondiverge.as_str()), (32, true, "error"));
        let empty_auth = Value::strukt(vec![("username".into(), Value::str("")), ("password".into(), Value::str(""))]);
        assert_eq!(params(&[("auth", empty_auth)]).auth, None);
    }

    #[test]
    fn the_definition_follows_the_params() {
        let disk =
            Value::strukt(vec![("source".into(), Value::str("/img/a.qcow2")), ("type".into(), Value::str("qcow2"))]);
        let p = params(&[
            ("cpus", Value::Int(2)),
            ("maxcpus", Value::Int(4)),
            ("memory", Value::Int(524288)),
            ("boot", Value::list(vec![Value::str("hd")])),
            ("disk", Value::list(vec![disk.clone(), disk])),
        ]);
        let xml = domain_xml("vm<1>", &p, Some("u-1"));
        assert!(xml.starts_with("<domain type='kvm'>"));
        assert!(xml.contains("<name>vm&lt;1&gt;</name>") && xml.contains("<uuid>u-1</uuid>"));
        assert!(xml.contains("<vcpu current='2'>4</vcpu>"));
        assert!(xml.contains("<vcpu id='1' enabled='yes' hotpluggable='yes'/>"));
        assert!(xml.contains("<vcpu id='3' enabled='no' hotpluggable='yes'/>"));
        assert!(xml.contains("<target dev='vdb' bus='virtio'/>") && xml.contains("<boot dev='hd'/>"));
        let (name, uuid, spec) = parse_domain_xml(&xml).unwrap();
        assert_eq!((name.as_str(), uuid.as_deref()), ("vm<1>", Some("u-1")));
        assert_eq!(spec, FakeSpec { vcpus: 2, max_vcpus: 4, memory: 524288, max_memory: 524288 });
        let lxc = params(&[
            ("uri", Value::str("lxc:///")),
            ("osinit", Value::str("/sbin/init")),
            ("hotcpus", Value::Bool(false)),
            ("cpus", Value::Int(1)),
        ]);
        let xml = domain_xml("c", &lxc, None);
        assert!(xml.contains("<domain type='lxc'>") && xml.contains("<init>/sbin/init</init>"));
        assert!(xml.contains("<vcpu>1</vcpu>") && !xml.contains("guest_agent"));
        assert_eq!(
            (disk_suffix(0), disk_suffix(25), disk_suffix(26), disk_suffix(27)),
            ("a".into(), "z".into(), "aa".into(), "ab".into())
        );
    }
}
