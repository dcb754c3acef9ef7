//! `tend check PATH`: every front-end stage, no execution.

use crate::cli::CheckFormat;
use crate::compile::{self, Report};
use std::path::Path;
use std::process::ExitCode;

pub fn run(path: &Path, format: CheckFormat, deny_warnings: bool, verbose: u8, hostname: Option<String>) -> ExitCode {
    let (registry, catalog) = compile::catalog(hostname.as_deref());
    let how = if format == CheckFormat::Json { Report::Json } else { Report::Human };
    let (program, outcome) = match compile::compile(path, &catalog) {
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
    let warnings = outcome.warnings.iter().cloned().collect::<Vec<_>>();
    if format == CheckFormat::Human && !warnings.is_empty() {
        crate::stderr::print(lang::render::render_all(&warnings, &outcome.sources, crate::stderr::color()));
    }
    let denied = deny_warnings && !warnings.is_empty();
    let nodes = outcome.graph.as_ref().map_or(0, |g| g.nodes.len());
    if verbose > 0
        && format == CheckFormat::Human
        && let Some(graph) = outcome.graph.clone()
        && has_virtual(&graph.stmts)
    {
        list_unrealized(graph, registry, &program.root, hostname, &outcome.sources);
    }
    match format {
        CheckFormat::Json => {
            let warnings: Vec<_> = warnings.iter().map(|d| lang::render::to_json(d, &outcome.sources)).collect();
            let doc = serde_json::json!({"ok": !denied, "nodes": nodes, "warnings": warnings});
            crate::stdout::line(format_args!("{doc}"))
        }
        CheckFormat::Human if denied => {
            crate::stderr::line(format_args!("error: {} warning(s), denied by --deny warnings", warnings.len()))
        }
        CheckFormat::Human => crate::stderr::line(format_args!(
            "ok: {} file(s), {nodes} function graph node(s){}",
            outcome.sources.files().count(),
            match warnings.len() {
                0 => String::new(),
                n => format!(", {n} warning(s)"),
            }
        )),
    }
    if denied { ExitCode::from(1) } else { ExitCode::SUCCESS }
}

/// Whether the program declares a virtual or exported resource anywhere.
fn has_virtual(stmts: &[lang::ir::IrStmt]) -> bool {
    use lang::ir::IrStmt;
    stmts.iter().any(|s| match s {
        IrStmt::Resource(r) => r.virtuality != lang::output::Virtuality::Real,
        IrStmt::If { then, els, .. } => has_virtual(then) || has_virtual(els),
        IrStmt::For { body, .. } => has_virtual(body),
        IrStmt::Instance(i) => i.virtuality != lang::output::Virtuality::Real || has_virtual(&i.body),
        _ => false,
    })
}

/// `-v`: runs the dataflow once (as `tend graph` does) and names the virtual resources
/// nothing realizes, which the graph leaves out silently.
fn list_unrealized(
    graph: lang::ir::FuncGraph,
    registry: funcs::registry::Registry,
    root: &Path,
    hostname: Option<String>,
    sources: &lang::span::SourceMap,
) {
    let output = match compile::first_output(graph, registry, root, hostname, 10.0) {
        Ok(Ok(output)) => output,
        Ok(Err(d)) => {
            crate::stderr::line(format_args!("note: cannot list unrealized virtual resources: {}", d.message));
            return;
        }
        Err(e) => {
            crate::stderr::line(format_args!("note: cannot list unrealized virtual resources: {e}"));
            return;
        }
    };
    for r in lang::interpret::unrealized(&output) {
        let file = sources.get(r.span.file);
        let lc = file.line_col(r.span.start);
        crate::stderr::line(format_args!(
            "note: virtual resource {}[{}] ({}:{}:{}) is realized by nothing: it is not in the graph",
            r.kind, r.name, file.name, lc.line, lc.col
        ));
    }
}
