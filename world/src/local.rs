//! The world of one host: files under the state directory. A plain key is
//! `<state>/kv/<key>/value`, a host's entry of a mapped namespace `<state>/kv/<ns>/<host>`
//! (names escaped by [`crate::escape`]); `json:edit`'s `etcd://` store and
//! `http:server:ui:input`'s `world://` store are the same files. A schedule candidacy is
//! `<state>/schedule/<ns>/<host>`: the candidacy's `key=value` lines plus, unless it
//! persists, `expires=<unix seconds>`, which its resource renews while it runs; readers
//! ignore expired records, and a namespace chooses among the live ones by its strategy
//! (this host being the only writer here, that is this host or no one). Exports live in
//! memory, for this agent's own `collect.res` (no other host can collect them). Followers watch the
//! directory through the [`PathWatcher`](crate::watch::PathWatcher) the binary gives (the process's inotify hub), with a
//! slow re-read for what a watch cannot see, or a fast poll without one.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::watch;

use crate::watch::{PathWatcher, Watched};
use crate::{
    Candidacy, Export, Follow, Health, Topic, View, World, WorldError, Written, escape, export_entry, reaches, unescape,
};

/// The re-read while watched.
const SAFETY: Duration = Duration::from_secs(5);
/// The poll when nothing watches.
const POLL: Duration = Duration::from_millis(250);

/// The store under `root` (the state directory), seen as host `hostname`.
pub struct LocalWorld {
    root: PathBuf,
    hostname: String,
    /// One view per followed topic, shared by its followers; a write through this world
    /// updates it at once (a writer reads its own writes).
    followed: Arc<Mutex<Followed>>,
    /// What this host exports to itself (or to every host), as a [`Topic::Exports`] view.
    exports: watch::Sender<Arc<View>>,
    watcher: Option<Arc<dyn PathWatcher>>,
}

type Followed = HashMap<Topic, watch::Sender<Arc<View>>>;

impl LocalWorld {
    pub fn new(root: impl Into<PathBuf>, hostname: impl Into<String>) -> LocalWorld {
        LocalWorld {
            root: root.into(),
            hostname: hostname.into(),
            followed: Arc::default(),
            exports: watch::Sender::new(Arc::new(View::fresh(BTreeMap::new(), 0))),
            watcher: None,
        }
    }

    /// The same store, its followers told of changes by `watcher`.
    pub fn watched_by(self, watcher: Arc<dyn PathWatcher>) -> LocalWorld {
        LocalWorld { watcher: Some(watcher), ..self }
    }

    fn dir(&self, name: &str) -> PathBuf {
        key_dir(&self.root, name)
    }

    /// Re-reads `topic` for its followers, if it has any.
    fn refresh(&self, topic: &Topic) {
        let tx = self.followed.lock().unwrap_or_else(|e| e.into_inner()).get(topic).cloned();
        if let Some(tx) = tx {
            reread(&tx, &self.root, topic);
        }
    }
}

impl LocalWorld {
    fn refresh_schedule(&self, ns: &str) {
        self.refresh(&Topic::Candidates(ns.to_string()));
        self.refresh(&Topic::Schedule(ns.to_string()));
    }
}

/// Replaces the view when its entries differ.
fn publish(tx: &watch::Sender<Arc<View>>, entries: BTreeMap<String, String>) {
    tx.send_if_modified(|view| replace(view, entries));
}

/// Puts `entries` in `view` if they differ from its own; whether they did.
fn replace(view: &mut Arc<View>, entries: BTreeMap<String, String>) -> bool {
    let changed = view.entries != entries;
    if changed {
        *view = Arc::new(View::fresh(entries, 0));
    }
    changed
}

/// Re-reads `topic` from the files into its view. The read happens while the view is
/// held, so two re-reads never cross: one that read before a write cannot publish after
/// the writer's own re-read and hide the write.
fn reread(tx: &watch::Sender<Arc<View>>, root: &Path, topic: &Topic) {
    tx.send_if_modified(|view| replace(view, read(root, topic)));
}

/// The directory of key or namespace `name` in the store under `root`.
fn key_dir(root: &Path, name: &str) -> PathBuf {
    root.join("kv").join(escape(name))
}

/// The file of plain key `key` in the store under `root`.
pub fn key_path(root: &Path, key: &str) -> PathBuf {
    key_dir(root, key).join("value")
}

/// Seconds a running candidacy stays valid without renewal when its `ttl` is not set.
pub const DEFAULT_LEASE: u64 = 10;

/// The directory of schedule namespace `ns` under `root`.
fn schedule_dir(root: &Path, ns: &str) -> PathBuf {
    root.join("schedule").join(escape(ns))
}

/// Unix seconds now.
pub fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// The live candidacies of `ns` under `root`: host -> terms.
fn candidates(root: &Path, ns: &str) -> BTreeMap<String, Candidacy> {
    let now = now();
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(schedule_dir(root, ns)).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(e.path()) else { continue };
        let expires = text.lines().find_map(|l| l.strip_prefix("expires=")?.trim().parse::<u64>().ok());
        if expires.is_some_and(|at| at <= now) {
            continue;
        }
        let terms = Candidacy::parse(&text).unwrap_or(Candidacy {
            strategy: "rr".into(),
            max: 1,
            persist: false,
            ttl: 0,
            owner: String::new(),
        });
        out.insert(unescape(&name), terms);
    }
    out
}

/// The hosts `ns` chooses under `root`: the live candidates in name order, at most the
/// smallest `max` any of them asks for.
pub fn read_schedule(root: &Path, ns: &str) -> Vec<String> {
    let cands = candidates(root, ns);
    let max = cands.values().map(|c| c.max.max(1)).min().unwrap_or(1);
    cands.into_keys().take(usize::try_from(max).unwrap_or(usize::MAX)).collect()
}

/// What `topic` holds in the store under `root` now.
pub fn read(root: &Path, topic: &Topic) -> BTreeMap<String, String> {
    let mut entries = BTreeMap::new();
    match topic {
        Topic::Candidates(ns) => {
            entries.extend(candidates(root, ns).into_iter().map(|(h, c)| (h, c.render())));
        }
        Topic::Schedule(ns) => entries.extend(read_schedule(root, ns).into_iter().map(|h| (h, String::new()))),
        // In memory (`LocalWorld::exports`), never read from the files; no deploys here.
        Topic::Exports | Topic::Deploys | Topic::Statuses => {}
        Topic::Val(key) => {
            if let Ok(v) = std::fs::read_to_string(key_path(root, key)) {
                entries.insert(key.clone(), v);
            }
        }
        Topic::Map(ns) => {
            for e in std::fs::read_dir(key_dir(root, ns)).into_iter().flatten().flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name == "value" || name.starts_with('.') {
                    continue;
                }
                if let Ok(v) = std::fs::read_to_string(e.path()) {
                    entries.insert(unescape(&name), v);
                }
            }
        }
    }
    entries
}

fn write(path: &Path, value: Option<&str>) -> Result<Written, WorldError> {
    let fail = |e: std::io::Error| WorldError::Io { path: path.to_path_buf(), reason: e.to_string() };
    match value {
        Some(v) => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(fail)?;
            }
            crate::atomic::replace_file(path, v.as_bytes()).map_err(fail)?;
        }
        None => match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(fail(e)),
            _ => {}
        },
    }
    Ok(Written::Done)
}

#[async_trait]
impl World for LocalWorld {
    fn hostname(&self) -> &str {
        &self.hostname
    }

    fn follow(&self, topic: &Topic) -> Follow {
        if *topic == Topic::Exports {
            return self.exports.subscribe();
        }
        let mut followed = self.followed.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = followed.get(topic) {
            return tx.subscribe();
        }
        let dir = match topic {
            Topic::Val(k) | Topic::Map(k) => key_dir(&self.root, k),
            Topic::Candidates(ns) | Topic::Schedule(ns) => schedule_dir(&self.root, ns),
            // Followed in memory (above), or never anything (deploys need a cluster).
            Topic::Exports | Topic::Deploys | Topic::Statuses => {
                return watch::channel(Arc::new(View::fresh(BTreeMap::new(), 0))).1;
            }
        };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return watch::channel(Arc::new(View::fresh(read(&self.root, topic), 0))).1;
        };
        // Watched before the first read, so no change falls between the two.
        let mut watch = self.watcher.as_ref().and_then(|w| w.watch(&dir, Watched::Entries));
        let (tx, rx) = watch::channel(Arc::new(View::fresh(read(&self.root, topic), 0)));
        followed.insert(topic.clone(), tx.clone());
        let (root, topic, all) = (self.root.clone(), topic.clone(), self.followed.clone());
        rt.spawn(async move {
            loop {
                let wait = if watch.is_some() { SAFETY } else { POLL };
                tokio::select! {
                    _ = tx.closed() => {
                        // Gone unless someone followed again meanwhile.
                        let mut all = all.lock().unwrap_or_else(|e| e.into_inner());
                        if tx.receiver_count() == 0 {
                            all.remove(&topic);
                            return;
                        }
                        continue;
                    }
                    changed = async { watch.as_mut()?.changed().await.then_some(()) }, if watch.is_some() => {
                        if changed.is_none() {
                            watch = None;
                        }
                    }
                    _ = tokio::time::sleep(wait) => {}
                }
                let (root, topic, tx) = (root.clone(), topic.clone(), tx.clone());
                if tokio::task::spawn_blocking(move || reread(&tx, &root, &topic)).await.is_err() {
                    return;
                }
            }
        });
        rx
    }

    async fn get(&self, key: &str) -> Option<String> {
        std::fs::read_to_string(key_path(&self.root, key)).ok()
    }

    async fn set(&self, key: &str, value: Option<&str>) -> Result<Written, WorldError> {
        let written = write(&key_path(&self.root, key), value)?;
        self.refresh(&Topic::Val(key.to_string()));
        Ok(written)
    }

    async fn set_mine(&self, ns: &str, value: Option<&str>) -> Result<Written, WorldError> {
        let written = write(&self.dir(ns).join(escape(&self.hostname)), value)?;
        self.refresh(&Topic::Map(ns.to_string()));
        Ok(written)
    }

    async fn volunteer(&self, ns: &str, terms: &Candidacy) -> Result<Written, WorldError> {
        let lease = if terms.ttl > 0 { terms.ttl } else { DEFAULT_LEASE };
        let mut record = terms.render();
        if !terms.persist {
            record.push_str(&format!("expires={}\n", now() + lease));
        }
        let written = write(&schedule_dir(&self.root, ns).join(escape(&self.hostname)), Some(&record))?;
        self.refresh_schedule(ns);
        Ok(written)
    }

    async fn withdraw(&self, ns: &str, owner: Option<&str>, linger: u64) -> Result<Written, WorldError> {
        let path = schedule_dir(&self.root, ns).join(escape(&self.hostname));
        let Ok(text) = std::fs::read_to_string(&path) else { return Ok(Written::Done) };
        let terms = Candidacy::parse(&text);
        if owner.is_some() && terms.as_ref().map(|t| t.owner.as_str()) != owner {
            return Ok(Written::Done);
        }
        let written = match terms {
            Some(terms) if linger > 0 => {
                write(&path, Some(&format!("{}expires={}\n", terms.render(), now() + linger)))?
            }
            _ => write(&path, None)?,
        };
        self.refresh_schedule(ns);
        Ok(written)
    }

    async fn export(&self, exports: &[Export]) -> Result<Written, WorldError> {
        let entries: BTreeMap<String, String> = exports
            .iter()
            .filter(|e| reaches(&e.to, &self.hostname))
            .map(|e| (export_entry(&e.kind, &self.hostname, &e.name), e.record.clone()))
            .collect();
        publish(&self.exports, entries);
        Ok(Written::Done)
    }

    fn health(&self) -> Health {
        Health { backend: "local", connected: true, owned: 0, latency_ms: None, events: 0, stale_since: None }
    }
}
