//! The contract every backend keeps ([`World`]): what functions and resources share across
//! hosts, how a write went ([`Written`]) and how the link to the store is ([`Health`]).

use std::time::SystemTime;

use async_trait::async_trait;

use crate::signing::Signer;
use crate::{Bundle, Candidacy, Deploy, Export, Follow, Parent, Topic, WorldError};

/// How a write went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// The store holds it.
    Done,
    /// The store cannot be reached; the backend writes it once it can.
    Queued,
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
    /// `signer` signs the record once its id is known.
    async fn deploy(&self, bundle: &Bundle, parent: Parent, signer: Option<&Signer>) -> Result<u64, WorldError> {
        let _ = (bundle, parent, signer);
        Err(WorldError::NeedsCluster)
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
        Err(WorldError::NeedsCluster)
    }

    /// The client URLs of the cluster this host is on (none: a store kept locally), for
    /// an agent this one starts elsewhere (`remote`) to join.
    fn client_urls(&self) -> Vec<String> {
        Vec::new()
    }

    /// The link to the store.
    fn health(&self) -> Health;

    /// Leaves the store: what this host owns goes at once (a cluster revokes its session)
    /// and every task of the backend stops. Nothing to do for a store kept locally.
    async fn close(&self) {}
}
