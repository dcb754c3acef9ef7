//! Live editing: watches the program's source files (their directories, so editors that
//! replace a file by rename are seen) and reports a change once writes have settled.

use lang::span::SourceMap;
use notify::{RecursiveMode, Watcher};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::mpsc;

/// How long to wait after a change for further writes before recompiling.
pub const SETTLE: Duration = Duration::from_millis(50);

pub struct CodeWatcher {
    watcher: notify::RecommendedWatcher,
    rx: mpsc::UnboundedReceiver<PathBuf>,
    /// Source files on disk.
    files: BTreeSet<PathBuf>,
    /// Directories being watched.
    dirs: BTreeSet<PathBuf>,
    /// A relevant change seen, and when the burst it started counts as settled.
    settling: Option<(PathBuf, tokio::time::Instant)>,
}

impl CodeWatcher {
    /// Watches the files of `sources`; `None` (after a warning) when inotify is unavailable.
    pub fn new(root: &Path, sources: &SourceMap) -> Option<CodeWatcher> {
        let (tx, rx) = mpsc::unbounded_channel();
        let handler = move |res: notify::Result<notify::Event>| {
            if let Ok(ev) = res {
                if matches!(
                    ev.kind,
                    notify::EventKind::Access(
                        notify::event::AccessKind::Open(_)
                            | notify::event::AccessKind::Read
                            | notify::event::AccessKind::Close(notify::event::AccessMode::Read)
                    )
                ) {
                    return;
                }
                for p in ev.paths {
                    let _ = tx.send(p);
                }
            }
        };
        let watcher = match notify::recommended_watcher(handler) {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch the program's files; live editing is off");
                return None;
            }
        };
        let mut w = CodeWatcher { watcher, rx, files: BTreeSet::new(), dirs: BTreeSet::new(), settling: None };
        w.extend(root, sources);
        Some(w)
    }

    /// Watches exactly the files of `sources` (after a successful reload).
    pub fn update(&mut self, root: &Path, sources: &SourceMap) {
        self.files.clear();
        self.extend(root, sources);
    }

    /// Also watches the files of `sources` (e.g. a new import of code that failed).
    pub fn extend(&mut self, root: &Path, sources: &SourceMap) {
        for (_, f) in sources.files() {
            let path = f.real_path.clone().unwrap_or_else(|| root.join(f.name.trim_start_matches('/')));
            if let Some(dir) = path.parent()
                && !self.dirs.contains(dir)
            {
                match self.watcher.watch(dir, RecursiveMode::NonRecursive) {
                    Ok(()) => {
                        self.dirs.insert(dir.to_path_buf());
                    }
                    Err(e) => tracing::warn!(dir = %dir.display(), error = %e, "cannot watch a source directory"),
                }
            }
            self.files.insert(path);
        }
        tracing::debug!(files = self.files.len(), dirs = self.dirs.len(), "watching the program's sources");
    }

    /// Whether a changed path concerns the program: one of its files, or any `.mcl` or
    /// `metadata.yaml` in a watched directory (a module directory may gain files).
    fn relevant(&self, p: &Path) -> bool {
        self.files.contains(p)
            || p.extension().is_some_and(|e| e == "mcl")
            || p.file_name().is_some_and(|n| n == "metadata.yaml")
    }

    /// The next relevant change, after writes have settled for [`SETTLE`]. Cancel-safe:
    /// the main loop drops this future whenever another event comes first, so the state
    /// of a settling burst lives in `self`.
    async fn next(&mut self) -> Option<PathBuf> {
        loop {
            match self.settling.clone() {
                None => {
                    let p = self.rx.recv().await?;
                    if self.relevant(&p) {
                        self.settling = Some((p, tokio::time::Instant::now() + SETTLE));
                    }
                }
                Some((first, quiet_at)) => match tokio::time::timeout_at(quiet_at, self.rx.recv()).await {
                    // Unrelated activity in the same directory does not hold the reload back.
                    Ok(Some(q)) if self.relevant(&q) => {
                        self.settling = Some((first, tokio::time::Instant::now() + SETTLE));
                    }
                    Ok(Some(_)) => {}
                    Ok(None) => return None,
                    Err(_) => {
                        self.settling = None;
                        return Some(first);
                    }
                },
            }
        }
    }
}

/// Waits for a reason to reload: a settled change of the sources or SIGHUP.
pub async fn changed(watcher: &mut Option<CodeWatcher>, hup: &mut tokio::signal::unix::Signal) -> &'static str {
    let from_files = async {
        match watcher {
            Some(w) => match w.next().await {
                Some(p) => {
                    tracing::debug!(path = %p.display(), "source changed");
                }
                None => std::future::pending::<()>().await,
            },
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = from_files => "source changed",
        _ = hup.recv() => "SIGHUP",
    }
}
