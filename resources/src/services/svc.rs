//! `svc`: a systemd service `<name>.service`: `state` (`running`, `stopped`, or "" to
//! leave alone) and `startup` (`enabled`, `disabled`, or ""), through the host's
//! [`ServiceManager`]. A notification triggers reload-or-try-restart unless this run just
//! started or stopped the unit. Watch: the unit files, plus the unit itself through the
//! backend's change stream ([`ServiceManager::changes`]: on D-Bus, the unit's
//! `PropertiesChanged` and the manager's `Reloading`), or, where the backend has none, its
//! active/enabled state polled every [`STATE_POLL`].

use lang::params::ParamMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::StreamExt;
use futures::future::BoxFuture;

use crate::contract::autoedge::{Edges, Index};
use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::contract::typed::Startup;
use crate::machine::{Machine, ServiceManager, UnitChanges};
use crate::util::watch::watch_loop;

/// How often the watch asks the init system whether the unit's state changed, where the
/// backend cannot report changes.
pub const STATE_POLL: Duration = Duration::from_secs(10);

/// How long the watch waits before subscribing again after a subscription ended.
const RESUBSCRIBE_DELAY: Duration = Duration::from_secs(1);

crate::choice! {
    /// Whether a service should run; unset leaves it alone.
    #[derive(Default)]
    pub enum SvcState {
        #[default]
        Unset = "",
        Running = "running",
        Stopped = "stopped",
    }
}
crate::choice_default_when_absent!(SvcState);

impl SvcState {
    /// Whether the unit should be active (`None`: leave it alone).
    fn wanted(self) -> Option<bool> {
        match self {
            SvcState::Unset => None,
            SvcState::Running => Some(true),
            SvcState::Stopped => Some(false),
        }
    }
}

crate::params! {
    /// `svc`'s params; the name is the unit without `.service`.
    #[derive(Clone, Debug, PartialEq)]
    pub struct SvcParams {
        pub state: SvcState,
        pub startup: Startup,
        /// The user's session manager instead of the system's.
        pub session: bool,
    }
}

pub struct Svc {
    raw: Raw,
    params: SvcParams,
    services: Arc<dyn ServiceManager>,
    unit_files: Vec<PathBuf>,
}

impl Svc {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<Svc, BuildError> {
        let (raw, params) = Raw::decoded("svc", name, values, SvcParams::decode)?;
        let unit = format!("{name}.service");
        let unit_files = ["/etc/systemd/system/", "/usr/lib/systemd/system/"]
            .iter()
            .map(|d| host.path(&format!("{d}{unit}")))
            .collect();
        Ok(Svc { raw, params, services: host.services.clone(), unit_files })
    }

    fn unit(&self) -> String {
        format!("{}.service", self.raw.name)
    }

    /// The check-apply: state, then (unless `startup`, when a group set every unit's
    /// startup at once) startup, then a pending notification.
    async fn converge(&mut self, ctx: &mut ApplyCtx, apply: bool, startup: bool) -> Result<bool, ResError> {
        let (unit, session) = (self.unit(), self.params.session);
        let key = format!("svc[{}]", self.raw.name);
        if !self.services.exists(&unit, session).await? {
            return Err(ResError::new(format!("{key}: unit {unit} does not exist")));
        }
        let mut ok = true;
        let mut started_or_stopped = false;
        if let Some(want) = self.params.state.wanted()
            && self.services.is_active(&unit, session).await? != want
        {
            ok = false;
            started_or_stopped = true;
            if !apply {
                ctx.report(format!("{key}: would {} {unit}", if want { "start" } else { "stop" }));
            } else if want {
                self.services.start(&unit, session).await?;
            } else {
                self.services.stop(&unit, session).await?;
            }
        }
        if startup && let Some(want) = self.startup_change().await? {
            ok = false;
            if !apply {
                ctx.report(format!("{key}: would {} {unit}", if want { "enable" } else { "disable" }));
            } else if want {
                self.services.enable(&unit, session).await?;
            } else {
                self.services.disable(&unit, session).await?;
            }
        }
        if ctx.refresh && !started_or_stopped {
            ok = false;
            if apply {
                self.services.reload_or_try_restart(&unit, session).await?;
            } else {
                ctx.report(format!("{key}: would reload or restart {unit}"));
            }
        }
        Ok(ok)
    }

    /// Whether the unit must be enabled (`Some(true)`) or disabled (`Some(false)`).
    async fn startup_change(&self) -> Result<Option<bool>, ResError> {
        let Some(want) = self.params.startup.wanted() else { return Ok(None) };
        let is = self.services.is_enabled(&self.unit(), self.params.session).await?;
        Ok((is != want).then_some(want))
    }
}

/// `svc`s of one session grouped (autogrouping): every unit's startup is set at once, with
/// one daemon reload; each unit's state is then brought about as a lone `svc` would.
/// Never formed around a notified `svc` (a notification names one service).
pub struct SvcGroup {
    svcs: Vec<(engine::ResKey, Svc)>,
}

impl SvcGroup {
    fn build(
        host: &Machine,
        own: &lang::resgraph::ResVertex,
        members: &[lang::resgraph::ResVertex],
    ) -> Result<Box<dyn Resource>, (usize, BuildError)> {
        let mut svcs = Vec::with_capacity(members.len() + 1);
        for (at, v) in std::iter::once(own).chain(members).enumerate() {
            let svc = Svc::build(host, &v.name, &v.params).map_err(|e| (at, e))?;
            svcs.push((engine::ResKey::new("svc", &v.name), svc));
        }
        Ok(Box::new(SvcGroup { svcs }))
    }
}

#[async_trait]
impl Resource for SvcGroup {
    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let watches: Vec<_> = self.svcs.iter().map(|(_, s)| s.watch(ctx.clone())).collect();
        Box::pin(async move { futures::future::try_join_all(watches).await.map(drop) })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        // Startup first, for every unit at once.
        let mut changes = Vec::with_capacity(self.svcs.len());
        for (_, svc) in &self.svcs {
            changes.push(svc.startup_change().await?);
        }
        let session = self.svcs[0].1.params.session;
        let units: Vec<String> = self.svcs.iter().map(|(_, s)| s.unit()).collect();
        let pick = |want: bool| -> Vec<&str> {
            units.iter().zip(&changes).filter(|(_, c)| **c == Some(want)).map(|(u, _)| u.as_str()).collect()
        };
        let (enable, disable) = (pick(true), pick(false));
        if apply && (!enable.is_empty() || !disable.is_empty()) {
            let services = self.svcs[0].1.services.clone();
            services.set_startup(&enable, &disable, session).await?;
        }
        let mut all_ok = true;
        let mut errors = Vec::new();
        for (i, ((key, svc), change)) in self.svcs.iter_mut().zip(&changes).enumerate() {
            let mut notes = Vec::new();
            if let Some(want) = change {
                let verb = match (apply, *want) {
                    (true, true) => "enabled".to_string(),
                    (true, false) => "disabled".to_string(),
                    (false, w) => format!("{key}: would {}", if w { "enable" } else { "disable" }),
                };
                notes.push(format!("{verb} {}", svc.unit()));
            }
            let mut own = ctx.for_member(true, Default::default());
            let ok = match svc.converge(&mut own, apply, false).await {
                Ok(ok) => ok && change.is_none(),
                Err(e) => {
                    errors.push(format!("{key}: {}", e.message));
                    change.is_none()
                }
            };
            notes.extend(own.reports().iter().cloned());
            all_ok &= ok;
            ctx.part(i == 0, key, !ok, notes);
        }
        if !errors.is_empty() {
            return Err(ResError::new(errors.join("; ")));
        }
        Ok(all_ok)
    }

    fn fingerprint(&self) -> String {
        self.svcs.iter().map(|(k, s)| format!("{}:{k}{};", k.to_string().len(), s.fingerprint())).collect()
    }

    fn refreshable(&self) -> bool {
        true
    }
}

#[async_trait]
impl Resource for Svc {
    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let follow = Follow {
            key: format!("svc[{}]", self.raw.name),
            services: self.services.clone(),
            unit: self.unit(),
            session: self.params.session,
            want_active: self.params.state.wanted(),
            want_enabled: self.params.startup.wanted(),
        };
        let unit_files = self.unit_files.clone();
        Box::pin(async move {
            // Subscribed before the file watch sends the startup event, so a change after
            // the check-apply that event causes is never missed.
            let changes = follow.subscribe(true).await;
            let files = watch_loop(unit_files, false, ctx.clone());
            tokio::select! {
                out = files => out,
                out = follow.run(changes, &ctx) => out,
            }
        })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        self.converge(ctx, apply, true).await
    }

    crate::fingerprint_by_params!();

    fn refreshable(&self) -> bool {
        true
    }
}

/// What the watch needs to follow the unit itself (the unit files have their own watch).
struct Follow {
    key: String,
    services: Arc<dyn ServiceManager>,
    unit: String,
    session: bool,
    want_active: Option<bool>,
    want_enabled: Option<bool>,
}

impl Follow {
    /// The backend's change stream for the unit; `None` where it has none or subscribing
    /// failed (logged when `report`).
    async fn subscribe(&self, report: bool) -> Option<UnitChanges> {
        match self.services.changes(&self.unit, self.session).await {
            Ok(changes) => changes,
            Err(e) => {
                if report {
                    tracing::warn!(resource = %self.key, error = %e, "cannot follow the unit; polling it");
                }
                None
            }
        }
    }

    /// Wakes the worker on every change the stream reports, subscribing again when it ends;
    /// without a stream, polls every [`STATE_POLL`] and tries to subscribe again after each
    /// poll. Returns only on an error (the watch's other half returns on cancellation).
    async fn run(&self, mut changes: Option<UnitChanges>, ctx: &WatchCtx) -> Result<(), ResError> {
        loop {
            let lost = match changes.take() {
                Some(mut stream) => {
                    while stream.next().await.is_some() {
                        ctx.event();
                    }
                    tracing::warn!(resource = %self.key, "the unit's change stream ended; subscribing again");
                    tokio::time::sleep(RESUBSCRIBE_DELAY).await;
                    true
                }
                None => {
                    tokio::time::sleep(STATE_POLL).await;
                    if self.state_wrong().await? {
                        ctx.event();
                    }
                    false
                }
            };
            changes = self.subscribe(lost).await;
            if lost {
                // The state may have changed while nothing listened.
                ctx.event();
            }
        }
    }

    /// Whether the unit exists and its active or enabled state differs from the params.
    async fn state_wrong(&self) -> Result<bool, ResError> {
        let (services, unit, session) = (&self.services, &self.unit, self.session);
        if !services.exists(unit, session).await? {
            return Ok(false);
        }
        let active_wrong = match self.want_active {
            Some(want) => services.is_active(unit, session).await? != want,
            None => false,
        };
        let enabled_wrong = match self.want_enabled {
            Some(want) => services.is_enabled(unit, session).await? != want,
            None => false,
        };
        Ok(active_wrong || enabled_wrong)
    }
}

/// A `svc` comes after its unit file and before the `cron` that starts it.
fn requires(index: &Index<'_>, idx: usize, name: &str, _params: &ParamMap, edges: &mut Edges) {
    let unit = format!("{name}.service");
    let unit_file =
        ["/etc/systemd/system/", "/usr/lib/systemd/system/"].iter().find_map(|dir| index.file(&format!("{dir}{unit}")));
    if let Some(file) = unit_file {
        edges.push((file, idx));
    }
    for &cron in index.crons_of(&unit) {
        edges.push((idx, cron));
    }
}

/// The `svc` kind: its params and send fields as the type checker sees them, and its constructor.
pub const SVC: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("svc", SvcParams::FIELDS, crate::built_on_host!(Svc))
        .autoedges(crate::contract::autoedge::Rules { provides: None, requires: Some(requires), reads: &[] })
        .in_graph(crate::contract::kind::InGraph {
            // Services of one manager group: one daemon reload for all their startups.
            autogroup: Some(crate::contract::kind::AutoGroup {
                by_default: true,
                members: &[],
                notified_apart: true,
                fits: |group, member| {
                    use crate::contract::group::bool_param;
                    bool_param(group, "session") == bool_param(member, "session")
                },
                build: Some(SvcGroup::build),
            }),
            ..crate::contract::kind::InGraph::NONE
        });
