//! The one way a command gets its world ([`connect`]): the local store when no seeds are
//! given, else the etcd cluster they name, as an agent or as an observer.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::watch::PathWatcher;
use crate::{LocalWorld, Tls, World, WorldError};

/// A session's lease unless `--world-ttl` says otherwise (seconds).
pub const DEFAULT_TTL: i64 = 15;

/// What a command knows of its world.
#[derive(Clone)]
pub struct Config {
    /// Client URLs of the cluster's members (`http://127.0.0.1:2379`); none: the local store.
    pub seeds: Vec<String>,
    /// This host's name in the world.
    pub hostname: String,
    /// The state directory: the local store, and where an agent remembers its session.
    pub state_dir: PathBuf,
    /// Seconds a session's lease outlives the agent.
    pub ttl: i64,
    /// Only reads (`tend why --seeds`, `tend graph --seeds`, `tend status`, `tend
    /// deploy`): no lease, no claim of the host name, nothing owned.
    pub observer: bool,
    /// What tells the local store of changes (the process's inotify hub); it polls without.
    pub watcher: Option<Arc<dyn PathWatcher>>,
    /// TLS to etcd (`https://` seeds): the CA, and this client's certificate if etcd asks.
    pub tls: Option<Tls>,
    /// Client URLs learnt since the start (the members of a cluster tend forms itself),
    /// tried with the seeds whenever the session connects again: an agent outlives the
    /// seed it started from.
    pub endpoints: Endpoints,
}

/// A list of client URLs one part of the agent keeps current and another dials.
#[derive(Clone, Debug, Default)]
pub struct Endpoints(Arc<Mutex<Vec<String>>>);

impl Endpoints {
    pub fn set(&self, urls: Vec<String>) {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = urls;
    }

    pub fn get(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

impl Config {
    /// The local store under `state_dir`, or the cluster at `seeds`, as `hostname`, an agent.
    pub fn new(seeds: Vec<String>, hostname: impl Into<String>, state_dir: impl Into<PathBuf>) -> Config {
        Config {
            seeds,
            hostname: hostname.into(),
            state_dir: state_dir.into(),
            ttl: DEFAULT_TTL,
            observer: false,
            watcher: None,
            tls: None,
            endpoints: Endpoints::default(),
        }
    }

    /// The seeds, then the endpoints learnt since, each once.
    pub fn dial_urls(&self) -> Vec<String> {
        let mut urls = self.seeds.clone();
        for url in self.endpoints.get() {
            if !urls.contains(&url) {
                urls.push(url);
            }
        }
        urls
    }

    /// The same, only reading.
    pub fn observing(self) -> Config {
        Config { observer: true, ..self }
    }
}

/// Whether `name` can be a host name in a cluster (mgmt's rule: `[A-Za-z0-9._-]`).
pub fn valid_hostname(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// The world `cfg` names. Joining a cluster waits a few seconds for the first session: a
/// host name another agent holds is an error; a cluster that does not answer is not (the
/// agent starts with stale views and keeps trying). Must be called inside the runtime.
pub async fn connect(cfg: Config) -> Result<Arc<dyn World>, WorldError> {
    crate::tls::check_seeds(&cfg.seeds, cfg.tls.as_ref())?;
    if cfg.seeds.is_empty() {
        let local = LocalWorld::new(cfg.state_dir, cfg.hostname);
        return Ok(Arc::new(match cfg.watcher {
            Some(w) => local.watched_by(w),
            None => local,
        }));
    }
    cluster(cfg).await
}

#[cfg(feature = "etcd")]
async fn cluster(cfg: Config) -> Result<Arc<dyn World>, WorldError> {
    Ok(Arc::new(crate::etcd::EtcdWorld::connect(cfg).await?))
}

#[cfg(not(feature = "etcd"))]
async fn cluster(_cfg: Config) -> Result<Arc<dyn World>, WorldError> {
    Err(WorldError::Config("this build of tend has no etcd backend: --seeds cannot be used".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_are_what_a_key_segment_holds() {
        assert!(valid_hostname("web-1.example_2"));
        assert!(!valid_hostname(""));
        assert!(!valid_hostname("a/b"));
        assert!(!valid_hostname("h 1"));
    }

    #[tokio::test]
    async fn no_seeds_is_the_local_store() {
        let dir = tempfile::tempdir().unwrap();
        let world = connect(Config::new(vec![], "h1", dir.path())).await.unwrap();
        assert_eq!(world.health().backend, "local");
        assert_eq!(world.hostname(), "h1");
        world.set("k", Some("v")).await.unwrap();
        assert_eq!(world.get("k").await.as_deref(), Some("v"));
    }
}
