//! Converged tracking: the graph is converged when every registered worker has finished a
//! successful run and has nothing pending. Workers that failed for good unregister, so they
//! do not hold convergence back (their blocked dependents do).
//!
//! Each vertex keeps its own flag ([`Slot`], locked only by that vertex's pokes and runs);
//! the engine-wide state is one atomic count of unconverged vertices, published on the
//! watch channel whenever it crosses zero. A poke therefore costs no engine-wide lock,
//! which matters when thousands of workers start at once.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{broadcast, watch};

use crate::event::EngineEvent;

pub struct Converger {
    unconverged: AtomicUsize,
    /// Serializes publishing, so the last publisher always sends the latest count.
    publishing: Mutex<()>,
    /// `true` while converged; receivers are handed out by [`crate::Engine::converged`].
    tx: watch::Sender<bool>,
    /// Transitions are also broadcast as [`EngineEvent::Converged`].
    events: broadcast::Sender<EngineEvent>,
}

/// One vertex's converged flag. Unregistered slots ignore updates, so late events from a
/// stopped worker cannot resurrect it.
#[derive(Default)]
pub(crate) struct Slot(Mutex<SlotState>);

#[derive(Default)]
struct SlotState {
    registered: bool,
    converged: bool,
}

impl Converger {
    pub(crate) fn new(events: broadcast::Sender<EngineEvent>) -> Converger {
        Converger { unconverged: AtomicUsize::new(0), publishing: Mutex::new(()), tx: watch::Sender::new(true), events }
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<bool> {
        self.tx.subscribe()
    }

    /// Registers a vertex, unconverged.
    pub(crate) fn register(&self, slot: &Slot) {
        let mut s = slot.lock();
        if !s.registered {
            s.registered = true;
            s.converged = false;
            self.add();
        } else if s.converged {
            s.converged = false;
            self.add();
        }
    }

    pub(crate) fn unregister(&self, slot: &Slot) {
        let mut s = slot.lock();
        if s.registered {
            s.registered = false;
            if !s.converged {
                self.sub();
            }
        }
    }

    /// Marks a vertex converged only if `still_idle` holds while its slot is locked (no
    /// wake-up arrived during its run: pokes clear the flag under the same lock).
    pub(crate) fn set_if(&self, slot: &Slot, still_idle: impl FnOnce() -> bool) {
        let mut s = slot.lock();
        if still_idle() {
            self.update(&mut s, true);
        }
    }

    /// Runs `before` and then marks the vertex unconverged, both under its slot lock.
    pub(crate) fn unset_with(&self, slot: &Slot, before: impl FnOnce()) {
        let mut s = slot.lock();
        before();
        self.update(&mut s, false);
    }

    fn update(&self, s: &mut SlotState, converged: bool) {
        if !s.registered || s.converged == converged {
            return;
        }
        s.converged = converged;
        if converged { self.sub() } else { self.add() }
    }

    fn add(&self) {
        if self.unconverged.fetch_add(1, Ordering::SeqCst) == 0 {
            self.publish();
        }
    }

    fn sub(&self) {
        if self.unconverged.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.publish();
        }
    }

    pub(crate) fn is_converged(&self) -> bool {
        self.unconverged.load(Ordering::SeqCst) == 0
    }

    fn publish(&self) {
        let _one_at_a_time = self.publishing.lock().unwrap_or_else(|e| e.into_inner());
        let now = self.is_converged();
        if self.tx.send_if_modified(|v| std::mem::replace(v, now) != now) {
            tracing::info!(converged = now, "converger");
            let _no_subscribers = self.events.send(EngineEvent::Converged(now));
        }
    }
}

impl Slot {
    /// Registered and converged: the vertex succeeded and has nothing pending.
    pub(crate) fn is_set(&self) -> bool {
        let s = self.lock();
        s.registered && s.converged
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SlotState> {
        // A panic while holding this lock leaves two plain flags behind; keep going.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
