//! The world as the commands use it: joining etcd (`--seeds`) or the local store, a world
//! that remembers what the program followed (for `tend why`'s report of each world value's
//! revision, age and staleness), and other hosts' exports decoded for interpretation.

use async_trait::async_trait;
use engine::world::{
    Bundle, Candidacy, Deploy, Export, Follow, Health, Parent, Topic, View, World, WorldError, Written,
    parse_export_entry,
};
use lang::interpret::Remote;
use lang::span::Span;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// The world of a command that only evaluates (`tend graph`, `tend why`): the local store,
/// or with `seeds` the etcd cluster as an observer (no claim of the host name, no writes).
/// Must be called inside the runtime.
pub async fn observe(seeds: &[String], state_dir: &Path, hostname: &str) -> Result<Arc<dyn World>, String> {
    if seeds.is_empty() {
        return Ok(Arc::new(resources::world::LocalWorld::new(state_dir, hostname)));
    }
    let cfg = resources::world::etcd::EtcdConfig {
        seeds: seeds.to_vec(),
        hostname: hostname.to_string(),
        ttl: resources::world::etcd::DEFAULT_TTL,
        state_dir: state_dir.to_path_buf(),
        observer: true,
    };
    let world = resources::world::etcd::EtcdWorld::connect(cfg).await.map_err(|e| e.to_string())?;
    Ok(Arc::new(world))
}

/// A world that keeps every topic followed through it, to report their views afterwards.
pub struct Recorded {
    inner: Arc<dyn World>,
    followed: Mutex<Vec<(Topic, Follow)>>,
}

/// One topic a program read, as last seen.
#[derive(Clone, Debug)]
pub struct Seen {
    pub topic: Topic,
    pub view: Arc<View>,
}

impl Recorded {
    pub fn new(inner: Arc<dyn World>) -> Recorded {
        Recorded { inner, followed: Mutex::new(Vec::new()) }
    }

    /// Every topic followed so far (once each, in the order first followed), as seen now.
    pub fn seen(&self) -> Vec<Seen> {
        let followed = self.followed.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<Seen> = Vec::new();
        for (topic, follow) in followed.iter() {
            if !out.iter().any(|s| s.topic == *topic) {
                out.push(Seen { topic: topic.clone(), view: follow.borrow().clone() });
            }
        }
        out
    }
}

#[async_trait]
impl World for Recorded {
    fn hostname(&self) -> &str {
        self.inner.hostname()
    }

    fn follow(&self, topic: &Topic) -> Follow {
        let follow = self.inner.follow(topic);
        self.followed.lock().unwrap_or_else(|e| e.into_inner()).push((topic.clone(), follow.clone()));
        follow
    }

    async fn get(&self, key: &str) -> Option<String> {
        self.inner.get(key).await
    }

    async fn set(&self, key: &str, value: Option<&str>) -> Result<Written, WorldError> {
        self.inner.set(key, value).await
    }

    async fn set_mine(&self, ns: &str, value: Option<&str>) -> Result<Written, WorldError> {
        self.inner.set_mine(ns, value).await
    }

    async fn volunteer(&self, ns: &str, terms: &Candidacy) -> Result<Written, WorldError> {
        self.inner.volunteer(ns, terms).await
    }

    async fn withdraw(&self, ns: &str, owner: Option<&str>, linger: u64) -> Result<Written, WorldError> {
        self.inner.withdraw(ns, owner, linger).await
    }

    async fn export(&self, exports: &[Export]) -> Result<Written, WorldError> {
        self.inner.export(exports).await
    }

    async fn deploy(&self, bundle: &Bundle, parent: Parent) -> Result<u64, WorldError> {
        self.inner.deploy(bundle, parent).await
    }

    async fn fetch_deploy(&self, id: u64) -> Result<Option<Deploy>, WorldError> {
        self.inner.fetch_deploy(id).await
    }

    async fn collect_deploys(&self, keep: u64) -> Result<(usize, usize), WorldError> {
        self.inner.collect_deploys(keep).await
    }

    async fn publish_status(&self, record: Option<&str>) -> Result<Written, WorldError> {
        self.inner.publish_status(record).await
    }

    fn health(&self) -> Health {
        self.inner.health()
    }
}

/// What other hosts export to host `me`, decoded from a [`Topic::Exports`] view. Records
/// that cannot be decoded are returned apart, as `(entry, why)`.
pub fn remote_of(view: &View, me: &str) -> (Remote, Vec<(String, String)>) {
    let mut exports = Vec::with_capacity(view.entries.len());
    let mut unreadable = Vec::new();
    for (entry, record) in &view.entries {
        let Some((kind, from, name)) = parse_export_entry(entry) else { continue };
        if from == me {
            continue;
        }
        match lang::exported::decode(&kind, &name, &from, record, Span::default()) {
            Ok(decl) => exports.push(decl),
            Err(e) => unreadable.push((format!("{kind}[{name}] from {from}"), e)),
        }
    }
    (Remote { me: me.to_string(), exports }, unreadable)
}

/// How a view reads in a report: `current (revision 42, seen 1.2 s ago)`, or stale, or
/// never read.
pub fn describe(view: &View) -> String {
    let ago = |t: SystemTime| t.elapsed().map(|d| d.as_secs_f64()).unwrap_or(0.0);
    if !view.read {
        return "never read: the store was not reached".into();
    }
    let revision = if view.revision > 0 { format!("revision {}, ", view.revision) } else { String::new() };
    if view.stale {
        format!("STALE ({revision}last known current {:.1} s ago; the store is unreachable)", ago(view.confirmed))
    } else {
        format!("current ({revision}seen {:.1} s ago)", ago(view.confirmed))
    }
}
