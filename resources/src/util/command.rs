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
}

/// What it did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CmdOutput {
    pub stdout: String,
    pub stderr: String,
    /// stdout and stderr interleaved in arrival order.
    pub output: String,
    /// Exit code; `None` when killed by a signal.
    pub code: Option<i32>,
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
    let deadline = async {
        match spec.timeout {
            Some(t) => tokio::time::sleep(t).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        out = collect(&mut child) => out,
        _ = deadline => {
            stop(&mut child, spec.signal).await;
            Err(ResError::transient(format!(
                "`{}` timed out after {:?}",
                spec.argv().join(" "),
                spec.timeout.unwrap_or_default()
            )))
        }
        _ = cancel.cancelled() => {
            stop(&mut child, spec.signal).await;
            Err(ResError::new(format!("`{}` was interrupted", spec.argv().join(" "))))
        }
    }
}

async fn collect(child: &mut Child) -> Result<CmdOutput, ResError> {
    let mut out = child.stdout.take().ok_or_else(|| ResError::new("no stdout pipe"))?;
    let mut err = child.stderr.take().ok_or_else(|| ResError::new("no stderr pipe"))?;
    let (mut stdout, mut stderr, mut output) = (Vec::new(), Vec::new(), Vec::new());
    let (mut out_open, mut err_open) = (true, true);
    let (mut buf_out, mut buf_err) = ([0u8; 4096], [0u8; 4096]);
    while out_open || err_open {
        tokio::select! {
            n = out.read(&mut buf_out), if out_open => {
                let n = n.map_err(|e| ResError::new(format!("reading the command's output: {e}")))?;
                if n == 0 { out_open = false } else { stdout.extend_from_slice(&buf_out[..n]); output.extend_from_slice(&buf_out[..n]); }
            }
            n = err.read(&mut buf_err), if err_open => {
                let n = n.map_err(|e| ResError::new(format!("reading the command's output: {e}")))?;
                if n == 0 { err_open = false } else { stderr.extend_from_slice(&buf_err[..n]); output.extend_from_slice(&buf_err[..n]); }
            }
        }
    }
    let status = child.wait().await.map_err(|e| ResError::new(format!("waiting for the command: {e}")))?;
    Ok(CmdOutput {
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        output: String::from_utf8_lossy(&output).into_owned(),
        code: status.code(),
    })
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
