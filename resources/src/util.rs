//! Helpers shared by the kinds: the one way to spawn a process, running external tools and
//! following their event streams, atomic file writes and file metadata helpers, the
//! process-wide file watcher, and the parent/child registry that stands in for autogrouping.

pub mod command;
pub mod events;
pub mod fs;
pub mod registry;
pub mod watch;
