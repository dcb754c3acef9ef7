//! A world with nothing in it and no store ([`Detached`]): what a context holds before the
//! binary gives it a real backend.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::watch;

use crate::{Candidacy, Export, Follow, Health, Topic, View, World, WorldError, Written};

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
        Err(WorldError::NoStore(format!("write key `{key}` to")))
    }

    async fn set_mine(&self, ns: &str, _value: Option<&str>) -> Result<Written, WorldError> {
        Err(WorldError::NoStore(format!("write namespace `{ns}` to")))
    }

    async fn volunteer(&self, ns: &str, _terms: &Candidacy) -> Result<Written, WorldError> {
        Err(WorldError::NoStore(format!("volunteer for schedule `{ns}` in")))
    }

    async fn withdraw(&self, _ns: &str, _owner: Option<&str>, _linger: u64) -> Result<Written, WorldError> {
        Ok(Written::Done)
    }

    async fn export(&self, exports: &[Export]) -> Result<Written, WorldError> {
        match exports.first() {
            None => Ok(Written::Done),
            Some(e) => Err(WorldError::NoStore(format!("export {}[{}] to", e.kind, e.name))),
        }
    }

    fn health(&self) -> Health {
        Health { backend: "none", connected: false, owned: 0, latency_ms: None, events: 0, stale_since: None }
    }
}
