//! A swap that replaces some running vertices by new instances of the same keys and leaves
//! every other vertex and every edge as it runs: what a live edit that changed only some
//! resources' params needs, in time proportional to what changed rather than to the graph.
//! Same steps as [`crate::swap`] (check, pre-fill, diff, init, stop, relink under the gate,
//! start), each limited to the replaced vertices and their neighbours.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::graph::Vertex;
use crate::key::ResKey;
use crate::node::{Digest, Link, Links, Node};
use crate::swap::{Rejection, Running, RunningVertex, SwapError, SwapReport};
use crate::worker::{Shared, Worker};

/// Replaces the running vertices of `vertices`' keys. Rejected whole, nothing touched, when
/// a key does not run, a key comes twice, a vertex does not validate or a new one fails init.
pub(crate) async fn patch(
    shared: &Arc<Shared>,
    running: &mut Running,
    mut vertices: Vec<Vertex>,
    state_dir: &std::path::Path,
    stop_timeout: Duration,
    generation: u64,
) -> Result<SwapReport, SwapError> {
    check(running, &vertices)?;
    for v in &mut vertices {
        prefill(running, v);
    }
    let (same, fresh): (Vec<Vertex>, Vec<Vertex>) =
        vertices.into_iter().partition(|v| crate::swap::same(&running.vertices[&v.key], v));
    let unchanged: Vec<ResKey> = same.into_iter().map(|v| v.key).collect();
    let (fresh, reversals) = crate::swap::init_all(state_dir, fresh).await.map_err(|(e, _)| e)?;
    running.keep_reversals(reversals);

    // The neighbours' view of each replaced vertex, read before the stop clears it.
    let old_links: Vec<Arc<Links>> = fresh.iter().map(|v| running.vertices[&v.key].node.links()).collect();
    let stopping: Vec<RunningVertex> = fresh.iter().filter_map(|v| running.vertices.remove(&v.key)).collect();
    let old_nodes: Vec<Arc<Node>> = stopping.iter().map(|v| v.node.clone()).collect();
    crate::swap::stop(shared, stopping, stop_timeout).await;

    let pause = shared.close_gate(stop_timeout).await;
    if !pause.held() {
        tracing::warn!("a check-apply is still running; patching without waiting for it");
    }
    let mut workers = Vec::with_capacity(fresh.len());
    let mut keys = Vec::with_capacity(fresh.len());
    for ((v, old), links) in fresh.into_iter().zip(old_nodes).zip(old_links) {
        let node = Arc::new(Node::new(v.key.clone(), Digest::of(&v.res.fingerprint())));
        shared.converger.register(&node.converged);
        relink(&old, &node, &links);
        let meta = Arc::new(v.meta);
        workers.push(Worker::new(shared.clone(), node.clone(), meta.clone(), v.res));
        keys.push(v.key.clone());
        running.vertices.insert(v.key, RunningVertex { node, meta });
    }
    drop(pause);
    crate::batch::start_all(shared, workers).await;
    // A neighbour waiting on a replaced vertex looks again at its new links.
    for key in &keys {
        for link in running.vertices[key].node.links().children.iter() {
            if link.node.waiting.load(Ordering::SeqCst) {
                link.node.poke(&shared.converger);
            }
        }
    }
    Ok(SwapReport { generation, started: keys.clone(), stopped: keys, unchanged })
}

/// Every key runs, once, and every vertex validates.
fn check(running: &Running, vertices: &[Vertex]) -> Result<(), SwapError> {
    let mut problems = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for v in vertices {
        if !running.vertices.contains_key(&v.key) || running.reversal_keys.contains(&v.key) {
            problems.push(Rejection::Name { key: v.key.clone(), reason: "is not in the running graph" });
        } else if !seen.insert(&v.key) {
            problems.push(Rejection::Name { key: v.key.clone(), reason: "is replaced twice" });
        } else if let Some(r) = crate::swap::validate_vertex(v) {
            problems.push(r);
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(SwapError::Rejected(problems)) }
}

/// Gives the new instance what its running senders hold (see [`crate::swap::prefill`]).
fn prefill(running: &Running, v: &mut Vertex) {
    let links = running.vertices[&v.key].node.links();
    for parent in links.parents.iter() {
        if let Some(pairs) = &parent.sendrecv {
            crate::swap::receive_held(&parent.node, pairs, v.res.as_mut());
        }
    }
}

/// Puts `new` where `old` was: `new` gets `old`'s links, each neighbour's link to `old` now
/// leads to `new`, and edges that notify get a fresh pending flag (as a swap gives every
/// edge of a started vertex), in both links of the edge.
fn relink(old: &Arc<Node>, new: &Arc<Node>, links: &Links) {
    let renewed = |list: &[Link]| -> Box<[Link]> {
        list.iter()
            .map(|l| Link { pending: l.pending.as_ref().map(|_| Arc::new(AtomicBool::new(false))), ..l.clone() })
            .collect()
    };
    let (parents, children) = (renewed(&links.parents), renewed(&links.children));
    let ends = parents.iter().map(|l| (l, false)).chain(children.iter().map(|l| (l, true)));
    for (link, old_is_parent) in ends {
        retarget(&link.node, old, new, &link.pending, old_is_parent);
    }
    new.set_links(Links { parents, children });
}

/// Replaces, in `neighbour`'s links (its parents when `old` is its parent, else its
/// children), the link to `old` by one to `new` with the pending flag `pending`.
fn retarget(
    neighbour: &Arc<Node>,
    old: &Arc<Node>,
    new: &Arc<Node>,
    pending: &Option<Arc<AtomicBool>>,
    old_is_parent: bool,
) {
    let current = neighbour.links();
    let swap = |list: &[Link]| -> Box<[Link]> {
        list.iter()
            .map(|l| {
                if Arc::ptr_eq(&l.node, old) {
                    Link { node: new.clone(), pending: pending.clone(), sendrecv: l.sendrecv.clone() }
                } else {
                    l.clone()
                }
            })
            .collect()
    };
    let links = if old_is_parent {
        Links { parents: swap(&current.parents), children: current.children.clone() }
    } else {
        Links { parents: current.parents.clone(), children: swap(&current.children) }
    };
    neighbour.set_links(links);
}
