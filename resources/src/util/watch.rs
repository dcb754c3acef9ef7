//! The process-wide file watcher: one inotify instance, read by one thread, multiplexing
//! every path any resource watches, so a large graph does not run into
//! `max_user_instances`.
//!
//! A subscription names target paths. For each target the hub watches the target's parent
//! directory, and the target itself with everything below it when it is a directory watched
//! recursively; when the parent does not exist yet, its nearest existing ancestor, to see
//! the path being made. After an event that may have moved them (a directory on the way
//! appeared or vanished, a watch died) a subscription re-resolves its watch points; a
//! change of a target itself does not move them. Events are spurious-friendly: anything
//! touching a target, something inside it, or one of its ancestors counts.
//!
//! The watches ask only for changes (`MASK`): reading a file, as every check does, costs
//! the watcher nothing. A directory with a live watch is known to exist, so re-resolving a
//! subscription whose parent is watched needs no system call. A watch that dies (its
//! directory removed or moved away) is marked dead, and every subscription it served is
//! woken to re-resolve.
//!
//! A subscription may also ask for the events themselves ([`FileWatch::events`]): each
//! path an event names, with what happened to it (written, closed after writing, anything
//! else). Live editing uses that to tell a save in progress from a finished one; the
//! `os.readfile`-style functions get their watches through `funcs::api::Host`, so the
//! whole process has this one inotify instance.
//!
//! One lock (`state`) guards the subscriptions and the watches; the reader thread takes it
//! per batch of events. `inotify_add_watch` is a plain system call, so arming under the
//! lock never waits for the reader.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use engine::ResError;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, InotifyEvent, WatchDescriptor};
use tokio::sync::{Notify, mpsc};

use super::lock;

/// The hub's maps: keyed by path bytes and ids of the process's own making, so a fast
/// hash does (SipHash cost a measurable share of subscribing and releasing 10,000 files).
type Map<K, V> = engine::fasthash::FastMap<K, V>;

/// A live subscription; dropping it releases its watch points.
pub struct FileWatch {
    id: u64,
    wake: Arc<Signal>,
}

/// A path as the hub keeps it, by its bytes: one shared string for a target (its
/// subscription's list and the index of targets) and one for a watched directory (the watch
/// table and every subscription watching through it), since a large graph watches many
/// files of a few directories. A target given as an `Arc<str>` already spelt as the hub
/// spells paths is kept as it is, not copied: a file resource's path is the string its
/// name already holds.
pub type Spelt = Arc<[u8]>;

/// The path a [`Spelt`] string names.
pub fn spelt_path(spelt: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(spelt))
}

/// How the hub's maps look a path up.
fn key(path: &Path) -> &[u8] {
    path.as_os_str().as_bytes()
}

/// A target the caller names for a subscription.
pub enum Target {
    Path(PathBuf),
    /// A string the caller keeps anyway (a resource's name), which the hub then shares.
    Shared(Arc<str>),
}

impl Target {
    /// The target in the hub's one spelling (no trailing or doubled slashes, no `.`
    /// components: the maps are keyed by bytes), sharing the caller's string when it is
    /// spelt so already.
    fn spelt(self) -> Spelt {
        let path = match &self {
            Target::Path(path) => path.as_path(),
            Target::Shared(text) => Path::new(&**text),
        };
        let normal: PathBuf = path.components().collect();
        match self {
            Target::Shared(text) if key(&normal) == text.as_bytes() => Spelt::from(text),
            _ => Spelt::from(key(&normal)),
        }
    }
}

/// How the hub wakes a subscription: one allocation holding the flag and the waker.
struct Signal<W: ?Sized = dyn Wakes> {
    /// Set when an event may have moved the subscription's watch points (something on the
    /// way to a target was made or removed, a watch died), so the woken side re-resolves
    /// them. A change of a target itself, watched through its live parent, leaves the
    /// points as they are and costs no re-resolution.
    rearm: AtomicBool,
    how: W,
}

/// A subscription is woken through a `Notify` its owner awaits ([`FileWatch::changed`]), or
/// by a call, made on the watcher's thread with the hub locked ([`FileWatch::calling`]).
trait Wakes: Send + Sync {
    /// Called with the subscription's targets (so a call need not keep its own copy), and
    /// whether its watch points may have moved and wait to be re-resolved.
    fn wake(&self, targets: &[Spelt], moved: bool);
    /// The `Notify` a waiter awaits; `None` for a call.
    fn notify(&self) -> Option<&Notify>;
    /// Called with each event, for a subscription that asked for them
    /// ([`FileWatch::events`]); the others have no use for it.
    fn report(&self, _path: &Path, _change: Change) {}
}

/// Holds at most one pending wake-up, so a burst of events coalesces into one.
impl Wakes for Notify {
    fn wake(&self, _: &[Spelt], _: bool) {
        self.notify_one();
    }

    fn notify(&self) -> Option<&Notify> {
        Some(self)
    }
}

/// A waiter that also gets each event: where they go, beside the wake-up.
struct Reports {
    notify: Notify,
    events: mpsc::UnboundedSender<PathEvent>,
}

impl Wakes for Reports {
    fn wake(&self, _: &[Spelt], _: bool) {
        self.notify.notify_one();
    }

    fn notify(&self) -> Option<&Notify> {
        Some(&self.notify)
    }

    fn report(&self, path: &Path, change: Change) {
        let _ = self.events.send(PathEvent { path: path.to_path_buf(), change });
    }
}

/// A call made on each change.
struct Call<F>(F);

impl<F: Fn(&[Spelt], bool) + Send + Sync> Wakes for Call<F> {
    fn wake(&self, targets: &[Spelt], moved: bool) {
        (self.0)(targets, moved);
    }

    fn notify(&self) -> Option<&Notify> {
        None
    }
}

impl<W: Wakes + 'static> Signal<W> {
    fn new(how: W) -> Arc<Signal> {
        Arc::new(Signal { rearm: AtomicBool::new(false), how })
    }
}

impl Signal {
    fn wake(&self, rearm: bool, targets: &[Spelt]) {
        if rearm {
            self.rearm.store(true, Ordering::Release);
        }
        // A re-resolution still pending from an earlier wake-up counts too: until the owner
        // refreshes, the watch may look one level too high.
        let moved = rearm || self.rearm.load(Ordering::Acquire);
        self.how.wake(targets, moved);
    }
}

/// What a watch reports: changes of content, metadata and names, never reads.
const MASK: AddWatchFlags = AddWatchFlags::IN_MODIFY
    .union(AddWatchFlags::IN_ATTRIB)
    .union(AddWatchFlags::IN_CLOSE_WRITE)
    .union(AddWatchFlags::IN_MOVED_FROM)
    .union(AddWatchFlags::IN_MOVED_TO)
    .union(AddWatchFlags::IN_CREATE)
    .union(AddWatchFlags::IN_DELETE)
    .union(AddWatchFlags::IN_DELETE_SELF)
    .union(AddWatchFlags::IN_MOVE_SELF)
    .union(AddWatchFlags::IN_ONLYDIR);

/// Events that can change what lies below a path (so every target below it is concerned),
/// as opposed to a change of the path's own content or metadata.
const RESHAPES: AddWatchFlags = AddWatchFlags::IN_MOVED_FROM
    .union(AddWatchFlags::IN_MOVED_TO)
    .union(AddWatchFlags::IN_CREATE)
    .union(AddWatchFlags::IN_DELETE)
    .union(AddWatchFlags::IN_DELETE_SELF)
    .union(AddWatchFlags::IN_MOVE_SELF)
    .union(AddWatchFlags::IN_IGNORED);

struct Hub {
    /// Created with the reader thread on first use; an error forever if inotify is
    /// unavailable.
    inotify: OnceLock<Result<Arc<Inotify>, String>>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    subs: Subs,
    /// Every watched directory (and every one a subscription wants, watched or not).
    dirs: Map<Spelt, DirWatch>,
    /// The path of each live watch, to name what an event is about.
    by_wd: Map<WatchDescriptor, Spelt>,
    /// The kernel's queue overflowed (events were lost) since this moment, and the
    /// subscriptions are not told yet: [`read_loop`] tells them all once the storm quiets,
    /// so a storm that overflows the queue ten times wakes every subscription once or twice,
    /// not ten times (each a look at every watched file).
    lost_since: Option<std::time::Instant>,
    /// How many overflows that one telling covers, for the log.
    lost_count: u32,
}

/// Why a directory is watched, and its watch.
#[derive(Default)]
struct DirWatch {
    /// Subscriptions watching it for its entries.
    plain: usize,
    /// Subscriptions watching it and everything below it.
    recursive: usize,
    /// The live watch; `None` before arming and once it died.
    wd: Option<WatchDescriptor>,
    /// Entries looked up and found missing while the watch was live, and not named by any
    /// event since: they cannot have appeared unseen, so they need no second lookup (a cold
    /// start asks about one missing directory for each of thousands of files).
    absent: HashSet<OsString>,
}

/// Every live subscription, plus hash indexes from paths to subscriptions, so an event
/// costs a few lookups (one per path component) instead of a scan of every subscription.
#[derive(Default)]
struct Subs {
    /// Each subscription at the index its id names (a slab: 64 bytes a subscription, where
    /// a map by id spent half as much again on its hashing and free room). The id of a
    /// dropped subscription is reused: it was known only to the [`FileWatch`] dropped.
    slots: Vec<Option<Sub>>,
    /// The free slots.
    free: Vec<u64>,
    by_target: Map<Spelt, Ids>,
    /// For every proper ancestor of a target, how many targets lie below it: an event on
    /// such a directory (removed, moved) concerns them all.
    above: Map<OsString, usize>,
    /// How many subscriptions are recursive: without any, an event concerns only the
    /// subscriptions of its own path and no ancestor needs looking up.
    recursive: usize,
    /// How many subscriptions watch their directories' entries: without any, an event's
    /// parent needs no lookup.
    entries: usize,
}

impl Subs {
    /// Adds `sub`, returning its id.
    fn insert(&mut self, sub: Sub) -> u64 {
        let id = self.free.pop().unwrap_or(self.slots.len() as u64);
        for target in sub.targets.iter() {
            self.by_target.entry(target.clone()).and_modify(|ids| ids.push(id)).or_insert(Ids::One(id));
            for dir in spelt_path(target).ancestors().skip(1) {
                match self.above.get_mut(dir.as_os_str()) {
                    Some(n) => *n += 1,
                    None => {
                        self.above.insert(dir.as_os_str().to_owned(), 1);
                    }
                }
            }
        }
        self.recursive += usize::from(sub.depth == Depth::Tree);
        self.entries += usize::from(sub.depth == Depth::Entries);
        match self.slots.get_mut(id as usize) {
            Some(slot) => *slot = Some(sub),
            None => self.slots.push(Some(sub)),
        }
        id
    }

    fn get(&self, id: u64) -> Option<&Sub> {
        self.slots.get(id as usize)?.as_ref()
    }

    fn get_mut(&mut self, id: u64) -> Option<&mut Sub> {
        self.slots.get_mut(id as usize)?.as_mut()
    }

    /// Every live subscription.
    fn all(&self) -> impl Iterator<Item = &Sub> {
        self.slots.iter().flatten()
    }

    fn remove(&mut self, id: u64) -> Option<Sub> {
        let sub = self.slots.get_mut(id as usize)?.take()?;
        self.free.push(id);
        self.recursive -= usize::from(sub.depth == Depth::Tree);
        self.entries -= usize::from(sub.depth == Depth::Entries);
        for target in sub.targets.iter() {
            if let Some(ids) = self.by_target.get_mut(target)
                && ids.remove(id)
            {
                self.by_target.remove(target);
            }
            for dir in spelt_path(target).ancestors().skip(1) {
                if let Some(n) = self.above.get_mut(dir.as_os_str()) {
                    *n -= 1;
                    if *n == 0 {
                        self.above.remove(dir.as_os_str());
                    }
                }
            }
        }
        Some(sub)
    }

    /// Calls `f` with every subscription an event on `path` can concern: one whose target is
    /// `path`, a recursive one whose target is an ancestor of `path`, one watching the
    /// entries of `path`'s parent, and, when the event
    /// `reshapes` the path (created, removed, moved), one whose target lies below it. A plain
    /// directory target does not care about its entries: otherwise every file written into a
    /// managed directory would wake the directory's resource, which re-pokes all its children
    /// (quadratic at scale).
    ///
    /// `f` also learns whether `path` is one of the subscription's own targets.
    fn concerned(&self, path: &Path, reshapes: bool, mut f: impl FnMut(&Sub, bool)) {
        let mut each = |ids: &Ids, only: Option<Depth>, own: bool| {
            for sub in ids.as_slice().iter().filter_map(|id| self.get(*id)) {
                if only.is_none_or(|depth| sub.depth == depth) {
                    f(sub, own);
                }
            }
        };
        if let Some(ids) = self.by_target.get(key(path)) {
            each(ids, None, true);
        }
        if self.entries > 0
            && let Some(ids) = path.parent().and_then(|parent| self.by_target.get(key(parent)))
        {
            each(ids, Some(Depth::Entries), false);
        }
        if reshapes && self.above.contains_key(path.as_os_str()) {
            // Rare (a directory holding targets was made, removed or moved): every target
            // below it.
            for (target, ids) in &self.by_target {
                let target = spelt_path(target);
                if target != path && target.starts_with(path) {
                    each(ids, None, false);
                }
            }
        }
        if self.recursive > 0 {
            for ancestor in path.ancestors().skip(1) {
                if let Some(ids) = self.by_target.get(key(ancestor)) {
                    each(ids, Some(Depth::Tree), false);
                }
            }
        }
    }
}

/// The subscriptions of one target: nearly always one, which then needs no allocation of
/// its own (a `Vec` would make room for four). More are boxed: the index holds an entry per
/// watched file, 16 bytes each instead of an unboxed `Vec`'s 24.
enum Ids {
    One(u64),
    #[allow(clippy::box_collection, reason = "16 bytes in every entry of the index instead of 24")]
    Many(Box<Vec<u64>>),
}

impl Ids {
    fn push(&mut self, id: u64) {
        match self {
            Ids::One(first) => *self = Ids::Many(Box::new(vec![*first, id])),
            Ids::Many(ids) => ids.push(id),
        }
    }

    /// Removes `id`; true when none is left.
    fn remove(&mut self, id: u64) -> bool {
        match self {
            Ids::One(only) => *only == id,
            Ids::Many(ids) => {
                ids.retain(|i| *i != id);
                match ids[..] {
                    [] => true,
                    [last] => {
                        *self = Ids::One(last);
                        false
                    }
                    _ => false,
                }
            }
        }
    }

    fn as_slice(&self) -> &[u64] {
        match self {
            Ids::One(id) => std::slice::from_ref(id),
            Ids::Many(ids) => ids,
        }
    }
}

// An entry of the index of targets: a path and its subscriptions.
const _: () = assert!(std::mem::size_of::<Ids>() == 16);

/// How much of a directory target a subscription cares about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Depth {
    /// The target itself: its creation, removal, content and metadata.
    Target,
    /// The target and its direct entries.
    Entries,
    /// The target and everything below it.
    Tree,
}

/// What an event did to the path it names, as [`FileWatch::events`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Its content changed through an open file (the writer may not be done).
    Written,
    /// A writer closed it: what was written is all there is.
    Closed,
    /// Anything else: created, renamed over, removed, metadata changed.
    Other,
    /// The kernel dropped events (its queue overflowed): anything may have changed, under
    /// any of the subscription's targets (reported once, naming the first).
    Lost,
}

impl Change {
    fn of(mask: AddWatchFlags) -> Change {
        if mask.contains(AddWatchFlags::IN_CLOSE_WRITE) {
            Change::Closed
        } else if mask.contains(AddWatchFlags::IN_MODIFY) {
            Change::Written
        } else {
            Change::Other
        }
    }
}

/// One event as [`FileWatch::events`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathEvent {
    pub path: PathBuf,
    pub change: Change,
}

struct Sub {
    targets: Few<Spelt>,
    /// Directories this subscription holds watches on, with the recursion used.
    points: Few<(Spelt, bool)>,
    wake: Arc<Signal>,
    depth: Depth,
    /// The points were last resolved with every target's parent watched.
    settled: bool,
}

// A slot of the slab of subscriptions, one per watched file.
const _: () = assert!(std::mem::size_of::<Option<Sub>>() == 64);

/// A short list that is nearly always one item (a subscription's targets, its watch
/// points), kept inline then instead of in an allocation of its own. The others are boxed
/// twice so that `Many` fits beside a one-item list's pointer, which then tells the two
/// apart: a list of one target takes 16 bytes. `Many(None)` is the empty list, which
/// allocates nothing (every subscription's points before its first arming).
enum Few<T> {
    One(T),
    #[allow(clippy::redundant_allocation, reason = "a thin pointer: 16 bytes a target list instead of 24")]
    Many(Option<Box<Box<[T]>>>),
}

impl<T> Few<T> {
    fn of(mut items: Vec<T>) -> Few<T> {
        match items.len() {
            0 => Few::Many(None),
            1 => Few::One(items.pop().expect("one item")),
            _ => Few::Many(Some(Box::new(items.into_boxed_slice()))),
        }
    }
}

impl<T> Default for Few<T> {
    fn default() -> Few<T> {
        Few::Many(None)
    }
}

impl<T> std::ops::Deref for Few<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match self {
            Few::One(item) => std::slice::from_ref(item),
            Few::Many(items) => items.as_deref().map_or(&[], |items| &**items),
        }
    }
}

fn hub() -> &'static Hub {
    static HUB: OnceLock<Hub> = OnceLock::new();
    HUB.get_or_init(|| Hub { inotify: OnceLock::new(), state: Mutex::default() })
}

impl FileWatch {
    /// Watches `targets` (absolute paths). `recursive`: changes anywhere below a directory
    /// target count.
    pub fn new(targets: Vec<PathBuf>, recursive: bool) -> Result<FileWatch, ResError> {
        let depth = if recursive { Depth::Tree } else { Depth::Target };
        FileWatch::subscribe(paths(targets), depth, Signal::new(Notify::new()))
    }

    /// Watches `targets` as [`FileWatch::new`] does, but calls `call` on each change
    /// instead of waking a waiter: nothing needs to wait on the watch, so a resource
    /// watching a file costs no task and no future. `call` runs on the watcher's thread
    /// with the hub locked: it must be quick and must not touch a [`FileWatch`]. After a
    /// call, [`engine::Subscription::refresh`] brings the watch points up to date. `call`
    /// gets the targets, spelt as the hub keeps them (see [`FileWatch::subscribe`]), and
    /// `moved`: the watch points may have moved (a directory on the way to a target was
    /// made or removed). The owner must then refresh even when its targets look unchanged:
    /// a file watched through an ancestor before its parent existed is watched through the
    /// parent only once refreshed, and a change inside the parent is missed until then.
    pub fn calling(
        targets: Vec<Target>,
        recursive: bool,
        call: impl Fn(&[Spelt], bool) + Send + Sync + 'static,
    ) -> Result<FileWatch, ResError> {
        let depth = if recursive { Depth::Tree } else { Depth::Target };
        FileWatch::subscribe(targets, depth, Signal::new(Call(call)))
    }

    /// Watches the directories `dirs` and their direct entries: a change of any entry (made,
    /// written, removed) counts, as does the directory's own.
    pub fn entries(dirs: Vec<PathBuf>) -> Result<FileWatch, ResError> {
        FileWatch::subscribe(paths(dirs), Depth::Entries, Signal::new(Notify::new()))
    }

    /// Watches the directories `dirs` and their direct entries, and reports every event
    /// with the path it names and what happened to it. An event on a directory itself
    /// (made again after a removal) names the directory.
    pub fn events(dirs: Vec<PathBuf>) -> Result<EventWatch, ResError> {
        let (events, rx) = mpsc::unbounded_channel();
        let watch =
            FileWatch::subscribe(paths(dirs), Depth::Entries, Signal::new(Reports { notify: Notify::new(), events }))?;
        Ok(EventWatch { watch, rx })
    }

    fn subscribe(targets: Vec<Target>, depth: Depth, wake: Arc<Signal>) -> Result<FileWatch, ResError> {
        let hub = hub();
        hub.inotify()?;
        // Maps are keyed by the path's bytes (fast to hash), so every path is kept in one
        // spelling: no trailing or doubled slashes, no `.` components.
        let targets: Vec<Spelt> = targets.into_iter().map(Target::spelt).collect();
        let mut state = lock(&hub.state);
        let targets = targets
            .into_iter()
            .map(|spelt| state.subs.by_target.get_key_value(&*spelt).map_or(spelt, |(known, _)| known.clone()))
            .collect();
        let sub = Sub { targets: Few::of(targets), depth, wake: wake.clone(), points: Few::default(), settled: false };
        let id = state.subs.insert(sub);
        drop(state);
        hub.rearm(id)?;
        Ok(FileWatch { id, wake })
    }

    /// Re-resolves the watch points if an event may have moved them.
    fn rearm_if_moved(&self) -> Result<(), ResError> {
        if self.wake.rearm.swap(false, Ordering::AcqRel) { hub().rearm(self.id) } else { Ok(()) }
    }

    /// Waits for the next change (coalescing a burst), then re-resolves the watch points
    /// if the change may have moved them.
    pub async fn changed(&mut self) -> Result<(), ResError> {
        match self.wake.how.notify() {
            Some(notify) => notify.notified().await,
            // Changes go to the call: there is nothing to wait for here.
            None => std::future::pending().await,
        }
        self.rearm_if_moved()
    }
}

impl engine::Subscription for FileWatch {
    fn refresh(&self) -> Result<(), ResError> {
        self.rearm_if_moved()
    }
}

fn paths(targets: Vec<PathBuf>) -> Vec<Target> {
    targets.into_iter().map(Target::Path).collect()
}

/// A subscription that reports its events one by one (see [`FileWatch::events`]).
pub struct EventWatch {
    watch: FileWatch,
    rx: mpsc::UnboundedReceiver<PathEvent>,
}

impl EventWatch {
    /// The next event, waiting for it. `None` never comes while the hub runs.
    pub async fn next(&mut self) -> Option<PathEvent> {
        let event = self.rx.recv().await;
        self.rearm();
        event
    }

    /// The next event if one is waiting.
    pub fn try_next(&mut self) -> Option<PathEvent> {
        let event = self.rx.try_recv().ok();
        if event.is_some() {
            self.rearm();
        }
        event
    }

    fn rearm(&self) {
        if let Err(e) = self.watch.rearm_if_moved() {
            tracing::warn!(error = %e.message, "cannot follow a watched directory");
        }
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

/// Set by [`leave_watches_at_exit`].
static EXITING: AtomicBool = AtomicBool::new(false);

/// The process is about to exit: subscriptions dropped from now on leave their bookkeeping
/// and inotify watches to the OS instead of releasing them one by one (a shutdown of
/// 10,000 watched files otherwise spends its time updating maps nobody reads again).
pub fn leave_watches_at_exit() {
    EXITING.store(true, Ordering::Relaxed);
}

impl Drop for FileWatch {
    fn drop(&mut self) {
        if EXITING.load(Ordering::Relaxed) {
            return;
        }
        let hub = hub();
        let mut state = lock(&hub.state);
        let points = state.subs.remove(self.id).map(|s| s.points).unwrap_or_default();
        if let Ok(inotify) = hub.inotify() {
            state.release(inotify, &points);
        }
    }
}

impl Hub {
    /// The inotify instance, started with its reader thread on first use.
    fn inotify(&self) -> Result<&Inotify, ResError> {
        let started = self.inotify.get_or_init(|| {
            let inotify = Arc::new(
                Inotify::init(InitFlags::IN_CLOEXEC)
                    .map_err(|e| format!("cannot start the file watcher (inotify_init1: {e})"))?,
            );
            let reader = inotify.clone();
            std::thread::Builder::new()
                .name("tend-inotify".into())
                .spawn(move || read_loop(&reader))
                .map_err(|e| format!("cannot start the file watcher thread: {e}"))?;
            Ok(inotify)
        });
        match started {
            Ok(inotify) => Ok(inotify),
            Err(e) => Err(ResError::new(e.clone())),
        }
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
        let inotify = self.inotify()?;
        let mut state = lock(&self.state);
        for _ in 0..REARM_ROUNDS {
            let State { subs, dirs, .. } = &mut *state;
            let Some(sub) = subs.get(id) else { return Ok(()) };
            let (wanted, complete) = sub_points(dirs, sub);
            let unmoved = *wanted == *sub.points;
            let watched_before = state.alive(&wanted);
            let same = unmoved && watched_before;
            let Some(sub) = state.subs.get_mut(id) else { return Ok(()) };
            sub.settled = complete;
            if same {
                return Ok(());
            }
            let old = std::mem::replace(&mut sub.points, Few::of(wanted.clone()));
            state.acquire(inotify, &wanted);
            state.release(inotify, &old);
            // Every target's parent existed and was watched before the lookup: nothing can
            // have appeared unseen. A watch made just now may have missed what appeared
            // since the lookup (a directory target made under its new parent watch).
            if complete && watched_before {
                return Ok(());
            }
            let State { subs, dirs, .. } = &mut *state;
            let Some(sub) = subs.get(id) else { return Ok(()) };
            if sub_points(dirs, sub).0 == wanted {
                return Ok(());
            }
            sub.wake.wake(true, &sub.targets);
        }
        Ok(())
    }
}

impl State {
    /// Whether every point has a live watch.
    fn alive(&self, points: &[(Spelt, bool)]) -> bool {
        points.iter().all(|(dir, _)| self.dirs.get(dir).is_some_and(|d| d.wd.is_some()))
    }

    fn acquire(&mut self, inotify: &Inotify, points: &[(Spelt, bool)]) {
        for (dir, recursive) in points {
            let entry = self.dirs.entry(dir.clone()).or_default();
            if *recursive {
                entry.recursive += 1;
            } else {
                entry.plain += 1;
            }
            let dir = spelt_path(dir);
            self.watch(inotify, dir);
            if *recursive {
                self.watch_below(inotify, dir);
            }
        }
    }

    fn release(&mut self, inotify: &Inotify, points: &[(Spelt, bool)]) {
        for (dir, recursive) in points {
            let Some(entry) = self.dirs.get_mut(dir) else { continue };
            if *recursive {
                entry.recursive = entry.recursive.saturating_sub(1);
            } else {
                entry.plain = entry.plain.saturating_sub(1);
            }
            let unrooted = *recursive && entry.recursive == 0;
            let dir = spelt_path(dir);
            self.drop_unneeded(inotify, dir);
            if unrooted {
                let below: Vec<PathBuf> = self
                    .dirs
                    .keys()
                    .map(|d| spelt_path(d).to_path_buf())
                    .filter(|d| d != dir && d.starts_with(dir))
                    .collect();
                for d in below {
                    self.drop_unneeded(inotify, &d);
                }
            }
        }
    }

    /// Whether `dir` must be watched: a subscription wants it, or it lies below a
    /// recursively watched directory.
    fn needed(&self, dir: &Path) -> bool {
        self.dirs.get(key(dir)).is_some_and(|d| d.plain > 0 || d.recursive > 0) || self.below_recursive(dir)
    }

    fn below_recursive(&self, dir: &Path) -> bool {
        // Recursive watch points exist only for recursive subscriptions.
        self.subs.recursive > 0
            && dir.ancestors().skip(1).any(|a| self.dirs.get(key(a)).is_some_and(|d| d.recursive > 0))
    }

    fn drop_unneeded(&mut self, inotify: &Inotify, dir: &Path) {
        if self.needed(dir) {
            return;
        }
        if let Some(DirWatch { wd: Some(wd), .. }) = self.dirs.remove(key(dir)) {
            self.by_wd.remove(&wd);
            // The directory may be gone already (its watch went with it).
            let _gone = inotify.rm_watch(wd);
        }
    }

    /// Gives `dir` a live watch if it has none.
    fn watch(&mut self, inotify: &Inotify, dir: &Path) {
        let spelt = spelt(&self.dirs, dir);
        let entry = self.dirs.entry(spelt.clone()).or_default();
        if entry.wd.is_some() {
            return;
        }
        match inotify.add_watch(dir, MASK) {
            Ok(wd) => {
                entry.wd = Some(wd);
                // Two paths of one directory (a bind mount) share its watch; the later
                // path names its events.
                self.by_wd.insert(wd, spelt);
            }
            // The directory may have vanished meanwhile (the next event re-arms); anything
            // else (e.g. the inotify watch limit) means missed events.
            Err(nix::errno::Errno::ENOENT | nix::errno::Errno::ENOTDIR) => {
                tracing::debug!(path = %dir.display(), "cannot watch: gone");
            }
            Err(nix::errno::Errno::ENOSPC) => {
                tracing::debug!(path = %dir.display(), "cannot watch: the inotify watch limit; polled");
                watch_limit_reached();
            }
            Err(e) => tracing::warn!(path = %dir.display(), error = %e, "cannot watch; changes here will be missed"),
        }
    }

    /// Watches every directory below `dir` (for a recursive watch point).
    fn watch_below(&mut self, inotify: &Inotify, dir: &Path) {
        let mut todo = vec![dir.to_path_buf()];
        while let Some(d) = todo.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else { continue };
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    let sub = entry.path();
                    self.watch(inotify, &sub);
                    todo.push(sub);
                }
            }
        }
    }

    /// Marks the watch `wd` dead (its directory was removed or moved away) along with the
    /// watches below it, which can no longer be trusted to name their paths.
    fn forget(&mut self, inotify: &Inotify, wd: WatchDescriptor) -> Option<PathBuf> {
        let path = spelt_path(&self.by_wd.remove(&wd)?).to_path_buf();
        let below: Vec<PathBuf> =
            self.dirs.keys().map(|d| spelt_path(d).to_path_buf()).filter(|d| d.starts_with(&path)).collect();
        for d in below {
            let Some(entry) = self.dirs.get_mut(key(&d)) else { continue };
            entry.absent.clear();
            if let Some(other) = entry.wd.take()
                && other != wd
            {
                self.by_wd.remove(&other);
                let _gone = inotify.rm_watch(other);
            }
            if entry.plain == 0 && entry.recursive == 0 {
                self.dirs.remove(key(&d));
            }
        }
        Some(path)
    }

    /// Tells every subscription that events were lost (spurious wake-ups are fine).
    fn tell_lost(&mut self) {
        tracing::debug!(
            overflows = self.lost_count,
            subscriptions = self.subs.all().count(),
            "file events were lost; waking every watch"
        );
        self.lost_since = None;
        self.lost_count = 0;
        for sub in self.subs.all() {
            sub.wake.wake(true, &sub.targets);
            // One per subscription, naming its first target: the loss concerns them all.
            if let Some(target) = sub.targets.first() {
                sub.wake.how.report(spelt_path(target), Change::Lost);
            }
        }
    }

    /// One event from the kernel: who it concerns, and what it does to the watches.
    fn handle(&mut self, inotify: &Inotify, event: &InotifyEvent) {
        let mask = event.mask;
        if mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
            // Events were lost: what was found missing may have appeared unseen, and every
            // subscription is told (soon, see `lost_since`).
            for dir in self.dirs.values_mut() {
                dir.absent.clear();
            }
            self.lost_since.get_or_insert_with(std::time::Instant::now);
            self.lost_count += 1;
            return;
        }
        if let Some(dir) = self.by_wd.get(&event.wd).and_then(|path| self.dirs.get_mut(path))
            && !dir.absent.is_empty()
        {
            match &event.name {
                Some(name) => {
                    dir.absent.remove(name);
                }
                None => dir.absent.clear(),
            }
        }
        let dead = mask.intersects(AddWatchFlags::IN_IGNORED | AddWatchFlags::IN_MOVE_SELF);
        let path = if dead {
            if mask.contains(AddWatchFlags::IN_MOVE_SELF) {
                // The watch follows the directory to its new place, where its paths are wrong.
                let _moving = inotify.rm_watch(event.wd);
            }
            match self.forget(inotify, event.wd) {
                Some(path) => path,
                None => return,
            }
        } else {
            let Some(dir) = self.by_wd.get(&event.wd) else { return };
            match &event.name {
                Some(name) => spelt_path(dir).join(name),
                None => spelt_path(dir).to_path_buf(),
            }
        };
        let new_dir = mask.contains(AddWatchFlags::IN_ISDIR)
            && mask.intersects(AddWatchFlags::IN_CREATE | AddWatchFlags::IN_MOVED_TO);
        if new_dir && self.below_recursive(&path) {
            // A directory appeared inside a recursive watch: watch it and what it already
            // holds (made before its watch existed; a spurious wake-up covers that).
            self.watch(inotify, &path);
            self.watch_below(inotify, &path);
        }
        // A target's own change, seen through its live parent, cannot move any watch point.
        let change = Change::of(mask);
        self.subs.concerned(&path, mask.intersects(RESHAPES), |sub, own| {
            sub.wake.wake(dead || !own || sub.depth != Depth::Target || !sub.settled, &sub.targets);
            sub.wake.how.report(&path, change);
        });
    }
}

/// How often the subscriptions watching through a directory that could not be watched
/// (the inotify watch limit) are woken to look, and to try watching it again.
const POLL_UNWATCHED: std::time::Duration = std::time::Duration::from_secs(5);

/// The inotify watch limit was met: says so once, with the setting to raise, and starts the
/// thread that polls what could not be watched ([`POLL_UNWATCHED`]).
fn watch_limit_reached() {
    static REACHED: std::sync::Once = std::sync::Once::new();
    REACHED.call_once(|| {
        let limit = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches").unwrap_or_default();
        let limit = limit.trim();
        tracing::warn!(
            "the inotify watch limit is reached (fs.inotify.max_user_watches = {limit}): paths that cannot be watched \
             are checked every {} s instead; raise it, e.g. `sysctl fs.inotify.max_user_watches=524288`",
            POLL_UNWATCHED.as_secs()
        );
        let spawned = std::thread::Builder::new().name("tend-watch-poll".into()).spawn(|| {
            loop {
                std::thread::sleep(POLL_UNWATCHED);
                lock(&hub().state).wake_unwatched();
            }
        });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start polling what cannot be watched; changes there will be missed");
        }
    });
}

impl State {
    /// Wakes every subscription with a watch point that has no live watch (it could not be
    /// made): its owner looks at its targets, and re-arming tries the watch again.
    fn wake_unwatched(&self) {
        for sub in self.subs.all() {
            if sub.points.iter().any(|(dir, _)| self.dirs.get(dir).is_none_or(|d| d.wd.is_none())) {
                sub.wake.wake(true, &sub.targets);
            }
        }
    }
}

/// The reader thread: blocks on the inotify descriptor and hands each batch of events to the
/// hub. Lives as long as the process (the hub is process-wide).
fn read_loop(inotify: &Inotify) {
    let hub = hub();
    // `State::lost_since` as the last batch left it.
    let mut lost_since: Option<std::time::Instant> = None;
    loop {
        if let Some(since) = lost_since {
            let left = LOST_LONGEST.saturating_sub(since.elapsed());
            if left.is_zero() || !readable(inotify, LOST_QUIET.min(left)) {
                lock(&hub.state).tell_lost();
                lost_since = None;
            }
        }
        match inotify.read_events() {
            Ok(events) => {
                let mut state = lock(&hub.state);
                for event in &events {
                    state.handle(inotify, event);
                }
                lost_since = state.lost_since;
                drop(state);
                // A lone event was handled at once; a storm (thousands of files written)
                // is gathered into fewer, larger batches instead of one wake-up each.
                std::thread::sleep(BATCH_PAUSE);
            }
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => {
                tracing::error!(error = %e, "the file watcher stopped; file changes will be missed");
                return;
            }
        }
    }
}

/// Whether events wait to be read, waiting at most `wait` for them (an interrupted wait
/// counts as yes: the read that follows blocks or returns at once).
fn readable(inotify: &Inotify, wait: std::time::Duration) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let timeout = PollTimeout::try_from(wait).unwrap_or(PollTimeout::MAX);
    let mut fds = [PollFd::new(inotify.as_fd(), PollFlags::POLLIN)];
    !matches!(poll(&mut fds, timeout), Ok(0))
}

/// After the kernel dropped events, how long the queue must stay quiet before every
/// subscription is told, and how long at most they wait to be told while it does not.
const LOST_QUIET: std::time::Duration = std::time::Duration::from_millis(10);
const LOST_LONGEST: std::time::Duration = std::time::Duration::from_millis(250);

/// The reader's pause after each batch of events.
const BATCH_PAUSE: std::time::Duration = std::time::Duration::from_micros(500);

/// How often one re-arm follows a tree that keeps growing under it before leaving the rest to
/// the next event.
const REARM_ROUNDS: usize = 8;

/// The watch points a subscription needs now, without repeats, and whether every target's
/// parent exists (so each is watched through its own parent).
fn sub_points(dirs: &mut Map<Spelt, DirWatch>, sub: &Sub) -> (Vec<(Spelt, bool)>, bool) {
    let mut wanted: Vec<(Spelt, bool)> = Vec::new();
    let mut complete = true;
    for target in sub.targets.iter() {
        let (points, exists) = watch_points(dirs, spelt_path(target), sub.depth);
        complete &= exists;
        for point in points {
            if !wanted.contains(&point) {
                wanted.push(point);
            }
        }
    }
    (wanted, complete)
}

/// Where to watch for `target`, and whether the target's parent exists (so nothing on the
/// way to it can appear unseen).
///
/// A plain target is watched through its parent directory alone: the parent's watch
/// reports the target's creation, removal, replacement, writes and attribute changes, and
/// a plain directory target does not care about its entries. A target that is a directory
/// watched for its entries is also watched itself, and a recursive one with everything
/// below it. When the parent does not
/// exist yet, the nearest existing ancestor is watched, to see the path being made. A
/// directory with a live watch exists (its removal kills the watch), so only the others
/// are looked up.
fn watch_points(dirs: &mut Map<Spelt, DirWatch>, target: &Path, depth: Depth) -> (Vec<(Spelt, bool)>, bool) {
    let mut points = Vec::new();
    if depth != Depth::Target && is_dir(dirs, target) {
        points.push((spelt(dirs, target), depth == Depth::Tree));
    }
    let Some(parent) = target.parent() else {
        // The root directory: nothing above it to watch through.
        if points.is_empty() && is_dir(dirs, target) {
            points.push((spelt(dirs, target), false));
        }
        return (points, true);
    };
    let mut ancestor = Some(parent);
    while let Some(dir) = ancestor {
        if is_dir(dirs, dir) {
            points.push((spelt(dirs, dir), false));
            return (points, dir == parent);
        }
        ancestor = dir.parent();
    }
    (points, false)
}

/// `dir` spelt as the watch table already keeps it, when it does: the points of the
/// thousands of files of one directory share one string.
fn spelt(dirs: &Map<Spelt, DirWatch>, dir: &Path) -> Spelt {
    dirs.get_key_value(key(dir)).map_or_else(|| Spelt::from(key(dir)), |(k, _)| k.clone())
}

/// Whether `path` is a directory, answered from the watches where they know: a watched
/// directory exists, and an entry of a watched directory found missing earlier is still
/// missing if no event has named it since.
fn is_dir(dirs: &mut Map<Spelt, DirWatch>, path: &Path) -> bool {
    if dirs.get(key(path)).is_some_and(|d| d.wd.is_some()) {
        return true;
    }
    let watched_parent = match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => dirs.get_mut(key(parent)).filter(|d| d.wd.is_some()).map(|d| (d, name)),
        _ => None,
    };
    if let Some((parent, name)) = &watched_parent
        && parent.absent.contains(*name)
    {
        return false;
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) => meta.is_dir(),
        Err(e) => {
            if e.kind() == std::io::ErrorKind::NotFound
                && let Some((parent, name)) = watched_parent
            {
                parent.absent.insert(name.to_os_string());
            }
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A test's directory, made inside one of its own. The hub is process-wide, and an
    /// event queued before a subscription was armed still reaches it: were the directory
    /// made in `/tmp` while a sibling test watches `/tmp` (its target's parent gone), its
    /// creation could wake this test's watch late. Inside a parent of its own, nobody else
    /// watches where it is made.
    struct Scratch {
        _outer: tempfile::TempDir,
        inner: PathBuf,
    }

    impl Scratch {
        fn path(&self) -> &Path {
            &self.inner
        }
    }

    fn scratch() -> Scratch {
        let outer = tempfile::tempdir().unwrap();
        let inner = outer.path().join("t");
        std::fs::create_dir(&inner).unwrap();
        Scratch { _outer: outer, inner }
    }

    async fn expect_event(w: &mut FileWatch) {
        tokio::time::timeout(Duration::from_secs(5), w.changed()).await.expect("event in time").expect("watching");
    }

    #[tokio::test]
    async fn sees_a_file_created_inside_a_directory_that_appears_later() {
        let dir = scratch();
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
            let dir = scratch();
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

    /// Issue 45, defect 1: a call whose target's parent did not exist is told, when the
    /// parent appears, that its watch moved, so its owner refreshes even though the target
    /// itself looks unchanged; once refreshed, a change inside the new parent reaches it.
    #[tokio::test]
    async fn a_call_is_told_when_its_parent_appears_and_follows_it_once_refreshed() {
        use engine::Subscription;
        let dir = scratch();
        let parent = dir.path().join("made");
        let target = parent.join("f");
        let (tx, mut calls) = mpsc::unbounded_channel();
        let called = move |_: &[Spelt], moved: bool| {
            let _ = tx.send(moved);
        };
        let watch = FileWatch::calling(vec![Target::Path(target.clone())], false, called).unwrap();
        std::fs::create_dir(&parent).unwrap();
        let moved = tokio::time::timeout(Duration::from_secs(5), calls.recv()).await.expect("called in time");
        assert_eq!(moved, Some(true), "the parent's creation moves the watch");
        watch.refresh().unwrap();
        while calls.try_recv().is_ok() {}
        std::fs::write(&target, "x").unwrap();
        let called =
            tokio::time::timeout(Duration::from_secs(5), calls.recv()).await.expect("a write in the new parent");
        assert!(called.is_some());
    }

    /// Subscriptions sharing a target are each told of its changes (a call with the target
    /// as the hub spells it), and one dropped leaves the others watching.
    #[tokio::test]
    async fn subscriptions_sharing_a_target_are_each_told_and_outlive_each_other() {
        let dir = scratch();
        let target = dir.path().join("shared");
        let (tx, mut calls) = mpsc::unbounded_channel();
        let called = move |targets: &[Spelt], _moved: bool| {
            let _ = tx.send(targets.iter().map(|t| spelt_path(t).to_path_buf()).collect::<Vec<_>>());
        };
        // Spelt with a trailing `/.`: the call gets the hub's spelling.
        let dotted = PathBuf::from(format!("{}/./shared", dir.path().display()));
        let call = FileWatch::calling(vec![Target::Path(dotted)], false, called).unwrap();
        let mut first = FileWatch::new(vec![target.clone()], false).unwrap();
        let mut second = FileWatch::new(vec![target.clone()], false).unwrap();
        std::fs::write(&target, "x").unwrap();
        expect_event(&mut first).await;
        expect_event(&mut second).await;
        let got = tokio::time::timeout(Duration::from_secs(5), calls.recv()).await.expect("called in time");
        assert_eq!(got, Some(vec![target.clone()]));

        drop(first);
        drop(call);
        while calls.try_recv().is_ok() {}
        std::fs::write(&target, "y").unwrap();
        expect_event(&mut second).await;
        assert!(calls.try_recv().is_err(), "a dropped subscription is not called");
        drop(second);
        let state = lock(&hub().state);
        assert!(!state.dirs.contains_key(key(dir.path())));
        assert!(!state.subs.by_target.contains_key(key(&target)));
    }

    /// A target handed over as a shared string already in the hub's spelling is kept as that
    /// string (a file resource's name), not copied; one spelt otherwise is spelt anew. Either
    /// way the call gets the hub's spelling and sees the change.
    #[tokio::test]
    async fn a_shared_target_string_is_kept_as_given_when_spelt_right() {
        let dir = scratch();
        let plain: Arc<str> = Arc::from(format!("{}/plain", dir.path().display()));
        let slashed: Arc<str> = Arc::from(format!("{}//slashed/", dir.path().display()));
        let (tx, mut calls) = mpsc::unbounded_channel();
        let called = move |targets: &[Spelt], _moved: bool| {
            let _ = tx.send(targets.iter().map(|t| spelt_path(t).to_path_buf()).collect::<Vec<_>>());
        };
        let watch =
            FileWatch::calling(vec![Target::Shared(plain.clone()), Target::Shared(slashed.clone())], false, called)
                .unwrap();
        {
            let state = lock(&hub().state);
            let sub = state.subs.get(watch.id).expect("subscribed");
            assert_eq!(sub.targets[0].as_ptr(), plain.as_ptr(), "the caller's string is shared");
            assert_ne!(sub.targets[1].as_ptr(), slashed.as_ptr());
            assert_eq!(spelt_path(&sub.targets[1]), dir.path().join("slashed"));
        }
        std::fs::write(&*plain, "x").unwrap();
        let got = tokio::time::timeout(Duration::from_secs(5), calls.recv()).await.expect("called in time");
        assert_eq!(got, Some(vec![PathBuf::from(&*plain), dir.path().join("slashed")]));
        drop(watch);
        assert!(!lock(&hub().state).subs.by_target.contains_key(plain.as_bytes()));
    }

    #[tokio::test]
    async fn ignores_siblings_and_releases_watches_on_drop() {
        let dir = scratch();
        let target = dir.path().join("mine");
        let mut w = FileWatch::new(vec![target.clone()], false).unwrap();
        std::fs::write(dir.path().join("other"), "x").unwrap();
        assert!(tokio::time::timeout(Duration::from_millis(200), w.changed()).await.is_err());
        std::fs::write(&target, "x").unwrap();
        expect_event(&mut w).await;
        drop(w);
        assert!(!lock(&hub().state).dirs.contains_key(key(dir.path())));
    }

    #[tokio::test]
    async fn recursive_targets_see_deep_changes_and_targets_see_their_ancestor_vanish() {
        let dir = scratch();
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

    #[tokio::test]
    async fn an_event_subscription_names_each_entry_and_tells_writes_from_closes() {
        let dir = scratch();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let mut w = FileWatch::events(vec![dir.path().to_path_buf()]).unwrap();
        let file = dir.path().join("main.mcl");
        {
            use std::io::Write;
            let mut f = std::fs::File::create(&file).unwrap();
            f.write_all(b"x").unwrap();
            f.sync_all().unwrap();
            // Written but still open: the subscriber sees the write and no close yet.
            let mut seen = Vec::new();
            while let Ok(Some(ev)) = tokio::time::timeout(Duration::from_millis(200), w.next()).await {
                seen.push(ev.change);
            }
            assert!(seen.contains(&Change::Written), "{seen:?}");
            assert!(!seen.contains(&Change::Closed), "{seen:?}");
        }
        let ev = tokio::time::timeout(Duration::from_secs(5), w.next()).await.unwrap().unwrap();
        assert_eq!(ev, PathEvent { path: file.clone(), change: Change::Closed });
        // Entries of a subdirectory are not the directory's entries.
        std::fs::write(sub.join("deeper"), "x").unwrap();
        assert!(tokio::time::timeout(Duration::from_millis(200), w.next()).await.is_err());
        assert!(w.try_next().is_none());
    }

    #[tokio::test]
    async fn reading_a_watched_file_wakes_nobody() {
        let dir = scratch();
        let target = dir.path().join("f");
        std::fs::write(&target, "x").unwrap();
        let mut w = FileWatch::new(vec![target.clone()], false).unwrap();
        for _ in 0..3 {
            assert_eq!(std::fs::read(&target).unwrap(), b"x");
        }
        assert!(tokio::time::timeout(Duration::from_millis(200), w.changed()).await.is_err(), "a read woke the watch");
        std::fs::write(&target, "y").unwrap();
        expect_event(&mut w).await;
    }

    #[tokio::test]
    async fn a_directory_made_inside_a_recursive_watch_is_followed_with_what_it_holds() {
        let dir = scratch();
        let tree = dir.path().join("tree");
        std::fs::create_dir(&tree).unwrap();
        let mut w = FileWatch::new(vec![tree.clone()], true).unwrap();
        // Made in one go: `deep` may exist before `new` is watched.
        std::fs::create_dir_all(tree.join("new/deep")).unwrap();
        expect_event(&mut w).await;
        while tokio::time::timeout(Duration::from_millis(100), w.changed()).await.is_ok() {}
        std::fs::write(tree.join("new/deep/file"), "x").unwrap();
        expect_event(&mut w).await;
        drop(w);
        let state = lock(&hub().state);
        assert!(state.dirs.keys().all(|d| !spelt_path(d).starts_with(&tree)), "watches left below the released tree");
    }

    #[tokio::test]
    async fn a_parent_removed_or_moved_away_is_watched_again_once_made_again() {
        let dir = scratch();
        let parent = dir.path().join("p");
        let target = parent.join("file");
        std::fs::create_dir(&parent).unwrap();
        let mut w = FileWatch::new(vec![target.clone()], false).unwrap();

        std::fs::remove_dir(&parent).unwrap();
        expect_event(&mut w).await;
        std::fs::create_dir(&parent).unwrap();
        expect_event(&mut w).await;
        while tokio::time::timeout(Duration::from_millis(100), w.changed()).await.is_ok() {}
        std::fs::write(&target, "x").unwrap();
        expect_event(&mut w).await;

        // Moved away: the old directory's watch must not stand in for the new one.
        std::fs::rename(&parent, dir.path().join("elsewhere")).unwrap();
        expect_event(&mut w).await;
        while tokio::time::timeout(Duration::from_millis(100), w.changed()).await.is_ok() {}
        std::fs::create_dir(&parent).unwrap();
        expect_event(&mut w).await;
        while tokio::time::timeout(Duration::from_millis(100), w.changed()).await.is_ok() {}
        std::fs::write(&target, "y").unwrap();
        expect_event(&mut w).await;
    }
}
