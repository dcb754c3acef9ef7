//! Collecting what other hosts export: `<<| |>>` and `collect` statements read the
//! records of remote exports (decoded as the daemon does), with host filters, and a
//! resource two hosts export differently is left out while the rest of the graph stands.

use crate::unify_support::{catalog, sp};

use lang::diag::Code;
use lang::exported::{decode, encode};
use lang::interpret::{Remote, interpret_with};
use lang::output::{CollectorDecl, Output, Query, ResDecl, Virtuality};
use lang::span::Span;
use lang::value::Value;

fn file(name: &str, content: &str) -> ResDecl {
    ResDecl {
        kind: "file".into(),
        name: name.into(),
        params: vec![("content".into(), Value::str(content), sp(1))],
        defaulted: vec![],
        metas: vec![],
        edges: vec![],
        collect: false,
        from: None,
        virtuality: Virtuality::Real,
        classes: vec![],
        within: vec![],
        span: sp(1),
    }
}

/// `decl` as exported by `host` and read back from the world.
fn exported_by(host: &str, decl: &ResDecl) -> ResDecl {
    decode(&decl.kind, &decl.name, host, &encode(decl).unwrap(), Span::default()).unwrap()
}

fn remote(exports: Vec<ResDecl>) -> Remote {
    Remote { me: "h2".into(), exports }
}

fn collector(query: Option<Query>) -> CollectorDecl {
    CollectorDecl { kind: "file".into(), exported: true, query, params: vec![], span: sp(9) }
}

/// The graph's lines, the errors that reject it, and the resources left out.
fn run(out: &Output, remote: &Remote) -> (Vec<String>, Vec<String>, Vec<lang::diag::Diagnostic>) {
    let (g, d, left) = interpret_with(out, &catalog(), remote);
    (g.to_lines(), d.into_vec().into_iter().map(|d| d.message).collect(), left)
}

#[test]
fn a_puppet_collector_realizes_other_hosts_exports_but_a_virtual_one_does_not() {
    let mut out = Output::default();
    out.resources.push(file("/local", "mine"));
    out.collectors.push(collector(None));
    let world = remote(vec![exported_by("h1", &file("/a", "from h1")), exported_by("h3", &file("/b", "from h3"))]);
    let (lines, errors, left) = run(&out, &world);
    assert!(errors.is_empty() && left.is_empty(), "{errors:?} {left:?}");
    assert_eq!(lines, ["Vertex: file[/a]", "Vertex: file[/b]", "Vertex: file[/local]"]);

    // `<| |>` is this host's virtual resources only.
    out.collectors[0].exported = false;
    let (lines, ..) = run(&out, &world);
    assert_eq!(lines, ["Vertex: file[/local]"]);

    // A query narrows it.
    let q = Query::Compare { attr: "name".into(), equal: true, value: Value::str("/b"), span: sp(8) };
    out.collectors[0] = collector(Some(q));
    let (lines, ..) = run(&out, &world);
    assert_eq!(lines, ["Vertex: file[/b]", "Vertex: file[/local]"]);
}

#[test]
fn a_collect_statement_takes_the_named_hosts_export_and_its_body_overrides() {
    let mut copy = file("/a", "ignored");
    copy.params = vec![("mode".into(), Value::str("0600"), sp(2))];
    copy.collect = true;
    copy.from = Some("h3".into());
    let mut out = Output::default();
    out.resources.push(copy.clone());
    let world = remote(vec![exported_by("h1", &file("/a", "from h1")), exported_by("h3", &file("/a", "from h3"))]);
    let (g, d, left) = interpret_with(&out, &catalog(), &world);
    assert!(d.is_empty() && left.is_empty(), "{d:?} {left:?}");
    let v = &g.vertices[0];
    assert_eq!(v.params.get("content"), Some(&Value::str("from h3")));
    assert_eq!(v.params.get("mode"), Some(&Value::str("0600")));

    // Named nowhere: no resource at all.
    out.resources[0].name = "/nothing".into();
    let (lines, errors, left) = run(&out, &world);
    assert!(lines.is_empty() && errors.is_empty() && left.is_empty());
}

#[test]
fn a_resource_exported_differently_is_left_out_and_the_rest_stays() {
    let mut out = Output::default();
    out.resources.push(file("/local", "mine"));
    out.collectors.push(collector(None));
    let world = remote(vec![
        exported_by("h1", &file("/x", "one")),
        exported_by("h3", &file("/x", "two")),
        exported_by("h4", &file("/x", "one")),
        exported_by("h1", &file("/y", "same")),
        exported_by("h3", &file("/y", "same")),
    ]);
    let (lines, errors, left) = run(&out, &world);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(lines, ["Vertex: file[/local]", "Vertex: file[/y]"]);
    assert_eq!(left.len(), 1, "{left:#?}");
    assert_eq!(left[0].code, Some(Code::CollectConflict));
    assert_eq!(left[0].span, Some(sp(9)));
    assert_eq!(
        left[0].message,
        "collect conflict: file[/x] is exported differently by h1 and h3 \
         (`content` is \"one\" on one and \"two\" on the other); it is left out of the graph"
    );

    // A `collect` statement gets the same treatment.
    let mut copy = file("/x", "");
    copy.params.clear();
    copy.collect = true;
    let out = Output { resources: vec![file("/local", "mine"), copy], ..Output::default() };
    let (lines, errors, left) = run(&out, &world);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(lines, ["Vertex: file[/local]"]);
    assert_eq!(left.len(), 1);

    // Without a remote world the same output interprets as before (`interpret`).
    let (g, d) = lang::interpret::interpret(&out, &catalog());
    assert!(d.is_empty());
    assert_eq!(g.to_lines(), ["Vertex: file[/local]"]);
}
