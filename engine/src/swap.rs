//! The engine's one way to change what runs: apply a candidate graph by diff
//! (engine.md 2.9/2.10). Steps: check the candidate, pre-fill received values, diff by
//! kind+name+params, init what is new (any failure rejects the candidate, nothing running is
//! touched), stop what goes away, relink the graph under the pause gate, start what is new.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::fasthash::{FastMap, FastSet};
use crate::graph::{Edge, Graph, GraphError, Vertex};
use crate::key::{ResError, ResKey, SendRecv};
use crate::meta::{Meta, MetaError};
use crate::node::{Digest, Link, Links, Node, Pairs, lock};
use crate::res::{InitCtx, Resource};
use crate::worker::{Shared, Worker};

/// The running graph: one record per vertex, one per edge.
#[derive(Default)]
pub(crate) struct Running {
    pub(crate) vertices: BTreeMap<ResKey, RunningVertex>,
    /// Reversals captured when `Meta:reverse` vertices were first inited, waiting for
    /// their vertex to leave the graph (kept on disk too when the engine can revive them).
    pub(crate) pending_reversals: BTreeMap<ResKey, Box<dyn Resource>>,
    /// Running vertices that are reversals; kept until they succeed once.
    pub(crate) reversal_keys: BTreeSet<ResKey>,
    /// The pending reversals on disk, when the engine can revive them.
    pub(crate) undo: Option<Arc<crate::undo::Undo>>,
    /// Pending reversals read from disk at start: due at the first graph that lacks their
    /// resource, though it never ran in this process.
    pub(crate) restored: BTreeSet<ResKey>,
}

pub(crate) struct RunningVertex {
    pub(crate) node: Arc<Node>,
    /// Shared with the worker (and with neighbours whose metaparams are equal).
    pub(crate) meta: Arc<Meta>,
    // The worker's task, when it has one, and its cancellation are in the node: a parked
    // worker is spawned again by whoever wakes it.
}

impl Running {
    /// An empty table, holding the reversals left pending by an earlier run when the
    /// engine can revive them.
    pub(crate) fn with_undo(config: &crate::EngineConfig) -> Running {
        let mut running = Running::default();
        let Some(revive) = &config.revive else { return running };
        let (undo, found) = crate::undo::Undo::open(&config.state_dir);
        for (key, record) in found {
            match (revive.0)(&key, &record) {
                Ok(res) => {
                    tracing::info!(resource = %key, "a reversal is still pending from an earlier run");
                    running.pending_reversals.insert(key.clone(), res);
                    running.restored.insert(key);
                }
                Err(e) => {
                    tracing::warn!(resource = %key, error = %e.message, "a pending reversal from an earlier run cannot be built; it is kept, not applied");
                }
            }
        }
        running.undo = Some(undo);
        running
    }

    /// Keeps the reversals a swap's inits captured: the first capture of a key wins (it
    /// holds the state from before tend managed the resource), on disk too.
    pub(crate) fn keep_reversals(&mut self, reversals: Reversals) {
        for (key, reversal) in reversals {
            if self.pending_reversals.contains_key(&key) {
                continue;
            }
            match (&self.undo, reversal.record()) {
                (Some(undo), Some(record)) => undo.remember(&key, record),
                (Some(_), None) => {
                    tracing::info!(resource = %key, "its reversal is kept in memory only: a restart loses it")
                }
                (None, _) => {}
            }
            self.pending_reversals.insert(key, reversal);
        }
    }

    /// How many edges run: each is its child's link to a parent.
    pub(crate) fn edge_count(&self) -> usize {
        self.vertices.values().map(|v| v.node.links().parents.len()).sum()
    }
}

impl RunningVertex {
    /// Asks the worker to stop: cancels its token (its watch and any step in flight) and
    /// wakes it, since an idle worker waits only for its wake-up signal (a parked one stops
    /// right here, see [`Node::wake_to_stop`]).
    pub(crate) fn stop(&self) {
        self.node.cancel();
        self.node.wake_to_stop();
    }
}

/// What a successful swap did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SwapReport {
    pub generation: u64,
    pub started: Vec<ResKey>,
    pub stopped: Vec<ResKey>,
    pub unchanged: Vec<ResKey>,
}

/// One reason a candidate graph was rejected.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Rejection {
    #[error("{0}")]
    Graph(GraphError),
    #[error("{key}: {error}")]
    Meta { key: ResKey, error: MetaError },
    #[error("{key}: {reason}")]
    Name { key: ResKey, reason: &'static str },
    #[error("{key} did not validate: {error}")]
    Validate { key: ResKey, error: ResError },
    #[error("{key} failed to init: {error}")]
    Init { key: ResKey, error: ResError },
}

/// Why [`crate::Engine::apply`] did not apply a graph. The running graph is untouched.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SwapError {
    #[error("candidate graph rejected: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Rejected(Vec<Rejection>),
    #[error("the engine is shut down")]
    ShutDown,
}

/// Which vertices of the candidate are new and which running ones stop.
struct Plan {
    /// Running vertices to stop (removed, or replaced by a different instance).
    stop: Vec<ResKey>,
    /// Candidate vertices that replace nothing or replace a stopped one; `None` when every
    /// candidate starts (nothing runs yet).
    start: Option<FastSet<ResKey>>,
    unchanged: Vec<ResKey>,
    /// The unchanged vertices that are not in the candidate (reversals kept running until
    /// they succeed): they keep no edge.
    outside: Vec<ResKey>,
}

impl Plan {
    fn starts(&self, key: &ResKey) -> bool {
        self.start.as_ref().is_none_or(|start| start.contains(key))
    }
}

/// Checks the candidate: structure, metaparams, names, then each resource's own validation
/// (skipped for hidden ones). Collects every problem. Takes the edges out of the graph:
/// merged, when there is no problem.
pub(crate) fn validate(graph: &mut Graph) -> Result<Vec<Edge>, SwapError> {
    let mut problems = Vec::new();
    let edges = match graph.take_merged_edges().and_then(|edges| graph.check_with(&edges).map(|()| edges)) {
        Ok(edges) => edges,
        Err(e) => {
            problems.push(Rejection::Graph(e));
            Vec::new()
        }
    };
    for v in &graph.vertices {
        if let Some(r) = validate_vertex(v) {
            problems.push(r);
        }
    }
    if problems.is_empty() { Ok(edges) } else { Err(SwapError::Rejected(problems)) }
}

pub(crate) fn validate_vertex(v: &Vertex) -> Option<Rejection> {
    let key = &v.key;
    if key.kind.is_empty() {
        return Some(Rejection::Name { key: key.clone(), reason: "kind is empty" });
    }
    if key.name.is_empty() {
        return Some(Rejection::Name { key: key.clone(), reason: "name is empty" });
    }
    if let Err(error) = v.meta.validate() {
        return Some(Rejection::Meta { key: key.clone(), error });
    }
    if key.name.starts_with('$') && !v.meta.dollar {
        return Some(Rejection::Name {
            key: key.clone(),
            reason: "name starts with `$` (a typo for an interpolation? set Meta:dollar => true to allow it)",
        });
    }
    if v.meta.hidden {
        return None;
    }
    v.res.validate().err().map(|error| Rejection::Validate { key: key.clone(), error })
}

/// Fills candidate receivers with what the running senders currently hold, so a receiver
/// whose param was set at runtime does not look changed (engine.md 1.12).
pub(crate) fn prefill(running: &Running, graph: &mut Graph, edges: &[Edge]) {
    if running.vertices.is_empty() {
        return;
    }
    for edge in edges.iter().filter(|e| !e.sendrecv.is_empty()) {
        let Some(sender) = running.vertices.get(&graph.vertices[edge.from].key) else { continue };
        receive_held(&sender.node, &edge.sendrecv, graph.vertices[edge.to].res.as_mut());
    }
}

/// Gives `receiver` what the running `sender` holds for the pairs `pairs`.
pub(crate) fn receive_held(sender: &Node, pairs: &[SendRecv], receiver: &mut dyn Resource) {
    let Some(sent) = sender.sends() else { return };
    for sr in pairs {
        if let Some(value) = sent.get(&sr.send) {
            // A value the receiver cannot take is reported when the worker transfers it.
            let _ignored = receiver.recv(&sr.recv, value);
        }
    }
}

/// Diff by kind+name: same fingerprint and metaparams keep the running vertex, unless it
/// failed and asks to be rewatched.
fn plan(running: &Running, graph: &Graph, keep: &BTreeSet<ResKey>) -> Plan {
    if running.vertices.is_empty() {
        // The first graph: nothing to compare with.
        return Plan { stop: Vec::new(), start: None, unchanged: Vec::new(), outside: Vec::new() };
    }
    let mut stop = Vec::new();
    let mut unchanged = Vec::new();
    let mut outside = Vec::new();
    let candidate: FastMap<&ResKey, &Vertex> = graph.vertices.iter().map(|v| (&v.key, v)).collect();
    for (key, old) in &running.vertices {
        match candidate.get(key) {
            Some(new) if same(old, new) => unchanged.push(key.clone()),
            None if keep.contains(key) => {
                unchanged.push(key.clone());
                outside.push(key.clone());
            }
            _ => stop.push(key.clone()),
        }
    }
    let kept: FastSet<&ResKey> = unchanged.iter().collect();
    let start = candidate.into_keys().filter(|key| !kept.contains(key)).cloned().collect();
    Plan { stop, start: Some(start), unchanged, outside }
}

pub(crate) fn same(old: &RunningVertex, new: &Vertex) -> bool {
    let failed = old.node.failure().is_some();
    !(failed && new.meta.rewatch)
        && old.meta.same_for_swap(&new.meta)
        && old.node.fingerprint() == Digest::of(&new.res.fingerprint())
}

/// What [`init_new`] produced: the inited vertices with their captured reversals, and
/// what the candidate's positions hold.
struct Inited {
    vertices: Vec<Vertex>,
    reversals: Reversals,
    /// The candidate's positions whose running vertex is kept, with its key, in order; the
    /// inited vertices fill the others, in order.
    kept: Vec<(usize, ResKey)>,
}

/// The reversals captured by inits (`Meta:reverse`), by key.
pub(crate) type Reversals = Vec<(ResKey, Box<dyn Resource>)>;

/// On rejection, the vertices handed back (cleaned up) so injected reversals stay pending.
pub(crate) type InitFailure = (SwapError, Vec<Vertex>);

/// Runs `init` on every vertex to start (see [`init_all`]).
async fn init_new(state_dir: &Path, graph: Graph, plan: &Plan) -> Result<Inited, InitFailure> {
    let kept = graph.vertices.iter().enumerate().filter(|(_, v)| !plan.starts(&v.key)).map(|(i, v)| (i, v.key.clone()));
    let kept: Vec<(usize, ResKey)> = kept.collect();
    // Every vertex starts (the first graph): inited where it is, rather than moved into a
    // second list of the graph's size while the first is freed.
    let starting = if kept.is_empty() {
        graph.vertices
    } else {
        graph.vertices.into_iter().filter(|v| plan.starts(&v.key)).collect()
    };
    let (vertices, reversals) = init_all(state_dir, starting).await?;
    Ok(Inited { vertices, reversals, kept })
}

/// Runs `init` on each vertex in turn; on a failure cleans up those already inited (and
/// the one that failed) and rejects, handing every vertex back.
pub(crate) async fn init_all(
    state_dir: &Path,
    mut vertices: Vec<Vertex>,
) -> Result<(Vec<Vertex>, Reversals), InitFailure> {
    let mut reversals = Vec::new();
    // One context, its key set for each vertex in turn.
    let mut ctx = InitCtx { key: ResKey::new("", ""), var_dir: None, state_dir: state_dir.to_path_buf() };
    for at in 0..vertices.len() {
        let v = &mut vertices[at];
        ctx.key = v.key.clone();
        match init_one(&ctx, v).await {
            Ok(reversal) => reversals.extend(reversal.map(|r| (v.key.clone(), r))),
            Err(error) => {
                let rejection = Rejection::Init { key: v.key.clone(), error };
                for v in &mut vertices[..=at] {
                    if let Err(error) = v.res.cleanup().await {
                        tracing::warn!(resource = %v.key, error = %error, "cleanup after a rejected init failed");
                    }
                }
                return Err((SwapError::Rejected(vec![rejection]), vertices));
            }
        }
    }
    Ok((vertices, reversals))
}

/// Inits one new vertex; its reversal when it asks for one (`Meta:reverse`).
async fn init_one(ctx: &InitCtx, v: &mut Vertex) -> Result<Option<Box<dyn Resource>>, ResError> {
    v.res.init(ctx).await?;
    if v.meta.reverse { v.res.reversal() } else { Ok(None) }
}

/// Adds a pending reversal for every reversible vertex that leaves the graph, and lists
/// the running reversals that must keep running because they have not succeeded yet.
/// Returns the keys of the injected reversals and of the kept ones.
fn inject_reversals(running: &mut Running, graph: &mut Graph) -> (BTreeSet<ResKey>, BTreeSet<ResKey>) {
    if running.reversal_keys.is_empty() && running.pending_reversals.is_empty() {
        return Default::default();
    }
    let candidate: BTreeSet<ResKey> = graph.vertices.iter().map(|v| v.key.clone()).collect();
    let keep: BTreeSet<ResKey> = running
        .reversal_keys
        .iter()
        .filter(|k| !candidate.contains(*k))
        .filter(|k| {
            running.vertices.get(*k).is_some_and(|v| !v.node.succeeded.load(std::sync::atomic::Ordering::SeqCst))
        })
        .cloned()
        .collect();
    let due: Vec<ResKey> = running
        .pending_reversals
        .keys()
        .filter(|k| !candidate.contains(*k) && (running.vertices.contains_key(*k) || running.restored.contains(*k)))
        .cloned()
        .collect();
    let mut injected = BTreeSet::new();
    for key in due {
        if let Some(res) = running.pending_reversals.remove(&key) {
            tracing::info!(resource = %key, "left the graph; running its reversal");
            let res = Box::new(crate::undo::Reverting { inner: res, undo: running.undo.clone(), key: key.clone() });
            graph.vertices.push(Vertex { key: key.clone(), meta: Meta::default(), res });
            injected.insert(key);
        }
    }
    (injected, keep)
}

/// Stops workers: cancel them all, then await each with the deadline, aborting stragglers.
/// Returns the keys that had to be aborted.
pub(crate) async fn stop(shared: &Shared, vertices: Vec<RunningVertex>, deadline: Duration) -> Vec<ResKey> {
    for v in &vertices {
        v.stop();
    }
    let until = tokio::time::Instant::now() + deadline;
    let mut stragglers = Vec::new();
    for v in vertices {
        let straggler = match tokio::time::timeout_at(until, v.node.take_task(&shared.starts.batch_over)).await {
            Ok(Some(mut join)) => {
                let late = tokio::time::timeout_at(until, &mut join).await.is_err();
                if late {
                    join.abort();
                    let _aborted = join.await;
                }
                late
            }
            Ok(None) => false,
            // Its batch of first passes is still on a slow one: nothing to abort yet.
            Err(_) => true,
        };
        if straggler {
            tracing::warn!(resource = %v.node.key, "did not stop before the deadline; aborting");
            stragglers.push(v.node.key.clone());
        }
        shared.converger.unregister(&v.node.converged);
        shared.emit(false, || crate::EngineEvent::Stopped(v.node.key.clone()));
        if shared.exiting.load(std::sync::atomic::Ordering::Relaxed) {
            std::mem::forget(v);
        } else {
            // Links hold their neighbours: clear them, or stopped vertices keep each other alive.
            v.node.set_links(Links::default());
        }
    }
    stragglers
}

/// The whole swap, as named steps. `running` is the engine's table, locked by the caller.
pub(crate) async fn swap(
    shared: &Arc<Shared>,
    running: &mut Running,
    mut graph: Graph,
    state_dir: &Path,
    stop_timeout: Duration,
    generation: u64,
) -> Result<SwapReport, SwapError> {
    // Merged once: injected reversals bring no edges (they are added after every position
    // the edges name), and prefilling changes no edge.
    let edges = validate(&mut graph)?;
    let (injected, keep) = inject_reversals(running, &mut graph);
    prefill(running, &mut graph, &edges);
    let plan = plan(running, &graph, &keep);
    let Inited { vertices: fresh, reversals, kept } = match init_new(state_dir, graph, &plan).await {
        Ok(inited) => inited,
        Err((error, handed_back)) => {
            for v in handed_back.into_iter().filter(|v| injected.contains(&v.key)) {
                running.pending_reversals.insert(v.key, v.res);
            }
            return Err(error);
        }
    };
    running.keep_reversals(reversals);
    running.reversal_keys = injected.into_iter().chain(keep).collect();
    running.restored.clear();

    let stopping: Vec<RunningVertex> = plan.stop.iter().filter_map(|k| running.vertices.remove(k)).collect();
    stop(shared, stopping, stop_timeout).await;

    // Pause: wait for in-flight process steps, but not forever: a check-apply of a kept
    // resource that ignores cancellation must not block every future swap (mgmt would
    // wait). Relinking without the pause is safe; at worst a notification produced by
    // that straggling run on an edge created by this swap is lost.
    // Held until the new workers start; dropping it wakes the workers that met it.
    let pause = shared.close_gate(stop_timeout).await;
    if !pause.held() {
        tracing::warn!("a check-apply is still running; swapping without waiting for it");
    }
    // Sized up front: at the graph's first start these hold every resource at once, at
    // the process's peak, and doubling would leave up to half of each unused.
    let mut started = Vec::with_capacity(fresh.len());
    let mut workers = Vec::with_capacity(fresh.len());
    let mut entries = Vec::with_capacity(fresh.len());
    let mut fresh_nodes = Vec::with_capacity(fresh.len());
    // Resources declared together mostly have equal metaparams (nearly always the
    // defaults): consecutive equal ones share one copy.
    let mut last_meta: Option<Arc<Meta>> = None;
    for v in fresh {
        let node = Arc::new(Node::new(v.key.clone(), Digest::of(&v.res.fingerprint())));
        shared.converger.register(&node.converged);
        let meta = match &last_meta {
            Some(last) if **last == v.meta => last.clone(),
            _ => last_meta.insert(Arc::new(v.meta)).clone(),
        };
        let worker = Worker::new(shared.clone(), node.clone(), meta.clone(), v.res);
        workers.push(worker);
        fresh_nodes.push(node.clone());
        started.push(v.key.clone());
        entries.push((v.key, RunningVertex { node, meta }));
    }
    if running.vertices.is_empty() {
        // The first graph: built in bulk, with full tree nodes (inserting one by one in
        // key order leaves every node half empty).
        running.vertices = entries.into_iter().collect();
    } else {
        running.vertices.extend(entries);
    }
    // Before the workers start: the candidate's edges are the largest thing the swap holds.
    let any_kept = !kept.is_empty();
    let nodes = candidate_nodes(running, kept, fresh_nodes);
    relink(running, &nodes, any_kept, edges, &plan.outside);
    drop(nodes);
    lock(&shared.retries).retain(|key, _| running.vertices.contains_key(key));
    // The new workers start once the gate is open: one that met it would go back to waiting
    // (and, watching by subscription, park) only to be woken when the swap ends.
    drop(pause);
    crate::batch::start_all(shared, workers).await;
    // A kept vertex waiting on its parents may have lost the parent it waited for; let it
    // re-evaluate against its new links.
    // A kept vertex that failed is checked again: a swap is when its cause may have passed.
    for key in &plan.unchanged {
        if let Some(v) = running.vertices.get(key)
            && (v.node.waiting.load(std::sync::atomic::Ordering::SeqCst) || v.node.failure().is_some())
        {
            v.node.poke(&shared.converger);
        }
    }
    Ok(SwapReport { generation, started, stopped: plan.stop, unchanged: plan.unchanged })
}

/// The node at each position of the candidate: the `kept` ones found by key, the `fresh`
/// ones filling the other positions in order.
fn candidate_nodes(running: &Running, kept: Vec<(usize, ResKey)>, fresh: Vec<Arc<Node>>) -> Vec<Arc<Node>> {
    if kept.is_empty() {
        return fresh;
    }
    // One hash lookup per kept vertex instead of ordered-map walks comparing keys.
    let index: FastMap<&ResKey, &Arc<Node>> = running.vertices.iter().map(|(k, v)| (k, &v.node)).collect();
    let mut nodes = Vec::with_capacity(kept.len() + fresh.len());
    let mut fresh = fresh.into_iter();
    for (at, key) in kept {
        nodes.extend(fresh.by_ref().take(at - nodes.len()));
        // Kept vertices are the plan's unchanged ones, which stay in the table.
        debug_assert!(index.contains_key(&key), "{key} is kept but not running");
        nodes.extend(index.get(&key).map(|node| Arc::clone(node)));
    }
    nodes.extend(fresh);
    nodes
}

/// Rebuilds the links of the candidate's vertices (`nodes`, by position; `kept` when some
/// were running before) from its edges, keeping the pending-refresh flag of edges whose
/// endpoints both stayed and whose notify flag did not change; the kept vertices `outside` the candidate lose theirs. The running
/// edges are the links themselves (a child link carries the edge's pending flag and
/// send/recv pairs): no table of them is kept beside.
fn relink(running: &Running, nodes: &[Arc<Node>], kept: bool, edges: Vec<Edge>, outside: &[ResKey]) {
    // The pending flags of the edges running now between vertices that stay (none at the
    // first start), read before any link is replaced. A kept vertex is the same node before
    // and after, so a pair of node addresses names a kept edge: the old links hold every
    // node they point to, so no address is reused while this map lives.
    let mut old: FastMap<(*const Node, *const Node), Option<Arc<AtomicBool>>> = FastMap::default();
    let current: FastSet<*const Node> = if kept { nodes.iter().map(Arc::as_ptr).collect() } else { FastSet::default() };
    for node in nodes.iter().filter(|_| kept) {
        for link in node.links().children.iter() {
            if current.contains(&Arc::as_ptr(&link.node)) {
                old.insert((Arc::as_ptr(node), Arc::as_ptr(&link.node)), link.pending.clone());
            }
        }
    }
    drop(current);
    for key in outside {
        if let Some(v) = running.vertices.get(key) {
            v.node.set_links(Links::default());
        }
    }
    // Each vertex's lists get exactly their length: a vector's first push makes room for
    // four links, and most vertices have one parent or none.
    let mut degrees = vec![(0usize, 0usize); nodes.len()];
    for edge in &edges {
        degrees[edge.to].0 += 1;
        degrees[edge.from].1 += 1;
    }
    let mut links: Vec<(Vec<Link>, Vec<Link>)> = degrees
        .into_iter()
        .map(|(parents, children)| (Vec::with_capacity(parents), Vec::with_capacity(children)))
        .collect();
    for edge in edges {
        let (parent, child) = (&nodes[edge.from], &nodes[edge.to]);
        let pending = match old.get(&(Arc::as_ptr(parent), Arc::as_ptr(child))) {
            Some(old) if old.is_some() == edge.notify => old.clone(),
            _ => edge.notify.then(|| Arc::new(AtomicBool::new(false))),
        };
        let sendrecv: Pairs = (!edge.sendrecv.is_empty()).then(|| Arc::new(edge.sendrecv));
        let link = |node: &Arc<Node>| Link { node: node.clone(), pending: pending.clone(), sendrecv: sendrecv.clone() };
        links[edge.to].0.push(link(parent));
        links[edge.from].1.push(link(child));
    }
    drop(old);
    // Vertices with one parent, no child and nothing on the edge (every file of a managed
    // directory) have equal links: they share one copy, made once per parent.
    let mut leaves: FastMap<*const Node, Arc<Links>> = FastMap::default();
    for (node, (parents, children)) in nodes.iter().zip(links) {
        if let [only] = &parents[..]
            && children.is_empty()
            && only.pending.is_none()
            && only.sendrecv.is_none()
        {
            let shared = leaves
                .entry(Arc::as_ptr(&only.node))
                .or_insert_with(|| Arc::new(Links { parents: parents.into_boxed_slice(), children: Box::default() }));
            node.share_links(shared.clone());
            continue;
        }
        // Exactly sized already: boxing does not move them.
        node.set_links(Links { parents: parents.into_boxed_slice(), children: children.into_boxed_slice() });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;

    fn running(names: &[&str]) -> Running {
        let vertices = names
            .iter()
            .map(|n| {
                let key = ResKey::new("test", n);
                let node = Arc::new(Node::new(key.clone(), Digest::of(n)));
                (key, RunningVertex { node, meta: Arc::new(Meta::default()) })
            })
            .collect();
        Running { vertices, ..Default::default() }
    }

    /// Positions of the vertices named `a`, `b`, `c`... in `running` (in name order).
    fn edges(list: &[(&str, &str, bool)]) -> Vec<Edge> {
        let at = |n: &str| usize::from(n.as_bytes()[0] - b'a');
        list.iter()
            .map(|&(from, to, notify)| Edge { from: at(from), to: at(to), notify, sendrecv: Vec::new() })
            .collect()
    }

    fn relink_all(running: &Running, list: &[(&str, &str, bool)], kept: bool) {
        let nodes: Vec<Arc<Node>> = running.vertices.values().map(|v| v.node.clone()).collect();
        relink(running, &nodes, kept, edges(list), &[]);
    }

    /// Replaces the node of `name` by a new one, as a swap that starts it does.
    fn replace(running: &mut Running, name: &str) {
        let key = ResKey::new("test", name);
        let node = Arc::new(Node::new(key.clone(), Digest::of(name)));
        running.vertices.insert(key, RunningVertex { node, meta: Arc::new(Meta::default()) });
    }

    /// The pending flag of the edge from `from` to `to`, as the child's link and the
    /// parent's link hold it (they must be one flag).
    fn pending(running: &Running, from: &str, to: &str) -> Option<Arc<AtomicBool>> {
        let node = |n: &str| running.vertices[&ResKey::new("test", n)].node.clone();
        let down = node(from).links().children.iter().find(|l| *l.node.key.name == *to).unwrap().pending.clone();
        let up = node(to).links().parents.iter().find(|l| *l.node.key.name == *from).unwrap().pending.clone();
        assert_eq!(down.as_ref().map(Arc::as_ptr), up.as_ref().map(Arc::as_ptr), "both links share the flag");
        down
    }

    /// The files of one directory (`a`) hold one copy of their links; a vertex with a child
    /// (`c`) or whose edge notifies (`d`, a pending flag of its own) keeps its own.
    #[test]
    fn leaves_of_one_parent_share_their_links() {
        let running = running(&["a", "b", "c", "d", "e", "f"]);
        let list = [("a", "b", false), ("a", "c", false), ("a", "d", true), ("a", "e", false), ("c", "f", false)];
        relink_all(&running, &list, false);
        let links = |n: &str| running.vertices[&ResKey::new("test", n)].node.links();
        let (b, c, d, e) = (links("b"), links("c"), links("d"), links("e"));
        assert!(Arc::ptr_eq(&b, &e), "one copy for the plain files");
        assert!(b.children.is_empty() && b.parents.len() == 1 && &*b.parents[0].node.key.name == "a");
        assert!(!Arc::ptr_eq(&b, &c), "c has a child");
        assert!(!Arc::ptr_eq(&b, &d), "d's edge notifies");
        assert!(d.parents[0].pending.is_some());
        assert_eq!(links("a").children.len(), 4);
        assert_eq!(&*links("f").parents[0].node.key.name, "c");
    }

    #[test]
    fn a_refresh_pending_on_a_kept_edge_survives_a_relink() {
        let mut running = running(&["a", "b", "c"]);
        relink_all(&running, &[("a", "b", true), ("b", "c", true)], false);
        pending(&running, "a", "b").unwrap().store(true, Ordering::SeqCst);
        pending(&running, "b", "c").unwrap().store(true, Ordering::SeqCst);
        assert_eq!(running.edge_count(), 2);

        // Nothing starts: both flags are kept, still set.
        let before = pending(&running, "a", "b").unwrap();
        relink_all(&running, &[("a", "b", true), ("b", "c", true)], true);
        assert!(Arc::ptr_eq(&before, &pending(&running, "a", "b").unwrap()));
        assert!(pending(&running, "b", "c").unwrap().load(Ordering::SeqCst));

        // `c` is replaced: its edge gets a fresh flag; an edge that stops notifying has none.
        replace(&mut running, "c");
        relink_all(&running, &[("a", "b", false), ("b", "c", true)], true);
        assert!(pending(&running, "a", "b").is_none());
        assert!(!pending(&running, "b", "c").unwrap().load(Ordering::SeqCst));

        // An edge that starts notifying again gets a flag of its own, unset.
        relink_all(&running, &[("a", "b", true)], true);
        assert!(!pending(&running, "a", "b").unwrap().load(Ordering::SeqCst));
        assert_eq!(running.edge_count(), 1);
    }
}
