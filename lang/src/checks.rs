//! The checks of declared types on values known at compile time (stage errUnify, after
//! unification): a construction whose attributes are literals (or arithmetic on them) is
//! checked by `tend check`, so `vhost{port => 70000}` never reaches a host. What depends
//! on a function call or a stream is checked when it runs.

use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::ir::{FuncGraph, IrCheck, NodeId, NodeKind, Op};
use crate::syntax::ast::BinOp;
use crate::value::Value;

/// How deep a constant expression is followed; deeper ones are left to the run.
const MAX_DEPTH: usize = 64;

/// Every check of every construction whose inputs are constants and that fails.
pub fn constant(graph: &FuncGraph) -> Diagnostics {
    let mut diags = Diagnostics::new();
    for (i, node) in graph.nodes.iter().enumerate() {
        let NodeKind::Construct { ty, checks, .. } = &node.kind else { continue };
        // Unreached constructions were never typed, nor will they run.
        if graph.types.get(i).is_none_or(Option::is_none) {
            continue;
        }
        for check in checks {
            if eval(graph, check.node, 0) == Some(Value::Bool(false)) {
                diags.push(failure(graph, ty, check, node.span));
            }
        }
    }
    diags
}

fn failure(graph: &FuncGraph, ty: &str, check: &IrCheck, at: crate::span::Span) -> Diagnostic {
    match &check.attr {
        Some((name, value)) => {
            let shown = eval(graph, *value, 0).map_or_else(|| "?".to_string(), |v| v.to_string());
            Diagnostic::new(Stage::Unify, format!("{name}: {shown} {}", check.what), graph.node(*value).span)
                .with_code(Code::CheckFailed)
                .with_label(check.span, format!("declared by type `{ty}`"))
        }
        None => Diagnostic::new(Stage::Unify, check.what.clone(), at)
            .with_code(Code::CheckFailed)
            .with_label(check.span, format!("invariant of type `{ty}`")),
    }
}

/// The value of `node` when it is made of constants only, else `None`.
pub fn eval(graph: &FuncGraph, node: NodeId, depth: usize) -> Option<Value> {
    if depth > MAX_DEPTH {
        return None;
    }
    let sub = |n: &NodeId| eval(graph, *n, depth + 1);
    match &graph.node(node).kind {
        NodeKind::Const(v) => Some(v.clone()),
        NodeKind::List(items) => items.iter().map(sub).collect::<Option<Vec<_>>>().map(Value::list),
        NodeKind::Inline { body, .. } => sub(body),
        NodeKind::If { cond, then, els } => match sub(cond)? {
            Value::Bool(true) => sub(then),
            Value::Bool(false) => sub(els),
            _ => None,
        },
        NodeKind::Op { op: Op::Not, args } => Some(Value::Bool(!sub(args.first()?)?.as_bool()?)),
        NodeKind::Op { op: Op::Bin(BinOp::And), args } => match sub(args.first()?)?.as_bool()? {
            false => Some(Value::Bool(false)),
            true => Some(Value::Bool(sub(args.get(1)?)?.as_bool()?)),
        },
        NodeKind::Op { op: Op::Bin(BinOp::Or), args } => match sub(args.first()?)?.as_bool()? {
            true => Some(Value::Bool(true)),
            false => Some(Value::Bool(sub(args.get(1)?)?.as_bool()?)),
        },
        NodeKind::Op { op: Op::Bin(op), args } => binary(*op, &sub(args.first()?)?, &sub(args.get(1)?)?),
        _ => None,
    }
}

fn binary(op: BinOp, a: &Value, b: &Value) -> Option<Value> {
    use Value::{Bool, Float, Int};
    Some(match (op, a, b) {
        (BinOp::Eq, a, b) => Bool(a == b),
        (BinOp::Ne, a, b) => Bool(a != b),
        (BinOp::In, a, Value::List(items)) => Bool(items.contains(a)),
        (BinOp::In, Value::Str(a), Value::Str(b)) => Bool(b.contains(&**a)),
        (BinOp::Add, Int(x), Int(y)) => Int(x.checked_add(*y)?),
        (BinOp::Sub, Int(x), Int(y)) => Int(x.checked_sub(*y)?),
        (BinOp::Mul, Int(x), Int(y)) => Int(x.checked_mul(*y)?),
        (BinOp::Add, Float(x), Float(y)) => Float(x + y),
        (BinOp::Sub, Float(x), Float(y)) => Float(x - y),
        (BinOp::Mul, Float(x), Float(y)) => Float(x * y),
        (BinOp::Add, Value::Str(x), Value::Str(y)) => Value::str(format!("{x}{y}")),
        (BinOp::Lt, Int(x), Int(y)) => Bool(x < y),
        (BinOp::Gt, Int(x), Int(y)) => Bool(x > y),
        (BinOp::Le, Int(x), Int(y)) => Bool(x <= y),
        (BinOp::Ge, Int(x), Int(y)) => Bool(x >= y),
        (BinOp::Lt, Float(x), Float(y)) => Bool(x < y),
        (BinOp::Gt, Float(x), Float(y)) => Bool(x > y),
        (BinOp::Le, Float(x), Float(y)) => Bool(x <= y),
        (BinOp::Ge, Float(x), Float(y)) => Bool(x >= y),
        // Division (by zero and rounding are the runtime's) and the rest: at run time.
        _ => return None,
    })
}
