//! Declared types: resolving type names in annotations (`vhost`, `mod.port`, `[]vhost`)
//! into what their declarations mean, and elaborating a construction (`vhost{…}`) into a
//! `Construct` node with its defaults filled in and its checks and invariants.
//!
//! A record type resolves to a struct of its attributes (its parents' first) plus one tag
//! field per type in its `inherits` chain, its own last (see [`crate::types::TAG`]): two
//! types with the same attributes stay different types, and a child keeps its parents'
//! tags, which is how an annotation accepts a child where a parent is written.

use super::frame::{Frame, FrameId, Lazy, Ns, VarEntry};
use super::{Ctx, Hit};
use crate::diag::{Code, Diagnostic, Stage};
use crate::ir::{Annotation, IrCheck, NodeId, NodeKind, Op};
use crate::span::Span;
use crate::syntax::ast::{self, BinOp, TypeDef};
use crate::types::{TAG, Type};
use crate::value::Value;
use std::rc::Rc;

/// The state of a declaration that failed (already reported).
const FAILED: usize = usize::MAX;

/// What a `type` statement means once resolved.
#[derive(Clone, Debug)]
pub(crate) struct Declared<'a> {
    pub(crate) name: String,
    /// What an annotation naming it becomes: the alias's target, or the record's tagged
    /// struct.
    pub(crate) ty: Type,
    /// `None` for an alias.
    pub(crate) record: Option<Rc<RecordInfo<'a>>>,
}

#[derive(Clone, Debug)]
pub(crate) struct RecordInfo<'a> {
    /// Every attribute, the parents' first, with its resolved type and the frame of the
    /// declaration that wrote it (its default and check are elaborated there).
    pub(crate) attrs: Vec<(&'a ast::Attr, Type, FrameId)>,
    pub(crate) invariants: Vec<(&'a ast::Invariant, FrameId)>,
    /// Tag fields, the root parent's first and this type's own last.
    pub(crate) tags: Vec<String>,
}

impl<'a> Ctx<'a> {
    /// `ty` with every declared name replaced by its meaning; an unknown name is reported
    /// at `span` (and stays a `Named`, which unification ignores quietly).
    pub(super) fn resolve_type(&mut self, fid: FrameId, ty: &Type, span: Span) -> Type {
        if !ty.has_named() {
            return ty.clone();
        }
        match ty {
            Type::Named(name) => match self.declared_at(fid, name, span) {
                Some(i) => self.declared[i].ty.clone(),
                None => ty.clone(),
            },
            Type::List(t) => Type::list(self.resolve_type(fid, t, span)),
            Type::Map(k, v) => Type::map(self.resolve_type(fid, k, span), self.resolve_type(fid, v, span)),
            Type::Struct(fs) => {
                Type::Struct(fs.iter().map(|(n, t)| (n.clone(), self.resolve_type(fid, t, span))).collect())
            }
            Type::Func(args, r) => Type::Func(
                args.iter().map(|(n, t)| (n.clone(), self.resolve_type(fid, t, span))).collect(),
                Box::new(self.resolve_type(fid, r, span)),
            ),
            other => other.clone(),
        }
    }

    /// Puts annotation `ann`, written where `fid` is the scope, on `node`.
    pub(super) fn annotate(&mut self, fid: FrameId, node: NodeId, ann: &ast::TypeAnn) {
        let ty = self.resolve_type(fid, &ann.ty, ann.span);
        self.graph.annotations.push(Annotation { node, ty, span: ann.span });
    }

    /// The declaration a type name refers to from `fid` (resolved on first use), or
    /// `None` after reporting why not.
    fn declared_at(&mut self, fid: FrameId, name: &str, span: Span) -> Option<usize> {
        match self.find_admitted(fid, Ns::Type, name, span) {
            Some(Hit::Entry(owner, key)) => self.declared(owner, &key),
            Some(_) => None,
            None => {
                self.unknown(fid, Ns::Type, name, span);
                None
            }
        }
    }

    fn declared(&mut self, owner: FrameId, key: &str) -> Option<usize> {
        let entry = self.frame(owner).types.get(key)?.clone();
        match entry.state {
            Lazy::Done(FAILED) => return None,
            Lazy::Done(i) => return Some(i),
            Lazy::Active => {
                let d = Diagnostic::new(
                    Stage::SetScope,
                    format!("type `{}` contains itself", entry.decl.name.name),
                    entry.decl.name.span,
                )
                .with_code(Code::ScopeRecursion)
                .with_note("a type's attributes and parents must not lead back to it");
                self.error(d);
                return None;
            }
            Lazy::Pending => {}
        }
        self.set_type_state(owner, key, Lazy::Active);
        let declared = self.declare_type(entry.decl, entry.frame);
        let out = declared.map(|d| {
            self.declared.push(d);
            self.declared.len() - 1
        });
        // A failure was reported once; later uses resolve quietly to nothing.
        self.set_type_state(owner, key, Lazy::Done(out.unwrap_or(FAILED)));
        out
    }

    fn set_type_state(&mut self, owner: FrameId, key: &str, state: Lazy<usize>) {
        if let Some(e) = self.frame_mut(owner).types.get_mut(key) {
            e.state = state;
        }
    }

    fn declare_type(&mut self, decl: &'a ast::TypeDecl, fid: FrameId) -> Option<Declared<'a>> {
        let name = decl.name.name.clone();
        let record = match &decl.def {
            TypeDef::Alias(ann) => {
                let ty = self.resolve_type(fid, &ann.ty, ann.span);
                // A name that did not resolve was reported: this type fails with it, quietly.
                return (!ty.has_named()).then_some(Declared { name, ty, record: None });
            }
            TypeDef::Record(record) => record,
        };
        let mut info = RecordInfo { attrs: Vec::new(), invariants: Vec::new(), tags: Vec::new() };
        if let Some(parent) = &record.parent {
            let i = self.declared_at(fid, &parent.name, parent.span)?;
            let Some(base) = self.declared[i].record.clone() else {
                let d = Diagnostic::new(
                    Stage::SetScope,
                    format!(
                        "type `{name}` can't inherit `{}`: it is an alias, not a type with attributes",
                        parent.name
                    ),
                    parent.span,
                )
                .with_code(Code::InvalidStatement);
                self.error(d);
                return None;
            };
            info = (*base).clone();
        }
        for attr in &record.attrs {
            if let Some((inherited, _, _)) = info.attrs.iter().find(|(a, _, _)| a.name.name == attr.name.name) {
                let parent = record.parent.as_ref().map_or("", |p| p.name.as_str());
                let d = Diagnostic::new(
                    Stage::SetScope,
                    format!("type `{name}` redefines attribute `{}` of `{parent}`", attr.name.name),
                    attr.name.span,
                )
                .with_code(Code::DuplicateAssignment)
                .with_label(inherited.name.span, "declared here first")
                .with_note("a type inherits its parent's attributes as they are; give this one another name");
                self.error(d);
                return None;
            }
            let ty = self.resolve_type(fid, &attr.ann.ty, attr.ann.span);
            if ty.has_named() {
                return None;
            }
            info.attrs.push((attr, ty, fid));
        }
        info.invariants.extend(record.invariants.iter().map(|inv| (inv, fid)));
        let span = decl.name.span;
        info.tags.push(format!("{TAG}{name}#{}:{}", span.file.0, span.start));
        let mut fields: Vec<(String, Type)> =
            info.attrs.iter().map(|(a, t, _)| (a.name.name.clone(), t.clone())).collect();
        fields.extend(info.tags.iter().map(|t| (t.clone(), Type::Bool)));
        Some(Declared { name, ty: Type::Struct(fields), record: Some(Rc::new(info)) })
    }

    /// `T{attr => value, …}` elaborated in `fid`.
    pub(super) fn construct(
        &mut self,
        fid: FrameId,
        ty: &ast::Name,
        given: &'a [(ast::Ident, ast::Expr)],
        span: Span,
    ) -> NodeId {
        let values: Vec<(&'a ast::Ident, NodeId)> = given.iter().map(|(n, e)| (n, self.expr(fid, e))).collect();
        let Some(i) = self.declared_at(fid, &ty.name, ty.span) else { return self.error_node(span) };
        let Some(info) = self.declared[i].record.clone() else {
            let d = Diagnostic::new(
                Stage::SetScope,
                format!("`{}` is an alias of `{}`, not a type with attributes", ty.name, self.declared[i].ty),
                ty.span,
            )
            .with_code(Code::InvalidStatement);
            self.error(d);
            return self.error_node(span);
        };
        let type_name = self.declared[i].name.clone();
        let mut ok = true;
        for (name, _) in &values {
            if !info.attrs.iter().any(|(a, _, _)| a.name.name == name.name) {
                let mut message = format!("type `{type_name}` has no attribute `{}`", name.name);
                let names = info.attrs.iter().map(|(a, _, _)| a.name.name.as_str());
                if let Some(close) = crate::suggest::did_you_mean(&name.name, names) {
                    message.push_str(&format!(" (did you mean `{close}`?)"));
                }
                self.error(Diagnostic::new(Stage::SetScope, message, name.span).with_code(Code::UnknownField));
                ok = false;
            }
        }
        let mut fields = Vec::with_capacity(info.attrs.len());
        let mut missing = Vec::new();
        for (attr, attr_ty, decl_frame) in &info.attrs {
            let node = match values.iter().find(|(n, _)| n.name == attr.name.name) {
                Some((_, node)) => *node,
                None => match &attr.default {
                    Some(default) => self.expr(*decl_frame, default),
                    None => {
                        missing.push(format!("`{}`", attr.name.name));
                        continue;
                    }
                },
            };
            self.graph.annotations.push(Annotation { node, ty: attr_ty.clone(), span: attr.ann.span });
            fields.push((attr.name.name.clone(), node));
        }
        if !missing.is_empty() {
            let noun = if missing.len() == 1 { "attribute" } else { "attributes" };
            let message = format!("missing {noun} {} of type `{type_name}` (no default)", missing.join(", "));
            self.error(Diagnostic::new(Stage::SetScope, message, span).with_code(Code::UnknownField));
            ok = false;
        }
        if !ok {
            return self.error_node(span);
        }
        let checks = self.checks(&info, &fields);
        let tags = info.tags.clone();
        let value = self.graph.add(NodeKind::Struct(fields), span);
        self.graph
            .add(NodeKind::Construct(Box::new(crate::ir::ConstructNode { ty: type_name, value, tags, checks })), span)
    }

    /// The conditions on one value: each attribute's enum and check (over `$it`), then
    /// the invariants (over every attribute).
    fn checks(&mut self, info: &RecordInfo<'a>, fields: &[(String, NodeId)]) -> Vec<IrCheck> {
        let mut out = Vec::new();
        for ((attr, _, decl_frame), (name, value)) in info.attrs.iter().zip(fields) {
            if let Some(choices) = &attr.choices {
                let span = attr.ann.span;
                let items = choices.iter().map(|(c, s)| self.graph.add(NodeKind::Const(Value::str(c)), *s)).collect();
                let list = self.graph.add(NodeKind::List(items), span);
                let node = self.graph.add(NodeKind::Op { op: Op::Bin(BinOp::In), args: vec![*value, list] }, span);
                let listed: Vec<String> = choices.iter().map(|(c, _)| format!("{c:?}")).collect();
                let what = format!("is not one of {}", listed.join(", "));
                out.push(IrCheck { node, attr: Some((name.clone(), *value)), what, span });
            }
            if let Some(check) = &attr.check {
                let frame = self.new_frame(Frame::child(*decl_frame));
                self.frame_mut(frame).vars.insert("it".to_string(), VarEntry::Node(*value, None));
                let node = self.expr(frame, check);
                let what = format!("is not accepted by the check at {}", self.sources.byline(check.span));
                out.push(IrCheck { node, attr: Some((name.clone(), *value)), what, span: check.span });
            }
        }
        for (inv, decl_frame) in &info.invariants {
            let frame = self.new_frame(Frame::child(*decl_frame));
            for (name, value) in fields {
                self.frame_mut(frame).vars.insert(name.clone(), VarEntry::Node(*value, None));
            }
            let node = self.expr(frame, &inv.expr);
            out.push(IrCheck { node, attr: None, what: inv.message.clone(), span: inv.span });
        }
        out
    }
}
