//! The D-Bus systemd backend and the `svc` kind against a fake `org.freedesktop.systemd1`:
//! a manager and unit objects served with zbus on a private peer-to-peer connection over a
//! socket pair, so no bus daemon and no real systemd take part.

use crate::support;

use std::collections::BTreeMap;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use engine::{ApplyCtx, ResKey};
use lang::value::Value;
use resources::build_with;
use resources::machine::{Machine, ServiceManager};
use resources::services::systemd::{Backend, Systemd, SystemdBus};
use support::{check, eventually_within, params, s};
use zbus::object_server::{ObjectServer, SignalEmitter};
use zbus::{Connection, ObjectPath, OwnedObjectPath, interface};

const MANAGER_PATH: &str = "/org/freedesktop/systemd1";

/// What the fake manager knows and what it was asked.
#[derive(Default)]
struct World {
    units: BTreeMap<String, UnitState>,
    /// Every method call in order, like `StartUnit web.service replace`.
    calls: Vec<String>,
    next_job: u32,
}

#[derive(Clone)]
struct UnitState {
    active: String,
    file_state: String,
    /// The result every job of this unit ends with.
    job_result: String,
    /// How long a job of this unit runs.
    job_time: Duration,
}

type Shared = Arc<Mutex<World>>;

fn lock(world: &Shared) -> MutexGuard<'_, World> {
    world.lock().unwrap_or_else(|e| e.into_inner())
}

/// The errors the fake replies with, named like systemd's.
#[derive(Debug, zbus::DBusError)]
#[zbus(prefix = "org.freedesktop.systemd1")]
enum SystemdError {
    #[zbus(error)]
    ZBus(zbus::Error),
    NoSuchUnit(String),
}

struct FakeManager {
    world: Shared,
}

impl FakeManager {
    /// Queues a job: replies with its path at once, then after the unit's job time sets
    /// the unit to `after` (if the job succeeds) and sends `JobRemoved`.
    fn queue(
        &self,
        conn: &Connection,
        call: String,
        name: String,
        after: Option<&'static str>,
    ) -> Result<OwnedObjectPath, SystemdError> {
        let mut world = lock(&self.world);
        world.calls.push(call);
        let Some(unit) = world.units.get(&name).cloned() else {
            return Err(SystemdError::NoSuchUnit(format!("Unit {name} not found.")));
        };
        world.next_job += 1;
        let id = world.next_job;
        let job = OwnedObjectPath::try_from(format!("{MANAGER_PATH}/job/{id}")).unwrap();
        let (conn, shared, reply) = (conn.clone(), self.world.clone(), job.clone());
        tokio::spawn(async move {
            tokio::time::sleep(unit.job_time).await;
            if let Some(after) = after.filter(|_| unit.job_result == "done") {
                lock(&shared).units.get_mut(&name).unwrap().active = after.to_string();
            }
            let emitter = SignalEmitter::new(&conn, MANAGER_PATH).unwrap();
            FakeManager::job_removed(&emitter, id, job.as_ref(), &name, &unit.job_result).await.unwrap();
        });
        Ok(reply)
    }
}

#[interface(interface = "org.freedesktop.systemd1.Manager")]
impl FakeManager {
    fn subscribe(&self) {
        lock(&self.world).calls.push("Subscribe".into());
    }

    /// Like systemd, any name gets an object; without a unit its `LoadState` is `not-found`.
    async fn load_unit(&self, name: String, #[zbus(object_server)] server: &ObjectServer) -> OwnedObjectPath {
        let path = unit_path(&name);
        server.at(path.as_str(), FakeUnit { world: self.world.clone(), name }).await.unwrap();
        path
    }

    fn start_unit(
        &self,
        name: String,
        mode: String,
        #[zbus(connection)] conn: &Connection,
    ) -> Result<OwnedObjectPath, SystemdError> {
        self.queue(conn, format!("StartUnit {name} {mode}"), name, Some("active"))
    }

    fn stop_unit(
        &self,
        name: String,
        mode: String,
        #[zbus(connection)] conn: &Connection,
    ) -> Result<OwnedObjectPath, SystemdError> {
        self.queue(conn, format!("StopUnit {name} {mode}"), name, Some("inactive"))
    }

    fn reload_or_try_restart_unit(
        &self,
        name: String,
        mode: String,
        #[zbus(connection)] conn: &Connection,
    ) -> Result<OwnedObjectPath, SystemdError> {
        self.queue(conn, format!("ReloadOrTryRestartUnit {name} {mode}"), name, None)
    }

    fn enable_unit_files(
        &self,
        files: Vec<String>,
        runtime: bool,
        force: bool,
    ) -> (bool, Vec<(String, String, String)>) {
        let mut world = lock(&self.world);
        world.calls.push(format!("EnableUnitFiles {files:?} runtime={runtime} force={force}"));
        let mut changes = Vec::new();
        for file in &files {
            if let Some(unit) = world.units.get_mut(file) {
                unit.file_state = "enabled".into();
                let link = format!("/etc/systemd/system/multi-user.target.wants/{file}");
                changes.push(("symlink".into(), link, format!("/usr/lib/systemd/system/{file}")));
            }
        }
        (true, changes)
    }

    fn disable_unit_files(&self, files: Vec<String>, runtime: bool) -> Vec<(String, String, String)> {
        let mut world = lock(&self.world);
        world.calls.push(format!("DisableUnitFiles {files:?} runtime={runtime}"));
        let mut changes = Vec::new();
        for file in &files {
            if let Some(unit) = world.units.get_mut(file) {
                unit.file_state = "disabled".into();
                changes.push((
                    "unlink".into(),
                    format!("/etc/systemd/system/multi-user.target.wants/{file}"),
                    "".into(),
                ));
            }
        }
        changes
    }

    fn reload(&self) {
        lock(&self.world).calls.push("Reload".into());
    }

    #[zbus(signal)]
    async fn job_removed(
        emitter: &SignalEmitter<'_>,
        id: u32,
        job: ObjectPath<'_>,
        unit: &str,
        result: &str,
    ) -> zbus::Result<()>;

    #[zbus(signal)]
    async fn reloading(emitter: &SignalEmitter<'_>, active: bool) -> zbus::Result<()>;
}

/// A unit's object; reads the world on every property get.
struct FakeUnit {
    world: Shared,
    name: String,
}

impl FakeUnit {
    fn state(&self) -> Option<UnitState> {
        lock(&self.world).units.get(&self.name).cloned()
    }
}

#[interface(interface = "org.freedesktop.systemd1.Unit")]
impl FakeUnit {
    #[zbus(property)]
    fn load_state(&self) -> String {
        if self.state().is_some() { "loaded" } else { "not-found" }.into()
    }

    #[zbus(property)]
    fn active_state(&self) -> String {
        self.state().map(|u| u.active).unwrap_or_else(|| "inactive".into())
    }

    #[zbus(property)]
    fn unit_file_state(&self) -> String {
        self.state().map(|u| u.file_state).unwrap_or_default()
    }
}

/// systemd's object path for a unit: bytes other than ASCII letters and digits as `_xx`.
fn unit_path(name: &str) -> OwnedObjectPath {
    let mut path = format!("{MANAGER_PATH}/unit/");
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() {
            path.push(byte as char);
        } else {
            path.push_str(&format!("_{byte:02x}"));
        }
    }
    OwnedObjectPath::try_from(path).unwrap()
}

/// One fake manager and the client end of its private connection.
struct Fake {
    world: Shared,
    server: Connection,
    client: Connection,
}

impl Fake {
    async fn start() -> Fake {
        let world = Shared::default();
        let (server, client) = p2p_pair(Some(FakeManager { world: world.clone() })).await;
        Fake { world, server, client }
    }

    fn add(&self, unit: &str) {
        let state = UnitState {
            active: "inactive".into(),
            file_state: "disabled".into(),
            job_result: "done".into(),
            job_time: Duration::ZERO,
        };
        lock(&self.world).units.insert(unit.into(), state);
    }

    fn edit(&self, unit: &str, edit: impl FnOnce(&mut UnitState)) {
        edit(lock(&self.world).units.get_mut(unit).unwrap());
    }

    fn active(&self, unit: &str) -> String {
        lock(&self.world).units[unit].active.clone()
    }

    fn calls(&self) -> Vec<String> {
        lock(&self.world).calls.clone()
    }

    fn count(&self, call: &str) -> usize {
        self.calls().iter().filter(|c| *c == call).count()
    }

    /// Sends `PropertiesChanged` for the unit's `ActiveState`, as systemd does when the unit
    /// changes state.
    async fn emit_changed(&self, unit: &str) {
        let iface = self.server.object_server().interface::<_, FakeUnit>(unit_path(unit).as_str()).await.unwrap();
        iface.get().await.active_state_changed(iface.signal_emitter()).await.unwrap();
    }

    /// Sends `Reloading(true)`, as systemd does when a daemon-reload begins.
    async fn emit_reloading(&self) {
        let emitter = SignalEmitter::new(&self.server, MANAGER_PATH).unwrap();
        FakeManager::reloading(&emitter, true).await.unwrap();
    }
}

/// A peer-to-peer link over a socket pair: the server end serves `manager`, or without one
/// only an unrelated object (so calls to the manager get an error reply).
async fn p2p_pair(manager: Option<FakeManager>) -> (Connection, Connection) {
    let (server_end, client_end) = UnixStream::pair().unwrap();
    let server = zbus::connection::Builder::unix_stream(server_end).server(zbus::Guid::generate()).p2p();
    let server = match manager {
        Some(manager) => server.serve_at(MANAGER_PATH, manager),
        None => server.serve_at("/elsewhere", FakeUnit { world: Shared::default(), name: "x".into() }),
    };
    // A call that gets no reply fails the test instead of hanging it.
    let client = zbus::connection::Builder::unix_stream(client_end).p2p().method_timeout(Duration::from_secs(5));
    tokio::try_join!(server.build(), client.build()).unwrap()
}

/// Polls `cond` for up to 3 s: well before the watch's fallback poll
/// ([`resources::services::svc::STATE_POLL`]) could notice anything, so only a signal makes it true.
async fn soon(cond: impl FnMut() -> bool) -> bool {
    const WITHIN: Duration = Duration::from_secs(3);
    assert!(WITHIN < resources::services::svc::STATE_POLL);
    eventually_within(WITHIN, cond).await
}

fn sandbox(root: &std::path::Path, system: &Fake, session: &Fake) -> Machine {
    let services = SystemdBus::over(system.client.clone(), session.client.clone());
    Machine { services: Arc::new(services), ..Machine::sandbox(root) }
}

#[tokio::test]
async fn start_and_stop_wait_for_the_job_and_reuse_one_subscribed_connection() {
    let fake = Fake::start().await;
    fake.add("web.service");
    // The unit changes state only when its job ends, so a start that returned before the
    // job's JobRemoved would still see it inactive.
    fake.edit("web.service", |u| u.job_time = Duration::from_millis(300));
    let systemd = SystemdBus::over(fake.client.clone(), fake.client.clone());

    assert!(systemd.exists("web.service", false).await.unwrap());
    assert!(!systemd.is_active("web.service", false).await.unwrap());
    systemd.start("web.service", false).await.unwrap();
    assert!(systemd.is_active("web.service", false).await.unwrap(), "start returned before its job ended");
    systemd.stop("web.service", false).await.unwrap();
    assert!(!systemd.is_active("web.service", false).await.unwrap(), "stop returned before its job ended");
    systemd.reload_or_try_restart("web.service", false).await.unwrap();

    let calls = fake.calls();
    assert_eq!(calls.first().map(String::as_str), Some("Subscribe"), "{calls:?}");
    assert_eq!(fake.count("Subscribe"), 1, "one connection, subscribed once: {calls:?}");
    let jobs: Vec<&String> = calls.iter().filter(|c| c.contains("Unit web")).collect();
    assert_eq!(
        jobs,
        ["StartUnit web.service replace", "StopUnit web.service replace", "ReloadOrTryRestartUnit web.service replace"]
    );
}

#[tokio::test]
async fn enable_and_disable_change_unit_files_then_reload_the_manager() {
    let fake = Fake::start().await;
    fake.add("web.service");
    let systemd = SystemdBus::over(fake.client.clone(), fake.client.clone());

    assert!(!systemd.is_enabled("web.service", false).await.unwrap());
    systemd.enable("web.service", false).await.unwrap();
    assert!(systemd.is_enabled("web.service", false).await.unwrap());
    systemd.disable("web.service", false).await.unwrap();
    assert!(!systemd.is_enabled("web.service", false).await.unwrap());
    systemd.daemon_reload(false).await.unwrap();

    let calls: Vec<String> = fake.calls().into_iter().filter(|c| c != "Subscribe").collect();
    assert_eq!(
        calls,
        [
            "EnableUnitFiles [\"web.service\"] runtime=false force=false",
            "Reload",
            "DisableUnitFiles [\"web.service\"] runtime=false",
            "Reload",
            "Reload"
        ]
    );
    fake.edit("web.service", |u| u.file_state = "static".into());
    assert!(systemd.is_enabled("web.service", false).await.unwrap(), "static counts as enabled, as for systemctl");
}

#[tokio::test]
async fn a_job_that_fails_is_an_error_naming_the_unit_and_the_result() {
    let fake = Fake::start().await;
    fake.add("broken.service");
    fake.edit("broken.service", |u| u.job_result = "failed".into());
    let systemd = SystemdBus::over(fake.client.clone(), fake.client.clone());
    let err = systemd.start("broken.service", false).await.unwrap_err().message;
    assert!(err.contains("start broken.service") && err.contains("`failed`"), "{err}");

    fake.edit("broken.service", |u| u.job_result = "timeout".into());
    let err = systemd.stop("broken.service", false).await.unwrap_err().message;
    assert!(err.contains("stop broken.service") && err.contains("`timeout`"), "{err}");

    // Through the resource: its check-apply fails with the same message.
    let root = tempfile::tempdir().unwrap();
    let host = sandbox(root.path(), &fake, &fake);
    fake.edit("broken.service", |u| u.job_result = "dependency".into());
    let mut svc = build_with(&host, "svc", "broken", &params(&[("state", s("running"))])).unwrap();
    let err = check(svc.as_mut(), true).await.unwrap_err();
    assert!(err.contains("broken.service") && err.contains("`dependency`"), "{err}");
    assert_eq!(fake.active("broken.service"), "inactive");
}

#[tokio::test]
async fn a_manager_that_goes_away_during_a_job_is_an_error_not_a_hang() {
    let fake = Fake::start().await;
    fake.add("slow.service");
    fake.edit("slow.service", |u| u.job_time = Duration::from_secs(30));
    let systemd = SystemdBus::over(fake.client.clone(), fake.client.clone());
    let start = systemd.start("slow.service", false);
    let close = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        fake.server.clone().close().await.unwrap();
    };
    let (started, ()) = tokio::time::timeout(Duration::from_secs(5), async { tokio::join!(start, close) })
        .await
        .expect("the wait for the job ends with the connection");
    let err = started.unwrap_err().message;
    assert!(err.contains("start slow.service: lost the system bus"), "{err}");
}

#[tokio::test]
async fn a_missing_unit_is_an_error() {
    let fake = Fake::start().await;
    let systemd = SystemdBus::over(fake.client.clone(), fake.client.clone());
    assert!(!systemd.exists("nope.service", false).await.unwrap(), "LoadState not-found");
    let err = systemd.start("nope.service", false).await.unwrap_err().message;
    assert!(err.contains("nope.service") && err.contains("NoSuchUnit"), "{err}");

    let root = tempfile::tempdir().unwrap();
    let host = sandbox(root.path(), &fake, &fake);
    let mut svc = build_with(&host, "svc", "nope", &params(&[("state", s("running"))])).unwrap();
    let err = check(svc.as_mut(), true).await.unwrap_err();
    assert!(err.contains("unit nope.service does not exist"), "{err}");
    assert_eq!(fake.count("StartUnit nope.service replace"), 1, "only the direct call asked to start it");
}

#[tokio::test]
async fn svc_converges_and_reloads_on_refresh_over_dbus() {
    let fake = Fake::start().await;
    fake.add("web.service");
    let root = tempfile::tempdir().unwrap();
    let host = sandbox(root.path(), &fake, &fake);
    let mut svc =
        build_with(&host, "svc", "web", &params(&[("state", s("running")), ("startup", s("enabled"))])).unwrap();
    let (ok, reports) = check(svc.as_mut(), false).await.unwrap();
    assert!(!ok && reports.len() == 2, "noop: {reports:?}");
    assert_eq!(fake.active("web.service"), "inactive", "noop mode changed nothing");
    support::converge(svc.as_mut()).await;
    assert_eq!(fake.active("web.service"), "active");
    let mut ctx = ApplyCtx::detached();
    ctx.refresh = true;
    assert!(!svc.check_apply(&mut ctx, true).await.unwrap());
    assert_eq!(fake.calls().last().map(String::as_str), Some("ReloadOrTryRestartUnit web.service replace"));
}

#[tokio::test]
async fn user_units_go_over_the_session_bus() {
    let (system, session) = (Fake::start().await, Fake::start().await);
    system.add("agent.service");
    session.add("agent.service");
    let root = tempfile::tempdir().unwrap();
    let host = sandbox(root.path(), &system, &session);
    let pairs = [("state", s("running")), ("session", Value::Bool(true))];
    let mut svc = build_with(&host, "svc", "agent", &params(&pairs)).unwrap();
    support::converge(svc.as_mut()).await;
    assert_eq!(session.active("agent.service"), "active");
    assert_eq!(system.active("agent.service"), "inactive");
    assert!(system.calls().is_empty(), "the system bus was never used: {:?}", system.calls());
}

#[tokio::test]
async fn the_watch_wakes_on_properties_changed_and_on_reloading() {
    let fake = Fake::start().await;
    fake.add("web.service");
    let root = tempfile::tempdir().unwrap();
    let host = sandbox(root.path(), &fake, &fake);
    let engine = support::engine(&root.path().join("state"));
    let mut g = engine::Graph::new();
    let svc = build_with(&host, "svc", "web", &params(&[("state", s("running"))])).unwrap();
    g.add_vertex(ResKey::new("svc", "web"), engine::Meta::default(), svc);
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(support::WAIT).await);
    assert_eq!(fake.active("web.service"), "active");
    assert_eq!(fake.count("StartUnit web.service replace"), 1);

    // Stopped behind the resource's back without a signal: nothing polls, so nothing
    // notices.
    fake.edit("web.service", |u| u.active = "failed".into());
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(fake.active("web.service"), "failed", "only a signal should wake the watch");

    fake.emit_changed("web.service").await;
    assert!(soon(|| fake.active("web.service") == "active").await, "{:?}", fake.calls());
    assert_eq!(fake.count("StartUnit web.service replace"), 2);

    fake.edit("web.service", |u| u.active = "inactive".into());
    fake.emit_reloading().await;
    assert!(soon(|| fake.active("web.service") == "active").await, "{:?}", fake.calls());
    assert_eq!(fake.count("StartUnit web.service replace"), 3);
    engine.shutdown(support::WAIT).await;
}

#[tokio::test]
async fn the_backend_is_dbus_when_systemd_answers_else_systemctl_else_an_error() {
    let fake = Fake::start().await;
    let chosen = Systemd::with(SystemdBus::over(fake.client.clone(), fake.client.clone()), "false");
    assert_eq!(chosen.backend(false).await.unwrap(), Backend::DBus);

    // A bus with no manager on it: systemctl is used when it reaches systemd.
    let (_server, client) = p2p_pair(None).await;
    let chosen = Systemd::with(SystemdBus::over(client.clone(), client), "true");
    assert_eq!(chosen.backend(false).await.unwrap(), Backend::Systemctl);

    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("system_bus_socket");
    let missing = dir.path().join("systemctl");
    let address = format!("unix:path={}", socket.display());
    let chosen = Systemd::with(SystemdBus::at(Some(address), None), missing.to_str().unwrap());
    let err = chosen.backend(false).await.unwrap_err().message;
    let expected = format!("cannot reach systemd: no system bus at {} (", socket.display());
    assert!(err.starts_with(&expected) && err.contains(") and systemctl failed: "), "{err}");
    let err = chosen.start("web.service", false).await.unwrap_err().message;
    assert!(err.starts_with("cannot reach systemd"), "every call reports it: {err}");
}

/// A `svc` vertex with the default metaparams.
fn svc_vertex(name: &str, pairs: &[(&str, Value)]) -> lang::resgraph::ResVertex {
    lang::resgraph::ResVertex {
        kind: "svc".into(),
        name: name.into(),
        params: params(pairs),
        param_spans: Box::default(),
        meta: lang::resgraph::Meta::shared_default(),
        collected: false,
        span: lang::span::Span::default(),
    }
}

/// Autogrouping: three services to enable are one vertex, enabled by one `EnableUnitFiles`
/// and one daemon reload, each started and reported on its own; a notified one stays apart
/// (a notification names one service).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grouped_services_are_enabled_with_one_reload() {
    let fake = Fake::start().await;
    for unit in ["a.service", "b.service", "c.service", "d.service"] {
        fake.add(unit);
    }
    let root = tempfile::tempdir().unwrap();
    let host = sandbox(root.path(), &fake, &fake);
    let up = [("state", s("running")), ("startup", s("enabled"))];
    let mut graph = lang::resgraph::ResGraph {
        vertices: vec![svc_vertex("a", &up), svc_vertex("b", &up), svc_vertex("c", &up), svc_vertex("d", &up)],
        ..Default::default()
    };
    graph.edges.push(lang::resgraph::Edge {
        from: 0,
        to: 3,
        notify: true,
        send_recv: Vec::new(),
        span: lang::span::Span::default(),
    });
    resources::contract::group::autogroup(&mut graph);
    assert_eq!(
        graph.to_lines(),
        [
            "Edge: svc[c] -> svc[d] # svc[c] -> svc[d]",
            "Group: svc[c]: Vertex: svc[a]",
            "Group: svc[c]: Vertex: svc[b]",
            "Vertex: svc[c]",
            "Vertex: svc[d]",
        ],
        "d is notified: apart"
    );
    let engine = support::engine(&root.path().join("state"));
    let mut events = engine.subscribe();
    engine.apply(resources::contract::graph::to_engine(&host, graph, false).expect("builds")).await.expect("valid");
    assert!(engine.wait_converged(Duration::from_secs(10)).await);
    assert!(engine.failures().await.is_empty(), "{:?}", engine.failures().await);
    let calls: Vec<String> = fake.calls().into_iter().filter(|c| c.contains("UnitFiles") || c == "Reload").collect();
    assert!(
        calls.contains(
            &"EnableUnitFiles [\"c.service\", \"b.service\", \"a.service\"] runtime=false force=false".into()
        ),
        "the group's three in one call: {calls:?}"
    );
    assert_eq!(calls.iter().filter(|c| *c == "Reload").count(), 2, "one reload for the group, one for d: {calls:?}");
    for unit in ["a.service", "b.service", "c.service", "d.service"] {
        assert_eq!(fake.active(unit), "active", "{unit}");
    }
    let mut changed = Vec::new();
    while let Ok(e) = events.try_recv() {
        if let engine::EngineEvent::Applied { key, changed: true, reports, .. } = e {
            changed.push((key.to_string(), reports));
        }
    }
    changed.sort();
    assert_eq!(changed.len(), 4, "each service reported under its name: {changed:?}");
    assert_eq!(changed[0].0, "svc[a]");
    assert!(changed[0].1.iter().any(|n| n == "enabled a.service"), "{changed:?}");
    engine.shutdown(Duration::from_secs(5)).await;
}
