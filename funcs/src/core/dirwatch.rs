//! One process-wide inotify watcher shared by every file-watching built-in
//! (`os.readfile`, `os.file_exists`, `os.user_exists`): a program that watches a
//! thousand files uses one inotify instance, not a thousand (the default per-user limit
//! is 128).
//!
//! Locking: the watcher's event callback only takes the subscriber table; adding and
//! removing watches only takes the watch table. notify's `watch()` may wait for its
//! event thread, so the two must never be held together.

use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, RwLock};
use tokio::sync::mpsc;

type Subscribers = HashMap<PathBuf, Vec<(u64, mpsc::UnboundedSender<()>)>>;

/// Per directory: how many subscribers rely on the watch, and its generation.
struct Watched {
    refs: usize,
    generation: u64,
}

struct Watches {
    watcher: Option<RecommendedWatcher>,
    dirs: HashMap<PathBuf, Watched>,
    next_generation: u64,
}

fn subscribers() -> &'static RwLock<Subscribers> {
    static S: OnceLock<RwLock<Subscribers>> = OnceLock::new();
    S.get_or_init(|| RwLock::new(HashMap::new()))
}

fn notify_dir(dir: &Path) {
    let subs = subscribers().read().unwrap_or_else(|e| e.into_inner());
    if let Some(list) = subs.get(dir) {
        for (_, tx) in list {
            let _ = tx.send(());
        }
    }
}

fn watches() -> &'static Mutex<Watches> {
    static W: OnceLock<Mutex<Watches>> = OnceLock::new();
    W.get_or_init(|| {
        let watcher = notify::recommended_watcher(|res: notify::Result<notify::Event>| {
            let Ok(ev) = res else { return };
            for p in &ev.paths {
                notify_dir(p);
                if let Some(parent) = p.parent() {
                    notify_dir(parent);
                }
            }
        })
        .ok();
        Mutex::new(Watches { watcher, dirs: HashMap::new(), next_generation: 1 })
    })
}

/// `a/b/` and `a/b` are the same directory; an empty parent is `.`.
fn normalize(dir: &Path) -> PathBuf {
    let p: PathBuf = dir.components().collect();
    if p.as_os_str().is_empty() { PathBuf::from(".") } else { p }
}

/// A subscription to changes inside one directory.
pub struct DirWatch {
    dir: PathBuf,
    id: u64,
    rx: mpsc::UnboundedReceiver<()>,
    /// The generation of the watch this subscription counts in, if any.
    joined: Option<u64>,
}

impl DirWatch {
    pub fn new(dir: &Path) -> DirWatch {
        static IDS: AtomicU64 = AtomicU64::new(1);
        let dir = normalize(dir);
        let id = IDS.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::unbounded_channel();
        subscribers().write().unwrap_or_else(|e| e.into_inner()).entry(dir.clone()).or_default().push((id, tx));
        let mut w = DirWatch { dir, id, rx, joined: None };
        w.ensure();
        w
    }

    /// Makes sure the directory is watched; `false` when it can't be (missing
    /// directory, no inotify), in which case the caller should poll.
    pub fn ensure(&mut self) -> bool {
        let mut ws = watches().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(g) = self.joined {
            if ws.dirs.get(&self.dir).is_some_and(|w| w.generation == g) && self.dir.is_dir() {
                return true;
            }
            // The directory went away (its watch is gone with it): start over.
            self.leave(&mut ws);
            if ws.dirs.remove(&self.dir).is_some()
                && let Some(watcher) = ws.watcher.as_mut()
            {
                let _ = watcher.unwatch(&self.dir);
            }
        }
        if let Some(w) = ws.dirs.get_mut(&self.dir) {
            w.refs += 1;
            self.joined = Some(w.generation);
            return true;
        }
        let Some(watcher) = ws.watcher.as_mut() else { return false };
        if watcher.watch(&self.dir, RecursiveMode::NonRecursive).is_err() {
            return false;
        }
        let generation = ws.next_generation;
        ws.next_generation += 1;
        ws.dirs.insert(self.dir.clone(), Watched { refs: 1, generation });
        self.joined = Some(generation);
        true
    }

    fn leave(&mut self, ws: &mut Watches) {
        let Some(g) = self.joined.take() else { return };
        let Some(w) = ws.dirs.get_mut(&self.dir) else { return };
        if w.generation != g {
            return;
        }
        w.refs -= 1;
        if w.refs == 0 {
            ws.dirs.remove(&self.dir);
            if let Some(watcher) = ws.watcher.as_mut() {
                let _ = watcher.unwatch(&self.dir);
            }
        }
    }

    /// Waits for the next change notification, then drains a burst of them.
    pub async fn changed(&mut self) {
        if self.rx.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
        while self.rx.try_recv().is_ok() {}
    }
}

impl Drop for DirWatch {
    fn drop(&mut self) {
        {
            let mut subs = subscribers().write().unwrap_or_else(|e| e.into_inner());
            if let Some(list) = subs.get_mut(&self.dir) {
                list.retain(|(id, _)| *id != self.id);
                if list.is_empty() {
                    subs.remove(&self.dir);
                }
            }
        }
        let mut ws = watches().lock().unwrap_or_else(|e| e.into_inner());
        self.leave(&mut ws);
    }
}

/// How many directories are being watched right now (for tests).
pub fn watched_dirs() -> usize {
    watches().lock().unwrap_or_else(|e| e.into_inner()).dirs.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn subscriptions_share_a_watch_and_release_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = DirWatch::new(dir.path());
        let mut b = DirWatch::new(&dir.path().join("")); // same directory, other spelling
        assert!(a.ensure() && b.ensure());
        assert_eq!(watched_dirs(), 1);
        std::fs::write(dir.path().join("x"), "1").unwrap();
        for w in [&mut a, &mut b] {
            tokio::time::timeout(Duration::from_secs(2), w.changed()).await.expect("no change seen");
        }
        drop(a);
        assert_eq!(watched_dirs(), 1);
        drop(b);
        assert_eq!(watched_dirs(), 0);
        let mut missing = DirWatch::new(&dir.path().join("nope"));
        assert!(!missing.ensure());
        assert_eq!(watched_dirs(), 0);
    }
}
