//! Running external tools for the backends of system kinds: one call with an argv (plus
//! extra environment), and event streams from tools that print one line per event
//! (`virsh event --loop`, `docker events`), followed by a watch loop that respawns the
//! tool when it exits (a daemon restart closes the stream) and filters relevant lines.

use std::time::Duration;

use engine::{ResError, WatchCtx};
use futures::StreamExt;
use futures::stream::BoxStream;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::command::{self, CmdOutput, CmdSpec};

/// A stream of event lines; it ends (or yields an error) when the source goes away.
pub type Lines = BoxStream<'static, Result<String, ResError>>;

/// How long [`follow`] waits before respawning an event source that ended.
pub const RESPAWN_DELAY: Duration = Duration::from_secs(5);

/// The spec that runs `argv` with the inherited environment plus `env`.
pub fn spec(argv: &[String], env: &[(String, String)]) -> CmdSpec {
    let mut spec = CmdSpec {
        cmd: argv.first().cloned().unwrap_or_default(),
        args: argv.iter().skip(1).cloned().collect(),
        ..CmdSpec::default()
    };
    if !env.is_empty() {
        let mut all: std::collections::BTreeMap<String, String> = std::env::vars().collect();
        all.extend(env.iter().cloned());
        spec.env = Some(all);
    }
    spec
}

/// Runs `argv` to completion (cancelled with `cancel`).
pub async fn run_tool(
    argv: &[String],
    env: &[(String, String)],
    cancel: &CancellationToken,
) -> Result<CmdOutput, ResError> {
    command::run(&spec(argv, env), cancel).await
}

/// Runs `argv` and fails with its output unless it exits 0.
pub async fn run_tool_ok(argv: &[String], env: &[(String, String)]) -> Result<CmdOutput, ResError> {
    let out = run_tool(argv, env, &CancellationToken::new()).await?;
    if out.success() {
        Ok(out)
    } else {
        Err(ResError::new(format!("`{}` failed: {}", argv.join(" "), out.output.trim())))
    }
}

/// Spawns `argv` and streams its stdout line by line. The process is killed when the
/// stream is dropped; its exit ends the stream with an error.
pub fn line_stream(argv: &[String], env: &[(String, String)]) -> Result<Lines, ResError> {
    lines_of(&spec(argv, env))
}

/// [`line_stream`] of the command `spec` says (its user, group and environment too).
pub fn lines_of(spec: &CmdSpec) -> Result<Lines, ResError> {
    let shown = spec.argv().join(" ");
    let mut child = spec
        .command()?
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| ResError::new(format!("cannot run `{shown}`: {e}")))?;
    let stdout = child.stdout.take().ok_or_else(|| ResError::new("no stdout pipe"))?;
    let lines = BufReader::new(stdout).lines();
    // The child and its group ride along in the state so that dropping the stream kills
    // them (the group first: a tuple drops in order, and the unreaped child keeps its id).
    let group = super::command::Group::of(&child);
    let stream = futures::stream::unfold(Some((lines, group, child, shown)), |state| async move {
        let (mut lines, group, child, shown) = state?;
        match lines.next_line().await {
            Ok(Some(line)) => Some((Ok(line), Some((lines, group, child, shown)))),
            Ok(None) => Some((Err(ResError::new(format!("`{shown}` exited"))), None)),
            Err(e) => Some((Err(ResError::new(format!("`{shown}`: {e}"))), None)),
        }
    });
    Ok(stream.boxed())
}

/// The lines sent on `tx` from now on, as an event source (for the in-memory backends).
pub fn broadcast_lines(tx: &tokio::sync::broadcast::Sender<String>) -> Lines {
    use tokio::sync::broadcast::error::RecvError;
    futures::stream::unfold(tx.subscribe(), |mut rx| async move {
        match rx.recv().await {
            Ok(line) => Some((Ok(line), rx)),
            // Events were dropped: an error makes the follower reopen the source.
            Err(RecvError::Lagged(_)) => Some((Err(ResError::new("events were dropped")), rx)),
            Err(RecvError::Closed) => None,
        }
    })
    .boxed()
}

/// A watch loop over an event source: opens it, reports the startup event, then one event
/// per line that `relevant` accepts. When the source ends it is reopened after
/// [`RESPAWN_DELAY`] with an event (changes may have been missed meanwhile); a failure to
/// open it is the watch's error.
pub async fn follow(
    ctx: WatchCtx,
    open: impl Fn() -> Result<Lines, ResError>,
    relevant: impl Fn(&str) -> bool,
) -> Result<(), ResError> {
    follow_with_delay(ctx, open, relevant, RESPAWN_DELAY).await
}

/// [`follow`] with a chosen respawn delay.
pub async fn follow_with_delay(
    ctx: WatchCtx,
    open: impl Fn() -> Result<Lines, ResError>,
    relevant: impl Fn(&str) -> bool,
    delay: Duration,
) -> Result<(), ResError> {
    let mut lines = open()?;
    ctx.event();
    loop {
        tokio::select! {
            _ = ctx.cancelled() => return Ok(()),
            line = lines.next() => match line {
                Some(Ok(line)) => {
                    if relevant(&line) {
                        ctx.event();
                    }
                }
                ended => {
                    let why = match ended {
                        Some(Err(e)) => e.message,
                        _ => "event stream ended".to_string(),
                    };
                    tracing::debug!(resource = %ctx.key(), error = %why, "event source ended; reopening");
                    tokio::select! {
                        _ = ctx.cancelled() => return Ok(()),
                        _ = tokio::time::sleep(delay) => {}
                    }
                    lines = open()?;
                    ctx.event();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_line_stream_yields_lines_then_the_exit() {
        let argv: Vec<String> = ["/bin/sh", "-c", "echo one; echo two"].iter().map(|s| s.to_string()).collect();
        let mut lines = line_stream(&argv, &[]).unwrap();
        assert_eq!(lines.next().await.unwrap().unwrap(), "one");
        assert_eq!(lines.next().await.unwrap().unwrap(), "two");
        assert!(lines.next().await.unwrap().unwrap_err().message.contains("exited"));
        assert!(lines.next().await.is_none());
    }

    #[tokio::test]
    async fn extra_environment_is_added_to_the_inherited_one() {
        let argv: Vec<String> = ["/bin/sh", "-c", "echo $TEND_X-$PATH"].iter().map(|s| s.to_string()).collect();
        let out = run_tool_ok(&argv, &[("TEND_X".into(), "y".into())]).await.unwrap();
        assert!(out.stdout.starts_with("y-") && out.stdout.trim().len() > 2, "{}", out.stdout);
        let fail: Vec<String> = ["/bin/sh", "-c", "echo bad >&2; exit 2"].iter().map(|s| s.to_string()).collect();
        assert!(run_tool_ok(&fail, &[]).await.unwrap_err().message.contains("bad"));
    }
}
