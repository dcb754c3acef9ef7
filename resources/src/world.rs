//! What the resources that write the world (`kv`, `schedule`, `json:edit`'s `etcd://`,
//! `http:server:ui:input`'s `world://`) share, and the process's inotify hub as the local
//! store's [`world::local::Watcher`].

use std::path::PathBuf;
use std::sync::Arc;

use crate::util::watch::FileWatch;

/// The process's inotify hub, telling the local store's followers of changes.
pub fn hub() -> Arc<dyn world::local::Watcher> {
    Arc::new(Hub)
}

struct Hub;

impl world::local::Watcher for Hub {
    fn entries(&self, dir: PathBuf) -> Option<Box<dyn world::local::Changes>> {
        let watch = FileWatch::entries(vec![dir]).ok()?;
        Some(Box::new(HubChanges(watch)))
    }
}

struct HubChanges(FileWatch);

impl world::local::Changes for HubChanges {
    fn changed(&mut self) -> futures::future::BoxFuture<'_, bool> {
        Box::pin(async move { self.0.changed().await.is_ok() })
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
