//! What is known about an expression *before* unification: its static type (the rule
//! mgmt uses to decide whether a resource or edge name is one `str` or a `[]str`, spec
//! 3.5.2) and its constant value (what `infer` hooks of built-ins get to see).
//!
//! Both walk the graph with an explicit stack and a memo, so long chains of binds do not
//! recurse.

use crate::ir::{FuncGraph, NodeId, NodeKind};
use crate::span::Span;
use crate::types::Type;
use crate::value::Value;
use std::collections::{BTreeMap, HashMap};

/// The annotations of nodes (type and where it was written), first annotation first.
pub(crate) type AnnotationIndex = HashMap<NodeId, Vec<(Type, Span)>>;

pub(crate) fn annotation_index(graph: &FuncGraph) -> AnnotationIndex {
    let mut index: AnnotationIndex = HashMap::new();
    for ann in &graph.annotations {
        index.entry(ann.node).or_default().push((ann.ty.clone(), ann.span));
    }
    index
}

/// Static type speculation (spec 3.5.2): the type of `node` when it is obvious without
/// unification, else `None`.
///
/// Succeeds for scalar literals, interpolated strings, non-empty list/map/struct literals
/// whose elements are all known, annotated expressions, if-expressions and `<|>` with at
/// least one known side, and immediately-invoked lambda literals with a known body.
/// Deliberately fails for parameters, calls of named functions and of function values,
/// inlined `func` bodies, operators, lookups and field accesses, because mgmt cannot see
/// through them at that point.
pub fn static_type(graph: &FuncGraph, node: NodeId) -> Option<Type> {
    let anns = annotation_index(graph);
    Speculator::new(graph, &anns).static_type(node)
}

pub(crate) struct Speculator<'a> {
    graph: &'a FuncGraph,
    anns: &'a AnnotationIndex,
    memo: HashMap<NodeId, Option<Type>>,
}

impl<'a> Speculator<'a> {
    pub(crate) fn new(graph: &'a FuncGraph, anns: &'a AnnotationIndex) -> Speculator<'a> {
        Speculator { graph, anns, memo: HashMap::new() }
    }

    pub(crate) fn set_memo(&mut self, memo: HashMap<NodeId, Option<Type>>) {
        self.memo = memo;
    }

    pub(crate) fn into_memo(self) -> HashMap<NodeId, Option<Type>> {
        self.memo
    }

    /// The nodes whose speculated types `node`'s speculated type is made of.
    fn inputs(&self, node: NodeId) -> Vec<NodeId> {
        if self.anns.contains_key(&node) {
            return Vec::new();
        }
        match &self.graph.node(node).kind {
            NodeKind::List(items) => items.clone(),
            NodeKind::Map(entries) => entries.iter().flat_map(|(k, v)| [*k, *v]).collect(),
            NodeKind::Struct(fields) => fields.iter().map(|(_, v)| *v).collect(),
            NodeKind::If { then, els, .. } => vec![*then, *els],
            NodeKind::Except { lhs, rhs } => vec![*lhs, *rhs],
            NodeKind::CallValue { callee, .. } => match &self.graph.node(*callee).kind {
                NodeKind::Lambda { body, .. } => vec![*body],
                _ => Vec::new(),
            },
            NodeKind::Param(p) => self.graph.param_values.get(p).cloned().unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    pub(crate) fn static_type(&mut self, root: NodeId) -> Option<Type> {
        let mut stack = vec![(root, false)];
        while let Some((node, ready)) = stack.pop() {
            if self.memo.contains_key(&node) {
                continue;
            }
            if !ready {
                stack.push((node, true));
                for input in self.inputs(node) {
                    if !self.memo.contains_key(&input) {
                        stack.push((input, false));
                    }
                }
                continue;
            }
            let ty = self.combine(node);
            self.memo.insert(node, ty);
        }
        self.memo.get(&root).cloned().flatten()
    }

    /// The speculated type of `node` from the memoized types of its inputs.
    fn combine(&self, node: NodeId) -> Option<Type> {
        if let Some((ty, _)) = self.anns.get(&node).and_then(|a| a.first()) {
            return Some(ty.clone());
        }
        let known = |n: &NodeId| self.memo.get(n).cloned().flatten();
        match &self.graph.node(node).kind {
            NodeKind::Const(v) => value_type(v),
            NodeKind::Interp(_) => Some(Type::Str),
            NodeKind::Param(p) => self.graph.param_values.get(p)?.iter().find_map(known),
            NodeKind::List(items) => {
                Some(Type::list(known(items.first()?)?)).filter(|_| items.iter().all(|i| known(i).is_some()))
            }
            NodeKind::Map(entries) => {
                let (k, v) = entries.first()?;
                let ty = Type::map(known(k)?, known(v)?);
                entries.iter().all(|(k, v)| known(k).is_some() && known(v).is_some()).then_some(ty)
            }
            NodeKind::Struct(fields) => {
                if fields.is_empty() {
                    return None;
                }
                let fields: Option<Vec<(String, Type)>> =
                    fields.iter().map(|(n, v)| known(v).map(|t| (n.clone(), t))).collect();
                fields.map(Type::Struct)
            }
            NodeKind::If { then, els, .. } => known(then).or_else(|| known(els)),
            NodeKind::Except { lhs, rhs } => known(lhs).or_else(|| known(rhs)),
            NodeKind::CallValue { callee, .. } => match &self.graph.node(*callee).kind {
                NodeKind::Lambda { body, .. } => known(body),
                _ => None,
            },
            _ => None,
        }
    }
}

/// The type of a constant value when it can be read off the value (not for empty
/// containers, whose element types are unknown, nor for functions).
pub(crate) fn value_type(v: &Value) -> Option<Type> {
    match v {
        Value::Bool(_) => Some(Type::Bool),
        Value::Str(_) => Some(Type::Str),
        Value::Int(_) => Some(Type::Int),
        Value::Float(_) => Some(Type::Float),
        Value::List(items) => Some(Type::list(value_type(items.first()?)?)),
        Value::Map(m) => {
            let (k, v) = m.iter().next()?;
            Some(Type::map(value_type(k)?, value_type(v)?))
        }
        Value::Struct(fields) => {
            let fields: Option<Vec<_>> = fields.iter().map(|(n, v)| value_type(v).map(|t| (n.clone(), t))).collect();
            fields.map(Type::Struct)
        }
        Value::Func(_) => None,
    }
}

/// Deepest literal nesting `const_value` looks into.
const MAX_CONST_DEPTH: usize = 256;

/// The statically known value of a node: literals and constants, and list/map/struct
/// literals, interpolations, if-expressions and inlined `func` bodies made only of those.
pub(crate) fn const_value(graph: &FuncGraph, node: NodeId) -> Option<Value> {
    const_value_at(graph, node, 0)
}

fn const_value_at(graph: &FuncGraph, node: NodeId, depth: usize) -> Option<Value> {
    if depth > MAX_CONST_DEPTH {
        return None;
    }
    let sub = |n: NodeId| const_value_at(graph, n, depth + 1);
    match &graph.node(node).kind {
        NodeKind::Const(v) => Some(v.clone()),
        NodeKind::List(items) => items.iter().map(|i| sub(*i)).collect::<Option<Vec<_>>>().map(Value::list),
        NodeKind::Map(entries) => {
            let mut map = BTreeMap::new();
            for (k, v) in entries {
                map.insert(sub(*k)?, sub(*v)?);
            }
            Some(Value::map(map))
        }
        NodeKind::Struct(fields) => {
            fields.iter().map(|(n, v)| sub(*v).map(|v| (n.clone(), v))).collect::<Option<Vec<_>>>().map(Value::strukt)
        }
        NodeKind::Interp(parts) => {
            let mut out = String::new();
            for p in parts {
                out.push_str(sub(*p)?.as_str()?);
            }
            Some(Value::str(out))
        }
        // The body of an inlined `func` call is its value.
        NodeKind::Inline { body, .. } => sub(*body),
        NodeKind::If { cond, then, els } => {
            if sub(*cond)?.as_bool()? {
                sub(*then)
            } else {
                sub(*els)
            }
        }
        _ => None,
    }
}
