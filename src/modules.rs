//! Remote modules on disk: where imports by URL are looked for (the module path) and
//! fetching a missing one with git (`--download`), through gitoxide, never a `git` process.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The deploy path under which the front end sees the module path (`--module-path`). A
/// deploy bundles the modules a program uses there, so an agent finds them in the deploy.
pub const MOUNT: &str = "/.modules/";

/// Where a command finds imports by URL and whether it fetches missing ones.
#[derive(Clone, Debug)]
pub struct Modules {
    /// The module path's directory (`--module-path`, `MGMT_MODULE_PATH`, else
    /// `<state dir>/modules/`); `None`: the program's own `.modules/`, as in a deploy.
    pub dir: Option<PathBuf>,
    /// `--download`: clone a module missing from the module path.
    pub download: bool,
    /// `--download-timeout`: how long one download may take before it is abandoned (a
    /// server that accepts and then stalls would otherwise hold the command forever).
    pub timeout: Duration,
}

/// How long a download may take when the command line does not say.
pub const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(300);

impl Default for Modules {
    fn default() -> Modules {
        Modules { dir: None, download: false, timeout: DOWNLOAD_TIMEOUT }
    }
}

static CHOSEN: OnceLock<Modules> = OnceLock::new();

/// Sets what every program this process compiles from disk uses (once, from the command
/// line).
pub fn choose(modules: Modules) {
    let _ = CHOSEN.set(modules);
}

/// What the command line chose (the default for a process that chose nothing).
pub fn chosen() -> Modules {
    CHOSEN.get().cloned().unwrap_or_default()
}

/// The module path from the command line: `given` (made absolute), or the default under
/// the state directory.
pub fn module_dir(given: Option<&Path>) -> Result<PathBuf, String> {
    match given {
        Some(p) if p.is_absolute() => Ok(p.to_path_buf()),
        Some(p) => std::env::current_dir().map(|cwd| cwd.join(p)).map_err(|e| {
            format!("--module-path `{}` is relative and the working directory is unknown: {e}", p.display())
        }),
        None => Ok(crate::services::default_state_dir().join("modules")),
    }
}

/// Clones `url` at `reference` (a branch or tag, a full commit id, or the default branch)
/// into `dest`, complete or not at all: the clone is made beside it and renamed into place,
/// so an interrupted download never looks like a module.
pub fn fetch(url: &str, reference: Option<&str>, dest: &Path, timeout: Duration) -> Result<(), String> {
    let parent = dest.parent().ok_or_else(|| format!("`{}` has no parent directory", dest.display()))?;
    std::fs::create_dir_all(parent).map_err(|e| format!("cannot make `{}`: {e}", parent.display()))?;
    let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // Unique to this download: one abandoned after its timeout may still be writing.
    static DOWNLOADS: AtomicU64 = AtomicU64::new(0);
    let nth = DOWNLOADS.fetch_add(1, Ordering::Relaxed);
    let staging = parent.join(format!(".{name}.download-{}-{nth}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    tracing::info!(%url, reference = reference.unwrap_or("(default branch)"), dest = %dest.display(), "downloading a module");
    let cloned = clone_within(url, reference, &staging, timeout);
    let placed = cloned.and_then(|()| match std::fs::rename(&staging, dest) {
        Ok(()) => Ok(()),
        // Another tend placed the same module meanwhile: theirs is as good as ours.
        Err(_) if dest.join(".git").is_dir() => Ok(()),
        Err(e) => Err(format!("cannot move the clone to `{}`: {e}", dest.display())),
    });
    // Gone already when it was renamed into place.
    let _ = std::fs::remove_dir_all(&staging);
    placed
}

/// [`clone`] on a thread of its own, abandoned after `timeout`: told to stop, which gix
/// notices between reads; one blocked in a read ends with the process.
fn clone_within(url: &str, reference: Option<&str>, into: &Path, timeout: Duration) -> Result<(), String> {
    let interrupt = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let (url_owned, reference_owned, into_owned) = (url.to_string(), reference.map(str::to_string), into.to_path_buf());
    let flag = interrupt.clone();
    std::thread::Builder::new()
        .name("tend-download".into())
        .spawn(move || {
            let _ = tx.send(clone(&url_owned, reference_owned.as_deref(), &into_owned, &flag));
        })
        .map_err(|e| format!("cannot start the download: {e}"))?;
    match rx.recv_timeout(timeout) {
        Ok(done) => done,
        Err(_) => {
            interrupt.store(true, Ordering::Relaxed);
            Err(format!("no answer within {} s (--download-timeout)", timeout.as_secs_f64()))
        }
    }
}

fn clone(url: &str, reference: Option<&str>, into: &Path, interrupt: &AtomicBool) -> Result<(), String> {
    let mut prepare = gix::prepare_clone(url, into).map_err(|e| e.to_string())?;
    prepare = match reference {
        Some(r) if r.len() == 40 && r.bytes().all(|b| b.is_ascii_hexdigit()) => {
            prepare.with_revision(Some(r)).map_err(|e| e.to_string())?
        }
        Some(r) => prepare.with_ref_name(Some(r)).map_err(|e| format!("`{r}` is not a ref name: {e}"))?,
        None => prepare,
    };
    let (mut checkout, _) = prepare.fetch_then_checkout(gix::progress::Discard, interrupt).map_err(|e| chain(&e))?;
    let (repo, _) = checkout.main_worktree(gix::progress::Discard, interrupt).map_err(|e| chain(&e))?;
    if repo.head_id().is_err() {
        return Err("the repository is empty".into());
    }
    Ok(())
}

/// An error with its causes, one after the other.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut at = e.source();
    while let Some(cause) = at {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        at = cause.source();
    }
    out
}
