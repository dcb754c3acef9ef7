//! From the interpreter's [`ResGraph`] to what runs: kind-specific checks reported as
//! `errInterpret` diagnostics (Go field widths, each kind's validation), automatic edges,
//! and the engine graph with built resources and metaparams. What a kind is in a graph
//! beyond one resource (the place it claims, whether it purges around it, the groups it
//! forms) it says through its [`kind::InGraph`] hooks; this bridge names no kind, except
//! that it builds a large graph's `file`s itself, on two threads.

use engine::{Graph, ResKey};
use lang::diag::{Diagnostic, Diagnostics, Stage};
use lang::resgraph::{Edge, Meta as LangMeta, ResGraph, ResVertex};

use std::collections::BTreeMap;

use crate::contract::autoedge::{AutoRes, autoedges};
use crate::contract::kind::{self, GroupRes, Grouped};
use crate::contract::params::BuildError;
use crate::machine::Machine;

/// Member vertex index -> the vertex of the group it belongs to, from every kind that
/// groups ([`kind::InGraph::groups`]).
fn groups(graph: &ResGraph) -> BTreeMap<usize, usize> {
    let hooks: Vec<kind::GroupsFn> = crate::KINDS.iter().filter_map(|k| k.in_graph.groups).collect();
    if hooks.is_empty() {
        return BTreeMap::new();
    }
    let res: Vec<GroupRes<'_>> =
        graph.vertices.iter().map(|v| (v.kind.as_str(), v.name.as_str(), &v.params, v.meta.autogroup)).collect();
    hooks.iter().flat_map(|f| f(&res)).collect()
}

/// Builds vertex `i`, with its group when its kind is built so
/// ([`kind::InGraph::build_grouped`]).
fn build_in_graph(
    host: &Machine,
    graph: &ResGraph,
    i: usize,
    groups: &BTreeMap<usize, usize>,
) -> Result<Box<dyn engine::Resource>, BuildError> {
    let v = &graph.vertices[i];
    match kind::find(&v.kind).and_then(|k| k.in_graph.build_grouped) {
        Some(build) => {
            crate::contract::params::Params::new(&v.kind, &v.name, &v.params)?;
            build(host, &Grouped { graph, at: i, groups })
        }
        None => crate::build_with(host, &v.kind, &v.name, &v.params),
    }
}

/// The one resource of a group (autogrouping): the kind's own group when it has one, else
/// each resource built alone and run in turn ([`engine::Group`]). Every part is validated
/// (a group never holds a hidden resource); an error is at the part it is about.
fn build_group(host: &Machine, v: &ResVertex, members: &[ResVertex]) -> Result<Box<dyn engine::Resource>, Diagnostic> {
    let part = |at: usize| if at == 0 { v } else { &members[at - 1] };
    let hook = kind::find(&v.kind).and_then(|k| k.in_graph.autogroup.as_ref());
    let res = match hook.and_then(|h| h.build) {
        Some(build) => {
            let res = build(host, v, members).map_err(|(at, e)| build_diagnostic(part(at), &e))?;
            res.validate().map_err(|e| validate_diagnostic(v, &e))?;
            res
        }
        None => {
            let one = |v: &ResVertex| {
                crate::build_with(host, &v.kind, &v.name, &v.params)
                    .map_err(|e| build_diagnostic(v, &e))
                    .and_then(|res| validated(v, res))
                    .map(|res| (ResKey::new(&v.kind, &v.name), res))
            };
            let own = one(v)?;
            let members = members.iter().map(one).collect::<Result<Vec<_>, _>>()?;
            Box::new(engine::Group::new(own, members))
        }
    };
    Ok(res)
}

/// The place vertex `v` claims ([`kind::InGraph::claims`]), in one spelling: no trailing
/// slash (but `/` stays).
fn claim(v: &ResVertex) -> Option<std::borrow::Cow<'_, str>> {
    let claims = kind::find(&v.kind)?.in_graph.claims?;
    let trimmed = |p: &str| p.strip_suffix('/').filter(|t| !t.is_empty()).unwrap_or(p).len();
    Some(match claims(&v.name, &v.params) {
        std::borrow::Cow::Borrowed(p) => std::borrow::Cow::Borrowed(&p[..trimmed(p)]),
        std::borrow::Cow::Owned(mut p) => {
            p.truncate(trimmed(&p));
            std::borrow::Cow::Owned(p)
        }
    })
}

/// Builds every vertex and validates the non-hidden ones (hidden resources skip their own
/// validation, as in mgmt). One diagnostic per failing vertex, at the field when known.
pub fn check(graph: &ResGraph) -> Diagnostics {
    let host = Machine::system();
    let groups = groups(graph);
    let mut diags = same_claims(graph);
    for (i, v) in graph.vertices.iter().enumerate() {
        if let Some(members) = graph.members.get(&i) {
            if let Err(d) = build_group(&host, v, members) {
                diags.push(d);
            }
            continue;
        }
        match build_in_graph(&host, graph, i, &groups) {
            Err(e) => diags.push(build_diagnostic(v, &e)),
            Ok(res) if !v.meta.hidden => {
                if let Err(e) = res.validate() {
                    diags.push(validate_diagnostic(v, &e));
                }
            }
            Ok(_) => {}
        }
    }
    diags
}

/// Two resources that claim the same place (two `file`s whose paths name it: `/x` named
/// `a` and `/x`, or `/x` and the directory `/x/`) would fight over it: an error at the
/// second, naming the first. Two declarations of one key were already merged (or refused)
/// by interpretation, under mgmt's rule; hidden resources are never applied, so they are
/// left out.
fn same_claims(graph: &ResGraph) -> Diagnostics {
    let mut diags = Diagnostics::new();
    let mut seen: engine::fasthash::FastMap<std::borrow::Cow<'_, str>, usize> = Default::default();
    for (i, v) in graph.vertices.iter().enumerate() {
        if v.meta.hidden {
            continue;
        }
        let Some(path) = claim(v) else { continue };
        let shown = path.clone().into_owned();
        if let Some(first) = seen.insert(path, i) {
            let first = &graph.vertices[first];
            diags.push(
                Diagnostic::new(
                    Stage::Interpret,
                    format!("{} and {} manage the same path `{shown}`", v.key(), first.key()),
                    v.span,
                )
                .with_label(first.span, format!("{} is declared here", first.key()))
                .with_note("a path may be managed by one resource only: remove one, or give both the same name"),
            );
        }
    }
    diags
}

fn validate_diagnostic(v: &ResVertex, e: &engine::ResError) -> Diagnostic {
    let msg = format!("{} did not Validate: {}", v.key(), strip_key(&e.message, v));
    Diagnostic::new(Stage::Interpret, msg, v.span)
}

/// Adds the automatic edges (engine.md 2.14) between vertices that allow them, skipping
/// pairs already joined by an edge.
pub fn add_autoedges(graph: &mut ResGraph) {
    let enabled: Vec<usize> = (0..graph.vertices.len()).filter(|i| graph.vertices[*i].meta.autoedge).collect();
    let found = {
        let res: Vec<AutoRes<'_>> = enabled
            .iter()
            .map(|i| {
                let v = &graph.vertices[*i];
                (v.kind.as_str(), v.name.as_str(), &v.params)
            })
            .collect();
        autoedges(&res)
    };
    // `found` has each edge once: only the program's own edges can repeat one.
    let present: engine::fasthash::FastSet<(usize, usize)> = graph.edges.iter().map(|e| (e.from, e.to)).collect();
    graph.edges.reserve(found.len());
    for (a, b) in found {
        let (from, to) = (enabled[a], enabled[b]);
        if present.contains(&(from, to)) {
            continue;
        }
        let span = graph.vertices[to].span;
        graph.edges.push(Edge { from, to, notify: false, send_recv: Vec::new(), span });
    }
    graph.edges.sort_by_key(|e| (e.from, e.to));
}

/// The engine graph for `graph`, each resource built and (unless hidden) validated once,
/// with the same diagnostics as [`check`]; `noop` forces `Meta:noop` everywhere (`--noop`).
/// Takes the graph: each vertex's params are let go once it is built (unless a network
/// group still reads them), so the interpreted graph and the built one are not both whole
/// at a large graph's peak.
pub fn to_engine(host: &Machine, mut graph: ResGraph, noop: bool) -> Result<Graph, Diagnostics> {
    let mut out = Graph::new();
    let send_recv: usize = graph.edges.iter().map(|e| e.send_recv.len()).sum();
    out.reserve(graph.vertices.len(), graph.edges.len() + send_recv);
    let mut diags = same_claims(&graph);
    // Sorted component-wise, so the places below a directory form one contiguous run. Only
    // a purging resource reads them.
    let purging =
        |v: &ResVertex| kind::find(&v.kind).and_then(|k| k.in_graph.purges).is_some_and(|purges| purges(&v.params));
    let claimed: std::collections::BTreeSet<std::path::PathBuf> = if graph.vertices.iter().any(purging) {
        graph.vertices.iter().filter_map(|v| claim(v).map(|p| std::path::PathBuf::from(&*p))).collect()
    } else {
        Default::default()
    };
    let groups = groups(&graph);
    let keys = keys(&graph);
    let grouped: std::collections::BTreeSet<usize> = groups.iter().flat_map(|(m, n)| [*m, *n]).collect();
    let mut files = build_files(&host.temps, &mut graph.vertices, &keys, &claimed, &grouped);
    // The fields each sender's receivers read (a `file` never sends).
    let mut received: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for e in graph.edges.iter().filter(|e| !e.send_recv.is_empty()) {
        received.entry(e.from).or_default().extend(e.send_recv.iter().map(|sr| sr.send.clone()));
    }
    for (i, key) in keys.iter().enumerate() {
        let v = &graph.vertices[i];
        let built = match graph.members.remove(&i) {
            Some(members) => build_group(host, v, &members),
            None => files[i].take().unwrap_or_else(|| {
                build_in_graph(host, &graph, i, &groups)
                    .map_err(|e| build_diagnostic(v, &e))
                    .and_then(|res| validated(v, res))
            }),
        };
        let mut built = match built {
            Ok(res) => res,
            Err(d) => {
                diags.push(d);
                continue;
            }
        };
        let fields = received.get(&i).map_or(Vec::new(), |f| f.iter().map(String::as_str).collect());
        built.received_fields(&fields);
        let mut meta = engine_meta(&v.meta);
        meta.noop |= noop;
        out.add_vertex(key.clone(), meta, built);
        if !grouped.contains(&i) {
            graph.vertices[i].params = lang::params::ParamMap::new();
        }
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    // Every vertex was added, in order: the engine graph's positions are the interpreter's.
    for e in &graph.edges {
        out.add_edge_at(e.from, e.to, e.notify);
        for sr in &e.send_recv {
            out.add_sendrecv_at(e.from, &sr.send, e.to, &sr.recv);
        }
    }
    Ok(out)
}

/// How many vertices a graph has before [`build_files`] splits the work over two threads.
const SPLIT_BUILD: usize = 4096;

/// A `file` built (and, unless hidden, validated) or why not, by vertex; `None` for every
/// other kind. The `file`s, most of a large graph, are built on two threads at once, each
/// letting go of a built vertex's params (unless a network group reads them), as the
/// one-by-one loop of [`to_engine`] does: the one kind the bridge builds itself, for speed
/// (`File::build_named` shares the key's name; a purging directory spares the places
/// `claimed` below it).
#[allow(clippy::type_complexity)]
fn build_files(
    temps: &std::sync::Arc<crate::util::fs::TempSweeps>,
    vertices: &mut [ResVertex],
    keys: &[ResKey],
    claimed: &std::collections::BTreeSet<std::path::PathBuf>,
    grouped: &std::collections::BTreeSet<usize>,
) -> Vec<Option<Result<Box<dyn engine::Resource>, Diagnostic>>> {
    let build = |first: usize, vertices: &mut [ResVertex]| {
        let mut out = Vec::with_capacity(vertices.len());
        for (i, v) in (first..).zip(vertices.iter_mut()) {
            if v.kind != crate::files::file::FILE.name {
                out.push(None);
                continue;
            }
            let key = &keys[i];
            let name = if *key.name == *v.name { key.name.clone() } else { v.name.as_str().into() };
            let built =
                crate::files::file::File::build_named(name, &v.params).map(|f| f.sweeping(temps.clone())).map(|f| {
                    if !f.params().purge {
                        return Box::new(f) as Box<dyn engine::Resource>;
                    }
                    let own = std::path::PathBuf::from(f.params().path.trim_end_matches('/'));
                    let below = claimed
                        .range(own.clone()..)
                        .take_while(|p| p.starts_with(&own))
                        .filter(|p| **p != own)
                        .cloned();
                    Box::new(f.spare(below)) as Box<dyn engine::Resource>
                });
            let checked = match built {
                Ok(res) => validated(v, res),
                Err(e) => Err(build_diagnostic(v, &e)),
            };
            if checked.is_ok() && !grouped.contains(&i) {
                v.params = lang::params::ParamMap::new();
            }
            out.push(Some(checked));
        }
        out
    };
    if vertices.len() < SPLIT_BUILD {
        return build(0, vertices);
    }
    let mid = vertices.len() / 2;
    let (head, tail) = vertices.split_at_mut(mid);
    let (mut built, tail) = lang::halves::both(|| build(0, head), || build(mid, tail));
    built.extend(tail);
    built
}

/// `res` once it validated (a hidden resource is not asked).
fn validated(v: &ResVertex, res: Box<dyn engine::Resource>) -> Result<Box<dyn engine::Resource>, Diagnostic> {
    if v.meta.hidden {
        return Ok(res);
    }
    res.validate().map(|()| res).map_err(|e| validate_diagnostic(v, &e))
}

/// The engine's metaparams from the interpreter's.
pub fn engine_meta(m: &LangMeta) -> engine::Meta {
    engine::Meta {
        noop: m.noop,
        retry: m.retry,
        retryreset: m.retryreset,
        delay: m.delay,
        timeout: m.timeout,
        poll: m.poll,
        limit: m.limit,
        burst: m.burst.clamp(0, i64::from(u32::MAX)) as u32,
        reset: m.reset,
        sema: m.sema.clone(),
        rewatch: m.rewatch,
        dollar: m.dollar,
        hidden: m.hidden,
        reverse: m.reverse,
    }
}

/// The engine key of every vertex. A hidden resource may share its kind and name with a
/// normal one and with other hidden ones (interpretation keeps them all); the engine keys
/// vertices by kind and name, so each hidden one gets its own: `name (hidden)`, then
/// `name (hidden 2)`, … in graph order (stable across swaps of the same program).
fn keys(graph: &ResGraph) -> Vec<ResKey> {
    let mut hidden_seen: std::collections::HashMap<(&str, &str), usize> = std::collections::HashMap::new();
    // One string per kind for the whole graph: every key of a kind shares it.
    let mut kinds: std::collections::HashMap<&str, std::sync::Arc<str>> = std::collections::HashMap::new();
    graph
        .vertices
        .iter()
        .map(|v| {
            let kind = kinds.entry(v.kind.as_str()).or_insert_with(|| v.kind.as_str().into()).clone();
            if !v.meta.hidden {
                return ResKey { kind, name: v.name.as_str().into() };
            }
            let n = hidden_seen.entry((v.kind.as_str(), v.name.as_str())).or_insert(0);
            *n += 1;
            let suffix = if *n == 1 { " (hidden)".to_string() } else { format!(" (hidden {n})") };
            ResKey { kind, name: format!("{}{suffix}", v.name).into() }
        })
        .collect()
}

fn build_diagnostic(v: &ResVertex, e: &BuildError) -> Diagnostic {
    let span = e.field.as_ref().and_then(|f| v.param_span(f)).unwrap_or(v.span);
    let message = match &e.field {
        Some(field) => format!("error building resource {}: field `{field}`: {}", v.key(), e.message),
        None => format!("error building resource {}: {}", v.key(), e.message),
    };
    Diagnostic::new(Stage::Interpret, message, span)
}

/// Validation messages start with `kind[name]: `; the diagnostic already names it.
fn strip_key<'a>(message: &'a str, v: &ResVertex) -> &'a str {
    message.strip_prefix(&format!("{}: ", v.key())).unwrap_or(message)
}

#[cfg(test)]
mod tests {

    use lang::span::Span;
    use lang::value::Value;

    use super::*;

    fn vertex(kind: &str, name: &str, params: &[(&str, Value)]) -> ResVertex {
        ResVertex {
            kind: kind.into(),
            name: name.into(),
            params: params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
            param_spans: Box::default(),
            meta: LangMeta::shared_default(),
            collected: false,
            span: Span::default(),
        }
    }

    #[test]
    fn kind_validation_and_widths_become_interpret_errors() {
        let mut hidden = vertex("test", "h", &[("validatebool", Value::Bool(true))]);
        std::sync::Arc::make_mut(&mut hidden.meta).hidden = true;
        let graph = ResGraph {
            vertices: vec![
                vertex("test", "a", &[("validatebool", Value::Bool(true))]),
                vertex("test", "b", &[("uint64", Value::Int(-1))]),
                hidden,
                vertex("test", "ok", &[]),
            ],
            edges: Vec::new(),
            ..Default::default()
        };
        let diags = check(&graph).into_vec();
        assert_eq!(diags.len(), 2);
        assert!(diags.iter().all(|d| d.stage == Stage::Interpret));
        assert!(diags[0].message.contains("test[a] did not Validate: field `validatebool`"), "{}", diags[0].message);
        assert!(diags[1].message.contains("can't store negative int `-1` into unsigned `uint64` field"));
    }

    #[test]
    fn a_large_graph_builds_its_files_on_two_threads_in_order_with_every_error() {
        let n = SPLIT_BUILD + 1000;
        let file = |i: usize| vertex("file", &format!("/tmp/many/f{i}"), &[("content", Value::str("x"))]);
        let mut vertices: Vec<ResVertex> = (0..n).map(file).collect();
        // Another kind between files, and errors in both halves: a build error, a
        // validation error, and a hidden file whose invalid params are not asked about.
        vertices[10] = vertex("test", "between", &[]);
        vertices[20] = vertex("file", "/tmp/many/bad", &[("content", Value::Int(1))]);
        vertices[n - 5] = vertex("file", "relative", &[]);
        let mut hidden = vertex("file", "also-relative", &[]);
        std::sync::Arc::make_mut(&mut hidden.meta).hidden = true;
        vertices[n - 3] = hidden;
        let failing = ResGraph { vertices: vertices.clone(), edges: Vec::new(), ..Default::default() };
        let expected: Vec<String> = check(&failing).into_vec().into_iter().map(|d| d.message).collect();
        assert_eq!(expected.len(), 2, "{expected:?}");
        let diags = to_engine(&Machine::system(), failing, false).err().expect("two resources are wrong").into_vec();
        assert_eq!(diags.into_iter().map(|d| d.message).collect::<Vec<_>>(), expected, "as `check` says, in order");

        vertices[20] = file(20);
        vertices[n - 5] = file(n - 5);
        let graph = ResGraph { vertices, edges: Vec::new(), ..Default::default() };
        let expected = keys(&graph);
        let built = to_engine(&Machine::system(), graph, false).expect("builds");
        let got: Vec<&ResKey> = built.vertices.iter().map(|v| &v.key).collect();
        assert_eq!(got.len(), n);
        assert!(got.iter().zip(&expected).all(|(a, b)| *a == b), "every vertex, in the interpreter's order");
    }

    #[test]
    fn autoedges_respect_the_metaparam_and_existing_edges() {
        let mut off = vertex("file", "/tmp/d/off", &[]);
        std::sync::Arc::make_mut(&mut off.meta).autoedge = false;
        let mut graph = ResGraph {
            vertices: vec![vertex("file", "/tmp/d/", &[]), vertex("file", "/tmp/d/a", &[]), off],
            edges: Vec::new(),
            ..Default::default()
        };
        add_autoedges(&mut graph);
        add_autoedges(&mut graph);
        assert_eq!(
            graph.to_lines(),
            [
                "Edge: file[/tmp/d/] -> file[/tmp/d/a] # file[/tmp/d/] -> file[/tmp/d/a]",
                "Vertex: file[/tmp/d/]",
                "Vertex: file[/tmp/d/a]",
                "Vertex: file[/tmp/d/off]",
            ]
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_purging_directory_spares_files_the_graph_manages() {
        let dir = tempfile::tempdir().unwrap();
        let (src, dst) = (dir.path().join("src"), dir.path().join("dst"));
        std::fs::create_dir(&src).unwrap();
        std::fs::write(src.join("one"), "1").unwrap();
        std::fs::create_dir(&dst).unwrap();
        std::fs::write(dst.join("stray"), "x").unwrap();
        let dst_name = format!("{}/", dst.display());
        let managed = dst.join("managed").display().to_string();
        let mut graph = ResGraph {
            vertices: vec![
                vertex(
                    "file",
                    &dst_name,
                    &[
                        ("state", Value::str("exists")),
                        ("source", Value::str(src.to_str().unwrap())),
                        ("recurse", Value::Bool(true)),
                        ("purge", Value::Bool(true)),
                    ],
                ),
                vertex("file", &managed, &[("state", Value::str("exists")), ("content", Value::str("mine"))]),
            ],
            edges: Vec::new(),
            ..Default::default()
        };
        add_autoedges(&mut graph);
        assert_eq!(graph.edges.len(), 1, "the directory comes first");
        let engine = engine::Engine::new(engine::EngineConfig {
            state_dir: dir.path().join("state"),
            stop_timeout: std::time::Duration::from_secs(5),
            ..Default::default()
        });
        let g = to_engine(&Machine::sandbox(dir.path()), graph, false).expect("builds");
        engine.apply(g).await.expect("valid");
        assert!(engine.wait_converged(std::time::Duration::from_secs(10)).await);
        assert!(engine.failures().await.is_empty(), "{:?}", engine.failures().await);
        assert_eq!(std::fs::read_to_string(dst.join("managed")).unwrap(), "mine");
        assert_eq!(std::fs::read_to_string(dst.join("one")).unwrap(), "1");
        assert!(!dst.join("stray").exists());
        engine.shutdown(std::time::Duration::from_secs(5)).await;
    }
}
