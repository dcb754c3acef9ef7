//! Rendering diagnostics for people (ariadne, with source excerpts) and for machines (JSON).

use crate::diag::Diagnostic;
use crate::span::{SourceMap, Span};
use ariadne::{Config, IndexType, Label, Report, ReportKind};

/// Renders one diagnostic with source excerpts. `color` adds ANSI colors.
pub fn render(diag: &Diagnostic, sources: &SourceMap, color: bool) -> String {
    let config = Config::new().with_index_type(IndexType::Byte).with_color(color);
    let title = format!("{}: {}", diag.stage, diag.message);
    let Some(primary) = diag.span else {
        let mut out = format!("error: {title}\n");
        for note in &diag.notes {
            out.push_str(&format!("  = note: {note}\n"));
        }
        return out;
    };
    let name = |s: Span| sources.get(s.file).name.clone();
    let clamp = |s: Span| {
        let len = sources.get(s.file).text.len();
        let start = (s.start as usize).min(len);
        let end = (s.end as usize).clamp(start, len);
        start..end
    };
    let mut report = Report::build(ReportKind::Error, (name(primary), clamp(primary)))
        .with_config(config)
        .with_message(format!("{title}: {}", sources.byline(primary)))
        .with_label(Label::new((name(primary), clamp(primary))).with_message(primary_label(diag)));
    for label in &diag.labels {
        report = report.with_label(Label::new((name(label.span), clamp(label.span))).with_message(&label.message));
    }
    for note in &diag.notes {
        report = report.with_note(note);
    }
    let mut files = vec![primary.file];
    files.extend(diag.labels.iter().map(|l| l.span.file));
    files.sort();
    files.dedup();
    let cache = ariadne::sources(files.into_iter().map(|f| (sources.get(f).name.clone(), sources.get(f).text.clone())));
    let mut buf = Vec::new();
    if report.finish().write(cache, &mut buf).is_err() {
        return format!("error: {title}: {}\n", sources.byline(primary));
    }
    String::from_utf8_lossy(&buf).into_owned()
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
            "line": a.line, "column": a.col,
            "end_line": b.line, "end_column": b.col,
            "byte_start": s.start, "byte_end": s.end,
        })
    };
    serde_json::json!({
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
        assert!(text.contains("errUnify: type error: int != str: /main.mcl @ 2:11-2:14"), "{text}");
        assert!(text.contains("expected `int` because of this"), "{text}");
        assert!(text.contains("$y = $x + \"a\""), "{text}");
        let j = to_json(&d, &map);
        assert_eq!(j["span"]["line"], 2);
        assert_eq!(j["span"]["column"], 11);
        assert_eq!(j["labels"][0]["span"]["line"], 1);
    }
}
