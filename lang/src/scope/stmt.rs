//! Statements: declaring a block's definitions in its frame, elaborating its output
//! statements into [`IrStmt`]s, and inlining class includes.

use super::args::Callee;
use super::frame::{AliasEntry, ClassEntry, DefaultsEntry, Frame, FrameId, FuncEntry, Lazy, Ns, TypeEntry, VarEntry};
use super::imports::{ImportTarget, default_namespace};
use super::plain::{Detached, Lowered, Placed, Plain};
use super::{Ctx, Hit};
use crate::diag::{Code, Diagnostic, Stage};
use crate::halves;
use crate::ir::{
    EdgeProp, IrBodyEdge, IrCollector, IrEdge, IrEdgeHalf, IrEdgeLink, IrField, IrInclude, IrMeta, IrOverrideField,
    IrQuery, IrResource, IrSide, IrStmt, NodeId, NodeKind, Op, Origin,
};
use crate::span::Span;
use crate::syntax::ast::{self, BinOp, ImportAlias, ResEntryKind, StmtKind};
use crate::value::Value;
use std::collections::{BTreeMap, BTreeSet};

/// A node definition of a block, kept for [`Ctx::nodes`]: its statement, matchers and body.
type NodeDef<'a> = (&'a ast::Stmt, &'a [ast::NodeMatch], &'a ast::Block);

impl<'a> Ctx<'a> {
    /// A block instance: a new frame under `parent`, its definitions, its output.
    pub(super) fn block(&mut self, parent: FrameId, stmts: &'a [ast::Stmt]) -> Vec<IrStmt> {
        self.block_with(parent, stmts, Vec::new())
    }

    /// [`Ctx::block`] of statements from which [`take_plain`] took the plain resources:
    /// each is lowered in its place, then dropped.
    pub(super) fn block_with(&mut self, parent: FrameId, stmts: &'a [ast::Stmt], plain: Vec<Plain>) -> Vec<IrStmt> {
        let fid = self.new_frame(Frame::child(parent));
        self.declare(fid, stmts);
        self.force_binds_in_order(fid, stmts);
        let out = self.block_stmts(fid, stmts, plain);
        self.finish(fid);
        out
    }

    /// Registers the definitions of a block in its frame (lazily; nothing is elaborated).
    /// Duplicates were reported by the ordering analysis; the first definition is kept.
    pub(super) fn declare(&mut self, fid: FrameId, stmts: &'a [ast::Stmt]) {
        for stmt in stmts {
            if let Some(private) = stmt.private {
                let key = match &stmt.kind {
                    StmtKind::Bind { name, .. } => Some((Ns::Var, name)),
                    StmtKind::Func { name, .. } => Some((Ns::Func, name)),
                    StmtKind::Class { name, .. } => Some((Ns::Class, name)),
                    StmtKind::Type(decl) => Some((Ns::Type, &decl.name)),
                    _ => None,
                };
                if let Some((ns, name)) = key {
                    self.frame_mut(fid).private.entry((ns, name.name.clone())).or_insert(private.to(name.span));
                }
            }
            match &stmt.kind {
                StmtKind::Bind { name, ann, value } => {
                    self.usage.bind(fid, name);
                    if let Some(outer) = self.outer_var(fid, &name.name) {
                        self.usage.shadow(name, outer);
                    }
                    let entry = VarEntry::Bind { name, ann: ann.as_ref(), value, state: Lazy::Pending };
                    self.frame_mut(fid).vars.entry(name.name.clone()).or_insert(entry);
                }
                StmtKind::Func { name, func } => match self.frame_mut(fid).funcs.get_mut(&name.name) {
                    Some(first) => {
                        // The ordering analysis reported a duplicate that is no overload.
                        let mut all = std::iter::once(first.lambda).chain(first.overloads.iter().map(|(_, l)| *l));
                        if all.all(|l| super::order::overloadable(l, func)) {
                            first.overloads.push((name, func));
                        }
                    }
                    None => {
                        let entry = FuncEntry {
                            name,
                            lambda: func,
                            overloads: Vec::new(),
                            frame: fid,
                            active: 0,
                            called: false,
                        };
                        self.frame_mut(fid).funcs.insert(name.name.clone(), entry);
                    }
                },
                StmtKind::Type(decl) => {
                    let entry = TypeEntry { decl, frame: fid, state: Lazy::Pending };
                    self.frame_mut(fid).types.entry(decl.name.name.clone()).or_insert(entry);
                }
                // A define in a class body was declared with the class, under its name.
                StmtKind::Class { define: Some(_), .. } if self.instances.contains_key(&fid) => {}
                StmtKind::Class { name, params, body, define: Some(_), .. } => {
                    let entry =
                        ClassEntry { name, inherits: None, params: params.as_deref(), body, frame: fid, active: 0 };
                    self.add_define(fid, name.name.clone(), entry);
                }
                StmtKind::Class { name, params, body, define: None, inherits } => {
                    let inherits = inherits.as_ref();
                    let entry = ClassEntry { name, inherits, params: params.as_deref(), body, frame: fid, active: 0 };
                    self.frame_mut(fid).classes.entry(name.name.clone()).or_insert(entry);
                    self.declare_class_defines(fid, &name.name, body);
                }
                StmtKind::Defaults { kind, entries } => self.declare_defaults(fid, kind, entries),
                StmtKind::Include { alias: Some(alias), .. } => {
                    let entry = AliasEntry::Include { stmt, state: Lazy::Pending };
                    self.frame_mut(fid).aliases.entry(alias.name.clone()).or_insert(entry);
                }
                StmtKind::Import { path, alias, .. } => {
                    let target = self.targets.get(&stmt.span).cloned().unwrap_or(ImportTarget::Failed);
                    let entry = match target {
                        ImportTarget::System(pkg) => AliasEntry::System(pkg),
                        ImportTarget::Module(m) => match self.module_frame(m, stmt.span, path) {
                            Some(f) => {
                                let file = self.files[m].file;
                                self.names.imported(stmt.span, Span { file, start: 0, end: 0 });
                                AliasEntry::Frame(f)
                            }
                            None => AliasEntry::Failed,
                        },
                        ImportTarget::Failed => AliasEntry::Failed,
                    };
                    match alias {
                        Some(ImportAlias::Star(_)) => self.frame_mut(fid).stars.push(entry),
                        Some(ImportAlias::Name(n)) => {
                            self.usage.import(fid, &n.name, stmt.span);
                            self.frame_mut(fid).aliases.entry(n.name.clone()).or_insert(entry);
                        }
                        None => {
                            self.usage.import(fid, &default_namespace(path), stmt.span);
                            self.frame_mut(fid).aliases.entry(default_namespace(path)).or_insert(entry);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Whether a frame around `fid` binds `$name` (a bind there, with its name's span, or a
    /// param or loop variable, without one).
    fn outer_var(&self, fid: FrameId, name: &str) -> Option<Option<Span>> {
        let mut cur = self.frame(fid).parent;
        while let Some(f) = cur {
            match self.frame(f).vars.get(name) {
                Some(VarEntry::Bind { name, .. }) => return Some(Some(name.span)),
                Some(VarEntry::Node(..)) => return Some(None),
                None => cur = self.frame(f).parent,
            }
        }
        None
    }

    /// Elaborates the binds of a block, dependencies first (see [`super::order::bind_order`]).
    pub(super) fn force_binds_in_order(&mut self, fid: FrameId, stmts: &'a [ast::Stmt]) {
        let key = stmts.as_ptr() as usize;
        let order = match self.bind_orders.get(&key) {
            Some(order) => order.clone(),
            None => {
                let order = std::rc::Rc::new(super::order::bind_order(stmts));
                self.bind_orders.insert(key, order.clone());
                order
            }
        };
        for name in order.iter() {
            if matches!(self.frame(fid).vars.get(name), Some(VarEntry::Bind { state: Lazy::Pending, .. })) {
                self.force_bind(fid, name);
            }
        }
    }

    /// Resolves what a block defines but nothing used: unused binds are elaborated (so
    /// their unknown names are errors) and funcs never called are scope-checked once.
    pub(super) fn finish(&mut self, fid: FrameId) {
        let binds: Vec<String> = self
            .frame(fid)
            .vars
            .iter()
            .filter(|(_, v)| matches!(v, VarEntry::Bind { state: Lazy::Pending, .. }))
            .map(|(k, _)| k.clone())
            .collect();
        for key in binds {
            self.force_bind(fid, &key);
        }
        if self.too_deep {
            // Checking them would elaborate the same too-deep chains again, each up to the
            // limit (a chain of thousands of funcs, each checked on its own), for an error
            // already reported.
            return;
        }
        let funcs: Vec<String> =
            self.frame(fid).funcs.iter().filter(|(_, f)| !f.called).map(|(k, _)| k.clone()).collect();
        for key in funcs {
            self.check_func(fid, &key);
        }
    }

    /// The output statements of a block, in order (includes inlined).
    pub(super) fn block_stmts(&mut self, fid: FrameId, stmts: &'a [ast::Stmt], mut plain: Vec<Plain>) -> Vec<IrStmt> {
        // About a statement out per statement in (a resource, an edge); doubling its way up
        // would copy a large program's statements several times, and hold two copies at once.
        let mut out = Vec::with_capacity(stmts.len() + plain.len());
        let mut nodes = Vec::new();
        // A large block's second half of plain resources is lowered on a second thread
        // meanwhile, when nothing around reaches them; their nodes join the graph in
        // their place, so the graph is the one lowering them here would make.
        let tail = if plain.len() >= halves::IN_HALVES_LARGE && self.bare(fid) {
            plain.split_off(plain.len() / 2)
        } else {
            Vec::new()
        };
        let here = &mut |ctx: &mut Self, p: Plain, out: &mut Vec<IrStmt>| ctx.plain_resource(fid, p, out);
        match tail.first().map(Placed::before) {
            None => self.interleave(fid, stmts, 0..stmts.len(), plain, &mut out, &mut nodes, here),
            Some(cut) => {
                let ((), lowered) = halves::both(
                    || self.interleave(fid, stmts, 0..cut, plain, &mut out, &mut nodes, here),
                    || Lowered::of(tail),
                );
                let (lowered, mut adopter) = lowered.into_parts();
                let adopt = &mut |ctx: &mut Self, d: Detached, out: &mut Vec<IrStmt>| {
                    out.push(IrStmt::Resource(adopter.adopt(&mut ctx.graph, d)));
                };
                self.interleave(fid, stmts, cut..stmts.len(), lowered, &mut out, &mut nodes, adopt);
            }
        }
        if !nodes.is_empty() {
            out.extend(self.nodes(fid, &nodes));
        }
        // Exactly its size: the program's statements live as long as the function graph.
        out.shrink_to_fit();
        out
    }

    /// Elaborates `stmts[range]` into `out` with the plain resources `items` in their
    /// places (each given to `put`); node definitions are kept in `nodes` for the end.
    #[allow(clippy::too_many_arguments)]
    fn interleave<P: Placed>(
        &mut self,
        fid: FrameId,
        stmts: &'a [ast::Stmt],
        range: std::ops::Range<usize>,
        items: Vec<P>,
        out: &mut Vec<IrStmt>,
        nodes: &mut Vec<NodeDef<'a>>,
        put: &mut dyn FnMut(&mut Self, P, &mut Vec<IrStmt>),
    ) {
        let mut items = items.into_iter().peekable();
        for at in range {
            while let Some(p) = items.next_if(|p| p.before() == at) {
                put(self, p, out);
            }
            let stmt = &stmts[at];
            match &stmt.kind {
                StmtKind::Node { matchers, body } => nodes.push((stmt, matchers.as_slice(), body)),
                _ => self.stmt(fid, stmt, out),
            }
        }
        for p in items {
            put(self, p, out);
        }
    }

    /// The node definitions of the top level as one `if` chain on the host name: an exact
    /// name first, then the first regular expression that matches (in source order), then
    /// `default`; no match and no default is an error naming the host.
    fn nodes(&mut self, fid: FrameId, nodes: &[NodeDef<'a>]) -> Vec<IrStmt> {
        let span = nodes[0].0.span;
        let host = self.graph.add(NodeKind::Call { func: "sys.hostname".into(), args: Vec::new() }, span);
        let mut exact: Vec<(NodeId, usize)> = Vec::new();
        let mut regexes: Vec<(NodeId, usize)> = Vec::new();
        let mut default: Option<(usize, Span)> = None;
        let mut names: BTreeMap<&str, Span> = BTreeMap::new();
        for (i, (_, matchers, _)) in nodes.iter().enumerate() {
            let mut same_node: Option<NodeId> = None;
            for m in matchers.iter() {
                match m {
                    ast::NodeMatch::Name { name, span } => {
                        if let Some(first) = names.insert(name, *span) {
                            let d =
                                Diagnostic::new(Stage::SetScope, format!("two node definitions for `{name}`"), *span)
                                    .with_code(Code::DuplicateAssignment)
                                    .with_label(first, "the first one");
                            self.error(d);
                        }
                        let lit = self.graph.add(NodeKind::Const(Value::str(name.as_str())), *span);
                        let eq = self.graph.add(NodeKind::Op { op: Op::Bin(BinOp::Eq), args: vec![host, lit] }, *span);
                        same_node = Some(match same_node {
                            None => eq,
                            Some(prev) => {
                                self.graph.add(NodeKind::Op { op: Op::Bin(BinOp::Or), args: vec![prev, eq] }, *span)
                            }
                        });
                    }
                    ast::NodeMatch::Regex { pattern, span } => {
                        let lit = self.graph.add(NodeKind::Const(Value::str(pattern.as_str())), *span);
                        let call = NodeKind::Call { func: "regexp.match".into(), args: vec![lit, host] };
                        regexes.push((self.graph.add(call, *span), i));
                    }
                    ast::NodeMatch::Default(span) => match default {
                        Some((_, first)) => {
                            let d = Diagnostic::new(Stage::SetScope, "two `node default` definitions", *span)
                                .with_code(Code::DuplicateAssignment)
                                .with_label(first, "the first one");
                            self.error(d);
                        }
                        None => default = Some((i, *span)),
                    },
                }
            }
            if let Some(cond) = same_node {
                exact.push((cond, i));
            }
        }
        let mut chain = match default {
            Some((i, _)) => self.block(fid, &nodes[i].2.stmts),
            None => {
                let prefix = self.graph.add(NodeKind::Const(Value::str("no node definition matches host ")), span);
                let message = self.graph.add(NodeKind::Call { func: "concat".into(), args: vec![prefix, host] }, span);
                let check = self.graph.add(NodeKind::Call { func: "panic".into(), args: vec![message] }, span);
                vec![IrStmt::Panic { check, span }]
            }
        };
        for (cond, i) in exact.into_iter().chain(regexes).collect::<Vec<_>>().into_iter().rev() {
            let then = self.block(fid, &nodes[i].2.stmts);
            chain = vec![IrStmt::If { cond, then, els: chain, span: nodes[i].0.span }];
        }
        chain
    }

    fn stmt(&mut self, fid: FrameId, stmt: &'a ast::Stmt, out: &mut Vec<IrStmt>) {
        match &stmt.kind {
            StmtKind::Bind { .. }
            | StmtKind::Func { .. }
            | StmtKind::Class { .. }
            | StmtKind::Import { .. }
            | StmtKind::Type(_) => {}
            StmtKind::Resource(res) => match self.find_define(fid, &res.kind.name) {
                Some((kind, def)) => out.extend(self.instance(fid, res, stmt, kind, def)),
                None => out.push(IrStmt::Resource(self.resource(fid, res, stmt))),
            },
            // Defaults of a defined type are the instances' arguments, checked there.
            StmtKind::Defaults { kind, .. } if self.find_define(fid, &kind.name).is_some() => {}
            StmtKind::Defaults { kind, entries } => {
                let (fields, metas) = self.default_entries(fid, entries, &BTreeSet::new(), &BTreeSet::new());
                out.push(IrStmt::Defaults {
                    kind: kind.name.clone(),
                    kind_span: kind.span,
                    fields,
                    metas,
                    span: stmt.span,
                });
            }
            StmtKind::Override { target, entries } => {
                let target = self.edge_half(fid, target);
                let fields = self.override_fields(fid, entries);
                let replaces = self.base_bodies(fid);
                out.push(IrStmt::Override { target, fields, span: stmt.span, replaces });
            }
            // Lowered together by `block_stmts`; the init stage keeps them at the top level.
            StmtKind::Node { .. } => {}
            StmtKind::Collect(c) => {
                let c = self.collector(fid, c);
                out.push(IrStmt::Collect(c));
            }
            StmtKind::Realize { refs } => {
                let refs = refs.iter().map(|h| self.edge_half(fid, h)).collect();
                out.push(IrStmt::Realize { refs, span: stmt.span });
            }
            StmtKind::Edge { sides, links } => {
                let sides = sides
                    .iter()
                    .map(|side| IrSide {
                        refs: side.refs.iter().map(|h| self.edge_half(fid, h)).collect(),
                        collector: side.collector.as_ref().map(|c| self.collector(fid, c)),
                    })
                    .collect();
                let links = links.iter().map(|l| IrEdgeLink { notify: l.notify, backward: l.backward }).collect();
                out.push(IrStmt::Edge(IrEdge { sides, links, span: stmt.span }));
            }
            StmtKind::If { cond, then, els } => {
                let cond = self.expr(fid, cond);
                let then = self.block(fid, &then.stmts);
                let els = match els {
                    Some(b) => self.block(fid, &b.stmts),
                    None => Vec::new(),
                };
                out.push(IrStmt::If { cond, then, els, span: stmt.span });
            }
            StmtKind::For { index: a, value: b, iter, body } | StmtKind::ForKv { key: a, value: b, iter, body } => {
                let kv = matches!(stmt.kind, StmtKind::ForKv { .. });
                let iter = self.expr(fid, iter);
                let loop_frame = self.new_frame(Frame::child(fid));
                let key = self.graph.add_param(a.name.clone(), a.span);
                let value = self.graph.add_param(b.name.clone(), b.span);
                let key_node = self.graph.add(NodeKind::Param(key), a.span);
                let value_node = self.graph.add(NodeKind::Param(value), b.span);
                self.frame_mut(loop_frame).vars.insert(a.name.clone(), VarEntry::Node(key_node, Some(a.span)));
                self.frame_mut(loop_frame).vars.insert(b.name.clone(), VarEntry::Node(value_node, Some(b.span)));
                let body = self.block(loop_frame, &body.stmts);
                out.push(IrStmt::For { iter, key, value, kv, body, span: stmt.span });
            }
            StmtKind::Panic { args } => {
                let func = if args.len() == 2 { "panic_debug" } else { "panic" };
                let args = args.iter().map(|a| self.expr(fid, a)).collect();
                let check = self.graph.add(NodeKind::Call { func: func.to_string(), args }, stmt.span);
                out.push(IrStmt::Panic { check, span: stmt.span });
            }
            StmtKind::Include { alias, .. } => {
                let instance = match alias {
                    Some(a) => self.force_include(fid, &a.name),
                    None => self.instantiate(fid, stmt),
                };
                if let Some(body_frame) = instance {
                    out.extend(self.emit_instance(body_frame, stmt));
                }
            }
        }
    }

    fn resource(&mut self, fid: FrameId, res: &'a ast::Resource, stmt: &'a ast::Stmt) -> IrResource {
        self.resource_with(fid, res, stmt.span, &mut |ctx, e| ctx.expr(fid, e), &mut |ctx, h| ctx.edge_half(fid, h))
    }

    /// A resource statement's IR, lowering its expressions with `lower` and the targets
    /// of its edges with `half` (whose syntax may live shorter than the context's).
    fn resource_with<'s>(
        &mut self,
        fid: FrameId,
        res: &'s ast::Resource,
        span: Span,
        lower: &mut dyn FnMut(&mut Self, &'s ast::Expr) -> NodeId,
        half: &mut dyn FnMut(&mut Self, &'s ast::EdgeHalf) -> IrEdgeHalf,
    ) -> IrResource {
        let name = lower(self, &res.name);
        // Sized to the body's fields: pushed one by one, three would keep room for four, a
        // quarter more of every resource's fields held as long as the function graph.
        let written = res.entries.iter().filter(|e| matches!(e.kind, ResEntryKind::Field { .. })).count();
        let mut fields = Vec::with_capacity(written);
        let mut edges = Vec::new();
        let mut metas = Vec::new();
        for entry in &res.entries {
            match &entry.kind {
                ResEntryKind::Field { name: field, cond, value } => {
                    let cond = cond.as_ref().map(|c| lower(self, c));
                    let value = lower(self, value);
                    fields.push(IrField {
                        origin: Default::default(),
                        name: self.short_strs.shared(&field.name),
                        value,
                        cond,
                        span: entry.span,
                    });
                }
                ResEntryKind::Edge { prop, cond, target } => {
                    let Some(prop) = EdgeProp::parse(&prop.name) else {
                        // The init stage rejects these; stay robust if it did not.
                        self.error(
                            Diagnostic::new(Stage::SetScope, format!("invalid property: `{}`", prop.name), prop.span)
                                .with_code(Code::InvalidProperty),
                        );
                        continue;
                    };
                    let cond = cond.as_ref().map(|c| lower(self, c));
                    let target = half(self, target);
                    edges.push(IrBodyEdge { prop, cond, target, span: entry.span });
                }
                ResEntryKind::Meta { name: meta, cond, value } => {
                    let cond = cond.as_ref().map(|c| lower(self, c));
                    let value = lower(self, value);
                    metas.push(IrMeta { name: meta.as_ref().map(|m| m.name.clone()), value, cond, span: entry.span });
                }
                ResEntryKind::Splat { value } => {
                    let value = lower(self, value);
                    fields.push(IrField {
                        origin: Default::default(),
                        name: self.short_strs.shared(crate::ir::SPLAT),
                        value,
                        cond: None,
                        span: entry.span,
                    });
                }
                // The init stage rejects appends in a resource's body.
                ResEntryKind::Append { .. } => {}
            }
        }
        let mut ir = IrResource {
            kind: res.kind.name.clone(),
            kind_span: res.kind.span,
            name,
            fields,
            edges,
            metas,
            collect: res.collect,
            virtuality: res.virtuality,
            classes: Vec::new(),
            span,
        };
        self.enclose_resource(fid, &mut ir);
        ir
    }

    /// What a resource declared in frame `fid` gets from around it: the defaults of the
    /// enclosing blocks, innermost first (a param the body sets wins, and an inner default
    /// wins over an outer one), and the classes it is declared in. (Most programs have
    /// neither: then no frame is walked and nothing is allocated.)
    pub(super) fn enclose_resource(&mut self, fid: FrameId, ir: &mut IrResource) {
        let mut given: BTreeSet<std::sync::Arc<str>> = BTreeSet::new();
        let mut given_metas: BTreeSet<String> = BTreeSet::new();
        if self.any_defaults {
            given.extend(ir.fields.iter().map(|f| f.name.clone()));
            given_metas.extend(ir.metas.iter().filter_map(|m| m.name.clone()));
        }
        // `name +> value` of inner defaults, waiting for the default outside them that they
        // append to (innermost last in the list they make).
        let mut appends: Vec<(std::sync::Arc<str>, NodeId, Span)> = Vec::new();
        let mut frame = if self.any_defaults { Some(fid) } else { None };
        while let Some(id) = frame {
            let entries: Vec<&'a [ast::ResEntry]> =
                self.frame(id).defaults.iter().filter(|d| d.kind == ir.kind).map(|d| d.entries).collect();
            for entries in entries {
                let (mut f, m) = self.default_entries(id, entries, &given, &given_metas);
                for field in &mut f {
                    if let Some(at) = appends.iter().position(|(name, ..)| *name == field.name) {
                        let (_, more, _) = appends.remove(at);
                        field.value = self.concat(field.value, more, field.span);
                    }
                }
                for entry in entries {
                    let ResEntryKind::Append { name, value } = &entry.kind else { continue };
                    if given.contains(name.name.as_str()) {
                        continue;
                    }
                    let key = (entry as *const ast::ResEntry as usize, id);
                    let value = match self.default_nodes.get(&key) {
                        Some((value, _)) => *value,
                        None => {
                            let value = self.expr(id, value);
                            self.default_nodes.insert(key, (value, None));
                            value
                        }
                    };
                    match appends.iter_mut().find(|(n, ..)| **n == *name.name) {
                        Some(pending) => pending.1 = self.concat(value, pending.1, entry.span),
                        None => appends.push((self.short_strs.shared(&name.name), value, entry.span)),
                    }
                }
                given.extend(f.iter().map(|f| f.name.clone()));
                given_metas.extend(m.iter().filter_map(|m| m.name.clone()));
                ir.fields.extend(f);
                ir.metas.extend(m);
            }
            frame = self.frame(id).parent;
        }
        // An append with no default outside it is the value itself.
        for (name, value, span) in appends {
            ir.fields.push(IrField { origin: Origin::Default, name, value, cond: None, span });
        }
        ir.classes = self.enclosing_classes(fid);
    }

    /// `a` followed by `b`, two lists (an appending default on an outer one).
    fn concat(&mut self, a: NodeId, b: NodeId, span: Span) -> NodeId {
        self.graph.add(NodeKind::Call { func: "list.concat".into(), args: vec![a, b] }, span)
    }

    /// Whether nothing around frame `fid` reaches a resource declared there (no defaults,
    /// no class): such a plain resource is its own syntax and nothing else.
    pub(super) fn bare(&self, fid: FrameId) -> bool {
        let mut frame = Some(fid);
        while let Some(id) = frame {
            if !self.frame(id).defaults.is_empty() || self.instances.contains_key(&id) {
                return false;
            }
            frame = self.frame(id).parent;
        }
        true
    }

    /// The `name => value` and `name +> value` entries of an override or collector body.
    fn override_fields(&mut self, fid: FrameId, entries: &'a [ast::ResEntry]) -> Vec<IrOverrideField> {
        let mut fields = Vec::new();
        for entry in entries {
            let (name, value, append) = match &entry.kind {
                ResEntryKind::Field { name, value, .. } => (name.name.as_str(), value, false),
                ResEntryKind::Append { name, value } => (name.name.as_str(), value, true),
                ResEntryKind::Splat { value } => (crate::ir::SPLAT, value, false),
                // The init stage rejects the others.
                ResEntryKind::Edge { .. } | ResEntryKind::Meta { .. } => continue,
            };
            let value = self.expr(fid, value);
            fields.push(IrOverrideField { name: name.to_string(), value, append, span: entry.span });
        }
        fields
    }

    fn collector(&mut self, fid: FrameId, c: &'a ast::Collector) -> IrCollector {
        let query = c.query.as_ref().map(|q| self.query(fid, q));
        IrCollector {
            kind: c.kind.name.clone(),
            kind_span: c.kind.span,
            exported: c.exported,
            query,
            fields: self.override_fields(fid, &c.entries),
            span: c.span,
        }
    }

    fn query(&mut self, fid: FrameId, q: &'a ast::Query) -> IrQuery {
        match q {
            ast::Query::Compare { attr, equal, value, span } => {
                IrQuery::Compare { attr: attr.name.clone(), equal: *equal, value: self.expr(fid, value), span: *span }
            }
            ast::Query::And(a, b) => IrQuery::And(Box::new(self.query(fid, a)), Box::new(self.query(fid, b))),
            ast::Query::Or(a, b) => IrQuery::Or(Box::new(self.query(fid, a)), Box::new(self.query(fid, b))),
        }
    }

    /// The classes whose instances enclose frame `fid`, outermost first.
    pub(super) fn enclosing_classes(&self, fid: FrameId) -> Vec<String> {
        let mut classes = Vec::new();
        if self.instances.is_empty() {
            return classes;
        }
        let mut frame = Some(fid);
        while let Some(id) = frame {
            if let Some((_, _, name)) = self.instances.get(&id) {
                classes.push(name.clone());
            }
            frame = self.frame(id).parent;
        }
        classes.reverse();
        classes
    }

    /// Records a `Kind { … }` statement in its block's frame. One param given two
    /// defaults in one block is an error naming both.
    fn declare_defaults(&mut self, fid: FrameId, kind: &'a ast::Ident, entries: &'a [ast::ResEntry]) {
        let mut earlier: Vec<(String, Span)> = Vec::new();
        for d in self.frame(fid).defaults.iter().filter(|d| d.kind == kind.name) {
            earlier.extend(d.entries.iter().filter_map(|e| default_key(e).map(|k| (k, e.span))));
        }
        for entry in entries {
            let Some(key) = default_key(entry) else { continue };
            if let Some((_, first)) = earlier.iter().find(|(k, _)| *k == key) {
                let d = Diagnostic::new(
                    Stage::SetScope,
                    format!("`{key}` of `{}` has two defaults in one block", kind.name),
                    entry.span,
                )
                .with_code(Code::DuplicateDefault)
                .with_label(*first, "the first default");
                self.error(d);
            }
        }
        self.frame_mut(fid).defaults.push(DefaultsEntry { kind: kind.name.clone(), entries });
        self.any_defaults = true;
    }

    /// The fields and metas of a defaults statement declared in frame `fid`, minus the
    /// names already `given`, with [`Origin::Default`]. Their nodes are made once.
    pub(super) fn default_entries(
        &mut self,
        fid: FrameId,
        entries: &'a [ast::ResEntry],
        given: &BTreeSet<std::sync::Arc<str>>,
        given_metas: &BTreeSet<String>,
    ) -> (Vec<IrField>, Vec<IrMeta>) {
        let mut fields = Vec::new();
        let mut metas = Vec::new();
        for entry in entries {
            let (cond, value) = match &entry.kind {
                ResEntryKind::Field { name, .. } if given.contains(name.name.as_str()) => continue,
                ResEntryKind::Meta { name: Some(name), .. } if given_metas.contains(&name.name) => continue,
                ResEntryKind::Field { cond, value, .. } | ResEntryKind::Meta { name: Some(_), cond, value } => {
                    (cond, value)
                }
                ResEntryKind::Splat { value } => (&None, value),
                // The init stage rejects the others in defaults.
                _ => continue,
            };
            let key = (entry as *const ast::ResEntry as usize, fid);
            let (value, cond) = match self.default_nodes.get(&key) {
                Some(nodes) => *nodes,
                None => {
                    let cond = cond.as_ref().map(|c| self.expr(fid, c));
                    let value = self.expr(fid, value);
                    self.default_nodes.insert(key, (value, cond));
                    (value, cond)
                }
            };
            match &entry.kind {
                ResEntryKind::Field { name, .. } => fields.push(IrField {
                    origin: Origin::Default,
                    name: self.short_strs.shared(&name.name),
                    value,
                    cond,
                    span: entry.span,
                }),
                ResEntryKind::Meta { name, .. } => {
                    metas.push(IrMeta { name: name.as_ref().map(|n| n.name.clone()), value, cond, span: entry.span })
                }
                ResEntryKind::Splat { .. } => fields.push(IrField {
                    origin: Origin::Default,
                    name: self.short_strs.shared(crate::ir::SPLAT),
                    value,
                    cond,
                    span: entry.span,
                }),
                _ => {}
            }
        }
        (fields, metas)
    }

    pub(super) fn edge_half(&mut self, fid: FrameId, half: &'a ast::EdgeHalf) -> IrEdgeHalf {
        let name = self.expr(fid, &half.name);
        IrEdgeHalf {
            kind: half.kind.name.clone(),
            name,
            field: half.field.as_ref().map(|f| f.name.clone()),
            span: half.span,
        }
    }

    /// Instantiates an `include ... as alias` defined in `owner` on first use.
    pub(super) fn force_include(&mut self, owner: FrameId, alias: &str) -> Option<FrameId> {
        let (stmt, state) = match self.frame(owner).aliases.get(alias) {
            Some(AliasEntry::Include { stmt, state }) => (*stmt, *state),
            Some(AliasEntry::Frame(f)) => return Some(*f),
            _ => return None,
        };
        match state {
            Lazy::Done(f) => Some(f),
            Lazy::Active => {
                self.recursion(stmt.span);
                None
            }
            Lazy::Pending => {
                self.set_include_state(owner, alias, Lazy::Active);
                let out = self.instantiate(owner, stmt);
                match out {
                    Some(f) => self.set_include_state(owner, alias, Lazy::Done(f)),
                    None => {
                        self.frame_mut(owner).aliases.insert(alias.to_string(), AliasEntry::Failed);
                    }
                }
                out
            }
        }
    }

    fn set_include_state(&mut self, owner: FrameId, alias: &str, new: Lazy<FrameId>) {
        if let Some(AliasEntry::Include { state, .. }) = self.frame_mut(owner).aliases.get_mut(alias) {
            *state = new;
        }
    }

    /// Creates the frames of one class instance: arguments bound to the parameters, the
    /// body's definitions declared. Returns the body frame (which `as` exports).
    fn instantiate(&mut self, fid: FrameId, stmt: &'a ast::Stmt) -> Option<FrameId> {
        let StmtKind::Include { name, args, .. } = &stmt.kind else { return None };
        let args: &'a [ast::Expr] = args.as_deref().unwrap_or(&[]);
        let args = self.args(fid, args);
        let (owner, key) = match self.find_admitted(fid, Ns::Class, &name.name, name.span) {
            Some(Hit::Entry(owner, key)) => (owner, key),
            Some(_) => return None,
            None => {
                self.unknown(fid, Ns::Class, &name.name, stmt.span);
                return None;
            }
        };
        let class = self.frame(owner).classes.get(&key)?.clone();
        let params = class.params.unwrap_or(&[]);
        if args.mgmt_form(params) && params.len() != args.positional.len() {
            let d = Diagnostic::new(
                Stage::SetScope,
                format!("class `{}` expected {} args but got {}", class.name.name, params.len(), args.positional.len()),
                stmt.span,
            )
            .with_code(Code::ClassArity)
            .with_label(class.name.span, "class defined here");
            self.error(d);
            return None;
        }
        self.class_instance(owner, key, class, args, stmt)
    }

    /// The frames of one instance of `class` (kept in `owner` as `key`), with `args`: for a
    /// class that inherits, its base's instance first (with the base's defaults), whose body
    /// frame is then the scope of the class's params and body.
    fn class_instance(
        &mut self,
        owner: FrameId,
        key: String,
        class: ClassEntry<'a>,
        args: super::args::Args<'a>,
        stmt: &'a ast::Stmt,
    ) -> Option<FrameId> {
        let params = class.params.unwrap_or(&[]);
        if class.active > 0 {
            self.recursion(stmt.span);
            return None;
        }
        let mut scope = class.frame;
        let mut base_body = None;
        if let Some(base) = class.inherits {
            self.with_class_active(owner, &key, 1);
            let found = self.base_instance(class.frame, base, stmt);
            self.with_class_active(owner, &key, -1);
            let body = found?;
            scope = body;
            base_body = Some(body);
        }
        let param_frame = self.new_frame(Frame::child(scope));
        if !self.bind_params(
            param_frame,
            Callee { word: "class", name: class.name, ret: None },
            params,
            args,
            stmt.span,
        ) {
            return None;
        }
        let body_frame = self.new_frame(Frame::child(param_frame));
        self.instances.insert(body_frame, (class.body, owner, key.clone()));
        if let Some(base) = base_body {
            self.bases.insert(body_frame, base);
        }
        if !self.enter(stmt.span, || format!("the include of class `{}`", class.name.name)) {
            return None;
        }
        self.with_class_active(owner, &key, 1);
        self.declare(body_frame, &class.body.stmts);
        self.with_class_active(owner, &key, -1);
        self.leave();
        Some(body_frame)
    }

    /// The instance of the base `base` of a class defined in frame `fid`, with the base's
    /// own defaults (a base whose params lack one is an error at `inherits`).
    fn base_instance(&mut self, fid: FrameId, base: &'a ast::Name, stmt: &'a ast::Stmt) -> Option<FrameId> {
        let (owner, key) = match self.find_admitted(fid, Ns::Class, &base.name, base.span) {
            Some(Hit::Entry(owner, key)) => (owner, key),
            Some(_) => return None,
            None => {
                self.unknown(fid, Ns::Class, &base.name, base.span);
                return None;
            }
        };
        let class = self.frame(owner).classes.get(&key)?.clone();
        let required: Vec<String> = class
            .params
            .unwrap_or(&[])
            .iter()
            .filter(|p| p.default.is_none())
            .map(|p| format!("`${}`", p.name.name))
            .collect();
        if !required.is_empty() {
            let d = Diagnostic::new(
                Stage::SetScope,
                format!(
                    "class `{}` cannot be inherited: its params {} have no default",
                    base.name,
                    required.join(", ")
                ),
                base.span,
            )
            .with_code(Code::CallArgs)
            .with_label(class.name.span, "class defined here")
            .with_note("a base class is evaluated with its own defaults, as Puppet does");
            self.error(d);
            return None;
        }
        let args = super::args::Args { positional: Vec::new(), named: Vec::new() };
        self.class_instance(owner, key, class, args, stmt)
    }

    /// The bodies of the base classes of the derived class instances around frame `fid`
    /// (an override there may change what their resources set).
    fn base_bodies(&self, fid: FrameId) -> Vec<Span> {
        let mut out = Vec::new();
        if self.bases.is_empty() {
            return out;
        }
        let mut frame = Some(fid);
        while let Some(id) = frame {
            let mut base = self.bases.get(&id);
            while let Some(b) = base {
                if let Some((body, ..)) = self.instances.get(b) {
                    out.push(body.span);
                }
                base = self.bases.get(b);
            }
            frame = self.frame(id).parent;
        }
        out
    }

    /// The output statements of an instantiated class body (once per include statement),
    /// its base's first.
    fn emit_instance(&mut self, body_frame: FrameId, stmt: &'a ast::Stmt) -> Vec<IrStmt> {
        let mut out = match self.bases.get(&body_frame) {
            Some(&base) => self.emit_instance(base, stmt),
            None => Vec::new(),
        };
        out.extend(self.emit_body(body_frame, stmt));
        out
    }

    /// The output statements of one class body.
    fn emit_body(&mut self, body_frame: FrameId, stmt: &'a ast::Stmt) -> Vec<IrStmt> {
        let Some((body, owner, key)) = self.instances.get(&body_frame).cloned() else { return Vec::new() };
        let active = self.frame(owner).classes.get(&key).map_or(0, |c| c.active);
        if active > 0 {
            self.recursion(stmt.span);
            return Vec::new();
        }
        let class = self.frame(owner).classes.get(&key).map_or_else(|| key.clone(), |c| c.name.name.clone());
        if !self.enter(stmt.span, || format!("the include of class `{class}`")) {
            return Vec::new();
        }
        self.include_chain.push(stmt.span);
        let chain = self.include_chain.clone();
        self.graph.includes.push(IrInclude { class: class.clone(), body: body.span, chain, instance: false });
        self.with_class_active(owner, &key, 1);
        self.force_binds_in_order(body_frame, &body.stmts);
        let out = self.block_stmts(body_frame, &body.stmts, Vec::new());
        // Included for nothing: no resource, edge or check comes out, and no `as` name
        // lets its binds be read.
        if out.is_empty() && matches!(stmt.kind, StmtKind::Include { alias: None, .. }) {
            self.usage.empty_include(stmt.span, &class);
        }
        self.finish(body_frame);
        self.with_class_active(owner, &key, -1);
        self.include_chain.pop();
        self.leave();
        out
    }

    fn with_class_active(&mut self, owner: FrameId, key: &str, delta: i32) {
        if let Some(c) = self.frame_mut(owner).classes.get_mut(key) {
            c.active = c.active.saturating_add_signed(delta);
        }
    }
}

/// The param a defaults entry sets, as duplicates are told: `mode`, `Meta:noop`.
fn default_key(entry: &ast::ResEntry) -> Option<String> {
    match &entry.kind {
        ResEntryKind::Field { name, .. } | ResEntryKind::Append { name, .. } => Some(name.name.clone()),
        ResEntryKind::Meta { name: Some(name), .. } => Some(format!("Meta:{}", name.name)),
        _ => None,
    }
}
