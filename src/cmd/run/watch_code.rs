//! Live editing: watches the program's source files (their directories, so editors that
//! replace a file by rename are seen) and reports a change once writes have settled. The
//! watch is a subscription to the process's one inotify hub (`resources::util::watch`).
//!
//! A save is read only once it is complete: a file written in place (opened with
//! `O_TRUNC`, written, closed) is half-written, often empty, until its writer closes it,
//! and compiling it then would swap in a graph without most of the resources (stopping
//! them, and re-running `exec`s when the full file comes). So a modified file counts as
//! settled once it was closed after writing (or replaced by a rename) and nothing
//! happened for [`SETTLE`]; a writer that keeps the file open for [`OPEN_LIMIT`] is
//! not waited for any longer. A change that arrives while the sources are being read (a
//! new save truncating a file under the reader) drops what was read
//! ([`CodeWatcher::changed_meanwhile`]); and the reload reads each file under a read lease
//! (`funcs::lease::read_leased`), which tells a save still in progress and makes a new
//! one wait until the reading is done, whatever the events' delays.
//!
//! When the kernel drops events (its queue overflowed, as a burst of 100,000 files written
//! next to the program can make it), the sources are compared with what was compiled
//! instead: only a changed, removed or new source reloads the program, not the burst.

use lang::span::SourceMap;
use resources::util::watch::{Change, EventWatch, FileWatch, PathEvent};
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long to wait after a change for further writes before recompiling.
pub const SETTLE: Duration = Duration::from_millis(50);

/// How long a file being written in place (modified, not yet closed) holds the reload back.
pub const OPEN_LIMIT: Duration = Duration::from_secs(5);

pub struct CodeWatcher {
    /// The subscription to the source directories; replaced when they change.
    watch: EventWatch,
    /// Source files on disk, with a digest of the text last compiled from each.
    files: BTreeMap<PathBuf, u64>,
    /// Directories being watched.
    dirs: BTreeSet<PathBuf>,
    /// A relevant change seen, and when the burst it started counts as settled.
    settling: Option<(PathBuf, tokio::time::Instant)>,
    /// Relevant files written but not closed yet, and since when.
    open_writes: std::collections::BTreeMap<PathBuf, tokio::time::Instant>,
}

impl CodeWatcher {
    /// Watches the files of `sources`; `None` (after a warning) when inotify is unavailable.
    pub fn new(root: &Path, sources: &SourceMap) -> Option<CodeWatcher> {
        let watch = match FileWatch::events(Vec::new()) {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(error = %e.message, "cannot watch the program's files; live editing is off");
                return None;
            }
        };
        let mut w = CodeWatcher {
            watch,
            files: BTreeMap::new(),
            dirs: BTreeSet::new(),
            settling: None,
            open_writes: std::collections::BTreeMap::new(),
        };
        w.extend(root, sources);
        Some(w)
    }

    /// Watches exactly the files of `sources` (after a successful reload).
    pub fn update(&mut self, root: &Path, sources: &SourceMap) {
        self.files.clear();
        self.extend(root, sources);
    }

    /// Records `text` as what was last compiled from the program's file `file` (a live edit
    /// compiled alone), for the comparison after lost events.
    pub fn compiled(&mut self, root: &Path, file: &lang::span::SourceFile, text: &str) {
        self.files.insert(source_path(root, file).components().collect(), digest(text.as_bytes()));
    }

    /// Also watches the files of `sources` (e.g. a new import of code that failed).
    pub fn extend(&mut self, root: &Path, sources: &SourceMap) {
        let before = self.dirs.len();
        for (_, f) in sources.files() {
            let path = source_path(root, f);
            if let Some(dir) = path.parent() {
                self.dirs.insert(dir.components().collect());
            }
            self.files.insert(path.components().collect(), digest(f.text.as_bytes()));
        }
        if self.dirs.len() != before {
            // The new subscription is armed before the old one goes: no change falls between.
            match FileWatch::events(self.dirs.iter().cloned().collect()) {
                Ok(watch) => {
                    // Events the old subscription saw are still to be settled.
                    while let Some(ev) = self.watch.try_next() {
                        self.observe(ev);
                    }
                    self.watch = watch;
                }
                Err(e) => tracing::warn!(error = %e.message, "cannot watch the source directories"),
            }
        }
        tracing::debug!(files = self.files.len(), dirs = self.dirs.len(), "watching the program's sources");
    }

    /// Whether an event concerns the program: one of its files, any `.mcl` or
    /// `metadata.yaml` in a watched directory (a module directory may gain files), a
    /// watched directory itself (made again), or lost events when the sources on disk are no
    /// longer those compiled.
    fn relevant(&self, ev: &PathEvent) -> bool {
        let p = &ev.path;
        if ev.change == Change::Lost {
            let differ = self.sources_differ();
            if !differ {
                tracing::debug!(dir = %p.display(), "file events were lost; the sources are as compiled");
            }
            return differ;
        }
        self.files.contains_key(p) || self.dirs.contains(p) || is_source_name(p)
    }

    /// Whether a source file changed or went away since it was compiled, or a watched
    /// directory holds a source the program does not have yet (an event for it may be among
    /// those lost).
    fn sources_differ(&self) -> bool {
        let changed = self.files.iter().any(|(path, was)| std::fs::read(path).map_or(true, |now| digest(&now) != *was));
        changed
            || self.dirs.iter().any(|dir| {
                std::fs::read_dir(dir).map_or(true, |entries| {
                    entries.flatten().any(|e| {
                        let path: PathBuf = e.path().components().collect();
                        is_source_name(&path) && !self.files.contains_key(&path)
                    })
                })
            })
    }

    /// Takes one event into the burst being settled; whether it was relevant.
    fn observe(&mut self, ev: PathEvent) -> bool {
        if !self.relevant(&ev) {
            return false;
        }
        self.note(&ev.path, ev.change);
        let first = self.settling.take().map_or(ev.path, |(first, _)| first);
        self.settling = Some((first, tokio::time::Instant::now() + SETTLE));
        true
    }

    /// Notes what happened to a relevant path: a write opens it, a close or any other
    /// change (a rename over it, a removal) ends that.
    fn note(&mut self, path: &Path, change: Change) {
        match change {
            Change::Written => {
                self.open_writes.entry(path.to_path_buf()).or_insert_with(tokio::time::Instant::now);
            }
            Change::Closed | Change::Other => {
                self.open_writes.remove(path);
            }
            Change::Lost => self.open_writes.clear(),
        }
    }

    /// When the current burst counts as settled: [`SETTLE`] after its last event, but not
    /// before every file written in place was closed (or [`OPEN_LIMIT`] passed).
    fn settles_at(&self, quiet_at: tokio::time::Instant) -> tokio::time::Instant {
        let open_until = self.open_writes.values().map(|since| *since + OPEN_LIMIT).max();
        open_until.map_or(quiet_at, |until| until.max(quiet_at))
    }

    /// Whether a source changed after [`CodeWatcher::next`] reported the last change, that
    /// is while the sources were being read: a writer may have truncated a file under the
    /// reader. The change starts a new burst, so what was read is dropped and the next
    /// settled change is read again.
    pub fn changed_meanwhile(&mut self) -> bool {
        let mut changed = false;
        while let Some(ev) = self.watch.try_next() {
            changed |= self.observe(ev);
        }
        changed
    }

    /// The next relevant change, once settled (see [`CodeWatcher::settles_at`]).
    /// Cancel-safe: the main loop drops this future whenever another event comes first, so
    /// the state of a settling burst lives in `self`.
    async fn next(&mut self) -> Option<PathBuf> {
        loop {
            match self.settling.clone() {
                None => {
                    let ev = self.watch.next().await?;
                    self.observe(ev);
                }
                Some((_, quiet_at)) => {
                    match tokio::time::timeout_at(self.settles_at(quiet_at), self.watch.next()).await {
                        // Unrelated activity in the same directory does not hold the reload back.
                        Ok(Some(ev)) => {
                            self.observe(ev);
                        }
                        Ok(None) => return None,
                        Err(_) => {
                            let first = self.settling.take().map(|(first, _)| first)?;
                            if !self.open_writes.is_empty() {
                                tracing::warn!(
                                    files = ?self.open_writes.keys().collect::<Vec<_>>(),
                                    "a source file is still open for writing; reading it anyway"
                                );
                                self.open_writes.clear();
                            }
                            return Some(first);
                        }
                    }
                }
            }
        }
    }
}

/// A name a source of the program may have: `*.mcl` or a module's `metadata.yaml`.
fn is_source_name(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "mcl") || path.file_name().is_some_and(|n| n == "metadata.yaml")
}

/// Where a source file is on disk.
fn source_path(root: &Path, file: &lang::span::SourceFile) -> PathBuf {
    file.real_path.clone().unwrap_or_else(|| root.join(file.name.trim_start_matches('/')))
}

/// What identifies a source's text (a change of it reloads the program).
fn digest(text: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// Why the program reloads: [`SOURCES`] or [`SIGHUP`].
pub type Reason = &'static str;
/// A settled change of the program's sources.
pub const SOURCES: Reason = "source changed";
/// SIGHUP: compile and evaluate everything again, whatever changed.
pub const SIGHUP: Reason = "SIGHUP";

/// Waits for a reason to reload: a settled change of the sources or SIGHUP.
pub async fn changed(watcher: &mut Option<CodeWatcher>, hup: &mut tokio::signal::unix::Signal) -> Reason {
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
        _ = from_files => SOURCES,
        _ = hup.recv() => SIGHUP,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lang::span::SourceFile;

    fn lost(dir: &Path) -> PathEvent {
        PathEvent { path: dir.components().collect(), change: Change::Lost }
    }

    /// Lost events reload the program only when a source differs from what was compiled:
    /// its text changed, it went away, or a new source appeared in a watched directory.
    #[tokio::test]
    async fn lost_events_count_only_when_the_sources_differ_from_what_was_compiled() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main.mcl");
        std::fs::write(&main, "$x = 1\n").unwrap();
        let mut sources = SourceMap::new();
        let mut file = SourceFile::new("/main.mcl", "$x = 1\n");
        file.real_path = Some(main.clone());
        sources.add(file);
        let Some(w) = CodeWatcher::new(dir.path(), &sources) else {
            eprintln!("skipped: inotify is unavailable here");
            return;
        };
        assert!(!w.relevant(&lost(dir.path())), "nothing changed");
        // Managed files written next to the program are not sources.
        std::fs::create_dir(dir.path().join("root")).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        assert!(!w.relevant(&lost(dir.path())));

        std::fs::write(&main, "$x = 2\n").unwrap();
        assert!(w.relevant(&lost(dir.path())), "the text changed");
        std::fs::write(&main, "$x = 1\n").unwrap();
        assert!(!w.relevant(&lost(dir.path())), "the text is as compiled again");

        std::fs::write(dir.path().join("more.mcl"), "").unwrap();
        assert!(w.relevant(&lost(dir.path())), "a new source in the module's directory");
        std::fs::remove_file(dir.path().join("more.mcl")).unwrap();

        std::fs::remove_file(&main).unwrap();
        assert!(w.relevant(&lost(dir.path())), "the main file is gone");
    }
}
