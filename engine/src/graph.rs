//! The resource graph handed to the engine: vertices (kind, name, meta, resource) and
//! edges (ordering, notification, send/recv), plus the structural checks a candidate must
//! pass before it may replace the running graph.

use std::collections::{BTreeMap, BTreeSet};

use crate::fasthash::FastMap;
use crate::key::{ResKey, SendRecv};
use crate::meta::Meta;
use crate::res::Resource;

/// One resource to run.
pub struct Vertex {
    pub key: ResKey,
    pub meta: Meta,
    pub res: Box<dyn Resource>,
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

    /// [`Graph::check`] with the merged edges already at hand. Works on vertex positions:
    /// keys are hashed once each instead of compared all along ordered-map walks (keys of
    /// one kind share long prefixes, which makes every comparison a long `memcmp`).
    pub(crate) fn check_with(&self, edges: &BTreeMap<(ResKey, ResKey), Edge>) -> Result<(), GraphError> {
        let mut index: FastMap<&ResKey, usize> = FastMap::default();
        index.reserve(self.vertices.len());
        for (i, v) in self.vertices.iter().enumerate() {
            if index.insert(&v.key, i).is_some() {
                return Err(GraphError::DuplicateVertex(v.key.clone()));
            }
        }
        let mut receivers = BTreeSet::new();
        let mut arcs = Vec::with_capacity(edges.len());
        for ((from, to), edge) in edges {
            let (Some(&f), Some(&t)) = (index.get(from), index.get(to)) else {
                return Err(GraphError::DanglingEdge { from: from.clone(), to: to.clone() });
            };
            if f == t {
                return Err(GraphError::SelfLoop(from.clone()));
            }
            for sr in &edge.sendrecv {
                if !receivers.insert((to, &sr.recv)) {
                    return Err(GraphError::DuplicateRecv { key: to.clone(), recv: sr.recv.clone() });
                }
            }
            arcs.push((f, t));
        }
        let on_cycles = vertices_on_cycles(self.vertices.len(), &arcs);
        if on_cycles.is_empty() {
            return Ok(());
        }
        let mut keys: Vec<ResKey> = on_cycles.into_iter().map(|i| self.vertices[i].key.clone()).collect();
        keys.sort();
        Err(GraphError::Cycle(keys))
    }
}

/// Kahn's algorithm over `n` vertices and the `arcs` between their positions: the vertices
/// it cannot order (those on a cycle or downstream of one), empty for a DAG.
fn vertices_on_cycles(n: usize, arcs: &[(usize, usize)]) -> Vec<usize> {
    // Children of vertex v: children[start[v]..start[v + 1]].
    let mut start = vec![0usize; n + 1];
    let mut indegree = vec![0usize; n];
    for &(from, to) in arcs {
        start[from + 1] += 1;
        indegree[to] += 1;
    }
    for v in 0..n {
        start[v + 1] += start[v];
    }
    let mut fill = start.clone();
    let mut children = vec![0usize; arcs.len()];
    for &(from, to) in arcs {
        children[fill[from]] = to;
        fill[from] += 1;
    }
    let mut ready: Vec<usize> = (0..n).filter(|&v| indegree[v] == 0).collect();
    while let Some(v) = ready.pop() {
        for &child in &children[start[v]..start[v + 1]] {
            indegree[child] -= 1;
            if indegree[child] == 0 {
                ready.push(child);
            }
        }
    }
    (0..n).filter(|&v| indegree[v] > 0).collect()
}
