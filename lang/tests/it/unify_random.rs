//! Random function graphs: unification never panics, always terminates, and when it
//! reports nothing every reachable node has a concrete type (and every unreachable one
//! has none).

use crate::unify_support as support;

use lang::ir::{FuncGraph, IrStmt, NodeId, NodeKind, Op, ParamId};
use lang::syntax::ast::BinOp;
use lang::value::Value;
use proptest::prelude::*;
use support::*;

/// One node, with inputs as offsets back from the node being built (always valid).
#[derive(Clone, Debug)]
enum Gen {
    Int(i64),
    Str(u8),
    Bool(bool),
    EmptyList,
    List(Vec<usize>),
    Map(Vec<(usize, usize)>),
    Struct(Vec<(u8, usize)>),
    Param(u8),
    Interp(Vec<usize>),
    Call(u8, Vec<usize>),
    CallValue(usize, Vec<usize>),
    Lambda(Vec<u8>, usize),
    If(usize, usize, usize),
    Op(u8, usize, usize),
    Except(usize, usize),
    Index(usize, usize),
    Field(usize, u8),
    FieldOr(usize, u8, usize),
}

const FUNCS: [&str; 6] = ["len", "fmt.printf", "map.lookup", "iter.map", "strings.to_upper", "nosuch"];
const FIELDS: [&str; 3] = ["a", "b", "c"];
const OPS: [BinOp; 10] =
    [BinOp::Add, BinOp::Sub, BinOp::Div, BinOp::Lt, BinOp::Eq, BinOp::And, BinOp::Or, BinOp::In, BinOp::Mul, BinOp::Ne];

fn gen_node() -> impl Strategy<Value = Gen> {
    let back = || 1usize..6;
    prop_oneof![
        (-3i64..3).prop_map(Gen::Int),
        (0u8..3).prop_map(Gen::Str),
        any::<bool>().prop_map(Gen::Bool),
        Just(Gen::EmptyList),
        prop::collection::vec(back(), 1..3).prop_map(Gen::List),
        prop::collection::vec((back(), back()), 1..3).prop_map(Gen::Map),
        prop::collection::vec((0u8..3, back()), 0..3).prop_map(Gen::Struct),
        (0u8..3).prop_map(Gen::Param),
        prop::collection::vec(back(), 1..3).prop_map(Gen::Interp),
        (0u8..6, prop::collection::vec(back(), 0..3)).prop_map(|(f, a)| Gen::Call(f, a)),
        (back(), prop::collection::vec(back(), 0..3)).prop_map(|(c, a)| Gen::CallValue(c, a)),
        (prop::collection::vec(0u8..3, 0..3), back()).prop_map(|(p, b)| Gen::Lambda(p, b)),
        (back(), back(), back()).prop_map(|(c, t, e)| Gen::If(c, t, e)),
        (0u8..11, back(), back()).prop_map(|(o, a, b)| Gen::Op(o, a, b)),
        (back(), back()).prop_map(|(a, b)| Gen::Except(a, b)),
        (back(), back()).prop_map(|(a, b)| Gen::Index(a, b)),
        (back(), 0u8..3).prop_map(|(a, f)| Gen::Field(a, f)),
        (back(), 0u8..3, back()).prop_map(|(a, f, d)| Gen::FieldOr(a, f, d)),
    ]
}

fn build(nodes: &[Gen], roots: &[(usize, usize)]) -> B {
    let mut b = B::new();
    let params: Vec<ParamId> = (0..3).map(|i| b.g.add_param(format!("p{i}"), sp(i))).collect();
    // A few constants first so that back references always land.
    for i in 0..6 {
        b.int(i);
    }
    for g in nodes {
        let here = b.g.nodes.len();
        let at = |off: usize| NodeId((here - off) as u32);
        let kind = match g {
            Gen::Int(i) => NodeKind::Const(Value::Int(*i)),
            Gen::Str(s) => NodeKind::Const(Value::str(format!("%{}", ["d", "s", "v"][*s as usize]))),
            Gen::Bool(v) => NodeKind::Const(Value::Bool(*v)),
            Gen::EmptyList => NodeKind::List(vec![]),
            Gen::List(items) => NodeKind::List(items.iter().map(|o| at(*o)).collect()),
            Gen::Map(entries) => NodeKind::Map(entries.iter().map(|(k, v)| (at(*k), at(*v))).collect()),
            Gen::Struct(fields) => {
                let mut seen = Vec::new();
                let mut out = Vec::new();
                for (f, v) in fields {
                    if !seen.contains(f) {
                        seen.push(*f);
                        out.push((FIELDS[*f as usize].to_string(), at(*v)));
                    }
                }
                NodeKind::Struct(out)
            }
            Gen::Param(p) => NodeKind::Param(params[*p as usize]),
            Gen::Interp(parts) => NodeKind::Interp(parts.iter().map(|o| at(*o)).collect()),
            Gen::Call(f, args) => {
                NodeKind::Call { func: FUNCS[*f as usize].into(), args: args.iter().map(|o| at(*o)).collect() }
            }
            Gen::CallValue(c, args) => {
                NodeKind::CallValue { callee: at(*c), args: args.iter().map(|o| at(*o)).collect() }
            }
            Gen::Lambda(ps, body) => {
                let mut seen: Vec<ParamId> = Vec::new();
                for p in ps {
                    if !seen.contains(&params[*p as usize]) {
                        seen.push(params[*p as usize]);
                    }
                }
                NodeKind::Lambda { params: seen, body: at(*body) }
            }
            Gen::If(c, t, e) => NodeKind::If { cond: at(*c), then: at(*t), els: at(*e) },
            Gen::Op(o, x, y) => match OPS.get(*o as usize) {
                Some(op) => NodeKind::Op { op: Op::Bin(*op), args: vec![at(*x), at(*y)] },
                None => NodeKind::Op { op: Op::Not, args: vec![at(*x)] },
            },
            Gen::Except(x, y) => NodeKind::Except { lhs: at(*x), rhs: at(*y) },
            Gen::Index(x, y) => NodeKind::Index { base: at(*x), index: at(*y) },
            Gen::Field(x, f) => NodeKind::Field { base: at(*x), field: FIELDS[*f as usize].into() },
            Gen::FieldOr(x, f, d) => {
                NodeKind::FieldOr { base: at(*x), field: FIELDS[*f as usize].into(), default: at(*d) }
            }
        };
        b.node(kind);
    }
    let n = b.g.nodes.len();
    for (which, off) in roots {
        let node = NodeId((n - 1 - off % n) as u32);
        match which % 4 {
            0 => b.use_any(node),
            1 => {
                b.use_str(node);
            }
            2 => {
                b.res("test", node, vec![]);
            }
            _ => {
                let span = b.stmt_span();
                b.g.stmts.push(IrStmt::If { cond: node, then: vec![], els: vec![], span });
            }
        }
    }
    b
}

fn reachable(g: &FuncGraph) -> Vec<bool> {
    let mut seen = vec![false; g.nodes.len()];
    let mut stack = Vec::new();
    fn stmt_roots(s: &IrStmt, out: &mut Vec<NodeId>) {
        match s {
            IrStmt::Resource(r) => {
                out.push(r.name);
                out.extend(r.fields.iter().map(|f| f.value));
            }
            IrStmt::If { cond, then, els, .. } => {
                out.push(*cond);
                then.iter().chain(els).for_each(|s| stmt_roots(s, out));
            }
            _ => {}
        }
    }
    for s in &g.stmts {
        stmt_roots(s, &mut stack);
    }
    while let Some(n) = stack.pop() {
        if std::mem::replace(&mut seen[n.0 as usize], true) {
            continue;
        }
        match &g.node(n).kind {
            NodeKind::Const(_) | NodeKind::Param(_) => {}
            NodeKind::List(v) | NodeKind::Interp(v) => stack.extend(v),
            NodeKind::Map(e) => e.iter().for_each(|(k, v)| stack.extend([*k, *v])),
            NodeKind::Struct(f) => stack.extend(f.iter().map(|(_, v)| *v)),
            NodeKind::Call { args, .. } | NodeKind::Op { args, .. } => stack.extend(args),
            NodeKind::CallValue { callee, args } => {
                stack.push(*callee);
                stack.extend(args);
            }
            NodeKind::Inline { body, .. } | NodeKind::Lambda { body, .. } => stack.push(*body),
            NodeKind::Construct(c) => {
                stack.push(c.value);
                stack.extend(c.checks.iter().map(|c| c.node));
            }
            NodeKind::Dispatch(d) => {
                stack.extend(&d.args);
                stack.extend(&d.candidates);
            }
            NodeKind::If { cond, then, els } => stack.extend([*cond, *then, *els]),
            NodeKind::Except { lhs, rhs } => stack.extend([*lhs, *rhs]),
            NodeKind::Index { base, index } => stack.extend([*base, *index]),
            NodeKind::Field { base, .. } => stack.push(*base),
            NodeKind::FieldOr { base, default, .. } => stack.extend([*base, *default]),
        }
    }
    seen
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn unify_is_total_and_types_everything_reachable(
        nodes in prop::collection::vec(gen_node(), 1..25),
        roots in prop::collection::vec((0usize..4, 0usize..30), 1..4),
    ) {
        let mut b = build(&nodes, &roots);
        let diags = b.unify(&catalog());
        prop_assert!(diags.iter().all(|d| d.stage == lang::diag::Stage::Unify && d.span.is_some()));
        let seen = reachable(&b.g);
        for (i, reached) in seen.iter().enumerate() {
            let ty = b.g.types.get(i);
            if !reached {
                prop_assert!(ty.is_none(), "unreachable node {i} typed");
            } else if diags.is_empty() {
                prop_assert!(ty.is_some_and(|t| t.is_concrete()), "node {i} untyped without errors");
            }
        }
        let _ = lang::graph_check::check(&b.g);
    }
}
