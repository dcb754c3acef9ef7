//! What the engine reports: a closed set of events, broadcast to subscribers (the app's
//! log, tests) and mirrored to `tracing`.

use crate::key::{ResError, ResKey};

#[derive(Clone, Debug, PartialEq)]
pub enum EngineEvent {
    /// A candidate graph was accepted and is now running.
    Swapped { generation: u64, started: usize, stopped: usize, unchanged: usize },
    /// A worker started (its watch is being set up).
    Started(ResKey),
    /// A worker stopped and was cleaned up.
    Stopped(ResKey),
    /// A check-apply ran without error. `changed`: the state was wrong (in noop mode: would
    /// have been changed). `reports`: notes from the resource (noop diffs).
    Applied { key: ResKey, changed: bool, noop: bool, reports: Vec<String> },
    /// A check-apply or watch failed; `retrying` tells whether the budget allows another try.
    Failed { key: ResKey, error: ResError, retrying: bool },
    /// Every worker succeeded and is idle (or failed for good); or stopped being so.
    Converged(bool),
    /// The resource's watch keeps finding it changed and its check-apply keeps repairing
    /// it (`repairs` times `within` this long): another writer is fighting over it. Said
    /// once per episode; the worker backs off (see [`crate::flap`]).
    Flapping { key: ResKey, repairs: u32, within: std::time::Duration },
}

impl EngineEvent {
    /// Whether the event says something changed (what [`crate::Engine::subscribe_changes`]
    /// carries): a swap, an apply that changed (or would change) something, a failure.
    pub fn is_change(&self) -> bool {
        matches!(
            self,
            EngineEvent::Swapped { .. }
                | EngineEvent::Applied { changed: true, .. }
                | EngineEvent::Failed { .. }
                | EngineEvent::Flapping { .. }
        )
    }
}
