//! Lookups whose typing depends on the container's type (`x[i]`, `s->f`,
//! `s->f <|> d`, spec 4.7 and 4.9): typed at once when the container is known, else
//! queued until unification of everything else tells what it is.

use super::infer::Ctx;
use super::report::describe_node;
use super::table::{Shape, Var};
use crate::diag::{Code, Diagnostic, Stage};
use crate::ir::{NodeId, NodeKind};
use crate::types::Type;

impl Ctx<'_> {
    /// `Index`, `Field` and `FieldOr`: returns false when the container's type is not
    /// known yet (unless `force`, which picks the default form or reports).
    pub(super) fn lookup(&mut self, node: NodeId, force: bool) -> bool {
        let graph = self.graph;
        let span = self.span(node);
        let v = Self::var(node);
        match &graph.node(node).kind {
            NodeKind::Index { base, index } => {
                let (b, i) = (Self::var(*base), Self::var(*index));
                let is_list = match self.table.shape(b) {
                    Some(Shape::List(_)) => true,
                    Some(_) => false,
                    None => match self.table.shape(i) {
                        Some(Shape::Int) | None if !force => return false,
                        _ => false,
                    },
                };
                if is_list {
                    self.has_type(i, &Type::Int, span, span);
                    self.has_shape(b, Shape::List(v), span, span);
                } else {
                    self.has_shape(b, Shape::Map(i, v), span, span);
                }
                true
            }
            NodeKind::Field { base, field } | NodeKind::FieldOr { base, field, .. } => {
                let default = match &graph.node(node).kind {
                    NodeKind::FieldOr { default, .. } => Some(Self::var(*default)),
                    _ => None,
                };
                let fields = match self.struct_fields(*base, node, field, force) {
                    Lookup::Pending => return false,
                    Lookup::Failed => return true,
                    Lookup::Fields(fields) => fields,
                };
                match (fields.iter().find(|(n, _)| n == field), default) {
                    (Some((_, fv)), default) => {
                        if let Some(d) = default {
                            self.eq(*fv, d, span);
                        }
                        self.eq(*fv, v, span);
                    }
                    (None, Some(d)) => {
                        self.eq(d, v, span);
                    }
                    (None, None) => {
                        let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
                        let msg = format!(
                            "error setting type: `{}`, error: field {field} was not found in struct",
                            describe_node(graph, node)
                        );
                        let mut d = Diagnostic::new(Stage::Unify, msg, span).with_code(Code::UnknownStructField);
                        if let Some(s) = crate::suggest::did_you_mean(field, names.iter().copied()) {
                            d = d.with_note(format!("did you mean `{s}`?"));
                        } else if names.is_empty() {
                            d = d.with_note("the struct has no fields");
                        } else {
                            d = d.with_note(format!("the struct has fields: {}", names.join(", ")));
                        }
                        self.diags.push(d);
                        self.table.poison(v);
                    }
                }
                true
            }
            _ => true,
        }
    }

    /// The fields of the struct `base` must be. With `force`, a container that is still
    /// unknown is reported; one that is not a struct always is.
    fn struct_fields(&mut self, base: NodeId, node: NodeId, field: &str, force: bool) -> Lookup {
        let b = Self::var(base);
        let span = self.span(node);
        match self.table.shape(b).cloned() {
            Some(Shape::Struct(fields)) => Lookup::Fields(fields),
            None if !force => Lookup::Pending,
            None => {
                if !self.table.is_poisoned(b) {
                    let desc = describe_node(self.graph, base);
                    let msg =
                        format!("cannot look up field `{field}`: the type of `{desc}` is not known to be a struct");
                    let d = Diagnostic::new(Stage::Unify, msg, span)
                        .with_code(Code::TypeError)
                        .with_note("add a type annotation that says which struct it is");
                    self.diags.push(d);
                }
                self.table.poison(b);
                self.table.poison(Self::var(node));
                Lookup::Failed
            }
            Some(other) => {
                let ty = self.table.resolve(b);
                let d = Diagnostic::new(Stage::Unify, format!("type error: struct != {}", other.kind_name()), span)
                    .with_code(Code::TypeMismatch)
                    .with_note(format!("`->{field}` needs a struct, but this value has type `{ty}`"));
                let d = match self.table.origin(b) {
                    Some(o) if o != span => d.with_label(o, format!("found `{}` here", other.kind_name())),
                    _ => d,
                };
                self.diags.push(d);
                self.table.poison(Self::var(node));
                Lookup::Failed
            }
        }
    }

    /// Resolves the queued lookups: first every one whose container became known, until
    /// nothing moves; then the rest with their default forms.
    pub(crate) fn solve_deferred(&mut self) {
        loop {
            let before = self.deferred.len();
            let pending = std::mem::take(&mut self.deferred);
            for node in pending {
                if !self.lookup(node, false) {
                    self.deferred.push(node);
                }
            }
            if self.deferred.is_empty() || self.deferred.len() == before {
                // No progress: an overloaded call chosen now may unlock the lookups; else
                // force the first lookup, which may unlock the others.
                if self.resolve_dispatch() || self.resolve_verdict() {
                    continue;
                }
                let Some(node) = self.deferred.first().copied() else { return };
                self.deferred.remove(0);
                self.lookup(node, true);
            }
        }
    }
}

enum Lookup {
    Fields(Vec<(String, Var)>),
    Pending,
    Failed,
}
