//! Autogrouping (engine.md, mgmt's `AutoGroup` with its non-reachability grouper):
//! compatible resources merge into one vertex that applies them together. A kind takes part
//! through its [`kind::AutoGroup`] hook (what may join its group, whether it groups unless
//! told, how the group is built); this pass names no kind.
//!
//! The walk is mgmt's, so the same program groups the same way: vertices in reverse
//! hierarchical order (kinds with more `:` chunks first, then kind and name, descending),
//! each offered every later-grouped candidate in that order; a candidate joins when both
//! allow it (`Meta:autogroup`), the group's kind accepts it, their metaparams agree, and
//! neither is reachable from the other, so a merge never makes a cycle. A member leaves
//! [`ResGraph::vertices`] for [`ResGraph::members`]; its edges move to its group (joined
//! with any the group already had), and its send/recv fields are named
//! `kind[name].field` ([`engine::member_field`]), which the group routes to it.

use std::collections::BTreeMap;

use lang::resgraph::{Edge, ResGraph, ResVertex, SendRecv};

use crate::contract::kind::{self, AutoGroup};

/// Groups `graph` in place (see the module doc). A graph with no kind that groups costs one
/// pass over its vertices.
pub fn autogroup(graph: &mut ResGraph) {
    if !graph.vertices.iter().any(|v| hook(&v.kind).is_some()) {
        return;
    }
    let hooks: Vec<Option<&'static AutoGroup>> = graph.vertices.iter().map(|v| hook(&v.kind)).collect();
    let n = graph.vertices.len();
    let candidates: Vec<usize> = {
        let mut c: Vec<usize> = (0..n).filter(|i| groupable(&graph.vertices[*i])).collect();
        c.sort_by(|a, b| rhv_order(&graph.vertices[*a], &graph.vertices[*b]));
        c
    };
    if candidates.len() < 2 {
        return;
    }
    let mut notified = vec![false; n];
    for e in graph.edges.iter().filter(|e| e.notify) {
        notified[e.to] = true;
    }
    let mut reach = Reach::new(n, &graph.edges);
    let mut members: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &i in &candidates {
        let Some(hook) = hooks[i] else { continue };
        if reach.rep[i] != i {
            continue;
        }
        let mut around: Option<Around> = None;
        for &j in &candidates {
            if j == i || reach.rep[j] != j || members.contains_key(&j) {
                continue;
            }
            let (g, m) = (&graph.vertices[i], &graph.vertices[j]);
            if first_chunk(&g.kind) != first_chunk(&m.kind) || !fits(hook, g, m) {
                continue;
            }
            if hook.notified_apart && (notified[i] || notified[j]) {
                continue;
            }
            let around = around.get_or_insert_with(|| reach.around(i, &members));
            if around.contains(j) {
                continue;
            }
            reach.rep[j] = i;
            members.entry(i).or_default().push(j);
            reach.extend(around, j, &members);
        }
    }
    if members.is_empty() {
        return;
    }
    apply(graph, &reach.rep, members);
}

/// Param `name` of `v` when it is a string (`""` when unset), for [`AutoGroup::fits`].
pub fn str_param<'a>(v: &'a ResVertex, name: &str) -> &'a str {
    match v.params.get(name) {
        Some(lang::value::Value::Str(s)) => s,
        _ => "",
    }
}

/// Param `name` of `v` when it is a bool (false when unset), for [`AutoGroup::fits`].
pub fn bool_param(v: &ResVertex, name: &str) -> bool {
    matches!(v.params.get(name), Some(lang::value::Value::Bool(true)))
}

/// The autogroup hook of `kind`, if it has one.
fn hook(kind: &str) -> Option<&'static AutoGroup> {
    kind::find(kind).and_then(|k| k.in_graph.autogroup.as_ref())
}

/// Whether a resource of `kind` may end up in a group (its own or another kind's): a live
/// edit of it cannot be patched in alone.
pub fn may_group(kind: &str) -> bool {
    hook(kind).is_some()
        || crate::KINDS.iter().filter_map(|k| k.in_graph.autogroup.as_ref()).any(|h| h.members.contains(&kind))
}

/// Whether `v` may join or form a group at all: not opted out, not hidden (never applied),
/// not reversible (its undo is its own).
fn groupable(v: &ResVertex) -> bool {
    v.meta.autogroup && !v.meta.hidden && !v.meta.reverse
}

/// mgmt's order: more `:` chunks first, then each chunk, then the name, all descending.
fn rhv_order(a: &ResVertex, b: &ResVertex) -> std::cmp::Ordering {
    let (ca, cb) = (a.kind.split(':').count(), b.kind.split(':').count());
    cb.cmp(&ca).then_with(|| b.kind.split(':').cmp(a.kind.split(':'))).then_with(|| b.name.cmp(&a.name))
}

fn first_chunk(kind: &str) -> &str {
    kind.split(':').next().unwrap_or(kind)
}

/// Whether `member` may join the group of `group` (whose kind's hook is `hook`).
fn fits(hook: &AutoGroup, group: &ResVertex, member: &ResVertex) -> bool {
    let asked = hook.by_default || (group.meta.autogroup_asked && member.meta.autogroup_asked);
    let kinds = member.kind == group.kind || hook.members.contains(&member.kind.as_str());
    asked && kinds && same_meta(group, member) && (hook.fits)(group, member)
}

/// Whether two resources run under the same metaparams (their semaphores aside, which the
/// group takes together): a grouped resource must not be applied where it would not be,
/// retried as it would not be, or polled instead of watched.
fn same_meta(a: &ResVertex, b: &ResVertex) -> bool {
    let (a, b) = (&a.meta, &b.meta);
    a.noop == b.noop
        && a.retry == b.retry
        && a.retryreset == b.retryreset
        && a.delay == b.delay
        && a.timeout == b.timeout
        && a.poll == b.poll
        && a.limit.to_bits() == b.limit.to_bits()
        && a.burst == b.burst
        && a.reset == b.reset
        && a.rewatch == b.rewatch
        && a.dollar == b.dollar
}

/// Reachability over the graph as merged so far: each vertex's representative (itself, or
/// the group it joined) and the edges by vertex.
struct Reach {
    rep: Vec<usize>,
    out: Vec<Vec<usize>>,
    into: Vec<Vec<usize>>,
}

/// What is reachable from a group (`down`) and what reaches it (`up`), by representative.
struct Around {
    down: Vec<bool>,
    up: Vec<bool>,
}

impl Around {
    fn contains(&self, v: usize) -> bool {
        self.down[v] || self.up[v]
    }
}

impl Reach {
    fn new(n: usize, edges: &[Edge]) -> Reach {
        let mut out = vec![Vec::new(); n];
        let mut into = vec![Vec::new(); n];
        for e in edges {
            out[e.from].push(e.to);
            into[e.to].push(e.from);
        }
        Reach { rep: (0..n).collect(), out, into }
    }

    /// What is reachable from group `i` and what reaches it.
    fn around(&self, i: usize, members: &BTreeMap<usize, Vec<usize>>) -> Around {
        let n = self.rep.len();
        let mut around = Around { down: vec![false; n], up: vec![false; n] };
        self.extend(&mut around, i, members);
        around
    }

    /// `around`, grown by what vertex `j` (just grouped) reaches and is reached from.
    fn extend(&self, around: &mut Around, j: usize, members: &BTreeMap<usize, Vec<usize>>) {
        self.walk(&mut around.down, j, members, true);
        self.walk(&mut around.up, j, members, false);
    }

    /// Marks in `seen` every representative reachable from `from` (forward or backward),
    /// not `from` itself; a group's walk leaves from each of its members too.
    fn walk(&self, seen: &mut [bool], from: usize, members: &BTreeMap<usize, Vec<usize>>, forward: bool) {
        let mut stack: Vec<usize> = vec![from];
        while let Some(v) = stack.pop() {
            let mut parts = vec![v];
            if let Some(m) = members.get(&v) {
                parts.extend(m);
            }
            for p in parts {
                let next = if forward { &self.out[p] } else { &self.into[p] };
                for &x in next {
                    let r = self.rep[x];
                    if !seen[r] {
                        seen[r] = true;
                        stack.push(r);
                    }
                }
            }
        }
    }
}

/// Moves the members out of the vertices and their edges to their groups.
fn apply(graph: &mut ResGraph, rep: &[usize], members: BTreeMap<usize, Vec<usize>>) {
    let n = graph.vertices.len();
    let member_field = |v: &ResVertex, field: &str| engine::member_field(&engine::ResKey::new(&v.kind, &v.name), field);
    // The edges as they will be, by (from, to) before renumbering, joined.
    let mut joined: BTreeMap<(usize, usize), Edge> = BTreeMap::new();
    for e in std::mem::take(&mut graph.edges) {
        let (from, to) = (rep[e.from], rep[e.to]);
        if from == to {
            continue;
        }
        let send_recv: Vec<SendRecv> = e
            .send_recv
            .iter()
            .map(|sr| SendRecv {
                send: if from != e.from { member_field(&graph.vertices[e.from], &sr.send) } else { sr.send.clone() },
                recv: if to != e.to { member_field(&graph.vertices[e.to], &sr.recv) } else { sr.recv.clone() },
            })
            .collect();
        match joined.get_mut(&(from, to)) {
            Some(have) => {
                have.notify |= e.notify;
                have.send_recv.extend(send_recv);
                have.send_recv.sort();
                have.send_recv.dedup();
            }
            None => {
                joined.insert((from, to), Edge { from, to, notify: e.notify, send_recv, span: e.span });
            }
        }
    }
    // A group takes its members' semaphores.
    for (g, ms) in &members {
        let semas: Vec<String> = ms.iter().flat_map(|m| graph.vertices[*m].meta.sema.iter().cloned()).collect();
        if semas.iter().any(|s| !graph.vertices[*g].meta.sema.contains(s)) {
            let meta = std::sync::Arc::make_mut(&mut graph.vertices[*g].meta);
            meta.sema.extend(semas);
            meta.sema.sort();
            meta.sema.dedup();
        }
    }
    let mut new_at = vec![usize::MAX; n];
    let mut kept = Vec::with_capacity(n);
    let mut taken: BTreeMap<usize, ResVertex> = BTreeMap::new();
    for (i, v) in std::mem::take(&mut graph.vertices).into_iter().enumerate() {
        if rep[i] == i {
            new_at[i] = kept.len();
            kept.push(v);
        } else {
            taken.insert(i, v);
        }
    }
    graph.vertices = kept;
    graph.edges = joined.into_values().map(|e| Edge { from: new_at[e.from], to: new_at[e.to], ..e }).collect();
    graph.edges.sort_by_key(|e| (e.from, e.to));
    for (g, ms) in members {
        let grouped = ms.into_iter().filter_map(|m| taken.remove(&m)).collect();
        graph.members.insert(new_at[g], grouped);
    }
}

#[cfg(test)]
mod tests {
    use lang::resgraph::Meta;
    use lang::span::Span;
    use lang::value::Value;

    use super::*;

    fn vertex(kind: &str, name: &str, params: &[(&str, Value)], asked: bool) -> ResVertex {
        let meta = Meta { autogroup_asked: asked, ..Default::default() };
        ResVertex {
            kind: kind.into(),
            name: name.into(),
            params: params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
            param_spans: Box::default(),
            meta: std::sync::Arc::new(meta),
            collected: false,
            span: Span::default(),
        }
    }

    fn edge(from: usize, to: usize) -> Edge {
        Edge { from, to, notify: false, send_recv: Vec::new(), span: Span::default() }
    }

    fn pkg(name: &str) -> ResVertex {
        vertex("pkg", name, &[], false)
    }

    #[test]
    fn packages_group_into_one_vertex_in_mgmts_order() {
        let mut graph = ResGraph { vertices: vec![pkg("a"), pkg("c"), pkg("b")], ..Default::default() };
        autogroup(&mut graph);
        let order: Vec<&str> = graph.members[&0].iter().map(|m| m.name.as_str()).collect();
        assert_eq!(order, ["b", "a"], "c takes b first, then a (names descending)");
        assert_eq!(
            graph.to_lines(),
            ["Group: pkg[c]: Vertex: pkg[a]", "Group: pkg[c]: Vertex: pkg[b]", "Vertex: pkg[c]"]
        );
    }

    #[test]
    fn a_merge_that_would_make_a_cycle_is_refused() {
        // a -> x -> b: a and b may not merge (b would then come before x and after it).
        let mut graph = ResGraph {
            vertices: vec![pkg("a"), vertex("file", "/x", &[], false), pkg("b")],
            edges: vec![edge(0, 1), edge(1, 2)],
            ..Default::default()
        };
        autogroup(&mut graph);
        assert!(graph.members.is_empty(), "{:?}", graph.to_lines());
        assert_eq!(graph.vertices.len(), 3);
    }

    #[test]
    fn edges_and_send_recv_move_to_the_group() {
        let mut to_b = edge(3, 1);
        to_b.send_recv.push(SendRecv { send: "any".into(), recv: "msg".into() });
        let mut graph = ResGraph {
            vertices: vec![
                vertex("print", "a", &[], true),
                vertex("print", "b", &[], true),
                vertex("value", "v1", &[], false),
                vertex("value", "v2", &[], false),
            ],
            edges: vec![edge(2, 0), to_b],
            ..Default::default()
        };
        autogroup(&mut graph);
        assert_eq!(
            graph.to_lines(),
            [
                "Edge: value[v1] -> print[b] # value[v1] -> print[b]",
                "Edge: value[v2] -> print[b] # value[v2] -> print[b]",
                "Group: print[b]: Vertex: print[a]",
                "Vertex: print[b]",
                "Vertex: value[v1]",
                "Vertex: value[v2]",
            ]
        );
        let into_b = graph.edges.iter().find(|e| !e.send_recv.is_empty()).unwrap();
        assert_eq!(into_b.send_recv[0].recv, "msg", "b is the group: its own field");
    }

    #[test]
    fn a_member_receives_through_its_qualified_field() {
        let mut to_a = edge(2, 0);
        to_a.send_recv.push(SendRecv { send: "any".into(), recv: "msg".into() });
        let mut graph = ResGraph {
            vertices: vec![
                vertex("print", "a", &[], true),
                vertex("print", "b", &[], true),
                vertex("value", "v", &[], false),
            ],
            edges: vec![to_a],
            ..Default::default()
        };
        autogroup(&mut graph);
        assert_eq!(graph.edges[0].send_recv[0].recv, "print[a].msg");
    }

    #[test]
    fn opting_out_asking_and_metaparams_decide() {
        // `print` groups only when both ask; `Meta:autogroup => false` never groups; a
        // different `Meta:noop` keeps two packages apart.
        let mut off = pkg("off");
        std::sync::Arc::make_mut(&mut off.meta).autogroup = false;
        let mut noop = pkg("noop");
        std::sync::Arc::make_mut(&mut noop.meta).noop = true;
        let mut graph = ResGraph {
            vertices: vec![
                vertex("print", "asked", &[], true),
                vertex("print", "silent", &[], false),
                off,
                noop,
                pkg("plain"),
            ],
            ..Default::default()
        };
        autogroup(&mut graph);
        assert!(graph.members.is_empty(), "{:?}", graph.to_lines());
    }

    #[test]
    fn packages_with_different_states_or_versions_stay_apart() {
        let state = |s: &str| [("state", Value::str(s))];
        let mut graph = ResGraph {
            vertices: vec![
                vertex("pkg", "a", &state("installed"), false),
                vertex("pkg", "b", &state("uninstalled"), false),
                vertex("pkg", "c", &state("1.2-3"), false),
                vertex("pkg", "d", &state("1.2-3"), false),
                vertex("pkg", "e", &[], false),
            ],
            ..Default::default()
        };
        autogroup(&mut graph);
        assert_eq!(
            graph.to_lines(),
            ["Group: pkg[e]: Vertex: pkg[a]", "Vertex: pkg[b]", "Vertex: pkg[c]", "Vertex: pkg[d]", "Vertex: pkg[e]"]
        );
    }
}
