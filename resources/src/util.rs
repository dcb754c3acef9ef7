//! Helpers shared by the kinds: the one way to spawn a process, running external tools and
//! following their event streams, atomic file writes and file metadata helpers, the
//! process-wide file watcher, listen addresses, CIDR addresses, escaped markup and text
//! edited by lines, and the parent/child registry that stands in for autogrouping.

pub mod augeas;
pub mod cidr;
pub mod command;
pub mod events;
#[cfg(any(test, feature = "fakes"))]
pub mod fake;
pub mod fs;
pub mod http_client;
pub mod listen;
pub mod path;
pub mod poll;
pub mod registry;
pub mod text;
pub mod watch;

/// Locks `m`, going on past a poisoned lock: the state behind the kinds' mutexes is plain
/// bookkeeping that a panic elsewhere leaves usable.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
