//! A `tend run` daemon for end-to-end tests: started on a program in a temporary directory,
//! its stderr kept in a file, killed when the test ends (even a failing one).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running daemon on `DIR/main.mcl`, its state under `DIR/state`, its stderr in
/// `DIR/stderr`.
pub struct Daemon {
    pub child: Child,
    pub dir: tempfile::TempDir,
}

impl Daemon {
    /// Writes `program` (given the directory) to `main.mcl` and starts `binary run` on it
    /// with `args` added.
    pub fn start(binary: &str, program: impl Fn(&Path) -> String, args: &[&str]) -> Daemon {
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::write(dir.path().join("main.mcl"), program(dir.path())).expect("program written");
        let child = Command::new(binary)
            .arg("run")
            .arg(dir.path().join("main.mcl"))
            .args(["--prefix", &dir.path().join("state").display().to_string()])
            .args(std::env::var("TEND_DAEMON_TEST_LOG").ok().map(|_| "-vv"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("stderr")).expect("stderr file"))
            .spawn()
            .expect("tend starts");
        Daemon { child, dir }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The text of `rel`, empty when it cannot be read.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap_or_default()
    }

    /// Replaces `rel` the way an editor's save does (a new file renamed over the old).
    pub fn save(&self, rel: &str, text: &str) {
        let tmp = self.path(&format!("{rel}.saving"));
        std::fs::write(&tmp, text).expect("saved");
        std::fs::rename(&tmp, self.path(rel)).expect("renamed");
    }

    /// Writes `rel` in place (truncated, then written), as `echo > rel` does.
    pub fn write(&self, rel: &str, text: &str) {
        std::fs::write(self.path(rel), text).expect("written");
    }

    /// Waits up to 20 s until `rel` holds `want`; how long it took. Panics, naming `what`
    /// and showing the daemon's stderr, when it never does.
    pub fn expect(&self, rel: &str, want: &str, what: &str) -> Duration {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(20) {
            if self.read(rel) == want {
                return started.elapsed();
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        panic!("{what}: {rel} is {:?}, expected {want:?}\nstderr:\n{}", self.read(rel), self.stderr());
    }

    /// Open file descriptors, inotify watches and resident memory (KiB) of the daemon.
    pub fn usage(&self) -> (usize, usize, u64) {
        let proc = PathBuf::from(format!("/proc/{}", self.child.id()));
        let fds: Vec<_> = std::fs::read_dir(proc.join("fd")).map(|d| d.flatten().collect()).unwrap_or_default();
        let mut watches = 0;
        for fd in &fds {
            let target = std::fs::read_link(fd.path()).unwrap_or_default();
            if target.to_string_lossy().contains("inotify") {
                let info = std::fs::read_to_string(proc.join("fdinfo").join(fd.file_name())).unwrap_or_default();
                watches += info.lines().filter(|l| l.starts_with("inotify wd:")).count();
            }
        }
        (fds.len(), watches, rss_kib(self.child.id()))
    }

    /// How many inotify instances the daemon holds.
    pub fn inotify_instances(&self) -> usize {
        let fds = std::fs::read_dir(format!("/proc/{}/fd", self.child.id())).map(|d| d.flatten().collect::<Vec<_>>());
        fds.unwrap_or_default()
            .iter()
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .filter(|target| target.to_string_lossy().contains("inotify"))
            .count()
    }

    pub fn stderr(&self) -> String {
        self.read("stderr")
    }

    /// Whether the daemon still runs.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits up to `limit` for `f` to hold; whether it did.
    pub fn eventually(&self, limit: Duration, mut f: impl FnMut() -> bool) -> bool {
        eventually(limit, &mut f)
    }

    /// SIGTERM, then the exit status and stderr.
    pub fn stop(self) -> (std::process::ExitStatus, String) {
        let (status, _, stderr) = self.stop_timed();
        (status, stderr)
    }

    /// SIGTERM, then the exit status, how long the daemon took to exit, and its stderr.
    pub fn stop_timed(mut self) -> (std::process::ExitStatus, Duration, String) {
        let started = Instant::now();
        let signalled = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        assert!(signalled.is_ok_and(|s| s.success()), "the daemon was signalled");
        let status = self.child.wait().expect("waited");
        (status, started.elapsed(), self.stderr())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `f` every 20 ms for up to `limit`; whether it came to hold.
pub fn eventually(limit: Duration, f: &mut dyn FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

/// The resident memory of process `pid` in KiB (0 when it cannot be read).
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
