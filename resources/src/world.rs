//! The two backends of `engine::world::World`: [`local::LocalWorld`], the store under the
//! state directory that one host keeps to itself, and [`etcd::EtcdWorld`], an etcd cluster
//! that every host of a fleet shares (`tend run --seeds`).

pub mod etcd;
pub mod local;

pub use local::LocalWorld;

/// The watch of a resource that follows what it writes in the world (`view`, followed
/// since init): an event now and after every new view. `resource` names it in errors.
pub(crate) fn watch_view(
    view: Option<engine::world::Follow>,
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
pub(crate) fn note_queued(written: engine::world::Written, resource: &str) {
    if written == engine::world::Written::Queued {
        tracing::info!(resource, "the world is unreachable: written once it is back");
    }
}
