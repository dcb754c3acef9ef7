//! Probing, for `tend why`: a copy of a function graph with a *probe* statement beside each
//! resource statement of one kind. A probe is a synthetic resource that carries the value
//! of every node of the statement's provenance trees (each under the conditions it is
//! evaluated under, in the same `if`/`for` context), so one run of the dataflow gives the
//! values the trees are made of; [`readings`] reads them back from that run's output.

use std::collections::{BTreeMap, HashMap};

use super::{Builder, Enclosing, Entry, Gate, Located, What};
use crate::ir::{FuncGraph, IrField, IrResource, IrStmt, NodeId, NodeKind, Op};
use crate::output::ResDecl;
use crate::span::Span;
use crate::syntax::ast::BinOp;
use crate::types::Type;
use crate::value::Value;

/// Prefix of the kinds of probe statements (a NUL can't start a real kind).
const PROBE: &str = "\u{0}why:";
/// The value a probe carries when its node failed with an error caught by `<|>`.
pub const FAILED: &str = "\u{0}why:failed";

/// Whether `kind` is a probe's, not the program's.
pub fn is_probe(kind: &str) -> bool {
    kind.starts_with(PROBE)
}

/// The probe field that carries node `n`.
pub fn field(n: NodeId) -> String {
    format!("n{}", n.0)
}

/// One param (or meta) of a probed statement.
pub struct Param {
    /// The param's name, or `Meta:x`.
    pub name: String,
    pub meta: bool,
    /// The `field => value` entry.
    pub span: Span,
    /// The tree of its condition (`field => cond ?: value`), if any.
    pub cond: Option<Entry>,
    pub value: Entry,
}

/// The provenance trees of one resource statement and the nodes to probe.
pub struct Plan {
    pub name: Entry,
    pub params: Vec<Param>,
    /// Every node to probe with the gates it is evaluated under.
    probes: BTreeMap<NodeId, Vec<Gate>>,
}

impl Plan {
    pub fn build(b: &mut Builder<'_>, l: &Located<'_>) -> Plan {
        b.reset();
        let r = l.resource;
        let name = b.tree(r.name, "name", &[]);
        let mut params = Vec::new();
        for f in &r.fields {
            let cond = f.cond.map(|c| b.tree(c, "condition", &[]));
            let gates: Vec<Gate> = f.cond.map(|c| vec![(c, true)]).unwrap_or_default();
            let value = b.tree(f.value, "value", &gates);
            params.push(Param { name: f.name.to_string(), meta: false, span: f.span, cond, value });
        }
        for m in &r.metas {
            let cond = m.cond.map(|c| b.tree(c, "condition", &[]));
            let gates: Vec<Gate> = m.cond.map(|c| vec![(c, true)]).unwrap_or_default();
            let name = m.name.as_ref().map_or("Meta".to_string(), |n| format!("Meta:{n}"));
            let value = b.tree(m.value, "value", &gates);
            params.push(Param { name, meta: true, span: m.span, cond, value });
        }
        let mut probes = BTreeMap::new();
        let mut add = |e: &Entry| collect_probes(e, &mut probes);
        add(&name);
        for p in &params {
            if let Some(c) = &p.cond {
                add(c);
            }
            add(&p.value);
        }
        for enc in &l.enclosing {
            if let Enclosing::If { cond, .. } = enc {
                probes.entry(*cond).or_insert_with(Vec::new);
            }
        }
        Plan { name, params, probes }
    }

    /// The streaming facts its name depends on (outside lambda bodies).
    pub fn name_facts(&self) -> Vec<String> {
        facts_in(&self.name)
    }
}

fn facts_in(e: &Entry) -> Vec<String> {
    let mut out = Vec::new();
    if let What::Fact(f) = &e.what {
        out.push(f.clone());
    }
    for c in &e.children {
        out.extend(facts_in(c));
    }
    out
}

fn collect_probes(e: &Entry, out: &mut BTreeMap<NodeId, Vec<Gate>>) {
    if e.per_call {
        return;
    }
    match out.get_mut(&e.node) {
        // Evaluated unconditionally somewhere: the weakest condition wins.
        Some(g) if e.gates.is_empty() => g.clear(),
        Some(_) => {}
        None => {
            out.insert(e.node, e.gates.clone());
        }
    }
    for c in &e.children {
        collect_probes(c, out);
    }
}

/// A copy of `graph` with a probe statement after each located resource statement.
pub fn with_probes(graph: &FuncGraph, located: &[Located<'_>], plans: &[Plan]) -> FuncGraph {
    let mut g = graph.clone();
    g.types.resize(g.nodes.len());
    let add = |g: &mut FuncGraph, kind: NodeKind, ty: Option<Type>, span: Span| {
        let id = g.add(kind, span);
        g.types.set(id.0 as usize, ty);
        id
    };
    let marker = add(&mut g, NodeKind::Const(Value::str(FAILED)), Some(Type::Str), Span::default());
    let mut probe_stmts = Vec::new();
    for (l, plan) in located.iter().zip(plans) {
        let r = l.resource;
        let mut fields = Vec::new();
        let mut gate_nodes: HashMap<Vec<Gate>, NodeId> = HashMap::new();
        for (node, gates) in &plan.probes {
            let span = graph.node(*node).span;
            let cond = if gates.is_empty() {
                None
            } else if let Some(c) = gate_nodes.get(gates) {
                Some(*c)
            } else {
                let mut acc: Option<NodeId> = None;
                for (c, holds) in gates {
                    let one = if *holds {
                        *c
                    } else {
                        add(&mut g, NodeKind::Op { op: Op::Not, args: vec![*c] }, Some(Type::Bool), span)
                    };
                    acc = Some(match acc {
                        None => one,
                        Some(a) => add(
                            &mut g,
                            NodeKind::Op { op: Op::Bin(BinOp::And), args: vec![a, one] },
                            Some(Type::Bool),
                            span,
                        ),
                    });
                }
                if let Some(c) = acc {
                    gate_nodes.insert(gates.clone(), c);
                }
                acc
            };
            let ty = graph.ty(*node).cloned();
            let value = add(&mut g, NodeKind::Except { lhs: *node, rhs: marker }, ty, span);
            fields.push(IrField { origin: Default::default(), name: field(*node).into(), value, cond, span });
        }
        // The loop variables of every enclosing `for`, the title of every instance.
        for enc in &l.enclosing {
            let (params, span) = match enc {
                Enclosing::For { key, value, span, .. } => (vec![*key, *value], *span),
                Enclosing::Instance { title, span, .. } => (vec![*title], *span),
                Enclosing::If { .. } => continue,
            };
            for p in params {
                let node = add(&mut g, NodeKind::Param(p), None, span);
                fields.push(IrField {
                    origin: Default::default(),
                    name: format!("p{}", p.0).into(),
                    value: node,
                    cond: None,
                    span,
                });
            }
        }
        probe_stmts.push((
            l.id,
            IrStmt::Resource(IrResource {
                kind: format!("{PROBE}{}", l.id),
                kind_span: r.kind_span,
                name: r.name,
                fields,
                edges: Vec::new(),
                metas: Vec::new(),
                collect: false,
                virtuality: Default::default(),
                classes: Vec::new(),
                span: r.span,
            }),
        ));
    }
    // Last first, so that the numbering of the ones before stays valid.
    for (id, stmt) in probe_stmts.into_iter().rev() {
        if let Some((list, i)) = super::statement_slot(&mut g.stmts, id) {
            list.insert(i + 1, stmt);
        }
    }
    g
}

/// What the probes beside each located statement carried in a run whose output declared
/// `resources`, for the productions named `name`: (index into `located`, one map of probe
/// field to value per production), only for the statements that produced it.
pub fn readings(
    resources: &[ResDecl],
    located: &[Located<'_>],
    name: &str,
) -> Vec<(usize, Vec<BTreeMap<String, Value>>)> {
    let mut found = Vec::new();
    for (i, l) in located.iter().enumerate() {
        let probe_kind = format!("{PROBE}{}", l.id);
        let runs: Vec<BTreeMap<String, Value>> = resources
            .iter()
            .filter(|d| d.kind == probe_kind && d.name == name)
            .map(|d| d.params.iter().map(|(k, v, _)| (k.clone(), v.clone())).collect())
            .collect();
        if !runs.is_empty() {
            found.push((i, runs));
        }
    }
    found
}
