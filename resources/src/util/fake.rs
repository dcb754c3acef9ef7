//! What the in-memory backends of the tests share (behind the `fakes` feature): their
//! state behind one lock, the calls made to them, and a change counter that their
//! monitors follow, so a change made behind a resource's back wakes its watch.

use std::sync::{Mutex, MutexGuard};

use engine::ResError;
use futures::StreamExt as _;
use futures::stream::BoxStream;

pub struct Fake<T> {
    state: Mutex<T>,
    changes: tokio::sync::watch::Sender<u64>,
    calls: Mutex<Vec<String>>,
}

impl<T: Default> Default for Fake<T> {
    fn default() -> Fake<T> {
        Fake { state: Mutex::default(), changes: tokio::sync::watch::Sender::new(0), calls: Mutex::default() }
    }
}

impl<T> Fake<T> {
    /// The backend's state.
    pub fn state(&self) -> MutexGuard<'_, T> {
        super::lock(&self.state)
    }

    /// Says the state changed: every monitor yields.
    pub fn changed(&self) {
        self.changes.send_modify(|n| *n += 1);
    }

    /// Records a call made to the backend.
    pub fn record(&self, call: String) {
        super::lock(&self.calls).push(call);
    }

    /// The calls made so far, in order.
    pub fn calls(&self) -> Vec<String> {
        super::lock(&self.calls).clone()
    }

    /// A stream that yields after each change from now on.
    pub fn monitor(&self) -> BoxStream<'static, Result<(), ResError>> {
        futures::stream::unfold(self.changes.subscribe(), |mut rx| async move {
            rx.changed().await.ok()?;
            Some((Ok(()), rx))
        })
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_change_wakes_a_monitor_and_calls_are_kept() {
        let fake: Fake<Vec<u8>> = Fake::default();
        let mut monitor = fake.monitor();
        fake.state().push(1);
        fake.record("push 1".into());
        fake.changed();
        assert!(matches!(monitor.next().await, Some(Ok(()))));
        assert_eq!(fake.calls(), ["push 1"]);
        assert_eq!(*fake.state(), [1]);
    }
}
