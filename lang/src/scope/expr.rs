//! Expressions: elaborating an AST expression in a frame into function graph nodes.
//! Variables resolve to their bind's single shared node; calls of `func` statements are
//! inlined as fresh copies; lambdas become `Lambda` nodes over fresh parameters.

use super::args::{Args, Callee};
use super::frame::{Frame, FrameId, Lazy, Ns, VarEntry};
use super::{Ctx, Hit};
use crate::diag::{Code, Diagnostic, Stage};
use crate::ir::{NodeId, NodeKind, Op};
use crate::span::Span;
use crate::syntax::ast::{self, BinOp, ExprKind, InterpPart};
use crate::value::Value;
use std::sync::Arc;

/// The internal function that makes a module-relative deploy path root-relative.
const MODULE_PATH: &str = "_deploy_module_path";

/// The longest string literal [`ShortStrs`] shares: keywords, modes, states and
/// names repeat across resources; paths and contents mostly do not, and keeping those in
/// the table would only cost it room.
const SHARED_LITERAL: usize = 24;

/// Short strings made once each: the `"exists"` and `"0644"` of a hundred thousand
/// resources are one string, and so is every field's name.
#[derive(Default)]
pub(super) struct ShortStrs(foldhash::HashSet<Arc<str>>);

impl ShortStrs {
    /// One copy of `text` for everyone who asks (a short literal, a field's name).
    pub(super) fn shared(&mut self, text: &str) -> Arc<str> {
        if let Some(shared) = self.0.get(text) {
            return shared.clone();
        }
        let shared: Arc<str> = text.into();
        self.0.insert(shared.clone());
        shared
    }

    /// A string literal's value; a short one is shared with every equal literal.
    fn value(&mut self, text: &str) -> Value {
        if text.len() > SHARED_LITERAL {
            return Value::str(text);
        }
        Value::Str(self.shared(text))
    }

    /// The value of a literal (`None` for any other expression; see [`is_literal`]). Lowering one keeps no
    /// reference to its syntax, so a statement of literals can be dropped once lowered
    /// ([`super::plain::take_plain`]).
    pub(super) fn literal(&mut self, kind: &ExprKind) -> Option<Value> {
        Some(match kind {
            ExprKind::Bool(b) => Value::Bool(*b),
            ExprKind::Int(i) => Value::Int(*i),
            ExprKind::Float(f) => Value::Float(*f),
            ExprKind::RawStr(s) | ExprKind::Str(s) => self.value(s),
            _ => return None,
        })
    }
}

impl<'a> Ctx<'a> {
    pub(super) fn expr(&mut self, fid: FrameId, expr: &'a ast::Expr) -> NodeId {
        let span = expr.span;
        if let Some(value) = self.short_strs.literal(&expr.kind) {
            return self.graph.add(NodeKind::Const(value), span);
        }
        let kind = match &expr.kind {
            ExprKind::Bool(_) | ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::RawStr(_) | ExprKind::Str(_) => {
                unreachable!("lowered as literals above")
            }
            ExprKind::Interp(parts) => {
                let mut nodes = Vec::with_capacity(parts.len());
                for part in parts {
                    nodes.push(match part {
                        InterpPart::Lit(s) => {
                            let value = self.short_strs.value(s);
                            self.graph.add(NodeKind::Const(value), span)
                        }
                        InterpPart::Var(name) => self.var(fid, name, name.span),
                    });
                }
                NodeKind::Interp(nodes)
            }
            ExprKind::List(items) => NodeKind::List(items.iter().map(|e| self.expr(fid, e)).collect()),
            ExprKind::Map(entries) => {
                NodeKind::Map(entries.iter().map(|(k, v)| (self.expr(fid, k), self.expr(fid, v))).collect())
            }
            ExprKind::Struct(fields) => {
                NodeKind::Struct(fields.iter().map(|(n, e)| (n.name.clone(), self.expr(fid, e))).collect())
            }
            ExprKind::Var(name) => return self.var(fid, name, span),
            ExprKind::Call { name, args } => return self.call(fid, name, args, span),
            ExprKind::CallVar { name, args } => {
                let callee = match self.find(fid, Ns::Var, &name.name) {
                    Some(_) => self.var(fid, name, span),
                    None => {
                        self.unknown(fid, Ns::Var, &name.name, span);
                        self.error_node(span)
                    }
                };
                let args = self.args(fid, args);
                if self.reject_named(&args, "a function value") {
                    return self.error_node(span);
                }
                NodeKind::CallValue { callee, args: args.positional }
            }
            ExprKind::Lambda(lambda) => return self.lambda(fid, lambda),
            ExprKind::CallLambda { lambda, args } => {
                let callee = self.lambda(fid, lambda);
                let args = self.args(fid, args);
                if self.reject_named(&args, "a lambda") {
                    return self.error_node(span);
                }
                NodeKind::CallValue { callee, args: args.positional }
            }
            ExprKind::Construct { ty, fields } => return self.construct(fid, ty, fields, span),
            ExprKind::Named { value, .. } => {
                // Only call argument lists hold named arguments, and they are read there.
                return self.expr(fid, value);
            }
            ExprKind::If { cond, then, els } => {
                NodeKind::If { cond: self.expr(fid, cond), then: self.expr(fid, then), els: self.expr(fid, els) }
            }
            ExprKind::Binary { op: BinOp::Except, lhs, rhs } => {
                NodeKind::Except { lhs: self.expr(fid, lhs), rhs: self.expr(fid, rhs) }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                NodeKind::Op { op: Op::Bin(*op), args: vec![self.expr(fid, lhs), self.expr(fid, rhs)] }
            }
            ExprKind::Not(e) => NodeKind::Op { op: Op::Not, args: vec![self.expr(fid, e)] },
            ExprKind::Index { base, index } => {
                NodeKind::Index { base: self.expr(fid, base), index: self.expr(fid, index) }
            }
            ExprKind::Field { base, field } => {
                NodeKind::Field { base: self.expr(fid, base), field: field.name.clone() }
            }
            ExprKind::FieldOr { base, field, default } => NodeKind::FieldOr {
                base: self.expr(fid, base),
                field: field.name.clone(),
                default: self.expr(fid, default),
            },
            ExprKind::Annotated { expr: inner, ann } => {
                let node = self.expr(fid, inner);
                return self.annotate(fid, node, ann, None);
            }
            ExprKind::Error => return self.error_node(span),
        };
        self.graph.add(kind, span)
    }

    /// A variable use: the shared node of its bind, a parameter node, or a constant.
    fn var(&mut self, fid: FrameId, name: &ast::Name, span: Span) -> NodeId {
        match self.find_admitted(fid, Ns::Var, &name.name, name.span) {
            Some(Hit::Entry(owner, key)) => match self.frame(owner).vars.get(&key) {
                Some(VarEntry::Node(n, _)) => *n,
                Some(VarEntry::Bind { state: Lazy::Done(n), .. }) => *n,
                Some(VarEntry::Bind { state: Lazy::Pending, .. }) => self.force_bind(owner, &key),
                Some(VarEntry::Bind { state: Lazy::Active, .. }) | None => {
                    self.recursion(span);
                    self.error_node(span)
                }
            },
            Some(Hit::Const(v)) => self.graph.add(NodeKind::Const(v), span),
            // `find_admitted` has reported a private name already.
            Some(Hit::Builtin(_)) | Some(Hit::Silent) | Some(Hit::Private(..)) => self.error_node(span),
            None => {
                self.unknown(fid, Ns::Var, &name.name, span);
                self.error_node(span)
            }
        }
    }

    /// Elaborates a bind (once; the node is memoized in its frame).
    pub(super) fn force_bind(&mut self, owner: FrameId, key: &str) -> NodeId {
        let Some(VarEntry::Bind { ann, value, state, name, .. }) = self.frame(owner).vars.get(key).cloned() else {
            return self.error_node(Span::default());
        };
        match state {
            Lazy::Done(n) => return n,
            Lazy::Active => {
                self.recursion(name.span);
                return self.error_node(name.span);
            }
            Lazy::Pending => {}
        }
        self.set_bind_state(owner, key, Lazy::Active);
        let node = self.expr(owner, value);
        let node = match ann {
            Some(ann) => self.annotate(owner, node, ann, Some(&format!("${}", name.name))),
            None => node,
        };
        self.set_bind_state(owner, key, Lazy::Done(node));
        node
    }

    fn set_bind_state(&mut self, owner: FrameId, key: &str, new: Lazy<NodeId>) {
        if let Some(VarEntry::Bind { state, .. }) = self.frame_mut(owner).vars.get_mut(key) {
            *state = new;
        }
    }

    /// A named call: a built-in, or an inlined copy of a `func` statement's body.
    fn call(&mut self, fid: FrameId, name: &ast::Name, args: &'a [ast::Expr], span: Span) -> NodeId {
        let hit = self.find_admitted(fid, Ns::Func, &name.name, name.span);
        let args = self.args(fid, args);
        match hit {
            Some(Hit::Builtin(func)) => {
                if self.reject_named(&args, &format!("the built-in function `{func}`")) {
                    return self.error_node(span);
                }
                let mut arg_nodes = args.positional;
                self.module_relative_deploy_path(&func, &mut arg_nodes, span);
                self.graph.add(NodeKind::Call { func, args: arg_nodes }, span)
            }
            Some(Hit::Entry(owner, key)) => {
                let overloaded = self.frame(owner).funcs.get(&key).is_some_and(|f| !f.overloads.is_empty());
                if overloaded { self.dispatch(owner, &key, args, span) } else { self.inline(owner, &key, args, span) }
            }
            Some(Hit::Const(_)) | Some(Hit::Silent) | Some(Hit::Private(..)) => self.error_node(span),
            None => {
                self.unknown(fid, Ns::Func, &name.name, span);
                self.error_node(span)
            }
        }
    }

    /// Inside a module, the path argument of the module-relative `deploy` functions is
    /// relative to the module's directory (spec 7.7: `deploy.readfile("/files/f")` in
    /// module `mod1/` reads `/mod1/files/f`): it is wrapped in
    /// `_deploy_module_path("/mod1/", path)`, which makes it root-relative.
    fn module_relative_deploy_path(&mut self, func: &str, args: &mut [NodeId], span: Span) {
        const MODULE_RELATIVE: [&str; 4] =
            ["deploy.abspath", "deploy.readfile", "deploy.file_exists", "deploy.directory"];
        let Some(root) = self.module_roots.get(&span.file) else { return };
        let Some(first) = args.first_mut() else { return };
        if !MODULE_RELATIVE.contains(&func) || self.catalog.func(MODULE_PATH).is_none() {
            return;
        }
        let module = self.graph.add(NodeKind::Const(Value::str(root)), span);
        *first = self.graph.add(NodeKind::Call { func: MODULE_PATH.to_string(), args: vec![module, *first] }, span);
    }

    /// One call of a `func` statement: a fresh copy of its body with the parameters bound
    /// to the argument nodes (and defaults), wrapped in `Inline`.
    fn inline(&mut self, owner: FrameId, key: &str, args: Args<'a>, span: Span) -> NodeId {
        let Some(func) = self.frame(owner).funcs.get(key).cloned() else { return self.error_node(span) };
        if func.active > 0 {
            self.recursion(span);
            return self.error_node(span);
        }
        if !self.enter(span, || format!("the call of func `{}`", func.name.name)) {
            return self.error_node(span);
        }
        self.set_func(owner, key, |f| {
            f.active += 1;
            f.called = true;
        });
        let params = &func.lambda.params;
        let node = if args.mgmt_form(params) && args.positional.len() != params.len() {
            // Wrong arity in mgmt's own form: call a lambda copy of the func instead, so
            // that unification reports the mismatch (`func arg count differs`) as mgmt does.
            let callee = self.lambda(func.frame, func.lambda);
            self.graph.add(NodeKind::CallValue { callee, args: args.positional }, span)
        } else {
            let frame = self.new_frame(Frame::child(func.frame));
            if self.bind_params(
                frame,
                Callee { word: "func", name: func.name, ret: func.lambda.ret.as_ref() },
                params,
                args,
                span,
            ) {
                let body = self.expr(frame, &func.lambda.body);
                let body = match &func.lambda.ret {
                    Some(ret) => self.annotate(frame, body, ret, None),
                    None => body,
                };
                self.graph.add(NodeKind::Inline { func: func.name.name.clone(), body }, span)
            } else {
                self.error_node(span)
            }
        };
        self.set_func(owner, key, |f| f.active -= 1);
        self.leave();
        node
    }

    /// A call of an overloaded func: a `Dispatch` over a lambda of each overload whose
    /// param count fits (unification picks one by the arguments' types). An overload
    /// with defaults fits from its required params to all of them, one with a repeated
    /// param from its required params up; its lambda takes the arguments given (the
    /// repeated ones as one list) and fills the rest from the defaults.
    fn dispatch(&mut self, owner: FrameId, key: &str, args: Args<'a>, span: Span) -> NodeId {
        let Some(func) = self.frame(owner).funcs.get(key).cloned() else { return self.error_node(span) };
        if self.reject_named(&args, &format!("the overloaded func `{}`", func.name.name)) {
            return self.error_node(span);
        }
        if func.active > 0 {
            self.recursion(span);
            return self.error_node(span);
        }
        if !self.enter(span, || format!("the call of func `{}`", func.name.name)) {
            return self.error_node(span);
        }
        let all: Vec<(&'a ast::Ident, &'a ast::Lambda)> =
            std::iter::once((func.name, func.lambda)).chain(func.overloads.iter().copied()).collect();
        let signatures: Vec<String> = all
            .iter()
            .map(|(name, l)| {
                let callee = Callee { word: "func", name, ret: l.ret.as_ref() };
                let signature = super::args::signature(self.sources, callee, &l.params);
                format!("{signature} - arg count {}", super::args::arg_count(&l.params))
            })
            .collect();
        self.set_func(owner, key, |f| {
            f.active += 1;
            f.called = true;
        });
        let count = args.positional.len();
        let mut candidates = Vec::new();
        let mut rest_from = Vec::new();
        for (_, l) in &all {
            let (required, fixed, repeats) = super::args::arity(&l.params);
            if count < required || (count > fixed && !repeats) {
                continue;
            }
            candidates.push(self.lambda_taking(func.frame, l, Some(count)));
            rest_from.push((repeats && count > fixed).then_some(fixed));
        }
        self.set_func(owner, key, |f| f.active -= 1);
        self.leave();
        if candidates.is_empty() {
            let noun = if count == 1 { "argument" } else { "arguments" };
            let message = format!("function `{}` called with {count} {noun}", func.name.name);
            self.error(
                Diagnostic::new(Stage::SetScope, message, span)
                    .with_code(Code::CallArgs)
                    .with_label(func.name.span, "first overload")
                    .with_note(format!("expected one of:\n  {}", signatures.join("\n  "))),
            );
            return self.error_node(span);
        }
        let kind = NodeKind::Dispatch(Box::new(crate::ir::DispatchNode {
            func: func.name.name.clone(),
            candidates,
            rest_from,
            signatures,
            args: args.positional,
        }));
        self.graph.add(kind, span)
    }

    fn set_func(&mut self, owner: FrameId, key: &str, update: impl FnOnce(&mut super::frame::FuncEntry<'a>)) {
        if let Some(f) = self.frame_mut(owner).funcs.get_mut(key) {
            update(f);
        }
    }

    /// A lambda value over fresh parameters (each use of a parameter is its `Param` node).
    fn lambda(&mut self, fid: FrameId, lambda: &'a ast::Lambda) -> NodeId {
        self.lambda_taking(fid, lambda, None)
    }

    /// A lambda of a func for a call with `given` positional arguments (`None`: all of its
    /// params). Its params are the first `given` (at most the fixed ones), then the
    /// repeated param as one list when arguments are left for it; a param past them takes
    /// its default, a repeated one the empty list. With `None`, a default is elaborated
    /// over the fresh params only to be checked (a func nothing called).
    fn lambda_taking(&mut self, fid: FrameId, lambda: &'a ast::Lambda, given: Option<usize>) -> NodeId {
        let frame = self.new_frame(Frame::child(fid));
        let (_, fixed, _) = super::args::arity(&lambda.params);
        let mut params = Vec::with_capacity(lambda.params.len());
        for (i, param) in lambda.params.iter().enumerate() {
            let ann = param.body_ann();
            let takes = match given {
                None => true,
                Some(n) if param.repeated.is_some() => n > fixed,
                Some(n) => i < n,
            };
            let node = if takes {
                let pid = self.graph.add_param(param.name.name.clone(), param.name.span);
                params.push(pid);
                self.graph.add(NodeKind::Param(pid), param.name.span)
            } else if param.repeated.is_some() {
                self.graph.add(NodeKind::List(Vec::new()), param.name.span)
            } else {
                match &param.default {
                    Some(default) => self.expr(frame, default),
                    None => self.error_node(param.name.span),
                }
            };
            let node = match &ann {
                Some(ann) => {
                    self.graph.checked.push(node);
                    self.annotate(frame, node, ann, Some(&format!("${}", param.name.name)))
                }
                None => node,
            };
            if let (Some(default), None) = (&param.default, given) {
                // Only a func statement's params have defaults (init rejects them on lambda
                // values): this is a func nothing called, checked over fresh params.
                let value = self.expr(frame, default);
                if let Some(ann) = &ann {
                    self.graph.checked.push(value);
                    self.annotate(frame, value, ann, Some(&format!("${}", param.name.name)));
                }
            }
            self.frame_mut(frame).vars.insert(param.name.name.clone(), VarEntry::Node(node, Some(param.name.span)));
        }
        let body = self.expr(frame, &lambda.body);
        let body = match &lambda.ret {
            Some(ret) => self.annotate(frame, body, ret, None),
            None => body,
        };
        self.graph.add(NodeKind::Lambda { params, body }, lambda.span)
    }

    /// Scope-checks a func that nothing called: its body over fresh parameters, unused.
    pub(super) fn check_func(&mut self, owner: FrameId, key: &str) {
        let Some(func) = self.frame(owner).funcs.get(key).cloned() else { return };
        self.set_func(owner, key, |f| {
            f.called = true;
            f.active += 1;
        });
        self.lambda(func.frame, func.lambda);
        for (_, lambda) in &func.overloads {
            self.lambda(func.frame, lambda);
        }
        self.set_func(owner, key, |f| f.active -= 1);
    }
}

/// Whether [`Ctx::literal`] lowers an expression of this kind.
pub(super) fn is_literal(kind: &ExprKind) -> bool {
    matches!(kind, ExprKind::Bool(_) | ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::RawStr(_) | ExprKind::Str(_))
}
