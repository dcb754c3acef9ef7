//! Lazy control flow and errors: `if` evaluates one branch, `<|>` its fallback only on a
//! catchable error, uncaught errors become errStream diagnostics at the failing node.

use crate::runtime_support;

use funcs::api::Host;
use funcs::runtime::{Dataflow, first_output};
use lang::diag::Stage;
use lang::ir::{IrStmt, NodeKind};
use lang::syntax::ast::BinOp;
use lang::types::Type;
use lang::value::Value;
use runtime_support::*;

#[tokio::test]
async fn if_expression_switches_branches_and_stops_the_inactive_one() {
    let mut g = G::new();
    let cond = g.input("ifx.cond", Type::Bool);
    let a = g.input("ifx.a", Type::Int);
    let a = g.count("ifx.then", a, Type::Int);
    let b = g.int(100);
    let b = g.count("ifx.else", b, Type::Int);
    let choice = g.node(NodeKind::If { cond, then: a, els: b }, Type::Int);
    g.output("out", choice);
    set("ifx.cond", Value::Bool(false));
    set("ifx.a", Value::Int(1));
    let mut df = Dataflow::start(g.finish(), registry(), Host::default());
    let out = next(&mut df).await.expect("no error");
    assert_eq!(v(&out, "out"), Some(Value::Int(100)));
    assert_eq!((count("ifx.then"), count("ifx.else")), (0, 1));
    assert_eq!(live("ifx.a"), 0, "the then-branch stream must not start");

    set("ifx.cond", Value::Bool(true));
    until(&mut df, |o| v(o, "out") == Some(Value::Int(1))).await;
    assert!(eventually(|| live("ifx.a") == 1).await);
    set("ifx.a", Value::Int(2));
    until(&mut df, |o| v(o, "out") == Some(Value::Int(2))).await;

    set("ifx.cond", Value::Bool(false));
    until(&mut df, |o| v(o, "out") == Some(Value::Int(100))).await;
    assert!(eventually(|| live("ifx.a") == 0).await, "leaving the branch cancels its stream");
    assert_eq!(count("ifx.then"), 2);
    df.shutdown().await;
}

#[tokio::test]
async fn if_statement_outputs_only_the_active_branch() {
    let mut g = G::new();
    let cond = g.input("ifs.cond", Type::Bool);
    let yes = g.str("yes");
    let no = g.str("no");
    let boom = g.str("never evaluated");
    let boom = g.call("test.fatal", vec![boom], Type::Int);
    let one = g.int(1);
    g.g.stmts.push(IrStmt::If {
        cond,
        then: vec![resource(yes, one)],
        els: vec![resource(no, boom)],
        span: Default::default(),
    });
    set("ifs.cond", Value::Bool(true));
    let mut df = Dataflow::start(g.finish(), registry(), Host::default());
    let out = next(&mut df).await.expect("the inactive branch's error must not happen");
    assert_eq!(names(&out), vec!["yes"]);
    set("ifs.cond", Value::Bool(false));
    let err = next(&mut df).await.expect_err("the else branch fails once active");
    assert_eq!(err.message, "never evaluated");
    df.shutdown().await;
}

#[tokio::test]
async fn except_uses_the_fallback_only_for_catchable_errors() {
    // ["a", "b"][i] <|> count("exc.rhs", "fallback")
    let mut g = G::new();
    let a = g.str("a");
    let b = g.str("b");
    let list = g.node(NodeKind::List(vec![a, b]), list_ty(Type::Str));
    let i = g.input("exc.i", Type::Int);
    let idx = g.node(NodeKind::Index { base: list, index: i }, Type::Str);
    let fb = g.str("fallback");
    let fb = g.count("exc.rhs", fb, Type::Str);
    let caught = g.node(NodeKind::Except { lhs: idx, rhs: fb }, Type::Str);
    g.output("out", caught);
    set("exc.i", Value::Int(1));
    let mut df = Dataflow::start(g.finish(), registry(), Host::default());
    let out = next(&mut df).await.expect("no error");
    assert_eq!(v(&out, "out"), Some(Value::str("b")));
    assert_eq!(count("exc.rhs"), 0, "rhs is not evaluated while lhs succeeds");
    set("exc.i", Value::Int(7));
    until(&mut df, |o| v(o, "out") == Some(Value::str("fallback"))).await;
    assert_eq!(count("exc.rhs"), 1);
    set("exc.i", Value::Int(0));
    until(&mut df, |o| v(o, "out") == Some(Value::str("a"))).await;
    df.shutdown().await;
}

#[tokio::test]
async fn catchable_errors_flow_downstream_to_the_nearest_except() {
    // (list(1 / x) <|> [0.5]) : the division error passes through the list literal.
    let mut g = G::new();
    let one = g.int(1);
    let x = g.input("flow.x", Type::Int);
    let div = g.bin(BinOp::Div, one, x, Type::Float);
    let list = g.node(NodeKind::List(vec![div]), list_ty(Type::Float));
    let half = g.node(NodeKind::Const(Value::list(vec![Value::Float(0.5)])), list_ty(Type::Float));
    let caught = g.node(NodeKind::Except { lhs: list, rhs: half }, list_ty(Type::Float));
    g.output("out", caught);
    set("flow.x", Value::Int(4));
    let mut df = Dataflow::start(g.finish(), registry(), Host::default());
    let out = next(&mut df).await.expect("no error");
    assert_eq!(v(&out, "out"), Some(Value::list(vec![Value::Float(0.25)])));
    set("flow.x", Value::Int(0));
    until(&mut df, |o| v(o, "out") == Some(Value::list(vec![Value::Float(0.5)]))).await;
    df.shutdown().await;
}

#[tokio::test]
async fn an_uncaught_error_is_an_errstream_diagnostic_at_the_failing_node() {
    let mut g = G::new();
    let m = g.node(NodeKind::Const(Value::map(Default::default())), Type::map(Type::Int, Type::Str));
    let k = g.int(13);
    let lookup = g.node(NodeKind::Index { base: m, index: k }, Type::Str);
    g.output("out", lookup);
    let err = first_output(g.finish(), registry(), Host::default(), WAIT).await.expect_err("lookup fails");
    assert_eq!(err.stage, Stage::Stream);
    assert_eq!(err.message, "map key not present, want: 13 in {}");
    assert_eq!(err.span, Some(G::span_of(lookup)));
    assert!(!err.notes.is_empty(), "a note names what failed");
}

#[tokio::test]
async fn a_fatal_error_is_not_caught_and_keeps_its_origin() {
    let mut g = G::new();
    let msg = g.str("template failed");
    let bad = g.call("test.fatal", vec![msg], Type::Str);
    let fb = g.str("fallback");
    let caught = g.node(NodeKind::Except { lhs: bad, rhs: fb }, Type::Str);
    let interp = g.node(NodeKind::Interp(vec![caught]), Type::Str);
    g.output("out", interp);
    let err = first_output(g.finish(), registry(), Host::default(), WAIT).await.expect_err("fatal");
    assert_eq!(err.message, "template failed");
    assert_eq!(err.span, Some(G::span_of(bad)));
    assert!(err.notes.iter().any(|n| n.contains("test.fatal")), "{:?}", err.notes);
}

#[tokio::test]
async fn operators_lookups_and_literals() {
    let mut g = G::new();
    let a = g.int(7);
    let b = g.int(2);
    let sum = g.bin(BinOp::Add, a, b, Type::Int);
    let quot = g.bin(BinOp::Div, a, b, Type::Float);
    let s1 = g.str("x=");
    let shown = g.node(NodeKind::Interp(vec![s1, sum]), Type::Str);
    let f = g.node(
        NodeKind::Struct(vec![("a".into(), sum), ("b".into(), shown)]),
        Type::Struct(vec![("a".into(), Type::Int), ("b".into(), Type::Str)]),
    );
    let field = g.node(NodeKind::Field { base: f, field: "b".into() }, Type::Str);
    let dflt = g.int(0);
    let missing = g.node(NodeKind::FieldOr { base: f, field: "zzz".into(), default: dflt }, Type::Int);
    let k1 = g.str("k");
    let map = g.node(NodeKind::Map(vec![(k1, a), (k1, b)]), Type::map(Type::Str, Type::Int));
    let looked = g.node(NodeKind::Index { base: map, index: k1 }, Type::Int);
    g.output("quot", quot);
    g.output("field", field);
    g.output("missing", missing);
    g.output("looked", looked);
    let out = first_output(g.finish(), registry(), Host::default(), WAIT).await.expect("no error");
    assert_eq!(v(&out, "quot"), Some(Value::Float(3.5)));
    assert_eq!(v(&out, "field"), Some(Value::str("x=9")));
    assert_eq!(v(&out, "missing"), Some(Value::Int(0)));
    assert_eq!(v(&out, "looked"), Some(Value::Int(2)), "a later duplicate key wins");
}

#[tokio::test]
async fn an_error_inside_a_lambda_is_reported_at_its_call() {
    // func($x) { test.fatal($x) }("boom"): reported at the call, labelled inside.
    let mut g = G::new();
    let (x, px) = g.param("x", Type::Str);
    let body = g.call("test.fatal", vec![px], Type::Str);
    let lambda = g.node(NodeKind::Lambda { params: vec![x], body }, Type::func(vec![Type::Str], Type::Str));
    let arg = g.str("boom");
    let call = g.node(NodeKind::CallValue { callee: lambda, args: vec![arg] }, Type::Str);
    g.output("out", call);
    let err = first_output(g.finish(), registry(), Host::default(), WAIT).await.expect_err("fails");
    assert_eq!(err.message, "boom");
    assert_eq!(err.span, Some(G::span_of(call)));
    assert_eq!(err.labels.first().map(|l| l.span), Some(G::span_of(body)));
    assert!(err.notes.iter().any(|n| n.contains("test.fatal")), "{:?}", err.notes);
}

#[tokio::test]
async fn a_panicking_builtin_becomes_a_diagnostic_at_its_call() {
    let mut g = G::new();
    let bad = g.call("test.panic", vec![], Type::Int);
    g.output("out", bad);
    let err = first_output(g.finish(), registry(), Host::default(), WAIT).await.expect_err("fails");
    assert_eq!(err.stage, Stage::Stream);
    assert_eq!(err.message, "function `test.panic` panicked: this built-in is broken");
    assert_eq!(err.span, Some(G::span_of(bad)));
}
