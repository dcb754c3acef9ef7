//! The one way resources spawn processes: argv or `shell -c`, working directory, a
//! complete (non-inherited) environment when given, credentials, its own process group
//! (signalled on cancel or timeout), and captured stdout, stderr and combined output.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use engine::ResError;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

/// What to run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CmdSpec {
    /// The command line (split on whitespace unless `shell` or `args` is given).
    pub cmd: String,
    /// Explicit argv after the program (then `cmd` is the program alone).
    pub args: Vec<String>,
    /// Run as `shell -c cmd` when non-empty.
    pub shell: String,
    pub cwd: String,
    /// The complete environment (nothing inherited) when `Some`.
    pub env: Option<BTreeMap<String, String>>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    /// Signal sent to the process group on cancel/timeout (default SIGTERM, then SIGKILL).
    pub signal: Option<Signal>,
    pub timeout: Option<Duration>,
    /// The streams of which only the last [`TAIL`] bytes are kept (what nothing reads
    /// whole, kept for reports); the others are kept whole.
    pub bounded: Streams,
}

/// One flag per captured stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Streams {
    pub stdout: bool,
    pub stderr: bool,
    /// stdout and stderr interleaved.
    pub output: bool,
}

impl Streams {
    pub const ALL: Streams = Streams { stdout: true, stderr: true, output: true };
}

/// How much of a bounded stream is kept: its last 64 KiB.
pub const TAIL: usize = 64 * 1024;

/// What it did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CmdOutput {
    pub stdout: String,
    pub stderr: String,
    /// stdout and stderr interleaved in arrival order.
    pub output: String,
    /// Exit code; `None` when killed by a signal.
    pub code: Option<i32>,
    /// The first stream kept whole whose bytes are not UTF-8 text, and the offset of the
    /// first bad byte: its text above has replacement characters, so it must not be
    /// passed on as the command's output.
    pub not_text: Option<(&'static str, usize)>,
}

impl CmdOutput {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

impl CmdSpec {
    pub fn new(cmd: impl Into<String>) -> CmdSpec {
        CmdSpec { cmd: cmd.into(), ..CmdSpec::default() }
    }

    /// The argv this spec runs.
    pub fn argv(&self) -> Vec<String> {
        if !self.shell.is_empty() {
            return vec![self.shell.clone(), "-c".into(), self.cmd.clone()];
        }
        if !self.args.is_empty() {
            return std::iter::once(self.cmd.clone()).chain(self.args.iter().cloned()).collect();
        }
        self.cmd.split_whitespace().map(str::to_string).collect()
    }

    /// A `tokio` command with everything but stdio set up.
    pub fn command(&self) -> Result<Command, ResError> {
        let argv = self.argv();
        let Some((program, rest)) = argv.split_first() else {
            return Err(ResError::new("empty command"));
        };
        let mut cmd = Command::new(program);
        cmd.args(rest).kill_on_drop(true).process_group(0).stdin(Stdio::null());
        if !self.cwd.is_empty() {
            cmd.current_dir(&self.cwd);
        }
        if let Some(env) = &self.env {
            cmd.env_clear().envs(env);
        }
        if let Some(uid) = self.uid {
            cmd.uid(uid);
        }
        if let Some(gid) = self.gid {
            cmd.gid(gid);
        }
        Ok(cmd)
    }
}

/// Runs to completion, honouring the timeout and `cancel` (the process group gets the
/// signal, then SIGKILL after a second).
pub async fn run(spec: &CmdSpec, cancel: &CancellationToken) -> Result<CmdOutput, ResError> {
    let mut child = spec
        .command()?
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| ResError::new(format!("cannot run `{}`: {e}", spec.argv().join(" "))))?;
    let mut group = Group::of(&child);
    let deadline = async {
        match spec.timeout {
            Some(t) => tokio::time::sleep(t).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        out = collect(&mut child, spec.bounded) => {
            // The command is done: what it left running in the background is its own.
            group.release();
            out
        }
        _ = deadline => {
            stop(&mut child, spec.signal).await;
            group.release();
            Err(ResError::transient(format!(
                "`{}` timed out after {:?}",
                spec.argv().join(" "),
                spec.timeout.unwrap_or_default()
            )))
        }
        _ = cancel.cancelled() => {
            stop(&mut child, spec.signal).await;
            group.release();
            Err(ResError::new(format!("`{}` was interrupted", spec.argv().join(" "))))
        }
    }
}

async fn collect(child: &mut Child, bounded: Streams) -> Result<CmdOutput, ResError> {
    let mut out = child.stdout.take().ok_or_else(|| ResError::new("no stdout pipe"))?;
    let mut err = child.stderr.take().ok_or_else(|| ResError::new("no stderr pipe"))?;
    let mut stdout = Kept::new(bounded.stdout);
    let mut stderr = Kept::new(bounded.stderr);
    let mut output = Kept::new(bounded.output);
    let (mut out_open, mut err_open) = (true, true);
    let (mut buf_out, mut buf_err) = ([0u8; 4096], [0u8; 4096]);
    while out_open || err_open {
        tokio::select! {
            n = out.read(&mut buf_out), if out_open => {
                let n = n.map_err(|e| ResError::new(format!("reading the command's output: {e}")))?;
                if n == 0 { out_open = false } else { stdout.push(&buf_out[..n]); output.push(&buf_out[..n]); }
            }
            n = err.read(&mut buf_err), if err_open => {
                let n = n.map_err(|e| ResError::new(format!("reading the command's output: {e}")))?;
                if n == 0 { err_open = false } else { stderr.push(&buf_err[..n]); output.push(&buf_err[..n]); }
            }
        }
    }
    let status = child.wait().await.map_err(|e| ResError::new(format!("waiting for the command: {e}")))?;
    let (stdout, bad_out) = stdout.text();
    let (stderr, bad_err) = stderr.text();
    let (output, _) = output.text();
    let not_text = bad_out.map(|at| ("stdout", at)).or(bad_err.map(|at| ("stderr", at)));
    Ok(CmdOutput { stdout, stderr, output, code: status.code(), not_text })
}

/// One captured stream: all of it, or (bounded) its last [`TAIL`] bytes and how many
/// came before them.
struct Kept {
    bytes: Vec<u8>,
    bounded: bool,
    cut: u64,
}

impl Kept {
    fn new(bounded: bool) -> Kept {
        Kept { bytes: Vec::new(), bounded, cut: 0 }
    }

    fn push(&mut self, data: &[u8]) {
        self.bytes.extend_from_slice(data);
        // Cut at twice the tail, so the copy is paid once per TAIL bytes read.
        if self.bounded && self.bytes.len() > 2 * TAIL {
            let gone = self.bytes.len() - TAIL;
            self.bytes.drain(..gone);
            self.cut += gone as u64;
        }
    }

    /// The text, and for a stream kept whole that is not UTF-8, where it stops being so.
    /// A bounded stream is for reading (reports): it is said how much was cut, and bytes
    /// that are not text are shown as replacement characters.
    fn text(mut self) -> (String, Option<usize>) {
        if self.bounded && self.bytes.len() > TAIL {
            let gone = self.bytes.len() - TAIL;
            self.bytes.drain(..gone);
            self.cut += gone as u64;
        }
        if self.bounded {
            let mut text = String::from_utf8_lossy(&self.bytes).into_owned();
            if self.cut > 0 {
                // The cut may have split a character: its stray bytes are dropped.
                let from = text.find(|c| c != char::REPLACEMENT_CHARACTER).unwrap_or(text.len());
                text = format!("[{} bytes before this]\n{}", self.cut, &text[from..]);
            }
            return (text, None);
        }
        match String::from_utf8(self.bytes) {
            Ok(text) => (text, None),
            Err(e) => {
                let at = e.utf8_error().valid_up_to();
                (String::from_utf8_lossy(e.as_bytes()).into_owned(), Some(at))
            }
        }
    }
}

/// A spawned command's process group, killed (SIGKILL) when this is dropped before
/// [`Group::release`]: a caller that stops waiting (`Meta:timeout` drops the check-apply
/// in flight, a swap cancels a watch) takes the whole group down, not just the direct
/// child that `kill_on_drop` reaches, so no `sleep` under a `sh -c` outlives it.
pub struct Group(Option<Pid>);

impl Group {
    /// The group of `child`, spawned by [`CmdSpec::command`] (its own process group).
    pub fn of(child: &Child) -> Group {
        Group(child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw))
    }

    /// The command finished as it should: leave its group alone.
    pub fn release(&mut self) {
        self.0 = None;
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(pid) = self.0.take() {
            let _gone = killpg(pid, Signal::SIGKILL);
        }
    }
}

/// Signals the child's process group, escalating to SIGKILL after a second.
pub async fn stop(child: &mut Child, signal: Option<Signal>) {
    if let Some(pid) = child.id() {
        let _gone = killpg(Pid::from_raw(pid as i32), signal.unwrap_or(Signal::SIGTERM));
        if tokio::time::timeout(Duration::from_secs(1), child.wait()).await.is_ok() {
            return;
        }
        let _gone = killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
    }
    let _reaped = child.wait().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn captures_streams_and_exit_code() {
        let spec =
            CmdSpec { cmd: "echo out; echo err >&2; exit 3".into(), shell: "/bin/sh".into(), ..CmdSpec::default() };
        let out = run(&spec, &CancellationToken::new()).await.unwrap();
        assert_eq!(out.stdout, "out\n");
        assert_eq!(out.stderr, "err\n");
        assert_eq!(out.code, Some(3));
        assert!(out.output.contains("out\n") && out.output.contains("err\n"));
    }

    #[tokio::test]
    async fn environment_is_not_inherited_when_given() {
        let env = BTreeMap::from([("ONLY".to_string(), "me".to_string())]);
        let spec = CmdSpec { cmd: "/usr/bin/env".into(), env: Some(env), ..CmdSpec::default() };
        let out = run(&spec, &CancellationToken::new()).await.unwrap();
        assert_eq!(out.stdout, "ONLY=me\n");
    }

    #[tokio::test]
    async fn timeouts_kill_the_process_group() {
        let spec = CmdSpec {
            cmd: "sleep 30".into(),
            shell: "/bin/sh".into(),
            timeout: Some(Duration::from_millis(100)),
            ..CmdSpec::default()
        };
        let started = std::time::Instant::now();
        let err = run(&spec, &CancellationToken::new()).await.unwrap_err();
        assert!(err.message.contains("timed out"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
