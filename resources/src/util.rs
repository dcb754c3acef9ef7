//! Helpers shared by the kinds: the one way to spawn a process, atomic file writes and
//! file metadata helpers, and the process-wide file watcher.

pub mod command;
pub mod fs;
pub mod watch;
