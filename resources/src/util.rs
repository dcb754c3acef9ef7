//! Helpers shared by the kinds: the one way to spawn a process, running external tools and
//! following their event streams, atomic file writes and file metadata helpers, and the
//! process-wide file watcher.

pub mod command;
pub mod events;
pub mod fs;
pub mod watch;
