//! The watch of a kind whose target tells nobody when it changes (a BMC, a cloud API): ask
//! it every so often and raise an event only when the answer differs from the last one,
//! so an unchanged target costs requests but never a check-apply.

use std::future::Future;
use std::time::Duration;

use engine::{ResError, WatchCtx};
use futures::future::BoxFuture;

/// One startup event, then `probe` every `every`, an event each time its answer changes
/// (the first answer counts: the target may have moved since the first check). An error
/// is an answer too, so a target that comes back raises an event.
pub fn watch_by_polling<T, F, Fut>(ctx: WatchCtx, every: Duration, probe: F) -> BoxFuture<'static, Result<(), ResError>>
where
    T: PartialEq + Send + 'static,
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = Result<T, String>> + Send + 'static,
{
    Box::pin(async move {
        ctx.event();
        let every = every.max(Duration::from_millis(100));
        let mut seen: Option<Result<T, ()>> = None;
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        loop {
            tokio::select! {
                _ = ticks.tick() => {
                    let now = probe().await.map_err(|_| ());
                    if seen.as_ref() != Some(&now) {
                        ctx.event();
                    }
                    seen = Some(now);
                }
                _ = ctx.cancelled() => return Ok(()),
            }
        }
    })
}

/// The watch of a resource that cannot reach its target yet (a credential file missing):
/// the startup event (its check reports why, and the engine retries), then nothing.
pub fn startup_only(ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
    Box::pin(async move {
        ctx.event();
        ctx.cancelled().await;
        Ok(())
    })
}
