//! Defined resource types (Puppet's `define`): where a resource statement's kind names
//! one, the statement is an *instance*: its body fields are the define's arguments and
//! the define's body is elaborated once for it, to be walked once per title with `$name`
//! (and `$title`) bound ([`IrInstance`]).

use super::Ctx;
use super::args::{Callee, signature};
use super::frame::{AliasEntry, ClassEntry, Frame, FrameId, VarEntry};
use crate::diag::{Code, Diagnostic, Stage};
use crate::ir::{
    EdgeProp, IrEdge, IrEdgeHalf, IrEdgeLink, IrInstance, IrInstanceParam, IrMeta, IrSide, IrStmt, NodeId, NodeKind,
};
use crate::span::Span;
use crate::syntax::ast::{self, ResEntryKind, StmtKind};
use std::collections::BTreeSet;

/// Whether `stmts` (a file's top level, or a class body in it) declare a defined type.
pub(super) fn declares_any(stmts: &[ast::Stmt]) -> bool {
    stmts.iter().any(|s| match &s.kind {
        StmtKind::Class { define: Some(_), .. } => true,
        StmtKind::Class { body, .. } => declares_any(&body.stmts),
        _ => false,
    })
}

/// A relationship written in an instance's body (`Before => Svc["x"],`).
struct BodyEdge<'a> {
    prop: EdgeProp,
    cond: Option<&'a ast::Expr>,
    target: &'a ast::EdgeHalf,
}

impl<'a> Ctx<'a> {
    /// Records the defines of a class body in the class's own frame, as `class:define`
    /// (a define in a class is named after it, and sees the names around the class, not
    /// the class's params: Puppet's namespacing).
    pub(super) fn declare_class_defines(&mut self, fid: FrameId, class: &str, body: &'a ast::Block) {
        for stmt in &body.stmts {
            if let StmtKind::Class { name, params, body, define: Some(_), .. } = &stmt.kind {
                let entry = ClassEntry { name, inherits: None, params: params.as_deref(), body, frame: fid, active: 0 };
                self.add_define(fid, format!("{class}:{}", name.name), entry);
            }
        }
    }

    /// Records a define in frame `fid` under its kind (the first of a name stays).
    pub(super) fn add_define(&mut self, fid: FrameId, kind: String, entry: ClassEntry<'a>) {
        let info = crate::ir::DefineInfo {
            params: entry.params.unwrap_or_default().iter().map(|p| p.name.name.clone()).collect(),
            span: entry.name.span,
            bound: Vec::new(),
        };
        self.graph.defines.entry(kind.clone()).or_insert(info);
        self.frame_mut(fid).defines.entry(kind).or_insert(entry);
        self.any_defines = true;
    }

    /// The define a resource statement of kind `kind` in frame `fid` instantiates, with its
    /// full kind: found in the enclosing frames, then as `class:kind` inside a class's
    /// body, then through `import … as *`.
    pub(super) fn find_define(&self, fid: FrameId, kind: &str) -> Option<(String, ClassEntry<'a>)> {
        if !self.any_defines {
            return None;
        }
        let mut frame = Some(fid);
        while let Some(id) = frame {
            let f = self.frame(id);
            if let Some(d) = f.defines.get(kind) {
                return Some((kind.to_string(), d.clone()));
            }
            if let Some((_, owner, key)) = self.instances.get(&id) {
                let full = format!("{key}:{kind}");
                if let Some(d) = self.frame(*owner).defines.get(&full) {
                    return Some((full, d.clone()));
                }
            }
            for star in f.stars.iter().rev() {
                if let AliasEntry::Frame(m) = star
                    && let Some(d) = self.frame(*m).defines.get(kind)
                {
                    return Some((kind.to_string(), d.clone()));
                }
            }
            frame = f.parent;
        }
        None
    }

    /// The instance a resource statement of defined type `kind` makes (nothing when its
    /// arguments do not fit, after reporting why).
    pub(super) fn instance(
        &mut self,
        fid: FrameId,
        res: &'a ast::Resource,
        stmt: &'a ast::Stmt,
        kind: String,
        def: ClassEntry<'a>,
    ) -> Option<IrStmt> {
        let callee = Callee { word: "defined type", name: def.name, ret: None };
        let params: &'a [ast::Param] = def.params.unwrap_or(&[]);
        if res.collect {
            let d = Diagnostic::new(Stage::SetScope, format!("`collect` cannot take defined type `{kind}`"), stmt.span)
                .with_code(Code::InvalidStatement)
                .with_note("`collect` gathers resources of a kind another host exported");
            self.error(d);
            return None;
        }
        let titles = self.expr(fid, &res.name);
        let title = self.graph.add_param("name", res.name.span);
        let title_node = self.graph.add(NodeKind::Param(title), res.name.span);
        // A title is a `str`, which static speculation reads (a resource named `$name`).
        let ty = crate::types::Type::Str;
        self.graph.annotations.push(crate::ir::Annotation { node: title_node, ty, span: res.name.span });

        // The statement's entries: arguments, meta params, relationships.
        let mut given: Vec<(&'a ast::Ident, NodeId, Span)> = Vec::new();
        let mut metas: Vec<IrMeta> = Vec::new();
        let mut edges: Vec<BodyEdge<'a>> = Vec::new();
        let mut problems: Vec<(String, Span)> = Vec::new();
        for entry in &res.entries {
            match &entry.kind {
                ResEntryKind::Field { name, cond: Some(_), .. } => problems.push((
                    format!("the argument `{}` of a defined type cannot be conditional (`cond ?: value`)", name.name),
                    entry.span,
                )),
                ResEntryKind::Field { name, cond: None, value } => {
                    given.push((name, self.expr(fid, value), entry.span))
                }
                ResEntryKind::Meta { name, cond, value } => {
                    let cond = cond.as_ref().map(|c| self.expr(fid, c));
                    let value = self.expr(fid, value);
                    metas.push(IrMeta { name: name.as_ref().map(|n| n.name.clone()), value, cond, span: entry.span });
                }
                ResEntryKind::Edge { prop, cond, target } => {
                    // The init stage reported any other property.
                    let Some(prop) = EdgeProp::parse(&prop.name) else { continue };
                    edges.push(BodyEdge { prop, cond: cond.as_deref(), target });
                }
                ResEntryKind::Splat { .. } => problems.push((
                    format!("`* =>` cannot give the arguments of defined type `{kind}`: write each by name"),
                    entry.span,
                )),
                // The init stage rejects appends in a resource body.
                ResEntryKind::Append { .. } => {}
            }
        }
        for (name, _, span) in &given {
            if !params.iter().any(|p| p.name.name == name.name) {
                problems.push((unknown_param(callee, params, &name.name), *span));
            }
        }
        let named: BTreeSet<&str> = given.iter().map(|(n, _, _)| n.name.as_str()).collect();
        let defaulted =
            self.instance_defaults(fid, &res.kind.name, &kind, &named, &mut metas, params, callee, &mut problems);

        // The params, in order, each default seeing the title and the params to its left.
        let title_frame = self.new_frame(Frame::child(def.frame));
        for word in ["name", "title"] {
            self.frame_mut(title_frame).vars.insert(word.to_string(), VarEntry::Node(title_node, None));
        }
        let param_frame = self.new_frame(Frame::child(title_frame));
        let mut bound = Vec::with_capacity(params.len());
        let mut missing = Vec::new();
        for p in params {
            let default = p.default.as_ref().map(|d| self.expr(param_frame, d));
            let param = self.graph.add_param(p.name.name.clone(), p.name.span);
            let node = self.graph.add(NodeKind::Param(param), p.name.span);
            let node = match &p.ann {
                Some(ann) => {
                    self.graph.checked.push(node);
                    self.annotate(param_frame, node, ann, Some(&format!("${}", p.name.name)))
                }
                None => node,
            };
            self.frame_mut(param_frame).vars.insert(p.name.name.clone(), VarEntry::Node(node, Some(p.name.span)));
            self.usage.param(param_frame, &p.name);
            // The values the instance gives are checked where they are written too, so a
            // constant outside an enum is a `tend check` error at the instance.
            let label = format!("${}", p.name.name);
            let at_instance = |this: &mut Self, (value, span): (NodeId, Span)| match &p.ann {
                Some(ann) => (this.guard(param_frame, value, ann, Some(&label)), span),
                None => (value, span),
            };
            let given = given.iter().find(|(n, _, _)| n.name == p.name.name).map(|(_, node, span)| (*node, *span));
            let given = given.map(|g| at_instance(self, g));
            let defaulted = defaulted.iter().find(|(n, _, _)| **n == p.name.name).map(|(_, node, span)| (*node, *span));
            let defaulted = defaulted.map(|d| at_instance(self, d));
            let sources = [given.map(|g| g.0), defaulted.map(|d| d.0), default];
            self.graph.param_values.insert(param, sources.into_iter().flatten().collect());
            if given.is_none() && defaulted.is_none() && default.is_none() {
                missing.push(format!("`${}`", p.name.name));
            }
            bound.push(IrInstanceParam {
                name: p.name.name.clone(),
                param,
                node,
                given,
                defaulted,
                default,
                span: p.name.span,
            });
        }
        if let Some(info) = self.graph.defines.get_mut(&kind) {
            info.bound.push(bound.iter().map(|p| p.param).collect());
        }
        if !missing.is_empty() {
            let noun = if missing.len() == 1 { "argument" } else { "arguments" };
            problems.push((format!("missing {noun} {} for defined type `{kind}`", missing.join(", ")), stmt.span));
        }
        if !problems.is_empty() {
            let signature = signature(self.sources, callee, params);
            for (message, at) in problems {
                self.error(
                    Diagnostic::new(Stage::SetScope, message, at)
                        .with_code(Code::CallArgs)
                        .with_label(def.name.span, "defined type defined here")
                        .with_note(format!("signature: define {signature}")),
                );
            }
            return None;
        }

        // The body, once for every title the walk binds.
        let owner_key = (def.frame, kind.clone());
        if self.define_active(&owner_key) > 0 {
            self.recursion(stmt.span);
            return None;
        }
        if !self.enter(stmt.span, || format!("the instance of defined type `{kind}`")) {
            return None;
        }
        self.set_define_active(&owner_key, 1);
        self.include_chain.push(stmt.span);
        let chain = self.include_chain.clone();
        let include = crate::ir::IrInclude { class: kind.clone(), body: def.body.span, chain, instance: true };
        self.graph.includes.push(include);
        let body_frame = self.new_frame(Frame::child(param_frame));
        self.declare(body_frame, &def.body.stmts);
        self.force_binds_in_order(body_frame, &def.body.stmts);
        let mut body = self.block_stmts(body_frame, &def.body.stmts, Vec::new());
        self.finish(body_frame);
        self.include_chain.pop();
        self.set_define_active(&owner_key, -1);
        self.leave();

        for edge in edges {
            let me = IrEdgeHalf { kind: kind.clone(), name: title_node, field: None, span: res.kind.span };
            let target = self.edge_half(fid, edge.target);
            let (first, second, notify) = match edge.prop {
                EdgeProp::Before => (me, target, false),
                EdgeProp::Notify => (me, target, true),
                EdgeProp::Depend => (target, me, false),
                EdgeProp::Listen => (target, me, true),
            };
            let side = |half: IrEdgeHalf| IrSide { refs: vec![half], collector: None };
            let link = IrEdgeLink { notify, backward: false };
            let span = edge.target.span;
            let relation = IrStmt::Edge(IrEdge { sides: vec![side(first), side(second)], links: vec![link], span });
            match edge.cond {
                None => body.push(relation),
                Some(cond) => {
                    let cond = self.expr(fid, cond);
                    body.push(IrStmt::If { cond, then: vec![relation], els: Vec::new(), span });
                }
            }
        }
        Some(IrStmt::Instance(Box::new(IrInstance {
            kind,
            kind_span: res.kind.span,
            titles,
            title,
            params: bound,
            metas,
            virtuality: res.virtuality,
            classes: self.enclosing_classes(fid),
            body,
            span: stmt.span,
        })))
    }

    /// The arguments `Kind { … }` defaults statements around frame `fid` give an instance
    /// of defined type `kind` (written `written`), for the params it does not give itself:
    /// innermost first, as for resources. Their meta params join `metas` unless set.
    #[allow(clippy::too_many_arguments)]
    fn instance_defaults(
        &mut self,
        fid: FrameId,
        written: &str,
        kind: &str,
        named: &BTreeSet<&str>,
        metas: &mut Vec<IrMeta>,
        params: &[ast::Param],
        callee: Callee<'_>,
        problems: &mut Vec<(String, Span)>,
    ) -> Vec<(&'a String, NodeId, Span)> {
        let mut out: Vec<(&'a String, NodeId, Span)> = Vec::new();
        if !self.any_defaults {
            return out;
        }
        let mut given: BTreeSet<std::sync::Arc<str>> = named.iter().map(|n| std::sync::Arc::from(*n)).collect();
        let mut given_metas: BTreeSet<String> = metas.iter().filter_map(|m| m.name.clone()).collect();
        let mut frame = Some(fid);
        while let Some(id) = frame {
            let blocks: Vec<&'a [ast::ResEntry]> = self
                .frame(id)
                .defaults
                .iter()
                .filter(|d| d.kind == written || d.kind == kind)
                .map(|d| d.entries)
                .collect();
            for entries in blocks {
                for entry in entries {
                    if let ResEntryKind::Field { name, cond, .. } = &entry.kind {
                        if cond.is_some() {
                            problems.push((
                                format!("a default for defined type `{kind}` cannot be conditional (`cond ?: value`)"),
                                entry.span,
                            ));
                        } else if !params.iter().any(|p| p.name.name == name.name) {
                            problems.push((unknown_param(callee, params, &name.name), entry.span));
                        }
                    }
                }
                let (fields, new_metas) = self.default_entries(id, entries, &given, &given_metas);
                for field in fields {
                    let Some(name) = entries.iter().find_map(|e| match &e.kind {
                        ResEntryKind::Field { name, cond: None, .. } if *name.name == *field.name => Some(&name.name),
                        _ => None,
                    }) else {
                        continue;
                    };
                    given.insert(field.name.clone());
                    out.push((name, field.value, field.span));
                }
                given_metas.extend(new_metas.iter().filter_map(|m| m.name.clone()));
                metas.extend(new_metas);
            }
            frame = self.frame(id).parent;
        }
        out
    }

    /// How many instances of the define kept in `frame` as `kind` are being elaborated.
    fn define_active(&self, (frame, kind): &(FrameId, String)) -> u32 {
        self.frame(*frame).defines.get(kind).map_or(0, |d| d.active)
    }

    fn set_define_active(&mut self, (frame, kind): &(FrameId, String), delta: i32) {
        if let Some(d) = self.frame_mut(*frame).defines.get_mut(kind) {
            d.active = d.active.saturating_add_signed(delta);
        }
    }
}

/// "defined type `vhost` has no param `$x`", with a did-you-mean.
fn unknown_param(callee: Callee<'_>, params: &[ast::Param], name: &str) -> String {
    let mut message = format!("{} `{}` has no param `${name}`", callee.word, callee.name.name);
    if let Some(close) = crate::suggest::did_you_mean(name, params.iter().map(|p| p.name.name.as_str())) {
        message.push_str(&format!(" (did you mean `{close}`?)"));
    }
    message
}
