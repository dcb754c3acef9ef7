//! Duplicate resources (spec 3.12): identical duplicates collapse into one vertex; hidden
//! resources may coexist with a normal one of the same name (and different hidden ones
//! are all kept); resources exported to the same host must be identical; other normal
//! duplicates must be identical too, unless their kind knows how to merge compatible
//! declarations.
//!
//! Extension point: [`merge_duplicate`] is where per-kind compatible merging belongs
//! (mgmt's `pkg` merges `installed` with `newest`). It currently knows no kind, so every
//! differing normal duplicate is an error.

use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::resgraph::{ResGraph, ResVertex};
use std::collections::HashMap;

/// Where a declared resource ended up.
#[derive(Clone, Debug)]
pub(super) enum Placement {
    /// Index of its vertex (its own, or the identical one it merged into).
    Vertex(usize),
    /// Building or merging failed (already reported): edges to it are not reported again.
    Failed { kind: String, name: String },
}

/// What to do with a normal resource declared twice with different contents.
pub enum MergeOutcome {
    /// Replace the existing vertex by this merged one.
    Merged(Box<ResVertex>),
    /// The declarations conflict; the reason names the first differing field.
    Incompatible(String),
}

/// Merges two differing normal declarations of the same kind and name. The per-kind
/// hook for compatible merging goes here; no kind has one yet.
pub fn merge_duplicate(existing: &ResVertex, new: &ResVertex) -> MergeOutcome {
    MergeOutcome::Incompatible(first_difference(existing, new))
}

/// Adds every built vertex to `graph` by the duplicate rules.
pub(super) fn place_all(
    built: Vec<Option<ResVertex>>,
    graph: &mut ResGraph,
    diags: &mut Diagnostics,
) -> Vec<Option<Placement>> {
    let mut by_key = ByKey::with_capacity(built.len());
    graph.vertices.reserve(built.len());
    let mut exports: HashMap<(String, String, String), usize> = HashMap::new();
    let mut placed = Vec::with_capacity(built.len());
    for vertex in built {
        let Some(vertex) = vertex else {
            placed.push(None);
            continue;
        };
        let failed = |v: &ResVertex| Some(Placement::Failed { kind: v.kind.clone(), name: v.name.clone() });
        if let Some(d) = check_exports(&vertex, graph, &exports) {
            diags.push(d);
            placed.push(failed(&vertex));
            continue;
        }
        let hash = ByKey::hash(&vertex);
        let twin = {
            let mut same_name = by_key.same(hash, &vertex, graph);
            if vertex.hidden() {
                // Identical hidden resources merge; differing ones are all kept.
                same_name.find(|&i| graph.vertices[i].hidden() && graph.vertices[i].same_as(&vertex))
            } else {
                same_name.find(|&i| !graph.vertices[i].hidden())
            }
        };
        let index = match twin {
            Some(i) if graph.vertices[i].same_as(&vertex) => i,
            Some(i) => match merge_duplicate(&graph.vertices[i], &vertex) {
                MergeOutcome::Merged(merged) => {
                    graph.vertices[i] = *merged;
                    i
                }
                MergeOutcome::Incompatible(reason) => {
                    let existing = &graph.vertices[i];
                    let msg = format!("inequivalent duplicate resource `{}` found: {reason}", vertex.key());
                    let d = Diagnostic::new(Stage::Interpret, msg, vertex.span)
                        .with_code(Code::DuplicateResource)
                        .with_label(existing.span, "first declared here")
                        .with_label(vertex.span, "declared again here, differently")
                        .with_note("duplicates of a resource must be identical (all params and meta params)");
                    diags.push(d);
                    placed.push(failed(&vertex));
                    continue;
                }
            },
            None => {
                let index = graph.vertices.len();
                by_key.push(hash, index);
                graph.vertices.push(vertex);
                index
            }
        };
        let v = &graph.vertices[index];
        for host in v.export() {
            exports.entry((v.kind.clone(), v.name.clone(), host.clone())).or_insert(index);
        }
        placed.push(Some(Placement::Vertex(index)));
    }
    placed
}

/// The graph's vertices by kind and name, without a string per vertex: the first and last
/// vertex of each hash of the two, and after each vertex the next one of its hash (in the
/// order they were added).
struct ByKey {
    /// Hash -> (first, last) vertex with it.
    ends: foldhash::HashMap<u64, (usize, usize)>,
    /// A vertex -> the next vertex of the same hash ([`usize::MAX`] for none).
    next: Vec<usize>,
}

impl ByKey {
    fn with_capacity(n: usize) -> ByKey {
        ByKey { ends: foldhash::HashMap::with_capacity_and_hasher(n, Default::default()), next: Vec::with_capacity(n) }
    }

    fn hash(v: &ResVertex) -> u64 {
        use std::hash::BuildHasher;
        foldhash::fast::FixedState::default().hash_one((&v.kind, &v.name))
    }

    /// Adds vertex `index` (the graph's next) with `hash`.
    fn push(&mut self, hash: u64, index: usize) {
        self.next.resize(index + 1, usize::MAX);
        match self.ends.get_mut(&hash) {
            Some((_, last)) => {
                self.next[*last] = index;
                *last = index;
            }
            None => {
                self.ends.insert(hash, (index, index));
            }
        }
    }

    /// The vertices of `graph` with the kind and name of `v` (whose hash is `hash`), in the
    /// order they were added.
    fn same<'g>(&'g self, hash: u64, v: &'g ResVertex, graph: &'g ResGraph) -> impl Iterator<Item = usize> + 'g {
        let first = self.ends.get(&hash).map_or(usize::MAX, |&(first, _)| first);
        std::iter::successors(Some(first), |&i| self.next.get(i).copied())
            .take_while(|&i| i != usize::MAX)
            .filter(move |&i| graph.vertices[i].kind == v.kind && graph.vertices[i].name == v.name)
    }
}

/// Two resources exported to the same host under one kind and name must be identical.
fn check_exports(
    vertex: &ResVertex,
    graph: &ResGraph,
    exports: &HashMap<(String, String, String), usize>,
) -> Option<Diagnostic> {
    for host in vertex.export() {
        let Some(&i) = exports.get(&(vertex.kind.clone(), vertex.name.clone(), host.clone())) else { continue };
        let existing = &graph.vertices[i];
        if existing.same_as(vertex) {
            continue;
        }
        let reason = first_difference(existing, vertex);
        let msg = format!("inequivalent duplicate export: {} to {host}: {reason}", vertex.key());
        return Some(
            Diagnostic::new(Stage::Interpret, msg, vertex.span)
                .with_code(Code::DuplicateResource)
                .with_label(existing.span, format!("also exported to {host} here")),
        );
    }
    None
}

/// A description of the first field in which two vertices differ.
fn first_difference(a: &ResVertex, b: &ResVertex) -> String {
    let mut names: Vec<&String> = a.params.keys().chain(b.params.keys()).collect();
    names.sort();
    names.dedup();
    for name in names {
        match (a.params.get(name), b.params.get(name)) {
            (Some(x), Some(y)) if x != y => return format!("param `{name}` differs: {x} vs {y}"),
            (Some(x), None) => return format!("param `{name}` is set to {x} only in the first declaration"),
            (None, Some(y)) => return format!("param `{name}` is set to {y} only in the second declaration"),
            _ => {}
        }
    }
    for ((name, x), (_, y)) in a.meta.entries().into_iter().zip(b.meta.entries()) {
        if x != y {
            return format!("meta param `{name}` differs: {x} vs {y}");
        }
    }
    "they differ".into()
}
