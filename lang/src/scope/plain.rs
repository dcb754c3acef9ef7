//! Plain resources: resource statements of literals only (no condition, no edge), taken
//! out of their block before elaboration and lowered in their place, each dropped once
//! lowered. A large block's second half of them is lowered on a thread of its own.

use super::Ctx;
use super::expr::{ShortStrs, is_literal};
use super::frame::FrameId;
use crate::ir::{FuncGraph, IrField, IrMeta, IrResource, IrStmt, Node, NodeId, NodeKind};
use crate::span::Span;
use crate::syntax::ast::{self, ResEntryKind, StmtKind};

/// A resource statement taken out of its block by [`take_plain`].
pub(super) struct Plain {
    /// How many of the block's remaining statements come before it.
    before: usize,
    /// Boxed: each frees its own memory once lowered.
    stmt: Box<ast::Stmt>,
}

/// Something lowered in its block's statement order.
pub(super) trait Placed {
    /// How many of the block's remaining statements come before it.
    fn before(&self) -> usize;
}

impl Placed for Plain {
    fn before(&self) -> usize {
        self.before
    }
}

/// Takes the plain resources out of `stmts`. Lowering one keeps no reference to its
/// syntax, so [`Ctx::block_with`] drops each once lowered: a large program's syntax tree
/// and function graph are never both whole. The other statements stay, in order.
pub(super) fn take_plain(stmts: &mut Vec<ast::Stmt>) -> Vec<Plain> {
    let count = stmts.iter().filter(|s| is_plain(s)).count();
    if count == 0 {
        return Vec::new();
    }
    let mut kept = Vec::with_capacity(stmts.len() - count);
    let mut plain = Vec::with_capacity(count);
    for stmt in std::mem::take(stmts) {
        if is_plain(&stmt) {
            plain.push(Plain { before: kept.len(), stmt: Box::new(stmt) });
        } else {
            kept.push(stmt);
        }
    }
    *stmts = kept;
    plain
}

fn is_plain(stmt: &ast::Stmt) -> bool {
    let StmtKind::Resource(res) = &stmt.kind else { return false };
    is_literal(&res.name.kind)
        && res.entries.iter().all(|e| match &e.kind {
            ResEntryKind::Field { cond: None, value, .. } | ResEntryKind::Meta { cond: None, value, .. } => {
                is_literal(&value.kind)
            }
            _ => false,
        })
}

impl Ctx<'_> {
    /// A resource [`take_plain`] took out, lowered in its place with what its frame gives
    /// it (defaults, classes); the statement is dropped on return.
    pub(super) fn plain_resource(&mut self, fid: FrameId, plain: Plain, out: &mut Vec<IrStmt>) {
        let StmtKind::Resource(res) = &plain.stmt.kind else { return };
        let graph = &mut self.graph;
        let mut ir = lower(res, plain.stmt.span, &mut self.short_strs, &mut |kind, span| graph.add(kind, span));
        self.enclose_resource(fid, &mut ir);
        out.push(IrStmt::Resource(ir));
    }
}

/// A plain resource's IR, its nodes made by `add` in source order: the name's, then each
/// entry's value.
fn lower(
    res: &ast::Resource,
    span: Span,
    strs: &mut ShortStrs,
    add: &mut dyn FnMut(NodeKind, Span) -> NodeId,
) -> IrResource {
    let mut literal = |strs: &mut ShortStrs, e: &ast::Expr| {
        let value = strs.literal(&e.kind).expect("`take_plain` takes resources of literals only");
        add(NodeKind::Const(value), e.span)
    };
    let name = literal(strs, &res.name);
    // Sized to the body's fields: they live as long as the function graph.
    let written = res.entries.iter().filter(|e| matches!(e.kind, ResEntryKind::Field { .. })).count();
    let mut fields = Vec::with_capacity(written);
    let mut metas = Vec::new();
    for entry in &res.entries {
        match &entry.kind {
            ResEntryKind::Field { name: field, value, .. } => {
                let value = literal(strs, value);
                let name = strs.shared(&field.name);
                fields.push(IrField { origin: Default::default(), name, value, cond: None, span: entry.span });
            }
            ResEntryKind::Meta { name: meta, value, .. } => {
                let value = literal(strs, value);
                metas.push(IrMeta { name: meta.as_ref().map(|m| m.name.clone()), value, cond: None, span: entry.span });
            }
            ResEntryKind::Edge { .. } | ResEntryKind::Append { .. } | ResEntryKind::Splat { .. } => {
                unreachable!("`take_plain` takes resources without edges, appends or splats")
            }
        }
    }
    IrResource {
        kind: res.kind.name.clone(),
        kind_span: res.kind.span,
        name,
        fields,
        edges: Vec::new(),
        metas,
        collect: res.collect,
        virtuality: res.virtuality,
        classes: Vec::new(),
        span,
    }
}

/// Plain resources lowered away from the context, on a thread of their own (those of a
/// frame nothing around reaches, see [`Ctx::bare`]: their syntax is all they need). Their
/// nodes are numbered from 0 here; [`Adopter::adopt`] moves them into the function graph.
pub(super) struct Lowered {
    nodes: Vec<Node>,
    resources: Vec<Detached>,
}

/// One resource of [`Lowered`]; its nodes follow those of the resources before it.
pub(super) struct Detached {
    before: usize,
    ir: IrResource,
    /// How many nodes it made.
    count: u32,
}

impl Placed for Detached {
    fn before(&self) -> usize {
        self.before
    }
}

impl Lowered {
    pub(super) fn of(plain: Vec<Plain>) -> Lowered {
        let mut strs = ShortStrs::default();
        let made = plain.iter().map(|p| match &p.stmt.kind {
            StmtKind::Resource(res) => 1 + res.entries.len(),
            _ => 0,
        });
        let mut nodes = Vec::with_capacity(made.sum());
        let mut resources = Vec::with_capacity(plain.len());
        for p in plain {
            let StmtKind::Resource(res) = &p.stmt.kind else { continue };
            let first = nodes.len() as u32;
            let ir = lower(res, p.stmt.span, &mut strs, &mut |kind, span| {
                nodes.push(Node { kind, span });
                NodeId(nodes.len() as u32 - 1)
            });
            resources.push(Detached { before: p.before, ir, count: nodes.len() as u32 - first });
        }
        Lowered { nodes, resources }
    }

    /// The resources, in order, and what adopts each into the function graph.
    pub(super) fn into_parts(self) -> (Vec<Detached>, Adopter) {
        (self.resources, Adopter { nodes: self.nodes.into_iter(), taken: 0 })
    }
}

/// Moves the nodes of [`Lowered`] resources into the function graph, one resource at a
/// time, in their order.
pub(super) struct Adopter {
    nodes: std::vec::IntoIter<Node>,
    /// How many nodes the resources adopted so far took: the next one's first is this.
    taken: u32,
}

impl Adopter {
    /// `d`'s IR, its nodes appended to `graph` and its ids moved to where they landed.
    pub(super) fn adopt(&mut self, graph: &mut FuncGraph, d: Detached) -> IrResource {
        let (first, base) = (self.taken, graph.nodes.len() as u32);
        graph.nodes.extend(self.nodes.by_ref().take(d.count as usize));
        self.taken += d.count;
        let moved = |id: NodeId| NodeId(id.0 - first + base);
        let mut ir = d.ir;
        ir.name = moved(ir.name);
        for field in &mut ir.fields {
            field.value = moved(field.value);
        }
        for meta in &mut ir.metas {
            meta.value = moved(meta.value);
        }
        ir
    }
}
