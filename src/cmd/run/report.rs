//! What `tend run` tells the person watching it, from the engine's events: one line per
//! change (`file[/etc/motd]: content changed (12 bytes)`), `print` messages as written,
//! failures with what they hold up, a progress line while a large graph first converges
//! (on a terminal), and the tally the summary, `--detailed-exitcodes` and `--format json`
//! are made from.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

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
    /// Keep every change's notes for the report at exit (`--noop`, `--format json`);
    /// otherwise they were shown and only the keys are kept.
    pub keep_notes: bool,
}

/// What happened during a run, for the summary and the exit status.
#[derive(Debug, Default)]
pub struct Tally {
    /// Resources in the last graph the engine accepted.
    pub resources: usize,
    /// Changes made (or, under `--noop`, resources that would change).
    pub changes: usize,
    /// The resources changed, with their notes, when [`Style::keep_notes`] (a large
    /// run's keys are not held only to be counted).
    pub changed: BTreeMap<ResKey, Vec<String>>,
    /// Resources whose last run failed for good, with the error.
    pub failed: BTreeMap<ResKey, String>,
    /// Events missed because they came faster than they could be shown.
    pub missed: u64,
}

impl Tally {
    fn note(&mut self, event: &EngineEvent, style: &Style, out: &mut String) {
        match event {
            EngineEvent::Swapped { started, unchanged, .. } => self.resources = started + unchanged,
            EngineEvent::Applied { key, changed, noop, reports } => {
                self.failed.remove(key);
                if !changed {
                    return;
                }
                if style.keep_notes {
                    if self.changed.insert(key.clone(), reports.clone()).is_none() {
                        self.changes += 1;
                    }
                } else {
                    self.changes += 1;
                }
                if style.show && !noop {
                    change_line(out, key, reports, style.color);
                }
            }
            EngineEvent::Failed { key, error, retrying } => {
                if !retrying {
                    self.failed.insert(key.clone(), error.message.clone());
                }
                failure_line(out, key, &error.message, *retrying, style.color);
            }
            EngineEvent::Flapping { key, repairs, within } => {
                let within = if within.as_secs() == 0 {
                    format!("{} ms", within.as_millis())
                } else {
                    format!("{:.1} s", within.as_secs_f64())
                };
                let _ = writeln!(
                    out,
                    "{}: {key}: another writer keeps changing it ({repairs} repairs in {within}); repairing it less \
                     often until it stops",
                    paint("warning", YELLOW, style.color),
                );
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

/// The progress line while a large graph first converges: drawn on a timer from the
/// engine's count of finished check-applies, cleared for every other line and at the end.
struct Progress {
    /// Resources in the graph being converged.
    total: usize,
    /// Check-applies finished, counted by the engine.
    checks: Arc<AtomicU64>,
    /// The count when the graph was swapped in.
    from: u64,
    /// The line is on screen.
    shown: bool,
    /// No (more) progress lines: the first convergence is over, or none are wanted.
    over: bool,
}

/// How long the reporter lets events gather after the first of a burst.
const GATHER: Duration = Duration::from_millis(5);

/// Graphs smaller than this converge too fast for a progress line to help.
const PROGRESS_FROM: usize = 500;
/// How often the progress line is redrawn.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

impl Progress {
    fn text(&self) -> String {
        let done = self.checks.load(Ordering::Relaxed).saturating_sub(self.from);
        let done = usize::try_from(done).unwrap_or(usize::MAX).min(self.total);
        format!("\r\x1b[Kconverging: {done}/{} resources", self.total)
    }

    fn wanted(&self) -> bool {
        !self.over && self.total >= PROGRESS_FROM
    }

    /// Writes `text` to stderr, the progress line cleared before it and drawn again after
    /// (when still wanted).
    fn write(&mut self, text: &str) {
        let mut buf = String::new();
        if self.shown {
            buf.push_str("\r\x1b[K");
            self.shown = false;
        }
        buf.push_str(text);
        if self.wanted() {
            buf.push_str(&self.text());
            self.shown = true;
        }
        if !buf.is_empty() {
            let _lost = std::io::stderr().lock().write_all(buf.as_bytes());
        }
    }
}

/// The reporter task: started before the first graph, finished when the run ends.
pub struct Reporter {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Tally>,
}

impl Reporter {
    pub fn start(engine: &engine::Engine, style: Style) -> Reporter {
        let mut events = engine.subscribe_changes();
        let mut converged = engine.converged();
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let mut progress = Progress {
            total: 0,
            checks: engine.checks_done(),
            from: 0,
            shown: false,
            over: !(style.progress && style.show),
        };
        let task = tokio::spawn(async move {
            let mut tally = Tally::default();
            let mut tick = tokio::time::interval(PROGRESS_EVERY);
            loop {
                let first = tokio::select! {
                    ev = events.recv() => ev,
                    _ = &mut stopped => break,
                    Ok(()) = converged.changed(), if !progress.over => {
                        if *converged.borrow_and_update() && progress.total > 0 {
                            progress.over = true;
                            progress.write("");
                        }
                        continue;
                    }
                    _ = tick.tick(), if progress.wanted() => {
                        progress.write("");
                        continue;
                    }
                };
                // A moment for the burst this event may start (a large graph's first
                // converge), so what it brings goes out in one write instead of one each.
                tokio::time::sleep(GATHER).await;
                let mut out = String::new();
                let mut next = Some(first);
                while let Some(ev) = next.take() {
                    match ev {
                        Ok(ev) => {
                            if let EngineEvent::Swapped { started, unchanged, .. } = ev
                                && progress.total == 0
                            {
                                progress.total = started + unchanged;
                                progress.from = progress.checks.load(Ordering::Relaxed);
                            }
                            tally.note(&ev, &style, &mut out);
                        }
                        Err(broadcast::error::RecvError::Lagged(n)) => tally.missed += n,
                        Err(broadcast::error::RecvError::Closed) => {
                            progress.over = true;
                            progress.write(&out);
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
                if !out.is_empty() {
                    progress.write(&out);
                }
            }
            // The run is over: what is already queued still counts.
            let mut out = String::new();
            loop {
                match events.try_recv() {
                    Ok(ev) => tally.note(&ev, &style, &mut out),
                    Err(broadcast::error::TryRecvError::Lagged(n)) => tally.missed += n,
                    Err(_) => break,
                }
            }
            progress.over = true;
            progress.write(&out);
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

/// The summary line at exit: `tend: 12 resources, 3 changed, 1 failed (0.41 s)`, with
/// `failed` resources (the engine's count at exit, which a run ending early may not have
/// seen as events).
pub fn summary(tally: &Tally, failed: usize, noop: bool, took: Duration) -> String {
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
        tally.changes,
        failed,
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
        let tally = Tally { resources: 3, changes: 1, ..Tally::default() };
        assert_eq!(
            summary(&tally, 1, false, Duration::from_millis(410)),
            "tend: 3 resources, 1 changed, 1 failed (410 ms)"
        );
        assert_eq!(
            summary(&tally, 1, true, Duration::from_millis(2500)),
            "tend: 3 resources, 1 would change, 1 failed (2.50 s)"
        );
    }
}
