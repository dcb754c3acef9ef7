//! Remote modules on disk: where imports by URL are looked for (the module path) and
//! fetching a missing one with git (`--download`), through gitoxide, never a `git` process.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::AtomicBool;

/// The deploy path under which the front end sees the module path (`--module-path`). A
/// deploy bundles the modules a program uses there, so an agent finds them in the deploy.
pub const MOUNT: &str = "/.modules/";

/// Where a command finds imports by URL and whether it fetches missing ones.
#[derive(Clone, Debug, Default)]
pub struct Modules {
    /// The module path's directory (`--module-path`, `MGMT_MODULE_PATH`, else
    /// `<state dir>/modules/`); `None`: the program's own `.modules/`, as in a deploy.
    pub dir: Option<PathBuf>,
    /// `--download`: clone a module missing from the module path.
    pub download: bool,
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
pub fn fetch(url: &str, reference: Option<&str>, dest: &Path) -> Result<(), String> {
    let parent = dest.parent().ok_or_else(|| format!("`{}` has no parent directory", dest.display()))?;
    std::fs::create_dir_all(parent).map_err(|e| format!("cannot make `{}`: {e}", parent.display()))?;
    let name = dest.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let staging = parent.join(format!(".{name}.download-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    tracing::info!(%url, reference = reference.unwrap_or("(default branch)"), dest = %dest.display(), "downloading a module");
    let cloned = clone(url, reference, &staging);
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

fn clone(url: &str, reference: Option<&str>, into: &Path) -> Result<(), String> {
    let interrupt = AtomicBool::new(false);
    let mut prepare = gix::prepare_clone(url, into).map_err(|e| e.to_string())?;
    prepare = match reference {
        Some(r) if r.len() == 40 && r.bytes().all(|b| b.is_ascii_hexdigit()) => {
            prepare.with_revision(Some(r)).map_err(|e| e.to_string())?
        }
        Some(r) => prepare.with_ref_name(Some(r)).map_err(|e| format!("`{r}` is not a ref name: {e}"))?,
        None => prepare,
    };
    let (mut checkout, _) = prepare.fetch_then_checkout(gix::progress::Discard, &interrupt).map_err(|e| chain(&e))?;
    let (repo, _) = checkout.main_worktree(gix::progress::Discard, &interrupt).map_err(|e| chain(&e))?;
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
