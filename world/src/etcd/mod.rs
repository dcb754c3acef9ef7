//! The world on an etcd cluster (`tend run --seeds URL`): every host of a fleet reads and
//! writes the same keys, all under `/_tend/` ([`keys`]):
//!
//! | key | value | bound to the host's session |
//! |---|---|---|
//! | `/_tend/hosts/<host>` | the session's lease id (hex): the host's claim on its name | yes |
//! | `/_tend/kv/<key>` | a plain key (`kv`, `world.getval`) | no: no host owns it |
//! | `/_tend/maps/<host>/<ns>` | a host's entry of a namespace (`kv` `mapped`, `world.kvlookup`) | yes |
//! | `/_tend/schedule/candidate/<host>/<ns>` | a host's candidacy (`schedule`) | yes, unless `persist` |
//! | `/_tend/schedule/result/<ns>` | the hosts the namespace chose, `h1,h2` (`world.schedule`) | no |
//! | `/_tend/schedule/leader/…` | the election of the agent that chooses | yes |
//! | `/_tend/status/<host>` | what the agent says of itself (`tend status`): deploy, convergence, failures (JSON) | yes |
//! | `/_tend/deploy/latest` | the id of the latest deploy | no |
//! | `/_tend/deploy/id/<id>` | a deploy: its parent, who made it, its entry and its files' hashes (JSON; `<id>` zero-padded to 20 digits) | no |
//! | `/_tend/deploy/blob/<sha256>` | a file of a deploy, by its content's hash | no |
//! | `/_tend/exports/<from>/<to>/<kind>/<name>` | a resource `<from>` exports to `<to>` (a host or `*`), as the language's record | yes |
//!
//! Every key a host writes names it right after its directory, so `tend cluster grant`
//! can confine each host to its own ranges ([`keys::host_ranges`], [`access`]); the first
//! layout (`/_tend/map/<ns>/<host>`, `/_tend/schedule/cand/<ns>/<host>`,
//! `/_tend/exported/<to>/<kind>/<from>/<name>`) is recognised only to tell the operator
//! that older agents are about.
//!
//! **Schedules.** Every agent that volunteers, withdraws or reads a schedule campaigns
//! (etcd's election API, on its session's lease). The leader reads every namespace's candidates and results at one
//! revision, chooses ([`crate::choose`]), writes what changed, and again after every
//! change under `/_tend/schedule/`. Its writes are fenced by its election: a transaction
//! that holds only while its leader key exists at the revision it won with, so a deposed
//! leader cannot overwrite its successor's choice.
//!
//! (`<host>`, `<ns>`, `<to>`, `<kind>`, `<from>` and `<name>` escaped by
//! [`crate::escape`], so they hold no `/`.)
//!
//! **Deploys.** A deploy writes its files' blobs (each once: they are content-addressed),
//! then in one transaction its record and `latest`, on the condition that `latest` is
//! still the id it read; a deploy that must follow one id exactly is refused when another
//! landed meanwhile, any other one reads again and lands next. Agents follow `latest`.
//!
//! **Exports.** An agent replaces its whole set of exports after each graph it applies:
//! it puts what is new or changed and deletes what it no longer exports, all bound to its
//! session, so a dead host's exports vanish with its lease and a restarted agent's
//! leftovers go with its previous session. Readers follow all of `/_tend/exports/` and
//! keep what is addressed to them or to `*`.
//!
//! **Session.** One task keeps the agent's session: it connects (with backoff), grants a
//! lease of `ttl` seconds, claims the host name with a create-only write bound to that
//! lease (a second agent with the same name is refused; a claim left by this agent's own
//! previous run, whose lease id the state directory remembers, is revoked with everything
//! it held), re-asserts every key this host owns, and keeps the lease alive. A dead agent's
//! entries vanish when its lease runs out; an agent that stops revokes its lease at once.
//!
//! **Followers.** A followed topic is read at revision R, then watched from R+1 (on a
//! client that requires the cluster to have a leader); a watch cancelled by compaction is
//! read again. When the session is lost (etcd down, quorum lost, the lease gone), every
//! view keeps its entries, marked stale, until the topic is read again after reconnecting;
//! an etcd restarted empty is simply read as empty, and the resources that write there
//! (which follow what they write) put their keys back.
//!
//! **Writes** are idempotent transactions (compare, then put or delete), so an unchanged
//! value makes no watch event. A write while the session is down is queued: owned keys are
//! re-asserted when the session is back, and a plain key's writer is woken by its fresh
//! view. No etcd error ever reaches the engine as a failure.
//!
//! The backend by concern: [`session`] (lease, host-name claim, keep-alive), [`follow`]
//! (followers and their views), [`write`] (idempotent writes and what this host owns),
//! [`schedule`] (the leader that chooses), [`exports`], [`deploys`], [`access`] (etcd's
//! users and roles: `tend cluster grant` and `revoke`), [`member`] (the etcd members tend
//! runs itself: `--client-urls`, `--server-urls`).

pub mod access;
mod deploys;
mod exports;
mod follow;
pub mod keys;
pub mod member;
mod schedule;
mod session;
mod write;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use etcd_client::Client;
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::signing::Signer;
use crate::{
    Bundle, Candidacy, Config, Deploy, Export, Follow, Health, Parent, Topic, View, World, WorldError, Written,
};

/// How long `connect` waits for the first session before starting with stale views.
const FIRST_WAIT: Duration = Duration::from_secs(5);
/// The bound on one request.
const REQUEST: Duration = Duration::from_secs(3);
const MIN_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(3);

/// An agent's link to the cluster (see the module's documentation).
pub struct EtcdWorld {
    inner: Arc<Inner>,
}

/// What the backend's tasks share.
struct Inner {
    cfg: Config,
    /// The live session, `None` while there is none.
    session: watch::Sender<Option<Session>>,
    /// Keys this host owns (full etcd keys): their values and whether they are bound to
    /// the session; re-asserted on every new session.
    owned: Mutex<BTreeMap<String, (String, bool)>>,
    /// Keys this host stopped owning while the store was away: deleted on the next session.
    disowned: Mutex<BTreeSet<String>>,
    /// Whether this agent campaigns for choosing the schedules (from its first candidacy).
    campaigning: AtomicBool,
    /// One view per followed topic, shared by its followers.
    followed: Mutex<HashMap<Topic, watch::Sender<Arc<View>>>>,
    events: AtomicU64,
    /// Round trip of the last keep-alive, in microseconds (0: none yet).
    latency_us: AtomicU64,
    stale_since: Mutex<Option<SystemTime>>,
    /// The earliest the session's lease may expire in etcd (its last renewal's send time
    /// plus the TTL etcd gave it): past it, this host no longer counts on what its lease
    /// held ([`schedule::relinquish`]).
    lease_deadline: Mutex<Option<std::time::Instant>>,
    stop: CancellationToken,
}

#[derive(Clone)]
struct Session {
    client: Client,
    lease: i64,
    /// Counts sessions: a follower that saw another one reads its topic again.
    epoch: u64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl EtcdWorld {
    /// Joins the cluster at `cfg.seeds` as `cfg.hostname`. Waits a few seconds for the
    /// first session: a host name another agent holds is an error; a cluster that does
    /// not answer is not (the agent starts with stale views and keeps trying).
    pub async fn connect(cfg: Config) -> Result<EtcdWorld, WorldError> {
        if !crate::valid_hostname(&cfg.hostname) {
            return Err(WorldError::Config(format!(
                "host name `{}` cannot be used in a cluster: only letters, digits, `.`, `_` and `-`",
                cfg.hostname
            )));
        }
        if cfg.seeds.is_empty() {
            return Err(WorldError::Config("--seeds names no etcd endpoint".into()));
        }
        let inner = Arc::new(Inner {
            cfg,
            session: watch::Sender::new(None),
            owned: Mutex::default(),
            disowned: Mutex::default(),
            campaigning: AtomicBool::new(false),
            followed: Mutex::default(),
            events: AtomicU64::new(0),
            latency_us: AtomicU64::new(0),
            stale_since: Mutex::new(Some(SystemTime::now())),
            lease_deadline: Mutex::new(None),
            stop: CancellationToken::new(),
        });
        let (first_tx, first_rx) = oneshot::channel();
        tokio::spawn(session::keep_session(inner.clone(), first_tx));
        if !inner.cfg.observer {
            tokio::spawn(schedule::relinquish(inner.clone()));
        }
        match tokio::time::timeout(FIRST_WAIT, first_rx).await {
            Ok(Ok(Err(e))) => {
                inner.stop.cancel();
                Err(e)
            }
            Ok(Ok(Ok(()))) => Ok(EtcdWorld { inner }),
            _ => {
                tracing::warn!(
                    seeds = %inner.cfg.seeds.join(","),
                    "etcd does not answer yet: running on with the last world values this host saw (stale, if any), and retrying"
                );
                Ok(EtcdWorld { inner })
            }
        }
    }

    /// Joins the election of the agent that chooses the schedules (once): every agent that
    /// volunteers, withdraws or reads a schedule does, so a choice always has someone to
    /// make it while any of them lives.
    fn campaign(&self) {
        if self.inner.cfg.observer {
            return;
        }
        if !self.inner.campaigning.swap(true, Ordering::SeqCst) && tokio::runtime::Handle::try_current().is_ok() {
            tokio::spawn(schedule::lead_schedules(self.inner.clone()));
        }
    }
}

impl Drop for EtcdWorld {
    fn drop(&mut self) {
        self.inner.stop.cancel();
    }
}

impl Inner {
    fn current(&self) -> Option<Session> {
        self.session.borrow().clone()
    }

    /// The live session's client, for a request that cannot wait for one.
    fn client_now(&self) -> Result<Client, WorldError> {
        self.current().map(|s| s.client).ok_or_else(|| WorldError::Unreachable { seeds: self.cfg.seeds.join(",") })
    }

    /// Records that this host owns `key` holding `value` (bound to its session when
    /// `leased`), or with `None` that it no longer does.
    fn own(&self, key: &str, value: Option<&str>, leased: bool) {
        match value {
            Some(v) => lock(&self.owned).insert(key.to_string(), (v.to_string(), leased)),
            None => lock(&self.owned).remove(key),
        };
    }
}

#[async_trait]
impl World for EtcdWorld {
    fn hostname(&self) -> &str {
        &self.inner.cfg.hostname
    }

    fn client_urls(&self) -> Vec<String> {
        let mut urls = self.inner.cfg.seeds.clone();
        for u in self.inner.cfg.endpoints.get() {
            if !urls.contains(&u) {
                urls.push(u);
            }
        }
        urls
    }

    fn follow(&self, topic: &Topic) -> Follow {
        let rx = follow::follow(&self.inner, topic);
        if matches!(topic, Topic::Schedule(_) | Topic::Candidates(_)) {
            self.campaign();
        }
        rx
    }

    async fn get(&self, key: &str) -> Option<String> {
        if let Some(mut s) = self.inner.current()
            && let Ok(Ok(resp)) = tokio::time::timeout(REQUEST, s.client.get(keys::val_key(key), None)).await
        {
            return resp.kvs().first().and_then(|kv| kv.value_str().ok()).map(str::to_string);
        }
        let view = lock(&self.inner.followed).get(&Topic::Val(key.to_string())).map(|tx| tx.borrow().clone());
        view.and_then(|v| v.entries.get(key).cloned())
    }

    async fn set(&self, key: &str, value: Option<&str>) -> Result<Written, WorldError> {
        self.inner.write(keys::val_key(key), value, false, Some((Topic::Val(key.to_string()), key))).await
    }

    async fn set_mine(&self, ns: &str, value: Option<&str>) -> Result<Written, WorldError> {
        let host = self.inner.cfg.hostname.clone();
        let key = keys::map_key(&host, ns);
        self.inner.own(&key, value, true);
        self.inner.write(key, value, true, Some((Topic::Map(ns.to_string()), &host))).await
    }

    async fn volunteer(&self, ns: &str, terms: &Candidacy) -> Result<Written, WorldError> {
        let host = self.inner.cfg.hostname.clone();
        let key = keys::cand_key(&host, ns);
        let value = terms.render();
        self.inner.own(&key, Some(&value), !terms.persist);
        self.campaign();
        self.inner.write(key, Some(&value), !terms.persist, Some((Topic::Candidates(ns.to_string()), &host))).await
    }

    async fn withdraw(&self, ns: &str, owner: Option<&str>, linger: u64) -> Result<Written, WorldError> {
        self.campaign();
        let host = self.inner.cfg.hostname.clone();
        let key = keys::cand_key(&host, ns);
        let held = lock(&self.inner.owned).get(&key).map(|(v, _)| v.clone());
        let terms = held.as_deref().and_then(Candidacy::parse);
        if owner.is_some() && terms.as_ref().map(|t| t.owner.as_str()) != owner {
            return Ok(Written::Done);
        }
        self.inner.own(&key, None, false);
        match terms {
            Some(terms) if linger > 0 => self.inner.linger(&key, &terms.render(), linger).await,
            _ => self.inner.write(key, None, false, Some((Topic::Candidates(ns.to_string()), &host))).await,
        }
    }

    async fn export(&self, exports: &[Export]) -> Result<Written, WorldError> {
        exports::export(&self.inner, exports).await
    }

    async fn deploy(&self, bundle: &Bundle, parent: Parent, signer: Option<&Signer>) -> Result<u64, WorldError> {
        deploys::deploy(&self.inner, bundle, parent, signer).await
    }

    async fn publish_status(&self, record: Option<&str>) -> Result<Written, WorldError> {
        let host = self.inner.cfg.hostname.clone();
        let key = keys::status_key(&host);
        self.inner.own(&key, record, true);
        self.inner.write(key, record, true, Some((Topic::Statuses, &host))).await
    }

    async fn collect_deploys(&self, keep: u64) -> Result<(usize, usize), WorldError> {
        deploys::collect(&self.inner, keep).await
    }

    async fn fetch_deploy(&self, id: u64) -> Result<Option<Deploy>, WorldError> {
        deploys::fetch(&self.inner, id).await
    }

    fn health(&self) -> Health {
        let latency = self.inner.latency_us.load(Ordering::Relaxed);
        Health {
            backend: "etcd",
            connected: self.inner.session.borrow().is_some(),
            owned: lock(&self.inner.owned).len(),
            latency_ms: (latency > 0).then(|| latency as f64 / 1000.0),
            events: self.inner.events.load(Ordering::Relaxed),
            stale_since: *lock(&self.inner.stale_since),
        }
    }

    /// Leaves the cluster: revokes the session's lease (so this host's claim, entries and
    /// candidacies go at once) and stops every task.
    async fn close(&self) {
        // Candidacies with a ttl outlive the agent by that long, not by its session.
        let lingering: Vec<(String, String, u64)> = lock(&self.inner.owned)
            .iter()
            .filter(|(k, _)| k.starts_with(&keys::candidates_root()))
            .filter_map(|(k, (v, _))| {
                Candidacy::parse(v).filter(|t| t.ttl > 0 && !t.persist).map(|t| (k.clone(), v.clone(), t.ttl))
            })
            .collect();
        for (key, value, ttl) in lingering {
            let _ = self.inner.linger(&key, &value, ttl).await;
        }
        let session = self.inner.session.borrow().clone().filter(|_| !self.inner.cfg.observer);
        self.inner.stop.cancel();
        if let Some(mut s) = session {
            let _ = tokio::time::timeout(Duration::from_secs(1), s.client.lease_revoke(s.lease)).await;
        }
    }
}
