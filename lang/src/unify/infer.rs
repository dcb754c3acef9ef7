//! The unification context and constraint generation for expression nodes (literals,
//! calls, lambdas, operators, annotations). Lookups live in [`super::lookup`], the
//! post-solve checks and reading types back in [`super::finish`].
//!
//! Variables: node `i` is variable `i`, parameter `p` is variable `nodes.len() + p`,
//! everything after that is a fresh variable of some signature or literal.

use super::report;
use super::speculate::{AnnotationIndex, Speculator, annotation_index, const_value, value_type};
use super::table::{Mismatch, Shape, Table, Var};
use crate::catalog::{CallSite, Catalog};
use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::ir::{FuncGraph, NodeId, NodeKind, Op, ParamId};
use crate::span::Span;
use crate::syntax::ast::BinOp;
use crate::types::Type;
use crate::value::Value;
use std::collections::HashMap;

/// One call of a catalog function whose instantiated signature is checked after solving.
pub(super) struct CallRecord {
    pub(super) node: NodeId,
    pub(super) func: String,
    pub(super) args: Vec<(String, Var)>,
    pub(super) ret: Var,
}

pub(crate) struct Ctx<'a> {
    pub(super) graph: &'a FuncGraph,
    pub(super) catalog: &'a Catalog,
    pub(super) table: Table,
    pub(super) diags: Diagnostics,
    pub(super) anns: AnnotationIndex,
    pub(super) speculator_memo: Option<HashMap<NodeId, Option<Type>>>,
    /// 0 = unseen, 1 = on the DFS stack, 2 = constrained.
    pub(super) state: Vec<u8>,
    /// Reachable nodes in the order they were constrained.
    pub(super) order: Vec<NodeId>,
    /// `Index`/`Field`/`FieldOr` nodes whose container type was not known yet.
    pub(super) deferred: Vec<NodeId>,
    pub(super) calls: Vec<CallRecord>,
    /// Calls whose argument count matched no signature: reported after solving, when
    /// the argument types are known.
    pub(super) arity_errors: Vec<NodeId>,
    /// Operator nodes, checked for allowed kinds after solving.
    pub(super) ops: Vec<NodeId>,
    /// Map literals, checked for hashable keys after solving.
    pub(super) maps: Vec<NodeId>,
    /// Calls of overloaded funcs, resolved once the rest is solved ([`super::dispatch`]).
    pub(super) dispatches: std::collections::VecDeque<NodeId>,
    /// Resolved dispatches: the node and the index of the candidate chosen.
    pub(crate) chosen: Vec<(NodeId, usize)>,
    /// The nodes of checks and invariants, each a `bool` or a `str` message: settled
    /// once the rest is solved ([`super::dispatch`]).
    pub(super) verdicts: std::collections::VecDeque<NodeId>,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(graph: &'a FuncGraph, catalog: &'a Catalog) -> Ctx<'a> {
        let n = graph.nodes.len() + graph.params.len();
        Ctx {
            graph,
            catalog,
            table: Table::with_vars(n),
            diags: Diagnostics::new(),
            anns: annotation_index(graph),
            speculator_memo: None,
            state: vec![0; graph.nodes.len()],
            order: Vec::new(),
            deferred: Vec::new(),
            calls: Vec::new(),
            arity_errors: Vec::new(),
            ops: Vec::new(),
            maps: Vec::new(),
            dispatches: std::collections::VecDeque::new(),
            chosen: Vec::new(),
            verdicts: std::collections::VecDeque::new(),
        }
    }

    pub(super) fn var(node: NodeId) -> Var {
        node.0
    }

    pub(super) fn param_var(&self, p: ParamId) -> Var {
        self.graph.nodes.len() as Var + p.0
    }

    pub(super) fn span(&self, node: NodeId) -> Span {
        self.graph.node(node).span
    }

    /// Static type speculation with a memo shared by all statements.
    pub(super) fn static_type(&mut self, node: NodeId) -> Option<Type> {
        // A scalar literal nobody annotated (most resource names): its value's type, read
        // off without the speculator and its memo.
        if let NodeKind::Const(v @ (Value::Str(_) | Value::Bool(_) | Value::Int(_) | Value::Float(_))) =
            &self.graph.node(node).kind
            && !self.anns.contains_key(&node)
        {
            return value_type(v);
        }
        let mut spec = Speculator::new(self.graph, &self.anns);
        if let Some(memo) = self.speculator_memo.take() {
            spec.set_memo(memo);
        }
        let ty = spec.static_type(node);
        self.speculator_memo = Some(spec.into_memo());
        ty
    }

    // ----- constraint helpers -------------------------------------------------------

    /// `expected` and `found` must be equal; a conflict is reported at `span`.
    pub(super) fn eq(&mut self, expected: Var, found: Var, span: Span) -> bool {
        match self.table.unify(expected, found) {
            Ok(()) => true,
            Err(m) => {
                // Where the clash involves a type an earlier error already poisoned, this
                // one is its consequence (`$y = $x + "a"` then `test [$y]`): stay quiet.
                let (a, b) = match m {
                    Mismatch::Kinds { expected, found }
                    | Mismatch::StructFieldCount { expected, found }
                    | Mismatch::StructFields { expected, found }
                    | Mismatch::FuncArity { expected, found } => (expected, found),
                    Mismatch::Occurs { var, ty } => (var, ty),
                };
                let consequence = self.table.is_poisoned(a) || self.table.is_poisoned(b);
                if !consequence || self.diags.is_empty() {
                    let d = report::mismatch(&mut self.table, m, expected, found, span);
                    self.diags.push(d);
                }
                self.table.poison_deep(expected);
                self.table.poison_deep(found);
                false
            }
        }
    }

    /// `node`'s variable `v` must have type `ty`, which comes from `origin`.
    pub(super) fn has_type(&mut self, v: Var, ty: &Type, origin: Span, span: Span) -> bool {
        if let Some(leaf) = Shape::leaf(ty) {
            return self.has_shape(v, leaf, origin, span);
        }
        let t = self.table.instantiate(ty, &mut HashMap::new(), origin);
        self.eq(t, v, span)
    }

    /// `v` must have the given shape, which `origin` gives it.
    pub(super) fn has_shape(&mut self, v: Var, shape: Shape, origin: Span, span: Span) -> bool {
        if shape.is_leaf() && self.table.constrain_leaf(v, &shape, origin) {
            return true;
        }
        let t = self.table.shaped(shape, origin);
        self.eq(t, v, span)
    }

    pub(super) fn error(&mut self, message: impl Into<String>, span: Span) {
        self.diags.push(Diagnostic::new(Stage::Unify, message, span).with_code(Code::TypeError));
    }

    // ----- traversal ----------------------------------------------------------------

    /// Constrains every node reachable from `root` that was not constrained yet, inputs
    /// first.
    pub(super) fn visit(&mut self, root: NodeId) {
        if self.state.get(root.0 as usize).copied() != Some(0) {
            return;
        }
        let mut stack = vec![(root, false)];
        while let Some((node, ready)) = stack.pop() {
            let idx = node.0 as usize;
            if ready {
                self.state[idx] = 2;
                self.order.push(node);
                self.constrain(node);
                continue;
            }
            if self.state[idx] != 0 {
                continue;
            }
            self.state[idx] = 1;
            stack.push((node, true));
            let inputs = node_inputs(&self.graph.node(node).kind);
            for input in inputs.into_iter().rev() {
                if self.state.get(input.0 as usize).copied() == Some(0) {
                    stack.push((input, false));
                }
            }
        }
    }

    fn constrain(&mut self, node: NodeId) {
        let graph = self.graph;
        let span = self.span(node);
        let v = Self::var(node);
        match &graph.node(node).kind {
            NodeKind::Const(value) => {
                // A scalar needs no variable of its own (`Table::constrain_leaf`).
                if let Some(scalar) = Shape::of_scalar(value) {
                    self.has_shape(v, scalar, span, span);
                } else {
                    let t = report::type_of_value(&mut self.table, value, span);
                    self.eq(t, v, span);
                }
            }
            NodeKind::List(items) => {
                let elem = match items.first() {
                    Some(first) => Self::var(*first),
                    None => self.table.fresh(),
                };
                for item in items.iter().skip(1) {
                    self.eq(elem, Self::var(*item), span);
                }
                self.has_shape(v, Shape::List(elem), span, span);
            }
            NodeKind::Map(entries) => {
                let (k, val) = match entries.first() {
                    Some((k, val)) => (Self::var(*k), Self::var(*val)),
                    None => (self.table.fresh(), self.table.fresh()),
                };
                for (ek, ev) in entries.iter().skip(1) {
                    self.eq(k, Self::var(*ek), span);
                    self.eq(val, Self::var(*ev), span);
                }
                self.has_shape(v, Shape::Map(k, val), span, span);
                self.maps.push(node);
            }
            NodeKind::Struct(fields) => {
                let shape = Shape::Struct(fields.iter().map(|(n, f)| (n.clone(), Self::var(*f))).collect());
                self.has_shape(v, shape, span, span);
            }
            NodeKind::Param(p) => {
                let pv = self.param_var(*p);
                self.eq(pv, v, span);
            }
            NodeKind::Interp(parts) => {
                for part in parts {
                    self.has_type(Self::var(*part), &Type::Str, span, span);
                }
                self.has_type(v, &Type::Str, span, span);
            }
            NodeKind::Call { func, args } => self.call(node, func, args),
            NodeKind::Dispatch(_) => self.dispatches.push_back(node),
            NodeKind::Construct(c) => {
                let crate::ir::ConstructNode { value, tags, checks, unset, .. } = &**c;
                if tags.is_empty() {
                    // An annotation's guard: the value as it is.
                    self.eq(Self::var(*value), v, span);
                } else if let NodeKind::Struct(fields) = &graph.node(*value).kind {
                    // The value's struct, the attributes it leaves unset, and the tags: a
                    // value of this declared type.
                    let mut shape: Vec<(String, Var)> =
                        fields.iter().map(|(n, f)| (n.clone(), Self::var(*f))).collect();
                    for (name, ty) in unset {
                        let field = self.table.fresh();
                        self.has_type(field, ty, span, span);
                        shape.push((name.clone(), field));
                    }
                    for tag in tags {
                        let b = self.table.shaped(Shape::Bool, span);
                        shape.push((tag.clone(), b));
                    }
                    self.has_shape(v, Shape::Struct(shape), span, span);
                }
                for check in checks {
                    if let crate::ir::CheckTest::Holds = check.test {
                        self.verdicts.push_back(check.node);
                    }
                }
            }
            NodeKind::CallValue { callee, args } => {
                let shape = Shape::Func(args.iter().map(|a| (String::new(), Self::var(*a))).collect(), v);
                let f = self.table.shaped(shape, span);
                self.eq(f, Self::var(*callee), span);
            }
            NodeKind::Inline { body, .. } => {
                self.eq(Self::var(*body), v, span);
            }
            NodeKind::Lambda { params, body } => {
                let args =
                    params.iter().map(|p| (graph.params[p.0 as usize].name.clone(), self.param_var(*p))).collect();
                self.has_shape(v, Shape::Func(args, Self::var(*body)), span, span);
            }
            NodeKind::If { cond, then, els } => {
                self.has_type(Self::var(*cond), &Type::Bool, span, span);
                self.eq(Self::var(*then), Self::var(*els), span);
                self.eq(Self::var(*then), v, span);
            }
            NodeKind::Op { op, args } => self.op(node, *op, args),
            NodeKind::Except { lhs, rhs } => {
                self.eq(Self::var(*lhs), Self::var(*rhs), span);
                self.eq(Self::var(*lhs), v, span);
            }
            NodeKind::Index { .. } | NodeKind::Field { .. } | NodeKind::FieldOr { .. } => {
                if !self.lookup(node, false) {
                    self.deferred.push(node);
                }
            }
        }
        if let Some(anns) = self.anns.get(&node).cloned() {
            for (ty, at) in &anns {
                if !self.is_declared_subtype(v, ty) {
                    self.has_type(v, ty, *at, *at);
                }
            }
        }
    }

    /// Unifies each of `params` with its argument of `args` as one step, undone as a whole
    /// when one of them does not fit; whether they all fit.
    pub(super) fn fits(&mut self, params: &[Var], args: &[Var], span: Span) -> bool {
        let ret = self.table.fresh();
        let wanted = Shape::Func(params.iter().map(|v| (String::new(), *v)).collect(), ret);
        let given = Shape::Func(args.iter().map(|v| (String::new(), *v)).collect(), ret);
        let (wanted, given) = (self.table.shaped(wanted, span), self.table.shaped(given, span));
        self.table.unify(wanted, given).is_ok()
    }

    /// Whether `v` is already a value of the declared type `ty` or of a type inheriting
    /// it (its struct carries `ty`'s own tag): an annotation then accepts it as it is.
    fn is_declared_subtype(&mut self, v: Var, ty: &Type) -> bool {
        let Type::Struct(fields) = ty else { return false };
        let Some((tag, _)) = fields.iter().rev().find(|(n, _)| n.starts_with(crate::types::TAG)) else {
            return false;
        };
        matches!(self.table.shape(v), Some(Shape::Struct(have)) if have.iter().any(|(n, _)| n == tag))
    }

    /// Calls of catalog functions: instantiate the signature for this call site.
    fn call(&mut self, node: NodeId, func: &str, args: &[NodeId]) {
        let span = self.span(node);
        let v = Self::var(node);
        let Some(decl) = self.catalog.func(func) else {
            self.poison_call(v, args);
            self.arity_errors.push(node);
            return;
        };
        let sig = if let Some(infer) = decl.infer {
            let site = CallSite { args: args.iter().map(|a| const_value(self.graph, *a)).collect() };
            match infer(&site) {
                Ok(sig) => sig,
                Err(reason) => {
                    let short = func.rsplit('.').next().unwrap_or(func);
                    self.error(format!("func `{short}` infer error: {reason}"), span);
                    self.poison_call(v, args);
                    return;
                }
            }
        } else {
            match decl.sigs.iter().find(|s| matches!(s, Type::Func(a, _) if a.len() == args.len())) {
                Some(sig) => sig.clone(),
                None => {
                    self.poison_call(v, args);
                    self.arity_errors.push(node);
                    return;
                }
            }
        };
        let Type::Func(params, ret) = sig else {
            self.error(format!("func `{func}` has a signature that is not a function: `{sig}`"), span);
            self.table.poison(v);
            return;
        };
        if params.len() != args.len() {
            self.poison_call(v, args);
            self.arity_errors.push(node);
            return;
        }
        let mut subst = HashMap::new();
        let mut record = CallRecord { node, func: func.to_string(), args: Vec::new(), ret: 0 };
        for (name, pty) in &params {
            let pv = self.table.instantiate(pty, &mut subst, span);
            record.args.push((name.clone(), pv));
        }
        // The arguments against the params as one step, so that a mismatch is told as the
        // function API tells it.
        let arg_vars: Vec<Var> = args.iter().map(|a| Self::var(*a)).collect();
        let param_vars: Vec<Var> = record.args.iter().map(|(_, pv)| *pv).collect();
        if !self.fits(&param_vars, &arg_vars, span) {
            // An argument an earlier error poisoned makes this one its consequence.
            if !arg_vars.iter().any(|v| self.table.is_poisoned(*v)) {
                // The signature inferred for this call, or every written one.
                let signatures: Vec<String> = match decl.infer {
                    Some(_) => vec![report::signature(func, &Type::Func(params.clone(), ret.clone()))],
                    None => decl.sigs.iter().map(|s| report::signature(func, s)).collect(),
                };
                let mut d = report::mismatched_call(&mut self.table, func, &signatures, &arg_vars, false, span);
                // The first argument its param does not take, on its own.
                for ((name, pv), arg) in record.args.iter().zip(args) {
                    let found = self.table.resolve(Self::var(*arg));
                    if self.table.unify(*pv, Self::var(*arg)).is_err() {
                        let wanted = self.table.resolve(*pv);
                        let span = self.span(*arg);
                        d = d.with_label(span, format!("`{name}` takes `{wanted}`, this is `{found}`"));
                        break;
                    }
                }
                self.diags.push(d);
            }
            self.poison_call(v, args);
            return;
        }
        let rv = self.table.instantiate(&ret, &mut subst, span);
        self.eq(rv, v, span);
        record.ret = rv;
        self.calls.push(record);
    }

    /// A call that could not be typed: its result and arguments are unconstrained, which
    /// must not also be reported as ambiguities.
    fn poison_call(&mut self, v: Var, args: &[NodeId]) {
        self.table.poison(v);
        for a in args {
            self.table.poison_deep(Self::var(*a));
        }
    }

    /// Operators (spec 4.6). Which kinds they accept is checked after solving.
    fn op(&mut self, node: NodeId, op: Op, args: &[NodeId]) {
        let span = self.span(node);
        let v = Self::var(node);
        let want = if op == Op::Not { 1 } else { 2 };
        if args.len() != want {
            self.error(format!("operator `{}` takes {want} operands, got {}", report::op_name(op), args.len()), span);
            self.table.poison(v);
            return;
        }
        let a = Self::var(args[0]);
        let bool_of = |ctx: &mut Self, x: Var, at: Span| ctx.has_type(x, &Type::Bool, span, at);
        match op {
            Op::Not => {
                bool_of(self, a, span);
                bool_of(self, v, span);
            }
            Op::Bin(bin) => {
                let b = Self::var(args[1]);
                match bin {
                    BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Except => {
                        self.eq(a, b, span);
                        self.eq(a, v, span);
                    }
                    BinOp::Div => {
                        self.eq(a, b, span);
                        self.has_type(v, &Type::Float, span, span);
                    }
                    BinOp::Lt | BinOp::Gt | BinOp::Le | BinOp::Ge | BinOp::Eq | BinOp::Ne => {
                        self.eq(a, b, span);
                        bool_of(self, v, span);
                    }
                    BinOp::And | BinOp::Or => {
                        bool_of(self, a, span);
                        bool_of(self, b, span);
                        bool_of(self, v, span);
                    }
                    BinOp::In => {
                        self.has_shape(b, Shape::List(a), span, span);
                        bool_of(self, v, span);
                    }
                }
            }
        }
        self.ops.push(node);
    }
}

/// The nodes a node reads, in evaluation order.
pub(crate) fn node_inputs(kind: &NodeKind) -> Vec<NodeId> {
    match kind {
        NodeKind::Const(_) | NodeKind::Param(_) => Vec::new(),
        NodeKind::List(items) | NodeKind::Interp(items) => items.clone(),
        NodeKind::Map(entries) => entries.iter().flat_map(|(k, v)| [*k, *v]).collect(),
        NodeKind::Struct(fields) => fields.iter().map(|(_, v)| *v).collect(),
        NodeKind::Call { args, .. } => args.clone(),
        NodeKind::Dispatch(d) => d.args.iter().chain(&d.candidates).copied().collect(),
        NodeKind::Construct(c) => std::iter::once(c.value).chain(c.checks.iter().map(|c| c.node)).collect(),
        NodeKind::CallValue { callee, args } => std::iter::once(*callee).chain(args.iter().copied()).collect(),
        NodeKind::Inline { body, .. } | NodeKind::Lambda { body, .. } => vec![*body],
        NodeKind::If { cond, then, els } => vec![*cond, *then, *els],
        NodeKind::Op { args, .. } => args.clone(),
        NodeKind::Except { lhs, rhs } => vec![*lhs, *rhs],
        NodeKind::Index { base, index } => vec![*base, *index],
        NodeKind::Field { base, .. } => vec![*base],
        NodeKind::FieldOr { base, default, .. } => vec![*base, *default],
    }
}
