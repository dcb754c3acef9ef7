//! Change propagation: glitch freedom, equal-value cut-off, and re-evaluating only
//! what is downstream of a change.

use crate::runtime_support;

use funcs::api::Host;
use funcs::runtime::Dataflow;
use lang::types::Type;
use lang::value::Value;
use runtime_support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diamond_never_sees_a_mix_of_old_and_new() {
    // s -> a = s+1, b = s+1 -> record(a, b): every call must see a == b.
    let mut g = G::new();
    let s = g.input("diamond.s", Type::Int);
    let a = g.add1(s);
    let b = g.add1(s);
    let tag = g.str("diamond");
    let joined = g.call("test.record", vec![tag, a, b], Type::Int);
    g.output("out", joined);
    set("diamond.s", Value::Int(1));
    let mut df = Dataflow::start(g.finish(), registry(), Host::default());
    let out = next(&mut df).await.expect("no error");
    assert_eq!(v(&out, "out"), Some(Value::Int(2)));
    for i in 2..=20 {
        set("diamond.s", Value::Int(i));
        until(&mut df, |o| v(o, "out") == Some(Value::Int(i + 1))).await;
    }
    let calls = recorded("diamond");
    assert!(calls.iter().all(|c| c[0] == c[1]), "glitch: {calls:?}");
    // Once per distinct value of `s` at most (values may coalesce, never repeat).
    assert!(calls.len() <= 20, "record ran {} times for 20 values", calls.len());
    assert_eq!(calls.last(), Some(&vec![Value::Int(21), Value::Int(21)]));
    df.shutdown().await;
}

#[tokio::test]
async fn an_equal_value_does_not_wake_dependants() {
    // s -> parity = s % 2 -> count("cutoff", parity); also `raw => s` to observe s.
    let mut g = G::new();
    let s = g.input("cutoff.s", Type::Int);
    let parity = g.call("test.mod2", vec![s], Type::Int);
    let counted = g.count("cutoff", parity, Type::Int);
    g.output("parity", counted);
    g.output("raw", s);
    set("cutoff.s", Value::Int(1));
    let mut df = Dataflow::start(g.finish(), registry(), Host::default());
    next(&mut df).await.expect("no error");
    assert_eq!(count("cutoff"), 1);
    set("cutoff.s", Value::Int(3));
    let out = until(&mut df, |o| v(o, "raw") == Some(Value::Int(3))).await;
    assert_eq!(v(&out, "parity"), Some(Value::Int(1)));
    assert_eq!(count("cutoff"), 1, "parity did not change, so count must not re-run");
    set("cutoff.s", Value::Int(4));
    let out = until(&mut df, |o| v(o, "raw") == Some(Value::Int(4))).await;
    assert_eq!(v(&out, "parity"), Some(Value::Int(0)));
    assert_eq!(count("cutoff"), 2);
    df.shutdown().await;
}

#[tokio::test]
async fn a_change_reevaluates_only_what_is_downstream() {
    let mut g = G::new();
    let s1 = g.input("down.s1", Type::Int);
    let s2 = g.input("down.s2", Type::Int);
    let a = g.add1(s1);
    let a = g.count("down.a", a, Type::Int);
    let b = g.add1(s2);
    let b = g.count("down.b", b, Type::Int);
    let sum = g.bin(lang::syntax::ast::BinOp::Add, a, b, Type::Int);
    let sum = g.count("down.sum", sum, Type::Int);
    g.output("a", a);
    g.output("b", b);
    g.output("sum", sum);
    set("down.s1", Value::Int(10));
    set("down.s2", Value::Int(20));
    let mut df = Dataflow::start(g.finish(), registry(), Host::default());
    let out = next(&mut df).await.expect("no error");
    assert_eq!(v(&out, "sum"), Some(Value::Int(32)));
    assert_eq!((count("down.a"), count("down.b"), count("down.sum")), (1, 1, 1));
    let before = df.evaluations();
    set("down.s1", Value::Int(11));
    let out = until(&mut df, |o| v(o, "sum") == Some(Value::Int(33))).await;
    assert_eq!(v(&out, "b"), Some(Value::Int(21)));
    assert_eq!((count("down.a"), count("down.b"), count("down.sum")), (2, 1, 2));
    // s1, add1, count, +, count: five computations and nothing on the s2 side.
    assert_eq!(df.evaluations() - before, 5);
    df.shutdown().await;
}

#[tokio::test]
async fn static_nodes_are_computed_once() {
    // A constant sub-graph shared by two outputs is computed once, and not again when
    // an unrelated stream changes.
    let mut g = G::new();
    let one = g.int(1);
    let shared = g.add1(one);
    let shared = g.count("static.shared", shared, Type::Int);
    let s = g.input("static.s", Type::Int);
    let x = g.bin(lang::syntax::ast::BinOp::Add, shared, s, Type::Int);
    g.output("x", x);
    g.output("y", shared);
    set("static.s", Value::Int(0));
    let mut df = Dataflow::start(g.finish(), registry(), Host::default());
    next(&mut df).await.expect("no error");
    set("static.s", Value::Int(5));
    until(&mut df, |o| v(o, "x") == Some(Value::Int(7))).await;
    assert_eq!(count("static.shared"), 1);
    df.shutdown().await;
}

#[tokio::test]
async fn a_deep_chain_does_not_overflow_the_stack() {
    const DEEP: usize = 20_000;
    let mut g = G::new();
    let mut x = g.input("deep.s", Type::Int);
    for _ in 0..DEEP {
        x = g.add1(x);
    }
    g.output("out", x);
    set("deep.s", Value::Int(0));
    let mut df = Dataflow::start(g.finish(), registry(), Host::default());
    assert_eq!(v(&next(&mut df).await.expect("no error"), "out"), Some(Value::Int(DEEP as i64)));
    set("deep.s", Value::Int(1));
    until(&mut df, |o| v(o, "out") == Some(Value::Int(DEEP as i64 + 1))).await;
    df.shutdown().await;
}

#[tokio::test]
async fn a_too_deep_chain_is_an_error_not_a_crash() {
    let mut g = G::new();
    let mut x = g.int(0);
    for _ in 0..45_000 {
        x = g.add1(x);
    }
    g.output("out", x);
    let err = funcs::runtime::first_output(g.finish(), registry(), Host::default(), WAIT).await.expect_err("too deep");
    assert!(err.message.starts_with("expression nested too deeply"), "{}", err.message);
}
