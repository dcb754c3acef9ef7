//! What a `tend run` agent says of itself to the fleet (`tend status`, the fleet-wide
//! converged exit): the deploy it runs, whether the newest one failed here and why, whether
//! it converged, its failed resources, when its graph last changed and whether its world
//! is stale. The run loop fills a [`Status`]; a task publishes the latest record to the
//! world (only what changed, the latest winning).

use engine::EngineEvent;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;
use tokio::sync::{broadcast, watch};
use world::World;

/// One agent's status, as the run loop knows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Status {
    /// The deploy running (`None`: a program given on the command line, or none yet).
    pub deploy: Option<u64>,
    /// The newest deploy that could not run here, and why.
    pub broken: Option<(u64, String)>,
    /// The newest deploy this agent refused to run (`--trust-deploys`), and why.
    pub refused: Option<(u64, String)>,
    pub converged: bool,
    /// Failed resources and their errors.
    pub failed: BTreeMap<String, String>,
    /// Resources found being fought over by another writer, for as long as they run.
    pub flapping: std::collections::BTreeSet<String>,
    /// When the graph last changed (unix seconds).
    pub changed: f64,
    pub world_stale: bool,
}

impl Status {
    /// The published record (JSON).
    pub fn record(&self, host: &str) -> String {
        json!({
            "host": host,
            "deploy": self.deploy,
            "broken": self.broken.as_ref().map(|(id, why)| json!({"deploy": id, "error": why})),
            "refused": self.refused.as_ref().map(|(id, why)| json!({"deploy": id, "reason": why})),
            "converged": self.converged,
            "failed": self.failed,
            "flapping": self.flapping,
            "changed": self.changed,
            "world_stale": self.world_stale,
        })
        .to_string()
    }
}

/// Unix seconds now.
pub fn now() -> f64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// What only the run loop knows: the deploy it runs and the newest one that failed here.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Facts {
    pub deploy: Option<u64>,
    pub broken: Option<(u64, String)>,
    pub refused: Option<(u64, String)>,
}

/// Keeps this agent's status record in the world: follows the engine's events (failures,
/// recoveries, convergence, swaps), the run loop's [`Facts`] and the world's health, and
/// publishes each new record (at most ten a second). Must be called inside the runtime.
pub fn report(world: Arc<dyn World>, mut events: broadcast::Receiver<EngineEvent>, mut facts: watch::Receiver<Facts>) {
    tokio::spawn(async move {
        let host = world.hostname().to_string();
        let mut status = Status { changed: now(), ..Status::default() };
        let mut published: Option<Status> = None;
        let mut health = tokio::time::interval(std::time::Duration::from_secs(2));
        loop {
            tokio::select! {
                ev = events.recv() => match ev {
                    Ok(EngineEvent::Failed { key, error, .. }) => {
                        status.failed.insert(key.to_string(), error.message);
                    }
                    Ok(EngineEvent::Applied { key, .. }) => {
                        status.failed.remove(&key.to_string());
                    }
                    Ok(EngineEvent::Stopped(key)) => {
                        status.failed.remove(&key.to_string());
                        status.flapping.remove(&key.to_string());
                    }
                    Ok(EngineEvent::Converged(c)) => status.converged = c,
                    Ok(EngineEvent::Flapping { key, .. }) => {
                        status.flapping.insert(key.to_string());
                    }
                    Ok(EngineEvent::Swapped { .. }) => status.changed = now(),
                    Ok(EngineEvent::Started(_)) => {}
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                changed = facts.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let f = facts.borrow_and_update().clone();
                    status.deploy = f.deploy;
                    status.broken = f.broken;
                    status.refused = f.refused;
                }
                _ = health.tick() => status.world_stale = world.health().stale_since.is_some(),
            }
            if published.as_ref() != Some(&status) {
                if let Err(e) = world.publish_status(Some(&status.record(&host))).await {
                    tracing::debug!(error = %e, "status not published");
                }
                published = Some(status.clone());
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    });
}

/// Whether every agent in `statuses` (host -> record) runs deploy `latest`, converged,
/// with no failed resource.
pub fn fleet_converged(statuses: &BTreeMap<String, String>, latest: u64) -> bool {
    !statuses.is_empty()
        && statuses.values().all(|record| {
            let r: serde_json::Value = serde_json::from_str(record).unwrap_or_default();
            r["converged"].as_bool() == Some(true)
                && r["deploy"].as_u64() == Some(latest)
                && r["failed"].as_object().is_none_or(|f| f.is_empty())
        })
}

/// The fleet as this agent follows it, for a converged exit that waits for every agent.
pub struct Fleet {
    statuses: world::Follow,
    deploys: world::Follow,
}

impl Fleet {
    pub fn follow(world: &dyn World) -> Fleet {
        Fleet { statuses: world.follow(&world::Topic::Statuses), deploys: world.follow(&world::Topic::Deploys) }
    }

    /// Waits until every live agent runs the latest deploy and converged.
    pub async fn converged(&mut self) -> bool {
        loop {
            let latest = self.deploys.borrow_and_update().entries.get("latest").and_then(|v| v.parse().ok());
            let all = self.statuses.borrow_and_update().entries.clone();
            if let Some(latest) = latest
                && fleet_converged(&all, latest)
            {
                return true;
            }
            tokio::select! {
                r = self.statuses.changed() => if r.is_err() { return false },
                r = self.deploys.changed() => if r.is_err() { return false },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fleet_converges_when_every_agent_runs_the_latest_deploy_converged() {
        let record = |deploy: u64, converged: bool| Status { deploy: Some(deploy), converged, ..Status::default() };
        let fleet = |recs: &[Status]| -> BTreeMap<String, String> {
            recs.iter().enumerate().map(|(i, s)| (format!("h{i}"), s.record(&format!("h{i}")))).collect()
        };
        assert!(fleet_converged(&fleet(&[record(2, true), record(2, true)]), 2));
        assert!(!fleet_converged(&fleet(&[record(2, true), record(1, true)]), 2));
        assert!(!fleet_converged(&fleet(&[record(2, true), record(2, false)]), 2));
        assert!(!fleet_converged(&BTreeMap::new(), 2));
        let mut failing = record(2, true);
        failing.failed.insert("exec[x]".into(), "exit status 1".into());
        assert!(!fleet_converged(&fleet(&[record(2, true), failing]), 2));
        let broken = Status { broken: Some((3, "nope".into())), ..record(2, true) };
        let r: serde_json::Value = serde_json::from_str(&broken.record("h1")).unwrap();
        assert_eq!(r["broken"]["deploy"], 3);
        assert_eq!(r["refused"], serde_json::Value::Null);
        let refused =
            Status { refused: Some((4, "not signed by a trusted key: it carries no signature".into())), ..broken };
        let r: serde_json::Value = serde_json::from_str(&refused.record("h1")).unwrap();
        assert_eq!(r["refused"]["deploy"], 4);
        assert_eq!(r["refused"]["reason"], "not signed by a trusted key: it carries no signature");
        assert_eq!(r["host"], "h1");
    }
}
