//! Facts about a function graph computed once before it runs: the free parameters of
//! every node (which decide whether a node is static or has one value per environment)
//! and the resolved built-in of every call site with its concrete argument types.

use std::sync::Arc;

use lang::ir::{FuncGraph, NodeId, NodeKind, ParamId};
use lang::types::Type;

use crate::api::FuncImpl;
use crate::registry::Registry;

/// Precomputed, immutable side tables indexed by node.
pub(crate) struct GraphInfo {
    /// The parameters a node depends on that are not bound inside it, sorted. Empty
    /// means the node is static: it has a single value, whatever the environment.
    pub free: Vec<Box<[ParamId]>>,
    /// For `Call` nodes: what is being called. Boxed: most nodes are not calls, and each
    /// pays only a pointer.
    pub calls: Vec<Option<Box<CallInfo>>>,
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
        let calls = graph
            .nodes
            .iter()
            .enumerate()
            .map(|(i, node)| match &node.kind {
                NodeKind::Call { func, args } => Some(Box::new(CallInfo {
                    imp: registry.get(func).map(|b| b.imp),
                    arg_types: args.iter().map(|a| type_of(graph, *a)).collect(),
                    ret_type: type_of(graph, NodeId(i as u32)),
                })),
                _ => None,
            })
            .collect();
        Ok(GraphInfo { free, calls })
    }

    #[cfg(test)]
    pub fn is_static(&self, node: NodeId) -> bool {
        self.free[node.0 as usize].is_empty()
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
fn free_params(graph: &FuncGraph) -> Result<Vec<Box<[ParamId]>>, CycleAt> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        New,
        Open,
        Done,
    }
    let n = graph.nodes.len();
    let mut state = vec![State::New; n];
    let mut free: Vec<Box<[ParamId]>> = vec![Box::from([]); n];
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
                    _ => children(kind).iter().flat_map(|c| free[c.0 as usize].iter().copied()).collect(),
                };
                if let NodeKind::Lambda { params, .. } = kind {
                    set.retain(|p| !params.contains(p));
                }
                set.sort_unstable();
                set.dedup();
                free[i] = set.into_boxed_slice();
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
    Ok(free)
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
        assert_eq!(&*info.free[sum.0 as usize], &[x, y]);
        assert_eq!(&*info.free[inner.0 as usize], &[x]);
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
