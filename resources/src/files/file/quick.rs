//! The common `file` check on a short path: a regular file with literal content and a
//! mode, as most programs manage thousands of. It answers with the few system calls the
//! job needs (open, fstat, read, close when the file is right; a failed open and the
//! atomic create when it is missing) and leaves every other case to the full check.

use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use super::Stamp;
use crate::util::fs::{create_file, parse_mode};

/// What the short path found.
pub(super) enum Quick {
    /// Already right; the file as it was checked.
    Right(Stamp),
    /// Was missing and has been created whole; the new file, when its stamp is known to be
    /// that of this write (see [`create_file`]).
    Created(Option<Stamp>),
    /// Anything else (wrong content or mode, not a regular file, a symlink, an error):
    /// the full check decides, and reports.
    Other,
}

/// Checks (and, when the path is missing, creates) the regular file `path` that must hold
/// `desired` with `mode` (empty: any mode; created as 0644).
pub(super) fn check(path: &Path, desired: &[u8], mode: &str) -> Quick {
    // O_NOFOLLOW: a symlink at the path is the full check's business (ELOOP lands there).
    // O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
    let opened = fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits() | nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path);
    match opened {
        Ok(file) => same(file, desired, mode).map_or(Quick::Other, Quick::Right),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let Ok(mode) = (if mode.is_empty() { Ok(0o644) } else { parse_mode(mode, 0o644) }) else {
                return Quick::Other;
            };
            match create_file(path, desired, Some(mode)) {
                Ok(meta) => Quick::Created(meta.as_ref().map(Stamp::from_meta)),
                // The parent is missing, or the write failed: the full check says why.
                Err(_) => Quick::Other,
            }
        }
        Err(_) => Quick::Other,
    }
}

/// The file's stamp when it is a regular file holding exactly `desired` with the right mode.
///
/// The stamp comes from before the read: a write that lands after it changes the change
/// time, so the watch sees a file that no longer carries the stamp and the check runs again.
fn same(mut file: fs::File, desired: &[u8], mode: &str) -> Option<Stamp> {
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.size() != desired.len() as u64 {
        return None;
    }
    let current = meta.mode() & 0o7777;
    if !mode.is_empty() && parse_mode(mode, current).ok()? != current {
        return None;
    }
    // The size is known: one read fills the buffer (a short read only loops).
    let mut have = vec![0; desired.len()];
    file.read_exact(&mut have).ok()?;
    (have == desired).then(|| Stamp::from_meta(&meta))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(q: &Quick) -> &'static str {
        match q {
            Quick::Right(_) => "right",
            Quick::Created(_) => "created",
            Quick::Other => "other",
        }
    }

    #[test]
    fn creates_then_finds_right_and_leaves_the_rest_to_the_full_check() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        assert_eq!(outcome(&check(&path, b"hello\n", "0640")), "created");
        assert_eq!(fs::read(&path).unwrap(), b"hello\n");
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o7777, 0o640);
        let Quick::Right(stamp) = check(&path, b"hello\n", "0640") else { panic!("not right") };
        assert_eq!(Some(stamp), Stamp::of(&path), "the stamp is the file's");
        // Same size, other bytes; other mode; other size: all for the full check, untouched.
        assert_eq!(outcome(&check(&path, b"HELLO\n", "0640")), "other");
        assert_eq!(outcome(&check(&path, b"hello\n", "0644")), "other");
        assert_eq!(outcome(&check(&path, b"hello", "")), "other");
        assert_eq!(fs::read(&path).unwrap(), b"hello\n");
        // A symbolic mode is read against the current one.
        assert_eq!(outcome(&check(&path, b"hello\n", "u=rw,g=r,o=")), "right");
    }

    #[test]
    fn never_follows_a_symlink_nor_waits_on_a_fifo_nor_creates_without_a_parent() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        fs::write(&target, "x").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(outcome(&check(&link, b"x", "")), "other");
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
        assert_eq!(outcome(&check(&fifo, b"", "")), "other");
        assert_eq!(outcome(&check(&dir.path().join("no/such/file"), b"x", "")), "other");
        assert!(!dir.path().join("no").exists());
    }
}
