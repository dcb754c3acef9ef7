//! Reading a file under a read lease, which tells a file some process still has open for
//! writing (a save in progress, `echo x > f` between its truncation and its write) from a
//! finished one: live editing reads the program this way, and `os.readfile` its facts.
//! Either reads only a regular file ([`open_regular`]), and at most [`MAX_FILE`] bytes.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The most a fact (`os.readfile`) or a program's source file may hold.
pub const MAX_FILE: u64 = 64 << 20;

/// Opens `path` for reading if it is a regular file. A FIFO, a socket or a device is an
/// error, never read: a FIFO's read waits for a writer that may never come, and a device
/// may never end. The open itself does not wait (`O_NONBLOCK`, which a regular file
/// ignores).
pub fn open_regular(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    let what = if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_dir() {
        "a directory"
    } else {
        "something else"
    };
    Err(io::Error::new(io::ErrorKind::InvalidInput, format!("it is {what}, not a regular file")))
}

/// The whole of a regular file, at most [`MAX_FILE`] bytes (more is an error, and no more
/// than that is ever held).
pub fn read_regular(path: &Path) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    read_bounded(&mut open_regular(path)?, &mut bytes)?;
    Ok(bytes)
}

fn read_bounded(file: &mut File, bytes: &mut Vec<u8>) -> io::Result<()> {
    file.take(MAX_FILE + 1).read_to_end(bytes)?;
    if bytes.len() as u64 > MAX_FILE {
        bytes.clear();
        bytes.shrink_to_fit();
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("it holds more than {} MiB, the most tend reads from one file", MAX_FILE >> 20),
        ));
    }
    Ok(())
}

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
    let mut file = open_regular(path)?;
    let mut bytes = Vec::new();
    match set_lease(&file, libc::F_RDLCK) {
        Ok(()) => {
            let read = read_bounded(&mut file, &mut bytes);
            let _released = set_lease(&file, libc::F_UNLCK);
            read.map(|()| Leased::Read(bytes))
        }
        Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
            read_bounded(&mut file, &mut bytes).map(|()| Leased::Busy(bytes))
        }
        Err(_) => read_bounded(&mut file, &mut bytes).map(|()| Leased::Read(bytes)),
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

    /// Issue 45, defect 5: a FIFO's read waited for a writer forever. It is refused at once,
    /// as a device or a directory is, and a file past the bound is an error.
    #[test]
    fn only_regular_files_are_read_and_at_most_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let err = read_leased(&fifo).unwrap_err();
        assert!(err.to_string().contains("it is a FIFO, not a regular file"), "{err}");
        assert!(read_regular(Path::new("/dev/zero")).unwrap_err().to_string().contains("a device"));
        assert!(read_regular(dir.path()).unwrap_err().to_string().contains("a directory"));
        let big = dir.path().join("big");
        File::create(&big).unwrap().set_len(MAX_FILE + 1).unwrap();
        assert!(read_regular(&big).unwrap_err().to_string().contains("more than 64 MiB"));
        File::create(&big).unwrap().set_len(MAX_FILE).unwrap();
        assert_eq!(read_regular(&big).unwrap().len() as u64, MAX_FILE);
    }
}
