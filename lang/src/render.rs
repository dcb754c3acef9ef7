//! Rendering diagnostics for people (ariadne, with source excerpts) and for machines (JSON).

use crate::diag::Diagnostic;
use crate::span::{SourceMap, Span};
use ariadne::{Config, IndexType, Label, Report, ReportKind};

/// Renders one diagnostic with source excerpts. `color` adds ANSI colors.
pub fn render(diag: &Diagnostic, sources: &SourceMap, color: bool) -> String {
    let config = Config::new().with_index_type(IndexType::Byte).with_color(color);
    let title = if diag.warning { diag.message.clone() } else { format!("{}: {}", diag.stage, diag.message) };
    let Some(primary) = diag.span else {
        let mut out = format!("error: {title}\n");
        for note in &diag.notes {
            out.push_str(&format!("  = note: {note}\n"));
        }
        return out;
    };
    let name = |s: Span| sources.get(s.file).shown_name().to_string();
    // Where the error is, as terminals and editors take it: `path:line:col`.
    let place = |s: Span| {
        let at = sources.get(s.file).line_col(s.start);
        format!("{}:{}:{}", name(s), at.line, at.col)
    };
    // Each file is shown through a window of the lines the labels touch (a long line cut
    // around the primary span), so rendering one diagnostic costs what it shows, not the
    // size of the file.
    let mut labels: Vec<(Span, String)> = vec![(primary, primary_label(diag))];
    labels.extend(diag.labels.iter().map(|l| (l.span, l.message.clone())));
    let mut windows: Vec<(crate::span::FileId, Window)> = Vec::new();
    let mut notes = diag.notes.clone();
    for (span, _) in &labels {
        if !windows.iter().any(|(f, _)| *f == span.file) {
            let spans: Vec<Span> = labels.iter().map(|(s, _)| *s).filter(|s| s.file == span.file).collect();
            let focus = if span.file == primary.file { primary } else { *span };
            windows.push((span.file, Window::of(sources.get(span.file), &spans, focus)));
        }
    }
    let window = |file| &windows.iter().find(|(f, _)| *f == file).expect("a window per file").1;
    let mut shown = Vec::new();
    for (span, message) in labels {
        match window(span.file).place(span) {
            Some(range) => shown.push((span.file, range, message)),
            None => {
                notes.push(format!("{message} (at {}, on a line too long to show)", place(span)));
            }
        }
    }
    let Some((_, first, _)) = shown.first().cloned() else {
        return format!("error: {title}: {}\n", place(primary));
    };
    // The header of a cut line's excerpt counts columns in the cut text: the title says
    // where the error really is.
    let title = if window(primary.file).cut { format!("{title} (at {})", place(primary)) } else { title };
    let kind = if diag.warning { ReportKind::Warning } else { ReportKind::Error };
    let mut report = Report::build(kind, (name(primary), first)).with_config(config).with_message(&title);
    for (i, (file, range, message)) in shown.into_iter().enumerate() {
        let label = Label::new((sources.get(file).shown_name().to_string(), range)).with_message(message);
        report = report.with_label(if i == 0 { label.with_priority(1) } else { label });
    }
    for note in &notes {
        report = report.with_note(note);
    }
    let shown_sources: std::collections::HashMap<String, ariadne::Source<String>> = windows
        .iter()
        .map(|(f, w)| (sources.get(*f).shown_name().to_string(), ariadne::Source::from(w.text.clone())))
        .collect();
    let missing = (|id: &String| Err(format!("no source `{id}`"))) as fn(&String) -> Result<String, String>;
    let cache = ariadne::FnCache::new(missing).with_sources(shown_sources);
    let mut buf = Vec::new();
    if report.finish().write(cache, &mut buf).is_err() {
        return format!("error: {title}: {}\n", place(primary));
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// How many diagnostics [`render_all`] shows before it counts the rest.
pub const SHOWN: usize = 50;

/// Every diagnostic rendered, in stage then source order, the first [`SHOWN`] in full and
/// the rest counted (a file with thousands of errors is not a wall of text).
pub fn render_all(diags: &[Diagnostic], sources: &SourceMap, color: bool) -> String {
    let mut order: Vec<&Diagnostic> = diags.iter().collect();
    order.sort_by_key(|d| (d.stage, d.span.map(|s| (s.file.0, s.start))));
    let mut out = String::new();
    for d in order.iter().take(SHOWN) {
        out.push_str(&render(d, sources, color));
        out.push('\n');
    }
    if order.len() > SHOWN {
        out.push_str(&format!(
            "error: {} more errors not shown (`tend check --format json` lists every one)\n",
            order.len() - SHOWN
        ));
    }
    out
}

/// Lines longer than this are cut around the span shown.
const LONG_LINE: usize = 240;
/// Bytes kept on each side of a span on a cut line.
const CONTEXT: usize = 60;

/// The part of a file a diagnostic shows: whole lines, or one cut line, after as many
/// empty lines as come before it in the file (so the excerpt's line numbers are the
/// file's; empty lines cost the renderer nothing).
struct Window {
    text: String,
    /// The file offset that the shown text starts at.
    base: usize,
    /// Bytes of `text` before the shown text (the empty lines, the `…` of a cut line).
    prefix: usize,
    /// Whether it shows a cut line (whose columns in the excerpt's header are the cut
    /// text's, not the file's).
    cut: bool,
}

impl Window {
    fn of(file: &crate::span::SourceFile, spans: &[Span], focus: Span) -> Window {
        let start = spans.iter().map(|s| s.start).min().unwrap_or(focus.start);
        let end = spans.iter().map(|s| s.end).max().unwrap_or(focus.end);
        let (first_line, first) = file.line_of(start);
        let (_, last) = file.line_of(end);
        let (range, cut) = if (first.start..last.end).len() <= LONG_LINE * 40 && !spans_long_lines(file, &first, &last)
        {
            (first.start..last.end, false)
        } else {
            // One cut line around the focus span.
            let (_, line) = file.line_of(focus.start);
            let a = (focus.start as usize).saturating_sub(CONTEXT).max(line.start);
            let b = (focus.end as usize + CONTEXT).min(line.end).max(a);
            (floor_char(&file.text, a)..floor_char(&file.text, b), true)
        };
        let (_, focus_line) = file.line_of(focus.start);
        let before = if cut && range.start > focus_line.start { "…" } else { "" };
        let after = if cut && range.end < focus_line.end { "…" } else { "" };
        let first_line = if cut { file.line_of(focus.start).0 } else { first_line };
        let pad = "\n".repeat(first_line);
        let text = format!("{pad}{before}{}{after}\n", &file.text[range.clone()]);
        Window { text, base: range.start, prefix: pad.len() + before.len(), cut }
    }

    /// `span` in the window's text, if the window shows it.
    fn place(&self, span: Span) -> Option<std::ops::Range<usize>> {
        let shown = self.text.len() - self.prefix;
        let (s, e) = (span.start as usize, (span.end as usize).min(self.base + shown));
        if s < self.base || s > self.base + shown {
            return None;
        }
        let at = |o: usize| floor_char(&self.text, o - self.base + self.prefix);
        Some(at(s)..at(e).max(at(s)))
    }
}

/// Whether any line from `first` to `last` is too long to show whole.
fn spans_long_lines(
    file: &crate::span::SourceFile,
    first: &std::ops::Range<usize>,
    last: &std::ops::Range<usize>,
) -> bool {
    file.text[first.start..last.end].split('\n').any(|l| l.len() > LONG_LINE)
}

/// `at`, moved back to a char boundary of `text`.
fn floor_char(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The text under the primary caret: the first line of the message, kept short.
fn primary_label(diag: &Diagnostic) -> String {
    let msg = &diag.message;
    if msg.len() > 80 { "here".to_string() } else { msg.clone() }
}

/// The machine-readable form used by `--format json`.
pub fn to_json(diag: &Diagnostic, sources: &SourceMap) -> serde_json::Value {
    let pos = |s: Span| {
        let f = sources.get(s.file);
        let a = f.line_col(s.start);
        let b = f.line_col(s.end);
        serde_json::json!({
            "file": f.name,
            "path": f.shown_name(),
            "line": a.line, "column": a.col,
            "end_line": b.line, "end_column": b.col,
            "byte_start": s.start, "byte_end": s.end,
        })
    };
    serde_json::json!({
        "severity": if diag.warning { "warning" } else { "error" },
        "stage": diag.stage.code(),
        "code": diag.code.map(|c| c.as_str()),
        "message": diag.message,
        "span": diag.span.map(pos),
        "labels": diag.labels.iter().map(|l| serde_json::json!({"message": l.message, "span": pos(l.span)})).collect::<Vec<_>>(),
        "notes": diag.notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Stage;
    use crate::span::SourceFile;

    #[test]
    fn renders_excerpt_with_both_labels() {
        let mut map = SourceMap::new();
        let id = map.add(SourceFile::new("/main.mcl", "$x int = 1\n$y = $x + \"a\"\n"));
        let d = Diagnostic::new(Stage::Unify, "type error: int != str", Span::new(id, 21, 24))
            .with_label(Span::new(id, 3, 6), "expected `int` because of this");
        let text = render(&d, &map, false);
        assert!(text.contains("errUnify: type error: int != str\n"), "{text}");
        assert!(text.contains("╭─[ /main.mcl:2:11 ]"), "{text}");
        assert!(text.contains("expected `int` because of this"), "{text}");
        assert!(text.contains("$y = $x + \"a\""), "{text}");
        let j = to_json(&d, &map);
        assert_eq!(j["span"]["line"], 2);
        assert_eq!(j["span"]["column"], 11);
        assert_eq!(j["labels"][0]["span"]["line"], 1);
    }

    #[test]
    fn files_are_shown_by_the_name_the_binary_gives_them() {
        let mut map = SourceMap::new();
        let id = map.add(SourceFile::new("/main.mcl", "$x = 1 + \"a\"\n"));
        map.files_mut().for_each(|f| f.shown = Some("site/main.mcl".into()));
        let d = Diagnostic::new(Stage::Unify, "type error", Span::new(id, 5, 12));
        let text = render(&d, &map, false);
        assert!(text.contains("╭─[ site/main.mcl:1:6 ]") && !text.contains("/main.mcl @"), "{text}");
        let j = to_json(&d, &map);
        assert_eq!(
            (j["span"]["file"].as_str(), j["span"]["path"].as_str()),
            (Some("/main.mcl"), Some("site/main.mcl"))
        );
    }

    #[test]
    fn shows_only_the_lines_it_points_at_with_their_numbers() {
        let mut map = SourceMap::new();
        let text: String = (1..=1000).map(|i| format!("$x{i} = {i}\n")).collect();
        let at = text.find("$x500 ").unwrap();
        let id = map.add(SourceFile::new("/main.mcl", text));
        let d = Diagnostic::new(Stage::Unify, "bad", Span::new(id, at, at + 5));
        let out = render(&d, &map, false);
        assert!(out.contains("500 │ $x500 = 500"), "{out}");
        assert!(!out.contains("$x499") && !out.contains("$x501"), "{out}");
    }

    #[test]
    fn a_long_line_is_cut_around_its_span() {
        let mut map = SourceMap::new();
        let mut line = "$a = 1 ".repeat(2000);
        let at = line.len();
        line.push_str("$b = 1 + \"x\"");
        let id = map.add(SourceFile::new("/main.mcl", format!("{line}\n")));
        let d = Diagnostic::new(Stage::Unify, "type error", Span::new(id, at + 5, at + 13))
            .with_label(Span::new(id, 0, 2), "far away on the same line");
        let out = render(&d, &map, false);
        assert!(out.contains("│ …") && out.contains("$a = 1 $a = 1") && out.contains("$b = 1 + \"x\""), "{out}");
        assert!(out.len() < 2000, "cut: {} bytes\n{out}", out.len());
        assert!(out.contains("far away on the same line (at /main.mcl:1:1, on a line too long to show)"), "{out}");
        assert!(out.contains("type error (at /main.mcl:1:14006)"), "positions stay the file's: {out}");
    }

    #[test]
    fn render_all_shows_fifty_in_source_order_and_counts_the_rest() {
        let mut map = SourceMap::new();
        let id = map.add(SourceFile::new("/main.mcl", "x\n".repeat(200)));
        let diags: Vec<Diagnostic> = (0..120usize)
            .rev()
            .map(|i| Diagnostic::new(Stage::Unify, format!("e{i}"), Span::new(id, i * 2, i * 2 + 1)))
            .collect();
        let out = render_all(&diags, &map, false);
        assert_eq!(out.matches("errUnify: e").count(), SHOWN);
        assert!(out.find("errUnify: e0\n").unwrap() < out.find("errUnify: e1\n").unwrap(), "source order");
        assert!(!out.contains("errUnify: e50\n"));
        assert!(
            out.ends_with("error: 70 more errors not shown (`tend check --format json` lists every one)\n"),
            "{out}"
        );
    }
}
