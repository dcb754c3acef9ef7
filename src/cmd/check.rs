//! `tend check PATH`: every front-end stage, no execution.

use crate::cli::CheckFormat;
use crate::compile::{self, Report};
use std::path::Path;
use std::process::ExitCode;

pub fn run(path: &Path, format: CheckFormat) -> ExitCode {
    let (_, catalog) = compile::catalog();
    let how = if format == CheckFormat::Json { Report::Json } else { Report::Human };
    let (_, outcome) = match compile::compile(path, &catalog) {
        Ok(x) => x,
        Err(e) => {
            crate::stderr::line(format_args!("error: {e}"));
            return ExitCode::from(2);
        }
    };
    if !outcome.diagnostics.is_empty() {
        compile::report(&outcome.diagnostics.into_vec(), &outcome.sources, how);
        return ExitCode::from(1);
    }
    let nodes = outcome.graph.as_ref().map_or(0, |g| g.nodes.len());
    match format {
        CheckFormat::Json => crate::stdout::line(format_args!("{}", serde_json::json!({"ok": true, "nodes": nodes}))),
        CheckFormat::Human => crate::stderr::line(format_args!(
            "ok: {} file(s), {nodes} function graph node(s)",
            outcome.sources.files().count()
        )),
    }
    ExitCode::SUCCESS
}
