//! Running mcl programs through the real front end and dataflow for tests: what the app's
//! compile step does, ending in an interpreted resource graph with kind checks and
//! automatic edges.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use lang::loader::MemLoader;

const WAIT: Duration = Duration::from_secs(20);

/// Compiles and evaluates `program`, returning the interpreted resource graph (with kind
/// checks and automatic edges) or the first error as `errSTAGE: message`.
pub async fn resource_graph(program: &str) -> Result<lang::resgraph::ResGraph, String> {
    let registry = funcs::registry::Registry::core();
    let mut catalog = registry.catalog();
    resources::declare(&mut catalog);
    let first = |d: &lang::diag::Diagnostic| format!("{}: {}", d.stage.code(), d.message);
    let graph = front_end(program, &catalog).map_err(|d| first(&d))?;
    let host = funcs::api::Host { root: "/".into(), ..funcs::api::Host::default() };
    let output =
        funcs::runtime::first_output(Arc::new(graph), Arc::new(registry), host, WAIT).await.map_err(|d| first(&d))?;
    let (mut graph, diags) = lang::interpret::interpret(&output, &catalog);
    if let Some(d) = diags.first() {
        return Err(first(d));
    }
    let diags = resources::contract::graph::check(&graph);
    if let Some(d) = diags.first() {
        return Err(first(d));
    }
    resources::contract::graph::add_autoedges(&mut graph);
    resources::contract::group::autogroup(&mut graph);
    Ok(graph)
}

/// The front-end stages in order (what the app's compile step runs), stopping at the
/// first stage with errors.
pub fn front_end(
    program: &str,
    catalog: &lang::catalog::Catalog,
) -> Result<lang::ir::FuncGraph, lang::diag::Diagnostic> {
    // Warnings never stop a program; only errors end the chain.
    let stop = |diags: lang::diag::Diagnostics| diags.first_error().cloned();
    let loader = MemLoader::new().with("/main.mcl", program);
    let mut sources = lang::span::SourceMap::new();
    let file = sources.add(lang::span::SourceFile::new("/main.mcl", program));
    let (ast, diags) = lang::syntax::parse(file, program);
    if let Some(d) = stop(diags) {
        return Err(d);
    }
    if let Some(d) = stop(lang::init::check(&ast)) {
        return Err(d);
    }
    let (ast, diags) = lang::interpolate::run(ast);
    if let Some(d) = stop(diags) {
        return Err(d);
    }
    let (mut graph, diags) = lang::scope::resolve(ast, "/main.mcl", &loader, catalog, &mut sources);
    if let Some(d) = stop(diags) {
        return Err(d);
    }
    if let Some(d) = stop(lang::unify::unify(&mut graph, catalog)) {
        return Err(d);
    }
    if let Some(d) = stop(lang::graph_check::check(&graph)) {
        return Err(d);
    }
    Ok(graph)
}
