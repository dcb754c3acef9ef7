//! After solving: the checks that need final types (arity errors with the argument
//! types, built-in `check` hooks, operator kinds, hashable map keys) and reading every
//! type back, reporting leftover variables as ambiguities.

use super::infer::Ctx;
use super::report::{self, describe_node};
use super::table::{Var, rename_vars};
use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::ir::NodeTypes;
use crate::types::Type;
use std::collections::HashSet;

impl Ctx<'_> {
    /// Checks that need solved types: arity errors (with the argument types), built-in
    /// `check` hooks, operator kinds, hashable map keys.
    pub(crate) fn post_checks(&mut self) {
        for node in std::mem::take(&mut self.arity_errors) {
            let d = report::bad_call(self, node);
            self.diags.push(d);
        }
        for call in std::mem::take(&mut self.calls) {
            let Some(check) = self.catalog.func(&call.func).and_then(|d| d.check) else { continue };
            let args: Vec<(String, Type)> =
                call.args.iter().map(|(n, v)| (n.clone(), self.table.resolve(*v))).collect();
            let ty = Type::Func(args, Box::new(self.table.resolve(call.ret)));
            if !ty.is_concrete() {
                continue;
            }
            if let Err(reason) = check(&ty) {
                let desc = describe_node(self.graph, call.node);
                let msg = format!("error setting type: `{desc}` as `{ty}`, error: {reason}");
                self.diags.push(Diagnostic::new(Stage::Unify, msg, self.span(call.node)).with_code(Code::TypeError));
                self.table.poison(Self::var(call.node));
            }
        }
        for node in std::mem::take(&mut self.ops) {
            if let Some(d) = report::check_op(self, node) {
                self.diags.push(d);
            }
        }
        for node in std::mem::take(&mut self.maps) {
            let ty = self.table.resolve(Self::var(node));
            if let Type::Map(k, _) = &ty
                && k.is_concrete()
                && !k.is_hashable()
            {
                let msg = format!("error setting type: `{ty}`, error: map key type {k} is not hashable");
                self.diags.push(Diagnostic::new(Stage::Unify, msg, self.span(node)).with_code(Code::TypeError));
            }
        }
    }

    /// Reads the solved types back; leftover variables are ambiguities, reported once per
    /// variable at the first (innermost) expression that has it.
    pub(crate) fn finish(mut self) -> (NodeTypes, Diagnostics) {
        let mut types = NodeTypes::untyped(self.graph.nodes.len());
        let mut reported: HashSet<Var> = HashSet::new();
        for node in std::mem::take(&mut self.order) {
            let v = Self::var(node);
            let ty = self.table.resolve(v);
            if ty.is_concrete() {
                let mut ty = ty;
                ty.erase_tags();
                types.set(node.0 as usize, Some(ty));
                continue;
            }
            if self.table.is_poisoned(v) {
                continue;
            }
            let mut vars = Vec::new();
            collect_vars(&ty, &mut vars);
            let fresh: Vec<Var> = vars.into_iter().filter(|r| !self.table.is_poisoned(*r)).collect();
            if fresh.is_empty() || fresh.iter().all(|r| reported.contains(r)) {
                continue;
            }
            reported.extend(fresh);
            let mut shown = [ty];
            rename_vars(&mut shown);
            let desc = describe_node(self.graph, node);
            let d = Diagnostic::new(
                Stage::Unify,
                format!("expr: `{desc}` is ambiguous: {}", shown[0]),
                self.span(node),
            )
            .with_code(Code::AmbiguousType)
            .with_note(
                "its type cannot be inferred from how it is used; add a type annotation (e.g. `$x []str = ...`)",
            );
            self.diags.push(d);
        }
        (types, self.diags)
    }
}

fn collect_vars(t: &Type, out: &mut Vec<Var>) {
    match t {
        Type::Var(n) => out.push(*n),
        Type::List(e) => collect_vars(e, out),
        Type::Map(k, v) => {
            collect_vars(k, out);
            collect_vars(v, out);
        }
        Type::Struct(fs) => fs.iter().for_each(|(_, t)| collect_vars(t, out)),
        Type::Func(args, r) => {
            args.iter().for_each(|(_, t)| collect_vars(t, out));
            collect_vars(r, out);
        }
        _ => {}
    }
}
