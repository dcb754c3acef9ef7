//! systemd over D-Bus: [`SystemdBus`], the [`ServiceManager`] that talks to
//! `org.freedesktop.systemd1` with zbus (the system bus, or the session bus for user units),
//! and [`Systemd`], the one [`Machine::system`](crate::machine::Machine::system) holds, which uses
//! `SystemdBus` when systemd answers on the bus and the `systemctl` backend when it does not.
//!
//! Jobs (start, stop, reload-or-try-restart) are queued with mode `replace` and waited for
//! through the manager's `JobRemoved` signal, subscribed to before the call that queues the
//! job. A unit is followed through `PropertiesChanged` on its object plus the manager's
//! `Reloading` signal. The proxies below declare only the members this module uses.
//!
//! Not here: unit files (the `svc` kind watches them itself), transient units, and any
//! cancellation of a job this module queued (a job runs until systemd ends it).

use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use engine::ResError;
use futures::StreamExt;
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;
use zbus::proxy::CacheProperties;
use zbus::{Connection, OwnedObjectPath};

use crate::machine::{ServiceManager, Systemctl, UnitChanges};
use crate::util::command::{self, CmdSpec};
use crate::util::lock;

/// How often a start, stop or reload job that has not finished yet is logged.
pub const JOB_WARN_EVERY: Duration = Duration::from_secs(10);

/// The bus name of the service manager.
const DESTINATION: &str = "org.freedesktop.systemd1";

/// How long a method call on a dialled bus may wait for its reply (a job's end is waited
/// for separately); generous, as a daemon-reload of a big system can take a while.
const METHOD_TIMEOUT: Duration = Duration::from_secs(90);

/// The system bus when `DBUS_SYSTEM_BUS_ADDRESS` does not say otherwise.
const SYSTEM_BUS: &str = "unix:path=/run/dbus/system_bus_socket";

#[zbus::proxy(
    interface = "org.freedesktop.systemd1.Manager",
    default_service = "org.freedesktop.systemd1",
    default_path = "/org/freedesktop/systemd1"
)]
trait Manager {
    /// Asks the manager to send its signals (it stays quiet without a subscriber).
    fn subscribe(&self) -> zbus::Result<()>;
    /// The unit's object, loading the unit if needed; a unit without a unit file still gets
    /// an object, with `LoadState` `not-found`.
    fn load_unit(&self, name: &str) -> zbus::Result<OwnedObjectPath>;
    fn start_unit(&self, name: &str, mode: &str) -> zbus::Result<OwnedObjectPath>;
    fn stop_unit(&self, name: &str, mode: &str) -> zbus::Result<OwnedObjectPath>;
    fn reload_or_try_restart_unit(&self, name: &str, mode: &str) -> zbus::Result<OwnedObjectPath>;
    /// `(carries_install_info, [(change type, link, target)])`.
    fn enable_unit_files(
        &self,
        files: &[&str],
        runtime: bool,
        force: bool,
    ) -> zbus::Result<(bool, Vec<(String, String, String)>)>;
    fn disable_unit_files(&self, files: &[&str], runtime: bool) -> zbus::Result<Vec<(String, String, String)>>;
    /// daemon-reload; the reply comes once the reload is over.
    fn reload(&self) -> zbus::Result<()>;

    #[zbus(signal)]
    fn job_removed(&self, id: u32, job: OwnedObjectPath, unit: String, result: String) -> zbus::Result<()>;
    /// Sent with `true` before a daemon-reload and `false` after it.
    #[zbus(signal)]
    fn reloading(&self, active: bool) -> zbus::Result<()>;
}

#[zbus::proxy(interface = "org.freedesktop.systemd1.Unit", default_service = "org.freedesktop.systemd1")]
trait Unit {
    #[zbus(property)]
    fn load_state(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn active_state(&self) -> zbus::Result<String>;
    #[zbus(property)]
    fn unit_file_state(&self) -> zbus::Result<String>;
}

// ---------------------------------------------------------------------------------------
// The D-Bus backend

/// systemd over D-Bus. Holds at most one connection per bus, opened (and subscribed) on
/// first use and reused; a connection that failed with an I/O error is dropped, so the next
/// call dials again.
pub struct SystemdBus {
    system: Link,
    session: Link,
}

/// One bus.
struct Link {
    /// `system` or `session`, for messages.
    name: &'static str,
    dial: Dial,
    /// The open, subscribed connection; `None` before first use and after an I/O error.
    open: Mutex<Option<ManagerProxy<'static>>>,
    /// Held while dialling, so concurrent first calls share one connection.
    dialling: tokio::sync::Mutex<()>,
}

/// Where a link's connection comes from.
enum Dial {
    /// A bus address; `None`: the environment's (or the usual) address for the bus.
    Address(Option<String>),
    /// A connection made by the caller (tests: a peer-to-peer link to a fake manager).
    Given(Connection),
}

impl SystemdBus {
    /// The machine's buses, at the addresses the environment names.
    pub fn new() -> SystemdBus {
        SystemdBus::at(None, None)
    }

    /// Explicit bus addresses (`unix:path=…`); `None` for the environment's.
    pub fn at(system: Option<String>, session: Option<String>) -> SystemdBus {
        SystemdBus {
            system: Link::new("system", Dial::Address(system)),
            session: Link::new("session", Dial::Address(session)),
        }
    }

    /// Connections made by the caller: system units go over `system`, user units over
    /// `session`. Each is subscribed on first use like a dialled one.
    pub fn over(system: Connection, session: Connection) -> SystemdBus {
        SystemdBus {
            system: Link::new("system", Dial::Given(system)),
            session: Link::new("session", Dial::Given(session)),
        }
    }

    /// Opens (or reuses) the bus connection and subscribes: `Ok` means systemd answers.
    pub async fn reachable(&self, session: bool) -> Result<(), ResError> {
        self.link(session).manager().await.map(drop)
    }

    fn link(&self, session: bool) -> &Link {
        if session { &self.session } else { &self.system }
    }

    async fn manager(&self, session: bool) -> Result<ManagerProxy<'static>, ResError> {
        self.link(session).manager().await
    }

    /// A proxy for the unit's object, reading properties afresh on every call; `None` when
    /// the manager says there is no such unit.
    async fn unit(&self, unit: &str, session: bool) -> Result<Option<UnitProxy<'static>>, ResError> {
        let link = self.link(session);
        let manager = link.manager().await?;
        let path = match manager.load_unit(unit).await {
            Ok(path) => path,
            Err(e) if is_no_such_unit(&e) => return Ok(None),
            Err(e) => return Err(link.error(&format!("load {unit}"), e)),
        };
        let proxy = UnitProxy::builder(manager.inner().connection())
            .path(path)
            .cache_properties(CacheProperties::No)
            .build()
            .await
            .map_err(|e| link.error(&format!("unit {unit}"), e))?;
        Ok(Some(proxy))
    }

    /// A property of the unit's object; `None` when there is no such unit.
    async fn unit_property(&self, unit: &str, session: bool, property: Property) -> Result<Option<String>, ResError> {
        let Some(proxy) = self.unit(unit, session).await? else { return Ok(None) };
        let value = match property {
            Property::Load => proxy.load_state().await,
            Property::Active => proxy.active_state().await,
            Property::UnitFile => proxy.unit_file_state().await,
        };
        value.map(Some).map_err(|e| self.link(session).error(&format!("{unit} {}", property.name()), e))
    }

    /// Queues `job` for `unit` and waits until systemd removes it, warning every
    /// [`JOB_WARN_EVERY`]; a result other than `done` or `skipped` is an error naming the
    /// unit and the result.
    async fn job(&self, job: Job, unit: &str, session: bool) -> Result<(), ResError> {
        let link = self.link(session);
        let manager = link.manager().await?;
        let verb = job.verb();
        // Subscribed before the job is queued, so a job that ends at once is not missed.
        let mut removed = manager.receive_job_removed_with_args(&[(2, unit)]).await.map_err(|e| link.error(verb, e))?;
        let queued = match job {
            Job::Start => manager.start_unit(unit, "replace").await,
            Job::Stop => manager.stop_unit(unit, "replace").await,
            Job::ReloadOrTryRestart => manager.reload_or_try_restart_unit(unit, "replace").await,
        };
        let path = queued.map_err(|e| link.error(&format!("{verb} {unit}"), e))?;
        match wait_for_job(&mut removed, &path, verb, unit).await {
            JobEnd::Result(result) if matches!(result.as_str(), "done" | "skipped") => Ok(()),
            JobEnd::Result(result) => {
                Err(ResError::new(format!("{verb} {unit}: the job ended with result `{result}`")))
            }
            JobEnd::Lost => {
                link.forget();
                Err(ResError::transient(format!("{verb} {unit}: lost the {} bus while waiting for its job", link.name)))
            }
        }
    }
}

/// How a job ended, as far as this side saw.
enum JobEnd {
    /// `JobRemoved`'s result: `done`, `skipped`, `failed`, `timeout`, `dependency`, …
    Result(String),
    /// The signal stream ended: the connection is gone.
    Lost,
}

/// Waits for the `JobRemoved` of `job`, warning every [`JOB_WARN_EVERY`] while it runs.
async fn wait_for_job(removed: &mut JobRemovedStream, job: &OwnedObjectPath, verb: &str, unit: &str) -> JobEnd {
    let started = tokio::time::Instant::now();
    let mut warn = tokio::time::interval_at(started + JOB_WARN_EVERY, JOB_WARN_EVERY);
    loop {
        tokio::select! {
            signal = removed.next() => {
                let Some(signal) = signal else { return JobEnd::Lost };
                match signal.args() {
                    Ok(args) if args.job == *job => return JobEnd::Result(args.result),
                    _ => {}
                }
            }
            _ = warn.tick() => {
                let waited_s = started.elapsed().as_secs();
                tracing::warn!(unit, job = verb, waited_s, "systemd job still running");
            }
        }
    }
}

impl Default for SystemdBus {
    fn default() -> SystemdBus {
        SystemdBus::new()
    }
}

/// The unit properties this module reads.
#[derive(Clone, Copy, Debug)]
enum Property {
    Load,
    Active,
    UnitFile,
}

impl Property {
    /// The D-Bus property name.
    fn name(self) -> &'static str {
        match self {
            Property::Load => "LoadState",
            Property::Active => "ActiveState",
            Property::UnitFile => "UnitFileState",
        }
    }
}

/// The jobs this module queues and waits for.
#[derive(Clone, Copy, Debug)]
enum Job {
    Start,
    Stop,
    ReloadOrTryRestart,
}

impl Job {
    fn verb(self) -> &'static str {
        match self {
            Job::Start => "start",
            Job::Stop => "stop",
            Job::ReloadOrTryRestart => "reload-or-try-restart",
        }
    }
}

impl Link {
    fn new(name: &'static str, dial: Dial) -> Link {
        Link { name, dial, open: Mutex::new(None), dialling: tokio::sync::Mutex::new(()) }
    }

    /// The manager on this bus, dialling and subscribing on first use.
    async fn manager(&self) -> Result<ManagerProxy<'static>, ResError> {
        if let Some(manager) = self.cached() {
            return Ok(manager);
        }
        let _dialling = self.dialling.lock().await;
        if let Some(manager) = self.cached() {
            return Ok(manager);
        }
        let conn = self.connect().await?;
        let manager = ManagerProxy::new(&conn)
            .await
            .map_err(|e| ResError::transient(format!("systemd does not answer on the {} bus ({e})", self.name)))?;
        manager
            .subscribe()
            .await
            .map_err(|e| ResError::transient(format!("systemd does not answer on the {} bus ({e})", self.name)))?;
        *lock(&self.open) = Some(manager.clone());
        Ok(manager)
    }

    fn cached(&self) -> Option<ManagerProxy<'static>> {
        lock(&self.open).clone()
    }

    async fn connect(&self) -> Result<Connection, ResError> {
        let address = match &self.dial {
            Dial::Given(conn) => return Ok(conn.clone()),
            Dial::Address(Some(address)) => address.clone(),
            Dial::Address(None) if self.name == "system" => default_system_bus(),
            Dial::Address(None) => default_session_bus(),
        };
        let fail = |e: zbus::Error| {
            let shown = address.strip_prefix("unix:path=").unwrap_or(&address);
            ResError::new(format!("no {} bus at {shown} ({e})", self.name))
        };
        zbus::connection::Builder::address(address.as_str()).method_timeout(METHOD_TIMEOUT).build().await.map_err(fail)
    }

    /// `what` failed with `e`; an I/O error also drops the connection.
    fn error(&self, what: &str, e: zbus::Error) -> ResError {
        if matches!(e, zbus::Error::InputOutput(_)) {
            self.forget();
        }
        ResError::new(format!("{what}: {e}"))
    }

    /// Drops the connection, so the next call dials again.
    fn forget(&self) {
        *lock(&self.open) = None;
    }
}

fn default_system_bus() -> String {
    std::env::var("DBUS_SYSTEM_BUS_ADDRESS").unwrap_or_else(|_| SYSTEM_BUS.to_string())
}

fn default_session_bus() -> String {
    if let Ok(address) = std::env::var("DBUS_SESSION_BUS_ADDRESS") {
        return address;
    }
    let runtime_dir = std::env::var("XDG_RUNTIME_DIR")
        .unwrap_or_else(|_| format!("/run/user/{}", nix::unistd::Uid::effective().as_raw()));
    format!("unix:path={runtime_dir}/bus")
}

/// `org.freedesktop.systemd1.NoSuchUnit`.
fn is_no_such_unit(e: &zbus::Error) -> bool {
    matches!(e, zbus::Error::MethodError(name, _, _) if name.as_str() == "org.freedesktop.systemd1.NoSuchUnit")
}

#[async_trait]
impl ServiceManager for SystemdBus {
    async fn exists(&self, unit: &str, session: bool) -> Result<bool, ResError> {
        let state = self.unit_property(unit, session, Property::Load).await?;
        Ok(state.as_deref() == Some("loaded"))
    }

    async fn is_active(&self, unit: &str, session: bool) -> Result<bool, ResError> {
        let state = self.unit_property(unit, session, Property::Active).await?;
        // As `systemctl is-active`: a unit reloading is active.
        Ok(matches!(state.as_deref(), Some("active" | "reloading" | "refreshing")))
    }

    async fn is_enabled(&self, unit: &str, session: bool) -> Result<bool, ResError> {
        let state = self.unit_property(unit, session, Property::UnitFile).await?;
        // The states `systemctl is-enabled` reports with success, so both backends agree
        // (a static unit counts as enabled: there is nothing to enable).
        Ok(matches!(
            state.as_deref(),
            Some("enabled" | "enabled-runtime" | "static" | "alias" | "indirect" | "generated" | "transient")
        ))
    }

    async fn start(&self, unit: &str, session: bool) -> Result<(), ResError> {
        self.job(Job::Start, unit, session).await
    }

    async fn stop(&self, unit: &str, session: bool) -> Result<(), ResError> {
        self.job(Job::Stop, unit, session).await
    }

    async fn enable(&self, unit: &str, session: bool) -> Result<(), ResError> {
        let link = self.link(session);
        let manager = self.manager(session).await?;
        let (carries_install_info, changes) = manager
            .enable_unit_files(&[unit], false, false)
            .await
            .map_err(|e| link.error(&format!("enable {unit}"), e))?;
        if !carries_install_info && changes.is_empty() {
            tracing::warn!(unit, "the unit has no [Install] section: enabling it changes nothing");
        }
        manager.reload().await.map_err(|e| link.error(&format!("enable {unit}: daemon-reload"), e))
    }

    async fn disable(&self, unit: &str, session: bool) -> Result<(), ResError> {
        let link = self.link(session);
        let manager = self.manager(session).await?;
        manager.disable_unit_files(&[unit], false).await.map_err(|e| link.error(&format!("disable {unit}"), e))?;
        manager.reload().await.map_err(|e| link.error(&format!("disable {unit}: daemon-reload"), e))
    }

    async fn reload_or_try_restart(&self, unit: &str, session: bool) -> Result<(), ResError> {
        self.job(Job::ReloadOrTryRestart, unit, session).await
    }

    async fn daemon_reload(&self, session: bool) -> Result<(), ResError> {
        let link = self.link(session);
        self.manager(session).await?.reload().await.map_err(|e| link.error("daemon-reload", e))
    }

    /// One `EnableUnitFiles` for every unit to enable, one `DisableUnitFiles`, one reload.
    async fn set_startup(&self, enable: &[&str], disable: &[&str], session: bool) -> Result<(), ResError> {
        let link = self.link(session);
        let manager = self.manager(session).await?;
        if !enable.is_empty() {
            let what = format!("enable {}", enable.join(", "));
            manager.enable_unit_files(enable, false, false).await.map_err(|e| link.error(&what, e))?;
        }
        if !disable.is_empty() {
            let what = format!("disable {}", disable.join(", "));
            manager.disable_unit_files(disable, false).await.map_err(|e| link.error(&what, e))?;
        }
        manager.reload().await.map_err(|e| link.error("daemon-reload", e))
    }

    async fn changes(&self, unit: &str, session: bool) -> Result<Option<UnitChanges>, ResError> {
        let link = self.link(session);
        let manager = self.manager(session).await?;
        let reloading = manager.receive_reloading().await.map_err(|e| link.error("subscribe to Reloading", e))?;
        let path = match manager.load_unit(unit).await {
            Ok(path) => path,
            Err(e) if is_no_such_unit(&e) => {
                // No object to follow; a daemon-reload may bring the unit.
                return Ok(Some(reloading.map(drop).boxed()));
            }
            Err(e) => return Err(link.error(&format!("load {unit}"), e)),
        };
        let what = format!("follow {unit}");
        let properties = zbus::fdo::PropertiesProxy::builder(manager.inner().connection())
            .destination(DESTINATION)
            .path(path)
            .build()
            .await
            .map_err(|e| link.error(&what, e))?
            .receive_properties_changed()
            .await
            .map_err(|e| link.error(&what, e))?;
        Ok(Some(futures::stream::select(properties.map(drop), reloading.map(drop)).boxed()))
    }
}

// ---------------------------------------------------------------------------------------
// Choosing a backend

/// The init system of the machine: [`SystemdBus`] where systemd answers on the bus,
/// [`Systemctl`] where it does not (no bus socket) but `systemctl` reaches it. The choice is
/// made on first use, once per bus, and kept; a failure to reach either is not kept, so a
/// later call tries again.
pub struct Systemd {
    dbus: SystemdBus,
    /// The program whose `show --property=Version` tells whether `systemctl` reaches
    /// systemd.
    systemctl: String,
    system: OnceCell<Backend>,
    session: OnceCell<Backend>,
}

/// Which backend [`Systemd`] chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    DBus,
    Systemctl,
}

impl Systemd {
    pub fn new() -> Systemd {
        Systemd::with(SystemdBus::new(), "systemctl")
    }

    /// `dbus` first, then the `systemctl` program (tests name one that fails or succeeds).
    pub fn with(dbus: SystemdBus, systemctl: &str) -> Systemd {
        Systemd { dbus, systemctl: systemctl.to_string(), system: OnceCell::new(), session: OnceCell::new() }
    }

    /// The backend for the bus, choosing it on first use.
    pub async fn backend(&self, session: bool) -> Result<Backend, ResError> {
        let cell = if session { &self.session } else { &self.system };
        cell.get_or_try_init(|| self.choose(session)).await.copied()
    }

    async fn choose(&self, session: bool) -> Result<Backend, ResError> {
        let bus_error = match self.dbus.reachable(session).await {
            Ok(()) => return Ok(Backend::DBus),
            Err(e) => e,
        };
        match self.probe_systemctl(session).await {
            Ok(()) => {
                tracing::info!(error = %bus_error, "systemd is not reachable over D-Bus; using systemctl");
                Ok(Backend::Systemctl)
            }
            Err(systemctl_error) => {
                Err(ResError::new(format!("cannot reach systemd: {bus_error} and systemctl failed: {systemctl_error}")))
            }
        }
    }

    async fn probe_systemctl(&self, session: bool) -> Result<(), String> {
        let mut args: Vec<String> = Vec::new();
        if session {
            args.push("--user".into());
        }
        args.extend(["show".into(), "--property=Version".into(), "--value".into()]);
        let spec = CmdSpec { cmd: self.systemctl.clone(), args, ..CmdSpec::default() };
        let out = command::run(&spec, &CancellationToken::new()).await.map_err(|e| e.message)?;
        if out.success() {
            Ok(())
        } else {
            let output = out.output.trim();
            Err(if output.is_empty() { format!("exit code {:?}", out.code) } else { output.replace('\n', "; ") })
        }
    }

    async fn pick(&self, session: bool) -> Result<&dyn ServiceManager, ResError> {
        Ok(match self.backend(session).await? {
            Backend::DBus => &self.dbus,
            Backend::Systemctl => &Systemctl,
        })
    }
}

impl Default for Systemd {
    fn default() -> Systemd {
        Systemd::new()
    }
}

#[async_trait]
impl ServiceManager for Systemd {
    async fn exists(&self, unit: &str, session: bool) -> Result<bool, ResError> {
        self.pick(session).await?.exists(unit, session).await
    }
    async fn is_active(&self, unit: &str, session: bool) -> Result<bool, ResError> {
        self.pick(session).await?.is_active(unit, session).await
    }
    async fn is_enabled(&self, unit: &str, session: bool) -> Result<bool, ResError> {
        self.pick(session).await?.is_enabled(unit, session).await
    }
    async fn start(&self, unit: &str, session: bool) -> Result<(), ResError> {
        self.pick(session).await?.start(unit, session).await
    }
    async fn stop(&self, unit: &str, session: bool) -> Result<(), ResError> {
        self.pick(session).await?.stop(unit, session).await
    }
    async fn enable(&self, unit: &str, session: bool) -> Result<(), ResError> {
        self.pick(session).await?.enable(unit, session).await
    }
    async fn disable(&self, unit: &str, session: bool) -> Result<(), ResError> {
        self.pick(session).await?.disable(unit, session).await
    }
    async fn reload_or_try_restart(&self, unit: &str, session: bool) -> Result<(), ResError> {
        self.pick(session).await?.reload_or_try_restart(unit, session).await
    }
    async fn daemon_reload(&self, session: bool) -> Result<(), ResError> {
        self.pick(session).await?.daemon_reload(session).await
    }
    async fn set_startup(&self, enable: &[&str], disable: &[&str], session: bool) -> Result<(), ResError> {
        self.pick(session).await?.set_startup(enable, disable, session).await
    }
    async fn changes(&self, unit: &str, session: bool) -> Result<Option<UnitChanges>, ResError> {
        self.pick(session).await?.changes(unit, session).await
    }
}
