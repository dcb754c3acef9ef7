//! Lambdas and loops: per-environment evaluation, per-element caching for higher-order
//! built-ins (through `Caller`), `CallValue`, and `for` statements.

use crate::runtime_support;

use funcs::api::Host;
use funcs::runtime::{Dataflow, first_output};
use lang::ir::{IrStmt, NodeKind};
use lang::syntax::ast::BinOp;
use lang::types::Type;
use lang::value::Value;
use runtime_support::*;

/// `test.map($list, func($x) { count(tag, $x + 1) })` with `$list` from a stream.
fn map_graph(list_id: &str, tag: &str) -> G {
    let mut g = G::new();
    let list = g.input(list_id, list_ty(Type::Int));
    let (x, px) = g.param("x", Type::Int);
    let one = g.int(1);
    let plus = g.bin(BinOp::Add, px, one, Type::Int);
    let body = g.count(tag, plus, Type::Int);
    let lambda = g.node(NodeKind::Lambda { params: vec![x], body }, Type::func(vec![Type::Int], Type::Int));
    let mapped = g.call("test.map", vec![list, lambda], list_ty(Type::Int));
    g.output("out", mapped);
    g
}

#[tokio::test]
async fn map_reevaluates_only_the_changed_element() {
    let g = map_graph("map.l", "map.body");
    set("map.l", ints(&[1, 2, 3, 4]));
    let mut df = Dataflow::start(g.finish(), registry(), Host::default());
    let out = next(&mut df).await.expect("no error");
    assert_eq!(v(&out, "out"), Some(ints(&[2, 3, 4, 5])));
    assert_eq!(count("map.body"), 4);

    set("map.l", ints(&[1, 2, 30, 4]));
    until(&mut df, |o| v(o, "out") == Some(ints(&[2, 3, 31, 5]))).await;
    assert_eq!(count("map.body"), 5, "only the changed element's body runs");
    assert_eq!(count("map.body=31"), 1);

    set("map.l", ints(&[4, 1, 2, 30, 7]));
    until(&mut df, |o| v(o, "out") == Some(ints(&[5, 2, 3, 31, 8]))).await;
    assert_eq!(count("map.body"), 6, "reordering reuses cached elements; only 7 is new");
    df.shutdown().await;
}

#[tokio::test]
async fn removed_elements_are_dropped_and_come_back_fresh() {
    let g = map_graph("drop.l", "drop.body");
    set("drop.l", ints(&[1, 2]));
    let mut df = Dataflow::start(g.finish(), registry(), Host::default());
    next(&mut df).await.expect("no error");
    set("drop.l", ints(&[1]));
    until(&mut df, |o| v(o, "out") == Some(ints(&[2]))).await;
    set("drop.l", ints(&[1, 2]));
    until(&mut df, |o| v(o, "out") == Some(ints(&[2, 3]))).await;
    assert_eq!(count("drop.body=3"), 2, "element 2 was collected when removed, so it ran again");
    assert_eq!(count("drop.body=2"), 1);
    df.shutdown().await;
}

#[tokio::test]
async fn streams_inside_a_lambda_run_per_element_and_stop_with_it() {
    // test.map($ids, func($id) { test.input($id) })
    let mut g = G::new();
    let ids = g.input("lam.ids", list_ty(Type::Str));
    let (p, pid) = g.param("id", Type::Str);
    let body = g.call("test.input", vec![pid], Type::Int);
    let lambda = g.node(NodeKind::Lambda { params: vec![p], body }, Type::func(vec![Type::Str], Type::Int));
    let mapped = g.call("test.map", vec![ids, lambda], list_ty(Type::Int));
    g.output("out", mapped);
    set("lam.e1", Value::Int(10));
    set("lam.e2", Value::Int(20));
    set("lam.ids", Value::list(vec![Value::str("lam.e1"), Value::str("lam.e2")]));
    let mut df = Dataflow::start(g.finish(), registry(), Host::default());
    let out = next(&mut df).await.expect("no error");
    assert_eq!(v(&out, "out"), Some(ints(&[10, 20])));
    set("lam.e2", Value::Int(21));
    until(&mut df, |o| v(o, "out") == Some(ints(&[10, 21]))).await;
    set("lam.ids", Value::list(vec![Value::str("lam.e1")]));
    until(&mut df, |o| v(o, "out") == Some(ints(&[10]))).await;
    assert!(eventually(|| live("lam.e2") == 0).await, "the removed element's stream is cancelled");
    assert_eq!(live("lam.e1"), 1);
    df.shutdown().await;
}

#[tokio::test]
async fn call_value_and_captured_parameters() {
    // $adder = func($a) { func($b) { $a + $b } }; $adder(s)(100)
    let mut g = G::new();
    let (a, pa) = g.param("a", Type::Int);
    let (b, pb) = g.param("b", Type::Int);
    let sum = g.bin(BinOp::Add, pa, pb, Type::Int);
    let inner = g.node(NodeKind::Lambda { params: vec![b], body: sum }, Type::func(vec![Type::Int], Type::Int));
    let outer = g.node(
        NodeKind::Lambda { params: vec![a], body: inner },
        Type::func(vec![Type::Int], Type::func(vec![Type::Int], Type::Int)),
    );
    let s = g.input("cv.s", Type::Int);
    let add_s = g.node(NodeKind::CallValue { callee: outer, args: vec![s] }, Type::func(vec![Type::Int], Type::Int));
    let hundred = g.int(100);
    let result = g.node(NodeKind::CallValue { callee: add_s, args: vec![hundred] }, Type::Int);
    g.output("out", result);
    set("cv.s", Value::Int(5));
    let mut df = Dataflow::start(g.finish(), registry(), Host::default());
    assert_eq!(v(&next(&mut df).await.expect("no error"), "out"), Some(Value::Int(105)));
    set("cv.s", Value::Int(6));
    until(&mut df, |o| v(o, "out") == Some(Value::Int(106))).await;
    df.shutdown().await;
}

#[tokio::test]
async fn for_statement_walks_the_body_per_element() {
    // for $i, $v in ["a", "b"] { test "${v}-${i}" { v => count($v) } }
    let mut g = G::new();
    let a = g.str("a");
    let b = g.str("b");
    let list = g.node(NodeKind::List(vec![a, b]), list_ty(Type::Str));
    let (pi, ni) = g.param("i", Type::Int);
    let (pv, nv) = g.param("v", Type::Str);
    let dash = g.str("-");
    let name = g.node(NodeKind::Interp(vec![nv, dash, ni]), Type::Str);
    let counted = g.count("for.body", nv, Type::Str);
    g.g.stmts.push(IrStmt::For {
        iter: list,
        key: pi,
        value: pv,
        kv: false,
        body: vec![resource(name, counted)],
        span: Default::default(),
    });
    let out = first_output(g.finish(), registry(), Host::default(), WAIT).await.expect("no error");
    assert_eq!(names(&out), vec!["a-0", "b-1"]);
    assert_eq!(v(&out, "b-1"), Some(Value::str("b")));
    assert_eq!(count("for.body"), 2);
}

#[tokio::test]
async fn a_replaced_element_among_many_is_wired_for_later_changes() {
    // test.map($ids, func($id) { test.input($id) }) over 40 ids (past the small-list
    // paths of the dependency bookkeeping); replace one id, then change the new one.
    let mut g = G::new();
    let ids = g.input("many.ids", list_ty(Type::Str));
    let (p, pid) = g.param("id", Type::Str);
    let body = g.call("test.input", vec![pid], Type::Int);
    let lambda = g.node(NodeKind::Lambda { params: vec![p], body }, Type::func(vec![Type::Str], Type::Int));
    let mapped = g.call("test.map", vec![ids, lambda], list_ty(Type::Int));
    g.output("out", mapped);
    let id_list = |ids: &[String]| Value::list(ids.iter().map(Value::str).collect());
    let mut names: Vec<String> = (0..40).map(|i| format!("many.{i}")).collect();
    for (i, n) in names.iter().enumerate() {
        set(n, Value::Int(i as i64));
    }
    set("many.new", Value::Int(1000));
    set("many.ids", id_list(&names));
    let mut df = Dataflow::start(g.finish(), registry(), Host::default());
    next(&mut df).await.expect("no error");
    names[7] = "many.new".into();
    set("many.ids", id_list(&names));
    let expect = |x: i64| {
        let mut want: Vec<i64> = (0..40).collect();
        want[7] = x;
        ints(&want)
    };
    until(&mut df, |o| v(o, "out") == Some(expect(1000))).await;
    assert!(eventually(|| live("many.7") == 0).await);
    set("many.new", Value::Int(1001));
    until(&mut df, |o| v(o, "out") == Some(expect(1001))).await;
    df.shutdown().await;
}
