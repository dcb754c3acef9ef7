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
use world::{Follow, Topic, World};

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
}

impl Deploys {
    /// Must be called inside the runtime.
    pub fn new(world: Arc<dyn World>, state_dir: &std::path::Path) -> Deploys {
        let follow = world.follow(&Topic::Deploys);
        Deploys { world, dir: state_dir.join("deploys"), follow, seen: 0, failing: (0, 0) }
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
            if self.follow.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Fetches deploy `id` and places it on disk; once placed, it is not offered again. A
    /// deploy already on disk (an agent restarted while etcd is away) is taken from there.
    pub async fn fetch(&mut self, id: u64) -> Result<ProgramPath, String> {
        let root = self.dir.join(id.to_string());
        if let Ok(entry) = std::fs::read_to_string(self.dir.join(format!("{id}.entry")))
            && root.is_dir()
        {
            self.seen = self.seen.max(id);
            return Ok(ProgramPath { root, entry });
        }
        let deploy = self
            .world
            .fetch_deploy(id)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("deploy {id} is not in the cluster"))?;
        let dir = self.dir.clone();
        let placed = tokio::task::spawn_blocking(move || {
            let root = world::bundle::materialize(&dir, id, &deploy.bundle)?;
            let placed = ProgramPath { root, entry: deploy.bundle.entry.clone() };
            std::fs::write(dir.join(format!("{id}.entry")), &placed.entry)
                .map_err(|e| format!("cannot record deploy {id}'s entry: {e}"))?;
            world::bundle::prune(&dir, KEEP + 1, recorded_ran(&dir));
            Ok::<_, String>(placed)
        })
        .await
        .map_err(|e| e.to_string())??;
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
