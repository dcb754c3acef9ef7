//! Constraints from output statements: resource and edge names (typed by static
//! speculation, spec 3.5.2), resource fields against the catalog, meta params, body
//! edges, send/recv (3.6), conditions, loops and panics.

use super::infer::Ctx;
use super::meta::{meta_param_type, meta_struct_type};
use super::table::Shape;
use crate::catalog::ResourceDecl;
use crate::diag::{Code, Diagnostic, Stage};
use crate::ir::{IrCollector, IrEdge, IrEdgeHalf, IrMeta, IrQuery, IrResource, IrStmt, NodeId, NodeKind, Origin};
use crate::span::Span;
use crate::suggest::did_you_mean;
use crate::types::Type;

/// Which forms a name expression may take.
#[derive(Clone, Copy, PartialEq, Eq)]
enum NameRule {
    /// Resources and edge halves: `str` or `[]str`.
    Plain,
    /// `collect`: also `[]struct{name str; host str}`, the default.
    Collect,
}

impl<'a> Ctx<'a> {
    pub(crate) fn constrain_program(&mut self) {
        let graph = self.graph;
        for stmt in &graph.stmts {
            self.stmt(stmt);
        }
        for &node in &graph.checked {
            self.visit(node);
        }
    }

    fn stmt(&mut self, stmt: &IrStmt) {
        match stmt {
            IrStmt::Resource(res) => self.resource(res),
            IrStmt::Edge(edge) => self.edge(edge),
            IrStmt::If { cond, then, els, span } => {
                self.bool_node(*cond, *span);
                then.iter().for_each(|s| self.stmt(s));
                els.iter().for_each(|s| self.stmt(s));
            }
            IrStmt::For { iter, key, value, kv, body, span } => {
                self.visit(*iter);
                let (k, v) = (self.param_var(*key), self.param_var(*value));
                let shape = if *kv { Shape::Map(k, v) } else { Shape::List(v) };
                self.has_shape(Ctx::var(*iter), shape, *span, *span);
                if !*kv {
                    self.has_type(k, &Type::Int, *span, *span);
                }
                body.iter().for_each(|s| self.stmt(s));
            }
            IrStmt::Panic { check, span } => self.bool_node(*check, *span),
            IrStmt::Instance(i) => {
                self.name(i.titles, NameRule::Plain, i.span);
                self.has_type(self.param_var(i.title), &Type::Str, i.span, i.span);
                for p in &i.params {
                    // The param's own annotation first: a value is checked against it.
                    self.visit(p.node);
                    let var = Ctx::var(p.node);
                    let given = p.given.iter().chain(&p.defaulted).copied();
                    for (node, span) in given.chain(p.default.map(|d| (d, p.span))) {
                        self.visit(node);
                        self.eq(var, Ctx::var(node), span);
                    }
                }
                self.metas(&i.metas);
                i.body.iter().for_each(|s| self.stmt(s));
            }
            IrStmt::Defaults { kind, kind_span, fields, metas, span: _ } => {
                let decl = self.kind_decl(kind, *kind_span, !fields.is_empty());
                for field in fields {
                    self.visit(field.value);
                    self.cond(field.cond, field.span);
                    self.field(decl, &field.name, field.value, field.span, false);
                }
                self.metas(metas);
            }
            IrStmt::Collect(c) => self.collector(c),
            IrStmt::Realize { refs, .. } => {
                for r in refs {
                    // `realize($r)`: a variable holding references has no kind of its own.
                    if r.kind.is_empty() {
                        self.reference(r.name, r.span);
                    } else {
                        self.name(r.name, NameRule::Plain, r.span);
                    }
                }
            }
            IrStmt::Override { target, fields, .. } if self.graph.defines.contains_key(&target.kind) => {
                self.name(target.name, NameRule::Plain, target.span);
                for field in fields {
                    self.define_param(&target.kind, &field.name, field.value, field.span);
                }
            }
            IrStmt::Override { target, fields, .. } => {
                self.name(target.name, NameRule::Plain, target.span);
                let decl = self.kind_decl(&target.kind, target.span, !fields.is_empty());
                for field in fields {
                    self.visit(field.value);
                    self.field(decl, &field.name, field.value, field.span, field.append);
                }
            }
        }
    }

    /// A collector: its query compares params with values of their types (`name`, `title`
    /// and `tag` with a `str`), and its override block sets params like an override.
    fn collector(&mut self, c: &IrCollector) {
        if self.graph.defines.contains_key(&c.kind) {
            return self.define_collector(c);
        }
        let decl = self.kind_decl(&c.kind, c.kind_span, true);
        for (attr, value, span) in c.query.iter().flat_map(IrQuery::compares) {
            self.visit(value);
            if matches!(attr, "name" | "title" | "tag") {
                self.has_type(Ctx::var(value), &Type::Str, span, span);
                continue;
            }
            let Some(decl) = decl else {
                self.table.poison_deep(Ctx::var(value));
                continue;
            };
            match decl.param(attr) {
                Some(p) => {
                    self.has_type(Ctx::var(value), &p.ty, span, span);
                }
                None => {
                    let mut d = Diagnostic::new(
                        Stage::Unify,
                        format!("a collector of `{}` cannot query `{attr}`: the kind has no such param", decl.kind),
                        span,
                    )
                    .with_code(Code::UnknownField);
                    let names = decl.params.iter().map(|p| p.name.as_str()).chain(["name", "title", "tag"]);
                    if let Some(s) = did_you_mean(attr, names) {
                        d = d.with_note(format!("did you mean `{s}`?"));
                    }
                    self.diags.push(d);
                    self.table.poison_deep(Ctx::var(value));
                }
            }
        }
        for field in &c.fields {
            self.visit(field.value);
            self.field(decl, &field.name, field.value, field.span, field.append);
        }
    }

    /// A collector of a defined type: its query compares the params of the instances (each
    /// instance's own variable, so every one must take the value's type); it has no
    /// override block, since an instance's body is elaborated with its params already.
    fn define_collector(&mut self, c: &IrCollector) {
        for (attr, value, span) in c.query.iter().flat_map(IrQuery::compares) {
            if matches!(attr, "name" | "title" | "tag") {
                self.visit(value);
                self.has_type(Ctx::var(value), &Type::Str, span, span);
            } else {
                self.define_param(&c.kind, attr, value, span);
            }
        }
        for field in &c.fields {
            self.visit(field.value);
            let d = Diagnostic::new(
                Stage::Unify,
                format!("a collector of defined type `{}` cannot set its params", c.kind),
                field.span,
            )
            .with_code(Code::InvalidStatement)
            .with_note("an instance's body is evaluated with its params; set them on the instance, in defaults (`Vhost { … }`) or in an override (`Vhost[\"x\"] { … }`)");
            self.diags.push(d);
            self.table.poison_deep(Ctx::var(field.value));
        }
    }

    /// `value` is given to param `name` of defined type `kind` (by an override or a query):
    /// it takes the type the param has in every instance; a param the define does not have
    /// is an error at `span`.
    fn define_param(&mut self, kind: &str, name: &str, value: NodeId, span: Span) {
        self.visit(value);
        let graph = self.graph;
        let Some(info) = graph.defines.get(kind) else { return };
        let Some(at) = info.params.iter().position(|p| p == name) else {
            let mut d = Diagnostic::new(Stage::Unify, format!("defined type `{kind}` has no param `${name}`"), span)
                .with_code(Code::UnknownField)
                .with_label(info.span, "defined type defined here");
            if let Some(s) = did_you_mean(name, info.params.iter().map(String::as_str)) {
                d = d.with_note(format!("did you mean `{s}`?"));
            }
            self.diags.push(d);
            self.table.poison_deep(Ctx::var(value));
            return;
        };
        for bound in &info.bound {
            if let Some(p) = bound.get(at) {
                let var = self.param_var(*p);
                self.eq(var, Ctx::var(value), span);
            }
        }
    }

    /// The catalog's declaration of a resource kind; an unknown kind is reported at
    /// `span` when `checked` (it has fields whose types cannot be checked).
    fn kind_decl(&mut self, kind: &str, span: Span, checked: bool) -> Option<&'a ResourceDecl> {
        let decl = self.resource_decl(kind);
        if decl.is_none() && checked {
            let mut d = Diagnostic::new(Stage::Unify, format!("no resource kind `{kind}` available"), span)
                .with_code(Code::UnknownKind)
                .with_note("the types of its fields cannot be checked");
            if let Some(s) = did_you_mean(kind, self.catalog.resources().map(|r| r.kind.as_str())) {
                d = d.with_note(format!("did you mean `{s}`?"));
            }
            self.diags.push(d);
        }
        decl
    }

    /// A field's value must have its param's type (`append`: it is appended to a list
    /// param, so that param must be a list); a param the kind does not have is an error
    /// at `span`.
    fn field(&mut self, decl: Option<&'a ResourceDecl>, name: &str, value: NodeId, span: Span, append: bool) {
        if name == crate::ir::SPLAT {
            // `* => value`: its entries are checked as params when the walk sets them.
            return;
        }
        let Some(decl) = decl else {
            // Already reported: the field's type is unknown, not ambiguous.
            self.table.poison_deep(Ctx::var(value));
            return;
        };
        match decl.param(name) {
            Some(p) => {
                if append && !matches!(p.ty, Type::List(_)) {
                    let msg = format!("`+>` appends to a list, but `{name}` of `{}` is a {}", decl.kind, p.ty);
                    self.diags.push(Diagnostic::new(Stage::Unify, msg, span).with_code(Code::TypeError));
                    self.table.poison_deep(Ctx::var(value));
                    return;
                }
                self.has_type(Ctx::var(value), &p.ty, span, span);
            }
            None => {
                let mut d = Diagnostic::new(
                    Stage::Unify,
                    format!("field `{name}` does not exist in `{}` resource", decl.kind),
                    span,
                )
                .with_code(Code::UnknownField);
                if let Some(s) = did_you_mean(name, decl.params.iter().map(|p| p.name.as_str())) {
                    d = d.with_note(format!("did you mean `{s}`?"));
                }
                self.diags.push(d);
                self.table.poison_deep(Ctx::var(value));
            }
        }
    }

    /// `node` must be a `bool`; `span` is the statement or entry that says so.
    fn bool_node(&mut self, node: NodeId, span: Span) {
        self.visit(node);
        self.has_type(Ctx::var(node), &Type::Bool, span, span);
    }

    fn cond(&mut self, cond: Option<NodeId>, span: Span) {
        if let Some(c) = cond {
            self.bool_node(c, span);
        }
    }

    /// Types a resource or edge name by the static rule: `str` when speculation says so,
    /// else a list form is required. Errors point at the statement (or edge half): the
    /// name node itself may be a bind defined elsewhere.
    fn name(&mut self, node: NodeId, rule: NameRule, span: Span) {
        self.visit(node);
        let v = Ctx::var(node);
        let known = self.static_type(node);
        let str_list = || Type::list(Type::Str);
        let required = match (&known, rule) {
            (Some(Type::Str), _) => Type::Str,
            (Some(t), NameRule::Collect) if *t == str_list() => str_list(),
            (_, NameRule::Plain) => str_list(),
            (_, NameRule::Collect) => {
                Type::list(Type::Struct(vec![("name".into(), Type::Str), ("host".into(), Type::Str)]))
            }
        };
        let before = self.diags.len();
        self.has_type(v, &required, span, span);
        if self.diags.len() > before && required != Type::Str {
            // A name whose type is plainly not a string (`42`, `[1, 2]`) is simply wrong;
            // one that is a `str` only after inference needs the list form.
            let note = match known {
                Some(t) if rule == NameRule::Plain => {
                    format!("a resource name is a `str` or a `[]str` (one resource per element); this one is `{t}`")
                }
                _ => "a name is `str` only when that is obvious without inference (a string, an interpolation, \
                      an annotated value); otherwise it must be a list: write `\"${x}\"` for one name or `[$x]`"
                    .to_string(),
            };
            self.annotate_last(&note);
        }
    }

    fn annotate_last(&mut self, note: &str) {
        let mut all = std::mem::take(&mut self.diags).into_vec();
        if let Some(last) = all.pop() {
            all.push(last.with_note(note));
        }
        for d in all {
            self.diags.push(d);
        }
    }

    fn resource_decl(&self, kind: &str) -> Option<&'a ResourceDecl> {
        let catalog = self.catalog;
        catalog.resource(kind).or_else(|| catalog.resource(&kind.to_lowercase()))
    }

    fn resource(&mut self, res: &IrResource) {
        let rule = if res.collect { NameRule::Collect } else { NameRule::Plain };
        self.name(res.name, rule, res.span);
        let own_fields = res.fields.iter().any(|f| f.origin == Origin::Written);
        let decl = self.kind_decl(&res.kind, res.kind_span, own_fields);
        for field in &res.fields {
            if field.origin == Origin::Default {
                // The defaults statement checked it (one node for all its resources).
                continue;
            }
            self.visit(field.value);
            self.cond(field.cond, field.span);
            self.field(decl, &field.name, field.value, field.span, false);
        }
        for edge in &res.edges {
            self.cond(edge.cond, edge.span);
            self.name(edge.target.name, NameRule::Plain, edge.target.span);
            if let Some(field) = &edge.target.field {
                let msg = format!("a send/recv field (`.{field}`) is not allowed in a resource body edge");
                self.diags.push(Diagnostic::new(Stage::Unify, msg, edge.span).with_code(Code::SendRecv));
            }
        }
        self.metas(&res.metas);
    }

    fn metas(&mut self, metas: &[IrMeta]) {
        for meta in metas {
            self.visit(meta.value);
            self.cond(meta.cond, meta.span);
            let v = Ctx::var(meta.value);
            match &meta.name {
                Some(name) => match meta_param_type(name) {
                    Some(ty) => {
                        self.has_type(v, &ty, meta.span, meta.span);
                    }
                    None => {
                        let mut d = Diagnostic::new(Stage::Unify, format!("invalid property: `{name}`"), meta.span)
                            .with_code(Code::InvalidProperty);
                        let names =
                            super::meta::META_PARAMS.iter().chain(&super::meta::EXTRA_META_PARAMS).map(|(n, _)| *n);
                        if let Some(s) = did_you_mean(name, names) {
                            d = d.with_note(format!("did you mean `Meta:{s}`?"));
                        }
                        self.diags.push(d);
                    }
                },
                None => {
                    self.has_type(v, &meta_struct_type(), meta.span, meta.span);
                }
            }
        }
    }

    fn edge(&mut self, edge: &IrEdge) {
        for half in edge.halves() {
            if half.kind.is_empty() {
                self.reference(half.name, half.span);
            } else {
                self.name(half.name, NameRule::Plain, half.span);
            }
        }
        for c in edge.sides.iter().filter_map(|side| side.collector.as_ref()) {
            self.collector(c);
        }
        if edge.sides.len() < 2 {
            self.diags.push(
                Diagnostic::new(Stage::Unify, "can't create an edge with only one half", edge.span)
                    .with_code(Code::SendRecv),
            );
            return;
        }
        if edge.halves().any(|h| h.field.is_some()) {
            self.send_recv(edge);
        }
    }

    /// A variable as a relationship side: a reference (`File["/x"]`, a
    /// `struct{kind str; name str}`) or a list of them.
    fn reference(&mut self, node: NodeId, span: Span) {
        self.visit(node);
        let one = Type::Struct(vec![("kind".into(), Type::Str), ("name".into(), Type::Str)]);
        let ty = match self.static_type(node) {
            Some(Type::List(_)) => Type::list(one),
            _ => one,
        };
        self.has_type(Ctx::var(node), &ty, span, span);
    }

    /// Send/recv compatibility (spec 3.6).
    fn send_recv(&mut self, edge: &IrEdge) {
        let pair = match edge.sides.as_slice() {
            [first, last] => (first.refs.as_slice(), last.refs.as_slice()),
            _ => (&[][..], &[][..]),
        };
        let ([from], [to]) = pair else {
            let msg = "a send/recv edge must have exactly two halves";
            self.diags.push(Diagnostic::new(Stage::Unify, msg, edge.span).with_code(Code::SendRecv));
            return;
        };
        let (Some(send_key), Some(recv_key)) = (&from.field, &to.field) else {
            let msg = "a send/recv edge needs a field on both halves (`Kind[name].field`)";
            self.diags.push(Diagnostic::new(Stage::Unify, msg, edge.span).with_code(Code::SendRecv));
            return;
        };
        let (Some(sender), Some(receiver)) = (self.half_decl(from), self.half_decl(to)) else { return };
        if sender.sends.is_empty() {
            let msg = format!("cannot send from resource of kind: {}", sender.kind);
            self.diags.push(
                Diagnostic::new(Stage::Unify, msg, edge.span)
                    .with_code(Code::SendRecv)
                    .with_label(from.span, "this kind sends nothing"),
            );
            return;
        }
        if !receiver.can_recv {
            let msg = format!("cannot recv to resource of kind: {}", receiver.kind);
            self.diags.push(
                Diagnostic::new(Stage::Unify, msg, edge.span)
                    .with_code(Code::SendRecv)
                    .with_label(to.span, "this kind cannot receive"),
            );
            return;
        }
        let what = format!(
            "cannot send/recv from {}[{}].{send_key} to {}[{}].{recv_key}",
            sender.kind,
            self.half_name(from),
            receiver.kind,
            self.half_name(to)
        );
        let Some(send) = sender.send(send_key) else {
            let mut d = Diagnostic::new(Stage::Unify, format!("{what}: key not found in send struct"), edge.span)
                .with_code(Code::SendRecv);
            let names: Vec<&str> = sender.sends.iter().map(|p| p.name.as_str()).collect();
            d = d.with_note(format!("`{}` can send: {}", sender.kind, names.join(", ")));
            self.diags.push(d);
            return;
        };
        let Some(recv) = receiver.param(recv_key) else {
            let mut d = Diagnostic::new(Stage::Unify, format!("{what}: key not found in recv struct"), edge.span)
                .with_code(Code::SendRecv);
            if let Some(s) = did_you_mean(recv_key, receiver.params.iter().map(|p| p.name.as_str())) {
                d = d.with_note(format!("did you mean `{s}`?"));
            }
            self.diags.push(d);
            return;
        };
        if !types_compatible(&send.ty, &recv.ty) {
            let msg = format!("{what}: field type mismatch between `{}` and `{}`", send.ty, recv.ty);
            self.diags.push(Diagnostic::new(Stage::Unify, msg, edge.span).with_code(Code::SendRecv));
        }
    }

    fn half_decl(&mut self, half: &IrEdgeHalf) -> Option<&'a ResourceDecl> {
        let decl = self.resource_decl(&half.kind);
        if decl.is_none() {
            let msg = format!("no resource kind `{}` available for send/recv", half.kind.to_lowercase());
            self.diags.push(Diagnostic::new(Stage::Unify, msg, half.span).with_code(Code::UnknownKind));
        }
        decl
    }

    /// The name of an edge half for messages: its value when constant.
    fn half_name(&self, half: &IrEdgeHalf) -> String {
        match &self.graph.node(half.name).kind {
            NodeKind::Const(v) => v.to_raw_string(),
            _ => super::report::describe_node(self.graph, half.name),
        }
    }
}

/// Send/recv compatibility: equal types (ignoring func argument names), where `variant`
/// on either side accepts anything.
fn types_compatible(a: &Type, b: &Type) -> bool {
    match (a, b) {
        (Type::Variant, _) | (_, Type::Variant) => true,
        (Type::List(x), Type::List(y)) => types_compatible(x, y),
        (Type::Map(k1, v1), Type::Map(k2, v2)) => types_compatible(k1, k2) && types_compatible(v1, v2),
        (Type::Struct(f1), Type::Struct(f2)) => {
            f1.len() == f2.len() && f1.iter().zip(f2).all(|((n1, t1), (n2, t2))| n1 == n2 && types_compatible(t1, t2))
        }
        (Type::Func(a1, r1), Type::Func(a2, r2)) => {
            a1.len() == a2.len()
                && a1.iter().zip(a2).all(|((_, t1), (_, t2))| types_compatible(t1, t2))
                && types_compatible(r1, r2)
        }
        _ => a == b,
    }
}
