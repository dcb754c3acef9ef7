//! The process-wide file watcher: one inotify instance (notify 8) multiplexing every path
//! any resource watches, so a large graph does not run into `max_user_instances`.
//!
//! A subscription names target paths. For each target the hub watches the target itself
//! when it is a directory (recursively if asked) and its nearest existing ancestor
//! directory otherwise, so creation, deletion and atomic replacement are all seen, even of
//! paths that do not exist yet. After every event a subscription re-resolves its watch
//! points (a directory may have appeared). Events are spurious-friendly: anything touching a
//! target, something inside it, or one of its ancestors counts.
//!
//! Lock order: the callback (on notify's thread) takes only `subs`; code that calls into
//! the watcher takes `watcher` and never `subs` at the same time, because notify's
//! `watch()` waits for its event thread, which may be inside the callback.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::lock;
use engine::ResError;
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::Notify;

/// A live subscription; dropping it releases its watch points.
pub struct FileWatch {
    id: u64,
    /// Holds at most one pending wake-up, so a burst of events coalesces into one.
    wake: Arc<Notify>,
}

struct Hub {
    /// Created lazily on first use; `None` forever if inotify is unavailable.
    watcher: Mutex<Option<RecommendedWatcher>>,
    /// Reference counts of watched directories, with whether any user wants recursion.
    dirs: Mutex<HashMap<PathBuf, DirWatch>>,
    subs: Arc<Mutex<Subs>>,
    next_id: AtomicU64,
}

/// Every live subscription, plus hash indexes from paths to subscriptions, so an event
/// costs a few lookups (one per path component) instead of a scan of every subscription.
#[derive(Default)]
struct Subs {
    by_id: HashMap<u64, Sub>,
    by_target: HashMap<PathBuf, Vec<u64>>,
    /// For every proper ancestor of a target, how many targets lie below it: an event on
    /// such a directory (removed, moved) concerns them all.
    above: HashMap<PathBuf, usize>,
}

impl Subs {
    fn insert(&mut self, id: u64, sub: Sub) {
        for target in &sub.targets {
            self.by_target.entry(target.clone()).or_default().push(id);
            for dir in target.ancestors().skip(1) {
                *self.above.entry(dir.to_path_buf()).or_default() += 1;
            }
        }
        self.by_id.insert(id, sub);
    }

    fn remove(&mut self, id: u64) -> Option<Sub> {
        let sub = self.by_id.remove(&id)?;
        for target in &sub.targets {
            if let Some(ids) = self.by_target.get_mut(target) {
                ids.retain(|i| *i != id);
                if ids.is_empty() {
                    self.by_target.remove(target);
                }
            }
            for dir in target.ancestors().skip(1) {
                if let Some(n) = self.above.get_mut(dir) {
                    *n -= 1;
                    if *n == 0 {
                        self.above.remove(dir);
                    }
                }
            }
        }
        Some(sub)
    }

    /// Calls `f` with every subscription an event on `path` can concern: one whose target is
    /// `path` or lies below it (moved or removed with it), and a recursive one whose target
    /// is an ancestor of `path`. A plain directory target does not care about its entries:
    /// otherwise every file written into a managed directory would wake the directory's
    /// resource, which re-pokes all its children (quadratic at scale).
    fn concerned(&self, path: &Path, mut f: impl FnMut(&Sub)) {
        let subs = |ids: &Vec<u64>| ids.iter().filter_map(|id| self.by_id.get(id)).collect::<Vec<_>>();
        if let Some(ids) = self.by_target.get(path) {
            subs(ids).into_iter().for_each(&mut f);
        }
        if self.above.contains_key(path) {
            // Rare (a directory holding targets changed itself): every target below it.
            for (target, ids) in &self.by_target {
                if target != path && target.starts_with(path) {
                    subs(ids).into_iter().for_each(&mut f);
                }
            }
        }
        for ancestor in path.ancestors().skip(1) {
            if let Some(ids) = self.by_target.get(ancestor) {
                subs(ids).into_iter().filter(|s| s.recursive).for_each(&mut f);
            }
        }
    }
}

#[derive(Default)]
struct DirWatch {
    plain: usize,
    recursive: usize,
}

struct Sub {
    targets: Vec<PathBuf>,
    recursive: bool,
    wake: Arc<Notify>,
    /// Directories this subscription holds watches on, with the recursion used.
    points: Vec<(PathBuf, bool)>,
}

fn hub() -> &'static Hub {
    static HUB: OnceLock<Hub> = OnceLock::new();
    HUB.get_or_init(|| Hub {
        watcher: Mutex::new(None),
        dirs: Mutex::new(HashMap::new()),
        subs: Arc::new(Mutex::new(Subs::default())),
        next_id: AtomicU64::new(1),
    })
}

impl FileWatch {
    /// Watches `targets` (absolute paths). `recursive`: changes anywhere below a directory
    /// target count.
    pub fn new(targets: Vec<PathBuf>, recursive: bool) -> Result<FileWatch, ResError> {
        let hub = hub();
        hub.ensure_watcher()?;
        let wake = Arc::new(Notify::new());
        let id = hub.next_id.fetch_add(1, Ordering::SeqCst);
        lock(&hub.subs).insert(id, Sub { targets, recursive, wake: wake.clone(), points: Vec::new() });
        hub.rearm(id)?;
        Ok(FileWatch { id, wake })
    }

    /// Waits for the next change (coalescing a burst), then re-resolves the watch points.
    pub async fn changed(&mut self) -> Result<(), ResError> {
        self.wake.notified().await;
        hub().rearm(self.id)
    }
}

/// A complete watch loop for resources whose state lives in `targets`: one startup event,
/// then one per change, until cancelled.
pub fn watch_loop(
    targets: Vec<PathBuf>,
    recursive: bool,
    ctx: engine::WatchCtx,
) -> futures::future::BoxFuture<'static, Result<(), ResError>> {
    Box::pin(async move {
        let mut watch = if targets.is_empty() { None } else { Some(FileWatch::new(targets, recursive)?) };
        ctx.event();
        loop {
            tokio::select! {
                changed = async { match watch.as_mut() { Some(w) => w.changed().await, None => std::future::pending().await } } => {
                    changed?;
                    ctx.event();
                }
                _ = ctx.cancelled() => return Ok(()),
            }
        }
    })
}

/// Events that only observe a file.
fn is_read_only(kind: &notify::EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode};
    matches!(
        kind,
        notify::EventKind::Access(
            AccessKind::Open(_) | AccessKind::Read | AccessKind::Close(AccessMode::Read | AccessMode::Execute)
        )
    )
}

impl Drop for FileWatch {
    fn drop(&mut self) {
        let hub = hub();
        let points = lock(&hub.subs).remove(self.id).map(|s| s.points).unwrap_or_default();
        hub.release(&points);
    }
}

impl Hub {
    fn ensure_watcher(&self) -> Result<(), ResError> {
        let mut watcher = lock(&self.watcher);
        if watcher.is_some() {
            return Ok(());
        }
        let subs = self.subs.clone();
        let created = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            // notify 8 watches IN_OPEN: a check-apply reading the file would wake its own
            // watch forever. Opens, reads and read-only closes change nothing (and are
            // dropped before taking the lock the resources' watches contend for).
            if matches!(&event, Ok(event) if is_read_only(&event.kind)) {
                return;
            }
            let subs = lock(&subs);
            match event {
                Ok(event) => {
                    for path in &event.paths {
                        subs.concerned(path, |sub| sub.wake.notify_one());
                    }
                }
                // Overflow or a watcher error: tell everyone, spurious events are fine.
                Err(_) => {
                    for sub in subs.by_id.values() {
                        sub.wake.notify_one();
                    }
                }
            }
        })
        .map_err(|e| ResError::new(format!("cannot start the file watcher: {e}")))?;
        *watcher = Some(created);
        Ok(())
    }

    /// Recomputes a subscription's watch points and adjusts the shared watches.
    ///
    /// Arming a directory races with changes inside it: a subdirectory created between the
    /// `lstat` that chose the watch point and the moment inotify watches it sends no event
    /// anywhere we look, and the subscription would stay armed one level too high for good.
    /// So after moving the watches the points are resolved again; while they still move,
    /// the subscription re-arms and gets a (spurious-friendly) wake-up, since its target
    /// changed unseen.
    fn rearm(&self, id: u64) -> Result<(), ResError> {
        for _ in 0..REARM_ROUNDS {
            let (wanted, old, wake) = {
                let mut subs = lock(&self.subs);
                let Some(sub) = subs.by_id.get_mut(&id) else { return Ok(()) };
                let (wanted, complete) = sub_points(sub);
                let old = std::mem::replace(&mut sub.points, wanted.clone());
                (wanted, old, (!complete).then(|| sub.wake.clone()))
            };
            if wanted == old {
                return Ok(());
            }
            let result = self.acquire(&wanted);
            self.release(&old);
            result?;
            // Every target existed: its parent was watched already, nothing can have
            // appeared unseen.
            let Some(wake) = wake else { return Ok(()) };
            let settled = {
                let subs = lock(&self.subs);
                subs.by_id.get(&id).is_none_or(|sub| sub_points(sub).0 == wanted)
            };
            if settled {
                return Ok(());
            }
            wake.notify_one();
        }
        Ok(())
    }

    fn acquire(&self, points: &[(PathBuf, bool)]) -> Result<(), ResError> {
        let mut dirs = lock(&self.dirs);
        let mut watcher = lock(&self.watcher);
        let Some(watcher) = watcher.as_mut() else { return Err(ResError::new("file watcher is not running")) };
        for (dir, recursive) in points {
            let entry = dirs.entry(dir.clone()).or_default();
            let was = mode_of(entry);
            if *recursive {
                entry.recursive += 1;
            } else {
                entry.plain += 1;
            }
            let now = mode_of(entry);
            if was != now {
                if was.is_some() {
                    let _not_watched = watcher.unwatch(dir);
                }
                if let Some(mode) = now
                    && let Err(e) = watcher.watch(dir, mode)
                {
                    // The directory may have vanished meanwhile (the next event re-arms);
                    // anything else (e.g. the inotify watch limit) means missed events.
                    if matches!(&e.kind, notify::ErrorKind::PathNotFound)
                        || matches!(&e.kind, notify::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::NotFound)
                    {
                        tracing::debug!(path = %dir.display(), error = %e, "cannot watch");
                    } else {
                        tracing::warn!(path = %dir.display(), error = %e, "cannot watch; changes here will be missed");
                    }
                }
            }
        }
        Ok(())
    }

    fn release(&self, points: &[(PathBuf, bool)]) {
        let mut dirs = lock(&self.dirs);
        let mut watcher = lock(&self.watcher);
        for (dir, recursive) in points {
            let Some(entry) = dirs.get_mut(dir) else { continue };
            let was = mode_of(entry);
            if *recursive {
                entry.recursive = entry.recursive.saturating_sub(1);
            } else {
                entry.plain = entry.plain.saturating_sub(1);
            }
            let now = mode_of(entry);
            if was != now
                && let Some(w) = watcher.as_mut()
            {
                let _not_watched = w.unwatch(dir);
                if let Some(mode) = now {
                    let _vanished = w.watch(dir, mode);
                }
            }
            if now.is_none() {
                dirs.remove(dir);
            }
        }
    }
}

/// How often one re-arm follows a tree that keeps growing under it before leaving the rest to
/// the next event.
const REARM_ROUNDS: usize = 8;

/// The watch points a subscription needs now, without repeats, and whether every target
/// exists (so each is watched through its own parent).
fn sub_points(sub: &Sub) -> (Vec<(PathBuf, bool)>, bool) {
    let mut wanted: Vec<(PathBuf, bool)> = Vec::new();
    let mut complete = true;
    for target in &sub.targets {
        let (points, exists) = watch_points(target, sub.recursive);
        complete &= exists;
        for point in points {
            if !wanted.contains(&point) {
                wanted.push(point);
            }
        }
    }
    (wanted, complete)
}

fn mode_of(d: &DirWatch) -> Option<RecursiveMode> {
    if d.recursive > 0 {
        Some(RecursiveMode::Recursive)
    } else if d.plain > 0 {
        Some(RecursiveMode::NonRecursive)
    } else {
        None
    }
}

/// Where to watch for `target`, and whether the target's parent exists (so nothing on the
/// way to it can appear unseen).
///
/// A plain target is watched through its parent directory alone: the parent's watch
/// reports the target's creation, removal, replacement, writes and attribute changes, and
/// a plain directory target does not care about its entries. A recursive target that is a
/// directory is also watched itself, with everything below it. When the parent does not
/// exist yet, the nearest existing ancestor is watched, to see the path being made.
fn watch_points(target: &Path, recursive: bool) -> (Vec<(PathBuf, bool)>, bool) {
    let is_dir = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
    let mut points = Vec::new();
    if recursive && is_dir(target) {
        points.push((target.to_path_buf(), true));
    }
    let Some(parent) = target.parent() else {
        // The root directory: nothing above it to watch through.
        if points.is_empty() && is_dir(target) {
            points.push((target.to_path_buf(), false));
        }
        return (points, true);
    };
    let mut ancestor = Some(parent);
    while let Some(dir) = ancestor {
        if is_dir(dir) {
            points.push((dir.to_path_buf(), false));
            return (points, dir == parent);
        }
        ancestor = dir.parent();
    }
    (points, false)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    async fn expect_event(w: &mut FileWatch) {
        tokio::time::timeout(Duration::from_secs(5), w.changed()).await.expect("event in time").expect("watching");
    }

    #[tokio::test]
    async fn sees_a_file_created_inside_a_directory_that_appears_later() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a/b/file");
        let mut w = FileWatch::new(vec![target.clone()], false).unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        expect_event(&mut w).await;
        std::fs::create_dir(dir.path().join("a/b")).unwrap();
        expect_event(&mut w).await;
        std::fs::write(&target, "x").unwrap();
        expect_event(&mut w).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_tree_created_while_arming_is_followed_down_to_the_target() {
        // A deep path made level by level while the watch keeps re-arming: a level may appear
        // between choosing a watch point and watching it. Whatever the interleaving, once
        // the tree is made the watch must see the target itself go away.
        for round in 0..40u64 {
            let dir = tempfile::tempdir().unwrap();
            let target = dir.path().join("a/b/c/d/e/f/file");
            let mut w = FileWatch::new(vec![target.clone()], false).unwrap();
            let maker = {
                let target = target.clone();
                std::thread::spawn(move || {
                    let mut level = target.parent().unwrap().to_path_buf();
                    let mut levels = Vec::new();
                    while !level.exists() {
                        levels.push(level.clone());
                        level.pop();
                    }
                    for level in levels.into_iter().rev() {
                        std::fs::create_dir(&level).unwrap();
                        std::thread::sleep(Duration::from_micros(round * 7 % 60));
                    }
                    std::fs::write(&target, "x").unwrap();
                })
            };
            // Keep consuming wake-ups (each re-arms) until the tree is made and the watch is quiet.
            while !maker.is_finished() || tokio::time::timeout(Duration::from_millis(50), w.changed()).await.is_ok() {
                let _ = tokio::time::timeout(Duration::from_millis(1), w.changed()).await;
            }
            std::fs::remove_file(&target).unwrap();
            assert!(
                tokio::time::timeout(Duration::from_secs(2), w.changed()).await.is_ok(),
                "round {round}: the removal of the target went unseen"
            );
        }
    }

    #[tokio::test]
    async fn ignores_siblings_and_releases_watches_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("mine");
        let mut w = FileWatch::new(vec![target.clone()], false).unwrap();
        std::fs::write(dir.path().join("other"), "x").unwrap();
        assert!(tokio::time::timeout(Duration::from_millis(200), w.changed()).await.is_err());
        std::fs::write(&target, "x").unwrap();
        expect_event(&mut w).await;
        drop(w);
        assert!(!lock(&hub().dirs).contains_key(dir.path()));
    }

    #[tokio::test]
    async fn recursive_targets_see_deep_changes_and_targets_see_their_ancestor_vanish() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        std::fs::create_dir_all(tree.join("a/b")).unwrap();
        let mut deep = FileWatch::new(vec![tree.clone()], true).unwrap();
        let mut plain = FileWatch::new(vec![tree.clone()], false).unwrap();
        let mut inner = FileWatch::new(vec![tree.join("a/b/leaf")], false).unwrap();
        std::fs::write(tree.join("a/b/other"), "x").unwrap();
        expect_event(&mut deep).await;
        assert!(tokio::time::timeout(Duration::from_millis(200), plain.changed()).await.is_err());
        assert!(tokio::time::timeout(Duration::from_millis(200), inner.changed()).await.is_err());
        std::fs::remove_dir_all(tree.join("a")).unwrap();
        expect_event(&mut inner).await;
    }
}
