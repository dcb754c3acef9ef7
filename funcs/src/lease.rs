//! Reading a file under a read lease, which tells a file some process still has open for
//! writing (a save in progress, `echo x > f` between its truncation and its write) from a
//! finished one: live editing reads the program this way, and `os.readfile` its facts.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::path::Path;

/// What [`read_leased`] found.
#[derive(Debug, PartialEq)]
pub enum Leased {
    /// The whole file: nobody had it open for writing, and nobody could open it so while
    /// it was read.
    Read(Vec<u8>),
    /// What the file held while some process had it open for writing (maybe half a save).
    Busy(Vec<u8>),
}

/// Reads `path` under a read lease (`fcntl(F_SETLEASE, F_RDLCK)`). The kernel refuses the
/// lease while any process has the file open for writing (then the file is read anyway
/// and reported [`Leased::Busy`]), and while the lease is held it makes a writer's
/// `open` wait, so a save cannot truncate the file under the reader. Where leases are not
/// available (a file of another user without `CAP_LEASE`, some network filesystems) the
/// file is read plainly. The lease-break notice goes out as `SIGWINCH`, which a process
/// ignores by default (the default `SIGIO` would end it).
pub fn read_leased(path: &Path) -> io::Result<Leased> {
    let mut file = File::open(path)?;
    let mut bytes = Vec::new();
    match set_lease(&file, libc::F_RDLCK) {
        Ok(()) => {
            let read = file.read_to_end(&mut bytes);
            let _released = set_lease(&file, libc::F_UNLCK);
            read.map(|_| Leased::Read(bytes))
        }
        Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => file.read_to_end(&mut bytes).map(|_| Leased::Busy(bytes)),
        Err(_) => file.read_to_end(&mut bytes).map(|_| Leased::Read(bytes)),
    }
}

/// `F_SETSIG` of `<linux/fcntl.h>` (the libc crate leaves it out).
const F_SETSIG: libc::c_int = 10;

fn set_lease(file: &File, kind: libc::c_int) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl with integer arguments on a descriptor `file` owns and keeps open for
    // the call; it reads and writes no memory of this process.
    #[allow(unsafe_code)]
    let result = unsafe {
        if kind != libc::F_UNLCK && libc::fcntl(fd, F_SETSIG, libc::SIGWINCH) == -1 {
            -1
        } else {
            libc::fcntl(fd, libc::F_SETLEASE, kind)
        }
    };
    if result == -1 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_open_for_writing_reads_as_busy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fact");
        std::fs::write(&path, "one\n").unwrap();
        assert_eq!(read_leased(&path).unwrap(), Leased::Read(b"one\n".to_vec()));
        // A write in progress: truncated, not written yet, still open.
        let writer = std::fs::OpenOptions::new().write(true).truncate(true).open(&path).unwrap();
        assert_eq!(read_leased(&path).unwrap(), Leased::Busy(Vec::new()));
        drop(writer);
        assert_eq!(read_leased(&path).unwrap(), Leased::Read(Vec::new()));
    }
}
