//! The world on an etcd cluster (`tend run --seeds URL`): every host of a fleet reads and
//! writes the same keys, all under `/_tend/`:
//!
//! | key | value | bound to the host's session |
//! |---|---|---|
//! | `/_tend/hosts/<host>` | the session's lease id (hex): the host's claim on its name | yes |
//! | `/_tend/kv/<key>` | a plain key (`kv`, `world.getval`) | no: no host owns it |
//! | `/_tend/map/<ns>/<host>` | a host's entry of a namespace (`kv` `mapped`, `world.kvlookup`) | yes |
//! | `/_tend/schedule/cand/<ns>/<host>` | a host's candidacy (`schedule`) | yes, unless `persist` |
//! | `/_tend/schedule/result/<ns>` | the hosts the namespace chose, `h1,h2` (`world.schedule`) | no |
//! | `/_tend/schedule/leader/…` | the election of the agent that chooses | yes |
//! | `/_tend/status/<host>` | what the agent says of itself (`tend status`): deploy, convergence, failures (JSON) | yes |
//! | `/_tend/deploy/latest` | the id of the latest deploy | no |
//! | `/_tend/deploy/id/<id>` | a deploy: its parent, who made it, its entry and its files' hashes (JSON; `<id>` zero-padded to 20 digits) | no |
//! | `/_tend/deploy/blob/<sha256>` | a file of a deploy, by its content's hash | no |
//! | `/_tend/exported/<to>/<kind>/<from>/<name>` | a resource `<from>` exports to `<to>` (a host or `*`), as the language's record | yes |
//!
//! **Schedules.** Every agent that volunteers, withdraws or reads a schedule campaigns
//! (etcd's election API, on its session's lease). The leader reads every namespace's candidates and results at one
//! revision, chooses (`engine::world::choose`), writes what changed, and again after every
//! change under `/_tend/schedule/`. Its writes are fenced by its election: a transaction
//! that holds only while its leader key exists at the revision it won with, so a deposed
//! leader cannot overwrite its successor's choice.
//!
//! (`<host>`, `<ns>`, `<to>`, `<kind>`, `<from>` and `<name>` escaped by
//! `engine::world::escape`, so they hold no `/`.)
//!
//! **Deploys.** A deploy writes its files' blobs (each once: they are content-addressed),
//! then in one transaction its record and `latest`, on the condition that `latest` is
//! still the id it read; a deploy that must follow one id exactly is refused when another
//! landed meanwhile, any other one reads again and lands next. Agents follow `latest`.
//!
//! **Exports.** An agent replaces its whole set of exports after each graph it applies:
//! it puts what is new or changed and deletes what it no longer exports, all bound to its
//! session, so a dead host's exports vanish with its lease and a restarted agent's
//! leftovers go with its previous session. Readers follow all of `/_tend/exported/` and
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

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use engine::world::{
    Bundle, Candidacy, Deploy, Export, Follow, Health, Parent, Topic, View, World, WorldError, Written, choose, escape,
    unescape,
};
use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, EventType, GetOptions, PutOptions, Txn, TxnOp, TxnOpResponse,
    WatchOptions,
};
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

/// Every key tend writes lives under this prefix.
pub const PREFIX: &str = "/_tend/";
/// A session's lease unless `--world-ttl` says otherwise (seconds).
pub const DEFAULT_TTL: i64 = 15;
/// How long `connect` waits for the first session before starting with stale views.
const FIRST_WAIT: Duration = Duration::from_secs(5);
/// The bound on one request.
const REQUEST: Duration = Duration::from_secs(3);
const MIN_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(3);

/// What an agent needs to join a cluster.
#[derive(Clone, Debug)]
pub struct EtcdConfig {
    /// Client URLs of the cluster's members (`http://127.0.0.1:2379`).
    pub seeds: Vec<String>,
    pub hostname: String,
    /// Seconds the session's lease outlives the agent.
    pub ttl: i64,
    /// Where the agent remembers its session's lease (to clean up after a crash).
    pub state_dir: PathBuf,
    /// Only reads (`tend why --seeds`, `tend graph --seeds`): no lease, no claim of the
    /// host name, nothing owned; the session is a connection checked every third of `ttl`.
    pub observer: bool,
}

/// An agent's link to the cluster (see the module's documentation).
pub struct EtcdWorld {
    inner: Arc<Inner>,
}

struct Inner {
    cfg: EtcdConfig,
    /// The live session, `None` while there is none.
    session: watch::Sender<Option<Session>>,
    /// Keys this host owns (full etcd keys): their values and whether they are bound to
    /// the session; re-asserted on every new session.
    owned: Mutex<BTreeMap<String, (String, bool)>>,
    /// Keys this host stopped owning while the store was away: deleted on the next session.
    disowned: Mutex<std::collections::BTreeSet<String>>,
    /// Whether this agent campaigns for choosing the schedules (from its first candidacy).
    campaigning: std::sync::atomic::AtomicBool,
    /// One view per followed topic, shared by its followers.
    followed: Mutex<HashMap<Topic, watch::Sender<Arc<View>>>>,
    events: AtomicU64,
    /// Round trip of the last keep-alive, in microseconds (0: none yet).
    latency_us: AtomicU64,
    stale_since: Mutex<Option<SystemTime>>,
    stop: CancellationToken,
}

#[derive(Clone)]
struct Session {
    client: Client,
    lease: i64,
    /// Counts sessions: a follower that saw another one reads its topic again.
    epoch: u64,
}

/// Why a session could not be made.
enum Refused {
    /// Another agent holds this host name.
    Duplicate(String),
    /// The cluster cannot be reached (or answered an error): try again.
    Down(String),
}

impl From<etcd_client::Error> for Refused {
    fn from(e: etcd_client::Error) -> Refused {
        Refused::Down(e.to_string())
    }
}

impl From<tokio::time::error::Elapsed> for Refused {
    fn from(_: tokio::time::error::Elapsed) -> Refused {
        Refused::Down("request timed out".into())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether `name` can be a host name in the world (mgmt's rule: `[A-Za-z0-9._-]`).
pub fn valid_hostname(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

impl EtcdWorld {
    /// Joins the cluster at `cfg.seeds` as `cfg.hostname`. Waits a few seconds for the
    /// first session: a host name another agent holds is an error; a cluster that does
    /// not answer is not (the agent starts with stale views and keeps trying).
    pub async fn connect(cfg: EtcdConfig) -> Result<EtcdWorld, WorldError> {
        if !valid_hostname(&cfg.hostname) {
            return Err(WorldError(format!(
                "host name `{}` cannot be used in a cluster: only letters, digits, `.`, `_` and `-`",
                cfg.hostname
            )));
        }
        if cfg.seeds.is_empty() {
            return Err(WorldError("--seeds names no etcd endpoint".into()));
        }
        let inner = Arc::new(Inner {
            cfg,
            session: watch::Sender::new(None),
            owned: Mutex::default(),
            disowned: Mutex::default(),
            campaigning: std::sync::atomic::AtomicBool::new(false),
            followed: Mutex::default(),
            events: AtomicU64::new(0),
            latency_us: AtomicU64::new(0),
            stale_since: Mutex::new(Some(SystemTime::now())),
            stop: CancellationToken::new(),
        });
        let (first_tx, first_rx) = oneshot::channel();
        tokio::spawn(keep_session(inner.clone(), first_tx));
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

    /// Leaves the cluster: revokes the session's lease (so this host's claim, entries and
    /// candidacies go at once) and stops every task.
    pub async fn close(&self) {
        // Candidacies with a ttl outlive the agent by that long, not by its session.
        let lingering: Vec<(String, String, u64)> = lock(&self.inner.owned)
            .iter()
            .filter(|(k, _)| k.starts_with(&format!("{PREFIX}schedule/cand/")))
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

impl EtcdWorld {
    /// Joins the election of the agent that chooses the schedules (once): every agent that
    /// volunteers, withdraws or reads a schedule does, so a choice always has someone to
    /// make it while any of them lives.
    fn campaign(&self) {
        if self.inner.cfg.observer {
            return;
        }
        if !self.inner.campaigning.swap(true, Ordering::SeqCst) && tokio::runtime::Handle::try_current().is_ok() {
            tokio::spawn(lead_schedules(self.inner.clone()));
        }
    }
}

impl Drop for EtcdWorld {
    fn drop(&mut self) {
        self.inner.stop.cancel();
    }
}

/// The task that keeps the session (see the module's documentation).
async fn keep_session(inner: Arc<Inner>, first: oneshot::Sender<Result<(), WorldError>>) {
    let mut first = Some(first);
    let mut backoff = MIN_BACKOFF;
    let mut lease: Option<i64> = None;
    let mut epoch = 0;
    let mut duplicate_told = false;
    while !inner.stop.is_cancelled() {
        let why = match establish(&inner, lease).await {
            Ok((client, id)) => {
                lease = Some(id);
                epoch += 1;
                backoff = MIN_BACKOFF;
                duplicate_told = false;
                if let Some(f) = first.take() {
                    let _ = f.send(Ok(()));
                }
                inner.went(true, "");
                inner.session.send_replace(Some(Session { client: client.clone(), lease: id, epoch }));
                let end = if inner.cfg.observer {
                    keep_checking(&inner, client).await
                } else {
                    keep_alive(&inner, client, id).await
                };
                inner.session.send_replace(None);
                match end {
                    Lapse::Stopped => return,
                    Lapse::Expired => {
                        lease = None;
                        "the session's lease expired".to_string()
                    }
                    Lapse::Lost(e) => e,
                }
            }
            Err(Refused::Duplicate(msg)) => {
                if let Some(f) = first.take() {
                    let _ = f.send(Err(WorldError(msg)));
                    return;
                }
                if !duplicate_told {
                    tracing::error!("{msg}; this agent stays off the world until the name is free");
                    duplicate_told = true;
                }
                backoff = MAX_BACKOFF;
                "the host name is taken".to_string()
            }
            Err(Refused::Down(e)) => e,
        };
        inner.went(false, &why);
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = inner.stop.cancelled() => return,
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Connects, gets a lease (the old one if it is still alive), claims the host name and
/// re-asserts what this host owns.
async fn establish(inner: &Inner, lease: Option<i64>) -> Result<(Client, i64), Refused> {
    let options = ConnectOptions::new()
        .with_connect_timeout(REQUEST)
        .with_keep_alive(Duration::from_secs(2), Duration::from_secs(2))
        .with_keep_alive_while_idle(true)
        .with_require_leader(true);
    let mut client = tokio::time::timeout(REQUEST, Client::connect(&inner.cfg.seeds, Some(options))).await??;
    if inner.cfg.observer {
        // A linearizable read proves the cluster has a quorum.
        tokio::time::timeout(REQUEST, client.get(PREFIX, Some(GetOptions::new().with_keys_only().with_limit(1))))
            .await??;
        return Ok((client, 0));
    }
    let alive = match lease {
        Some(id) => {
            let ttl = tokio::time::timeout(REQUEST, client.lease_time_to_live(id, None)).await??.ttl();
            (ttl > 0).then_some(id)
        }
        None => None,
    };
    let id = match alive {
        Some(id) => id,
        None => tokio::time::timeout(REQUEST, client.lease_grant(inner.cfg.ttl, None)).await??.id(),
    };
    claim(inner, &mut client, id).await?;
    let owned: Vec<(String, (String, bool))> = lock(&inner.owned).iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    for (key, (value, leased)) in owned {
        tokio::time::timeout(REQUEST, put_if_changed(&mut client, &key, Some(&value), leased.then_some(id))).await??;
    }
    let disowned: Vec<String> = lock(&inner.disowned).iter().cloned().collect();
    for key in disowned {
        tokio::time::timeout(REQUEST, put_if_changed(&mut client, &key, None, None)).await??;
        lock(&inner.disowned).remove(&key);
    }
    Ok((client, id))
}

/// Where the agent remembers its session's lease.
fn lease_file(inner: &Inner) -> PathBuf {
    inner.cfg.state_dir.join("world").join(format!("etcd-lease-{}", escape(&inner.cfg.hostname)))
}

/// Claims `/_tend/hosts/<host>` for lease `id`.
async fn claim(inner: &Inner, client: &mut Client, id: i64) -> Result<(), Refused> {
    let key = format!("{PREFIX}hosts/{}", escape(&inner.cfg.hostname));
    let me = format!("{id:x}");
    let before = std::fs::read_to_string(lease_file(inner)).ok().map(|s| s.trim().to_string());
    for _ in 0..3 {
        let txn = Txn::new()
            .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(key.as_str(), me.as_str(), Some(PutOptions::new().with_lease(id)))])
            .or_else([TxnOp::get(key.as_str(), None)]);
        let resp = tokio::time::timeout(REQUEST, client.txn(txn)).await??;
        let holder = match resp.op_responses().into_iter().next() {
            _ if resp.succeeded() => None,
            Some(TxnOpResponse::Get(get)) => get
                .kvs()
                .first()
                .map(|kv| (String::from_utf8_lossy(kv.value()).into_owned(), kv.lease(), kv.mod_revision())),
            _ => None,
        };
        let Some((held_by, held_lease, revision)) = holder else {
            if resp.succeeded() {
                remember(inner, &me);
                return Ok(());
            }
            continue;
        };
        if held_by == me {
            remember(inner, &me);
            return Ok(());
        }
        if !genuine_claim(&held_by, held_lease) {
            // Not an agent's claim (every agent writes its own live lease's id, bound to
            // it): garbage or a forgery. Taken over, if it is still what was read.
            tracing::warn!(
                key = %key,
                value = %quote(&held_by),
                "the host-name claim holds something no agent wrote; taking it over"
            );
            let txn = Txn::new()
                .when([Compare::mod_revision(key.as_str(), CompareOp::Equal, revision)])
                .and_then([TxnOp::delete(key.as_str(), None)]);
            tokio::time::timeout(REQUEST, client.txn(txn)).await??;
            continue;
        }
        if before.as_deref() == Some(held_by.as_str()) {
            // This agent's previous run (killed before it could leave): drop its session
            // and with it everything it owned.
            tracing::info!(lease = %held_by, "removing what this host's previous run left in etcd");
            tokio::time::timeout(REQUEST, client.lease_revoke(held_lease)).await??;
            continue;
        }
        let held_by = quote(&held_by);
        return Err(Refused::Duplicate(format!(
            "host name `{}` is already claimed in etcd by another running agent (session {held_by}); \
             give each agent its own --hostname, or wait for a dead agent's claim to lapse (up to {} s)",
            inner.cfg.hostname, inner.cfg.ttl
        )));
    }
    Err(Refused::Down("the host-name claim kept changing".into()))
}

/// Whether an entry of `topic` read at `key` counts. An export is written by its host bound
/// to the host's session, so it lives only as long as that session: one bound to no lease
/// was written by hand (or forged) and is never collected.
fn admitted(topic: &Topic, key: &str, lease: i64) -> bool {
    if matches!(topic, Topic::Exports) && lease == 0 {
        tracing::warn!(key = %quote(key), "an export bound to no host's session is ignored");
        return false;
    }
    true
}

/// Whether a claim's value is what an agent writes: the id, in hex, of the live lease the
/// key is bound to (a key bound to a lease exists only while the lease lives).
fn genuine_claim(value: &str, lease: i64) -> bool {
    lease != 0 && i64::from_str_radix(value, 16).is_ok_and(|id| id == lease)
}

/// At most 32 characters of a value read from etcd, for a message: a forged key may hold
/// megabytes.
fn quote(value: &str) -> String {
    match value.char_indices().nth(32) {
        Some((at, _)) => format!("{}… ({} bytes)", &value[..at], value.len()),
        None => value.to_string(),
    }
}

fn remember(inner: &Inner, lease: &str) {
    let path = lease_file(inner);
    let saved = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| crate::util::fs::atomic_write(&path, lease.as_bytes(), None));
    if let Err(e) = saved {
        tracing::warn!(path = %path.display(), error = %e, "cannot record the etcd session");
    }
}

/// How a session ended.
enum Lapse {
    Stopped,
    Expired,
    Lost(String),
}

/// Keeps lease `id` alive (three renewals per TTL) until that fails.
async fn keep_alive(inner: &Inner, mut client: Client, id: i64) -> Lapse {
    let (mut keeper, mut stream) = match tokio::time::timeout(REQUEST, client.lease_keep_alive(id)).await {
        Ok(Ok(pair)) => pair,
        Ok(Err(e)) => return Lapse::Lost(e.to_string()),
        Err(_) => return Lapse::Lost("keep-alive timed out".into()),
    };
    let period = inner.check_period();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = inner.stop.cancelled() => return Lapse::Stopped,
        }
        let sent = Instant::now();
        if let Err(e) = keeper.keep_alive().await {
            return Lapse::Lost(e.to_string());
        }
        match tokio::time::timeout(period.min(REQUEST), stream.message()).await {
            Ok(Ok(Some(resp))) if resp.ttl() > 0 => {
                inner.latency_us.store(sent.elapsed().as_micros().max(1) as u64, Ordering::Relaxed);
            }
            Ok(Ok(Some(_))) => return Lapse::Expired,
            Ok(Ok(None)) => return Lapse::Lost("the keep-alive stream ended".into()),
            Ok(Err(e)) => return Lapse::Lost(e.to_string()),
            Err(_) => return Lapse::Lost("keep-alive timed out".into()),
        }
    }
}

/// An observer's session: a linearizable read every third of the TTL, until one fails.
async fn keep_checking(inner: &Inner, mut client: Client) -> Lapse {
    let period = inner.check_period();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = inner.stop.cancelled() => return Lapse::Stopped,
        }
        let sent = Instant::now();
        let read = client.get(PREFIX, Some(GetOptions::new().with_keys_only().with_limit(1)));
        match tokio::time::timeout(REQUEST, read).await {
            Ok(Ok(_)) => inner.latency_us.store(sent.elapsed().as_micros().max(1) as u64, Ordering::Relaxed),
            Ok(Err(e)) => return Lapse::Lost(e.to_string()),
            Err(_) => return Lapse::Lost("read timed out".into()),
        }
    }
}

/// Puts `value` at `key` (bound to `lease`) unless it is there already; deletes it with
/// `None`. One transaction: an unchanged value makes no revision and no watch event.
/// Returns the store's revision after it.
async fn put_if_changed(
    client: &mut Client,
    key: &str,
    value: Option<&str>,
    lease: Option<i64>,
) -> Result<i64, etcd_client::Error> {
    let txn = match value {
        Some(v) => {
            let mut same = vec![Compare::value(key, CompareOp::Equal, v)];
            let mut put = PutOptions::new();
            if let Some(id) = lease {
                same.push(Compare::lease(key, CompareOp::Equal, id));
                put = put.with_lease(id);
            }
            Txn::new().when(same).or_else([TxnOp::put(key, v, Some(put))])
        }
        None => Txn::new().when([Compare::version(key, CompareOp::Greater, 0)]).and_then([TxnOp::delete(key, None)]),
    };
    client.txn(txn).await.map(|r| r.header().map_or(0, |h| h.revision()))
}

/// Whether an error means the cluster is away (queue the write) rather than a refusal.
fn is_outage(e: &etcd_client::Error) -> bool {
    use tonic::Code;
    match e {
        etcd_client::Error::GRpcStatus(s) => !matches!(
            s.code(),
            Code::InvalidArgument
                | Code::ResourceExhausted
                | Code::PermissionDenied
                | Code::Unauthenticated
                | Code::FailedPrecondition
                | Code::OutOfRange
        ),
        _ => true,
    }
}

impl Inner {
    /// Logs a change of the link (once per transition) and marks the views stale when it
    /// went down.
    fn went(&self, up: bool, why: &str) {
        let mut since = lock(&self.stale_since);
        match (up, since.is_some()) {
            (true, true) => {
                let down = since.and_then(|t| t.elapsed().ok()).unwrap_or_default();
                tracing::info!(host = %self.cfg.hostname, down_ms = down.as_millis() as u64, "joined etcd: the world is live");
                *since = None;
            }
            (false, false) => {
                tracing::warn!(error = %why, "lost etcd: the world's values are stale until it is back");
                *since = Some(SystemTime::now());
                drop(since);
                for tx in lock(&self.followed).values() {
                    tx.send_if_modified(|v| {
                        let was = v.stale;
                        if !was {
                            *v = Arc::new(v.to_stale());
                        }
                        !was
                    });
                }
            }
            _ => {}
        }
    }

    fn current(&self) -> Option<Session> {
        self.session.borrow().clone()
    }

    /// How often the session is renewed (or, for an observer, checked): three times a TTL.
    fn check_period(&self) -> Duration {
        Duration::from_millis((self.cfg.ttl.max(1) as u64) * 1000 / 3)
    }

    /// The live session's client, for a request that cannot wait for one.
    fn client_now(&self) -> Result<Client, WorldError> {
        self.current()
            .map(|s| s.client)
            .ok_or_else(|| WorldError(format!("etcd cannot be reached at {}", self.cfg.seeds.join(","))))
    }

    /// The etcd key of a plain key and of this host's entry of a namespace.
    fn val_key(key: &str) -> String {
        format!("{PREFIX}kv/{key}")
    }

    fn map_prefix(ns: &str) -> String {
        format!("{PREFIX}map/{}/", escape(ns))
    }

    fn cand_prefix(ns: &str) -> String {
        format!("{PREFIX}schedule/cand/{}/", escape(ns))
    }

    fn result_key(ns: &str) -> String {
        format!("{PREFIX}schedule/result/{}", escape(ns))
    }

    fn exported_prefix() -> String {
        format!("{PREFIX}exported/")
    }

    /// The key of an export from this host to `to`.
    fn export_key(&self, to: &str, kind: &str, name: &str) -> String {
        format!(
            "{}{}/{}/{}/{}",
            Inner::exported_prefix(),
            escape(to),
            escape(kind),
            escape(&self.cfg.hostname),
            escape(name)
        )
    }

    /// The range a topic reads: the key or prefix, and whether it is a prefix.
    fn range(topic: &Topic) -> (String, bool) {
        match topic {
            Topic::Val(k) => (Inner::val_key(k), false),
            Topic::Map(ns) => (Inner::map_prefix(ns), true),
            Topic::Candidates(ns) => (Inner::cand_prefix(ns), true),
            Topic::Schedule(ns) => (Inner::result_key(ns), false),
            Topic::Exports => (Inner::exported_prefix(), true),
            Topic::Deploys => (format!("{PREFIX}deploy/latest"), false),
            Topic::Statuses => (format!("{PREFIX}status/"), true),
        }
    }

    /// `topic`'s view entries from the etcd keys and values of its range.
    fn entries(&self, topic: &Topic, raw: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        let (key, _) = Inner::range(topic);
        match topic {
            Topic::Exports => {
                let (me, all) = (escape(&self.cfg.hostname), escape("*"));
                raw.iter()
                    .filter_map(|(k, v)| {
                        let (to, rest) = k.strip_prefix(&key)?.split_once('/')?;
                        (to == me || to == all).then(|| (rest.to_string(), v.clone()))
                    })
                    .collect()
            }
            Topic::Val(k) => raw.get(&key).map(|v| (k.clone(), v.clone())).into_iter().collect(),
            Topic::Deploys => raw.get(&key).map(|v| ("latest".to_string(), v.clone())).into_iter().collect(),
            Topic::Schedule(_) => raw
                .get(&key)
                .map(|v| v.split(',').filter(|h| !h.is_empty()).map(|h| (h.to_string(), String::new())).collect())
                .unwrap_or_default(),
            Topic::Map(_) | Topic::Candidates(_) | Topic::Statuses => {
                raw.iter().filter_map(|(k, v)| Some((unescape(k.strip_prefix(&key)?), v.clone()))).collect()
            }
        }
    }

    /// Where the last fresh view of `topic` is kept (under the state directory).
    fn cache_path(&self, topic: &Topic) -> PathBuf {
        let name = match topic {
            Topic::Val(k) => format!("val-{}", escape(k)),
            Topic::Map(ns) => format!("map-{}", escape(ns)),
            Topic::Candidates(ns) => format!("cand-{}", escape(ns)),
            Topic::Schedule(ns) => format!("sched-{}", escape(ns)),
            Topic::Exports => "exports".to_string(),
            Topic::Deploys => "deploys".to_string(),
            Topic::Statuses => "statuses".to_string(),
        };
        self.cfg.state_dir.join("world").join("views").join(escape(&self.cfg.hostname)).join(name)
    }

    /// Keeps a fresh view of `topic`, for a later run that starts while etcd is away
    /// (and for `tend why --seeds` then). Observers keep nothing.
    fn remember_view(&self, topic: &Topic, view: &View) {
        if self.cfg.observer {
            return;
        }
        let confirmed = view.confirmed.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
        let record = serde_json::json!({"revision": view.revision, "confirmed": confirmed, "entries": view.entries});
        let path = self.cache_path(topic);
        let saved = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| crate::util::fs::atomic_write(&path, record.to_string().as_bytes(), None));
        if let Err(e) = saved {
            tracing::debug!(path = %path.display(), error = %e, "cannot keep the world's view");
        }
    }

    /// The view of `topic` a previous run kept, stale.
    fn cached_view(&self, topic: &Topic) -> Option<View> {
        let text = std::fs::read_to_string(self.cache_path(topic)).ok()?;
        let record: serde_json::Value = serde_json::from_str(&text).ok()?;
        let entries = record["entries"]
            .as_object()?
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect();
        let confirmed = SystemTime::UNIX_EPOCH + Duration::from_secs_f64(record["confirmed"].as_f64()?.max(0.0));
        Some(View { entries, revision: record["revision"].as_i64()?, stale: true, read: true, confirmed })
    }

    /// A write this host made at `revision`, shown to its followers at once unless their
    /// view is already newer (a later write by another host must not be hidden).
    fn saw_write(&self, topic: &Topic, name: &str, value: Option<&str>, revision: i64) {
        let Some(tx) = lock(&self.followed).get(topic).cloned() else { return };
        tx.send_if_modified(|view| {
            if !view.read || view.revision >= revision || view.entries.get(name).map(String::as_str) == value {
                return false;
            }
            let mut next = (**view).clone();
            next.revision = revision;
            match value {
                Some(v) => next.entries.insert(name.to_string(), v.to_string()),
                None => next.entries.remove(name),
            };
            *view = Arc::new(next);
            true
        });
    }

    /// This host's own entry `name` of `topic`, written while the store is away, in the
    /// topic's stale view (its revision and staleness stay as they are).
    fn saw_own_while_away(&self, topic: &Topic, name: &str, value: Option<&str>) {
        let Some(tx) = lock(&self.followed).get(topic).cloned() else { return };
        tx.send_if_modified(|view| {
            if !view.read || !view.stale || view.entries.get(name).map(String::as_str) == value {
                return false;
            }
            let mut next = (**view).clone();
            match value {
                Some(v) => next.entries.insert(name.to_string(), v.to_string()),
                None => next.entries.remove(name),
            };
            *view = Arc::new(next);
            true
        });
    }

    /// Rebinds `key` (holding `value`) to a lease of its own that nobody renews: it goes
    /// `secs` seconds from now, whatever becomes of this agent.
    async fn linger(&self, key: &str, value: &str, secs: u64) -> Result<Written, WorldError> {
        if self.cfg.observer {
            return Ok(Written::Done);
        }
        let Some(mut s) = self.current() else { return Ok(Written::Queued) };
        let ttl = i64::try_from(secs).unwrap_or(i64::MAX);
        let put = async {
            let id = s.client.lease_grant(ttl, None).await?.id();
            s.client.put(key, value, Some(PutOptions::new().with_lease(id))).await.map(|_| ())
        };
        match tokio::time::timeout(REQUEST, put).await {
            Ok(Ok(())) => Ok(Written::Done),
            Ok(Err(e)) if !is_outage(&e) => Err(WorldError(format!("etcd refused the write of `{key}`: {e}"))),
            _ => Ok(Written::Queued),
        }
    }

    /// Writes `key` (bound to the session when `lease`) and, once written, shows it to
    /// the followers of `shown` (a topic and an entry name). A delete that cannot be made
    /// now is remembered and made on the next session.
    async fn write(
        &self,
        key: String,
        value: Option<&str>,
        lease: bool,
        shown: Option<(Topic, &str)>,
    ) -> Result<Written, WorldError> {
        if self.cfg.observer {
            return Err(WorldError(format!("`{key}` is not written: this agent only observes the cluster")));
        }
        match value {
            Some(_) => lock(&self.disowned).remove(&key),
            None => lock(&self.disowned).insert(key.clone()),
        };
        let Some(mut s) = self.current() else {
            // This host's own entry is known here even while the store is away: its stale
            // view shows it (an agent started during an outage sees itself).
            if lease && let Some((topic, name)) = &shown {
                self.saw_own_while_away(topic, name, value);
            }
            return Ok(Written::Queued);
        };
        let lease = lease.then_some(s.lease);
        match tokio::time::timeout(REQUEST, put_if_changed(&mut s.client, &key, value, lease)).await {
            Ok(Ok(revision)) => {
                if value.is_none() {
                    lock(&self.disowned).remove(&key);
                }
                if let Some((topic, name)) = shown {
                    self.saw_write(&topic, name, value, revision);
                }
                Ok(Written::Done)
            }
            Ok(Err(e)) if !is_outage(&e) => Err(WorldError(format!("etcd refused the write of `{key}`: {e}"))),
            Ok(Err(e)) => {
                tracing::debug!(key, error = %e, "write queued");
                Ok(Written::Queued)
            }
            Err(_) => Ok(Written::Queued),
        }
    }
}

/// How one pass of following a topic ended.
enum Pass {
    Unfollowed,
    /// Read the topic again now (compaction, a new session).
    Again,
    Lost(String),
}

/// Follows `topic` for as long as anyone does: read, watch from the next revision, and
/// again after every loss.
async fn follow_topic(inner: Arc<Inner>, topic: Topic, tx: watch::Sender<Arc<View>>) {
    let mut sessions = inner.session.subscribe();
    let mut backoff = MIN_BACKOFF;
    loop {
        let Some(session) = wait_session(&inner, &mut sessions, Some((&topic, &tx))).await else { return };
        match follow_pass(&inner, &topic, &tx, session, &mut sessions).await {
            Pass::Unfollowed => return,
            Pass::Again => backoff = MIN_BACKOFF,
            Pass::Lost(e) => {
                tracing::debug!(topic = %topic, error = %e, "following again");
                tx.send_if_modified(|v| {
                    let was = v.stale;
                    if !was {
                        *v = Arc::new(v.to_stale());
                    }
                    !was
                });
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = inner.stop.cancelled() => return,
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// Waits for a live session; `None` once the agent stops or, for a `follower` (a topic and
/// its views), once nobody follows it any more.
async fn wait_session(
    inner: &Inner,
    sessions: &mut watch::Receiver<Option<Session>>,
    follower: Option<(&Topic, &watch::Sender<Arc<View>>)>,
) -> Option<Session> {
    loop {
        if let Some(s) = sessions.borrow_and_update().clone() {
            return Some(s);
        }
        let closed = async {
            match follower {
                Some((_, tx)) => tx.closed().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            changed = sessions.changed() => if changed.is_err() { return None },
            _ = closed => if let Some((topic, tx)) = follower && unfollowed(inner, topic, tx) { return None },
            _ = inner.stop.cancelled() => return None,
        }
    }
}

/// Whether nobody follows `topic` any more (then it is forgotten).
fn unfollowed(inner: &Inner, topic: &Topic, tx: &watch::Sender<Arc<View>>) -> bool {
    let mut followed = lock(&inner.followed);
    if tx.receiver_count() == 0 {
        followed.remove(topic);
        return true;
    }
    false
}

async fn follow_pass(
    inner: &Inner,
    topic: &Topic,
    tx: &watch::Sender<Arc<View>>,
    session: Session,
    sessions: &mut watch::Receiver<Option<Session>>,
) -> Pass {
    let (key, prefix) = Inner::range(topic);
    let mut client = session.client.clone();
    let get = if prefix { Some(GetOptions::new().with_prefix()) } else { None };
    let resp = match tokio::time::timeout(REQUEST, client.get(key.as_str(), get)).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return Pass::Lost(e.to_string()),
        Err(_) => return Pass::Lost("read timed out".into()),
    };
    let mut revision = resp.header().map_or(0, |h| h.revision());
    let mut raw = BTreeMap::new();
    for kv in resp.kvs() {
        if let (Ok(k), Ok(v)) = (kv.key_str(), kv.value_str())
            && admitted(topic, k, kv.lease())
        {
            raw.insert(k.to_string(), v.to_string());
        }
    }
    let view = View::fresh(inner.entries(topic, &raw), revision);
    inner.remember_view(topic, &view);
    // What the kept view holds: kept again whenever the store's entries differ from it (a
    // view this host's own write already showed still has to be kept).
    let mut kept = view.entries.clone();
    tx.send_replace(Arc::new(view));
    let mut options = WatchOptions::new().with_start_revision(revision + 1).with_progress_notify();
    if prefix {
        options = options.with_prefix();
    }
    let mut stream = match tokio::time::timeout(REQUEST, client.watch(key.as_str(), Some(options))).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Pass::Lost(e.to_string()),
        Err(_) => return Pass::Lost("watch timed out".into()),
    };
    loop {
        tokio::select! {
            msg = stream.message() => {
                let resp = match msg {
                    Ok(Some(resp)) => resp,
                    Ok(None) => return Pass::Lost("the watch ended".into()),
                    Err(e) => return Pass::Lost(e.to_string()),
                };
                if resp.canceled() {
                    if resp.compact_revision() > 0 {
                        return Pass::Again;
                    }
                    return Pass::Lost(format!("the watch was cancelled: {}", resp.cancel_reason()));
                }
                for ev in resp.events() {
                    inner.events.fetch_add(1, Ordering::Relaxed);
                    let Some(kv) = ev.kv() else { continue };
                    let Ok(key) = kv.key_str() else { continue };
                    match ev.event_type() {
                        EventType::Put if admitted(topic, key, kv.lease()) => {
                            raw.insert(key.to_string(), kv.value_str().unwrap_or("").to_string())
                        }
                        EventType::Put | EventType::Delete => raw.remove(key),
                    };
                }
                if let Some(h) = resp.header() {
                    revision = revision.max(h.revision());
                }
                let entries = inner.entries(topic, &raw);
                if entries != kept {
                    inner.remember_view(topic, &View::fresh(entries.clone(), revision));
                    kept = entries.clone();
                }
                tx.send_if_modified(|view| {
                    // Also a view this host changed by its own write must come back to
                    // what the store holds.
                    let differs = view.stale || view.entries != entries;
                    if differs {
                        *view = Arc::new(View::fresh(entries, revision));
                    }
                    differs
                });
            }
            changed = sessions.changed() => {
                if changed.is_err() {
                    return Pass::Unfollowed;
                }
                let now = sessions.borrow_and_update().as_ref().map(|s| s.epoch);
                match now {
                    None => return Pass::Lost("the session was lost".into()),
                    Some(epoch) if epoch != session.epoch => return Pass::Again,
                    Some(_) => {}
                }
            }
            _ = tx.closed() => if unfollowed(inner, topic, tx) { return Pass::Unfollowed },
            _ = inner.stop.cancelled() => return Pass::Unfollowed,
        }
    }
}

/// Export writes per transaction (etcd allows 128 operations in one by default).
const EXPORT_BATCH: usize = 100;

/// Bundles of at most this many files have their files' presence checked as they land.
const BLOB_CHECKS: usize = 100;

/// The key of deploy `id` (zero-padded, so keys sort by id).
fn deploy_key(id: u64) -> String {
    format!("{PREFIX}deploy/id/{id:020}")
}

/// The key of the deployed file whose content hashes to `hash`.
fn blob_key(hash: &str) -> String {
    format!("{PREFIX}deploy/blob/{hash}")
}

/// Stores a deployed file unless it is there already.
async fn put_blob(client: &mut Client, hash: &str, bytes: &[u8]) -> Result<(), WorldError> {
    let key = blob_key(hash);
    let put = Txn::new().when([Compare::version(key.as_str(), CompareOp::Greater, 0)]).or_else([TxnOp::put(
        key.as_str(),
        bytes,
        None,
    )]);
    ask(client.txn(put)).await.map(|_| ())
}

/// One request that cannot wait for an outage to end: bounded by [`REQUEST`], its failure
/// told as a [`WorldError`].
async fn ask<T>(request: impl std::future::Future<Output = Result<T, etcd_client::Error>>) -> Result<T, WorldError> {
    match tokio::time::timeout(REQUEST, request).await {
        Ok(r) => r.map_err(|e| WorldError(format!("etcd: {e}"))),
        Err(_) => Err(timed_out()),
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn timed_out() -> WorldError {
    WorldError("etcd did not answer in time".into())
}

fn stale_parent(want: u64, latest: u64) -> WorldError {
    WorldError(format!(
        "deploy refused: it must follow deploy {want}, but the latest is {latest} (someone deployed meanwhile); \
         look at what changed, then deploy again, or give --force"
    ))
}

/// Where the agents that choose the schedules campaign.
fn election() -> String {
    format!("{PREFIX}schedule/leader")
}

/// Campaigns for choosing the schedules, and chooses while it leads (see the module's
/// documentation); again after every lost session or deposition.
async fn lead_schedules(inner: Arc<Inner>) {
    let mut sessions = inner.session.subscribe();
    loop {
        let Some(session) = wait_session(&inner, &mut sessions, None).await else { return };
        let mut client = session.client.clone();
        let won = tokio::select! {
            won = client.campaign(election(), inner.cfg.hostname.as_str(), session.lease) => won,
            _ = sessions.changed() => continue,
            _ = inner.stop.cancelled() => return,
        };
        let leader = match won {
            Ok(resp) => resp.leader().map(|l| (l.key().to_vec(), l.rev())),
            Err(e) => {
                tracing::debug!(error = %e, "campaign failed");
                None
            }
        };
        let Some((key, rev)) = leader else {
            tokio::select! {
                _ = tokio::time::sleep(MAX_BACKOFF) => {}
                _ = inner.stop.cancelled() => return,
            }
            continue;
        };
        tracing::info!(host = %inner.cfg.hostname, "choosing the schedules (elected)");
        let why = tokio::select! {
            why = lead(&inner, &mut client, &key, rev) => why,
            _ = sessions.changed() => "the session changed".to_string(),
            _ = inner.stop.cancelled() => return,
        };
        tracing::info!(host = %inner.cfg.hostname, reason = %why, "no longer choosing the schedules");
    }
}

/// While this agent leads: choose every namespace now and after every change under
/// `/_tend/schedule/`. Returns why it stopped.
async fn lead(inner: &Inner, client: &mut Client, leader_key: &[u8], leader_rev: i64) -> String {
    let root = format!("{PREFIX}schedule/");
    let cands = format!("{PREFIX}schedule/cand/");
    let results = format!("{PREFIX}schedule/result/");
    loop {
        let resp = match tokio::time::timeout(REQUEST, client.get(root.as_str(), Some(GetOptions::new().with_prefix())))
            .await
        {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return e.to_string(),
            Err(_) => return "read timed out".into(),
        };
        let revision = resp.header().map_or(0, |h| h.revision());
        let mut candidates: BTreeMap<String, BTreeMap<String, Candidacy>> = BTreeMap::new();
        let mut chosen: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for kv in resp.kvs() {
            let (Ok(k), Ok(v)) = (kv.key_str(), kv.value_str()) else { continue };
            if let Some((ns, host)) = k.strip_prefix(&cands).and_then(|rest| rest.split_once('/'))
                && let Some(terms) = Candidacy::parse(v)
            {
                candidates.entry(ns.to_string()).or_default().insert(unescape(host), terms);
            } else if let Some(ns) = k.strip_prefix(&results) {
                chosen.insert(ns.to_string(), v.split(',').filter(|h| !h.is_empty()).map(str::to_string).collect());
            }
        }
        let namespaces: std::collections::BTreeSet<&String> = candidates.keys().chain(chosen.keys()).collect();
        for ns in namespaces {
            let before = chosen.get(ns).cloned().unwrap_or_default();
            let now = candidates.get(ns).map(|c| choose(c, &before)).unwrap_or_default();
            if now == before {
                continue;
            }
            let key = format!("{results}{ns}");
            let op = if now.is_empty() {
                TxnOp::delete(key.as_str(), None)
            } else {
                TxnOp::put(key.as_str(), now.join(","), None)
            };
            // Fenced: only while this agent's leader key is the one it won with.
            let txn =
                Txn::new().when([Compare::create_revision(leader_key, CompareOp::Equal, leader_rev)]).and_then([op]);
            match tokio::time::timeout(REQUEST, client.txn(txn)).await {
                Ok(Ok(r)) if r.succeeded() => {
                    tracing::info!(namespace = %unescape(ns), hosts = %now.join(","), "schedule chosen");
                }
                Ok(Ok(_)) => return "deposed (the election moved on)".into(),
                Ok(Err(e)) => return e.to_string(),
                Err(_) => return "write timed out".into(),
            }
        }
        let options = WatchOptions::new().with_prefix().with_start_revision(revision + 1);
        let mut stream = match tokio::time::timeout(REQUEST, client.watch(root.as_str(), Some(options))).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return e.to_string(),
            Err(_) => return "watch timed out".into(),
        };
        // Any change (this leader's own results included: choosing again finds nothing
        // to write) means choosing again.
        match stream.message().await {
            Ok(Some(resp)) => {
                inner.events.fetch_add(resp.events().len() as u64, Ordering::Relaxed);
            }
            Ok(None) => return "the watch ended".into(),
            Err(e) => return e.to_string(),
        }
    }
}

#[async_trait]
impl World for EtcdWorld {
    fn hostname(&self) -> &str {
        &self.inner.cfg.hostname
    }

    fn follow(&self, topic: &Topic) -> Follow {
        let mut followed = lock(&self.inner.followed);
        if let Some(tx) = followed.get(topic) {
            return tx.subscribe();
        }
        // Without a session (etcd unreachable since the start), the last view this host's
        // state directory remembers, stale: the program runs on the last known values.
        let first = match self.inner.current() {
            Some(_) => None,
            None => self.inner.cached_view(topic),
        };
        let (tx, rx) = watch::channel(Arc::new(first.unwrap_or_else(View::unknown)));
        if tokio::runtime::Handle::try_current().is_ok() {
            followed.insert(topic.clone(), tx.clone());
            tokio::spawn(follow_topic(self.inner.clone(), topic.clone(), tx));
            if matches!(topic, Topic::Schedule(_) | Topic::Candidates(_)) {
                self.campaign();
            }
        }
        rx
    }

    async fn get(&self, key: &str) -> Option<String> {
        let topic = Topic::Val(key.to_string());
        if let Some(mut s) = self.inner.current()
            && let Ok(Ok(resp)) = tokio::time::timeout(REQUEST, s.client.get(Inner::val_key(key), None)).await
        {
            return resp.kvs().first().and_then(|kv| kv.value_str().ok()).map(str::to_string);
        }
        let view = lock(&self.inner.followed).get(&topic).map(|tx| tx.borrow().clone());
        view.and_then(|v| v.entries.get(key).cloned())
    }

    async fn set(&self, key: &str, value: Option<&str>) -> Result<Written, WorldError> {
        self.inner.write(Inner::val_key(key), value, false, Some((Topic::Val(key.to_string()), key))).await
    }

    async fn set_mine(&self, ns: &str, value: Option<&str>) -> Result<Written, WorldError> {
        let host = self.inner.cfg.hostname.clone();
        let key = format!("{}{}", Inner::map_prefix(ns), escape(&host));
        match value {
            Some(v) => lock(&self.inner.owned).insert(key.clone(), (v.to_string(), true)),
            None => lock(&self.inner.owned).remove(&key),
        };
        self.inner.write(key, value, true, Some((Topic::Map(ns.to_string()), &host))).await
    }

    async fn volunteer(&self, ns: &str, terms: &Candidacy) -> Result<Written, WorldError> {
        let host = self.inner.cfg.hostname.clone();
        let key = format!("{}{}", Inner::cand_prefix(ns), escape(&host));
        let value = terms.render();
        lock(&self.inner.owned).insert(key.clone(), (value.clone(), !terms.persist));
        self.campaign();
        self.inner.write(key, Some(&value), !terms.persist, Some((Topic::Candidates(ns.to_string()), &host))).await
    }

    async fn withdraw(&self, ns: &str, owner: Option<&str>, linger: u64) -> Result<Written, WorldError> {
        self.campaign();
        let host = self.inner.cfg.hostname.clone();
        let key = format!("{}{}", Inner::cand_prefix(ns), escape(&host));
        let held = lock(&self.inner.owned).get(&key).map(|(v, _)| v.clone());
        let terms = held.as_deref().and_then(Candidacy::parse);
        if owner.is_some() && terms.as_ref().map(|t| t.owner.as_str()) != owner {
            return Ok(Written::Done);
        }
        lock(&self.inner.owned).remove(&key);
        match terms {
            Some(terms) if linger > 0 => self.inner.linger(&key, &terms.render(), linger).await,
            _ => self.inner.write(key, None, false, Some((Topic::Candidates(ns.to_string()), &host))).await,
        }
    }

    async fn export(&self, exports: &[Export]) -> Result<Written, WorldError> {
        let inner = &self.inner;
        let wanted: BTreeMap<String, String> = exports
            .iter()
            .flat_map(|e| e.to.iter().map(move |to| (inner.export_key(to, &e.kind, &e.name), e.record.clone())))
            .collect();
        let prefix = Inner::exported_prefix();
        // What to write: the keys that are new or changed, and the ones no longer exported.
        let mut writes: Vec<(String, Option<String>)> = Vec::new();
        {
            let mut owned = lock(&inner.owned);
            let gone: Vec<String> =
                owned.keys().filter(|k| k.starts_with(&prefix) && !wanted.contains_key(*k)).cloned().collect();
            for key in gone {
                owned.remove(&key);
                writes.push((key, None));
            }
            for (key, record) in &wanted {
                if owned.get(key).map(|(v, _)| v) != Some(record) {
                    owned.insert(key.clone(), (record.clone(), true));
                    writes.push((key.clone(), Some(record.clone())));
                }
            }
        }
        if inner.cfg.observer {
            return Err(WorldError("exports are not written: this agent only observes the cluster".into()));
        }
        for (key, value) in &writes {
            match value {
                Some(_) => lock(&inner.disowned).remove(key),
                None => lock(&inner.disowned).insert(key.clone()),
            };
        }
        // One transaction per batch: a graph's exports are one revision, one watch event.
        let Some(mut s) = inner.current() else { return Ok(Written::Queued) };
        for batch in writes.chunks(EXPORT_BATCH) {
            let ops: Vec<TxnOp> = batch
                .iter()
                .map(|(key, value)| match value {
                    Some(v) => TxnOp::put(key.as_str(), v.as_str(), Some(PutOptions::new().with_lease(s.lease))),
                    None => TxnOp::delete(key.as_str(), None),
                })
                .collect();
            match tokio::time::timeout(REQUEST, s.client.txn(Txn::new().and_then(ops))).await {
                Ok(Ok(_)) => {
                    let mut disowned = lock(&inner.disowned);
                    for (key, _) in batch {
                        disowned.remove(key);
                    }
                }
                Ok(Err(e)) if !is_outage(&e) => return Err(WorldError(format!("etcd refused the exports: {e}"))),
                // Re-asserted (and the deletes made) on the next session.
                _ => return Ok(Written::Queued),
            }
        }
        Ok(Written::Done)
    }

    async fn deploy(&self, bundle: &Bundle, parent: Parent) -> Result<u64, WorldError> {
        let mut client = self.inner.client_now()?;
        let mut files = serde_json::Map::new();
        for (path, bytes) in &bundle.files {
            let hash = sha256_hex(bytes);
            put_blob(&mut client, &hash, bytes).await?;
            files.insert(path.clone(), serde_json::Value::String(hash));
        }
        let latest_key = format!("{PREFIX}deploy/latest");
        for _ in 0..20 {
            let resp = ask(client.get(latest_key.as_str(), None)).await?;
            let latest: u64 =
                resp.kvs().first().and_then(|kv| kv.value_str().ok()).and_then(|v| v.parse().ok()).unwrap_or(0);
            if let Parent::Exactly(want) = parent
                && want != latest
            {
                return Err(stale_parent(want, latest));
            }
            let id = latest + 1;
            let record = serde_json::json!({
                "id": id,
                "parent": latest,
                "by": self.inner.cfg.hostname,
                "entry": bundle.entry,
                "files": files,
            });
            let unchanged = if latest == 0 {
                Compare::version(latest_key.as_str(), CompareOp::Equal, 0)
            } else {
                Compare::value(latest_key.as_str(), CompareOp::Equal, latest.to_string())
            };
            // The files must still be there (a collection running beside this deploy may
            // have taken a file no deploy named yet): checked for bundles that fit in one
            // transaction's compares, and put back when missing.
            let mut conditions = vec![unchanged];
            if files.len() <= BLOB_CHECKS {
                conditions.extend(
                    files
                        .values()
                        .filter_map(|h| h.as_str())
                        .map(|h| Compare::version(blob_key(h), CompareOp::Greater, 0)),
                );
            }
            let txn = Txn::new().when(conditions).and_then([
                TxnOp::put(deploy_key(id), record.to_string(), None),
                TxnOp::put(latest_key.as_str(), id.to_string(), None),
            ]);
            let resp = ask(client.txn(txn)).await?;
            if resp.succeeded() {
                return Ok(id);
            }
            // Another deploy landed between the read and the write, or a file went.
            for (path, bytes) in &bundle.files {
                let Some(hash) = files.get(path).and_then(|h| h.as_str()) else { continue };
                put_blob(&mut client, hash, bytes).await?;
            }
        }
        Err(WorldError("other deploys kept landing first; try again".into()))
    }

    async fn publish_status(&self, record: Option<&str>) -> Result<Written, WorldError> {
        let host = self.inner.cfg.hostname.clone();
        let key = format!("{PREFIX}status/{}", escape(&host));
        match record {
            Some(v) => lock(&self.inner.owned).insert(key.clone(), (v.to_string(), true)),
            None => lock(&self.inner.owned).remove(&key),
        };
        self.inner.write(key, record, true, Some((Topic::Statuses, &host))).await
    }

    async fn collect_deploys(&self, keep: u64) -> Result<(usize, usize), WorldError> {
        let mut client = self.inner.client_now()?;
        // Every delete holds only while no deploy landed since this read: a deploy landing
        // meanwhile may name a file that no record named when it was read.
        let latest_key = format!("{PREFIX}deploy/latest");
        let resp = ask(client.get(latest_key.as_str(), None)).await?;
        let Some(latest) = resp.kvs().first().map(|kv| kv.value().to_vec()) else { return Ok((0, 0)) };
        let unchanged = || Compare::value(latest_key.as_str(), CompareOp::Equal, latest.clone());
        let ids_prefix = format!("{PREFIX}deploy/id/");
        let resp = ask(client.get(ids_prefix.as_str(), Some(GetOptions::new().with_prefix()))).await?;
        let mut records: Vec<(u64, Vec<String>)> = Vec::new();
        for kv in resp.kvs() {
            let Some(id) = kv.key_str().ok().and_then(|k| k.strip_prefix(&ids_prefix)).and_then(|n| n.parse().ok())
            else {
                continue;
            };
            let record: serde_json::Value = serde_json::from_slice(kv.value()).unwrap_or_default();
            let hashes = record["files"]
                .as_object()
                .map(|f| f.values().filter_map(|h| h.as_str().map(str::to_string)).collect())
                .unwrap_or_default();
            records.push((id, hashes));
        }
        records.sort_by_key(|(id, _)| std::cmp::Reverse(*id));
        let kept = usize::try_from(keep.max(1)).unwrap_or(usize::MAX);
        let mut doomed: Vec<String> = records.iter().skip(kept).map(|(id, _)| deploy_key(*id)).collect();
        let deploys_gone = doomed.len();
        let named: std::collections::BTreeSet<&String> = records.iter().take(kept).flat_map(|(_, h)| h).collect();
        let blobs_prefix = format!("{PREFIX}deploy/blob/");
        let resp =
            ask(client.get(blobs_prefix.as_str(), Some(GetOptions::new().with_prefix().with_keys_only()))).await?;
        let mut blobs_gone = 0;
        for kv in resp.kvs() {
            let Ok(key) = kv.key_str() else { continue };
            if key.strip_prefix(&blobs_prefix).is_some_and(|h| !named.contains(&h.to_string())) {
                doomed.push(key.to_string());
                blobs_gone += 1;
            }
        }
        for batch in doomed.chunks(EXPORT_BATCH) {
            let ops: Vec<TxnOp> = batch.iter().map(|k| TxnOp::delete(k.as_str(), None)).collect();
            let txn = Txn::new().when([unchanged()]).and_then(ops);
            let resp = ask(client.txn(txn)).await?;
            if !resp.succeeded() {
                // A deploy landed: it collects after itself.
                return Ok((0, 0));
            }
        }
        Ok((deploys_gone, blobs_gone))
    }

    async fn fetch_deploy(&self, id: u64) -> Result<Option<Deploy>, WorldError> {
        let mut client = self.inner.client_now()?;
        let resp = ask(client.get(deploy_key(id), None)).await?;
        let Some(kv) = resp.kvs().first() else { return Ok(None) };
        let bad = |why: &str| WorldError(format!("deploy {id} is damaged: {why}"));
        let record: serde_json::Value = serde_json::from_slice(kv.value()).map_err(|e| bad(&e.to_string()))?;
        let text =
            |field: &str| record[field].as_str().map(str::to_string).ok_or_else(|| bad(&format!("no `{field}`")));
        let mut files = BTreeMap::new();
        for (path, hash) in record["files"].as_object().ok_or_else(|| bad("no `files`"))? {
            let hash = hash.as_str().ok_or_else(|| bad("a file's hash is not a string"))?;
            let resp = ask(client.get(blob_key(hash), None)).await?;
            let bytes =
                resp.kvs().first().map(|kv| kv.value().to_vec()).ok_or_else(|| bad(&format!("`{path}` is missing")))?;
            if sha256_hex(&bytes) != hash {
                return Err(bad(&format!("`{path}` does not match its hash")));
            }
            files.insert(path.clone(), bytes);
        }
        Ok(Some(Deploy {
            id,
            parent: record["parent"].as_u64().unwrap_or(0),
            by: text("by")?,
            bundle: Bundle { entry: text("entry")?, files },
        }))
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 45, defect 7: only an agent's claim (its live lease's id, bound to that lease)
    /// holds a host name; garbage or a value not bound to its lease is taken over.
    #[test]
    fn a_claim_is_genuine_only_as_an_agent_writes_it() {
        assert!(genuine_claim("7ed6a223a7407608", 0x7ed6a223a7407608));
        assert!(!genuine_claim("7ed6a223a7407608", 0), "bound to no lease");
        assert!(!genuine_claim("7ed6a223a7407608", 0x1234), "bound to another lease");
        assert!(!genuine_claim("garbage", 0x1234));
        assert!(!genuine_claim("", 0));
    }

    /// Issue 45, defect 7: a message quotes at most a short prefix of a value.
    #[test]
    fn values_are_quoted_short() {
        assert_eq!(quote("short"), "short");
        let huge = "x".repeat(1_500_000);
        let quoted = quote(&huge);
        assert!(quoted.len() < 64, "{quoted}");
        assert!(quoted.ends_with("… (1500000 bytes)"), "{quoted}");
    }

    /// Issue 45, defect 7: an export bound to no session (written by hand) is not collected;
    /// other topics' entries are read as they are.
    #[test]
    fn exports_bound_to_no_session_are_ignored() {
        assert!(!admitted(&Topic::Exports, "/_tend/exported/%2a/file/ghost/x", 0));
        assert!(admitted(&Topic::Exports, "/_tend/exported/%2a/file/h1/x", 0x42));
        assert!(admitted(&Topic::Deploys, "/_tend/deploy/latest", 0));
    }
}
