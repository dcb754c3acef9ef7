//! The host as the system-level kinds see it: a root prefix for system paths and small
//! traits for the init system, the package manager, accounts, mounts and the transient
//! hostname, each with a real backend (command-line tools) and an in-memory fake, so tests
//! run against a temporary root without touching the machine.
//!
//! The network (`net`), settings (`gsettings`) and firewall (`firewalld`) backends live in
//! their kinds' modules; `Host` only holds them.
//! The virtualization and container kinds keep their backend traits (real + fake) in their
//! own modules (`virt`, `virt_network`, `virt_builder`, `nspawn`, `docker`); `Host` only
//! holds them.
//!
//! The real service backend is [`crate::systemd::Systemd`]: systemd over D-Bus (zbus), with
//! job results and change subscriptions, or the [`Systemctl`] backend here when no bus is
//! reachable. The real package backend is dpkg/apt.

#[cfg(any(test, feature = "fakes"))]
use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
#[cfg(any(test, feature = "fakes"))]
use std::sync::Mutex;

use async_trait::async_trait;
use engine::{IoAt, ResError};
use tokio_util::sync::CancellationToken;

use crate::util::command::{self, CmdOutput, CmdSpec};

/// Everything a host-touching kind needs.
#[derive(Clone)]
pub struct Host {
    /// Prefix for system paths (`/etc/fstab`, `/proc/sys`, unit directories): `/` on a real
    /// host, a temporary directory in tests.
    pub root: PathBuf,
    pub services: Arc<dyn ServiceManager>,
    pub packages: Arc<dyn PackageManager>,
    pub accounts: Arc<dyn Accounts>,
    pub mounts: Arc<dyn Mounter>,
    pub hostnames: Arc<dyn HostnameSetter>,
    pub net: Arc<dyn crate::net::NetLinks>,
    pub settings: Arc<dyn crate::gsettings::Settings>,
    pub firewall: Arc<dyn crate::firewalld::Firewall>,
    /// Routes, ui inputs and the proxy's upstream of the `http:server` family.
    pub http: Arc<crate::http::Hub>,
    /// Files of the `tftp:server`s.
    pub tftp: Arc<crate::tftp::TftpHub>,
    /// What `value` resources (and `http:server:ui:input`'s `local://` store) keep; the
    /// binary hands the same store to the `value.get*` functions.
    pub values: Arc<crate::value::ValueStore>,
    /// The directories `file` resources have swept of stale temporary files.
    pub temps: Arc<crate::util::fs::TempSweeps>,
    /// libvirt domains (`virt`).
    pub libvirt: Arc<dyn crate::virt::Libvirt>,
    /// libvirt networks (`virt:network` and its grouped hosts and ranges).
    pub networks: Arc<dyn crate::virt_network::Networks>,
    /// Disk image builds (`virt:builder`).
    pub builder: Arc<dyn crate::virt_builder::ImageBuilder>,
    /// systemd-nspawn containers (`nspawn`).
    pub machines: Arc<dyn crate::nspawn::Machines>,
    /// The docker daemon (`docker:image`).
    pub docker: Arc<dyn crate::docker::Docker>,
    /// What the hosts of a fleet share (`kv`): the binary sets the local store or etcd.
    pub world: Arc<dyn world::World>,
}

impl Host {
    /// The machine itself.
    pub fn system() -> Host {
        Host {
            root: PathBuf::from("/"),
            services: Arc::new(crate::systemd::Systemd::new()),
            packages: Arc::new(Apt),
            accounts: Arc::new(ShadowTools { root: PathBuf::from("/") }),
            mounts: Arc::new(MountTools),
            hostnames: Arc::new(Uname),
            net: Arc::new(crate::net::IpRoute2 { proc_root: PathBuf::from("/") }),
            settings: Arc::new(crate::gsettings::GsettingsCli),
            firewall: Arc::new(crate::firewalld::FirewallCmd { root: PathBuf::from("/") }),
            http: crate::http::Hub::with_upstream(Arc::new(crate::http::proxy::Curl)),
            tftp: crate::tftp::TftpHub::new(),
            values: Arc::default(),
            temps: Arc::default(),
            libvirt: Arc::new(crate::virt::Virsh),
            networks: Arc::new(crate::virt_network::VirshNetworks),
            builder: Arc::new(crate::virt_builder::VirtBuilder),
            machines: Arc::new(crate::nspawn::Machinectl),
            docker: Arc::new(crate::docker::DockerCli),
            world: Arc::new(world::Detached::new("")),
        }
    }

    /// A sandbox under `root` with in-memory fakes for every backend.
    #[cfg(any(test, feature = "fakes"))]
    pub fn sandbox(root: impl Into<PathBuf>) -> Host {
        let root: PathBuf = root.into();
        Host {
            world: Arc::new(crate::world::local(root.join("var/lib/tend"), "sandbox")),
            machines: Arc::new(crate::nspawn::FakeMachines::new(&root)),
            root,
            services: Arc::new(FakeServices::default()),
            packages: Arc::new(FakePackages::default()),
            accounts: Arc::new(FakeAccounts::default()),
            mounts: Arc::new(FakeMounts::default()),
            hostnames: Arc::new(FakeHostname::default()),
            net: Arc::new(crate::net::FakeNet::default()),
            settings: Arc::new(crate::gsettings::FakeSettings::default()),
            firewall: Arc::new(crate::firewalld::FakeFirewall::default()),
            http: crate::http::Hub::with_upstream(Arc::new(crate::http::proxy::MemUpstream::default())),
            tftp: crate::tftp::TftpHub::new(),
            values: Arc::default(),
            temps: Arc::default(),
            libvirt: Arc::new(crate::virt::FakeLibvirt::default()),
            networks: Arc::new(crate::virt_network::FakeNetworks::default()),
            builder: Arc::new(crate::virt_builder::FakeBuilder::default()),
            docker: Arc::new(crate::docker::FakeDocker::default()),
        }
    }

    /// `abs` (an absolute system path) under the root.
    pub fn path(&self, abs: &str) -> PathBuf {
        self.root.join(abs.trim_start_matches('/'))
    }
}

async fn run(argv: &[&str]) -> Result<CmdOutput, ResError> {
    let spec = CmdSpec {
        cmd: argv[0].to_string(),
        args: argv[1..].iter().map(|s| s.to_string()).collect(),
        ..CmdSpec::default()
    };
    command::run(&spec, &CancellationToken::new()).await
}

async fn run_ok(argv: &[&str]) -> Result<CmdOutput, ResError> {
    let out = run(argv).await?;
    if out.success() {
        Ok(out)
    } else {
        Err(ResError::new(format!("`{}` failed: {}", argv.join(" "), out.output.trim())))
    }
}

// ---------------------------------------------------------------------------------------
// Services

/// The init system, by unit name (`nginx.service`, `backup.timer`).
#[async_trait]
pub trait ServiceManager: Send + Sync {
    async fn exists(&self, unit: &str, session: bool) -> Result<bool, ResError>;
    async fn is_active(&self, unit: &str, session: bool) -> Result<bool, ResError>;
    async fn is_enabled(&self, unit: &str, session: bool) -> Result<bool, ResError>;
    async fn start(&self, unit: &str, session: bool) -> Result<(), ResError>;
    async fn stop(&self, unit: &str, session: bool) -> Result<(), ResError>;
    async fn enable(&self, unit: &str, session: bool) -> Result<(), ResError>;
    async fn disable(&self, unit: &str, session: bool) -> Result<(), ResError>;
    async fn reload_or_try_restart(&self, unit: &str, session: bool) -> Result<(), ResError>;
    async fn daemon_reload(&self, session: bool) -> Result<(), ResError>;

    /// Follows `unit`: the stream yields whenever its state may have changed. It is live
    /// when this returns, so a change made after the call is never missed; its end means
    /// the subscription was lost. `Ok(None)`: this backend cannot follow units (callers
    /// poll instead).
    async fn changes(&self, unit: &str, session: bool) -> Result<Option<UnitChanges>, ResError> {
        let _ = (unit, session);
        Ok(None)
    }
}

/// Wake-ups for one unit (see [`ServiceManager::changes`]).
pub type UnitChanges = futures::stream::BoxStream<'static, ()>;

/// systemd through `systemctl`: what [`crate::systemd::Systemd`] falls back to when no bus
/// is reachable (as root, `systemctl` still reaches PID 1 through systemd's private socket).
pub struct Systemctl;

fn systemctl<'a>(session: bool, args: &[&'a str]) -> Vec<&'a str> {
    let mut argv = vec!["systemctl"];
    if session {
        argv.push("--user");
    }
    argv.extend_from_slice(args);
    argv
}

#[async_trait]
impl ServiceManager for Systemctl {
    async fn exists(&self, unit: &str, session: bool) -> Result<bool, ResError> {
        let out = run(&systemctl(session, &["show", "--property=LoadState", "--value", unit])).await?;
        Ok(out.success() && out.stdout.trim() == "loaded")
    }
    async fn is_active(&self, unit: &str, session: bool) -> Result<bool, ResError> {
        Ok(run(&systemctl(session, &["is-active", "--quiet", unit])).await?.success())
    }
    async fn is_enabled(&self, unit: &str, session: bool) -> Result<bool, ResError> {
        Ok(run(&systemctl(session, &["is-enabled", "--quiet", unit])).await?.success())
    }
    async fn start(&self, unit: &str, session: bool) -> Result<(), ResError> {
        run_ok(&systemctl(session, &["start", unit])).await.map(drop)
    }
    async fn stop(&self, unit: &str, session: bool) -> Result<(), ResError> {
        run_ok(&systemctl(session, &["stop", unit])).await.map(drop)
    }
    async fn enable(&self, unit: &str, session: bool) -> Result<(), ResError> {
        run_ok(&systemctl(session, &["enable", unit])).await.map(drop)
    }
    async fn disable(&self, unit: &str, session: bool) -> Result<(), ResError> {
        run_ok(&systemctl(session, &["disable", unit])).await.map(drop)
    }
    async fn reload_or_try_restart(&self, unit: &str, session: bool) -> Result<(), ResError> {
        run_ok(&systemctl(session, &["reload-or-try-restart", unit])).await.map(drop)
    }
    async fn daemon_reload(&self, session: bool) -> Result<(), ResError> {
        run_ok(&systemctl(session, &["daemon-reload"])).await.map(drop)
    }
}

/// An in-memory init system for tests. Units must be added with [`FakeServices::add`]
/// before they exist; every call is recorded.
#[derive(Default)]
#[cfg(any(test, feature = "fakes"))]
pub struct FakeServices {
    state: Mutex<FakeServiceState>,
}

#[derive(Default)]
#[cfg(any(test, feature = "fakes"))]
struct FakeServiceState {
    units: BTreeSet<String>,
    active: BTreeSet<String>,
    enabled: BTreeSet<String>,
    calls: Vec<String>,
}

#[cfg(any(test, feature = "fakes"))]
impl FakeServices {
    pub fn add(&self, unit: &str) {
        self.lock().units.insert(unit.to_string());
    }
    pub fn calls(&self) -> Vec<String> {
        self.lock().calls.clone()
    }
    pub fn active(&self, unit: &str) -> bool {
        self.lock().active.contains(unit)
    }
    pub fn enabled(&self, unit: &str) -> bool {
        self.lock().enabled.contains(unit)
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, FakeServiceState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn call(&self, what: &str, unit: &str) -> Result<std::sync::MutexGuard<'_, FakeServiceState>, ResError> {
        let mut state = self.lock();
        state.calls.push(format!("{what} {unit}"));
        if !unit.is_empty() && !state.units.contains(unit) {
            return Err(ResError::new(format!("unit {unit} not found")));
        }
        Ok(state)
    }
}

#[async_trait]
#[cfg(any(test, feature = "fakes"))]
impl ServiceManager for FakeServices {
    async fn exists(&self, unit: &str, _: bool) -> Result<bool, ResError> {
        Ok(self.lock().units.contains(unit))
    }
    async fn is_active(&self, unit: &str, _: bool) -> Result<bool, ResError> {
        Ok(self.lock().active.contains(unit))
    }
    async fn is_enabled(&self, unit: &str, _: bool) -> Result<bool, ResError> {
        Ok(self.lock().enabled.contains(unit))
    }
    async fn start(&self, unit: &str, _: bool) -> Result<(), ResError> {
        self.call("start", unit)?.active.insert(unit.to_string());
        Ok(())
    }
    async fn stop(&self, unit: &str, _: bool) -> Result<(), ResError> {
        self.call("stop", unit)?.active.remove(unit);
        Ok(())
    }
    async fn enable(&self, unit: &str, _: bool) -> Result<(), ResError> {
        self.call("enable", unit)?.enabled.insert(unit.to_string());
        Ok(())
    }
    async fn disable(&self, unit: &str, _: bool) -> Result<(), ResError> {
        self.call("disable", unit)?.enabled.remove(unit);
        Ok(())
    }
    async fn reload_or_try_restart(&self, unit: &str, _: bool) -> Result<(), ResError> {
        self.call("reload-or-try-restart", unit).map(drop)
    }
    async fn daemon_reload(&self, _: bool) -> Result<(), ResError> {
        self.call("daemon-reload", "").map(drop)
    }
}

// ---------------------------------------------------------------------------------------
// Packages

#[async_trait]
pub trait PackageManager: Send + Sync {
    /// The installed version, if installed.
    async fn installed(&self, name: &str) -> Result<Option<String>, ResError>;
    /// The version an install would pick, if the package is known.
    async fn candidate(&self, name: &str) -> Result<Option<String>, ResError>;
    async fn install(&self, name: &str, version: Option<&str>, allow_downgrade: bool) -> Result<(), ResError>;
    async fn remove(&self, name: &str) -> Result<(), ResError>;
}

/// dpkg for queries, apt-get for changes.
pub struct Apt;

#[async_trait]
impl PackageManager for Apt {
    async fn installed(&self, name: &str) -> Result<Option<String>, ResError> {
        let out = run(&["dpkg-query", "-W", "-f", "${Status}\t${Version}", name]).await?;
        if !out.success() {
            return Ok(None);
        }
        let (status, version) = out.stdout.split_once('\t').unwrap_or(("", ""));
        Ok(status.ends_with(" installed").then(|| version.trim().to_string()))
    }
    async fn candidate(&self, name: &str) -> Result<Option<String>, ResError> {
        let out = run(&["apt-cache", "policy", name]).await?;
        Ok(out
            .stdout
            .lines()
            .find_map(|l| l.trim().strip_prefix("Candidate:"))
            .map(|v| v.trim().to_string())
            .filter(|v| v != "(none)"))
    }
    async fn install(&self, name: &str, version: Option<&str>, allow_downgrade: bool) -> Result<(), ResError> {
        let target = version.map(|v| format!("{name}={v}")).unwrap_or_else(|| name.to_string());
        let mut argv = vec!["apt-get", "install", "-y", "-q"];
        if allow_downgrade {
            argv.push("--allow-downgrades");
        }
        argv.push(&target);
        run_ok(&argv).await.map(drop)
    }
    async fn remove(&self, name: &str) -> Result<(), ResError> {
        run_ok(&["apt-get", "remove", "-y", "-q", name]).await.map(drop)
    }
}

/// An in-memory package manager: `available` maps names to the candidate version.
#[derive(Default)]
#[cfg(any(test, feature = "fakes"))]
pub struct FakePackages {
    pub available: Mutex<BTreeMap<String, String>>,
    pub installed: Mutex<BTreeMap<String, String>>,
}

#[cfg(any(test, feature = "fakes"))]
impl FakePackages {
    pub fn offer(&self, name: &str, version: &str) {
        self.available.lock().unwrap_or_else(|e| e.into_inner()).insert(name.into(), version.into());
    }
    pub fn installed_version(&self, name: &str) -> Option<String> {
        self.installed.lock().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
    }
}

#[async_trait]
#[cfg(any(test, feature = "fakes"))]
impl PackageManager for FakePackages {
    async fn installed(&self, name: &str) -> Result<Option<String>, ResError> {
        Ok(self.installed_version(name))
    }
    async fn candidate(&self, name: &str) -> Result<Option<String>, ResError> {
        Ok(self.available.lock().unwrap_or_else(|e| e.into_inner()).get(name).cloned())
    }
    async fn install(&self, name: &str, version: Option<&str>, _: bool) -> Result<(), ResError> {
        let candidate =
            self.candidate(name).await?.ok_or_else(|| ResError::new(format!("unable to locate package {name}")))?;
        let version = version.unwrap_or(&candidate).to_string();
        self.installed.lock().unwrap_or_else(|e| e.into_inner()).insert(name.into(), version);
        Ok(())
    }
    async fn remove(&self, name: &str) -> Result<(), ResError> {
        self.installed.lock().unwrap_or_else(|e| e.into_inner()).remove(name);
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Accounts

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub uid: u32,
    pub gid: u32,
    pub home: String,
    pub shell: String,
    /// Supplementary group names.
    pub groups: BTreeSet<String>,
}

/// What `useradd`/`usermod` should set; `None` = leave alone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserSpec {
    pub uid: Option<u32>,
    /// A group name or numeric gid.
    pub group: Option<String>,
    pub groups: Option<Vec<String>>,
    pub home: Option<String>,
    pub shell: Option<String>,
    pub allow_duplicate_uid: bool,
}

#[async_trait]
pub trait Accounts: Send + Sync {
    async fn user(&self, name: &str) -> Result<Option<UserInfo>, ResError>;
    /// A group's gid, if it exists.
    async fn group(&self, name: &str) -> Result<Option<u32>, ResError>;
    async fn add_user(&self, name: &str, spec: &UserSpec) -> Result<(), ResError>;
    async fn modify_user(&self, name: &str, spec: &UserSpec) -> Result<(), ResError>;
    async fn delete_user(&self, name: &str) -> Result<(), ResError>;
    async fn add_group(&self, name: &str, gid: Option<u32>) -> Result<(), ResError>;
    async fn modify_group(&self, name: &str, gid: u32) -> Result<(), ResError>;
    async fn delete_group(&self, name: &str) -> Result<(), ResError>;
    /// Files whose change means an account may have changed (watched).
    fn files(&self) -> Vec<PathBuf>;
}

/// `/etc/passwd` and `/etc/group` under a root, changed with the shadow tools.
pub struct ShadowTools {
    pub root: PathBuf,
}

impl ShadowTools {
    fn read(&self, file: &str) -> Result<String, ResError> {
        std::fs::read_to_string(self.root.join(file)).map_err(|e| ResError::new(format!("/{file}: {e}")))
    }

    fn user_args(spec: &UserSpec) -> Vec<String> {
        let mut args = Vec::new();
        let mut push = |flag: &str, v: String| {
            args.push(flag.to_string());
            args.push(v);
        };
        if let Some(uid) = spec.uid {
            push("-u", uid.to_string());
        }
        if let Some(g) = &spec.group {
            push("-g", g.clone());
        }
        if let Some(gs) = &spec.groups {
            push("-G", gs.join(","));
        }
        if let Some(h) = &spec.home {
            push("-d", h.clone());
        }
        if let Some(s) = &spec.shell {
            push("-s", s.clone());
        }
        if spec.allow_duplicate_uid {
            args.push("-o".into());
        }
        args
    }

    async fn tool(&self, tool: &str, mut args: Vec<String>, name: &str) -> Result<(), ResError> {
        if self.root != Path::new("/") {
            args.insert(0, self.root.display().to_string());
            args.insert(0, "--root".into());
        }
        args.push(name.to_string());
        let argv: Vec<&str> = std::iter::once(tool).chain(args.iter().map(String::as_str)).collect();
        run_ok(&argv).await.map(drop)
    }
}

/// Parses `name:x:gid:members` lines into (name, gid, members).
fn group_lines(text: &str) -> impl Iterator<Item = (&str, u32, Vec<&str>)> {
    text.lines().filter_map(|line| {
        let f: Vec<&str> = line.split(':').collect();
        let gid = f.get(2)?.parse().ok()?;
        let members = f.get(3).map(|m| m.split(',').filter(|s| !s.is_empty()).collect()).unwrap_or_default();
        Some((f[0], gid, members))
    })
}

#[async_trait]
impl Accounts for ShadowTools {
    async fn user(&self, name: &str) -> Result<Option<UserInfo>, ResError> {
        let passwd = self.read("etc/passwd")?;
        let Some(f) = passwd.lines().map(|l| l.split(':').collect::<Vec<_>>()).find(|f| f.len() >= 7 && f[0] == name)
        else {
            return Ok(None);
        };
        let groups = self.read("etc/group")?;
        let supplementary =
            group_lines(&groups).filter(|(_, _, m)| m.contains(&name)).map(|(g, _, _)| g.to_string()).collect();
        Ok(Some(UserInfo {
            uid: f[2].parse().unwrap_or(0),
            gid: f[3].parse().unwrap_or(0),
            home: f[5].to_string(),
            shell: f[6].to_string(),
            groups: supplementary,
        }))
    }
    async fn group(&self, name: &str) -> Result<Option<u32>, ResError> {
        Ok(group_lines(&self.read("etc/group")?).find(|(g, _, _)| *g == name).map(|(_, gid, _)| gid))
    }
    async fn add_user(&self, name: &str, spec: &UserSpec) -> Result<(), ResError> {
        let mut args = Self::user_args(spec);
        args.push("-M".into());
        self.tool("useradd", args, name).await
    }
    async fn modify_user(&self, name: &str, spec: &UserSpec) -> Result<(), ResError> {
        self.tool("usermod", Self::user_args(spec), name).await
    }
    async fn delete_user(&self, name: &str) -> Result<(), ResError> {
        self.tool("userdel", Vec::new(), name).await
    }
    async fn add_group(&self, name: &str, gid: Option<u32>) -> Result<(), ResError> {
        let args = gid.map(|g| vec!["-g".to_string(), g.to_string()]).unwrap_or_default();
        self.tool("groupadd", args, name).await
    }
    async fn modify_group(&self, name: &str, gid: u32) -> Result<(), ResError> {
        self.tool("groupmod", vec!["-g".into(), gid.to_string()], name).await
    }
    async fn delete_group(&self, name: &str) -> Result<(), ResError> {
        self.tool("groupdel", Vec::new(), name).await
    }
    fn files(&self) -> Vec<PathBuf> {
        vec![self.root.join("etc/passwd"), self.root.join("etc/group")]
    }
}

/// In-memory accounts for tests.
#[derive(Default)]
#[cfg(any(test, feature = "fakes"))]
pub struct FakeAccounts {
    pub users: Mutex<BTreeMap<String, UserInfo>>,
    pub groups: Mutex<BTreeMap<String, u32>>,
}

#[cfg(any(test, feature = "fakes"))]
impl FakeAccounts {
    fn resolve_gid(&self, group: &str) -> Result<u32, ResError> {
        if let Ok(n) = group.parse() {
            return Ok(n);
        }
        self.groups
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(group)
            .copied()
            .ok_or_else(|| ResError::new(format!("group '{group}' does not exist")))
    }
    fn apply(&self, info: &mut UserInfo, spec: &UserSpec) -> Result<(), ResError> {
        if let Some(uid) = spec.uid {
            info.uid = uid;
        }
        if let Some(g) = &spec.group {
            info.gid = self.resolve_gid(g)?;
        }
        if let Some(gs) = &spec.groups {
            for g in gs {
                self.resolve_gid(g)?;
            }
            info.groups = gs.iter().cloned().collect();
        }
        if let Some(h) = &spec.home {
            info.home = h.clone();
        }
        if let Some(s) = &spec.shell {
            info.shell = s.clone();
        }
        Ok(())
    }
}

#[async_trait]
#[cfg(any(test, feature = "fakes"))]
impl Accounts for FakeAccounts {
    async fn user(&self, name: &str) -> Result<Option<UserInfo>, ResError> {
        Ok(self.users.lock().unwrap_or_else(|e| e.into_inner()).get(name).cloned())
    }
    async fn group(&self, name: &str) -> Result<Option<u32>, ResError> {
        Ok(self.groups.lock().unwrap_or_else(|e| e.into_inner()).get(name).copied())
    }
    async fn add_user(&self, name: &str, spec: &UserSpec) -> Result<(), ResError> {
        let next = 1000 + self.users.lock().unwrap_or_else(|e| e.into_inner()).len() as u32;
        let mut info = UserInfo {
            uid: next,
            gid: next,
            home: format!("/home/{name}"),
            shell: "/bin/sh".into(),
            ..UserInfo::default()
        };
        self.apply(&mut info, spec)?;
        self.users.lock().unwrap_or_else(|e| e.into_inner()).insert(name.into(), info);
        Ok(())
    }
    async fn modify_user(&self, name: &str, spec: &UserSpec) -> Result<(), ResError> {
        let mut info = self.user(name).await?.ok_or_else(|| ResError::new(format!("user '{name}' does not exist")))?;
        self.apply(&mut info, spec)?;
        self.users.lock().unwrap_or_else(|e| e.into_inner()).insert(name.into(), info);
        Ok(())
    }
    async fn delete_user(&self, name: &str) -> Result<(), ResError> {
        self.users.lock().unwrap_or_else(|e| e.into_inner()).remove(name);
        Ok(())
    }
    async fn add_group(&self, name: &str, gid: Option<u32>) -> Result<(), ResError> {
        let mut groups = self.groups.lock().unwrap_or_else(|e| e.into_inner());
        let gid = gid.unwrap_or(2000 + groups.len() as u32);
        groups.insert(name.into(), gid);
        Ok(())
    }
    async fn modify_group(&self, name: &str, gid: u32) -> Result<(), ResError> {
        self.groups.lock().unwrap_or_else(|e| e.into_inner()).insert(name.into(), gid);
        Ok(())
    }
    async fn delete_group(&self, name: &str) -> Result<(), ResError> {
        self.groups.lock().unwrap_or_else(|e| e.into_inner()).remove(name);
        Ok(())
    }
    fn files(&self) -> Vec<PathBuf> {
        Vec::new()
    }
}

// ---------------------------------------------------------------------------------------
// Mounts and hostname

#[async_trait]
pub trait Mounter: Send + Sync {
    async fn is_mounted(&self, point: &str) -> Result<bool, ResError>;
    /// Mounts `point` as described by the fstab entry.
    async fn mount(&self, point: &str) -> Result<(), ResError>;
    async fn unmount(&self, point: &str) -> Result<(), ResError>;
}

/// `mount`/`umount` and `/proc/self/mounts`.
pub struct MountTools;

#[async_trait]
impl Mounter for MountTools {
    async fn is_mounted(&self, point: &str) -> Result<bool, ResError> {
        let mounts = std::fs::read_to_string("/proc/self/mounts").at("/proc/self/mounts")?;
        let point = point.trim_end_matches('/');
        Ok(mounts.lines().any(|l| l.split_whitespace().nth(1) == Some(if point.is_empty() { "/" } else { point })))
    }
    async fn mount(&self, point: &str) -> Result<(), ResError> {
        run_ok(&["mount", point]).await.map(drop)
    }
    async fn unmount(&self, point: &str) -> Result<(), ResError> {
        run_ok(&["umount", point]).await.map(drop)
    }
}

#[derive(Default)]
#[cfg(any(test, feature = "fakes"))]
pub struct FakeMounts {
    pub mounted: Mutex<BTreeSet<String>>,
}

#[async_trait]
#[cfg(any(test, feature = "fakes"))]
impl Mounter for FakeMounts {
    async fn is_mounted(&self, point: &str) -> Result<bool, ResError> {
        Ok(self.mounted.lock().unwrap_or_else(|e| e.into_inner()).contains(point))
    }
    async fn mount(&self, point: &str) -> Result<(), ResError> {
        self.mounted.lock().unwrap_or_else(|e| e.into_inner()).insert(point.into());
        Ok(())
    }
    async fn unmount(&self, point: &str) -> Result<(), ResError> {
        self.mounted.lock().unwrap_or_else(|e| e.into_inner()).remove(point);
        Ok(())
    }
}

pub trait HostnameSetter: Send + Sync {
    fn transient(&self) -> Result<String, ResError>;
    fn set_transient(&self, name: &str) -> Result<(), ResError>;
}

/// The kernel hostname (`gethostname`/`sethostname`).
pub struct Uname;

impl HostnameSetter for Uname {
    fn transient(&self) -> Result<String, ResError> {
        nix::unistd::gethostname()
            .map(|h| h.to_string_lossy().into_owned())
            .map_err(|e| ResError::new(format!("gethostname: {e}")))
    }
    fn set_transient(&self, name: &str) -> Result<(), ResError> {
        nix::unistd::sethostname(name).map_err(|e| ResError::new(format!("sethostname: {e}")))
    }
}

#[derive(Default)]
#[cfg(any(test, feature = "fakes"))]
pub struct FakeHostname {
    pub name: Mutex<String>,
}

#[cfg(any(test, feature = "fakes"))]
impl HostnameSetter for FakeHostname {
    fn transient(&self) -> Result<String, ResError> {
        Ok(self.name.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }
    fn set_transient(&self, name: &str) -> Result<(), ResError> {
        *self.name.lock().unwrap_or_else(|e| e.into_inner()) = name.to_string();
        Ok(())
    }
}
