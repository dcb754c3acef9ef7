//! Following the cluster's deploys in `tend run --seeds URL` without a PATH: each new
//! deploy is fetched, written under `<state>/deploys/<id>/` and compiled with this host's
//! catalog; the run swaps to it as to a live edit, or keeps the program it runs when the
//! deploy does not compile here. The deploy that last ran here is recorded
//! (`<state>/deploys/ran`): a restarted agent starts from it, then tries what is newer as
//! it would a new deploy, so a deploy that cannot run here (one too deep to compile, one
//! whose program fails on this host) never leaves a restarted agent running nothing.

use crate::loader::ProgramPath;
use std::path::PathBuf;
use std::sync::Arc;
use world::signing::Trusted;
use world::{Follow, Topic, World};

/// Why a deploy was not placed.
pub enum NotPlaced {
    /// It could not be fetched (an outage, a damaged record): tried again.
    Failed(String),
    /// `--trust-deploys` refuses it: never tried again, and nothing of it is written.
    Refused(world::signing::Refusal),
}

/// Deploys kept on disk besides the one running (for a look at what ran before).
const KEEP: usize = 3;

/// The file holding the id of the deploy that last ran here.
const RAN: &str = "ran";

pub struct Deploys {
    world: Arc<dyn World>,
    dir: PathBuf,
    follow: Follow,
    /// The newest deploy this agent took up (ran, or found broken here).
    seen: u64,
    /// The deploy whose fetch keeps failing, and how many times it did.
    failing: (u64, u32),
    /// `--trust-deploys`: the keys a deploy must be signed by.
    trusted: Option<Trusted>,
    /// An older `latest` already refused (with trusted keys, a rollback is refused once).
    rollback_told: Option<u64>,
}

impl Deploys {
    /// Must be called inside the runtime.
    pub fn new(world: Arc<dyn World>, state_dir: &std::path::Path, trusted: Option<Trusted>) -> Deploys {
        let follow = world.follow(&Topic::Deploys);
        let dir = state_dir.join("deploys");
        Deploys { world, dir, follow, seen: 0, failing: (0, 0), trusted, rollback_told: None }
    }

    /// The next deploy newer than the last one taken up (waits for it).
    pub async fn next(&mut self) -> u64 {
        loop {
            let latest = {
                let view = self.follow.borrow_and_update();
                view.entries.get("latest").and_then(|v| v.parse::<u64>().ok())
            };
            if let Some(id) = latest.filter(|&id| id > self.seen) {
                return id;
            }
            // `latest` set back to an older deploy: with trusted keys, refused (and said) once.
            if let Some(id) = latest.filter(|&id| self.trusted.is_some() && id < self.seen)
                && self.rollback_told != Some(id)
            {
                self.rollback_told = Some(id);
                return id;
            }
            if self.follow.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Fetches deploy `id` and places it on disk; once placed, it is not offered again. A
    /// deploy already on disk (an agent restarted while etcd is away) is taken from there.
    /// With trusted keys, only a deploy that was checked when it was placed is taken from
    /// disk (its `<id>.trusted` names the key), and a fetched one is checked before any
    /// of it is written.
    pub async fn fetch(&mut self, id: u64) -> Result<ProgramPath, NotPlaced> {
        let root = self.dir.join(id.to_string());
        let ran = recorded_ran(&self.dir);
        // With trusted keys, reused from disk only if checked when placed and not older.
        let vouched = self.trusted.is_none()
            || (self.dir.join(format!("{id}.trusted")).is_file() && ran.is_none_or(|ran| id >= ran));
        if let Ok(entry) = std::fs::read_to_string(self.dir.join(format!("{id}.entry")))
            && root.is_dir()
            && vouched
        {
            self.seen = self.seen.max(id);
            return Ok(ProgramPath::deployed(root, entry));
        }
        let deploy = self
            .world
            .fetch_deploy(id)
            .await
            .map_err(|e| NotPlaced::Failed(e.to_string()))?
            .ok_or_else(|| NotPlaced::Failed(format!("deploy {id} is not in the cluster")))?;
        let signer = match &self.trusted {
            Some(trusted) => Some(trusted.check(&deploy, ran).map_err(NotPlaced::Refused)?),
            None => None,
        };
        let dir = self.dir.clone();
        let placed = tokio::task::spawn_blocking(move || {
            let root = world::bundle::materialize(&dir, id, &deploy.bundle)?;
            let placed = ProgramPath::deployed(root, deploy.bundle.entry.clone());
            std::fs::write(dir.join(format!("{id}.entry")), &placed.entry)
                .map_err(|e| format!("cannot record deploy {id}'s entry: {e}"))?;
            if let Some(key) = signer {
                std::fs::write(dir.join(format!("{id}.trusted")), key)
                    .map_err(|e| format!("cannot record deploy {id}'s signer: {e}"))?;
            }
            world::bundle::prune(&dir, KEEP + 1, recorded_ran(&dir));
            Ok::<_, String>(placed)
        })
        .await
        .map_err(|e| NotPlaced::Failed(e.to_string()))?
        .map_err(NotPlaced::Failed)?;
        self.seen = self.seen.max(id);
        Ok(placed)
    }

    /// Counts a failed fetch of deploy `id`; returns how many in a row.
    pub fn fetch_failed(&mut self, id: u64) -> u32 {
        self.failing = if self.failing.0 == id { (id, self.failing.1 + 1) } else { (id, 1) };
        self.failing.1
    }

    /// Records that deploy `id` runs here (atomically: a crash leaves the old record).
    pub fn ran(&self, id: u64) {
        let tmp = self.dir.join(".ran.new");
        let written = std::fs::write(&tmp, id.to_string()).and_then(|()| std::fs::rename(&tmp, self.dir.join(RAN)));
        if let Err(e) = written {
            tracing::warn!(deploy = id, error = %e, "cannot record which deploy runs; a restart waits for the cluster's latest");
        }
    }

    /// The deploy that last ran here, when it is still on disk.
    pub fn last_ran(&self) -> Option<u64> {
        let id = recorded_ran(&self.dir)?;
        (self.dir.join(id.to_string()).is_dir() && self.dir.join(format!("{id}.entry")).is_file()).then_some(id)
    }

    /// Marks deploy `id` taken up although it could not run here.
    pub fn skip(&mut self, id: u64) {
        self.seen = self.seen.max(id);
    }
}

/// The id [`Deploys::ran`] recorded under `dir`.
fn recorded_ran(dir: &std::path::Path) -> Option<u64> {
    std::fs::read_to_string(dir.join(RAN)).ok()?.trim().parse().ok()
}
