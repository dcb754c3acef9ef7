//! What `tend run` tells the person watching it, from the engine's events: one line per
//! change (`file[/etc/motd]: content changed (12 bytes)`), `print` messages as written,
//! failures with what they hold up, a progress line while a large graph first converges
//! (on a terminal), and the tally the summary, `--detailed-exitcodes` and `--format json`
//! are made from.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{Duration, Instant};

use engine::{EngineEvent, ResKey};
use tokio::sync::broadcast;

/// How the lines look.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    /// Show changes, `print` messages and the summary (`-q` leaves only failures; the
    /// tally is kept either way).
    pub show: bool,
    /// ANSI colours (stderr is a terminal and `NO_COLOR` is unset).
    pub color: bool,
    /// A progress line while a large graph first converges (stderr is a terminal).
    pub progress: bool,
}

/// What happened during a run, for the summary and the exit status.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// Resources in the last graph the engine accepted.
    pub resources: usize,
    /// Resources changed (or, under `--noop`, that would change), with their notes.
    pub changed: BTreeMap<ResKey, Vec<String>>,
    /// Resources whose last run failed for good, with the error.
    pub failed: BTreeMap<ResKey, String>,
    /// Events missed because they came faster than they could be shown.
    pub missed: u64,
}

impl Tally {
    fn note(&mut self, event: &EngineEvent, style: &Style, out: &mut String, progress: &mut Progress) {
        match event {
            EngineEvent::Swapped { started, unchanged, .. } => {
                self.resources = started + unchanged;
                progress.total = self.resources;
            }
            EngineEvent::Applied { key, changed, noop, reports } => {
                progress.done += 1;
                self.failed.remove(key);
                if !changed {
                    return;
                }
                self.changed.insert(key.clone(), reports.clone());
                if style.show && !noop {
                    change_line(out, key, reports, style.color);
                }
            }
            EngineEvent::Failed { key, error, retrying } => {
                if !retrying {
                    progress.done += 1;
                    self.failed.insert(key.clone(), error.message.clone());
                }
                failure_line(out, key, &error.message, *retrying, style.color);
            }
            EngineEvent::Started(_) | EngineEvent::Stopped(_) | EngineEvent::Converged(_) => {}
        }
    }
}

/// One change: `KEY: NOTE, NOTE`; a `print` resource's message alone.
fn change_line(out: &mut String, key: &ResKey, notes: &[String], color: bool) {
    if &*key.kind == "print" {
        for note in notes {
            let _ = writeln!(out, "{note}");
        }
        return;
    }
    let what = if notes.is_empty() { "changed".to_string() } else { notes.join(", ") };
    let _ = writeln!(out, "{}: {what}", paint(&key.to_string(), GREEN, color));
}

/// The failures the tally has not shown (a run can end between a worker giving up and its
/// event), as lines for stderr.
pub fn unshown_failures(tally: &Tally, failures: &BTreeMap<ResKey, String>, color: bool) -> String {
    let mut out = String::new();
    for (key, message) in failures.iter().filter(|(k, _)| !tally.failed.contains_key(*k)) {
        failure_line(&mut out, key, message, false, color);
    }
    out
}

/// A failure: `error: KEY: MESSAGE` (the key once, even when the message starts with it).
fn failure_line(out: &mut String, key: &ResKey, message: &str, retrying: bool, color: bool) {
    let name = key.to_string();
    let message = message.strip_prefix(&name).and_then(|m| m.strip_prefix(": ")).unwrap_or(message);
    let label = if retrying { paint("warning", YELLOW, color) } else { paint("error", RED, color) };
    let then = if retrying { " (trying again)" } else { "" };
    let _ = writeln!(out, "{label}: {name}: {message}{then}");
}

const GREEN: &str = "32";
const YELLOW: &str = "33";
const RED: &str = "31";

fn paint(text: &str, code: &str, color: bool) -> String {
    if color { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_string() }
}

/// The progress line's state.
#[derive(Default)]
struct Progress {
    total: usize,
    done: usize,
    /// The line is on screen (to be cleared before anything else is written).
    shown: bool,
    /// The first convergence is over: no more progress lines.
    over: bool,
    last: Option<Instant>,
}

/// Graphs smaller than this converge too fast for a progress line to help.
const PROGRESS_FROM: usize = 500;
/// How often the progress line is redrawn.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

impl Progress {
    /// The line to draw now, if one is due.
    fn line(&mut self) -> Option<String> {
        if self.over || self.total < PROGRESS_FROM || self.last.is_some_and(|t| t.elapsed() < PROGRESS_EVERY) {
            return None;
        }
        self.last = Some(Instant::now());
        self.shown = true;
        Some(format!("\r\x1b[Kconverging: {}/{} resources", self.done.min(self.total), self.total))
    }
}

/// The reporter task: started before the first graph, finished when the run ends.
pub struct Reporter {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Tally>,
}

impl Reporter {
    pub fn start(mut events: broadcast::Receiver<EngineEvent>, style: Style) -> Reporter {
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let mut tally = Tally::default();
            let mut progress = Progress { over: !style.progress || !style.show, ..Progress::default() };
            loop {
                let first = tokio::select! {
                    ev = events.recv() => ev,
                    _ = &mut stopped => break,
                };
                // Everything already queued goes out in one write.
                let mut out = String::new();
                let mut next = Some(first);
                while let Some(ev) = next.take() {
                    match ev {
                        Ok(ev) => {
                            if let EngineEvent::Converged(true) = ev {
                                progress.over = true;
                            }
                            tally.note(&ev, &style, &mut out, &mut progress);
                        }
                        Err(broadcast::error::RecvError::Lagged(n)) => tally.missed += n,
                        Err(broadcast::error::RecvError::Closed) => {
                            write_out(&mut progress, &out, None);
                            return tally;
                        }
                    }
                    next = match events.try_recv() {
                        Ok(ev) => Some(Ok(ev)),
                        Err(broadcast::error::TryRecvError::Lagged(n)) => {
                            Some(Err(broadcast::error::RecvError::Lagged(n)))
                        }
                        Err(_) => None,
                    };
                }
                let line = progress.line();
                write_out(&mut progress, &out, line);
            }
            // The run is over: what is already queued still counts.
            let mut out = String::new();
            loop {
                match events.try_recv() {
                    Ok(ev) => tally.note(&ev, &style, &mut out, &mut progress),
                    Err(broadcast::error::TryRecvError::Lagged(n)) => tally.missed += n,
                    Err(_) => break,
                }
            }
            progress.over = true;
            write_out(&mut progress, &out, None);
            tally
        });
        Reporter { stop, task }
    }

    /// Stops following events and returns the tally.
    pub async fn finish(self) -> Tally {
        let _ = self.stop.send(());
        self.task.await.unwrap_or_default()
    }
}

/// Writes `text` to stderr, clearing the progress line first and redrawing `progress`
/// after.
fn write_out(state: &mut Progress, text: &str, progress: Option<String>) {
    if text.is_empty() && progress.is_none() && !(state.over && state.shown) {
        return;
    }
    let mut buf = String::new();
    if state.shown && (!text.is_empty() || state.over) {
        buf.push_str("\r\x1b[K");
        state.shown = progress.is_some();
    }
    buf.push_str(text);
    match progress {
        Some(p) => buf.push_str(&p),
        None if state.shown && !state.over => {
            let redraw = format!("\r\x1b[Kconverging: {}/{} resources", state.done.min(state.total), state.total);
            buf.push_str(&redraw);
        }
        None => state.shown = false,
    }
    let _lost = std::io::stderr().lock().write_all(buf.as_bytes());
}

/// The summary line at exit: `tend: 12 resources, 3 changed, 1 failed (0.41 s)`.
pub fn summary(tally: &Tally, noop: bool, took: Duration) -> String {
    let changed = if noop { "would change" } else { "changed" };
    let took = if took < Duration::from_secs(1) {
        format!("{} ms", took.as_millis())
    } else {
        format!("{:.2} s", took.as_secs_f64())
    };
    let mut line = format!(
        "tend: {} resource{}, {} {changed}, {} failed ({took})",
        tally.resources,
        if tally.resources == 1 { "" } else { "s" },
        tally.changed.len(),
        tally.failed.len(),
    );
    if tally.missed > 0 {
        let _ = write!(line, "; {} events came too fast to show", tally.missed);
    }
    line
}

/// The report of `--format json`: what changed (or would), what failed and what that held
/// up, and the counts.
pub fn json(
    tally: &Tally,
    failures: &BTreeMap<ResKey, String>,
    held_up: &BTreeMap<ResKey, ResKey>,
    noop: bool,
    applied: bool,
) -> String {
    let changes: Vec<serde_json::Value> = tally
        .changed
        .iter()
        .map(|(key, notes)| serde_json::json!({ "resource": key.to_string(), "notes": notes }))
        .collect();
    let failed: Vec<serde_json::Value> = failures
        .iter()
        .map(|(key, error)| serde_json::json!({ "resource": key.to_string(), "error": error }))
        .collect();
    let held: Vec<serde_json::Value> = held_up
        .iter()
        .map(|(key, cause)| serde_json::json!({ "resource": key.to_string(), "depends_on": cause.to_string() }))
        .collect();
    serde_json::json!({
        "noop": noop,
        "started": applied,
        "resources": tally.resources,
        "changes": changes,
        "failed": failed,
        "not_applied": held,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(kind: &str, name: &str) -> ResKey {
        ResKey::new(kind, name)
    }

    #[test]
    fn a_change_is_one_line_and_a_print_its_message() {
        let mut out = String::new();
        change_line(&mut out, &key("file", "/tmp/x"), &["created (3 bytes)".into(), "mode 0644 -> 0600".into()], false);
        change_line(&mut out, &key("svc", "nginx"), &[], false);
        change_line(&mut out, &key("print", "hello"), &["hello, world".into()], false);
        assert_eq!(out, "file[/tmp/x]: created (3 bytes), mode 0644 -> 0600\nsvc[nginx]: changed\nhello, world\n");
    }

    #[test]
    fn a_failure_names_its_resource_once() {
        let mut out = String::new();
        failure_line(&mut out, &key("exec", "m"), "exec[m]: `false` failed with exit status 1", false, false);
        failure_line(&mut out, &key("file", "/x"), "cannot write: denied", true, false);
        assert_eq!(
            out,
            "error: exec[m]: `false` failed with exit status 1\nwarning: file[/x]: cannot write: denied (trying again)\n"
        );
        let mut colored = String::new();
        failure_line(&mut colored, &key("file", "/x"), "no", false, true);
        assert_eq!(colored, "\x1b[31merror\x1b[0m: file[/x]: no\n");
    }

    #[test]
    fn the_summary_counts() {
        let mut tally = Tally { resources: 3, ..Tally::default() };
        tally.changed.insert(key("file", "/a"), vec![]);
        tally.failed.insert(key("exec", "b"), "no".into());
        assert_eq!(
            summary(&tally, false, Duration::from_millis(410)),
            "tend: 3 resources, 1 changed, 1 failed (410 ms)"
        );
        assert_eq!(
            summary(&tally, true, Duration::from_millis(2500)),
            "tend: 3 resources, 1 would change, 1 failed (2.50 s)"
        );
    }
}
