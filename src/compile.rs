//! Shared by every command: the catalog, compiling a program from disk, reporting errors.

use crate::loader::{FsLoader, ProgramPath};
use funcs::registry::Registry;
use lang::catalog::Catalog;
use lang::diag::Diagnostic;
use lang::span::SourceMap;
use std::io::Write;
use std::path::Path;

/// The built-ins and resource kinds this binary has.
pub fn catalog(hostname: Option<&str>) -> (Registry, Catalog) {
    let mut registry = Registry::core();
    if let Some(name) = hostname {
        // `$hostname` is the name this agent goes by (`--hostname`), as in mgmt.
        registry.constant("hostname", lang::value::Value::str(name));
    }
    let mut catalog = registry.catalog();
    resources::declare(&mut catalog);
    (registry, catalog)
}

/// How a command reports a failed program.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// Rendered diagnostics on stderr, `# err: errSTAGE: message` on stdout.
    Human,
    /// A JSON document on stdout.
    Json,
}

/// Prints diagnostics; see [`Report`].
pub fn report(diags: &[Diagnostic], sources: &SourceMap, how: Report) {
    match how {
        Report::Human => {
            let color = std::io::IsTerminal::is_terminal(&std::io::stderr());
            let mut err = std::io::stderr().lock();
            for d in diags {
                let _ = writeln!(err, "{}", lang::render::render(d, sources, color));
            }
            if let Some(first) = diags.iter().min_by_key(|d| d.stage) {
                crate::stdout::line(format_args!("# err: {}", first.one_line(sources).replace('\n', " ")));
            }
        }
        Report::Json => {
            let doc = serde_json::json!({
                "ok": false,
                "diagnostics": diags.iter().map(|d| lang::render::to_json(d, sources)).collect::<Vec<_>>(),
            });
            crate::stdout::line(format_args!("{doc:#}"));
        }
    }
}

/// Compiles the program at `path`.
pub fn compile(path: &Path, catalog: &Catalog) -> Result<(ProgramPath, lang::pipeline::Outcome), String> {
    let program = crate::loader::locate(path)?;
    let loader = FsLoader::new(&program.root);
    let outcome = lang::pipeline::compile(&program.entry, &loader, catalog);
    Ok((program, outcome))
}

/// Interprets one settled output into a resource graph: the merge rules of `lang`, each
/// kind's own validation, then automatic edges.
pub fn resource_graph(
    output: &lang::output::Output,
    catalog: &Catalog,
) -> Result<lang::resgraph::ResGraph, Vec<Diagnostic>> {
    let graph = interpreted(output, catalog)?;
    let diags = resources::graph::check(&graph);
    if !diags.is_empty() {
        return Err(diags.into_vec());
    }
    Ok(graph)
}

/// The interpreted graph with its automatic edges, without building the resources: for
/// `tend run`, where `resources::graph::to_engine` builds and validates each one once.
pub fn interpreted(
    output: &lang::output::Output,
    catalog: &Catalog,
) -> Result<lang::resgraph::ResGraph, Vec<Diagnostic>> {
    let (graph, left_out) = interpreted_with(output, catalog, &lang::interpret::Remote::default())?;
    if !left_out.is_empty() {
        return Err(left_out);
    }
    Ok(graph)
}

/// [`interpreted`], collecting from other hosts' exports (`remote`); also returns the
/// resources it left out (collect conflicts), which do not reject the graph.
pub fn interpreted_with(
    output: &lang::output::Output,
    catalog: &Catalog,
    remote: &lang::interpret::Remote,
) -> Result<(lang::resgraph::ResGraph, Vec<Diagnostic>), Vec<Diagnostic>> {
    let (mut graph, diags, left_out) = lang::interpret::interpret_with(output, catalog, remote);
    if !diags.is_empty() {
        return Err(diags.into_vec());
    }
    resources::graph::add_autoedges(&mut graph);
    Ok((graph, left_out))
}

/// Runs a typed function graph on a private runtime until its first settled output
/// (`tend graph`, `tend why`). `Err` is either an errStream diagnostic or, for a runtime
/// that cannot start, a plain message.
pub fn first_output(
    graph: lang::ir::FuncGraph,
    registry: Registry,
    root: &Path,
    hostname: Option<String>,
    timeout_secs: f64,
) -> Result<Result<lang::output::Output, Diagnostic>, String> {
    let host = crate::services::functions_only(root, &crate::services::default_state_dir(), hostname);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let timeout = std::time::Duration::from_secs_f64(timeout_secs.max(0.0));
    let graph = std::sync::Arc::new(graph);
    let output = rt.block_on(funcs::runtime::first_output(graph, std::sync::Arc::new(registry), host, timeout));
    rt.shutdown_timeout(std::time::Duration::from_millis(200));
    Ok(output)
}

/// [`first_output`] with its failures reported: exit status 2 when the dataflow could not
/// run at all, 1 (after the diagnostic) when the program failed.
pub fn first_output_or_report(
    graph: lang::ir::FuncGraph,
    registry: Registry,
    root: &Path,
    hostname: Option<String>,
    timeout_secs: f64,
    sources: &SourceMap,
    how: Report,
) -> Result<lang::output::Output, std::process::ExitCode> {
    match first_output(graph, registry, root, hostname, timeout_secs) {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(d)) => {
            report(&[d], sources, how);
            Err(std::process::ExitCode::from(1))
        }
        Err(e) => {
            crate::stderr::line(format_args!("error: {e}"));
            Err(std::process::ExitCode::from(2))
        }
    }
}

/// Compiles the program at `path` for a command that needs its function graph: on failure
/// the diagnostics are reported and the command's exit code is returned as `Err`.
pub fn compile_or_report(
    path: &Path,
    catalog: &Catalog,
    how: Report,
) -> Result<(ProgramPath, SourceMap, lang::ir::FuncGraph), std::process::ExitCode> {
    let (program, outcome) = compile(path, catalog).map_err(|e| {
        crate::stderr::line(format_args!("error: {e}"));
        std::process::ExitCode::from(2)
    })?;
    match outcome.graph {
        Some(graph) => Ok((program, outcome.sources, graph)),
        None => {
            report(&outcome.diagnostics.into_vec(), &outcome.sources, how);
            Err(std::process::ExitCode::from(1))
        }
    }
}
