//! First passes in batches: a swap starting thousands of workers hands them to a task per
//! [`FIRST_POLLS`] instead of a task each. The batch polls each worker once, in order; a
//! worker that ends its first pass there (checked, and parked or done, as most resources
//! are) never costs a task, and one that has to wait (a slow command, a parent not yet
//! run, a semaphore) becomes a task of its own from that point, as if spawned at the start.
//!
//! Until its batch has polled it a worker is marked `batched` in its node: whoever stops it
//! waits for the batch ([`Node::take_task`](crate::node::Node::take_task)) before looking
//! for a task to join, so a stop never misses a first poll in flight.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Poll;
use std::time::{Duration, Instant};

use crate::node::{Run, lock};
use crate::starts::FirstPass;
use crate::worker::{FirstWatch, Shared, Worker};

/// Workers a batch polls; [`start_all`] checks for room ([`crate::starts::Starts::room`])
/// before each batch.
const FIRST_POLLS: usize = 16;

/// A first poll that took this long makes the batch spawn the rest of its workers as tasks
/// of their own: resources that block their thread (a package manager, say) then keep
/// their neighbours waiting no longer than one such poll, and the other threads can take
/// them.
const SLOW_POLL: Duration = Duration::from_millis(5);

/// Starts `workers` (a swap's or a patch's new ones, once the gate is released) in batches,
/// each once there is room: see [`crate::starts::Starts`].
pub(crate) async fn start_all(shared: &Arc<Shared>, workers: Vec<Worker>) {
    let mut workers = workers.into_iter().peekable();
    while workers.peek().is_some() {
        shared.starts.room().await;
        start(shared, workers.by_ref().take(FIRST_POLLS).collect());
    }
}

/// Starts `workers` as one batch (see the module's text), on the apply pool when there is
/// one. The watches are started here, on the caller's runtime (see [`Worker::first_watch`]).
fn start(shared: &Arc<Shared>, workers: Vec<Worker>) {
    let members: Vec<_> = workers
        .into_iter()
        .map(|worker| {
            let first = shared.apply_pool.is_some().then(|| worker.first_watch());
            worker.node.batched.store(true, Ordering::SeqCst);
            let pass = shared.starts.begin();
            (worker, first, pass)
        })
        .collect();
    let mut batch = Batch { members: members.into_iter(), shared: shared.clone() };
    shared.spawn(async move {
        let mut slow = false;
        for (worker, first, pass) in batch.members.by_ref() {
            let node = worker.node.clone();
            let mut future = Box::pin(worker.run(first, pass));
            if !slow {
                let began = Instant::now();
                let polled = tokio::task::unconstrained(poll_once(future.as_mut())).await;
                slow = began.elapsed() >= SLOW_POLL;
                match polled {
                    Ok(Poll::Pending) => {}
                    // Parked (its node holds it now) or over.
                    Ok(Poll::Ready(())) => {
                        node.batched.store(false, Ordering::SeqCst);
                        continue;
                    }
                    Err(panic) => {
                        tracing::error!(resource = %node.key, "worker panicked: {panic}");
                        node.batched.store(false, Ordering::SeqCst);
                        continue;
                    }
                }
            }
            // Under the lock, as a spawn always is: the task cannot park before its handle
            // is in place.
            let mut control = lock(&node.control);
            control.run = Run::Task(Some(batch.shared.spawn(future)));
            node.batched.store(false, Ordering::SeqCst);
        }
    });
}

type Member = (Worker, Option<FirstWatch>, FirstPass);

/// The workers a batch has yet to poll. Dropped, at the end of the batch or with its task
/// (a runtime shutting down), it lets go of them and tells whoever waits to stop one.
struct Batch {
    members: std::vec::IntoIter<Member>,
    shared: Arc<Shared>,
}

impl Drop for Batch {
    fn drop(&mut self) {
        for (worker, ..) in self.members.by_ref() {
            worker.node.batched.store(false, Ordering::SeqCst);
        }
        self.shared.starts.batch_over.notify_waiters();
    }
}

/// Polls `future` once with the batch task's context; a panic comes out as its message,
/// as a panicking task's would through its handle.
fn poll_once<F: Future<Output = ()>>(mut future: Pin<&mut F>) -> impl Future<Output = Result<Poll<()>, String>> + '_ {
    std::future::poll_fn(move |cx| {
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx)));
        Poll::Ready(polled.map_err(|panic| crate::worker::panic_message(&panic)))
    })
}
