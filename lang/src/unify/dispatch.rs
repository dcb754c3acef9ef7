//! Choices made once the other constraints are solved. Overloaded funcs: a
//! [`NodeKind::Dispatch`] takes the first candidate, in source order, whose params accept
//! the arguments' types; none does is the function API's "mismatched arguments" error.
//! Checks: a declared type's check or invariant is a `bool` or a `str` (its message),
//! `bool` when nothing else says.

use super::infer::Ctx;
use super::table::{Shape, Var};
use crate::ir::{NodeId, NodeKind};
use crate::span::Span;
use crate::types::Type;

impl Ctx<'_> {
    /// Resolves the first pending dispatch; false when none is pending.
    pub(super) fn resolve_dispatch(&mut self) -> bool {
        let Some(node) = self.dispatches.pop_front() else { return false };
        let graph = self.graph;
        let NodeKind::Dispatch(d) = &graph.node(node).kind else { return true };
        let crate::ir::DispatchNode { func, candidates, rest_from, signatures, args } = &**d;
        let span = self.span(node);
        let arg_vars: Vec<_> = args.iter().map(|a| Ctx::var(*a)).collect();
        for (i, candidate) in candidates.iter().enumerate() {
            let NodeKind::Lambda { params, .. } = &graph.node(*candidate).kind else { continue };
            // Params against arguments only: the result type does not choose.
            let param_vars: Vec<_> = params.iter().map(|p| self.param_var(*p)).collect();
            let call_vars = match rest_from.get(i).copied().flatten() {
                None if self.fits(&param_vars, &arg_vars, span) => arg_vars.clone(),
                None => continue,
                Some(from) => match self.fits_repeated(&param_vars, &arg_vars, from, span) {
                    Some(list) => arg_vars[..from].iter().copied().chain(std::iter::once(list)).collect(),
                    None => continue,
                },
            };
            let call = Shape::Func(call_vars.iter().map(|v| (String::new(), *v)).collect(), Ctx::var(node));
            let call = self.table.shaped(call, span);
            self.eq(Ctx::var(*candidate), call, span);
            self.chosen.push((node, i));
            return true;
        }
        let d = super::report::mismatched_call(&mut self.table, func, signatures, &arg_vars, true, span);
        self.diags.push(d);
        self.table.poison(Ctx::var(node));
        for v in arg_vars {
            self.table.poison_deep(v);
        }
        true
    }

    /// Whether the arguments fit params whose last one repeats: the first `from` one per
    /// param, the rest each an element of the last param's list. Returns the list's
    /// variable.
    fn fits_repeated(&mut self, params: &[Var], args: &[Var], from: usize, span: Span) -> Option<Var> {
        let (&list, fixed) = params.split_last()?;
        if fixed.len() != from || !self.fits(fixed, &args[..from], span) {
            return None;
        }
        let Some(Shape::List(elem)) = self.table.shape(list).cloned() else { return None };
        args[from..].iter().all(|a| self.table.unify(elem, *a).is_ok()).then_some(list)
    }

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

/// Rewrites each resolved dispatch into a call of the candidate unification chose (the
/// arguments a repeated param takes gathered into one list node of its type).
pub(crate) fn apply(graph: &mut crate::ir::FuncGraph, chosen: &[(NodeId, usize)]) {
    for &(node, i) in chosen {
        let span = graph.node(node).span;
        let NodeKind::Dispatch(d) = &mut graph.nodes[node.0 as usize].kind else { continue };
        let callee = d.candidates[i];
        let rest_from = d.rest_from.get(i).copied().flatten();
        let (func, mut args) = (std::mem::take(&mut d.func), std::mem::take(&mut d.args));
        if let Some(from) = rest_from {
            let rest = args.split_off(from.min(args.len()));
            let list_ty = match graph.ty(callee) {
                Some(Type::Func(params, _)) => params.last().map(|(_, t)| t.clone()),
                _ => None,
            };
            let list = graph.add(NodeKind::List(rest), span);
            graph.types.resize(graph.nodes.len());
            graph.types.set(list.0 as usize, list_ty);
            args.push(list);
        }
        graph.nodes[node.0 as usize].kind = NodeKind::CallValue { callee, args };
        let signature = match graph.ty(callee) {
            Some(ty) => super::report::signature(&func, ty),
            None => func.clone(),
        };
        graph.overloads.insert(node, (func, signature));
    }
}
