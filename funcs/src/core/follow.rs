//! Following a path: the one loop behind every built-in whose value is something on disk
//! (`os.readfile`, `os.file_exists`, `os.user_exists`, the local world store). It reads
//! the path now and again after each change the host's watcher reports
//! ([`crate::api::Host::watcher`]), with a slow safety re-read, or a fast poll when the
//! host watches nothing. A path that is a symlink is followed: where it leads is watched
//! too, and again wherever it leads after a change.

use super::streams::Emitter;
use crate::api::{FuncError, FuncResult, PathChanges, Watched};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The re-read while watched: catches anything a watch cannot see (an expired lease in
/// the world store, a file on a network mount).
const SAFETY: Duration = Duration::from_secs(5);

/// The poll when the host watches nothing.
const POLL: Duration = Duration::from_millis(250);

/// How long a read of a file still open for writing waits for the writer's close before
/// its text is taken anyway (a file kept open by a writer, a log, must still be read).
const SETTLE: Duration = Duration::from_millis(200);

/// What a read found: a value, or one read while a writer still had the file open (maybe
/// half written, as an `echo x > f` caught between its truncation and its write).
pub enum Reading {
    Settled(FuncResult),
    Unsettled(FuncResult),
}

impl From<FuncResult> for Reading {
    fn from(result: FuncResult) -> Reading {
        Reading::Settled(result)
    }
}

/// Emits `read(path)` now and whenever `path` (or, for [`Watched::Entries`], an entry of
/// it) changes, skipping values equal to the last one. `read` runs on tokio's blocking
/// pool: a slow disk or a hung network mount holds a blocking thread, not a runtime worker
/// that the dataflow's other streams and the engine's watches share. A reading that is
/// [`Reading::Unsettled`] is read again when the writer is done (its close is a change),
/// and taken as it is only when that does not come within [`SETTLE`].
pub async fn follow<F, R>(path: PathBuf, what: Watched, em: Emitter, read: F)
where
    F: Fn(&Path) -> R + Send + Sync + 'static,
    R: Into<Reading> + Send + 'static,
{
    let mut watch = em.host().watcher.watch(&path, what);
    // Where a symlink at `path` leads, watched too: an edit of the target changes nothing
    // at the link's own place.
    let mut target: Option<(PathBuf, Box<dyn PathChanges>)> = None;
    let mut last: Option<FuncResult> = None;
    let read = Arc::new(read);
    loop {
        if watch.is_some() {
            let real = std::fs::canonicalize(&path).ok().filter(|real| *real != path);
            if real.as_ref() != target.as_ref().map(|(at, _)| at) {
                target = real.and_then(|real| Some((real.clone(), em.host().watcher.watch(&real, what)?)));
            }
        }
        let (reader, at) = (read.clone(), path.clone());
        let reading = tokio::task::spawn_blocking(move || reader(&at).into()).await.unwrap_or_else(|e| {
            Reading::Settled(Err(FuncError::fatal(format!("reading {} failed: {e}", path.display()))))
        });
        let r = match reading {
            Reading::Settled(r) => r,
            Reading::Unsettled(r) => {
                // The writer's close is a change: read again then.
                let settled = match watch.as_mut() {
                    Some(w) => tokio::time::timeout(SETTLE, w.changed()).await.ok(),
                    None => None,
                };
                match settled {
                    Some(true) => continue,
                    Some(false) => lost(&mut watch, &mut target, &path),
                    None => {}
                }
                r
            }
        };
        if last.as_ref() != Some(&r) {
            if !em.send(r.clone()).await {
                return;
            }
            last = Some(r);
        }
        match watch.as_mut() {
            Some(w) => {
                let target_changed = async {
                    match target.as_mut() {
                        Some((_, t)) => t.changed().await,
                        None => std::future::pending().await,
                    }
                };
                let (watching, target_watching) = tokio::select! {
                    ok = w.changed() => (ok, true),
                    ok = target_changed => (true, ok),
                    _ = tokio::time::sleep(SAFETY) => (true, true),
                };
                if !watching {
                    lost(&mut watch, &mut target, &path);
                } else if !target_watching {
                    // Made again on the next turn.
                    target = None;
                }
            }
            None => tokio::time::sleep(POLL).await,
        }
    }
}

/// A watch that was lost: say so once, and poll from now on.
fn lost(watch: &mut Option<Box<dyn PathChanges>>, target: &mut Option<(PathBuf, Box<dyn PathChanges>)>, path: &Path) {
    tracing::warn!(path = %path.display(), "the watch of a followed path was lost; polling it");
    *watch = None;
    *target = None;
}
