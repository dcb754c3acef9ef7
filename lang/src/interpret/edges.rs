//! Edges (spec 3.5.3, 3.6, 3.12): body edge properties and edge statements resolved to
//! vertices, one edge per (from, to) pair with the notify flags OR-ed and the send/recv
//! pairs attached; then the send/recv rules and the acyclicity check.

use super::merge::Placement;
use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::ir::EdgeProp;
use crate::output::Output;
use crate::resgraph::{Edge, ResGraph, SendRecv};
use crate::span::Span;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Resolves every edge of `out` and stores them in `graph.edges`, sorted.
pub(super) fn add_all(out: &Output, placed: &[Option<Placement>], graph: &mut ResGraph, diags: &mut Diagnostics) {
    // Made on the first edge: most resources have none, and a program of plain resources
    // needs neither table.
    let tables = std::cell::OnceCell::new();
    let tables = || {
        tables.get_or_init(|| {
            let mut lookup: HashMap<(&str, &str), Vec<usize>> = HashMap::with_capacity(graph.vertices.len());
            for (i, v) in graph.vertices.iter().enumerate() {
                lookup.entry((v.kind.as_str(), v.name.as_str())).or_default().push(i);
            }
            let mut failed: HashSet<(String, String)> = HashSet::new();
            for (decl, place) in out.resources.iter().zip(placed) {
                match place {
                    None => {
                        failed.insert((decl.kind.clone(), decl.name.clone()));
                    }
                    Some(Placement::Failed { kind, name }) => {
                        failed.insert((kind.clone(), name.clone()));
                    }
                    Some(Placement::Vertex(_)) => {}
                }
            }
            (lookup, failed)
        })
    };
    let mut acc: BTreeMap<(usize, usize), Edge> = BTreeMap::new();
    let resolve = |kind: &str, name: &str, span: Span, diags: &mut Diagnostics| -> Vec<usize> {
        let kind = kind.to_lowercase();
        let (lookup, failed) = tables();
        match lookup.get(&(kind.as_str(), name)) {
            Some(found) => found.clone(),
            None => {
                if !failed.contains(&(kind.clone(), name.to_string())) {
                    let msg = format!("edge cannot find resource kind: {kind} named: `{name}`");
                    diags.push(Diagnostic::new(Stage::Interpret, msg, span).with_code(Code::UnknownResource));
                }
                Vec::new()
            }
        }
    };

    for (decl, place) in out.resources.iter().zip(placed) {
        let Some(Placement::Vertex(me)) = place else { continue };
        for edge in &decl.edges {
            let notify = matches!(edge.prop, EdgeProp::Notify | EdgeProp::Listen);
            for target in resolve(&edge.kind, &edge.name, edge.span, diags) {
                let (from, to) = match edge.prop {
                    EdgeProp::Before | EdgeProp::Notify => (*me, target),
                    EdgeProp::Depend | EdgeProp::Listen => (target, *me),
                };
                add(&mut acc, from, to, notify, None, edge.span);
            }
        }
    }
    for edge in &out.edges {
        let froms = resolve(&edge.from.kind, &edge.from.name, edge.from.span, diags);
        let tos = resolve(&edge.to.kind, &edge.to.name, edge.to.span, diags);
        let send_recv = match (&edge.from.field, &edge.to.field) {
            (Some(send), Some(recv)) => Some(SendRecv { send: send.clone(), recv: recv.clone() }),
            _ => None,
        };
        for &from in &froms {
            for &to in &tos {
                add(&mut acc, from, to, edge.notify, send_recv.clone(), edge.span);
            }
        }
    }
    graph.edges = acc.into_values().collect();
}

fn add(
    acc: &mut BTreeMap<(usize, usize), Edge>,
    from: usize,
    to: usize,
    notify: bool,
    sr: Option<SendRecv>,
    span: Span,
) {
    let edge = acc.entry((from, to)).or_insert_with(|| Edge { from, to, notify: false, send_recv: Vec::new(), span });
    edge.notify |= notify;
    if let Some(sr) = sr
        && !edge.send_recv.contains(&sr)
    {
        edge.send_recv.push(sr);
        edge.send_recv.sort();
    }
}

/// A hidden resource cannot send, and a parameter receives from one sender only.
pub(super) fn check_send_recv(graph: &ResGraph, diags: &mut Diagnostics) {
    let mut receivers: HashMap<(usize, &str), usize> = HashMap::new();
    for (index, edge) in graph.edges.iter().enumerate() {
        if edge.send_recv.is_empty() {
            continue;
        }
        let sender = &graph.vertices[edge.from];
        if sender.hidden() {
            let msg = format!("cannot send from hidden resource: {}", sender.key());
            diags.push(
                Diagnostic::new(Stage::Interpret, msg, edge.span)
                    .with_code(Code::SendRecv)
                    .with_label(sender.span, "hidden resource"),
            );
        }
        for sr in &edge.send_recv {
            match receivers.get(&(edge.to, sr.recv.as_str())) {
                Some(&first) => {
                    let receiver = graph.vertices[edge.to].key();
                    let msg = format!("resource: `{receiver}` has duplicate receive on: `{}` param", sr.recv);
                    let d = Diagnostic::new(Stage::Interpret, msg, edge.span)
                        .with_code(Code::SendRecv)
                        .with_label(graph.edges[first].span, "it already receives here")
                        .with_note(format!(
                            "senders: {} and {}",
                            graph.vertices[graph.edges[first].from].key(),
                            sender.key()
                        ));
                    diags.push(d);
                }
                None => {
                    receivers.insert((edge.to, sr.recv.as_str()), index);
                }
            }
        }
    }
}

/// The graph must be a DAG; the first cycle found (in vertex order) is reported with
/// every resource on it.
pub(super) fn check_acyclic(graph: &ResGraph, diags: &mut Diagnostics) {
    let n = graph.vertices.len();
    let mut adjacency: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, e) in graph.edges.iter().enumerate() {
        adjacency[e.from].push(i);
    }
    // 0 = unvisited, 1 = on the current path, 2 = done.
    let mut color = vec![0u8; n];
    for start in 0..n {
        if color[start] != 0 {
            continue;
        }
        // (vertex, edge taken to reach it, next adjacency position)
        let mut stack: Vec<(usize, Option<usize>, usize)> = vec![(start, None, 0)];
        color[start] = 1;
        while let Some(top) = stack.last_mut() {
            let (v, _, pos) = *top;
            let Some(&edge_index) = adjacency[v].get(pos) else {
                color[v] = 2;
                stack.pop();
                continue;
            };
            top.2 += 1;
            let w = graph.edges[edge_index].to;
            match color[w] {
                0 => {
                    color[w] = 1;
                    stack.push((w, Some(edge_index), 0));
                }
                1 => {
                    diags.push(cycle_error(graph, &stack, w, edge_index));
                    return;
                }
                _ => {}
            }
        }
    }
}

fn cycle_error(
    graph: &ResGraph,
    stack: &[(usize, Option<usize>, usize)],
    back_to: usize,
    closing: usize,
) -> Diagnostic {
    let from = stack.iter().position(|(v, _, _)| *v == back_to).unwrap_or(0);
    let on_cycle = &stack[from..];
    let mut names: Vec<String> = on_cycle.iter().map(|(v, _, _)| graph.vertices[*v].key()).collect();
    names.push(graph.vertices[back_to].key());
    let msg = format!("resource graph has cycles: not a dag: {}", names.join(" -> "));
    let mut d = Diagnostic::new(Stage::Interpret, msg, graph.edges[closing].span).with_code(Code::ResourceCycle);
    for (_, edge, _) in on_cycle.iter().skip(1) {
        if let Some(e) = edge {
            let e = &graph.edges[*e];
            d = d.with_label(e.span, format!("{} -> {}", graph.vertices[e.from].key(), graph.vertices[e.to].key()));
        }
    }
    d
}
