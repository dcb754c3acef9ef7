//! A world that remembers what the program followed through it ([`Recorded`]), for `tend
//! why`'s report of each world value's revision, age and staleness.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::signing::Signer;
use crate::{Bundle, Candidacy, Deploy, Export, Follow, Health, Parent, Topic, View, World, WorldError, Written};

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

    async fn deploy(&self, bundle: &Bundle, parent: Parent, signer: Option<&Signer>) -> Result<u64, WorldError> {
        self.inner.deploy(bundle, parent, signer).await
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

    async fn close(&self) {
        self.inner.close().await
    }
}
