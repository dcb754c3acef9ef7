//! `svc`: a systemd service `<name>.service`: `state` (`running`, `stopped`, or "" to
//! leave alone) and `startup` (`enabled`, `disabled`, or ""), through the host's
//! [`ServiceManager`]. A notification triggers reload-or-try-restart unless this run just
//! started or stopped the unit. Watch: the unit files, plus the unit's active/enabled
//! state polled every [`STATE_POLL`] (mgmt subscribes over D-Bus instead; not implemented).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use lang::value::Value;

use crate::common::{Raw, res_error};
use crate::host::{Host, ServiceManager};
use crate::params::{BuildError, Params};
use crate::util::watch::watch_loop;

/// How often the watch asks the init system whether the unit's state changed.
pub const STATE_POLL: std::time::Duration = std::time::Duration::from_secs(10);

#[derive(Clone, Debug, PartialEq)]
pub struct SvcParams {
    pub state: String,
    pub startup: String,
    pub session: bool,
}

pub struct Svc {
    raw: Raw,
    params: SvcParams,
    services: Arc<dyn ServiceManager>,
    unit_files: Vec<PathBuf>,
}

impl Svc {
    pub fn build(host: &Host, name: &str, values: &BTreeMap<String, Value>) -> Result<Svc, BuildError> {
        let raw = Raw::new("svc", name, values);
        let params = raw.decode(|p: &Params<'_>| {
            Ok(SvcParams { state: p.str("state")?, startup: p.str("startup")?, session: p.bool("session")? })
        })?;
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
}

#[async_trait]
impl Resource for Svc {
    fn validate(&self) -> Result<(), ResError> {
        let err = |field: &str, message: &str| {
            res_error(BuildError {
                kind: "svc".into(),
                name: self.raw.name.clone(),
                field: Some(field.into()),
                message: message.into(),
            })
        };
        if !matches!(self.params.state.as_str(), "" | "running" | "stopped") {
            return Err(err("state", "must be `running`, `stopped` or empty"));
        }
        if !matches!(self.params.startup.as_str(), "" | "enabled" | "disabled") {
            return Err(err("startup", "must be `enabled`, `disabled` or empty"));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let (services, unit, session) = (self.services.clone(), self.unit(), self.params.session);
        let want_active = (!self.params.state.is_empty()).then(|| self.params.state == "running");
        let want_enabled = (!self.params.startup.is_empty()).then(|| self.params.startup == "enabled");
        let files = watch_loop(self.unit_files.clone(), false, ctx.clone());
        Box::pin(async move {
            // Unit files through the file watcher; the unit's state by polling it, with an
            // event whenever it differs from what the params ask for.
            let poll = async {
                let mut ticker = tokio::time::interval(STATE_POLL);
                ticker.tick().await;
                loop {
                    ticker.tick().await;
                    if !services.exists(&unit, session).await? {
                        continue;
                    }
                    let active_wrong = match want_active {
                        Some(want) => services.is_active(&unit, session).await? != want,
                        None => false,
                    };
                    let enabled_wrong = match want_enabled {
                        Some(want) => services.is_enabled(&unit, session).await? != want,
                        None => false,
                    };
                    if active_wrong || enabled_wrong {
                        ctx.event();
                    }
                }
            };
            tokio::select! {
                out = files => out,
                out = poll => out,
            }
        })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let (unit, session) = (self.unit(), self.params.session);
        let key = format!("svc[{}]", self.raw.name);
        if !self.services.exists(&unit, session).await? {
            return Err(ResError::new(format!("{key}: unit {unit} does not exist")));
        }
        let mut ok = true;
        let mut started_or_stopped = false;
        if !self.params.state.is_empty() {
            let want = self.params.state == "running";
            if self.services.is_active(&unit, session).await? != want {
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
        }
        if !self.params.startup.is_empty() {
            let want = self.params.startup == "enabled";
            if self.services.is_enabled(&unit, session).await? != want {
                ok = false;
                if !apply {
                    ctx.report(format!("{key}: would {} {unit}", if want { "enable" } else { "disable" }));
                } else if want {
                    self.services.enable(&unit, session).await?;
                } else {
                    self.services.disable(&unit, session).await?;
                }
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

    fn fingerprint(&self) -> String {
        format!("{:?}", self.params)
    }

    fn refreshable(&self) -> bool {
        true
    }
}
