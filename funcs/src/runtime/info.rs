//! Facts about a function graph computed once before it runs: the free parameters of
//! every node (which decide whether a node is static or has one value per environment)
//! and the resolved built-in of every call site with its concrete argument types.

use std::sync::Arc;

use lang::ir::{FuncGraph, NodeId, NodeKind, ParamId};
use lang::types::Type;

use crate::api::FuncImpl;
use crate::registry::Registry;

/// Precomputed, immutable side tables indexed by node. A large program has hundreds of
/// thousands of nodes, nearly all static and few of them calls: each node pays an index
/// into each table, not a slot of its own.
pub(crate) struct GraphInfo {
    free: FreeParams,
    /// Node → 1 + index into `calls` (0: not a call).
    call_of: Vec<u32>,
    calls: Vec<CallInfo>,
}

/// The parameters each node depends on that are not bound inside it, sorted. Empty means
/// the node is static: it has a single value, whatever the environment.
struct FreeParams {
    /// Node → index into `sets`.
    of: Vec<u32>,
    /// The empty set, then one set per node that depends on a parameter.
    sets: Vec<Box<[ParamId]>>,
}

/// A call site of a built-in.
pub(crate) struct CallInfo {
    /// `None` when the registry has no such function (reported when the node runs).
    pub imp: Option<FuncImpl>,
    pub arg_types: Arc<[Type]>,
    pub ret_type: Type,
}

/// The graph has a cycle through this node (the front end never builds one; checked so
/// that a bad graph becomes an error instead of a stack overflow).
#[derive(Debug)]
pub(crate) struct CycleAt(pub NodeId);

impl GraphInfo {
    pub fn build(graph: &FuncGraph, registry: &Registry) -> Result<GraphInfo, CycleAt> {
        let free = free_params(graph)?;
        let mut call_of = vec![0; graph.nodes.len()];
        let mut calls = Vec::new();
        for (i, node) in graph.nodes.iter().enumerate() {
            if let NodeKind::Call { func, args } = &node.kind {
                calls.push(CallInfo {
                    imp: registry.get(func).map(|b| b.imp),
                    arg_types: args.iter().map(|a| type_of(graph, *a)).collect(),
                    ret_type: type_of(graph, NodeId(i as u32)),
                });
                call_of[i] = calls.len() as u32;
            }
        }
        Ok(GraphInfo { free, call_of, calls })
    }

    /// The parameters `node` depends on that are not bound inside it, sorted; empty when
    /// the node is static.
    pub fn free(&self, node: NodeId) -> &[ParamId] {
        &self.free.sets[self.free.of[node.0 as usize] as usize]
    }

    /// What a `Call` node calls (`None` for other nodes).
    pub fn call(&self, node: NodeId) -> Option<&CallInfo> {
        let at = self.call_of[node.0 as usize];
        (at > 0).then(|| &self.calls[at as usize - 1])
    }

    #[cfg(test)]
    pub fn is_static(&self, node: NodeId) -> bool {
        self.free(node).is_empty()
    }
}

/// The unified type of a node; `variant` stands in for nodes unification never reached
/// (hand-built graphs in tests), which built-ins treat as "anything".
fn type_of(graph: &FuncGraph, node: NodeId) -> Type {
    graph.ty(node).cloned().unwrap_or(Type::Variant)
}

/// The direct operands of a node, in evaluation order.
pub(crate) fn children(kind: &NodeKind) -> Vec<NodeId> {
    match kind {
        NodeKind::Const(_) | NodeKind::Param(_) => Vec::new(),
        NodeKind::List(items) | NodeKind::Interp(items) => items.clone(),
        NodeKind::Map(pairs) => pairs.iter().flat_map(|(k, v)| [*k, *v]).collect(),
        NodeKind::Struct(fields) => fields.iter().map(|(_, v)| *v).collect(),
        NodeKind::Call { args, .. } | NodeKind::Op { args, .. } => args.clone(),
        NodeKind::CallValue { callee, args } => std::iter::once(*callee).chain(args.iter().copied()).collect(),
        // Unification rewrites every dispatch into a `CallValue`; none reaches a runtime.
        NodeKind::Dispatch(d) => d.args.clone(),
        NodeKind::Construct(c) => std::iter::once(c.value).chain(c.checks.iter().map(|c| c.node)).collect(),
        NodeKind::Inline { body, .. } | NodeKind::Lambda { body, .. } => vec![*body],
        NodeKind::If { cond, then, els } => vec![*cond, *then, *els],
        NodeKind::Except { lhs, rhs } => vec![*lhs, *rhs],
        NodeKind::Index { base, index } => vec![*base, *index],
        NodeKind::Field { base, .. } => vec![*base],
        NodeKind::FieldOr { base, default, .. } => vec![*base, *default],
    }
}

/// Free parameters of every node, by an iterative post-order walk (graphs can be deep
/// chains; no recursion here).
fn free_params(graph: &FuncGraph) -> Result<FreeParams, CycleAt> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        New,
        Open,
        Done,
    }
    let n = graph.nodes.len();
    let mut state = vec![State::New; n];
    let mut free_of = vec![0u32; n];
    let mut sets: Vec<Box<[ParamId]>> = vec![Box::from([])];
    for root in 0..n {
        if state[root] != State::New {
            continue;
        }
        // (node, children already pushed)
        let mut stack = vec![(root, false)];
        while let Some((i, expanded)) = stack.pop() {
            if expanded {
                let kind = &graph.nodes[i].kind;
                let mut set: Vec<ParamId> = match kind {
                    NodeKind::Param(p) => vec![*p],
                    _ => children(kind)
                        .iter()
                        .flat_map(|c| sets[free_of[c.0 as usize] as usize].iter().copied())
                        .collect(),
                };
                if let NodeKind::Lambda { params, .. } = kind {
                    set.retain(|p| !params.contains(p));
                }
                if !set.is_empty() {
                    set.sort_unstable();
                    set.dedup();
                    free_of[i] = sets.len() as u32;
                    sets.push(set.into_boxed_slice());
                }
                state[i] = State::Done;
                continue;
            }
            match state[i] {
                State::Done => continue,
                State::Open => return Err(CycleAt(NodeId(i as u32))),
                State::New => {}
            }
            state[i] = State::Open;
            stack.push((i, true));
            for c in children(&graph.nodes[i].kind) {
                let ci = c.0 as usize;
                if ci >= n {
                    return Err(CycleAt(NodeId(i as u32)));
                }
                match state[ci] {
                    State::Done => {}
                    State::Open => return Err(CycleAt(c)),
                    State::New => stack.push((ci, false)),
                }
            }
        }
    }
    Ok(FreeParams { of: free_of, sets })
}

#[cfg(test)]
mod tests {
    use super::*;
    use lang::span::Span;
    use lang::value::Value;

    #[test]
    fn lambda_binds_its_own_params_only() {
        let mut g = FuncGraph::default();
        let x = g.add_param("x", Span::default());
        let y = g.add_param("y", Span::default());
        let px = g.add(NodeKind::Param(x), Span::default());
        let py = g.add(NodeKind::Param(y), Span::default());
        let one = g.add(NodeKind::Const(Value::Int(1)), Span::default());
        let sum = g.add(
            NodeKind::Op { op: lang::ir::Op::Bin(lang::syntax::ast::BinOp::Add), args: vec![px, py] },
            Span::default(),
        );
        let inner = g.add(NodeKind::Lambda { params: vec![y], body: sum }, Span::default());
        let outer = g.add(NodeKind::Lambda { params: vec![x], body: inner }, Span::default());
        let info = GraphInfo::build(&g, &Registry::new()).expect("no cycle");
        assert!(info.is_static(one));
        assert_eq!(info.free(sum), &[x, y]);
        assert_eq!(info.free(inner), &[x]);
        assert!(info.call(sum).is_none());
        assert!(info.is_static(outer));
    }

    #[test]
    fn cycles_are_reported() {
        let mut g = FuncGraph::default();
        let a = g.add(NodeKind::List(vec![NodeId(1)]), Span::default());
        g.add(NodeKind::List(vec![a]), Span::default());
        assert!(GraphInfo::build(&g, &Registry::new()).is_err());
    }
}
