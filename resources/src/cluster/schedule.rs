//! `schedule`: volunteers this host for a named schedule (`namespace`, default the name),
//! or with `withdraw` takes it back out, through the world (`world::World`): the
//! local store on one host, etcd in a cluster, where one elected agent chooses the hosts
//! of every namespace by its strategy and `world.schedule(namespace)` reads the choice.
//!
//! The candidacy holds the terms (`strategy` `rr` or `alpha`, `max` hosts, default 1;
//! `persist`; `ttl` seconds) and the resource instance that made it. While the resource
//! runs, its watch renews the candidacy (the local store's records expire; etcd binds them
//! to the agent's session) and puts it back when it vanishes. When the resource stops
//! (leaves the graph or the agent shuts down) the candidacy ends at once, or lingers `ttl`
//! seconds when `ttl` is set, or stays when `persist`. `persist` with a `ttl` stays `ttl`
//! seconds, as mgmt documents the pair (mgmt's validation refuses it; one of its examples
//! uses it): it is the same candidacy as `ttl` alone.

use lang::params::ParamMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use engine::{ApplyCtx, InitCtx, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use world::{Candidacy, Follow, Topic, World};

use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::machine::Machine;
pub use world::local::DEFAULT_LEASE;

crate::choice! {
    /// How a namespace's hosts are chosen.
    #[derive(Default)]
    pub enum Strategy {
        /// Round robin (sticky), the default.
        #[default]
        Rr = "rr",
        /// By host name.
        Alpha = "alpha",
    }
}

crate::params! {
    /// `schedule`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct ScheduleParams {
        /// Defaults to the name.
        pub namespace: String => |p, f| p.str_or(f, p.name),
        pub strategy: Option<Strategy>,
        pub max: Option<i64>,
        pub persist: bool,
        pub ttl: Option<i64>,
        pub withdraw: bool,
    }
}

impl ScheduleParams {
    fn ttl(&self) -> u64 {
        self.ttl.and_then(|t| u64::try_from(t).ok()).unwrap_or(0)
    }

    /// Whether the candidacy outlives the agent for good: `persist` without a `ttl`.
    fn persists(&self) -> bool {
        self.persist && self.ttl() == 0
    }

    /// How long a running candidacy stays valid without renewal; `None` when it never
    /// expires.
    fn lease(&self) -> Option<u64> {
        (!self.persists()).then(|| if self.ttl() > 0 { self.ttl() } else { DEFAULT_LEASE })
    }
}

pub struct Schedule {
    raw: Raw,
    params: ScheduleParams,
    world: Arc<dyn World>,
    /// The namespace's candidates, followed from init on.
    view: Option<Follow>,
    /// Marks the candidacy this instance made, so a replaced instance's cleanup does not
    /// end its successor's.
    owner: String,
}

impl Schedule {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<Schedule, BuildError> {
        let (raw, params) = Raw::decoded("schedule", name, values, ScheduleParams::decode)?;
        let owner = format!("{:016x}", rand::random::<u64>());
        Ok(Schedule { raw, params, world: host.world.clone(), view: None, owner })
    }

    fn wanted(&self) -> Candidacy {
        let p = &self.params;
        Candidacy {
            strategy: p.strategy.unwrap_or_default().as_str().to_string(),
            max: p.max.filter(|m| *m > 0).unwrap_or(1),
            persist: p.persists(),
            ttl: p.ttl(),
            owner: self.owner.clone(),
        }
    }

    fn refused(&self, e: world::WorldError) -> ResError {
        ResError::transient(format!("schedule[{}]: {e}", self.raw.name))
    }
}

#[async_trait]
impl Resource for Schedule {
    fn validate(&self) -> Result<(), ResError> {
        let p = &self.params;
        let err = |field: &str, message: &str| self.raw.invalid(Some(field), message);
        if p.namespace.is_empty() {
            return Err(err("namespace", "must not be empty"));
        }
        if p.max.is_some_and(|m| m < 0) {
            return Err(err("max", "must not be negative"));
        }
        if p.ttl.is_some_and(|t| t < 0) {
            return Err(err("ttl", "must not be negative"));
        }
        if p.withdraw {
            for (field, set) in [
                ("strategy", p.strategy.is_some()),
                ("max", p.max.is_some()),
                ("persist", p.persist),
                ("ttl", p.ttl.is_some()),
            ] {
                if set {
                    return Err(err(field, "cannot be combined with `withdraw`"));
                }
            }
        }
        Ok(())
    }

    async fn init(&mut self, _ctx: &InitCtx) -> Result<(), ResError> {
        if self.world.hostname().is_empty() {
            return Err(ResError::new(format!("schedule[{}]: this host has no name", self.raw.name)));
        }
        self.view = Some(self.world.follow(&Topic::Candidates(self.params.namespace.clone())));
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let view = self.view.clone();
        let world = self.world.clone();
        let (ns, wanted) = (self.params.namespace.clone(), self.wanted());
        let lease = if self.params.withdraw { None } else { self.params.lease() };
        Box::pin(async move {
            let mut view = view.ok_or_else(|| ResError::new("schedule: watch before init"))?;
            // Renew twice per lease, so the candidacy never lapses while this runs.
            let period = Duration::from_millis(lease.unwrap_or(3600) * 500).max(Duration::from_millis(500));
            let mut renew = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            ctx.event();
            loop {
                tokio::select! {
                    changed = view.changed() => {
                        if changed.is_err() {
                            return Err(ResError::transient("schedule: the world stopped following the namespace"));
                        }
                        ctx.event();
                    }
                    _ = renew.tick(), if lease.is_some() => {
                        let mine = view.borrow().entries.get(world.hostname()).and_then(|t| Candidacy::parse(t));
                        if mine.is_some_and(|t| t.owner == wanted.owner)
                            && let Err(e) = world.volunteer(&ns, &wanted).await
                        {
                            tracing::warn!(namespace = %ns, error = %e, "cannot renew the schedule candidacy");
                        }
                    }
                    _ = ctx.cancelled() => return Ok(()),
                }
            }
        })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let key = format!("schedule[{}]", self.raw.name);
        let ns = self.params.namespace.clone();
        let Some(view) = self.view.as_ref().map(|v| v.borrow().clone()) else {
            return Err(ResError::new(format!("{key}: used before init")));
        };
        if !view.read {
            tracing::info!(resource = %key, "waiting for the world to be read");
            return Ok(false);
        }
        let stored = view.entries.get(self.world.hostname()).and_then(|t| Candidacy::parse(t));
        if self.params.withdraw {
            if stored.is_none() {
                return Ok(true);
            }
            if apply {
                self.world.withdraw(&ns, None, 0).await.map_err(|e| self.refused(e))?;
            } else {
                ctx.report(format!("{key}: would withdraw this host from `{ns}`"));
            }
            return Ok(false);
        }
        let want = self.wanted();
        if stored.as_ref() == Some(&want) {
            return Ok(true);
        }
        if !apply {
            ctx.report(format!("{key}: would volunteer this host for `{ns}`"));
            return Ok(false);
        }
        crate::cluster::world::note_queued(self.world.volunteer(&ns, &want).await.map_err(|e| self.refused(e))?, &key);
        Ok(false)
    }

    async fn cleanup(&mut self) -> Result<(), ResError> {
        if self.view.is_none() || self.params.withdraw || self.params.persists() {
            return Ok(());
        }
        let ns = self.params.namespace.clone();
        self.world.withdraw(&ns, Some(&self.owner), self.params.ttl()).await.map_err(|e| self.refused(e))?;
        Ok(())
    }

    crate::fingerprint_by_params!();
}

/// The `schedule` kind: its params and send fields as the type checker sees them, and its constructor.
pub const SCHEDULE: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("schedule", ScheduleParams::FIELDS, crate::built_on_host!(Schedule));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_follow_persist_and_ttl() {
        let p = |persist, ttl| ScheduleParams {
            namespace: "n".into(),
            strategy: None,
            max: None,
            persist,
            ttl,
            withdraw: false,
        };
        assert_eq!(p(false, None).lease(), Some(DEFAULT_LEASE));
        assert_eq!(p(false, Some(0)).lease(), Some(DEFAULT_LEASE));
        assert_eq!(p(false, Some(3)).lease(), Some(3));
        assert_eq!(p(true, None).lease(), None);
        // persist with a ttl: the ttl alone.
        assert_eq!(p(true, Some(10)).lease(), Some(10));
        assert!(!p(true, Some(10)).persists() && p(true, Some(0)).persists());
    }
}
