//! Converged tracking: the graph is converged when every registered worker has finished a
//! successful run and has nothing pending. Workers that failed for good unregister, so they
//! do not hold convergence back (their blocked dependents do).

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::{broadcast, watch};

use crate::event::EngineEvent;
use crate::res::ResKey;

pub struct Converger {
    state: Mutex<State>,
    /// `true` while converged; receivers are handed out by [`crate::Engine::converged`].
    tx: watch::Sender<bool>,
    /// Transitions are also broadcast as [`EngineEvent::Converged`].
    events: broadcast::Sender<EngineEvent>,
}

#[derive(Default)]
struct State {
    workers: HashMap<ResKey, bool>,
    unconverged: usize,
}

impl Converger {
    pub(crate) fn new(events: broadcast::Sender<EngineEvent>) -> Converger {
        Converger { state: Mutex::new(State::default()), tx: watch::Sender::new(true), events }
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<bool> {
        self.tx.subscribe()
    }

    /// Registers (unconverged) or updates a worker. Unknown keys are ignored unless
    /// `register` is used first, so late events from stopped workers cannot resurrect them.
    pub(crate) fn register(&self, key: &ResKey) {
        let mut state = self.lock();
        if state.workers.insert(key.clone(), false) != Some(false) {
            state.unconverged += 1;
        }
        self.publish(&state);
    }

    pub(crate) fn unregister(&self, key: &ResKey) {
        let mut state = self.lock();
        if state.workers.remove(key) == Some(false) {
            state.unconverged -= 1;
        }
        self.publish(&state);
    }

    /// Marks a worker converged only if `still_idle` holds while the lock is held (no
    /// wake-up arrived during its run).
    pub(crate) fn set_if(&self, key: &ResKey, still_idle: impl FnOnce() -> bool) {
        let mut state = self.lock();
        if still_idle() {
            self.update(&mut state, key, true);
        }
    }

    pub(crate) fn set(&self, key: &ResKey, converged: bool) {
        let mut state = self.lock();
        self.update(&mut state, key, converged);
    }

    fn update(&self, state: &mut State, key: &ResKey, converged: bool) {
        let Some(slot) = state.workers.get_mut(key) else { return };
        if *slot == converged {
            return;
        }
        *slot = converged;
        if converged {
            state.unconverged -= 1;
        } else {
            state.unconverged += 1;
        }
        self.publish(state);
    }

    pub(crate) fn is_converged(&self) -> bool {
        self.lock().unconverged == 0
    }

    fn publish(&self, state: &State) {
        let now = state.unconverged == 0;
        if self.tx.send_if_modified(|v| std::mem::replace(v, now) != now) {
            tracing::info!(converged = now, "converger");
            let _no_subscribers = self.events.send(EngineEvent::Converged(now));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding this lock leaves plain counters behind; keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}
