//! `tend graph PATH`: compile, run the dataflow until it first settles, interpret (with
//! `--seeds`, collecting other hosts' exports), print.

use crate::cli::GraphFormat;
use crate::compile::{self, FirstRun, Report, WorldUse};
use lang::resgraph::ResGraph;
use lang::value::Value;
use std::path::Path;
use std::process::ExitCode;

pub fn run(path: &Path, format: GraphFormat, timeout: f64, hostname: Option<String>, world: &WorldUse) -> ExitCode {
    let (registry, catalog) = compile::catalog(hostname.as_deref());
    let how = if format == GraphFormat::Json { Report::Json } else { Report::Human };
    let (program, sources, graph) = match compile::compile_or_report(path, &catalog, how) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let run = FirstRun { root: &program.root, hostname, timeout_secs: timeout, world };
    let (output, read) = match compile::first_output_or_report(graph, registry, &run, &sources, how) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let graph = match compile::resource_graph(&output, &catalog, &read.remote) {
        Ok(g) => g,
        Err(diags) => {
            compile::report(&diags, &sources, how);
            return ExitCode::from(1);
        }
    };
    match format {
        GraphFormat::Text => crate::stdout::print(format_args!("{graph}")),
        GraphFormat::Json => crate::stdout::line(format_args!("{:#}", to_json(&graph))),
        GraphFormat::Dot => crate::stdout::print(format_args!("{}", to_dot(&graph))),
    }
    ExitCode::SUCCESS
}

/// A value as JSON: lists, maps (keys in their printed form), structs as objects.
pub fn value_json(v: &Value) -> serde_json::Value {
    use serde_json::json;
    match v {
        Value::Bool(b) => json!(b),
        Value::Int(i) => json!(i),
        Value::Float(f) => json!(f),
        Value::Str(s) => json!(s.as_ref()),
        Value::List(l) => l.iter().map(value_json).collect(),
        Value::Map(m) => {
            m.iter().map(|(k, v)| (k.to_raw_string(), value_json(v))).collect::<serde_json::Map<_, _>>().into()
        }
        Value::Struct(fs) => {
            fs.iter().map(|(k, v)| (k.clone(), value_json(v))).collect::<serde_json::Map<_, _>>().into()
        }
        Value::Func(_) => json!("func(...)"),
    }
}

fn to_json(g: &ResGraph) -> serde_json::Value {
    let vertices: Vec<_> = g
        .vertices
        .iter()
        .map(|v| {
            let params: serde_json::Map<_, _> = v
                .params
                .iter()
                .map(|(k, x)| {
                    let json = match x {
                        Value::Str(text)
                            if !lang::secret::shown()
                                && lang::secret::is_secret(&v.kind, &v.name, |n| v.params.get(n), k) =>
                        {
                            serde_json::Value::String(lang::secret::summary(text.as_bytes()))
                        }
                        _ => value_json(x),
                    };
                    (k.clone(), json)
                })
                .collect();
            let meta: serde_json::Map<_, _> =
                v.meta.entries().iter().map(|(k, x)| (k.to_string(), value_json(x))).collect();
            serde_json::json!({"kind": v.kind, "name": v.name, "params": params, "meta": meta})
        })
        .collect();
    let edges: Vec<_> = g
        .edges
        .iter()
        .map(|e| {
            serde_json::json!({
                "from": g.vertices[e.from].key(),
                "to": g.vertices[e.to].key(),
                "notify": e.notify,
                "send_recv": e.send_recv.iter().map(|s| serde_json::json!({"send": s.send, "recv": s.recv})).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::json!({"vertices": vertices, "edges": edges})
}

/// Graphviz: one node per resource, notifying edges drawn bold.
pub fn to_dot(g: &ResGraph) -> String {
    let quote = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    let mut out = String::from("digraph tend {\n\trankdir=LR;\n");
    for v in &g.vertices {
        out.push_str(&format!("\t{} [shape=box];\n", quote(&v.key())));
    }
    for e in &g.edges {
        let style = if e.notify { " [style=bold, label=\"notify\"]" } else { "" };
        out.push_str(&format!(
            "\t{} -> {}{style};\n",
            quote(&g.vertices[e.from].key()),
            quote(&g.vertices[e.to].key())
        ));
    }
    out.push_str("}\n");
    out
}
