//! Settling, stream inputs, shutdown, and the shape of the output (resources, metas,
//! body edges, edge statements).

use crate::runtime_support;

use std::time::Duration;

use funcs::api::Host;
use funcs::runtime::{Dataflow, first_output};
use lang::ir::{
    EdgeProp, IrBodyEdge, IrEdge, IrEdgeHalf, IrEdgeLink, IrField, IrMeta, IrResource, IrSide, IrStmt, NodeKind,
};
use lang::output::EdgeEnd;
use lang::types::Type;
use lang::value::Value;
use runtime_support::*;

#[tokio::test]
async fn no_snapshot_until_every_needed_stream_has_a_value() {
    let mut g = G::new();
    let a = g.input("settle.a", Type::Int);
    let b = g.input("settle.b", Type::Int);
    g.output("a", a);
    g.output("b", b);
    set("settle.a", Value::Int(1));
    let mut df = Dataflow::start(g.finish(), registry(), Host::default());
    let early = tokio::time::timeout(Duration::from_millis(200), df.next()).await;
    assert!(early.is_err(), "settled while settle.b had no value: {early:?}");
    assert!(eventually(|| live("settle.b") == 1).await, "both streams run while waiting");
    set("settle.b", Value::Int(2));
    let out = next(&mut df).await.expect("no error");
    assert_eq!((v(&out, "a"), v(&out, "b")), (Some(Value::Int(1)), Some(Value::Int(2))));
    df.shutdown().await;
}

#[tokio::test]
async fn stream_inputs_follow_their_arguments() {
    // echo(s + 1): the echo task sees every new argument.
    let mut g = G::new();
    let s = g.input("echo.s", Type::Int);
    let s1 = g.add1(s);
    let e = g.call("test.echo", vec![s1], Type::Int);
    g.output("out", e);
    set("echo.s", Value::Int(1));
    let mut df = Dataflow::start(g.finish(), registry(), Host::default());
    assert_eq!(v(&next(&mut df).await.expect("no error"), "out"), Some(Value::Int(2)));
    set("echo.s", Value::Int(41));
    until(&mut df, |o| v(o, "out") == Some(Value::Int(42))).await;
    df.shutdown().await;
}

#[tokio::test]
async fn shutdown_cancels_streams_and_awaits_their_tasks() {
    let mut g = G::new();
    let id = g.str("stop.1");
    let s = g.call("test.slowstop", vec![id], Type::Int);
    g.output("out", s);
    let mut df = Dataflow::start(g.finish(), registry(), Host::default());
    assert_eq!(v(&next(&mut df).await.expect("no error"), "out"), Some(Value::Int(1)));
    assert!(!slowstop_finished("stop.1"));
    df.shutdown().await;
    assert!(slowstop_finished("stop.1"), "shutdown returned before the task finished");
}

#[tokio::test]
async fn first_output_times_out_without_values() {
    let mut g = G::new();
    let s = g.input("timeout.never", Type::Int);
    g.output("out", s);
    let err = first_output(g.finish(), registry(), Host::default(), Duration::from_millis(100))
        .await
        .expect_err("never settles");
    assert_eq!(err.stage, lang::diag::Stage::Stream);
    assert!(err.message.contains("timeout"), "{}", err.message);
}

#[tokio::test]
async fn unchanged_output_is_not_repeated() {
    let mut g = G::new();
    let s = g.input("repeat.s", Type::Int);
    let parity = g.call("test.mod2", vec![s], Type::Int);
    g.output("p", parity);
    set("repeat.s", Value::Int(1));
    let mut df = Dataflow::start(g.finish(), registry(), Host::default());
    next(&mut df).await.expect("no error");
    set("repeat.s", Value::Int(3));
    let again = tokio::time::timeout(Duration::from_millis(200), df.next()).await;
    assert!(again.is_err(), "an identical snapshot was published: {again:?}");
    set("repeat.s", Value::Int(4));
    until(&mut df, |o| v(o, "p") == Some(Value::Int(0))).await;
    df.shutdown().await;
}

#[tokio::test]
async fn resources_with_list_names_elvis_fields_metas_and_edges() {
    let mut g = G::new();
    let n1 = g.str("r1");
    let n2 = g.str("r2");
    let names_node = g.node(NodeKind::List(vec![n1, n2]), list_ty(Type::Str));
    let yes = g.node(NodeKind::Const(Value::Bool(true)), Type::Bool);
    let no = g.node(NodeKind::Const(Value::Bool(false)), Type::Bool);
    let val = g.int(7);
    let meta = g.node(
        NodeKind::Const(Value::strukt(vec![("noop".into(), Value::Bool(true)), ("retry".into(), Value::Int(3))])),
        Type::Struct(vec![("noop".into(), Type::Bool), ("retry".into(), Type::Int)]),
    );
    let target = g.str("t");
    let field = |name: &str, cond| IrField {
        origin: Default::default(),
        name: name.into(),
        value: val,
        cond,
        span: Default::default(),
    };
    g.g.stmts.push(IrStmt::Resource(IrResource {
        kind: "test".into(),
        kind_span: Default::default(),
        name: names_node,
        fields: vec![field("kept", Some(yes)), field("dropped", Some(no)), field("plain", None)],
        edges: vec![
            IrBodyEdge {
                prop: EdgeProp::Before,
                cond: Some(yes),
                target: IrEdgeHalf { kind: "test".into(), name: target, field: None, span: Default::default() },
                span: Default::default(),
            },
            IrBodyEdge {
                prop: EdgeProp::Depend,
                cond: Some(no),
                target: IrEdgeHalf { kind: "test".into(), name: target, field: None, span: Default::default() },
                span: Default::default(),
            },
        ],
        metas: vec![
            IrMeta { name: Some("poll".into()), value: val, cond: None, span: Default::default() },
            IrMeta { name: None, value: meta, cond: None, span: Default::default() },
        ],
        collect: false,
        virtuality: Default::default(),
        classes: Vec::new(),
        span: Default::default(),
    }));
    let half = |name| IrEdgeHalf { kind: "test".into(), name, field: None, span: Default::default() };
    g.g.stmts.push(IrStmt::Edge(IrEdge {
        sides: [names_node, target, n1].into_iter().map(|n| IrSide { refs: vec![half(n)], collector: None }).collect(),
        links: vec![IrEdgeLink { notify: false, backward: false }; 2],
        span: Default::default(),
    }));
    let out = first_output(g.finish(), registry(), Host::default(), WAIT).await.expect("no error");
    assert_eq!(names(&out), vec!["r1", "r2"]);
    let r = &out.resources[1];
    let params: Vec<&str> = r.params.iter().map(|(n, ..)| n.as_str()).collect();
    assert_eq!(params, vec!["kept", "plain"]);
    let metas: Vec<(&str, &Value)> = r.metas.iter().map(|(n, v, _)| (n.as_str(), v)).collect();
    assert_eq!(metas, vec![("poll", &Value::Int(7)), ("noop", &Value::Bool(true)), ("retry", &Value::Int(3))]);
    assert_eq!(r.edges.len(), 1);
    assert_eq!((r.edges[0].prop, r.edges[0].name.as_str()), (EdgeProp::Before, "t"));
    let end = |name: &str| EdgeEnd {
        kind: "test".into(),
        name: name.into(),
        field: None,
        span: Default::default(),
        collector: None,
    };
    let pairs: Vec<(EdgeEnd, EdgeEnd)> = out.edges.iter().map(|e| (e.from.clone(), e.to.clone())).collect();
    assert_eq!(pairs, vec![(end("r1"), end("t")), (end("r2"), end("t")), (end("t"), end("r1"))]);
}

#[tokio::test]
async fn a_stream_that_ends_without_a_value_is_an_error() {
    let mut g = G::new();
    let q = g.call("test.quit", vec![], Type::Int);
    g.output("out", q);
    let err = first_output(g.finish(), registry(), Host::default(), WAIT).await.expect_err("fails");
    assert_eq!(err.stage, lang::diag::Stage::Stream);
    assert_eq!(err.message, "func `test.quit` stopped before it was loaded");
    assert_eq!(err.span, Some(G::span_of(q)));
}

#[tokio::test]
async fn a_graph_without_streams_is_released_once_its_output_is_out() {
    // Nothing can change a graph of constants: the evaluator thread drops the function graph
    // (and every computed value) as soon as the output is published.
    let mut g = G::new();
    let one = g.int(1);
    let two = g.add1(one);
    g.output("two", two);
    let graph = g.finish();
    let mut df = Dataflow::start(graph.clone(), registry(), Host::default());
    let out = next(&mut df).await.expect("no error");
    assert_eq!(v(&out, "two"), Some(Value::Int(2)));
    assert!(eventually(|| std::sync::Arc::strong_count(&graph) == 1).await, "the engine still holds the graph");
    // It still answers a shutdown.
    df.shutdown().await;
}

#[tokio::test]
async fn a_graph_with_a_stream_is_kept() {
    let mut g = G::new();
    let s = g.input("kept.s", Type::Int);
    g.output("s", s);
    set("kept.s", Value::Int(1));
    let graph = g.finish();
    let mut df = Dataflow::start(graph.clone(), registry(), Host::default());
    next(&mut df).await.expect("no error");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(std::sync::Arc::strong_count(&graph) > 1, "a graph with a live stream was released");
    set("kept.s", Value::Int(5));
    let out = until(&mut df, |o| v(o, "s") == Some(Value::Int(5))).await;
    assert_eq!(v(&out, "s"), Some(Value::Int(5)));
    df.shutdown().await;
}
