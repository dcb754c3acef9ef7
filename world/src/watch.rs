//! The one contract for watching paths on this host: the local store follows its
//! directories through it, and the functions follow files through it (`os.readfile`,
//! `os.exists`, ...). It lives here, in the lowest layer, so both take the same watcher;
//! the binary gives the process's inotify hub (`resources::cluster::world::hub`), tests may give
//! their own, and without one callers poll.

use std::path::Path;

use futures::future::BoxFuture;

/// What a watch on a path follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Watched {
    /// The path itself: its creation, removal, content and metadata.
    Path,
    /// A directory and its direct entries.
    Entries,
}

/// Watches paths.
pub trait PathWatcher: Send + Sync {
    /// A subscription to changes of `path`, also while it or its directory does not exist
    /// yet; `None` when the path cannot be watched, and the caller polls.
    fn watch(&self, path: &Path, what: Watched) -> Option<Box<dyn PathChanges>>;
}

/// A live watch; dropping it releases the watch.
pub trait PathChanges: Send {
    /// Resolves at the next change with `true` (a burst may count once; a spurious wake-up
    /// is possible), or with `false` once the watch is lost and the caller must poll.
    fn changed(&mut self) -> BoxFuture<'_, bool>;
}

/// The watcher of a host without one: nothing is watched, and callers poll.
pub struct Polling;

impl PathWatcher for Polling {
    fn watch(&self, _: &Path, _: Watched) -> Option<Box<dyn PathChanges>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polling_watches_nothing() {
        assert!(Polling.watch(Path::new("/"), Watched::Entries).is_none());
    }
}
