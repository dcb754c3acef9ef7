//! The incremental evaluator: *instances* (a node in one environment) with their cached
//! values, the dependency edges recorded while computing them, dirty marking and
//! pull-based re-evaluation, and the collection of instances nothing needs any more.
//!
//! How a change travels (the invariants the rest relies on):
//! * An event (a stream value) marks its instance `MUST` and every transitive dependant
//!   `CHECK` through the reverse edges (`rdeps`). A dirty instance's dependants are
//!   always dirty, so marking stops at the first already-dirty one.
//! * The statement walk then *pulls* the values it needs. Pulling a `CHECK` instance
//!   first pulls its recorded dependencies in the order they were used and recomputes
//!   only if one of them changed since it was last verified; otherwise it is clean
//!   without running. Since dependencies are always brought up to date before their
//!   dependant runs, a node never sees a mix of old and new inputs (no glitches), and a
//!   dependency whose recomputed value is unchanged does not make its dependants run
//!   (equal-value cut-off).
//! * Dependencies are recorded per computation, so an `If` depends on one branch only
//!   and an `Except` on its fallback only while the fallback is in use.
//! * After a wave, instances not reachable from the statement walk's roots through the
//!   recorded dependencies are dropped (their streams cancelled). Static nodes keep
//!   their arena slot (`Evaluator::statics`: constants and parameters have none) and are
//!   merely reset.
//!
//! All state sits in one `RefCell`: evaluation is re-entrant (a built-in calls a lambda
//! through [`crate::api::Caller`], which evaluates more instances), and every borrow is
//! released before calling out. Everything runs on the engine's own thread.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use lang::diag::{Diagnostic, Stage};
use lang::ir::{FuncGraph, NodeId, NodeKind};
use lang::value::{Env, Value};

use crate::api::{FuncError, FuncResult, Host};
use crate::runtime::info::GraphInfo;
use crate::runtime::key::{FxBuild, InstKey, key_hash, same};
use crate::runtime::ops::op_name;
use crate::runtime::stream::{Event, InstId, Spawner, StreamInst};

/// An error value flowing through the graph, with the node it is reported at.
///
/// An error raised inside a lambda is reported at the call that ran the lambda (a
/// `CallValue` or the higher-order built-in), as mgmt does; `inner` keeps the node
/// inside the lambda that raised it, for a secondary label.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Failure {
    pub err: FuncError,
    pub origin: NodeId,
    pub inner: Option<NodeId>,
    /// A streaming function produced the error: it may produce a good value later.
    pub streamed: bool,
}

impl Failure {
    pub fn new(err: FuncError, origin: NodeId) -> Failure {
        Failure { err, origin, inner: None, streamed: false }
    }

    /// The same error, now reported at the call `at` that ran the lambda it came from.
    pub fn through_call(self, at: NodeId) -> Failure {
        Failure { inner: self.inner.or(Some(self.origin)), origin: at, ..self }
    }
}

pub(crate) type Computed = Result<Value, Failure>;
/// The state of a value: `None` while it is not known yet (a stream has not produced).
pub(crate) type Slot = Option<Computed>;

const CLEAN: u8 = 0;
/// A dependency may have changed: verify before use.
const CHECK: u8 = 1;
/// Must be recomputed (never computed, or its stream produced a value).
const MUST: u8 = 2;

/// How many computations may be nested (each dependency level of a chain is one). The
/// evaluator thread's stack holds this many even in a debug build; deeper graphs fail with
/// a diagnostic instead of overflowing it.
const MAX_DEPTH: usize = 40_000;

/// One node evaluated in one environment.
struct Inst {
    node: NodeId,
    /// `Some` for dynamic instances (the key they are indexed by).
    key: Option<InstKey>,
    /// Binds exactly the node's free parameters.
    env: Env,
    /// Incremented each time the slot is freed, to recognise stale stream events.
    generation: u32,
    live: bool,
    dirty: u8,
    computed: bool,
    value: Slot,
    /// Wave in which `value` last changed.
    changed_at: u64,
    /// Wave in which `value` was last known to be up to date.
    verified_at: u64,
    /// Instances used by the last computation, in the order they were used.
    deps: Vec<InstId>,
    /// Instances whose last computation used this one (each once).
    rdeps: Vec<InstId>,
    stream: Option<Box<StreamInst>>,
    /// Reachability stamp of the last collection.
    mark: u64,
}

impl Inst {
    fn new(node: NodeId, key: Option<InstKey>, env: Env, generation: u32, live: bool) -> Inst {
        Inst {
            node,
            key,
            env,
            generation,
            live,
            dirty: MUST,
            computed: false,
            value: None,
            changed_at: 0,
            verified_at: 0,
            deps: Vec::new(),
            rdeps: Vec::new(),
            stream: None,
            mark: 0,
        }
    }
}

/// The dependencies collected while one instance computes.
#[derive(Default)]
struct Frame {
    deps: Vec<InstId>,
    /// A lambda called through `Caller` had no value yet.
    pending: bool,
    /// Errors handed to the running built-in by `Caller`, with where they came from, so
    /// that an error it passes on keeps pointing at its real origin.
    origins: Vec<(FuncError, NodeId)>,
}

#[derive(Default)]
struct State {
    insts: Vec<Inst>,
    free_slots: Vec<InstId>,
    /// Dynamic instances by the hash of their key (see [`key_hash`]); the few ids per
    /// hash are told apart by comparing their stored keys, so a lookup allocates nothing.
    index: HashMap<u64, Vec<InstId>, FxBuild>,
    wave: u64,
    frames: Vec<Frame>,
    /// Instances the statement walk used in this wave.
    roots: Vec<InstId>,
    last_roots: Vec<InstId>,
    /// Set when instances were created or dependency edges changed: a collection is due.
    structure_changed: bool,
    /// Stream instances whose inputs changed and which have not answered yet.
    stale: BTreeSet<InstId>,
    evaluations: u64,
    mark: u64,
}

pub(crate) struct Evaluator {
    pub graph: Arc<FuncGraph>,
    pub info: GraphInfo,
    pub host: Host,
    pub spawner: Spawner,
    /// Where each static node's instance lives in `State::insts`. Constants and
    /// parameters have none ([`NO_INST`]): [`Evaluator::get`] answers them from the graph, so
    /// a program made mostly of constants (most are) pays four bytes for each of them
    /// instead of an instance.
    statics: Vec<InstId>,
    st: RefCell<State>,
}

/// A node that never has an instance (see `Evaluator::statics`).
const NO_INST: InstId = InstId::MAX;

impl Evaluator {
    pub fn new(graph: Arc<FuncGraph>, info: GraphInfo, spawner: Spawner) -> Evaluator {
        let mut insts = Vec::new();
        let statics = (graph.nodes.iter().enumerate())
            .map(|(i, node)| match node.kind {
                NodeKind::Const(_) | NodeKind::Param(_) => NO_INST,
                _ => {
                    insts.push(Inst::new(NodeId(i as u32), None, Env::empty(), 0, false));
                    insts.len() as InstId - 1
                }
            })
            .collect();
        let host = spawner.host.clone();
        Evaluator { graph, info, host, spawner, statics, st: RefCell::new(State { insts, ..State::default() }) }
    }

    /// The value of `node` in `env`, recording it as a dependency of whatever is being
    /// computed (or as a root when the statement walk asks).
    pub fn get(&self, node: NodeId, env: &Env) -> Slot {
        match &self.graph.node(node).kind {
            NodeKind::Const(v) => return Some(Ok(v.clone())),
            NodeKind::Param(p) => {
                return Some(env.get(*p).cloned().ok_or_else(|| {
                    Failure::new(
                        FuncError::fatal(format!("parameter `{}` is not bound", self.graph.params[p.0 as usize].name)),
                        node,
                    )
                }));
            }
            _ => {}
        }
        let id = match self.inst_for(node, env) {
            Ok(id) => id,
            Err(f) => return Some(Err(f)),
        };
        let v = self.pull(id);
        let mut st = self.st.borrow_mut();
        match st.frames.last_mut() {
            Some(frame) => frame.deps.push(id),
            None => st.roots.push(id),
        }
        v
    }

    /// The instance of `node` for `env`, created on first use.
    fn inst_for(&self, node: NodeId, env: &Env) -> Result<InstId, Failure> {
        let free = self.info.free(node);
        let mut st = self.st.borrow_mut();
        if free.is_empty() {
            let id = self.statics[node.0 as usize];
            let inst = &mut st.insts[id as usize];
            if !inst.live {
                inst.live = true;
                st.structure_changed = true;
            }
            return Ok(id);
        }
        let mut vals: Vec<&Value> = Vec::with_capacity(free.len());
        for p in free.iter() {
            match env.get(*p) {
                Some(v) => vals.push(v),
                None => {
                    return Err(Failure::new(
                        FuncError::fatal(format!("parameter `{}` is not bound", self.graph.params[p.0 as usize].name)),
                        node,
                    ));
                }
            }
        }
        let hash = key_hash(node, vals.iter().copied());
        if let Some(ids) = st.index.get(&hash) {
            for id in ids {
                if let Some(key) = &st.insts[*id as usize].key
                    && key.node == node
                    && key.vals.iter().zip(&vals).all(|(a, b)| same(a, b))
                {
                    return Ok(*id);
                }
            }
        }
        let key = InstKey { node, vals: vals.into_iter().cloned().collect() };
        let mut own = Env::empty();
        for (p, v) in free.iter().zip(key.vals.iter()) {
            own = own.bind(*p, v.clone());
        }
        let id = match st.free_slots.pop() {
            Some(id) => {
                let generation = st.insts[id as usize].generation;
                st.insts[id as usize] = Inst::new(node, Some(key), own, generation, true);
                id
            }
            None => {
                st.insts.push(Inst::new(node, Some(key), own, 0, true));
                st.insts.len() as InstId - 1
            }
        };
        st.index.entry(hash).or_default().push(id);
        st.structure_changed = true;
        Ok(id)
    }

    /// Brings an instance up to date and returns its value.
    fn pull(&self, id: InstId) -> Slot {
        let (dirty, computed) = {
            let st = self.st.borrow();
            let inst = &st.insts[id as usize];
            if inst.dirty == CLEAN {
                return inst.value.clone();
            }
            (inst.dirty, inst.computed)
        };
        if dirty == CHECK && computed && !self.deps_changed(id) {
            let mut st = self.st.borrow_mut();
            let wave = st.wave;
            let inst = &mut st.insts[id as usize];
            inst.dirty = CLEAN;
            inst.verified_at = wave;
            return inst.value.clone();
        }
        self.recompute(id)
    }

    /// Pulls the recorded dependencies in order and stops at the first whose value
    /// changed since `id` was verified: the ones after it may not be needed any more.
    fn deps_changed(&self, id: InstId) -> bool {
        let mut i = 0;
        loop {
            let (dep, verified) = {
                let st = self.st.borrow();
                let inst = &st.insts[id as usize];
                match inst.deps.get(i) {
                    Some(d) => (*d, inst.verified_at),
                    None => return false,
                }
            };
            self.pull(dep);
            if self.st.borrow().insts[dep as usize].changed_at > verified {
                return true;
            }
            i += 1;
        }
    }

    fn recompute(&self, id: InstId) -> Slot {
        let (node, env, depth) = {
            let mut st = self.st.borrow_mut();
            st.frames.push(Frame::default());
            let inst = &st.insts[id as usize];
            (inst.node, inst.env.clone(), st.frames.len())
        };
        let value = if depth > MAX_DEPTH {
            let msg = format!("expression nested too deeply: more than {MAX_DEPTH} levels of dependencies");
            Some(Err(Failure::new(FuncError::fatal(msg), node)))
        } else {
            self.eval(id, node, &env)
        };
        let mut st = self.st.borrow_mut();
        let st = &mut *st;
        let frame = st.frames.pop().unwrap_or_default();
        let value = if frame.pending { None } else { value };
        st.evaluations += 1;
        let old = std::mem::take(&mut st.insts[id as usize].deps);
        if old != frame.deps {
            relink(&mut st.insts, id, &old, &frame.deps);
            st.structure_changed = true;
        }
        let wave = st.wave;
        let inst = &mut st.insts[id as usize];
        inst.deps = frame.deps;
        let unchanged = inst.computed
            && match (&inst.value, &value) {
                (None, None) => true,
                (Some(Ok(a)), Some(Ok(b))) => same(a, b),
                (Some(Err(a)), Some(Err(b))) => a == b,
                _ => false,
            };
        if !unchanged {
            inst.value = value.clone();
            inst.changed_at = wave;
        }
        inst.computed = true;
        inst.dirty = CLEAN;
        inst.verified_at = wave;
        value
    }

    /// Starts the next wave of evaluation.
    pub fn begin_wave(&self) {
        let mut st = self.st.borrow_mut();
        st.wave += 1;
        st.roots.clear();
    }

    /// Ends a wave: collects instances the walk no longer reaches.
    pub fn end_wave(&self) {
        let mut st = self.st.borrow_mut();
        let st = &mut *st;
        let mut roots = std::mem::take(&mut st.roots);
        roots.sort_unstable();
        roots.dedup();
        if roots != st.last_roots {
            st.structure_changed = true;
        }
        st.last_roots = roots;
        if st.structure_changed {
            st.structure_changed = false;
            collect(st);
        }
    }

    /// Applies one event from the queue; returns false for `Shutdown`.
    pub fn apply(&self, ev: Event) -> bool {
        let (inst, generation, result) = match ev {
            Event::Shutdown => return false,
            Event::Emit { inst, generation, result } => (inst, generation, Some(result)),
            Event::Ended { inst, generation } => (inst, generation, None),
        };
        let mut st = self.st.borrow_mut();
        let st = &mut *st;
        let Some(target) = st.insts.get_mut(inst as usize) else { return true };
        if target.generation != generation || !target.live {
            return true;
        }
        let Some(stream) = target.stream.as_mut() else { return true };
        match result {
            Some(result) => stream.emitted = Some(result),
            // A stream that ends after its last value keeps it; one that ends without any
            // would leave the graph waiting forever.
            None if stream.emitted.is_some() => return true,
            None => {
                let name = match &self.graph.node(target.node).kind {
                    NodeKind::Call { func, .. } => func.as_str(),
                    _ => "?",
                };
                stream.emitted = Some(Err(FuncError::fatal(format!("func `{name}` stopped before it was loaded"))));
            }
        }
        target.dirty = MUST;
        st.stale.remove(&inst);
        let mut work = vec![inst];
        while let Some(i) = work.pop() {
            for k in 0..st.insts[i as usize].rdeps.len() {
                let r = st.insts[i as usize].rdeps[k];
                if st.insts[r as usize].dirty == CLEAN {
                    st.insts[r as usize].dirty = CHECK;
                    work.push(r);
                }
            }
        }
        true
    }

    /// True when no instance holds a stream: every value is computed from constants, so
    /// nothing can ever change the output again.
    pub fn is_fixed(&self) -> bool {
        let st = self.st.borrow();
        st.stale.is_empty() && st.insts.iter().all(|i| i.stream.is_none())
    }

    /// True while a stream has new inputs and has not answered them yet.
    pub fn has_stale_streams(&self) -> bool {
        !self.st.borrow().stale.is_empty()
    }

    /// How many computations ran so far (for tests and benchmarks).
    pub fn evaluations(&self) -> u64 {
        self.st.borrow().evaluations
    }

    // --- helpers for the node evaluators (eval.rs) ---

    /// Runs `f` with the stream instance of `id`, starting it first if needed.
    pub fn with_stream<R>(
        &self,
        id: InstId,
        start: impl FnOnce(u32) -> StreamInst,
        f: impl FnOnce(&mut StreamInst) -> R,
    ) -> R {
        let mut st = self.st.borrow_mut();
        let inst = &mut st.insts[id as usize];
        let stream = inst.stream.get_or_insert_with(|| Box::new(start(inst.generation)));
        f(stream)
    }

    /// The environment an instance was created with (its free parameters only).
    pub fn own_env(&self, id: InstId) -> Env {
        self.st.borrow().insts[id as usize].env.clone()
    }

    pub fn mark_stale(&self, id: InstId) {
        self.st.borrow_mut().stale.insert(id);
    }

    /// How many computations are in progress (for unwinding after a panic).
    pub fn frame_depth(&self) -> usize {
        self.st.borrow().frames.len()
    }

    /// Drops the frames of computations a panic unwound through.
    pub fn truncate_frames(&self, depth: usize) {
        self.st.borrow_mut().frames.truncate(depth);
    }

    /// Marks the running computation as waiting for a value.
    pub fn set_pending(&self) {
        if let Some(frame) = self.st.borrow_mut().frames.last_mut() {
            frame.pending = true;
        }
    }

    /// Remembers where an error handed to a built-in came from.
    pub fn note_origin(&self, err: &FuncError, origin: NodeId) {
        if let Some(frame) = self.st.borrow_mut().frames.last_mut() {
            frame.origins.push((err.clone(), origin));
        }
    }

    /// A built-in's error at its call site `call`, remembering the node inside a lambda
    /// that raised it when the built-in only passed on what `Caller` gave it.
    pub fn builtin_failure(&self, err: FuncError, call: NodeId) -> Failure {
        let st = self.st.borrow();
        let inner = st.frames.last().and_then(|f| f.origins.iter().rev().find(|(e, _)| *e == err).map(|(_, o)| *o));
        Failure { err, origin: call, inner, streamed: false }
    }

    /// The errStream diagnostic for an error that reached a statement.
    pub fn diagnostic(&self, f: &Failure) -> Diagnostic {
        let at = self.graph.node(f.origin);
        let node = self.graph.node(f.inner.unwrap_or(f.origin));
        let what = match &node.kind {
            NodeKind::Call { func, .. } => format!("raised by function `{func}`"),
            NodeKind::Op { op, .. } => format!("raised by operator `{}`", op_name(*op)),
            NodeKind::Index { .. } => "raised by the lookup `[]`".to_string(),
            NodeKind::Field { field, .. } => format!("raised by the field access `->{field}`"),
            NodeKind::CallValue { .. } => "raised by a call of a function value".to_string(),
            NodeKind::Param(_) => "raised while binding a parameter".to_string(),
            NodeKind::Construct(c) if c.ty.is_empty() => "a value outside the enum its type names".to_string(),
            NodeKind::Construct(c) => format!("a value of type `{}` its checks reject", c.ty),
            _ => "raised by the runtime".to_string(),
        };
        let mut d = Diagnostic::new(Stage::Stream, f.err.message(), at.span).with_note(what);
        if matches!(node.kind, NodeKind::Construct(_)) {
            // The next value may pass: the runtime keeps going (see `driver::drive`).
            d = d.with_code(lang::diag::Code::CheckFailed);
        } else if f.streamed {
            // So may the stream's next value (its file comes back, its command succeeds).
            d = d.with_code(lang::diag::Code::StreamFailed);
        }
        match f.inner {
            Some(_) => d.with_label(node.span, "raised here, inside the function value"),
            None => d,
        }
    }
}

/// Replaces `id`'s dependency edges `old` by `new` in the dependencies' reverse lists.
fn relink(insts: &mut [Inst], id: InstId, old: &[InstId], new: &[InstId]) {
    // Small lists scan; a large one that changed in a few positions (a map over
    // thousands of elements where one element changed) diffs those positions only;
    // anything else goes through sets.
    const SMALL: usize = 16;
    if old.len() <= SMALL && new.len() <= SMALL {
        for (i, d) in old.iter().enumerate() {
            if !new.contains(d) && !old[..i].contains(d) {
                remove_rdep(&mut insts[*d as usize].rdeps, id);
            }
        }
        for (i, d) in new.iter().enumerate() {
            if !old.contains(d) && !new[..i].contains(d) {
                insts[*d as usize].rdeps.push(id);
            }
        }
        return;
    }
    if old.len() == new.len() {
        let differing: Vec<usize> = (0..old.len()).filter(|i| old[*i] != new[*i]).collect();
        if differing.len() <= SMALL {
            for i in &differing {
                let d = old[*i];
                if !new.contains(&d) {
                    remove_rdep(&mut insts[d as usize].rdeps, id);
                }
            }
            for i in &differing {
                let d = new[*i];
                if !insts[d as usize].rdeps.contains(&id) {
                    insts[d as usize].rdeps.push(id);
                }
            }
            return;
        }
    }
    let old_set: HashSet<InstId> = old.iter().copied().collect();
    let new_set: HashSet<InstId> = new.iter().copied().collect();
    for d in old_set.difference(&new_set) {
        remove_rdep(&mut insts[*d as usize].rdeps, id);
    }
    for d in new_set.difference(&old_set) {
        insts[*d as usize].rdeps.push(id);
    }
}

fn remove_rdep(rdeps: &mut Vec<InstId>, id: InstId) {
    if let Some(pos) = rdeps.iter().position(|r| *r == id) {
        rdeps.swap_remove(pos);
    }
}

/// Mark and sweep from the roots over the recorded dependency edges. Dead dynamic
/// instances free their slot; dead static ones are reset; dead streams are cancelled.
fn collect(st: &mut State) {
    st.mark += 1;
    let mark = st.mark;
    let mut work = st.last_roots.clone();
    while let Some(id) = work.pop() {
        let inst = &mut st.insts[id as usize];
        if inst.mark == mark {
            continue;
        }
        inst.mark = mark;
        work.extend_from_slice(&inst.deps);
    }
    for id in 0..st.insts.len() {
        let inst = &st.insts[id];
        if !inst.live || inst.mark == mark {
            continue;
        }
        let deps = std::mem::take(&mut st.insts[id].deps);
        for d in deps {
            if st.insts[d as usize].mark == mark {
                remove_rdep(&mut st.insts[d as usize].rdeps, id as InstId);
            }
        }
        let inst = &mut st.insts[id];
        if let Some(s) = inst.stream.take() {
            s.stop();
        }
        st.stale.remove(&(id as InstId));
        let generation = inst.generation.wrapping_add(1);
        match inst.key.take() {
            Some(key) => {
                let hash = key_hash(key.node, key.vals.iter());
                if let Some(ids) = st.index.get_mut(&hash) {
                    ids.retain(|i| *i != id as InstId);
                    if ids.is_empty() {
                        st.index.remove(&hash);
                    }
                }
                *inst = Inst::new(inst.node, None, Env::empty(), generation, false);
                st.free_slots.push(id as InstId);
            }
            None => *inst = Inst::new(inst.node, None, Env::empty(), generation, false),
        }
    }
}

/// Converts a built-in's result into a slot value raised at `origin`.
pub(crate) fn from_result(r: FuncResult, origin: NodeId) -> Computed {
    r.map_err(|err| Failure::new(err, origin))
}
