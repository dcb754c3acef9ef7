//! The resource graph handed to the engine: vertices (kind, name, meta, resource) and
//! edges (ordering, notification, send/recv), plus the structural checks a candidate must
//! pass before it may replace the running graph.

use std::collections::{BTreeMap, BTreeSet};

use crate::meta::Meta;
use crate::res::{ResKey, Resource};

/// One resource to run.
pub struct Vertex {
    pub key: ResKey,
    pub meta: Meta,
    pub res: Box<dyn Resource>,
}

/// A value carried along an edge: the sender's `send` field into the receiver's `recv`
/// param.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SendRecv {
    pub send: String,
    pub recv: String,
}

/// `from` runs before `to`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    pub from: ResKey,
    pub to: ResKey,
    /// `to` is refreshed when `from` changed something.
    pub notify: bool,
    pub sendrecv: Vec<SendRecv>,
}

/// A complete desired state.
#[derive(Default)]
pub struct Graph {
    pub vertices: Vec<Vertex>,
    pub edges: Vec<Edge>,
}

/// Why a candidate graph is malformed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    #[error("duplicate resource {0}")]
    DuplicateVertex(ResKey),
    #[error("edge {from} -> {to} names a resource that is not in the graph")]
    DanglingEdge { from: ResKey, to: ResKey },
    #[error("edge {0} -> {0} is a self-loop")]
    SelfLoop(ResKey),
    #[error("the graph has a cycle through {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    Cycle(Vec<ResKey>),
    #[error("{key} receives `{recv}` from more than one sender")]
    DuplicateRecv { key: ResKey, recv: String },
}

impl Graph {
    pub fn new() -> Graph {
        Graph::default()
    }

    pub fn add_vertex(&mut self, key: ResKey, meta: Meta, res: Box<dyn Resource>) {
        self.vertices.push(Vertex { key, meta, res });
    }

    pub fn add_edge(&mut self, from: ResKey, to: ResKey, notify: bool) {
        self.edges.push(Edge { from, to, notify, sendrecv: Vec::new() });
    }

    /// Adds the dependency edge `from -> to` carrying `from.send` into `to.recv`.
    pub fn add_sendrecv(&mut self, from: ResKey, send: &str, to: ResKey, recv: &str) {
        let sendrecv = vec![SendRecv { send: send.to_string(), recv: recv.to_string() }];
        self.edges.push(Edge { from, to, notify: false, sendrecv });
    }

    /// Merges edges between the same pair (notify OR-ed, send/recv pairs unioned), keyed
    /// and ordered by (from, to).
    pub(crate) fn merged_edges(&self) -> BTreeMap<(ResKey, ResKey), Edge> {
        let mut out: BTreeMap<(ResKey, ResKey), Edge> = BTreeMap::new();
        for edge in &self.edges {
            let entry = out.entry((edge.from.clone(), edge.to.clone())).or_insert_with(|| Edge {
                from: edge.from.clone(),
                to: edge.to.clone(),
                notify: false,
                sendrecv: Vec::new(),
            });
            entry.notify |= edge.notify;
            for sr in &edge.sendrecv {
                if !entry.sendrecv.contains(sr) {
                    entry.sendrecv.push(sr.clone());
                }
            }
        }
        for edge in out.values_mut() {
            edge.sendrecv.sort();
        }
        out
    }

    /// Structural checks: unique keys, edges between existing vertices, one sender per
    /// received param, no cycles.
    pub fn check(&self) -> Result<(), GraphError> {
        self.check_with(&self.merged_edges())
    }

    /// [`Graph::check`] with the merged edges already at hand.
    pub(crate) fn check_with(&self, edges: &BTreeMap<(ResKey, ResKey), Edge>) -> Result<(), GraphError> {
        let mut keys = BTreeSet::new();
        for v in &self.vertices {
            if !keys.insert(&v.key) {
                return Err(GraphError::DuplicateVertex(v.key.clone()));
            }
        }
        let mut receivers = BTreeSet::new();
        for ((from, to), edge) in edges {
            if !keys.contains(from) || !keys.contains(to) {
                return Err(GraphError::DanglingEdge { from: from.clone(), to: to.clone() });
            }
            if from == to {
                return Err(GraphError::SelfLoop(from.clone()));
            }
            for sr in &edge.sendrecv {
                if !receivers.insert((to, &sr.recv)) {
                    return Err(GraphError::DuplicateRecv { key: to.clone(), recv: sr.recv.clone() });
                }
            }
        }
        check_acyclic(&keys, edges.keys())
    }
}

/// Kahn's algorithm; on failure names the vertices left on cycles (sorted).
fn check_acyclic<'a>(
    keys: &BTreeSet<&'a ResKey>,
    edges: impl Iterator<Item = &'a (ResKey, ResKey)>,
) -> Result<(), GraphError> {
    let mut indegree: BTreeMap<&ResKey, usize> = keys.iter().map(|k| (*k, 0)).collect();
    let mut children: BTreeMap<&ResKey, Vec<&ResKey>> = BTreeMap::new();
    for (from, to) in edges {
        children.entry(from).or_default().push(to);
        *indegree.entry(to).or_default() += 1;
    }
    let mut ready: Vec<&ResKey> = indegree.iter().filter(|(_, d)| **d == 0).map(|(k, _)| *k).collect();
    let mut seen = 0;
    while let Some(key) = ready.pop() {
        seen += 1;
        for child in children.get(key).into_iter().flatten() {
            if let Some(d) = indegree.get_mut(child) {
                *d -= 1;
                if *d == 0 {
                    ready.push(child);
                }
            }
        }
    }
    if seen == indegree.len() {
        return Ok(());
    }
    Err(GraphError::Cycle(indegree.into_iter().filter(|(_, d)| *d > 0).map(|(k, _)| k.clone()).collect()))
}
