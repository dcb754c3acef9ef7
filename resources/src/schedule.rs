//! `schedule`: volunteers this host for a named schedule (`namespace`, default the name),
//! or with `withdraw` takes it back out. This is the single-host form of mgmt's cluster
//! scheduler: the candidacy is a record in the local world store,
//! `<state dir>/schedule/<namespace>/<hostname>`, which `world.schedule(namespace)` reads
//! (choosing at most `max` candidates in name order; here that is this host or no one).
//!
//! The record holds the options (`strategy` `rr` or `alpha`, `max` hosts, default 1;
//! `persist`; `ttl` seconds), the owning resource instance and, unless `persist`, a lease
//! expiry: while the resource runs its watch renews the lease (`ttl`, default
//! [`DEFAULT_LEASE`] seconds), so a crashed agent's candidacy lapses on its own. When the
//! resource stops (leaves the graph or the agent shuts down) the candidacy is removed at
//! once, or left to expire after `ttl` seconds when `ttl` is set, or kept when `persist`.
//! Readers ignore expired records.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use engine::{ApplyCtx, InitCtx, IoAt, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use lang::value::Value;

use crate::common::{Raw, store_name};
use crate::host::{Host, HostnameSetter};
use crate::params::BuildError;
use crate::typed::Fingerprint as _;
use crate::util::fs::atomic_write;
use crate::util::watch::FileWatch;

/// Seconds a running candidacy stays valid without renewal when `ttl` is not set.
pub const DEFAULT_LEASE: u64 = 10;

crate::choice! {
    /// How a namespace's hosts are chosen (the record keeps the text; `world.schedule`
    /// reads it).
    #[derive(Default)]
    pub enum Strategy {
        /// Round robin, the default.
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

    /// How long a running candidacy stays valid without renewal; `None` when it never
    /// expires.
    fn lease(&self) -> Option<u64> {
        (!self.persist).then(|| if self.ttl() > 0 { self.ttl() } else { DEFAULT_LEASE })
    }
}

/// One host's candidacy as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub strategy: String,
    pub max: i64,
    pub persist: bool,
    pub ttl: u64,
    /// The resource instance that wrote it.
    pub owner: String,
    /// Unix seconds after which the record is void; `None`: never.
    pub expires: Option<u64>,
}

impl Record {
    /// `key=value` lines.
    pub fn render(&self) -> String {
        let mut out = format!(
            "strategy={}\nmax={}\npersist={}\nttl={}\nowner={}\n",
            self.strategy, self.max, self.persist, self.ttl, self.owner
        );
        if let Some(at) = self.expires {
            out.push_str(&format!("expires={at}\n"));
        }
        out
    }

    pub fn parse(text: &str) -> Option<Record> {
        let fields: BTreeMap<&str, &str> = text.lines().filter_map(|l| l.split_once('=')).collect();
        Some(Record {
            strategy: fields.get("strategy")?.to_string(),
            max: fields.get("max")?.parse().ok()?,
            persist: fields.get("persist")?.parse().ok()?,
            ttl: fields.get("ttl")?.parse().ok()?,
            owner: fields.get("owner")?.to_string(),
            expires: match fields.get("expires") {
                Some(at) => Some(at.parse().ok()?),
                None => None,
            },
        })
    }

    /// Equal but for the lease's end (both expire, or neither does).
    fn same_terms(&self, other: &Record) -> bool {
        self.strategy == other.strategy
            && self.max == other.max
            && self.persist == other.persist
            && self.ttl == other.ttl
            && self.owner == other.owner
            && self.expires.is_some() == other.expires.is_some()
    }

    fn live(&self, now: u64) -> bool {
        self.expires.is_none_or(|at| at > now)
    }
}

pub fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

pub struct Schedule {
    raw: Raw,
    params: ScheduleParams,
    hostnames: Arc<dyn HostnameSetter>,
    /// This host's record, known after init.
    path: Option<PathBuf>,
    /// Marks the records this instance wrote, so a replaced instance's cleanup does not
    /// remove its successor's candidacy.
    owner: String,
}

impl Schedule {
    pub fn build(host: &Host, name: &str, values: &BTreeMap<String, Value>) -> Result<Schedule, BuildError> {
        let raw = Raw::new("schedule", name, values);
        let params = raw.decode(ScheduleParams::decode)?;
        let owner = format!("{:016x}", rand::random::<u64>());
        Ok(Schedule { raw, params, hostnames: host.hostnames.clone(), path: None, owner })
    }

    fn wanted(&self, now: u64) -> Record {
        let p = &self.params;
        Record {
            strategy: p.strategy.unwrap_or_default().as_str().to_string(),
            max: p.max.filter(|m| *m > 0).unwrap_or(1),
            persist: p.persist,
            ttl: p.ttl(),
            owner: self.owner.clone(),
            expires: p.lease().map(|lease| now + lease),
        }
    }

    fn path(&self) -> Result<PathBuf, ResError> {
        self.path.clone().ok_or_else(|| ResError::new(format!("schedule[{}]: used before init", self.raw.name)))
    }
}

fn read_record(path: &Path) -> Option<Record> {
    std::fs::read_to_string(path).ok().and_then(|t| Record::parse(&t))
}

fn write_record(path: &Path, record: &Record) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    atomic_write(path, record.render().as_bytes(), None)
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
        if p.persist && p.ttl() > 0 {
            return Err(err("ttl", "cannot be combined with `persist`"));
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

    async fn init(&mut self, ctx: &InitCtx) -> Result<(), ResError> {
        let host = self.hostnames.transient()?;
        if host.is_empty() {
            return Err(ResError::new(format!("schedule[{}]: this host has no name", self.raw.name)));
        }
        let dir = ctx.state_dir.join("schedule").join(store_name(&self.params.namespace));
        self.path = Some(dir.join(store_name(&host)));
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let path = self.path.clone();
        let owner = self.owner.clone();
        let lease = if self.params.withdraw { None } else { self.params.lease() };
        Box::pin(async move {
            let path = path.ok_or_else(|| ResError::new("schedule: watch before init"))?;
            let mut watch = FileWatch::new(vec![path.clone()], false)?;
            // Renew twice per lease, so the record never lapses while this runs.
            let period = Duration::from_millis(lease.unwrap_or(3600) * 500).max(Duration::from_millis(500));
            let mut renew = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            ctx.event();
            loop {
                tokio::select! {
                    changed = watch.changed() => { changed?; ctx.event(); }
                    _ = renew.tick(), if lease.is_some() => {
                        if let (Some(mut record), Some(lease)) = (read_record(&path), lease)
                            && record.owner == owner
                        {
                            record.expires = Some(now() + lease);
                            if let Err(e) = write_record(&path, &record) {
                                tracing::warn!(path = %path.display(), error = %e, "cannot renew the schedule lease");
                            }
                        }
                    }
                    _ = ctx.cancelled() => return Ok(()),
                }
            }
        })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let path = self.path()?;
        let key = format!("schedule[{}]", self.raw.name);
        let ns = &self.params.namespace;
        let stored = read_record(&path);
        if self.params.withdraw {
            if !path.exists() {
                return Ok(true);
            }
            if apply {
                std::fs::remove_file(&path).at(&path)?;
            } else {
                ctx.report(format!("{key}: would withdraw this host from `{ns}`"));
            }
            return Ok(false);
        }
        let now = now();
        let want = self.wanted(now);
        if let Some(have) = &stored
            && have.live(now)
            && have.same_terms(&want)
        {
            return Ok(true);
        }
        if !apply {
            ctx.report(format!("{key}: would volunteer this host for `{ns}`"));
            return Ok(false);
        }
        write_record(&path, &want).at(&path)?;
        Ok(false)
    }

    async fn cleanup(&mut self) -> Result<(), ResError> {
        let Some(path) = &self.path else { return Ok(()) };
        if self.params.withdraw || self.params.persist {
            return Ok(());
        }
        let Some(mut record) = read_record(path).filter(|r| r.owner == self.owner) else { return Ok(()) };
        let ttl = self.params.ttl();
        if ttl > 0 {
            record.expires = Some(now() + ttl);
            write_record(path, &record).at(path)?;
        } else {
            std::fs::remove_file(path).at(path)?;
        }
        Ok(())
    }

    fn fingerprint(&self) -> String {
        self.params.fingerprint()
    }
}

/// The `schedule` kind: its params and send fields as the type checker sees them, and its constructor.
pub const SCHEDULE: crate::kind::Kind = crate::kind::Kind {
    name: "schedule",
    params: ScheduleParams::FIELDS,
    sends: &[],
    can_recv: false,
    autoedges: crate::autoedge::Rules::NONE,
    build: |host, name, params| Ok(Box::new(Schedule::build(host, name, params)?)),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_expire() {
        let r =
            Record { strategy: "rr".into(), max: 2, persist: false, ttl: 10, owner: "ab".into(), expires: Some(100) };
        assert_eq!(Record::parse(&r.render()), Some(r.clone()));
        assert!(r.live(99) && !r.live(100));
        let forever = Record { expires: None, persist: true, ..r };
        assert_eq!(Record::parse(&forever.render()), Some(forever.clone()));
        assert!(forever.live(u64::MAX));
        assert_eq!(Record::parse("max=x\n"), None);
    }

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
    }
}
