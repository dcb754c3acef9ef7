//! The resource graph handed to the engine: vertices (kind, name, meta, resource) and
//! edges (ordering, notification, send/recv), plus the structural checks a candidate must
//! pass before it may replace the running graph.

use std::collections::BTreeSet;

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

/// `from` runs before `to`: the two vertices by their positions in [`Graph::vertices`]. A
/// checked graph has one per ordered pair of vertices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    /// `to` is refreshed when `from` changed something.
    pub notify: bool,
    pub sendrecv: Vec<SendRecv>,
}

/// An edge added by the keys of its ends, resolved to positions when the graph is checked.
#[derive(Clone, Debug)]
struct KeyedEdge {
    from: ResKey,
    to: ResKey,
    notify: bool,
    sendrecv: Vec<SendRecv>,
}

/// A complete desired state.
#[derive(Default)]
pub struct Graph {
    pub vertices: Vec<Vertex>,
    /// Edges added by position (what a builder that adds vertices in order gives).
    edges: Vec<Edge>,
    /// Edges added by key.
    keyed: Vec<KeyedEdge>,
}

/// Why a candidate graph is malformed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    #[error("duplicate resource {0}")]
    DuplicateVertex(ResKey),
    #[error("edge {from} -> {to} names a resource that is not in the graph")]
    DanglingEdge { from: String, to: String },
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

    /// Makes room for `vertices` more vertices and `edges` more edges (added by position):
    /// a builder that knows its sizes keeps the graph exactly that big.
    pub fn reserve(&mut self, vertices: usize, edges: usize) {
        self.vertices.reserve_exact(vertices);
        self.edges.reserve_exact(edges);
    }

    pub fn add_vertex(&mut self, key: ResKey, meta: Meta, res: Box<dyn Resource>) {
        self.vertices.push(Vertex { key, meta, res });
    }

    pub fn add_edge(&mut self, from: ResKey, to: ResKey, notify: bool) {
        self.keyed.push(KeyedEdge { from, to, notify, sendrecv: Vec::new() });
    }

    /// Adds the dependency edge `from -> to` carrying `from.send` into `to.recv`.
    pub fn add_sendrecv(&mut self, from: ResKey, send: &str, to: ResKey, recv: &str) {
        self.keyed.push(KeyedEdge { from, to, notify: false, sendrecv: pair(send, recv) });
    }

    /// [`Graph::add_edge`] between the vertices added `from`-th and `to`-th (from 0).
    pub fn add_edge_at(&mut self, from: usize, to: usize, notify: bool) {
        self.edges.push(Edge { from, to, notify, sendrecv: Vec::new() });
    }

    /// [`Graph::add_sendrecv`] between the vertices added `from`-th and `to`-th (from 0).
    pub fn add_sendrecv_at(&mut self, from: usize, send: &str, to: usize, recv: &str) {
        self.edges.push(Edge { from, to, notify: false, sendrecv: pair(send, recv) });
    }

    /// How many edges were added (before merging those between the same pair).
    pub fn edges_added(&self) -> usize {
        self.edges.len() + self.keyed.len()
    }

    /// Structural checks: unique keys, edges between existing vertices, one sender per
    /// received param, no cycles.
    pub fn check(&self) -> Result<(), GraphError> {
        let mut edges = self.edges.clone();
        let edges = self.merge(&mut edges, &self.keyed).map(|()| edges)?;
        self.check_with(&edges)
    }

    /// Takes every edge out of the graph by the positions of its ends, those between the
    /// same pair merged (notify OR-ed, send/recv pairs unioned and sorted), ordered by
    /// (from, to). Fails on a duplicate key or an edge to a vertex that is not in the graph
    /// (the edges are gone either way).
    pub(crate) fn take_merged_edges(&mut self) -> Result<Vec<Edge>, GraphError> {
        let mut edges = std::mem::take(&mut self.edges);
        let keyed = std::mem::take(&mut self.keyed);
        self.merge(&mut edges, &keyed).map(|()| edges)
    }

    /// Adds `keyed` to `edges` by position, then merges and sorts them (see
    /// [`Graph::take_merged_edges`]). Keys are found through one hash each: keys of one kind
    /// share long prefixes, which makes every comparison in an ordered map a long `memcmp`.
    fn merge(&self, edges: &mut Vec<Edge>, keyed: &[KeyedEdge]) -> Result<(), GraphError> {
        let mut index: FastMap<&ResKey, usize> = FastMap::default();
        index.reserve(self.vertices.len());
        for (i, v) in self.vertices.iter().enumerate() {
            if index.insert(&v.key, i).is_some() {
                return Err(GraphError::DuplicateVertex(v.key.clone()));
            }
        }
        let n = self.vertices.len();
        if let Some(e) = edges.iter().find(|e| e.from >= n || e.to >= n) {
            let end = |i: usize| self.vertices.get(i).map_or_else(|| format!("vertex #{i}"), |v| v.key.to_string());
            return Err(GraphError::DanglingEdge { from: end(e.from), to: end(e.to) });
        }
        edges.reserve(keyed.len());
        for e in keyed {
            let (Some(&from), Some(&to)) = (index.get(&e.from), index.get(&e.to)) else {
                return Err(GraphError::DanglingEdge { from: e.from.to_string(), to: e.to.to_string() });
            };
            edges.push(Edge { from, to, notify: e.notify, sendrecv: e.sendrecv.clone() });
        }
        // Stable: the send/recv pairs of one vertex pair keep the order they were added in.
        edges.sort_by_key(|e| (e.from, e.to));
        // `later` is dropped, folded into `kept`, the first edge of its pair.
        edges.dedup_by(|later, kept| {
            if (later.from, later.to) != (kept.from, kept.to) {
                return false;
            }
            kept.notify |= later.notify;
            for sr in later.sendrecv.drain(..) {
                if !kept.sendrecv.contains(&sr) {
                    kept.sendrecv.push(sr);
                }
            }
            true
        });
        for edge in edges.iter_mut() {
            edge.sendrecv.sort();
        }
        Ok(())
    }

    /// [`Graph::check`] with the merged edges already at hand: no self-loop, one sender per
    /// received param, no cycle.
    pub(crate) fn check_with(&self, edges: &[Edge]) -> Result<(), GraphError> {
        let mut receivers = BTreeSet::new();
        let mut arcs = Vec::with_capacity(edges.len());
        for edge in edges {
            let (f, t) = (edge.from, edge.to);
            if f == t {
                return Err(GraphError::SelfLoop(self.vertices[f].key.clone()));
            }
            for sr in &edge.sendrecv {
                if !receivers.insert((t, sr.recv.as_str())) {
                    let key = self.vertices[t].key.clone();
                    return Err(GraphError::DuplicateRecv { key, recv: sr.recv.clone() });
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

/// The one send/recv pair of an edge added with it.
fn pair(send: &str, recv: &str) -> Vec<SendRecv> {
    vec![SendRecv { send: send.to_string(), recv: recv.to_string() }]
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::res::Nothing;

    fn graph(names: &[&str]) -> Graph {
        let mut g = Graph::new();
        for n in names {
            g.add_vertex(ResKey::new("t", n), Meta::default(), Box::new(Nothing));
        }
        g
    }

    #[test]
    fn edges_by_position_and_by_key_merge_per_pair_in_position_order() {
        let mut g = graph(&["c", "a", "b"]);
        g.add_edge_at(1, 2, false);
        g.add_sendrecv_at(1, "out", 2, "in");
        g.add_edge(ResKey::new("t", "a"), ResKey::new("t", "b"), true);
        g.add_sendrecv(ResKey::new("t", "a"), "err", ResKey::new("t", "b"), "err");
        g.add_sendrecv_at(1, "out", 2, "in");
        g.add_edge(ResKey::new("t", "c"), ResKey::new("t", "a"), false);
        assert_eq!(g.edges_added(), 6);
        g.check().expect("a DAG");
        let edges = g.take_merged_edges().expect("every end exists");
        let pairs = |sr: &[SendRecv]| sr.iter().map(|s| format!("{}>{}", s.send, s.recv)).collect::<Vec<_>>();
        // Position order (c is first), one edge per pair: notify OR-ed, pairs unioned, sorted.
        assert_eq!(edges.iter().map(|e| (e.from, e.to, e.notify)).collect::<Vec<_>>(), [(0, 1, false), (1, 2, true)]);
        assert_eq!(pairs(&edges[1].sendrecv), ["err>err", "out>in"]);
        assert_eq!(g.edges_added(), 0, "taken");
    }

    #[test]
    fn bad_ends_and_shapes_are_named() {
        let mut g = graph(&["a", "b"]);
        g.add_edge_at(0, 5, false);
        assert_eq!(
            g.check().unwrap_err().to_string(),
            "edge t[a] -> vertex #5 names a resource that is not in the graph"
        );
        let mut g = graph(&["a", "b"]);
        g.add_edge(ResKey::new("t", "a"), ResKey::new("t", "z"), false);
        assert_eq!(g.check().unwrap_err().to_string(), "edge t[a] -> t[z] names a resource that is not in the graph");
        let mut g = graph(&["a", "a"]);
        assert_eq!(g.check().unwrap_err(), GraphError::DuplicateVertex(ResKey::new("t", "a")));
        assert!(g.take_merged_edges().is_err());
        let mut g = graph(&["a", "b"]);
        g.add_edge_at(0, 1, false);
        g.add_edge(ResKey::new("t", "b"), ResKey::new("t", "a"), false);
        assert_eq!(g.check().unwrap_err(), GraphError::Cycle(vec![ResKey::new("t", "a"), ResKey::new("t", "b")]));
        let mut g = graph(&["a", "b", "c"]);
        g.add_sendrecv_at(0, "x", 2, "in");
        g.add_sendrecv_at(1, "y", 2, "in");
        assert_eq!(g.check().unwrap_err(), GraphError::DuplicateRecv { key: ResKey::new("t", "c"), recv: "in".into() });
        let mut g = graph(&["a"]);
        g.add_edge_at(0, 0, false);
        assert_eq!(g.check().unwrap_err(), GraphError::SelfLoop(ResKey::new("t", "a")));
    }
}
