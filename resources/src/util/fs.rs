//! File helpers: atomic writes (an unnamed file in the same directory, filled and fsynced,
//! then named; from bytes or streamed), the sweep of temporary names a crash left behind,
//! mode parsing (octal or symbolic assignments), owner/group lookup, checksums and unified
//! diffs for noop reports.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::unistd::{Gid, Group, Uid, User};
use sha2::{Digest, Sha256};

/// Name prefix of the temporary files [`atomic_write`] creates next to their target.
pub const TEMP_PREFIX: &str = ".tend-";

/// A fresh temporary name in `dir`: `.tend-<pid>-<16 hex digits>`. The pid tells
/// [`sweep_stale_temps`] whether the writer can still be at work.
fn temp_name(dir: &Path) -> std::path::PathBuf {
    dir.join(format!("{TEMP_PREFIX}{}-{:016x}", std::process::id(), rand::random::<u64>()))
}

/// The pid in a temporary name of ours (`.tend-<pid>-<16 hex>`), `None` for any other name.
fn temp_owner(name: &std::ffi::OsStr) -> Option<i32> {
    let rest = name.to_str()?.strip_prefix(TEMP_PREFIX)?;
    let (pid, random) = rest.split_once('-')?;
    let hex = random.len() == 16 && random.bytes().all(|b| b.is_ascii_hexdigit());
    let pid = pid.parse::<i32>().ok().filter(|p| *p > 0 && !pid.starts_with('0'))?;
    hex.then_some(pid)
}

/// Removes from `dir` the temporary files of writers that are gone: a process killed in the
/// middle of an atomic write (after its file got a temporary name, before the rename)
/// leaves one behind. Only names of our exact form are touched, and only when their
/// process no longer exists; this process's own, and those of a live process (another
/// tend), are in flight. How many were removed.
pub fn sweep_stale_temps(dir: &Path) -> io::Result<usize> {
    use nix::dir::{Dir, Type};
    use nix::fcntl::OFlag;
    use std::os::unix::ffi::OsStrExt;
    let me = std::process::id() as i32;
    let mut listing =
        Dir::open(dir, OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, nix::sys::stat::Mode::empty())
            .map_err(io::Error::from)?;
    // Read without a copy of each name (a directory may hold 100,000 files); the rare
    // stale ones are removed once the listing is done.
    let mut stale = Vec::new();
    for entry in listing.iter() {
        let entry = entry.map_err(io::Error::from)?;
        let name = std::ffi::OsStr::from_bytes(entry.file_name().to_bytes());
        let Some(pid) = temp_owner(name) else { continue };
        let gone =
            pid != me && nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) == Err(nix::errno::Errno::ESRCH);
        if gone {
            stale.push((entry.file_name().to_owned(), entry.file_type()));
        }
    }
    let mut removed = 0;
    for (name, kind) in stale {
        // The listing's type when the filesystem gives it, else asked without following.
        let file = match kind {
            Some(kind) => kind == Type::File,
            None => {
                fs::symlink_metadata(dir.join(std::ffi::OsStr::from_bytes(name.to_bytes()))).is_ok_and(|m| m.is_file())
            }
        };
        if file && nix::unistd::unlinkat(&listing, name.as_c_str(), nix::unistd::UnlinkatFlags::NoRemoveDir).is_ok() {
            removed += 1;
        }
    }
    Ok(removed)
}

/// The directories whose stale temporary files were swept in this run, so that each is
/// read once however many files it holds. One per [`crate::Machine`].
///
/// Inside a tokio runtime the sweeps run on one thread of their own while the swap goes on:
/// a sweep only removes names of writers that are gone, which no check-apply of this
/// process reads (a purge spares every temporary name), and reading a directory of 100,000
/// entries took 40 ms of the swap's own thread. One thread drains a queue of directories
/// (a graph over 10,000 directories starts one thread, not 10,000) and ends once it is
/// empty, so an idle daemon keeps none. Not the runtime's blocking pool: a sweep still
/// running when the workers start would have the pool start one more thread for them, with
/// a heap of its own. [`TempSweeps::settled`] waits for the queue to be done.
#[derive(Default)]
pub struct TempSweeps {
    swept: std::sync::Mutex<Swept>,
    queue: std::sync::Arc<std::sync::Mutex<Queue>>,
}

#[derive(Default)]
struct Swept {
    /// Keyed by the directory's bytes with the fast hash: every `file` of a graph asks.
    done: engine::fasthash::FastSet<Vec<u8>>,
    /// The directory asked about last: the files of one directory come in a row, and
    /// comparing with it spares each of them the lookup.
    last: Vec<u8>,
}

/// The directories waiting for the sweeper, and the sweeper thread.
#[derive(Default)]
struct Queue {
    dirs: std::collections::VecDeque<std::path::PathBuf>,
    /// Whether the sweeper is draining `dirs`; it clears this, under the lock, when it
    /// finds them empty and ends.
    draining: bool,
    /// The last sweeper started, until someone joins it.
    sweeper: Option<std::thread::JoinHandle<()>>,
}

impl TempSweeps {
    /// Sweeps the directory `path` is in, unless that was done already: in the background
    /// when called within a tokio runtime, else before returning.
    pub fn sweep_dir_of(&self, path: &Path) {
        let dir = dir_of(path);
        {
            use std::os::unix::ffi::OsStrExt;
            let key = dir.as_os_str().as_bytes();
            let mut swept = crate::util::lock(&self.swept);
            if swept.last == key {
                return;
            }
            key.clone_into(&mut swept.last);
            if !swept.done.insert(key.to_vec()) {
                return;
            }
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return sweep_logged(dir);
        }
        let mut queue = crate::util::lock(&self.queue);
        queue.dirs.push_back(dir.to_path_buf());
        if queue.draining {
            return;
        }
        // The previous sweeper, if any, found the queue empty and is ending.
        if let Some(done) = queue.sweeper.take() {
            let _ = done.join();
        }
        let shared = self.queue.clone();
        match std::thread::Builder::new().name("tend-sweep".into()).spawn(move || drain(&shared)) {
            Ok(sweeper) => {
                queue.draining = true;
                queue.sweeper = Some(sweeper);
            }
            Err(_) => {
                let dirs = std::mem::take(&mut queue.dirs);
                drop(queue);
                dirs.iter().for_each(|d| sweep_logged(d));
            }
        }
    }

    /// Waits for the sweeps queued in the background: a run that ends leaves no stale
    /// temporary file in the directories it managed.
    pub async fn settled(&self) {
        let Some(sweeper) = crate::util::lock(&self.queue).sweeper.take() else { return };
        // A sweeper that panicked has nothing left to wait for.
        if sweeper.is_finished() {
            let _ = sweeper.join();
        } else {
            let _ = tokio::task::spawn_blocking(move || sweeper.join()).await;
        }
    }
}

/// The sweeper's loop: sweeps the queued directories until none is left.
fn drain(queue: &std::sync::Mutex<Queue>) {
    loop {
        let next = {
            let mut queue = crate::util::lock(queue);
            let next = queue.dirs.pop_front();
            if next.is_none() {
                queue.draining = false;
            }
            next
        };
        match next {
            Some(dir) => sweep_logged(&dir),
            None => return,
        }
    }
}

/// One sweep of `dir`, its outcome logged (a directory not there yet has nothing to sweep).
fn sweep_logged(dir: &Path) {
    match sweep_stale_temps(dir) {
        Ok(0) => {}
        Ok(n) => tracing::info!(dir = %dir.display(), removed = n, "removed temporary files a crash left behind"),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => tracing::debug!(dir = %dir.display(), error = %e, "cannot sweep temporary files"),
    }
}

/// Replaces `path` with `data` atomically. The new file gets `mode` if given, else the
/// mode of the file it replaces, else 0644. Never follows a symlink at `path`: the rename
/// replaces the link itself.
///
/// The data is fsynced before the rename, so after a crash the path holds either the old
/// or the new content, never a mix. The directory is not fsynced after the rename: that
/// would only make the new name durable at once, costs a journal commit per file on a
/// real disk, and a converging engine re-applies a lost rename on its next run anyway.
pub fn atomic_write(path: &Path, data: &[u8], mode: Option<u32>) -> io::Result<()> {
    atomic_write_with(path, mode, |file| file.write_all(data))
}

/// [`atomic_write`] for content produced by `fill`, which writes it into the temporary
/// file (for content too large to hold in memory). Nothing is replaced when `fill` fails.
pub fn atomic_write_with(
    path: &Path,
    mode: Option<u32>,
    fill: impl FnOnce(&mut fs::File) -> io::Result<()>,
) -> io::Result<()> {
    let dir = dir_of(path);
    let existing = fs::symlink_metadata(path);
    let fill = match &existing {
        // Nothing to replace: build the file as an unnamed inode and give it its name once
        // complete. One directory entry appears, whole, with no temporary name (and a
        // fraction of the inotify traffic of create, write, chmod, rename).
        Err(e) if e.kind() == io::ErrorKind::NotFound => match create_unnamed(dir, path, mode, fill)? {
            Unnamed::Done(_) => return Ok(()),
            Unnamed::Unsupported(fill) => fill,
        },
        _ => fill,
    };
    let existing = existing.ok().filter(|m| m.is_file());
    let kept_mode = existing.as_ref().map(|m| m.mode() & 0o7777);
    let finish = |file: &mut fs::File| -> io::Result<()> {
        file.set_permissions(fs::Permissions::from_mode(mode.or(kept_mode).unwrap_or(0o644)))?;
        if let Some(meta) = &existing {
            // Keep ownership of the file being replaced (best effort: needs privileges).
            let _best_effort = std::os::unix::fs::fchown(&*file, Some(meta.uid()), Some(meta.gid()));
        }
        file.sync_all()
    };
    // The replacement is built as an unnamed inode too, and only named (then renamed over
    // the target) once complete: a crash while it is written and synced leaves nothing. The
    // name lives for two syscalls; [`sweep_stale_temps`] removes one a crash left there.
    let fill = match unnamed_file(dir, 0o600)? {
        Some(mut file) => {
            fill(&mut file)?;
            finish(&mut file)?;
            let temp = temp_name(dir);
            link_unnamed(&file, &temp).map_err(io::Error::from)?;
            return fs::rename(&temp, path).inspect_err(|_| {
                let _cleanup = fs::remove_file(&temp);
            });
        }
        None => fill,
    };
    // No O_TMPFILE here: a named temporary file, removed if anything fails.
    let temp = temp_name(dir);
    let written = (|| {
        let mut file = fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temp)?;
        fill(&mut file)?;
        finish(&mut file)?;
        fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _cleanup = fs::remove_file(&temp);
    }
    written
}

/// An unnamed (`O_TMPFILE`) file in `dir` created with `mode` (less the umask), or `None`
/// where the filesystem (or the kernel) cannot make one or the process cannot name one
/// afterwards.
fn unnamed_file(dir: &Path, mode: u32) -> io::Result<Option<fs::File>> {
    use nix::errno::Errno;
    if !EMPTY_PATH_LINKS.load(Ordering::Relaxed) && !proc_fds() {
        return Ok(None);
    }
    let opened =
        fs::OpenOptions::new().write(true).custom_flags(nix::fcntl::OFlag::O_TMPFILE.bits()).mode(mode).open(dir);
    match opened {
        Ok(f) => Ok(Some(f)),
        // Not every filesystem has O_TMPFILE (EOPNOTSUPP; EISDIR or EINVAL on old kernels).
        Err(e)
            if matches!(
                Errno::from_raw(e.raw_os_error().unwrap_or(0)),
                Errno::EOPNOTSUPP | Errno::EISDIR | Errno::EINVAL
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The process's umask, read once from `/proc/self/status` (reading it with `umask(2)`
/// would mean setting it, racing with other threads); `None` where the kernel does not say.
fn umask() -> Option<u32> {
    static UMASK: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    *UMASK.get_or_init(|| {
        let status = fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find_map(|l| l.strip_prefix("Umask:"))?;
        u32::from_str_radix(line.trim(), 8).ok()
    })
}

/// Creates `path`, known to be absent a moment ago, with `data` and `mode` (0644 if
/// `None`), atomically as [`atomic_write`] does, and returns the new file's metadata: the
/// caller learns what it made without looking the path up again. The metadata is taken
/// from the open file and is that of this write alone: `None` when another write changed
/// the file once it had its name, or when the filesystem made it be written the usual way
/// (looking the path up after the write could describe someone else's).
pub fn create_file(path: &Path, data: &[u8], mode: Option<u32>) -> io::Result<Option<fs::Metadata>> {
    let dir = dir_of(path);
    match create_unnamed(dir, path, mode, |file: &mut fs::File| file.write_all(data))? {
        Unnamed::Done(meta) => Ok(meta),
        Unnamed::Unsupported(_) => atomic_write(path, data, mode).map(|()| None),
    }
}

/// The directory `path` is in (`.` for a bare name), where its temporary file goes.
fn dir_of(path: &Path) -> &Path {
    path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// What [`create_unnamed`] did.
enum Unnamed<F> {
    /// Created; the new file's metadata, taken from the open file once it had its name
    /// (`None` if something changed it in between, see [`named`]).
    Done(Option<fs::Metadata>),
    /// The filesystem (or a missing `/proc`) does not allow it: the caller writes the file
    /// the usual way, with the untouched `fill`.
    Unsupported(F),
}

/// Creates the absent `path` from an `O_TMPFILE` inode in `dir`: filled, chmodded and
/// fsynced while it has no name, then linked in. `linkat` never replaces an entry, so if
/// something appeared at the path meanwhile the file is linked next to it and renamed over.
fn create_unnamed<F>(dir: &Path, path: &Path, mode: Option<u32>, fill: F) -> io::Result<Unnamed<F>>
where
    F: FnOnce(&mut fs::File) -> io::Result<()>,
{
    use nix::errno::Errno;
    let mode = mode.unwrap_or(0o644);
    // Created with its final mode when the umask lets it through whole, which saves a
    // chmod (and the inotify event it sends every watcher of the directory).
    let born_right = umask().is_some_and(|umask| mode <= 0o777 && mode & umask == 0);
    let Some(mut file) = unnamed_file(dir, if born_right { mode } else { 0o600 })? else {
        return Ok(Unnamed::Unsupported(fill));
    };
    fill(&mut file)?;
    if !born_right {
        file.set_permissions(fs::Permissions::from_mode(mode))?;
    }
    file.sync_all()?;
    let made = file.metadata()?;
    let link = |to: &Path| link_unnamed(&file, to);
    match link(path) {
        Ok(()) => Ok(Unnamed::Done(named(&made, file.metadata()?))),
        // Something appeared at the path meanwhile: name the finished file next to it and
        // rename it over, as a replacement would.
        Err(Errno::EEXIST) => {
            let temp = temp_name(dir);
            link(&temp)?;
            fs::rename(&temp, path).inspect_err(|_| {
                let _cleanup = fs::remove_file(&temp);
            })?;
            Ok(Unnamed::Done(named(&made, file.metadata()?)))
        }
        Err(e) => Err(io::Error::from(e)),
    }
}

/// The metadata of a file just named, `after` its naming, if naming is all that happened to
/// it since `made`: a write, chmod or chown landing once it had a name (under a watch that
/// must see it) makes it `None` rather than pass for the file as made.
fn named(made: &fs::Metadata, after: fs::Metadata) -> Option<fs::Metadata> {
    let content = |m: &fs::Metadata| (m.size(), m.mtime(), m.mtime_nsec(), m.mode(), m.uid(), m.gid());
    (content(made) == content(&after)).then_some(after)
}

/// Whether `linkat(fd, "", …, AT_EMPTY_PATH)` may name an unnamed file here: Linux 6.10
/// allows it to the file's opener, older kernels only with CAP_DAC_READ_SEARCH. Cleared at
/// the first refusal, after which files are linked through `/proc/self/fd` (a slower walk).
static EMPTY_PATH_LINKS: AtomicBool = AtomicBool::new(true);

/// Whether `/proc/self/fd` exists (looked up once).
fn proc_fds() -> bool {
    static PROC_FDS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PROC_FDS.get_or_init(|| Path::new("/proc/self/fd").is_dir())
}

/// Gives the unnamed `file` the name `to` (never over an existing entry).
fn link_unnamed(file: &fs::File, to: &Path) -> nix::Result<()> {
    use nix::errno::Errno;
    use nix::fcntl::{AT_FDCWD, AtFlags};
    use std::os::fd::AsRawFd;
    if EMPTY_PATH_LINKS.load(Ordering::Relaxed) {
        match nix::unistd::linkat(file, "", AT_FDCWD, to, AtFlags::AT_EMPTY_PATH) {
            // Refused for want of the capability (ENOENT, or EPERM), as opposed to a parent
            // directory that is gone.
            Err(Errno::ENOENT | Errno::EPERM) if to.parent().is_none_or(|d| d.as_os_str().is_empty() || d.is_dir()) => {
                EMPTY_PATH_LINKS.store(false, Ordering::Relaxed);
            }
            done => return done,
        }
    }
    if !proc_fds() {
        return Err(Errno::EOPNOTSUPP);
    }
    let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
    nix::unistd::linkat(AT_FDCWD, proc_path.as_str(), AT_FDCWD, to, AtFlags::AT_SYMLINK_FOLLOW)
}

/// Parses a mode: octal (`0644`, `755`, `1777`) or comma-separated symbolic assignments
/// (`u=rw,go=r`, `a=rx`); `+`/`-` forms are rejected as in mgmt. Symbolic assignments start
/// from `current` (only the classes named are replaced).
pub fn parse_mode(text: &str, current: u32) -> Result<u32, String> {
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_digit()) {
        let mode = u32::from_str_radix(text, 8).map_err(|_| format!("`{text}` is not an octal mode"))?;
        if mode > 0o7777 {
            return Err(format!("mode `{text}` is out of range"));
        }
        return Ok(mode);
    }
    let mut mode = current & 0o7777;
    for clause in text.split(',') {
        let Some((who, perms)) = clause.split_once('=') else {
            return Err(format!(
                "mode clause `{clause}` must be an assignment like `u=rw` (`+` and `-` are not supported)"
            ));
        };
        let mut bits = 0;
        for c in perms.chars() {
            bits |= match c {
                'r' => 4,
                'w' => 2,
                'x' => 1,
                _ => return Err(format!("unknown permission `{c}` in mode clause `{clause}`")),
            };
        }
        let who = if who.is_empty() { "a" } else { who };
        for c in who.chars() {
            let shifts: &[u32] = match c {
                'u' => &[6],
                'g' => &[3],
                'o' => &[0],
                'a' => &[6, 3, 0],
                _ => return Err(format!("unknown class `{c}` in mode clause `{clause}`")),
            };
            for shift in shifts {
                mode = (mode & !(0o7 << shift)) | (bits << shift);
            }
        }
    }
    Ok(mode)
}

/// A user name or numeric uid.
pub fn lookup_uid(owner: &str) -> Result<u32, String> {
    if let Ok(n) = owner.parse::<u32>() {
        return Ok(n);
    }
    match User::from_name(owner) {
        Ok(Some(u)) => Ok(u.uid.as_raw()),
        Ok(None) => Err(format!("user `{owner}` does not exist")),
        Err(e) => Err(format!("looking up user `{owner}`: {e}")),
    }
}

/// A group name or numeric gid.
pub fn lookup_gid(group: &str) -> Result<u32, String> {
    if let Ok(n) = group.parse::<u32>() {
        return Ok(n);
    }
    match Group::from_name(group) {
        Ok(Some(g)) => Ok(g.gid.as_raw()),
        Ok(None) => Err(format!("group `{group}` does not exist")),
        Err(e) => Err(format!("looking up group `{group}`: {e}")),
    }
}

/// Changes owner and/or group of `path` without following a symlink there.
pub fn lchown(path: &Path, uid: Option<u32>, gid: Option<u32>) -> io::Result<()> {
    nix::unistd::fchownat(
        nix::fcntl::AT_FDCWD,
        path,
        uid.map(Uid::from_raw),
        gid.map(Gid::from_raw),
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .map_err(io::Error::from)
}

pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// A unified diff of two texts with `path` in the headers (for noop reports).
pub fn unified_diff(path: &str, old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new).unified_diff().header(path, path).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        assert_eq!(parse_mode("0644", 0), Ok(0o644));
        assert_eq!(parse_mode("1777", 0), Ok(0o1777));
        assert_eq!(parse_mode("u=rw,go=r", 0o777), Ok(0o644));
        assert_eq!(parse_mode("g=", 0o775), Ok(0o705));
        assert_eq!(parse_mode("a=rx", 0), Ok(0o555));
        assert!(parse_mode("u+x", 0).is_err());
        assert!(parse_mode("99999", 0).is_err());
        assert!(parse_mode("u=q", 0).is_err());
    }

    #[test]
    fn atomic_write_replaces_and_keeps_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        atomic_write(&path, b"one", Some(0o600)).unwrap();
        atomic_write(&path, b"two", None).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "no temp file left behind");
    }

    #[test]
    fn a_new_file_appears_only_once_whole_even_when_raced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new");
        atomic_write_with(&path, Some(0o640), |f| {
            f.write_all(b"first half, ")?;
            assert!(!path.exists(), "a half-written file is visible");
            f.write_all(b"second half")
        })
        .unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "first half, second half");
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o640);
        // Someone creates the path while the new file is being filled: ours replaces it.
        let raced = dir.path().join("raced");
        atomic_write_with(&raced, None, |f| {
            fs::write(&raced, "theirs")?;
            f.write_all(b"ours")
        })
        .unwrap();
        assert_eq!(fs::read_to_string(&raced).unwrap(), "ours");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2, "no temp file left behind");
    }

    #[test]
    fn a_file_changed_once_named_has_no_metadata_of_its_making() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, "made").unwrap();
        let made = fs::metadata(&path).unwrap();
        fs::hard_link(&path, dir.path().join("g")).unwrap();
        assert!(named(&made, fs::metadata(&path).unwrap()).is_some(), "a new name alone keeps it");
        fs::write(&path, "drft").unwrap();
        assert!(named(&made, fs::metadata(&path).unwrap()).is_none(), "a write of the same size");
        let made = fs::metadata(&path).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        assert!(named(&made, fs::metadata(&path).unwrap()).is_none(), "a chmod");
    }

    #[test]
    fn a_created_file_has_its_mode_whatever_the_umask_lets_through() {
        let dir = tempfile::tempdir().unwrap();
        for (i, mode) in [0o644, 0o666, 0o600, 0o4755, 0o777, 0o000].into_iter().enumerate() {
            let path = dir.path().join(format!("f{i}"));
            let meta = create_file(&path, b"x", Some(mode)).unwrap().expect("O_TMPFILE works in the test's directory");
            assert_eq!(meta.mode() & 0o7777, mode, "reported mode of {mode:o}");
            assert_eq!(fs::metadata(&path).unwrap().mode() & 0o7777, mode, "mode of {mode:o}");
            assert_eq!(fs::read(&path).unwrap(), b"x");
        }
    }

    #[test]
    fn atomic_write_replaces_a_symlink_not_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        fs::write(&target, "keep").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        atomic_write(&link, b"new", None).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep");
        assert!(fs::symlink_metadata(&link).unwrap().is_file());
    }

    #[test]
    fn the_sweep_removes_only_temporary_files_of_dead_writers() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let name = |pid: u32| format!("{TEMP_PREFIX}{pid}-{:016x}", 0xabcdef_u64);
        let stale = dir.path().join(name(dead));
        let mine = dir.path().join(name(std::process::id()));
        let live = dir.path().join(name(1));
        let legacy = dir.path().join(".tend-a1B2c3");
        let users = dir.path().join(".tend-notes");
        for p in [&stale, &mine, &live, &legacy, &users] {
            fs::write(p, "x").unwrap();
        }
        assert_eq!(sweep_stale_temps(dir.path()).unwrap(), 1);
        assert!(!stale.exists(), "a dead writer's temporary file is removed");
        for kept in [&mine, &live, &legacy, &users] {
            assert!(kept.exists(), "{} is kept", kept.display());
        }
    }

    /// Within a runtime the sweeps run in the background, once per directory, one thread
    /// for all of them, and are done once `settled` returns; outside one a sweep is done
    /// before `sweep_dir_of` returns.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sweeps_run_once_per_directory_on_one_thread_and_are_done_once_settled() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let stale = |dir: &Path, n: u64| dir.join(format!("{TEMP_PREFIX}{dead}-{n:016x}"));
        let dirs: Vec<tempfile::TempDir> = (0..40).map(|_| tempfile::tempdir().unwrap()).collect();
        for d in &dirs {
            fs::write(stale(d.path(), 1), "x").unwrap();
        }
        let sweeps = TempSweeps::default();
        for d in &dirs {
            for f in ["a", "b"] {
                sweeps.sweep_dir_of(&d.path().join(f));
            }
        }
        sweeps.settled().await;
        for d in &dirs {
            assert!(!stale(d.path(), 1).exists(), "{} is swept once settled", d.path().display());
        }
        {
            let queue = crate::util::lock(&sweeps.queue);
            assert!(queue.dirs.is_empty() && !queue.draining && queue.sweeper.is_none(), "the sweeper has ended");
        }
        // Swept already: a stale file planted now stays until another run.
        fs::write(stale(dirs[0].path(), 2), "x").unwrap();
        sweeps.sweep_dir_of(&dirs[0].path().join("c"));
        sweeps.settled().await;
        assert!(stale(dirs[0].path(), 2).exists(), "each directory is swept once per run");

        let other = tempfile::tempdir().unwrap();
        fs::write(stale(other.path(), 3), "x").unwrap();
        std::thread::scope(|s| {
            s.spawn(|| sweeps.sweep_dir_of(&other.path().join("f")));
        });
        assert!(!stale(other.path(), 3).exists(), "outside a runtime the sweep is done on return");
    }

    #[test]
    fn a_rewrite_leaves_no_temporary_name_behind() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        fs::write(&p, "old").unwrap();
        for i in 0..20 {
            atomic_write(&p, format!("v{i}").as_bytes(), Some(0o640)).unwrap();
        }
        assert_eq!(fs::read_to_string(&p).unwrap(), "v19");
        assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o640);
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("f")]);
    }

    #[test]
    fn diffs_are_unified() {
        let d = unified_diff("/etc/x", "a\nb\n", "a\nc\n");
        assert!(d.contains("--- /etc/x") && d.contains("-b") && d.contains("+c"), "{d}");
    }
}
