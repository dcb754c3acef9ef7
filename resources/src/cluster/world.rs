//! What the resources that write the world (`kv`, `schedule`, `json:edit`'s `etcd://`,
//! `http:server:ui:input`'s `world://`) share, and the process's inotify hub as the one
//! [`world::watch::PathWatcher`] of the local store and the functions.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use world::watch::{PathChanges, PathWatcher, Watched};

use crate::util::watch::FileWatch;

/// The process's inotify hub as a path watcher: one inotify instance for the whole
/// process, whoever follows a path.
pub fn hub() -> Arc<dyn PathWatcher> {
    Arc::new(Hub)
}

struct Hub;

impl PathWatcher for Hub {
    fn watch(&self, path: &Path, what: Watched) -> Option<Box<dyn PathChanges>> {
        let path = std::path::absolute(path).ok()?;
        let watch = match what {
            Watched::Path => FileWatch::new(vec![path], false),
            Watched::Entries => FileWatch::entries(vec![path]),
        };
        match watch {
            Ok(w) => Some(Box::new(HubChanges(w))),
            Err(e) => {
                tracing::warn!(error = %e.message, "cannot watch files; polling them");
                None
            }
        }
    }
}

struct HubChanges(FileWatch);

impl PathChanges for HubChanges {
    fn changed(&mut self) -> futures::future::BoxFuture<'_, bool> {
        Box::pin(async move {
            match self.0.changed().await {
                Ok(_) => true,
                Err(e) => {
                    tracing::warn!(error = %e.message, "a file watch failed");
                    false
                }
            }
        })
    }
}

/// The local store under `root` as host `hostname`, followed through the hub.
pub fn local(root: impl Into<PathBuf>, hostname: impl Into<String>) -> world::LocalWorld {
    world::LocalWorld::new(root, hostname).watched_by(hub())
}

/// The watch of a resource that follows what it writes in the world (`view`, followed
/// since init): an event now and after every new view. `resource` names it in errors.
pub(crate) fn watch_view(
    view: Option<world::Follow>,
    ctx: engine::WatchCtx,
    resource: String,
) -> futures::future::BoxFuture<'static, Result<(), engine::ResError>> {
    Box::pin(async move {
        let mut view = view.ok_or_else(|| engine::ResError::new(format!("{resource}: watch before init")))?;
        ctx.event();
        loop {
            tokio::select! {
                changed = view.changed() => {
                    if changed.is_err() {
                        return Err(engine::ResError::transient(format!("{resource}: the world stopped following it")));
                    }
                    ctx.event();
                }
                _ = ctx.cancelled() => return Ok(()),
            }
        }
    })
}

/// Says so when the world queued a write because its store is away (it is made once the
/// store is back).
pub(crate) fn note_queued(written: world::Written, resource: &str) {
    if written == world::Written::Queued {
        tracing::info!(resource, "the world is unreachable: written once it is back");
    }
}
