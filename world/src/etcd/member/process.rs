//! The etcd member as a child process: started from a thread of its own, which lives as
//! long as the child (the parent-death signal is tied to the thread that forked), put in a
//! process group of its own (a terminal's Ctrl-C reaches tend, which leaves the cluster
//! before it stops the member), killed by the kernel if tend dies (`kill -9` leaves no
//! etcd behind), restarted with backoff when it crashes, and its warnings and errors logged
//! through tend's log.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use crate::WorldError;

/// The first wait before a crashed member is started again; it doubles up to [`LONGEST`].
const FIRST: Duration = Duration::from_secs(1);
const LONGEST: Duration = Duration::from_secs(30);
/// A member that ran this long before it crashed starts again after [`FIRST`].
const STEADY: Duration = Duration::from_secs(60);
/// How long a stop waits for the member after SIGTERM before SIGKILL.
const STOP_WAIT: Duration = Duration::from_secs(10);

/// How long a message etcd repeats stays out of the log.
const REPEAT: Duration = Duration::from_secs(60);

/// What etcd says when it finds it was removed from the cluster: it will never start on
/// that data again.
const REMOVED: [&str; 2] = ["has already been removed", "permanently removed"];

/// Why a supervised member ended without being stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Ended {
    /// The cluster removed it: its data is of no use any more.
    Removed,
}

/// A running member and the thread that keeps it running.
pub(super) struct Supervisor {
    stop: Arc<AtomicBool>,
    pid: Arc<AtomicU32>,
    thread: Option<std::thread::JoinHandle<()>>,
    ended: tokio::sync::watch::Receiver<Option<Ended>>,
}

/// Starts `binary` with `args` (the member `name`, for the log). An error only when the
/// first start fails (no such binary, not executable); later crashes restart it.
pub(super) fn start(binary: PathBuf, args: Vec<OsString>, name: String) -> Result<Supervisor, WorldError> {
    let stop = Arc::new(AtomicBool::new(false));
    let pid = Arc::new(AtomicU32::new(0));
    let (ended_tx, ended) = tokio::sync::watch::channel(None);
    let (first_tx, first_rx) = mpsc::channel();
    let thread = {
        let (stop, pid) = (stop.clone(), pid.clone());
        std::thread::Builder::new()
            .name("tend-etcd".into())
            .spawn(move || supervise(&binary, &args, &name, &stop, &pid, first_tx, &ended_tx))
            .map_err(|e| WorldError::Config(format!("cannot start a thread for etcd: {e}")))?
    };
    match first_rx.recv() {
        Ok(Ok(())) => Ok(Supervisor { stop, pid, thread: Some(thread), ended }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => Err(WorldError::Config("etcd's supervisor ended before starting it".into())),
    }
}

impl Supervisor {
    /// Resolves when the member ended by itself for good (see [`Ended`]).
    pub(super) fn ended(&self) -> tokio::sync::watch::Receiver<Option<Ended>> {
        self.ended.clone()
    }

    /// Stops the member (SIGTERM, then SIGKILL after [`STOP_WAIT`]) and its supervisor.
    pub(super) async fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        signal(&self.pid, libc::SIGTERM);
        let Some(thread) = self.thread.take() else { return };
        let pid = self.pid.clone();
        let _ = tokio::task::spawn_blocking(move || {
            let began = Instant::now();
            while !thread.is_finished() {
                if began.elapsed() > STOP_WAIT {
                    tracing::warn!("etcd did not stop within {} s of SIGTERM: killing it", STOP_WAIT.as_secs());
                    signal(&pid, libc::SIGKILL);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = thread.join();
        })
        .await;
    }
}

impl Drop for Supervisor {
    /// A supervisor dropped without [`Supervisor::stop`] (a panic unwinding): the member
    /// must not outlive it.
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.stop.store(true, Ordering::SeqCst);
            signal(&self.pid, libc::SIGKILL);
        }
    }
}

fn signal(pid: &AtomicU32, sig: libc::c_int) {
    let pid = pid.load(Ordering::SeqCst);
    if pid != 0 {
        // SAFETY: kill(2) with a PID this process spawned and has not reaped yet (the
        // supervisor clears it before waiting returns).
        #[allow(unsafe_code)]
        unsafe {
            libc::kill(pid as libc::pid_t, sig);
        }
    }
}

fn supervise(
    binary: &PathBuf,
    args: &[OsString],
    name: &str,
    stop: &AtomicBool,
    pid: &AtomicU32,
    first: mpsc::Sender<Result<(), WorldError>>,
    ended: &tokio::sync::watch::Sender<Option<Ended>>,
) {
    let mut first = Some(first);
    let mut backoff = FIRST;
    while !stop.load(Ordering::SeqCst) {
        let began = Instant::now();
        let mut child = match spawn(binary, args) {
            Ok(c) => c,
            Err(e) => {
                let error = WorldError::Config(format!("cannot run etcd ({}): {e}", binary.display()));
                match first.take() {
                    Some(f) => {
                        let _ = f.send(Err(error));
                        return;
                    }
                    None => tracing::error!("{error}; trying again in {} s", backoff.as_secs()),
                }
                if !pause(stop, backoff) {
                    return;
                }
                backoff = (backoff * 2).min(LONGEST);
                continue;
            }
        };
        pid.store(child.id(), Ordering::SeqCst);
        if let Some(f) = first.take() {
            let _ = f.send(Ok(()));
        }
        let removed = Arc::new(AtomicBool::new(false));
        let reader = child.stderr.take().map(|stderr| {
            let (name, removed) = (name.to_string(), removed.clone());
            std::thread::spawn(move || forward(stderr, &name, &removed))
        });
        let status = child.wait();
        pid.store(0, Ordering::SeqCst);
        if let Some(r) = reader {
            let _ = r.join();
        }
        if stop.load(Ordering::SeqCst) {
            return;
        }
        if removed.load(Ordering::SeqCst) {
            tracing::warn!(member = name, "etcd says this member was removed from the cluster; not restarting it");
            ended.send_replace(Some(Ended::Removed));
            return;
        }
        if began.elapsed() > STEADY {
            backoff = FIRST;
        }
        tracing::warn!(
            member = name,
            "etcd exited ({}); starting it again in {} s",
            describe(status.as_ref().ok()),
            backoff.as_secs()
        );
        if !pause(stop, backoff) {
            return;
        }
        backoff = (backoff * 2).min(LONGEST);
    }
}

fn describe(status: Option<&ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) if s.code().is_some() => format!("status {}", s.code().unwrap_or_default()),
        Some(s) => format!("signal {}", s.signal().unwrap_or_default()),
        None => "unknown status".into(),
    }
}

/// Sleeps `wait` in small steps; false once a stop is asked for.
fn pause(stop: &AtomicBool, wait: Duration) -> bool {
    let until = Instant::now() + wait;
    while Instant::now() < until {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    !stop.load(Ordering::SeqCst)
}

fn spawn(binary: &PathBuf, args: &[OsString]) -> std::io::Result<Child> {
    let parent = std::process::id() as libc::pid_t;
    let mut command = Command::new(binary);
    // Not in the terminal's process group: Ctrl-C is tend's to handle (it leaves the
    // cluster, then stops the member).
    command.args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).process_group(0);
    // SAFETY: only async-signal-safe calls between fork and exec.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || {
            // Dies with the thread that forked it (the supervisor, which lives as long as
            // the child), so with tend, however tend dies.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // tend died between the fork and the prctl: nobody would kill this child.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    command.spawn()
}

/// Logs the member's warnings and errors (etcd's JSON log lines at `warn` and above) and
/// notes whether it says it was removed from the cluster.
/// A message etcd repeats (a peer it cannot reach, every few seconds) is logged once per
/// [`REPEAT`].
fn forward(stderr: impl std::io::Read, name: &str, removed: &AtomicBool) {
    let mut last: std::collections::HashMap<String, Instant> = std::collections::HashMap::new();
    for line in BufReader::new(stderr).lines() {
        let Ok(line) = line else { break };
        if REMOVED.iter().any(|s| line.contains(s)) {
            removed.store(true, Ordering::SeqCst);
        }
        let Some((level, text)) = parse(&line) else { continue };
        if level == Level::Quiet {
            continue;
        }
        let now = Instant::now();
        if last.get(&text).is_some_and(|t| now.duration_since(*t) < REPEAT) {
            continue;
        }
        if last.len() > 1000 {
            last.retain(|_, t| now.duration_since(*t) < REPEAT);
        }
        last.insert(text.clone(), now);
        match level {
            Level::Warn => tracing::warn!(member = name, "etcd: {text}"),
            Level::Error => tracing::error!(member = name, "etcd: {text}"),
            Level::Quiet => {}
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Level {
    Quiet,
    Warn,
    Error,
}

/// The level and the words of one line of etcd's log (zap's JSON; anything else is logged
/// as a warning, being unexpected).
fn parse(line: &str) -> Option<(Level, String)> {
    let line = line.trim();
    if line.is_empty() {
        return None;
    }
    let Ok(serde_json::Value::Object(entry)) = serde_json::from_str::<serde_json::Value>(line) else {
        return Some((Level::Warn, line.to_string()));
    };
    let level = match entry.get("level").and_then(|l| l.as_str()).unwrap_or("info") {
        "warn" => Level::Warn,
        "error" | "dpanic" | "panic" | "fatal" => Level::Error,
        _ => Level::Quiet,
    };
    let msg = entry.get("msg").and_then(|m| m.as_str()).unwrap_or("").to_string();
    let error = entry.get("error").and_then(|e| e.as_str());
    Some((level, error.map_or(msg.clone(), |e| format!("{msg}: {e}"))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_warnings_and_errors_are_logged_with_their_cause() {
        let info = r#"{"level":"info","ts":"x","msg":"serving client traffic"}"#;
        assert_eq!(parse(info).map(|p| p.0), Some(Level::Quiet));
        let warn = r#"{"level":"warn","msg":"prober detected unhealthy status","error":"dial tcp: refused"}"#;
        assert_eq!(parse(warn), Some((Level::Warn, "prober detected unhealthy status: dial tcp: refused".into())));
        assert_eq!(parse(r#"{"level":"fatal","msg":"bad"}"#).map(|p| p.0), Some(Level::Error));
        assert_eq!(parse("not json at all"), Some((Level::Warn, "not json at all".into())));
        assert_eq!(parse("  "), None);
    }

    #[test]
    fn a_missing_binary_is_an_error_at_once() {
        let err = start(PathBuf::from("/nonexistent/etcd"), Vec::new(), "m".into()).err().unwrap();
        assert!(err.to_string().contains("/nonexistent/etcd"), "{err}");
    }

    #[tokio::test]
    async fn a_crashed_child_is_restarted_and_a_stop_ends_it() {
        let dir = tempfile::tempdir().unwrap();
        let count = dir.path().join("count");
        // A "member" that notes each start and crashes after a moment.
        let script = format!("echo x >> {}; sleep 0.2; exit 3", count.display());
        let sup = start("/bin/sh".into(), vec!["-c".into(), script.into()], "m".into()).unwrap();
        let began = Instant::now();
        while std::fs::read_to_string(&count).unwrap_or_default().lines().count() < 2 {
            assert!(began.elapsed() < Duration::from_secs(10), "not restarted");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        sup.stop().await;
        let after = std::fs::read_to_string(&count).unwrap().lines().count();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(std::fs::read_to_string(&count).unwrap().lines().count(), after, "started after the stop");
    }

    #[tokio::test]
    async fn a_removed_member_is_not_restarted() {
        let script =
            r#"echo '{"level":"fatal","msg":"the member has been permanently removed from the cluster"}' >&2; exit 1"#;
        let sup = start("/bin/sh".into(), vec!["-c".into(), script.into()], "m".into()).unwrap();
        let mut ended = sup.ended();
        let got = tokio::time::timeout(Duration::from_secs(10), ended.wait_for(Option::is_some)).await;
        assert_eq!(got.unwrap().unwrap().clone(), Some(Ended::Removed));
        sup.stop().await;
    }
}
