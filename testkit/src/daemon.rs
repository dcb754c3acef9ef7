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
    pub fn stop(mut self) -> (std::process::ExitStatus, String) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let status = self.child.wait().expect("waited");
        let stderr = self.stderr();
        (status, stderr)
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
