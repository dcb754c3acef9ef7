//! How many started workers have yet to finish their first pass. Until it first goes idle a
//! worker is a task of about 500 bytes (then it parks in a tenth of that): a swap that
//! started 100,000 at once would hold them all at the same moment, so it waits for room
//! instead ([`Starts::room`]), which costs no time while the check-applies keep up.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// Workers in their first pass a swap lets be at once.
const MAX_LIVE: usize = 4096;
/// How long a swap waits for room before starting more anyway: first passes that take long
/// (a slow command, a resource waiting on a semaphore) throttle the starts, never stop them.
const PATIENCE: Duration = Duration::from_millis(200);

#[derive(Default)]
pub(crate) struct Starts {
    live: AtomicUsize,
    room: Notify,
    /// Told each time a batch of first passes lets go of its workers (see [`crate::batch`]).
    pub(crate) batch_over: Notify,
}

/// Held by a worker's task from its start until its first pass is over (it parks, waits for
/// an event, or ends); dropped with the task if it never runs.
pub(crate) struct FirstPass(Arc<Starts>);

impl Starts {
    pub(crate) fn begin(self: &Arc<Self>) -> FirstPass {
        self.live.fetch_add(1, Ordering::SeqCst);
        FirstPass(self.clone())
    }

    /// Returns once fewer than [`MAX_LIVE`] workers are in their first pass, or after
    /// [`PATIENCE`].
    pub(crate) async fn room(&self) {
        while self.live.load(Ordering::SeqCst) >= MAX_LIVE {
            if tokio::time::timeout(PATIENCE, self.room.notified()).await.is_err() {
                return;
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }
}

impl Drop for FirstPass {
    fn drop(&mut self) {
        // Half the bound: a waiting swap then starts a batch at a time, not one per pass.
        if self.0.live.fetch_sub(1, Ordering::SeqCst) == MAX_LIVE / 2 + 1 {
            self.0.room.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    #[tokio::test]
    async fn room_is_made_when_half_the_first_passes_are_over() {
        let starts = Arc::new(Starts::default());
        let mut passes: Vec<FirstPass> = (0..MAX_LIVE - 1).map(|_| starts.begin()).collect();
        assert!(starts.room().now_or_never().is_some(), "below the bound, no wait");
        passes.push(starts.begin());
        let mut room = Box::pin(starts.room());
        assert!((&mut room).now_or_never().is_none(), "at the bound, a swap waits");
        passes.truncate(MAX_LIVE / 2 + 1);
        assert!((&mut room).now_or_never().is_none(), "still waiting above half the bound");
        passes.pop();
        assert!(room.now_or_never().is_some(), "half the bound: room is made");
        drop(passes);
        assert_eq!(starts.live(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_swap_of_more_workers_than_the_bound_starts_them_all() {
        let engine = crate::Engine::new(crate::EngineConfig::default());
        let mut graph = crate::Graph::new();
        let count = MAX_LIVE * 3;
        for i in 0..count {
            let key = crate::ResKey::new("t", format!("{i}"));
            graph.add_vertex(key, crate::Meta::default(), Box::new(crate::res::Nothing));
        }
        let report = engine.apply(graph).await.expect("valid graph");
        assert_eq!(report.started.len(), count);
        assert!(engine.wait_converged(Duration::from_secs(60)).await);
        // Every worker's first pass is over: nothing is left counted.
        assert_eq!(engine.shared.starts.live(), 0);
        engine.shutdown(Duration::from_secs(10)).await;
    }
}
