//! Choices made once the other constraints are solved. Overloaded funcs: a
//! [`NodeKind::Dispatch`] takes the first candidate, in source order, whose params accept
//! the arguments' types; none does is the function API's "mismatched arguments" error.
//! Checks: a declared type's check or invariant is a `bool` or a `str` (its message),
//! `bool` when nothing else says.

use super::infer::Ctx;
use super::table::Shape;
use crate::ir::{NodeId, NodeKind};

impl Ctx<'_> {
    /// Resolves the first pending dispatch; false when none is pending.
    pub(super) fn resolve_dispatch(&mut self) -> bool {
        let Some(node) = self.dispatches.pop_front() else { return false };
        let graph = self.graph;
        let NodeKind::Dispatch(d) = &graph.node(node).kind else { return true };
        let crate::ir::DispatchNode { func, candidates, signatures, args } = &**d;
        let span = self.span(node);
        let arg_vars: Vec<_> = args.iter().map(|a| Ctx::var(*a)).collect();
        for (i, candidate) in candidates.iter().enumerate() {
            let NodeKind::Lambda { params, .. } = &graph.node(*candidate).kind else { continue };
            // Params against arguments only: the result type does not choose.
            let param_vars: Vec<_> = params.iter().map(|p| self.param_var(*p)).collect();
            if self.fits(&param_vars, &arg_vars, span) {
                let call = Shape::Func(arg_vars.iter().map(|v| (String::new(), *v)).collect(), Ctx::var(node));
                let call = self.table.shaped(call, span);
                self.eq(Ctx::var(*candidate), call, span);
                self.chosen.push((node, i));
                return true;
            }
        }
        let d = super::report::mismatched_call(&mut self.table, func, signatures, &arg_vars, span);
        self.diags.push(d);
        self.table.poison(Ctx::var(node));
        for v in arg_vars {
            self.table.poison_deep(v);
        }
        true
    }
}

impl Ctx<'_> {
    /// Settles the first pending check's type; false when none is pending.
    pub(super) fn resolve_verdict(&mut self) -> bool {
        let Some(node) = self.verdicts.pop_front() else { return false };
        let v = Ctx::var(node);
        let span = self.span(node);
        let poisoned = self.table.is_poisoned(v);
        match self.table.shape(v) {
            Some(Shape::Bool | Shape::Str) => {}
            None => {
                self.has_shape(v, Shape::Bool, span, span);
            }
            Some(_) if poisoned => {}
            Some(other) => {
                let kind = other.kind_name();
                let kind = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
                    format!("an {kind}")
                } else {
                    format!("a {kind}")
                };
                let d = crate::diag::Diagnostic::new(
                    crate::diag::Stage::Unify,
                    format!("type error: a check gives a bool or a str, not {kind}"),
                    span,
                )
                .with_code(crate::diag::Code::TypeMismatch)
                .with_note("`true` or `\"\"` accepts the value; `false` or a message refuses it");
                self.diags.push(d);
                self.table.poison(v);
            }
        }
        true
    }
}

/// Rewrites each resolved dispatch into a call of the candidate unification chose.
pub(crate) fn apply(graph: &mut crate::ir::FuncGraph, chosen: &[(NodeId, usize)]) {
    for &(node, i) in chosen {
        let kind = &mut graph.nodes[node.0 as usize].kind;
        if let NodeKind::Dispatch(d) = kind {
            let callee = d.candidates[i];
            let (func, args) = (std::mem::take(&mut d.func), std::mem::take(&mut d.args));
            *kind = NodeKind::CallValue { callee, args };
            let signature = match graph.ty(callee) {
                Some(ty) => super::report::signature(&func, ty),
                None => func.clone(),
            };
            graph.overloads.insert(node, (func, signature));
        }
    }
}
