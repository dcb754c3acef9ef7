//! Following a path: the one loop behind every built-in whose value is something on disk
//! (`os.readfile`, `os.file_exists`, `os.user_exists`, the local world store). It reads
//! the path now and again after each change the host's watcher reports
//! ([`crate::api::Host::watcher`]), with a slow safety re-read, or a fast poll when the
//! host watches nothing.

use super::streams::Emitter;
use crate::api::{FuncError, FuncResult, Watched};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The re-read while watched: catches anything a watch cannot see (an expired lease in
/// the world store, a file on a network mount).
const SAFETY: Duration = Duration::from_secs(5);

/// The poll when the host watches nothing.
const POLL: Duration = Duration::from_millis(250);

/// Emits `read(path)` now and whenever `path` (or, for [`Watched::Entries`], an entry of
/// it) changes, skipping values equal to the last one. `read` runs on tokio's blocking
/// pool: a slow disk or a hung network mount holds a blocking thread, not a runtime worker
/// that the dataflow's other streams and the engine's watches share.
pub async fn follow<F>(path: PathBuf, what: Watched, em: Emitter, read: F)
where
    F: Fn(&Path) -> FuncResult + Send + Sync + 'static,
{
    let mut watch = em.host().watcher.watch(&path, what);
    let mut last: Option<FuncResult> = None;
    let read = Arc::new(read);
    loop {
        let (reader, at) = (read.clone(), path.clone());
        let r = tokio::task::spawn_blocking(move || reader(&at))
            .await
            .unwrap_or_else(|e| Err(FuncError::fatal(format!("reading {} failed: {e}", path.display()))));
        if last.as_ref() != Some(&r) {
            if !em.send(r.clone()).await {
                return;
            }
            last = Some(r);
        }
        match watch.as_mut() {
            Some(w) => {
                tokio::select! {
                    _ = w.changed() => {}
                    _ = tokio::time::sleep(SAFETY) => {}
                }
            }
            None => tokio::time::sleep(POLL).await,
        }
    }
}
