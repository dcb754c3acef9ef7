//! Helpers shared by the kinds: the one way to spawn a process, atomic file writes and
//! file metadata helpers, the process-wide file watcher, and the parent/child registry
//! that stands in for autogrouping.

pub mod command;
pub mod fs;
pub mod registry;
pub mod watch;
