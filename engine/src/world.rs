//! The world: what the hosts running one program share (mgmt's `World`). Functions read it
//! (`world.getval`, `world.kvlookup`) and resources write it (`kv`) through this one trait;
//! the binary picks the backend: the local store under the state directory (one host), or
//! an etcd cluster (`--seeds`). Values are strings; what they mean is the caller's.
//!
//! Reading is following: [`World::follow`] gives a watch channel holding the topic's
//! current [`View`], replaced on every change. A view says whether it is known to be
//! current: while the backend cannot reach its store, followers keep the last view,
//! marked stale, and get a fresh one once the store is back.
//!
//! Writing never fails because the store is away: a write the backend cannot make now is
//! [`Written::Queued`] and made when the store is back (the backend re-asserts what this
//! host owns, and its followers see a fresh view, so resources check again).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use tokio::sync::watch;

/// What a reader follows.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Topic {
    /// One plain key (`world.getval`): the view holds it under its own name, or nothing.
    Val(String),
    /// A mapped namespace (`world.kvlookup`): host name -> that host's value.
    Map(String),
    /// The live candidates of a schedule namespace: host name -> its [`Candidacy`], rendered.
    Candidates(String),
    /// The hosts a schedule namespace chose (`world.schedule`): host name -> "".
    Schedule(String),
    /// Every resource exported to this host or to every host, by any host (this one
    /// included): [`export_entry`]`(kind, from, name)` -> its record.
    Exports,
    /// The latest deploy: `"latest"` -> its id (nothing before the first deploy).
    Deploys,
    /// What each live agent says of itself: host name -> its status record.
    Statuses,
}

impl std::fmt::Display for Topic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Topic::Val(k) => write!(f, "key `{k}`"),
            Topic::Map(ns) => write!(f, "namespace `{ns}`"),
            Topic::Candidates(ns) => write!(f, "the candidates of schedule `{ns}`"),
            Topic::Schedule(ns) => write!(f, "schedule `{ns}`"),
            Topic::Exports => write!(f, "the exported resources"),
            Topic::Deploys => write!(f, "the latest deploy"),
            Topic::Statuses => write!(f, "the agents' statuses"),
        }
    }
}

/// A topic as last seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    pub entries: BTreeMap<String, String>,
    /// The store's revision the entries were read at (0 for the local store).
    pub revision: i64,
    /// Set while the store cannot be reached: the entries are the last ones seen.
    pub stale: bool,
    /// False until the store was read once: the entries are not known yet (a writer that
    /// compares with the stored value waits for a view that was read).
    pub read: bool,
    /// When the entries were last known to be current.
    pub confirmed: SystemTime,
}

impl View {
    /// A fresh view of `entries` at `revision`.
    pub fn fresh(entries: BTreeMap<String, String>, revision: i64) -> View {
        View { entries, revision, stale: false, read: true, confirmed: SystemTime::now() }
    }

    /// Nothing known yet: the view before the store was ever read.
    pub fn unknown() -> View {
        View { entries: BTreeMap::new(), revision: 0, stale: true, read: false, confirmed: SystemTime::UNIX_EPOCH }
    }

    /// The same entries, marked stale (`confirmed` keeps when they were last current).
    pub fn to_stale(&self) -> View {
        View { stale: true, ..self.clone() }
    }
}

/// A followed topic: the current view, replaced on every change.
pub type Follow = watch::Receiver<Arc<View>>;

/// A host's candidacy for a schedule namespace (the `schedule` resource's terms).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidacy {
    /// `rr` (sticky round robin) or `alpha` (by name).
    pub strategy: String,
    /// How many hosts the namespace chooses.
    pub max: i64,
    /// Kept after the host is gone.
    pub persist: bool,
    /// Seconds the candidacy outlives the resource that made it (0: it ends with it).
    pub ttl: u64,
    /// The resource instance that volunteered: a replaced instance's withdrawal leaves
    /// its successor's candidacy alone.
    pub owner: String,
}

impl Candidacy {
    /// `key=value` lines.
    pub fn render(&self) -> String {
        format!(
            "strategy={}\nmax={}\npersist={}\nttl={}\nowner={}\n",
            self.strategy, self.max, self.persist, self.ttl, self.owner
        )
    }

    /// The inverse of [`Candidacy::render`]; other lines are ignored.
    pub fn parse(text: &str) -> Option<Candidacy> {
        let field = |key: &str| text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix('='));
        Some(Candidacy {
            strategy: field("strategy")?.to_string(),
            max: field("max")?.parse().ok()?,
            persist: field("persist")?.parse().ok()?,
            ttl: field("ttl")?.parse().ok()?,
            owner: field("owner")?.to_string(),
        })
    }
}

/// The hosts a namespace chooses from its `candidates` (host -> terms), given the hosts it
/// chose `before`. The terms of the first candidate by name decide (so every leader
/// decides the same); `alpha` takes the first `max` by name; `rr` keeps the hosts it chose
/// before that are still candidates, then adds the others by name, up to `max`. The result
/// is sorted.
pub fn choose(candidates: &BTreeMap<String, Candidacy>, before: &[String]) -> Vec<String> {
    let Some(terms) = candidates.values().next() else { return Vec::new() };
    let max = usize::try_from(terms.max.max(1)).unwrap_or(usize::MAX);
    let mut chosen: Vec<String> = if terms.strategy == "alpha" {
        Vec::new()
    } else {
        before.iter().filter(|h| candidates.contains_key(*h)).take(max).cloned().collect()
    };
    for host in candidates.keys() {
        if chosen.len() >= max {
            break;
        }
        if !chosen.contains(host) {
            chosen.push(host.clone());
        }
    }
    chosen.sort();
    chosen
}

/// One resource this host exports (`Meta:export`, `@@kind`): to the hosts `to` (`*`: every
/// host), as the record the language encoded (opaque here).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Export {
    pub kind: String,
    pub name: String,
    pub to: Vec<String>,
    pub record: String,
}

/// The name of an export in a [`Topic::Exports`] view: `kind/from/name`, each escaped.
pub fn export_entry(kind: &str, from: &str, name: &str) -> String {
    format!("{}/{}/{}", escape(kind), escape(from), escape(name))
}

/// The inverse of [`export_entry`]: (kind, from, name).
pub fn parse_export_entry(entry: &str) -> Option<(String, String, String)> {
    let mut parts = entry.splitn(3, '/');
    let (kind, from, name) = (parts.next()?, parts.next()?, parts.next()?);
    Some((unescape(kind), unescape(from), unescape(name)))
}

/// Whether an export to `to` reaches host `me`.
pub fn reaches(to: &[String], me: &str) -> bool {
    to.iter().any(|t| t == "*" || t == me)
}

/// A program to deploy: its files by deploy path (`/main.mcl`) and its entry file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bundle {
    pub entry: String,
    pub files: BTreeMap<String, Vec<u8>>,
}

/// How a deploy is placed after the ones before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parent {
    /// After whatever is latest when it lands (concurrent deploys both land, in turn).
    Latest,
    /// Only right after deploy `n` (0: the first): refused when another landed meanwhile.
    Exactly(u64),
}

/// A deploy as stored: its id, the id it followed, who made it, and its program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deploy {
    pub id: u64,
    pub parent: u64,
    /// The host name of the agent or command that deployed it.
    pub by: String,
    pub bundle: Bundle,
}

/// How a write went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// The store holds it.
    Done,
    /// The store cannot be reached; the backend writes it once it can.
    Queued,
}

/// A write the store refused (not an outage: that queues).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorldError(pub String);

impl std::fmt::Display for WorldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The backend's link to its store, for logs and metrics.
#[derive(Clone, Debug, PartialEq)]
pub struct Health {
    pub backend: &'static str,
    pub connected: bool,
    /// Keys this host owns (bound to its session) and re-asserts after an outage.
    pub owned: usize,
    /// Round trip of the last request, when there was one.
    pub latency_ms: Option<f64>,
    /// Watch events received so far.
    pub events: u64,
    /// Since when the views are stale (`None` while connected).
    pub stale_since: Option<SystemTime>,
}

/// What functions and resources share across hosts.
#[async_trait]
pub trait World: Send + Sync {
    /// This host's name in the world (map entries, ownership).
    fn hostname(&self) -> &str;

    /// Follows `topic`. Must be called inside the tokio runtime; the backend stops
    /// following once every receiver is dropped.
    fn follow(&self, topic: &Topic) -> Follow;

    /// The stored value of plain key `key`, read now; `None` when unset. While the store is
    /// away, the last value seen (or `None` if it was never read).
    async fn get(&self, key: &str) -> Option<String>;

    /// Sets (or with `None` deletes) plain key `key`, shared by every host: no host owns it.
    async fn set(&self, key: &str, value: Option<&str>) -> Result<Written, WorldError>;

    /// Sets (or deletes) this host's entry of namespace `ns`, owned by this host: it goes
    /// when the host's session ends.
    async fn set_mine(&self, ns: &str, value: Option<&str>) -> Result<Written, WorldError>;

    /// Volunteers this host for schedule namespace `ns` on `terms` (again: a running
    /// candidacy calls this to renew it).
    async fn volunteer(&self, ns: &str, terms: &Candidacy) -> Result<Written, WorldError>;

    /// Ends this host's candidacy for `ns` (only if `owner` made it, when given): at once,
    /// or with `linger` seconds, after that long.
    async fn withdraw(&self, ns: &str, owner: Option<&str>, linger: u64) -> Result<Written, WorldError>;

    /// Replaces everything this host exports by `exports`: what it exported before and
    /// no longer does is removed. Owned by this host: it goes when the host's session ends.
    async fn export(&self, exports: &[Export]) -> Result<Written, WorldError>;

    /// Stores `bundle` as the next deploy after `parent` and returns its id. Only a
    /// cluster keeps deploys.
    async fn deploy(&self, bundle: &Bundle, parent: Parent) -> Result<u64, WorldError> {
        let _ = (bundle, parent);
        Err(WorldError("deploys are kept by a cluster: give --seeds".into()))
    }

    /// Publishes this host's status record (`None`: none), owned by this host like its map
    /// entries. Only a cluster shows it to others.
    async fn publish_status(&self, record: Option<&str>) -> Result<Written, WorldError> {
        let _ = record;
        Ok(Written::Done)
    }

    /// Removes every deploy but the `keep` latest, and the files no kept deploy names;
    /// returns how many deploys and files went.
    async fn collect_deploys(&self, keep: u64) -> Result<(usize, usize), WorldError> {
        let _ = keep;
        Ok((0, 0))
    }

    /// Deploy `id`, `None` when there is no such deploy.
    async fn fetch_deploy(&self, id: u64) -> Result<Option<Deploy>, WorldError> {
        let _ = id;
        Err(WorldError("deploys are kept by a cluster: give --seeds".into()))
    }

    /// The link to the store.
    fn health(&self) -> Health;
}

/// A key as one path segment: bytes outside `[A-Za-z0-9._-]` become `%xx`. The local store
/// names files this way, the etcd backend its key segments.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02x}"));
        }
    }
    out
}

/// The inverse of [`escape`] (invalid escapes are kept as they are).
pub fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Some(v) = s.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A world with nothing in it and no store: every view is empty and fresh, every write is
/// refused. What a context gets before the binary gives it a real backend.
pub struct Detached {
    hostname: String,
    empty: watch::Sender<Arc<View>>,
}

impl Detached {
    pub fn new(hostname: impl Into<String>) -> Detached {
        Detached { hostname: hostname.into(), empty: watch::Sender::new(Arc::new(View::fresh(BTreeMap::new(), 0))) }
    }
}

#[async_trait]
impl World for Detached {
    fn hostname(&self) -> &str {
        &self.hostname
    }

    fn follow(&self, _topic: &Topic) -> Follow {
        self.empty.subscribe()
    }

    async fn get(&self, _key: &str) -> Option<String> {
        None
    }

    async fn set(&self, key: &str, _value: Option<&str>) -> Result<Written, WorldError> {
        Err(WorldError(format!("no world store to write key `{key}` to")))
    }

    async fn set_mine(&self, ns: &str, _value: Option<&str>) -> Result<Written, WorldError> {
        Err(WorldError(format!("no world store to write namespace `{ns}` to")))
    }

    async fn volunteer(&self, ns: &str, _terms: &Candidacy) -> Result<Written, WorldError> {
        Err(WorldError(format!("no world store to volunteer for schedule `{ns}` in")))
    }

    async fn withdraw(&self, _ns: &str, _owner: Option<&str>, _linger: u64) -> Result<Written, WorldError> {
        Ok(Written::Done)
    }

    async fn export(&self, exports: &[Export]) -> Result<Written, WorldError> {
        match exports.first() {
            None => Ok(Written::Done),
            Some(e) => Err(WorldError(format!("no world store to export {}[{}] to", e.kind, e.name))),
        }
    }

    fn health(&self) -> Health {
        Health { backend: "none", connected: false, owned: 0, latency_ms: None, events: 0, stale_since: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(strategy: &str, max: i64) -> Candidacy {
        Candidacy { strategy: strategy.into(), max, persist: false, ttl: 0, owner: "o".into() }
    }

    fn hosts(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn round_robin_is_sticky_and_alpha_is_by_name() {
        let cands = |names: &[&str], strategy: &str| -> BTreeMap<String, Candidacy> {
            names.iter().map(|h| (h.to_string(), terms(strategy, 2))).collect()
        };
        assert_eq!(choose(&cands(&["h3", "h1", "h2"], "rr"), &[]), hosts(&["h1", "h2"]));
        // h1 went away: h3 takes its place; when h1 is back it waits.
        assert_eq!(choose(&cands(&["h2", "h3"], "rr"), &hosts(&["h1", "h2"])), hosts(&["h2", "h3"]));
        assert_eq!(choose(&cands(&["h1", "h2", "h3"], "rr"), &hosts(&["h2", "h3"])), hosts(&["h2", "h3"]));
        assert_eq!(choose(&cands(&["h1", "h2", "h3"], "alpha"), &hosts(&["h2", "h3"])), hosts(&["h1", "h2"]));
        assert_eq!(choose(&BTreeMap::new(), &hosts(&["h1"])), Vec::<String>::new());
        let c = terms("rr", 3);
        assert_eq!(Candidacy::parse(&c.render()), Some(c.clone()));
        assert_eq!(Candidacy::parse(&format!("{}expires=5\n", c.render())), Some(c));
        assert_eq!(Candidacy::parse("max=x"), None);
    }

    #[test]
    fn escaping_round_trips_and_leaves_no_slash() {
        for s in ["plain", "a/b", "h 2", "%41", "ünï", ""] {
            assert!(!escape(s).contains('/'));
            assert_eq!(unescape(&escape(s)), s);
        }
        assert_eq!(escape("a/b"), "a%2fb");
    }

    #[test]
    fn export_entries_round_trip_with_slashes_in_names() {
        let entry = export_entry("file", "h1", "/etc/motd");
        assert_eq!(entry, "file/h1/%2fetc%2fmotd");
        assert_eq!(parse_export_entry(&entry), Some(("file".into(), "h1".into(), "/etc/motd".into())));
        assert_eq!(parse_export_entry("file/h1"), None);
        assert!(reaches(&hosts(&["*"]), "h2"));
        assert!(reaches(&hosts(&["h1", "h2"]), "h2"));
        assert!(!reaches(&hosts(&["h1"]), "h2"));
    }
}
