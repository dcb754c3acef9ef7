//! Shared by every command: the catalog, compiling a program from disk, reporting errors.

use crate::loader::{FsLoader, ProgramPath};
use funcs::registry::Registry;
use lang::catalog::Catalog;
use lang::diag::Diagnostic;
use lang::span::SourceMap;
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
            let color = crate::stderr::color();
            crate::stderr::print(lang::render::render_all(diags, sources, color));
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
    let outcome = compile_program(&program, catalog);
    Ok((program, outcome))
}

/// Compiles a program already located (its module path as it says).
pub fn compile_program(program: &ProgramPath, catalog: &Catalog) -> lang::pipeline::Outcome {
    let loader = FsLoader::of(program);
    let mut outcome = lang::pipeline::compile(&program.entry, &loader, catalog);
    crate::loader::name_files(&mut outcome.sources, program);
    outcome
}

/// Interprets one settled output into a resource graph: the merge rules of `lang`, each
/// kind's own validation, then automatic edges.
pub fn resource_graph(
    output: &lang::output::Output,
    catalog: &Catalog,
    remote: &lang::interpret::Remote,
) -> Result<lang::resgraph::ResGraph, Vec<Diagnostic>> {
    let (graph, left_out) = interpreted_with(output, catalog, remote)?;
    if !left_out.is_empty() {
        return Err(left_out);
    }
    let diags = resources::contract::graph::check(&graph);
    if !diags.is_empty() {
        return Err(diags.into_vec());
    }
    Ok(graph)
}

/// The interpreted graph with its automatic edges, without building the resources: for
/// `tend run`, where `resources::contract::graph::to_engine` builds and validates each one once.
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
    with_autoedges(lang::interpret::interpret_with(output, catalog, remote))
}

/// [`interpreted_with`] of an output nothing else holds, moved into the graph rather than
/// copied.
pub fn interpreted_owned(
    output: lang::output::Output,
    catalog: &Catalog,
    remote: &lang::interpret::Remote,
) -> Result<(lang::resgraph::ResGraph, Vec<Diagnostic>), Vec<Diagnostic>> {
    with_autoedges(lang::interpret::interpret_owned(output, catalog, remote))
}

fn with_autoedges(
    (mut graph, diags, left_out): (lang::resgraph::ResGraph, lang::diag::Diagnostics, Vec<Diagnostic>),
) -> Result<(lang::resgraph::ResGraph, Vec<Diagnostic>), Vec<Diagnostic>> {
    if !diags.is_empty() {
        return Err(diags.into_vec());
    }
    resources::contract::graph::add_autoedges(&mut graph);
    resources::contract::group::autogroup(&mut graph);
    Ok((graph, left_out))
}

/// Where a command that only evaluates reads the world, and what the program read of it.
#[derive(Clone, Debug, Default)]
pub struct WorldUse {
    /// `--seeds`: observe this etcd cluster (else the local store).
    pub seeds: Vec<String>,
    /// `--prefix`: the state directory (default: the usual one).
    pub prefix: Option<std::path::PathBuf>,
    /// `--cacert`, `--cert`, `--key`: TLS to the cluster.
    pub tls: Option<world::Tls>,
}

/// What the program read of the world while it first settled (`tend why` reports it),
/// and, for a program that collects, what other hosts export to this one.
#[derive(Clone, Debug, Default)]
pub struct WorldRead {
    pub seen: Vec<world::Seen>,
    pub remote: lang::interpret::Remote,
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
    let run = FirstRun { root, hostname, timeout_secs, world: &WorldUse::default() };
    first_output_in(graph, registry, &run).map(|(o, _)| o)
}

/// How a command runs a program once, to look at its first output (`graph`, `why`).
pub struct FirstRun<'a> {
    /// The program's root directory.
    pub root: &'a Path,
    /// `--hostname`.
    pub hostname: Option<String>,
    /// How long the dataflow may take to settle.
    pub timeout_secs: f64,
    /// Where the program reads the world.
    pub world: &'a WorldUse,
}

/// [`first_output`] as `run` says, with what the program read of the world.
pub fn first_output_in(
    graph: lang::ir::FuncGraph,
    registry: Registry,
    run: &FirstRun<'_>,
) -> Result<(Result<lang::output::Output, Diagnostic>, WorldRead), String> {
    let FirstRun { root, hostname, timeout_secs, world } = run;
    let (hostname, timeout_secs) = (hostname.clone(), *timeout_secs);
    let state = world.prefix.clone().unwrap_or_else(crate::services::default_state_dir);
    let mut host = crate::services::functions_only(root, &state, hostname.clone());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let timeout = std::time::Duration::from_secs_f64(timeout_secs.max(0.0));
    let graph = std::sync::Arc::new(graph);
    let me = crate::services::world_hostname(hostname.as_deref());
    let result = rt.block_on(async {
        let config = crate::services::world_config(&world.seeds, world.tls.clone(), Some(&me), &state).observing();
        let inner = world::connect(config).await.map_err(|e| e.to_string())?;
        let recorded = std::sync::Arc::new(world::Recorded::new(inner));
        host.world = recorded.clone();
        let output = funcs::runtime::first_output(graph, std::sync::Arc::new(registry), host.clone(), timeout).await;
        let mut read = WorldRead {
            remote: lang::interpret::Remote { me: me.clone(), exports: Vec::new() },
            ..WorldRead::default()
        };
        if let Ok(out) = &output
            && lang::interpret::collects_remote(out)
        {
            let mut follow = world::World::follow(recorded.as_ref(), &world::Topic::Exports);
            let _ = tokio::time::timeout(timeout, follow.wait_for(|v| v.read)).await;
            let view = follow.borrow().clone();
            let (remote, unreadable) = crate::cmd::run::remote_of(&view, &me);
            for (what, e) in unreadable {
                tracing::warn!(export = %what, error = %e, "cannot read an export; it is ignored");
            }
            read.remote = remote;
        }
        read.seen = recorded.seen();
        Ok::<_, String>((output, read))
    });
    rt.shutdown_timeout(std::time::Duration::from_millis(200));
    result
}

/// [`first_output_in`] with its failures reported: exit status 2 when the dataflow could
/// not run at all, 1 (after the diagnostic) when the program failed.
pub fn first_output_or_report(
    graph: lang::ir::FuncGraph,
    registry: Registry,
    run: &FirstRun<'_>,
    sources: &SourceMap,
    how: Report,
) -> Result<(lang::output::Output, WorldRead), std::process::ExitCode> {
    match first_output_in(graph, registry, run) {
        Ok((Ok(output), read)) => Ok((output, read)),
        Ok((Err(d), _)) => {
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
