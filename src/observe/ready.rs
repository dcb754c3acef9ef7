//! Readiness for systemd, derived from the engine's events: `READY=1` once the first
//! resource graph has converged, and a `STATUS=` line on every converged transition after
//! that, so `systemctl status tend` tells whether the machine is settled.
//!
//! Why "after a swap": the engine starts out converged (an empty graph is), so readiness
//! must wait for the first accepted graph. The engine registers a graph's workers with the
//! converger before it emits `Swapped`, so when `Swapped` arrives the converged flag already
//! covers the new graph; an empty or instantly settled graph is ready at its `Swapped`.

use std::time::Duration;

use engine::{Engine, EngineEvent};
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::notify;

/// The least time between two `STATUS=` messages: a flapping graph (thousands of converged
/// transitions a second) must not flood systemd. The latest status wins.
pub const STATUS_EVERY: Duration = Duration::from_secs(1);

/// Follows `engine` and notifies systemd (a no-op outside systemd). The task ends with
/// the engine; abort it when shutting down so no status follows `STOPPING=1`.
pub fn announce(engine: &Engine) -> JoinHandle<()> {
    let mut events = engine.subscribe();
    let mut converged = engine.is_converged();
    tokio::spawn(async move {
        let mut generation = None;
        let mut ready = false;
        let mut warned = false;
        let mut pending: Option<String> = None;
        let mut last_sent: Option<Instant> = None;
        let mut warn = |sent: std::io::Result<bool>| {
            if let Err(e) = sent
                && !warned
            {
                warned = true;
                tracing::warn!(error = %e, "cannot notify systemd (NOTIFY_SOCKET)");
            }
        };
        loop {
            let flush_at = last_sent.map_or_else(Instant::now, |t| t + STATUS_EVERY);
            let event = tokio::select! {
                // Drain what is queued before flushing, so bursts coalesce.
                biased;
                event = events.recv() => match event {
                    Ok(event) => event,
                    // Missed events: only the flag matters, and a later transition fixes it.
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return,
                },
                () = tokio::time::sleep_until(flush_at), if pending.is_some() => {
                    if let Some(status) = pending.take() {
                        warn(notify::status(&status));
                        last_sent = Some(Instant::now());
                    }
                    continue;
                }
            };
            pending = Some(match event {
                EngineEvent::Swapped { generation: g, .. } => {
                    generation = Some(g);
                    if converged {
                        format!("converged (graph generation {g})")
                    } else {
                        format!("applying graph generation {g}")
                    }
                }
                EngineEvent::Converged(c) => {
                    converged = c;
                    let Some(g) = generation else { continue };
                    if c {
                        format!("converged (graph generation {g})")
                    } else {
                        format!("converging (graph generation {g})")
                    }
                }
                _ => continue,
            });
            if converged && generation.is_some() && !ready {
                ready = true;
                if let Some(status) = pending.take() {
                    warn(notify::status(&status));
                    last_sent = Some(Instant::now());
                }
                warn(notify::ready());
            }
        }
    })
}
