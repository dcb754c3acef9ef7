//! Interpretation of hand-built evaluation outputs into resource graphs: duplicates,
//! hidden and exported resources, edges, send/recv, meta params, validation and cycles.

use crate::unify_support as support;

use lang::diag::{Diagnostic, Stage};
use lang::interpret::{Remote, interpret, interpret_owned};
use lang::ir::EdgeProp;
use lang::output::{BodyEdge, EdgeDecl, EdgeEnd, Output, ResDecl};
use lang::resgraph::ResGraph;
use lang::span::Span;
use lang::value::Value;
use support::{catalog, sp};

struct O {
    out: Output,
    n: usize,
}

impl O {
    fn new() -> O {
        O { out: Output::default(), n: 0 }
    }
    fn span(&mut self) -> Span {
        self.n += 1;
        sp(self.n)
    }
    fn res(&mut self, kind: &str, name: &str, params: &[(&str, Value)], metas: &[(&str, Value)]) -> Span {
        let span = self.span();
        let params = params.iter().map(|(n, v)| (n.to_string(), v.clone(), span)).collect();
        let metas = metas.iter().map(|(n, v)| (n.to_string(), v.clone(), span)).collect();
        self.out.resources.push(ResDecl {
            kind: kind.into(),
            name: name.into(),
            params,
            defaulted: vec![],
            metas,
            edges: vec![],
            collect: false,
            from: None,
            virtuality: Default::default(),
            classes: vec![],
            within: vec![],
            span,
        });
        span
    }
    fn body_edge(&mut self, prop: EdgeProp, kind: &str, name: &str) -> Span {
        let span = self.span();
        let last = self.out.resources.last_mut().unwrap();
        last.edges.push(BodyEdge { prop, kind: kind.into(), name: name.into(), span });
        span
    }
    fn edge(&mut self, from: (&str, &str, Option<&str>), to: (&str, &str, Option<&str>)) -> Span {
        let span = self.span();
        let end = |e: (&str, &str, Option<&str>)| EdgeEnd {
            kind: e.0.into(),
            name: e.1.into(),
            field: e.2.map(String::from),
            span,
            collector: None,
        };
        self.out.edges.push(EdgeDecl { from: end(from), to: end(to), notify: false, span });
        span
    }
    /// The graph and errors; the same whether the declarations are copied or moved into
    /// the graph (`interpret_owned`, where a failed one must keep its kind and name).
    fn run(&self) -> (ResGraph, Vec<Diagnostic>) {
        let (g, d) = interpret(&self.out, &catalog());
        let (owned, mut owned_diags, left_out) = interpret_owned(self.out.clone(), &catalog(), &Remote::default());
        for d in left_out {
            owned_diags.push(d);
        }
        assert_eq!(owned, g, "the moved declarations give the copied ones' graph");
        let d = d.into_vec();
        assert_eq!(owned_diags.into_vec(), d, "and the same errors");
        (g, d)
    }
    fn lines(&self) -> Vec<String> {
        let (g, d) = self.run();
        assert!(d.is_empty(), "{d:#?}");
        g.to_lines()
    }
    fn error(&self) -> Diagnostic {
        let (_, d) = self.run();
        assert_eq!(d.len(), 1, "{d:#?}");
        assert_eq!(d[0].stage, Stage::Interpret);
        d[0].clone()
    }
}

fn s(x: &str) -> Value {
    Value::str(x)
}

#[test]
fn vertices_and_edges_print_sorted() {
    let mut o = O::new();
    o.res("test", "t2", &[], &[]);
    o.res("test", "t1", &[], &[]);
    o.edge(("Test", "t1", None), ("Test", "t2", None));
    assert_eq!(
        o.lines(),
        ["Edge: test[t1] -> test[t2] # test[t1] -> test[t2]", "Vertex: test[t1]", "Vertex: test[t2]"]
    );
}

#[test]
fn identical_duplicates_collapse() {
    let mut o = O::new();
    o.res("test", "a", &[("anotherstr", s("x"))], &[]);
    o.res("test", "a", &[("anotherstr", s("x"))], &[]);
    assert_eq!(o.lines(), ["Vertex: test[a]"]);
}

#[test]
fn differing_duplicates_are_rejected_with_both_spans() {
    let mut o = O::new();
    let first = o.res("file", "/tmp/x", &[("content", s("a"))], &[]);
    let second = o.res("file", "/tmp/x", &[("content", s("b"))], &[]);
    let d = o.error();
    assert_eq!(
        d.message,
        "inequivalent duplicate resource `file[/tmp/x]` found: param `content` differs: \"a\" vs \"b\""
    );
    assert_eq!(d.span, Some(second));
    assert!(d.labels.iter().any(|l| l.span == first));

    let mut o = O::new();
    o.res("test", "a", &[], &[("noop", Value::Bool(true))]);
    o.res("test", "a", &[], &[]);
    assert_eq!(
        o.error().message,
        "inequivalent duplicate resource `test[a]` found: meta param `noop` differs: true vs false"
    );
}

#[test]
fn hidden_duplicates() {
    let mut o = O::new();
    let hidden = [("hidden", Value::Bool(true))];
    o.res("test", "a", &[("anotherstr", s("x"))], &[]);
    o.res("test", "a", &[("anotherstr", s("y"))], &hidden);
    o.res("test", "a", &[("anotherstr", s("z"))], &hidden);
    o.res("test", "a", &[("anotherstr", s("y"))], &hidden);
    assert_eq!(o.lines(), ["Vertex: test[a]", "Vertex: test[a]", "Vertex: test[a]"]);
}

#[test]
fn exported_duplicates_must_be_equal() {
    let mut o = O::new();
    let export = [("export", Value::list(vec![s("h1")]))];
    o.res("test", "a", &[("anotherstr", s("x"))], &export);
    let second = o.res("test", "a", &[("anotherstr", s("y"))], &export);
    let d = o.error();
    assert_eq!(d.message, "inequivalent duplicate export: test[a] to h1: param `anotherstr` differs: \"x\" vs \"y\"");
    assert_eq!(d.span, Some(second));
}

#[test]
fn unknown_kinds_are_reported_at_the_statement() {
    let mut o = O::new();
    let span = o.res("notaresource", "t", &[], &[]);
    let d = o.error();
    assert_eq!(
        d.message,
        "error building resource: cannot create resource kind `notaresource` with name `t`: \
         no resource kind `notaresource` available"
    );
    assert_eq!(d.span, Some(span));
}

#[test]
fn body_edges_follow_their_property() {
    let mut o = O::new();
    o.res("test", "self", &[], &[]);
    o.body_edge(EdgeProp::Before, "Test", "before");
    o.body_edge(EdgeProp::Depend, "Test", "depend");
    o.body_edge(EdgeProp::Notify, "Test", "notify");
    o.body_edge(EdgeProp::Listen, "Test", "listen");
    o.body_edge(EdgeProp::Before, "Test", "notify");
    for n in ["before", "depend", "notify", "listen"] {
        o.res("test", n, &[], &[]);
    }
    let (g, d) = o.run();
    assert!(d.is_empty(), "{d:#?}");
    let key = |i: usize| g.vertices[i].key();
    let mut edges: Vec<(String, String, bool)> = g.edges.iter().map(|e| (key(e.from), key(e.to), e.notify)).collect();
    edges.sort();
    assert_eq!(
        edges,
        [
            ("test[depend]".to_string(), "test[self]".to_string(), false),
            ("test[listen]".to_string(), "test[self]".to_string(), true),
            ("test[self]".to_string(), "test[before]".to_string(), false),
            ("test[self]".to_string(), "test[notify]".to_string(), true),
        ]
    );
}

#[test]
fn edges_to_missing_resources() {
    let mut o = O::new();
    o.res("test", "real", &[], &[]);
    let span = o.edge(("Test", "missing1", None), ("Test", "real", None));
    let d = o.error();
    assert_eq!(d.message, "edge cannot find resource kind: test named: `missing1`");
    assert_eq!(d.span, Some(span));
}

#[test]
fn send_recv_is_attached_and_checked() {
    let mut o = O::new();
    o.res("test", "a", &[], &[]);
    o.res("test", "b", &[], &[]);
    o.edge(("Test", "a", Some("hello")), ("Test", "b", Some("anotherstr")));
    let (g, d) = o.run();
    assert!(d.is_empty());
    assert_eq!(g.edges.len(), 1);
    assert_eq!(g.edges[0].send_recv[0].send, "hello");
    assert_eq!(g.edges[0].send_recv[0].recv, "anotherstr");

    let mut o = O::new();
    o.res("exec", "exec0", &[], &[]);
    o.res("exec", "exec1", &[], &[]);
    o.res("file", "/tmp/out", &[], &[]);
    o.edge(("Exec", "exec0", Some("output")), ("File", "/tmp/out", Some("content")));
    let second = o.edge(("Exec", "exec1", Some("output")), ("File", "/tmp/out", Some("content")));
    let d = o.error();
    assert_eq!(d.message, "resource: `file[/tmp/out]` has duplicate receive on: `content` param");
    assert_eq!(d.span, Some(second));

    let mut o = O::new();
    o.res("test", "a", &[], &[("hidden", Value::Bool(true))]);
    o.res("test", "b", &[], &[]);
    o.edge(("Test", "a", Some("hello")), ("Test", "b", Some("anotherstr")));
    assert_eq!(o.error().message, "cannot send from hidden resource: test[a]");
}

#[test]
fn meta_params_are_decoded_and_validated() {
    let mut o = O::new();
    o.res("test", "a", &[], &[("retry", Value::Int(-1)), ("limit", Value::Float(2.5)), ("burst", Value::Int(3))]);
    let (g, d) = o.run();
    assert!(d.is_empty(), "{d:#?}");
    let m = &g.vertices[0].meta;
    assert_eq!((m.retry, m.limit, m.burst, m.autoedge), (-1, 2.5, 3, true));

    let cases: [(&[(&str, Value)], &str); 6] = [
        (&[("limit", Value::Float(1.0))], "burst must be non-zero"),
        (&[("sema", Value::list(vec![s("")]))], "sema id is empty"),
        (&[("sema", Value::list(vec![s("3")]))], "sema id `3` is only a number"),
        (&[("export", Value::list(vec![s("")]))], "export entry is empty"),
        (&[("retry", Value::Int(100_000))], "does not fit in int16"),
        (&[("delay", Value::Int(-5))], "must not be negative"),
    ];
    for (metas, want) in cases {
        let mut o = O::new();
        o.res("test", "a", &[], metas);
        let d = o.error();
        assert!(d.message.starts_with("test[a] did not Validate: "), "{}", d.message);
        assert!(d.message.contains(want), "{} should contain {want}", d.message);
    }
}

#[test]
fn dollar_names_need_the_dollar_meta() {
    let mut o = O::new();
    o.res("test", "$foo", &[], &[]);
    assert!(o.error().message.contains("starts with `$`"));
    let mut o = O::new();
    o.res("test", "$foo", &[], &[("dollar", Value::Bool(true))]);
    assert_eq!(o.lines(), ["Vertex: test[$foo]"]);
}

#[test]
fn cycles_are_rejected_naming_the_cycle() {
    let mut o = O::new();
    o.res("test", "a", &[], &[]);
    o.res("test", "b", &[], &[]);
    o.res("test", "c", &[], &[]);
    o.edge(("Test", "a", None), ("Test", "b", None));
    o.edge(("Test", "b", None), ("Test", "c", None));
    let closing = o.edge(("Test", "c", None), ("Test", "a", None));
    let d = o.error();
    assert_eq!(d.message, "resource graph has cycles: not a dag: test[a] -> test[b] -> test[c] -> test[a]");
    assert_eq!(d.code, Some(lang::diag::Code::ResourceCycle));
    assert_eq!(d.span, Some(closing));
}

#[test]
fn edges_are_deduplicated_with_notify_ored() {
    let mut o = O::new();
    o.res("test", "a", &[], &[]);
    o.body_edge(EdgeProp::Before, "Test", "b");
    o.body_edge(EdgeProp::Notify, "Test", "b");
    o.res("test", "b", &[], &[]);
    o.edge(("Test", "a", None), ("Test", "b", None));
    let (g, d) = o.run();
    assert!(d.is_empty());
    assert_eq!(g.edges.len(), 1);
    assert!(g.edges[0].notify);
}

#[test]
fn collected_resources_are_not_exported_again() {
    let mut o = O::new();
    let export = ("export", Value::list(vec![s("*")]));
    o.res("test", "a", &[], &[("hidden", Value::Bool(true)), export.clone()]);
    // The collect body says `Meta:export` too: a collected copy is never exported.
    o.res("test", "a", &[], &[("hidden", Value::Bool(false)), export]);
    o.out.resources[1].collect = true;
    let (g, d) = o.run();
    assert!(d.is_empty(), "{d:?}");
    let copy = g.vertices.iter().find(|v| v.collected).expect("the collected copy");
    assert!(copy.export().is_empty());
    assert!(!copy.hidden());

    // A collect that names what nothing exports gives no resource.
    let mut o = O::new();
    o.res("test", "b", &[], &[]);
    o.out.resources[0].collect = true;
    let (g, d) = o.run();
    assert!(d.is_empty() && g.vertices.is_empty(), "{d:?}");
}

#[test]
fn edges_to_resources_that_failed_are_not_reported_again() {
    let mut o = O::new();
    o.res("notaresource", "x", &[], &[]);
    o.res("test", "a", &[], &[]);
    o.body_edge(EdgeProp::Depend, "Notaresource", "x");
    o.edge(("Test", "a", None), ("Notaresource", "x", None));
    let d = o.error();
    assert!(d.message.contains("no resource kind `notaresource` available"), "{}", d.message);
}

#[test]
fn edges_to_a_resource_that_did_not_validate_are_not_reported_again() {
    // Its vertex was made (from the declaration's parts) before it failed: the edges still
    // find it failed, by kind and name, and stay silent.
    let mut o = O::new();
    o.res("test", "$a", &[("anotherstr", s("x"))], &[]);
    o.res("test", "b", &[], &[]);
    o.body_edge(EdgeProp::Depend, "Test", "$a");
    o.edge(("Test", "$a", None), ("Test", "b", None));
    let (g, d) = o.run();
    assert_eq!(d.len(), 1, "{d:#?}");
    assert!(d[0].message.starts_with("test[$a] did not Validate: "), "{}", d[0].message);
    assert_eq!(g.vertices.len(), 1);
}

#[test]
fn unknown_params_are_build_errors() {
    let mut o = O::new();
    let span = o.res("test", "a", &[("nosuchfield", s("x"))], &[]);
    let d = o.error();
    assert_eq!(d.message, "error building resource: field `nosuchfield` does not exist in `test` resource");
    assert_eq!(d.span, Some(span));
}

#[test]
fn self_edges_are_cycles() {
    let mut o = O::new();
    o.res("test", "a", &[], &[]);
    o.body_edge(EdgeProp::Before, "Test", "a");
    assert_eq!(o.error().message, "resource graph has cycles: not a dag: test[a] -> test[a]");
}

#[test]
fn list_edges_resolve_to_every_vertex_of_a_name() {
    // A hidden and a normal `test[a]`: an edge to `test[a]` reaches both.
    let mut o = O::new();
    o.res("test", "a", &[], &[]);
    o.res("test", "a", &[], &[("hidden", Value::Bool(true))]);
    o.res("test", "b", &[], &[]);
    o.edge(("Test", "b", None), ("Test", "a", None));
    let (g, d) = o.run();
    assert!(d.is_empty());
    assert_eq!(g.vertices.len(), 3);
    assert_eq!(g.edges.len(), 2);
    assert!(g.edges.iter().all(|e| g.vertices[e.from].name == "b" && g.vertices[e.to].name == "a"));
}

#[test]
fn a_large_program_builds_in_halves_with_its_errors_in_program_order() {
    // Enough declarations to be built in two halves (see `build_owned`), with a failure in
    // each: the moved build must give the copied one's graph and errors, in order.
    let mut o = O::new();
    let n = 20_000;
    for i in 0..n {
        if i == 10 || i == n - 10 {
            o.res("test", &format!("r{i}"), &[("nosuchfield", s("x"))], &[]);
        } else {
            o.res("test", &format!("r{i}"), &[], &[]);
        }
    }
    o.edge(("Test", "r0", None), ("Test", &format!("r{}", n - 1), None));
    let (g, d) = o.run();
    assert_eq!(g.vertices.len(), n - 2);
    assert_eq!(d.len(), 2, "{d:#?}");
    let spans: Vec<_> = d.iter().map(|d| d.span.expect("a span").start).collect();
    assert!(spans[0] < spans[1], "errors in program order: {spans:?}");
}
