//! The engine's resource graph against petgraph's `StableGraph` at 100,000 resources:
//! memory per vertex of a candidate graph, the structural check (duplicate keys, dangling
//! edges, cycles), and a swap that replaces 1 % of the vertices.
//!
//! `cargo run --release --bin graph` from `bench/compare`.

#![allow(clippy::print_stdout, reason = "a report for the terminal")]

use std::time::{Duration, Instant};

use async_trait::async_trait;
use engine::fasthash::FastMap;
use engine::{ApplyCtx, Engine, EngineConfig, Graph, Meta, ResError, ResKey, Resource, SendRecv};
use petgraph::stable_graph::{NodeIndex, StableGraph};
use tend_compare::alloc::{self, Counting};
use tend_compare::{median, ms};

#[global_allocator]
static ALLOC: Counting = Counting;

const N: usize = 100_000;
/// Vertices renamed by the edit swap (1 %).
const CHANGED: usize = N / 100;

/// A resource that is always right: the engine's own work is what is measured.
struct Quiet(String);

#[async_trait]
impl Resource for Quiet {
    async fn check_apply(&mut self, _ctx: &mut ApplyCtx, _apply: bool) -> Result<bool, ResError> {
        Ok(true)
    }
    fn watch_passive(&self) -> bool {
        true
    }
    fn fingerprint(&self) -> String {
        self.0.clone()
    }
}

/// The `i`-th vertex's key; the edit swap renames the first [`CHANGED`] of them.
fn key(i: usize, edited: bool) -> ResKey {
    let tag = if edited && i < CHANGED { "b" } else { "a" };
    ResKey::new("file", format!("/srv/www/site-{tag}/{i:06}.html"))
}

/// Each vertex after the first depends on its parent in a binary tree: N - 1 edges.
fn parent(i: usize) -> usize {
    (i - 1) / 2
}

fn engine_graph(edited: bool) -> Graph {
    let mut g = Graph::new();
    g.reserve(N, N);
    for i in 0..N {
        g.add_vertex(key(i, edited), Meta::default(), Box::new(Quiet(format!("content {i}"))));
    }
    for i in 1..N {
        g.add_edge_at(parent(i), i, i % 7 == 0);
    }
    g
}

/// What the engine's vertex holds, in petgraph: the same payload, and an index by key (a
/// swap finds vertices by key, as the engine does).
#[allow(dead_code, reason = "the payload is weighed, not read")]
struct PetVertex {
    key: ResKey,
    meta: Meta,
    res: Box<dyn Resource>,
}

#[allow(dead_code, reason = "the payload is weighed, not read")]
struct PetEdge {
    notify: bool,
    sendrecv: Vec<SendRecv>,
}

struct Pet {
    graph: StableGraph<PetVertex, PetEdge>,
    index: FastMap<ResKey, NodeIndex>,
}

fn pet_graph(edited: bool) -> Pet {
    let mut graph = StableGraph::with_capacity(N, N);
    let mut index = FastMap::default();
    index.reserve(N);
    let mut at = Vec::with_capacity(N);
    for i in 0..N {
        let key = key(i, edited);
        let node = graph.add_node(PetVertex {
            key: key.clone(),
            meta: Meta::default(),
            res: Box::new(Quiet(format!("content {i}"))),
        });
        assert!(index.insert(key, node).is_none(), "duplicate key");
        at.push(node);
    }
    for i in 1..N {
        graph.add_edge(at[parent(i)], at[i], PetEdge { notify: i % 7 == 0, sendrecv: Vec::new() });
    }
    Pet { graph, index }
}

/// petgraph's part of a check: a cycle is found by a topological sort.
fn pet_check(pet: &Pet) {
    assert!(petgraph::algo::toposort(&pet.graph, None).is_ok());
}

/// A swap of `running` to `candidate` done on a `StableGraph`: vertices gone are removed
/// (their edges with them), vertices whose fingerprint changed are replaced, new ones added,
/// and every candidate edge is set between its ends; then the cycle check.
fn pet_swap(running: &mut Pet, candidate: Pet) -> (usize, usize) {
    let Pet { graph: mut cand, index: cand_index } = candidate;
    let gone: Vec<ResKey> = running.index.keys().filter(|k| !cand_index.contains_key(*k)).cloned().collect();
    for key in &gone {
        if let Some(node) = running.index.remove(key) {
            running.graph.remove_node(node);
        }
    }
    // Candidate positions to running positions.
    let mut map: FastMap<NodeIndex, NodeIndex> = FastMap::default();
    map.reserve(cand_index.len());
    let mut started = 0;
    let edges: Vec<(NodeIndex, NodeIndex, PetEdge)> = {
        let ids: Vec<_> = cand.edge_indices().collect();
        ids.into_iter()
            .filter_map(|e| {
                let (a, b) = cand.edge_endpoints(e)?;
                Some((a, b, cand.remove_edge(e)?))
            })
            .collect()
    };
    for (key, at) in cand_index {
        let Some(vertex) = cand.remove_node(at) else { continue };
        match running.index.get(&key) {
            Some(&node) if running.graph[node].res.fingerprint() == vertex.res.fingerprint() => {
                map.insert(at, node);
            }
            Some(&node) => {
                running.graph[node] = vertex;
                started += 1;
                map.insert(at, node);
            }
            None => {
                let node = running.graph.add_node(vertex);
                running.index.insert(key, node);
                started += 1;
                map.insert(at, node);
            }
        }
    }
    for (a, b, w) in edges {
        running.graph.update_edge(map[&a], map[&b], w);
    }
    pet_check(running);
    (gone.len(), started)
}

fn per_vertex(bytes: usize) -> String {
    format!("{:.0} B", bytes as f64 / N as f64)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [walk, n] = args.as_slice() {
        return deep_walk(walk, n.parse().expect("a length"));
    }
    println!("## A candidate graph of {N} resources and {} edges\n", N - 1);
    println!("| | engine `Graph` | petgraph `StableGraph` + key index |");
    println!("|---|---|---|");
    let (e_peak, e_kept, e_allocs, g) = alloc::measure(|| engine_graph(false));
    drop(g);
    let (p_peak, p_kept, p_allocs, p) = alloc::measure(|| pet_graph(false));
    drop(p);
    println!("| memory kept per vertex (payload included) | {} | {} |", per_vertex(e_kept), per_vertex(p_kept));
    println!("| peak while building, per vertex | {} | {} |", per_vertex(e_peak), per_vertex(p_peak));
    println!("| allocations | {e_allocs} | {p_allocs} |");
    let build_e = median(9, || drop(engine_graph(false)));
    let build_p = median(9, || drop(pet_graph(false)));
    println!("| build (median of 9) | {} | {} |", ms(build_e), ms(build_p));
    let g = engine_graph(false);
    let check_e = median(9, || g.check().expect("a DAG"));
    drop(g);
    let p = pet_graph(false);
    let check_p = median(9, || pet_check(&p));
    drop(p);
    println!(
        "| check: keys, edge ends, cycles (median of 9) | {} | {} (toposort only; keys checked while building) |",
        ms(check_e),
        ms(check_p)
    );

    println!("\n## A swap that renames {CHANGED} of them (1 %), median of 5\n");
    let mut times = Vec::new();
    let mut running = pet_graph(false);
    for round in 0..6 {
        let candidate = pet_graph(round % 2 == 0);
        let start = Instant::now();
        let (gone, started) = pet_swap(&mut running, candidate);
        let took = start.elapsed();
        assert_eq!((gone, started), (CHANGED, CHANGED));
        assert_eq!(running.graph.node_count(), N);
        assert_eq!(running.graph.edge_count(), N - 1);
        if round > 0 {
            times.push(took);
        }
    }
    times.sort();
    let pet = times[times.len() / 2];
    let engine = engine_swaps();
    println!("| | time |");
    println!("|---|---|");
    println!(
        "| engine `Engine::apply` (check, diff, init, stop {CHANGED} and start {CHANGED} workers, relink) | {} |",
        ms(engine.0)
    );
    println!("| engine `Engine::apply` of the same graph again (check and diff only) | {} |", ms(engine.1));
    println!("| petgraph model (diff by key, replace nodes, set every edge, toposort; no workers) | {} |", ms(pet));
    deep();
}

/// Each of petgraph's walks over a chain of vertices, in a child process (a stack overflow
/// aborts the process), on a thread with tokio's 2 MiB stack.
fn deep() {
    println!("\n## A chain of vertices, walked on a 2 MiB stack (a tokio worker's)\n");
    println!("| walk | 10,000 | 100,000 | 1,000,000 |");
    println!("|---|---|---|---|");
    let me = std::env::current_exe().expect("this binary");
    for walk in ["engine-check", "toposort", "kosaraju_scc", "tarjan_scc", "is_cyclic_directed"] {
        let cells: Vec<String> = [10_000, 100_000, 1_000_000]
            .iter()
            .map(|n| {
                let out = std::process::Command::new(&me).args([walk, &n.to_string()]).output().expect("a child");
                if out.status.success() {
                    String::from_utf8_lossy(&out.stdout).trim().to_string()
                } else {
                    "**stack overflow**".to_string()
                }
            })
            .collect();
        println!("| {walk} | {} |", cells.join(" | "));
    }
}

/// One walk of [`deep`]: prints its time.
fn deep_walk(walk: &str, n: usize) {
    let walk = walk.to_string();
    let thread = std::thread::Builder::new().stack_size(2 << 20).spawn(move || {
        let start = Instant::now();
        if walk == "engine-check" {
            let mut g = Graph::new();
            for i in 0..n {
                g.add_vertex(key(i, false), Meta::default(), Box::new(Quiet(String::new())));
            }
            for i in 1..n {
                g.add_edge_at(i - 1, i, false);
            }
            let start = Instant::now();
            g.check().expect("a DAG");
            return start.elapsed();
        }
        let mut g = petgraph::Graph::<(), ()>::with_capacity(n, n);
        let nodes: Vec<_> = (0..n).map(|_| g.add_node(())).collect();
        for w in nodes.windows(2) {
            g.add_edge(w[0], w[1], ());
        }
        let _ = start;
        let start = Instant::now();
        match walk.as_str() {
            "toposort" => assert!(petgraph::algo::toposort(&g, None).is_ok()),
            "kosaraju_scc" => assert_eq!(petgraph::algo::kosaraju_scc(&g).len(), n),
            "tarjan_scc" => assert_eq!(petgraph::algo::tarjan_scc(&g).len(), n),
            _ => assert!(!petgraph::algo::is_cyclic_directed(&g)),
        }
        start.elapsed()
    });
    let took = thread.expect("a thread").join().expect("the walk");
    println!("{}", ms(took));
}

/// The engine's own swap times: (the 1 % edit, an unchanged graph), medians of 5.
fn engine_swaps() -> (Duration, Duration) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    runtime.block_on(async {
        let state = std::env::temp_dir().join(format!("tend-compare-{}", std::process::id()));
        let engine = Engine::new(EngineConfig { state_dir: state.clone(), ..EngineConfig::default() });
        engine.apply(engine_graph(false)).await.expect("a valid graph");
        assert!(engine.wait_converged(Duration::from_secs(120)).await);
        let (mut edits, mut same) = (Vec::new(), Vec::new());
        for round in 0..5 {
            let edited = round % 2 == 0;
            let graph = engine_graph(edited);
            let start = Instant::now();
            let report = engine.apply(graph).await.expect("a valid graph");
            edits.push(start.elapsed());
            assert_eq!(report.started.len(), CHANGED);
            assert!(engine.wait_converged(Duration::from_secs(120)).await);
            let graph = engine_graph(edited);
            let start = Instant::now();
            let report = engine.apply(graph).await.expect("a valid graph");
            same.push(start.elapsed());
            assert!(report.started.is_empty());
        }
        engine.shutdown(Duration::from_secs(60)).await;
        let _ = std::fs::remove_dir_all(state);
        edits.sort();
        same.sort();
        (edits[2], same[2])
    })
}
