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
use crate::ir::{Annotation, CheckTest, ConstructNode, IrCheck, NodeId, NodeKind, Op};
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
    /// What an annotation naming it becomes: the alias's target (its enums kept), or the
    /// record's tagged struct.
    pub(crate) ty: Type,
    /// `None` for an alias.
    pub(crate) record: Option<Rc<RecordInfo<'a>>>,
}

#[derive(Clone, Debug)]
pub(crate) struct RecordInfo<'a> {
    /// Every attribute, the parents' first, with its resolved type (enums kept) and the
    /// frame of the declaration that wrote it (its options are elaborated there).
    pub(crate) attrs: Vec<(&'a ast::Attr, Type, FrameId)>,
    /// The type's own `abstract` line (a parent's does not make it abstract).
    pub(crate) abstract_at: Option<Span>,
    pub(crate) invariants: Vec<(&'a ast::Invariant, FrameId)>,
    /// Tag fields, the root parent's first and this type's own last.
    pub(crate) tags: Vec<String>,
}

impl<'a> Ctx<'a> {
    /// `ty` with every declared name replaced by its meaning, enums kept (an alias of an
    /// enum brings its enum along); an unknown name is reported at `span` (and stays a
    /// `Named`, which unification ignores quietly).
    fn resolve_written(&mut self, fid: FrameId, ty: &Type, span: Span) -> Type {
        if !ty.has_named() {
            return ty.clone();
        }
        match ty {
            Type::Named(name) => match self.declared_at(fid, name, span) {
                Some(i) => self.declared[i].ty.clone(),
                None => ty.clone(),
            },
            Type::List(t) => Type::list(self.resolve_written(fid, t, span)),
            Type::Map(k, v) => Type::map(self.resolve_written(fid, k, span), self.resolve_written(fid, v, span)),
            Type::Struct(fs) => {
                Type::Struct(fs.iter().map(|(n, t)| (n.clone(), self.resolve_written(fid, t, span))).collect())
            }
            Type::Func(args, r) => Type::Func(
                args.iter().map(|(n, t)| (n.clone(), self.resolve_written(fid, t, span))).collect(),
                Box::new(self.resolve_written(fid, r, span)),
            ),
            other => other.clone(),
        }
    }

    /// Puts annotation `ann`, written where `fid` is the scope, on `node`, and returns the
    /// node to use for its value: `node` itself, or, when the type has an enum, a guard
    /// that lets only values within it through (`name` is what its error calls the value,
    /// `$state`).
    pub(super) fn annotate(&mut self, fid: FrameId, node: NodeId, ann: &ast::TypeAnn, name: Option<&str>) -> NodeId {
        let written = self.resolve_written(fid, &ann.ty, ann.span);
        self.graph.annotations.push(Annotation { node, ty: written.without_enums(), span: ann.span });
        self.enum_guard(written, node, ann, name)
    }

    /// `node` behind a guard of the enums in `ann` (none: `node` itself), without putting
    /// the annotation's type on it.
    pub(super) fn guard(&mut self, fid: FrameId, node: NodeId, ann: &ast::TypeAnn, name: Option<&str>) -> NodeId {
        let written = self.resolve_written(fid, &ann.ty, ann.span);
        self.enum_guard(written, node, ann, name)
    }

    fn enum_guard(&mut self, written: Type, node: NodeId, ann: &ast::TypeAnn, name: Option<&str>) -> NodeId {
        if !written.has_enum() || written.has_named() {
            return node;
        }
        let check = IrCheck {
            node,
            test: CheckTest::Enums(written),
            attr: name.map(|n| (n.to_string(), node)),
            what: String::new(),
            span: ann.span,
        };
        let guard =
            ConstructNode { ty: String::new(), value: node, tags: Vec::new(), checks: vec![check], unset: Vec::new() };
        let span = self.graph.node(node).span;
        self.graph.add(NodeKind::Construct(Box::new(guard)), span)
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
                let ty = self.resolve_written(fid, &ann.ty, ann.span);
                // A name that did not resolve was reported: this type fails with it, quietly.
                return (!ty.has_named()).then_some(Declared { name, ty, record: None });
            }
            TypeDef::Record(record) => record,
        };
        let mut info = RecordInfo { attrs: Vec::new(), abstract_at: None, invariants: Vec::new(), tags: Vec::new() };
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
        info.abstract_at = record.abstract_at;
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
            let ty = self.resolve_written(fid, &attr.ann.ty, attr.ann.span);
            if ty.has_named() {
                return None;
            }
            info.attrs.push((attr, ty, fid));
        }
        if !self.attr_options_fit(&name, &info) {
            return None;
        }
        info.invariants.extend(record.invariants.iter().map(|inv| (inv, fid)));
        let span = decl.name.span;
        info.tags.push(format!("{TAG}{name}#{}:{}", span.file.0, span.start));
        let mut fields: Vec<(String, Type)> =
            info.attrs.iter().map(|(a, t, _)| (a.name.name.clone(), t.without_enums())).collect();
        fields.extend(info.tags.iter().map(|t| (t.clone(), Type::Bool)));
        Some(Declared { name, ty: Type::Struct(fields), record: Some(Rc::new(info)) })
    }

    /// Whether the options of every attribute agree with each other and with the
    /// attributes they name (reported once, at the declaration).
    fn attr_options_fit(&mut self, name: &str, info: &RecordInfo<'a>) -> bool {
        let mut ok = true;
        for (attr, ty, _) in &info.attrs {
            let plain = ty.without_enums();
            let mut problems: Vec<(String, Span)> = Vec::new();
            let attr_name = &attr.name.name;
            if let (Some(_), Some(default)) = (&attr.derived, &attr.default) {
                problems.push((format!("attribute `{attr_name}` is derived: it takes no default"), default.span));
            }
            if let (Some(default), true) = (&attr.default, attr.unsettable) {
                let at = default.span;
                let message = format!(
                    "attribute `{attr_name}` is unsettable: leaving it out means not set, so it takes no default"
                );
                problems.push((message, at));
            }
            if let (Some(_), true) = (&attr.derived, attr.unsettable) {
                problems.push((format!("attribute `{attr_name}` is derived: it is never unset"), attr.span));
            }
            for bound in [&attr.min, &attr.max].into_iter().flatten() {
                if !matches!(plain, Type::Int | Type::Float | Type::Str | Type::List(_) | Type::Map(..)) {
                    let message = format!(
                        "`min` and `max` bound an int or float attribute's value, or a str, list or map attribute's length; `{attr_name}` is a `{plain}`"
                    );
                    problems.push((message, bound.span));
                }
            }
            if let Some(set) = &attr.set {
                match (&attr.derived, &set.kind) {
                    (None, _) => problems.push((
                        format!("`set` belongs to a derived attribute; `{attr_name}` is not derived"),
                        set.span,
                    )),
                    (Some(_), ast::ExprKind::Struct(fields)) => {
                        for (field, _) in fields {
                            let target = info.attrs.iter().find(|(a, _, _)| a.name.name == field.name);
                            match target {
                                None => problems.push((
                                    format!(
                                        "the setter of `{attr_name}` sets `{}`, which type `{name}` does not have",
                                        field.name
                                    ),
                                    field.span,
                                )),
                                Some((a, _, _)) if a.derived.is_some() => problems.push((
                                    format!("the setter of `{attr_name}` sets `{}`, which is derived too", field.name),
                                    field.span,
                                )),
                                Some(_) => {}
                            }
                        }
                    }
                    (Some(_), _) => problems.push((
                        "a setter is written `struct{attr => EXPR, …}` over `$it`, the value given".to_string(),
                        set.span,
                    )),
                }
            }
            for (message, at) in problems {
                self.error(Diagnostic::new(Stage::SetScope, message, at).with_code(Code::InvalidStatement));
                ok = false;
            }
        }
        ok
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
        if let Some(at) = info.abstract_at {
            let d = Diagnostic::new(
                Stage::SetScope,
                format!("type `{type_name}` is abstract: it has no values of its own"),
                ty.span,
            )
            .with_code(Code::InvalidStatement)
            .with_label(at, "declared abstract here")
            .with_note("make a value of a type that inherits it");
            self.error(d);
            return self.error_node(span);
        }
        let mut ok = true;
        // What each attribute is given: directly, or by a derived attribute's setter.
        let mut supplied: Vec<(&str, NodeId, Span)> = Vec::new();
        for (name, node) in &values {
            let Some((attr, _, decl_frame)) = info.attrs.iter().find(|(a, _, _)| a.name.name == name.name) else {
                let mut message = format!("type `{type_name}` has no attribute `{}`", name.name);
                let names = info.attrs.iter().map(|(a, _, _)| a.name.name.as_str());
                if let Some(close) = crate::suggest::did_you_mean(&name.name, names) {
                    message.push_str(&format!(" (did you mean `{close}`?)"));
                }
                self.error(Diagnostic::new(Stage::SetScope, message, name.span).with_code(Code::UnknownField));
                ok = false;
                continue;
            };
            let Some(derived) = &attr.derived else {
                supplied.push((name.name.as_str(), *node, name.span));
                continue;
            };
            let Some(ast::Expr { kind: ast::ExprKind::Struct(setter), .. }) = &attr.set else {
                let message = format!(
                    "attribute `{}` of type `{type_name}` is derived (computed from the others): it can't be given",
                    name.name
                );
                let d = Diagnostic::new(Stage::SetScope, message, name.span)
                    .with_code(Code::UnknownField)
                    .with_label(derived.span, "computed here");
                self.error(d);
                ok = false;
                continue;
            };
            let frame = self.new_frame(Frame::child(*decl_frame));
            self.frame_mut(frame).vars.insert("it".to_string(), VarEntry::Node(*node, None));
            for (field, expr) in setter {
                let set = self.expr(frame, expr);
                supplied.push((field.name.as_str(), set, name.span));
            }
        }
        let mut fields = Vec::with_capacity(info.attrs.len());
        let mut unset = Vec::new();
        let mut missing = Vec::new();
        for (attr, attr_ty, decl_frame) in &info.attrs {
            if attr.derived.is_some() {
                continue;
            }
            let mut given = supplied.iter().filter(|(n, _, _)| *n == attr.name.name);
            let node = match (given.next(), given.next()) {
                (Some(_), Some((_, _, again))) => {
                    let message = format!("attribute `{}` is given twice (directly or by a setter)", attr.name.name);
                    self.error(Diagnostic::new(Stage::SetScope, message, *again).with_code(Code::DuplicateAssignment));
                    ok = false;
                    continue;
                }
                (Some((_, node, _)), None) => *node,
                (None, _) => match &attr.default {
                    Some(default) => self.expr(*decl_frame, default),
                    None if attr.unsettable => {
                        unset.push((attr.name.name.clone(), attr_ty.without_enums()));
                        continue;
                    }
                    None => {
                        missing.push(format!("`{}`", attr.name.name));
                        continue;
                    }
                },
            };
            self.graph.annotations.push(Annotation { node, ty: attr_ty.without_enums(), span: attr.ann.span });
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
        // The derived attributes, from the others (an unset one reads as an error `<|>`
        // catches), each at its place among the fields.
        let mut ordered = Vec::with_capacity(info.attrs.len());
        for (attr, attr_ty, decl_frame) in &info.attrs {
            match &attr.derived {
                Some(derived) => {
                    let frame = self.attribute_frame(*decl_frame, &fields, &unset, span);
                    let node = self.expr(frame, derived);
                    self.graph.annotations.push(Annotation { node, ty: attr_ty.without_enums(), span: attr.ann.span });
                    ordered.push((attr.name.name.clone(), node));
                }
                None => {
                    if let Some(field) = fields.iter().find(|(n, _)| *n == attr.name.name) {
                        ordered.push(field.clone());
                    }
                }
            }
        }
        let checks = self.checks(&info, &ordered, &unset, span);
        let tags = info.tags.clone();
        let value = self.graph.add(NodeKind::Struct(ordered), span);
        let node = ConstructNode { ty: type_name, value, tags, checks, unset };
        self.graph.add(NodeKind::Construct(Box::new(node)), span)
    }

    /// A frame under `decl_frame` with every attribute a variable: the given ones their
    /// nodes, an unset one an error `<|>` catches.
    fn attribute_frame(
        &mut self,
        decl_frame: FrameId,
        fields: &[(String, NodeId)],
        unset: &[(String, Type)],
        span: Span,
    ) -> FrameId {
        let frame = self.new_frame(Frame::child(decl_frame));
        for (name, value) in fields {
            self.frame_mut(frame).vars.insert(name.clone(), VarEntry::Node(*value, None));
        }
        for (name, ty) in unset {
            let message = self.graph.add(NodeKind::Const(Value::str(format!("attribute `{name}` is not set"))), span);
            let node = self.graph.add(NodeKind::Call { func: "_unset".to_string(), args: vec![message] }, span);
            self.graph.annotations.push(Annotation { node, ty: ty.clone(), span });
            self.frame_mut(frame).vars.insert(name.clone(), VarEntry::Node(node, None));
        }
        frame
    }

    /// The conditions on one value: each attribute's enums, check and bounds (over
    /// `$it`), then the invariants (over every attribute). An unset attribute has none.
    fn checks(
        &mut self,
        info: &RecordInfo<'a>,
        fields: &[(String, NodeId)],
        unset: &[(String, Type)],
        span: Span,
    ) -> Vec<IrCheck> {
        let mut out = Vec::new();
        for (attr, attr_ty, decl_frame) in &info.attrs {
            let Some((name, value)) = fields.iter().find(|(n, _)| *n == attr.name.name) else { continue };
            let named = Some((name.clone(), *value));
            if attr_ty.has_enum() {
                let test = CheckTest::Enums(attr_ty.clone());
                out.push(IrCheck { node: *value, test, attr: named.clone(), what: String::new(), span: attr.ann.span });
            }
            if let Some(check) = &attr.check {
                // Over `$it`, or, written as a lambda of one param (the ARM's `|$x| { … }`),
                // over that param.
                let (var, body) = match &check.kind {
                    ast::ExprKind::Lambda(l) if l.params.len() == 1 && l.params[0].repeated.is_none() => {
                        (l.params[0].name.name.as_str(), &*l.body)
                    }
                    _ => ("it", check),
                };
                let frame = self.new_frame(Frame::child(*decl_frame));
                self.frame_mut(frame).vars.insert(var.to_string(), VarEntry::Node(*value, None));
                let node = self.expr(frame, body);
                let what = format!("is not accepted by the check at {}", self.sources.byline(check.span));
                out.push(IrCheck { node, test: CheckTest::Holds, attr: named.clone(), what, span: check.span });
            }
            let by_length = !matches!(attr_ty.without_enums(), Type::Int | Type::Float);
            for (bound, op, word) in [(&attr.min, BinOp::Ge, "min"), (&attr.max, BinOp::Le, "max")] {
                let Some(bound) = bound else { continue };
                let measure = match by_length {
                    true => self.graph.add(NodeKind::Call { func: "len".to_string(), args: vec![*value] }, bound.span),
                    false => *value,
                };
                let limit = self.expr(*decl_frame, bound);
                let node = self.graph.add(NodeKind::Op { op: Op::Bin(op), args: vec![measure, limit] }, bound.span);
                let text = self.sources.snippet(bound.span);
                let what = match (by_length, word) {
                    (false, "min") => format!("is below `min => {text}`"),
                    (false, _) => format!("is above `max => {text}`"),
                    (true, "min") => format!("is shorter than `min => {text}`"),
                    (true, _) => format!("is longer than `max => {text}`"),
                };
                out.push(IrCheck { node, test: CheckTest::Holds, attr: named.clone(), what, span: bound.span });
            }
        }
        for (inv, decl_frame) in &info.invariants {
            let frame = self.attribute_frame(*decl_frame, fields, unset, span);
            let node = self.expr(frame, &inv.expr);
            let what = inv.message.clone().unwrap_or_else(|| "the invariant does not hold".to_string());
            out.push(IrCheck { node, test: CheckTest::Holds, attr: None, what, span: inv.span });
        }
        out
    }
}
