//! `exec`: runs a command, guarded by `creates`, `ifcmd` (+ `ifequals`), `nifcmd` and
//! `mtimes`; optionally follows up with `donecmd`. Sends `output`, `stdout`, `stderr` and
//! `exitcode` of the last run (kept in the var dir so they survive restarts).
//!
//! Watch: `watchcmd` (each non-empty stdout line is an event, its exit a watch error) plus
//! `watchfiles`, `creates` and `mtimes` through the shared file watcher.
//!
//! Refresh: as in mgmt, an exec ignores notifications, unless it sets `refreshonly =>
//! true` (Puppet's parameter, an extension: no mgmt program sets it). Such an exec runs
//! only when a notification reaches it (`~>`, `Notify =>`), its guards still applying.
//! A shell runs only when `shell` is set; otherwise `cmd` is split on whitespace (or `args`
//! is the argv). The environment is exactly `env` (nothing inherited) when given.

use lang::params::ParamMap;
use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use engine::{ApplyCtx, InitCtx, Payload, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use lang::value::Value;
use nix::sys::signal::Signal;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_util::sync::CancellationToken;

use crate::contract::autoedge::{Edges, Index, str_param};
use crate::contract::common::{Raw, sends};
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::util::command::{self, CmdOutput, CmdSpec};
use crate::util::fs::{lookup_gid, lookup_uid};
use crate::util::watch::FileWatch;

crate::params! {
    /// `exec`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct ExecParams {
        /// The command; defaults to the resource's name.
        pub cmd: String => |p, f| p.str_or(f, p.name),
        pub args: Vec<String>,
        pub cwd: String,
        pub shell: String,
        pub env: Option<BTreeMap<String, String>>,
        pub sig: String,
        /// Seconds; 0 = none (prefer `Meta:timeout`).
        pub timeout: u64,
        pub watchcmd: String,
        pub watchcwd: String,
        pub watchshell: String,
        pub watchfiles: Vec<String>,
        pub ifcmd: String,
        pub ifcwd: String,
        pub ifshell: String,
        pub ifequals: Option<String>,
        pub ifequals_stdout: Option<String>,
        pub nifcmd: String,
        pub nifcwd: String,
        pub nifshell: String,
        pub creates: String,
        pub mtimes: Vec<String>,
        pub donecmd: String,
        pub donecwd: String,
        pub doneshell: String,
        pub user: String,
        pub group: String,
        pub send_output: Option<String>,
        pub send_stdout: Option<String>,
        pub send_stderr: Option<String>,
        /// Run only when notified (Puppet's `refreshonly`); otherwise notifications are
        /// ignored, as in mgmt.
        pub refreshonly: bool,
    }
}

impl ExecParams {
    fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.cmd.trim().is_empty() {
            return Err(("cmd", "must not be empty".into()));
        }
        if !self.args.is_empty() && !self.shell.is_empty() {
            return Err(("args", "cannot be combined with shell (put the whole command line in cmd)".into()));
        }
        if !self.args.is_empty() && self.cmd.contains(char::is_whitespace) {
            return Err(("args", "cannot be combined with arguments in cmd".into()));
        }
        if !self.sig.is_empty() {
            signal(&self.sig).map_err(|e| ("sig", e))?;
        }
        if (self.ifequals.is_some() || self.ifequals_stdout.is_some()) && self.ifcmd.is_empty() {
            return Err(("ifequals", "needs ifcmd".into()));
        }
        for (field, paths) in [
            ("creates", std::slice::from_ref(&self.creates)),
            ("watchfiles", &self.watchfiles),
            ("mtimes", &self.mtimes),
        ] {
            for path in paths.iter().filter(|p| !p.is_empty()) {
                crate::util::path::check(path).map_err(|m| (field, m))?;
            }
        }
        if let Some(env) = &self.env
            && env.keys().any(|k| k.is_empty() || k.contains('='))
        {
            return Err(("env", "variable names must be non-empty and contain no `=`".into()));
        }
        Ok(())
    }
}

fn signal(name: &str) -> Result<Signal, String> {
    let full = if name.starts_with("SIG") { name.to_string() } else { format!("SIG{name}") };
    Signal::from_str(&full.to_uppercase()).map_err(|_| format!("unknown signal `{name}`"))
}

pub struct Exec {
    raw: Raw,
    params: ExecParams,
    /// The last run's output; restored from the var dir at init.
    last: Option<CmdOutput>,
    var_dir: Option<PathBuf>,
    /// The streams no send/recv edge receives, of which only a tail is kept (issue 44:
    /// a 100 MB output held whole cost 645 MB); `None` until the graph says
    /// ([`Resource::received_fields`]), when every stream is kept whole.
    bounded: Option<command::Streams>,
}

impl Exec {
    pub fn build(name: &str, values: &ParamMap) -> Result<Exec, BuildError> {
        let (raw, params) = Raw::decoded("exec", name, values, ExecParams::decode)?;
        Ok(Exec { raw, params, last: None, var_dir: None, bounded: None })
    }

    fn spec(&self, cmd: &str, cwd: &str, shell: &str, args: &[String]) -> Result<CmdSpec, ResError> {
        let p = &self.params;
        Ok(CmdSpec {
            cmd: cmd.to_string(),
            args: args.to_vec(),
            shell: shell.to_string(),
            cwd: cwd.to_string(),
            env: p.env.clone(),
            uid: if p.user.is_empty() { None } else { Some(lookup_uid(&p.user).map_err(ResError::new)?) },
            gid: if p.group.is_empty() { None } else { Some(lookup_gid(&p.group).map_err(ResError::new)?) },
            signal: if p.sig.is_empty() { None } else { Some(signal(&p.sig).map_err(ResError::new)?) },
            timeout: (p.timeout > 0).then(|| Duration::from_secs(p.timeout)),
            bounded: command::Streams::default(),
        })
    }

    /// Why the run's output cannot be sent: a stream another resource receives whole
    /// that is not UTF-8 text (its text would carry other bytes than the command wrote).
    fn unsendable(&self, out: &CmdOutput) -> Option<String> {
        let (stream, at) = out.not_text?;
        let bounded = self.bounded.unwrap_or_default();
        let read = match stream {
            "stdout" => !bounded.stdout || !bounded.output,
            _ => !bounded.stderr || !bounded.output,
        };
        read.then(|| {
            format!(
                "exec[{}]: `{}` wrote bytes to its {stream} that are not UTF-8 text (byte {at} is not), and \
                 its output is sent to another resource: tend's strings hold text, and it will not change \
                 the bytes it sends",
                self.raw.name, self.params.cmd
            )
        })
    }

    /// Whether a guard says the command must not run.
    async fn guarded(&self, cancel: &CancellationToken) -> Result<bool, ResError> {
        let p = &self.params;
        if !p.creates.is_empty() && fs::symlink_metadata(&p.creates).is_ok() {
            return Ok(true);
        }
        if !p.ifcmd.is_empty() {
            let out = command::run(&self.spec(&p.ifcmd, &p.ifcwd, &p.ifshell, &[])?, cancel).await?;
            if !out.success() {
                return Ok(true);
            }
            if p.ifequals.as_ref().is_some_and(|want| *want == out.output)
                || p.ifequals_stdout.as_ref().is_some_and(|want| *want == out.stdout)
            {
                return Ok(true);
            }
        }
        if !p.nifcmd.is_empty() {
            let out = command::run(&self.spec(&p.nifcmd, &p.nifcwd, &p.nifshell, &[])?, cancel).await?;
            if out.success() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Whether an `mtimes` file changed after the last successful run (forces a run).
    fn mtimes_newer(&self) -> Result<bool, ResError> {
        if self.params.mtimes.is_empty() {
            return Ok(false);
        }
        let last =
            self.var_dir.as_ref().and_then(|d| fs::metadata(d.join(LAST_RUN)).ok()).and_then(|m| m.modified().ok());
        for path in &self.params.mtimes {
            let modified = fs::metadata(path)
                .and_then(|m| m.modified())
                .map_err(|e| ResError::new(format!("exec: mtimes file `{path}`: {e}")))?;
            if last.is_none_or(|l| modified > l) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Saves the last run's output for the next start (sends survive restarts) and marks
    /// the time of the run (for `mtimes`): one file, rewritten in place and not fsynced.
    /// Not renamed over either: on ext4 a rename over an existing file (or a truncation to
    /// zero) makes the kernel flush the new data at once, which cost a chain of 1,000 execs
    /// a third of its time. A crash mid-write leaves a record that does not decode (the
    /// `end` line is missing or not last): the next start behaves as if it never ran.
    fn persist(&self, out: &CmdOutput) {
        let Some(dir) = &self.var_dir else { return };
        let saved = fs::create_dir_all(dir).and_then(|()| rewrite_in_place(&dir.join(LAST_RUN), &encode_run(out)));
        if let Err(e) = saved {
            tracing::warn!(resource = %format!("exec[{}]", self.raw.name), error = %e, "cannot save the output");
        }
    }
}

/// The file in the var dir holding the last run (its mtime is the time of that run).
const LAST_RUN: &str = "last-run";

/// Overwrites `path` with `data` (writing, then cutting off what is left of a longer old
/// content), creating it if needed.
fn rewrite_in_place(path: &std::path::Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = fs::OpenOptions::new().write(true).create(true).truncate(false).open(path)?;
    file.write_all(data)?;
    file.set_len(data.len() as u64)
}

/// `code N`, then `stdout`, `stderr` and `output`, each as `NAME LEN` and LEN bytes, then
/// `end`.
fn encode_run(out: &CmdOutput) -> Vec<u8> {
    let mut buf = format!("code {}\n", out.code.unwrap_or(-1)).into_bytes();
    for (name, text) in [("stdout", &out.stdout), ("stderr", &out.stderr), ("output", &out.output)] {
        buf.extend_from_slice(format!("{name} {}\n", text.len()).as_bytes());
        buf.extend_from_slice(text.as_bytes());
        buf.push(b'\n');
    }
    buf.extend_from_slice(b"end\n");
    buf
}

/// The inverse of [`encode_run`]; `None` for anything malformed.
fn decode_run(data: &str) -> Option<CmdOutput> {
    let (head, mut rest) = data.split_once('\n')?;
    let code: i32 = head.strip_prefix("code ")?.parse().ok()?;
    let mut field = |name: &str| -> Option<String> {
        let (head, tail) = rest.split_once('\n')?;
        let len: usize = head.strip_prefix(name)?.trim().parse().ok()?;
        let text = tail.get(..len)?.to_string();
        rest = tail.get(len..)?.strip_prefix('\n')?;
        Some(text)
    };
    let (stdout, stderr, output) = (field("stdout")?, field("stderr")?, field("output")?);
    if rest != "end\n" {
        return None; // Cut short, or the tail of a longer record written before.
    }
    Some(CmdOutput { stdout, stderr, output, code: (code >= 0).then_some(code), not_text: None })
}

#[async_trait]
impl Resource for Exec {
    fn validate(&self) -> Result<(), ResError> {
        self.params.validate().map_err(|(field, message)| self.raw.invalid(Some(field), message))
    }

    async fn init(&mut self, ctx: &InitCtx) -> Result<(), ResError> {
        let dir = ctx.var_dir();
        self.last = fs::read_to_string(dir.join(LAST_RUN)).ok().and_then(|d| decode_run(&d));
        self.var_dir = Some(dir);
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let p = self.params.clone();
        let spec = self.spec(&p.watchcmd, &p.watchcwd, &p.watchshell, &[]);
        let mut files: Vec<PathBuf> = p.watchfiles.iter().chain(&p.mtimes).map(PathBuf::from).collect();
        if !p.creates.is_empty() {
            files.push(PathBuf::from(&p.creates));
        }
        Box::pin(async move {
            let mut file_watch = if files.is_empty() { None } else { Some(FileWatch::new(files, false)?) };
            let mut lines = None;
            let mut child = None;
            // Declared after the child, so dropped first: the group dies while its leader
            // is not yet reaped (its id cannot have been reused).
            let mut group = None;
            if !p.watchcmd.is_empty() {
                let mut spawned = spec?
                    .command()?
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .map_err(|e| ResError::new(format!("cannot run watchcmd `{}`: {e}", p.watchcmd)))?;
                lines = spawned.stdout.take().map(|out| BufReader::new(out).lines());
                group = Some(command::Group::of(&spawned));
                child = Some(spawned);
            }
            ctx.event();
            loop {
                tokio::select! {
                    _ = ctx.cancelled() => {
                        if let Some(child) = child.as_mut() {
                            command::stop(child, None).await;
                        }
                        if let Some(group) = group.as_mut() {
                            group.release();
                        }
                        return Ok(());
                    }
                    changed = async { match file_watch.as_mut() { Some(w) => w.changed().await, None => std::future::pending().await } } => {
                        changed?;
                        ctx.event();
                    }
                    line = async { match lines.as_mut() { Some(l) => l.next_line().await, None => std::future::pending().await } } => {
                        match line.map_err(|e| ResError::new(format!("reading watchcmd's output: {e}")))? {
                            Some(line) if line.trim().is_empty() => {}
                            Some(_) => ctx.event(),
                            None => return Err(ResError::new(format!("watchcmd `{}` exited", p.watchcmd))),
                        }
                    }
                }
            }
        })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        if self.params.refreshonly && !ctx.refresh {
            return Ok(true);
        }
        let forced = self.mtimes_newer()?;
        if !forced && self.guarded(&ctx.cancel).await? {
            return Ok(true);
        }
        let p = self.params.clone();
        if !apply {
            ctx.report(format!("exec[{}]: would run `{}`", self.raw.name, p.cmd));
            return Ok(false);
        }
        let mut spec = self.spec(&p.cmd, &p.cwd, &p.shell, &p.args)?;
        spec.bounded = self.bounded.unwrap_or_default();
        let out = command::run(&spec, &ctx.cancel).await?;
        if let Some(why) = self.unsendable(&out) {
            // Neither kept nor saved: nothing sends a replacement of what the command wrote.
            self.last = None;
            return Err(ResError::new(why));
        }
        self.persist(&out);
        let failed = (!out.success()).then(|| {
            let status = out.code.map(|c| format!("exit status {c}")).unwrap_or_else(|| "a signal".into());
            let mut detail = String::new();
            for (name, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
                if let Some(tail) = tail(text, TAIL_LINES) {
                    detail.push_str(&format!("\n  {name}:\n{tail}"));
                }
            }
            format!("exec[{}]: `{}` failed with {status}{detail}", self.raw.name, p.cmd)
        });
        let code = out.code;
        self.last = Some(out);
        if let Some(failed) = failed {
            return Err(ResError::new(failed));
        }
        ctx.report(format!("ran `{}` (exit {})", p.cmd, code.unwrap_or(0)));
        if !p.donecmd.is_empty() {
            let done = command::run(&self.spec(&p.donecmd, &p.donecwd, &p.doneshell, &[])?, &ctx.cancel).await?;
            if !done.success() {
                return Err(ResError::new(format!("exec[{}]: donecmd `{}` failed", self.raw.name, p.donecmd)));
            }
        }
        Ok(false)
    }

    /// The params, and which streams are kept whole: a graph that starts receiving one
    /// builds the resource anew, so the output it sends is never a tail.
    fn fingerprint(&self) -> String {
        let mut print = self.params.fingerprint();
        if let Some(b) = self.bounded {
            print.push_str(&format!("|bounded:{}{}{}", b.stdout as u8, b.stderr as u8, b.output as u8));
        }
        print
    }

    fn received_fields(&mut self, fields: &[&str]) {
        let whole = |name: &str| fields.contains(&name);
        self.bounded =
            Some(command::Streams { stdout: !whole("stdout"), stderr: !whole("stderr"), output: !whole("output") });
    }

    fn refreshable(&self) -> bool {
        self.params.refreshonly
    }

    fn sends(&self) -> Option<BTreeMap<String, Payload>> {
        let p = &self.params;
        let (output, stdout, stderr, code) = match &self.last {
            Some(out) => (out.output.clone(), out.stdout.clone(), out.stderr.clone(), out.code.unwrap_or(-1)),
            None => (
                p.send_output.clone().unwrap_or_default(),
                p.send_stdout.clone().unwrap_or_default(),
                p.send_stderr.clone().unwrap_or_default(),
                0,
            ),
        };
        Some(sends(vec![
            ("output", Value::str(output)),
            ("stdout", Value::str(stdout)),
            ("stderr", Value::str(stderr)),
            ("exitcode", Value::Int(i64::from(code))),
        ]))
    }
}

/// How many of the last lines of a failed command's stdout and stderr its error quotes.
const TAIL_LINES: usize = 10;

/// The last `n` non-empty lines of `text`, indented, with a note of how many came before;
/// `None` when there are none.
fn tail(text: &str, n: usize) -> Option<String> {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    if lines.iter().all(|l| l.trim().is_empty()) {
        return None;
    }
    let skipped = lines.len().saturating_sub(n);
    let mut out = String::new();
    if skipped > 0 {
        out.push_str(&format!("    ({skipped} earlier lines)\n"));
    }
    let shown: Vec<String> = lines[skipped..].iter().map(|l| format!("    {l}")).collect();
    out.push_str(&shown.join("\n"));
    Some(out)
}

/// An `exec` comes after the `file` of each program it runs (or of its shell) and after
/// the `user` and `group` it runs as.
fn requires(index: &Index<'_>, idx: usize, _name: &str, params: &ParamMap, edges: &mut Edges) {
    let mut programs = Vec::new();
    for (cmd, shell) in [
        ("cmd", "shell"),
        ("watchcmd", "watchshell"),
        ("ifcmd", "ifshell"),
        ("nifcmd", "nifshell"),
        ("donecmd", "doneshell"),
    ] {
        let shell = str_param(params, shell).filter(|s| !s.is_empty());
        match (str_param(params, cmd).filter(|s| !s.is_empty()), shell) {
            (Some(_), Some(shell)) => programs.push(shell.to_string()),
            (Some(cmd), None) => programs.extend(cmd.split_whitespace().next().map(str::to_string)),
            _ => {}
        }
    }
    for program in programs.iter().filter(|p| p.starts_with('/')) {
        if let Some(file) = index.file(program) {
            edges.push((file, idx));
        }
    }
    for (param, kind) in [("user", "user"), ("group", "group")] {
        if let Some(name) = str_param(params, param).filter(|s| !s.is_empty())
            && let Some(other) = index.resource(kind, name)
        {
            edges.push((other, idx));
        }
    }
}

/// The `exec` kind: its params and send fields as the type checker sees them, and its constructor.
pub const EXEC: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("exec", ExecParams::FIELDS, |_host, name, params| {
        Ok(Box::new(Exec::build(name, params)?))
    })
    .sending(&[("output", "str"), ("stdout", "str"), ("stderr", "str"), ("exitcode", "int")])
    .autoedges(crate::contract::autoedge::Rules {
        provides: None,
        requires: Some(requires),
        reads: &[
            "cmd",
            "shell",
            "watchcmd",
            "watchshell",
            "ifcmd",
            "ifshell",
            "nifcmd",
            "nifshell",
            "donecmd",
            "doneshell",
            "user",
            "group",
        ],
    });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_quotes_the_tail_of_its_output() {
        assert_eq!(tail("", 3), None);
        assert_eq!(tail("\n  \n", 3), None);
        assert_eq!(tail("one\ntwo\n", 3).as_deref(), Some("    one\n    two"));
        let many: String = (1..=12).map(|i| format!("line {i}\n")).collect();
        assert_eq!(tail(&many, 2).as_deref(), Some("    (10 earlier lines)\n    line 11\n    line 12"));
    }

    #[test]
    fn a_saved_run_reads_back_exactly() {
        let out = CmdOutput {
            stdout: "line\nwith code 3\n".into(),
            stderr: String::new(),
            output: "é\nline\n".into(),
            code: Some(3),
            not_text: None,
        };
        assert_eq!(decode_run(&String::from_utf8(encode_run(&out)).unwrap()), Some(out.clone()));
        let killed = CmdOutput { code: None, ..out.clone() };
        assert_eq!(decode_run(&String::from_utf8(encode_run(&killed)).unwrap()), Some(killed));
        assert_eq!(decode_run("code 0\nstdout 99\nshort\n"), None);
        // A shorter record written over a longer one, cut off by a crash before the old tail
        // was trimmed: not decoded.
        let long = String::from_utf8(encode_run(&CmdOutput { stdout: "x".repeat(100), ..out.clone() })).unwrap();
        let short = String::from_utf8(encode_run(&out)).unwrap();
        assert_eq!(decode_run(&format!("{short}{}", &long[short.len()..])), None);
        // Rewritten in place, the file holds exactly the new record.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LAST_RUN);
        rewrite_in_place(&path, long.as_bytes()).unwrap();
        rewrite_in_place(&path, short.as_bytes()).unwrap();
        assert_eq!(decode_run(&fs::read_to_string(&path).unwrap()), Some(out.clone()));
    }
}
