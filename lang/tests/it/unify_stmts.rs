//! Unification of statements: resource names by static speculation, fields, metas, body
//! edges, edge statements and send/recv, loops, conditions and panics.

use crate::unify_support as support;

use lang::diag::Stage;
use lang::ir::{EdgeProp, IrBodyEdge, IrMeta, IrStmt, NodeKind};
use lang::syntax::ast::BinOp;
use lang::types::Type;
use lang::unify::static_type;
use support::*;

#[test]
fn field_type_conflict_points_at_the_field() {
    let mut b = B::new();
    let name = b.str("t");
    let v = b.int(42);
    let (_, fields) = b.res("test", name, vec![("stringptr", v)]);
    let d = b.unify(&catalog());
    let d = only(&d, Stage::Unify);
    assert_eq!(d.message, "type error: str != int");
    assert_eq!(d.span, Some(fields[0]));
    assert!(d.labels.iter().any(|l| l.span == b.span(v) && l.message == "found `int` here"), "{d:#?}");
}

#[test]
fn unknown_fields_and_kinds() {
    let mut b = B::new();
    let name = b.str("t");
    let v = b.str("x");
    let (_, fields) = b.res("test", name, vec![("anotherstrr", v)]);
    let d = b.unify(&catalog());
    let d = only(&d, Stage::Unify);
    assert_eq!(d.message, "field `anotherstrr` does not exist in `test` resource");
    assert_eq!(d.span, Some(fields[0]));
    assert!(d.notes.contains(&"did you mean `anotherstr`?".to_string()));

    // One error, not also ambiguities for values whose field types are unknown.
    let mut b = B::new();
    let name = b.str("t");
    let v = b.list(vec![]);
    b.res("notaresource", name, vec![("x", v)]);
    let d = b.unify(&catalog());
    assert_eq!(only(&d, Stage::Unify).message, "no resource kind `notaresource` available");

    // Without fields an unknown kind is left to the interpreter.
    let mut b = B::new();
    let name = b.str("t");
    b.res("notaresource", name, vec![]);
    assert!(b.unify(&catalog()).is_empty());
}

#[test]
fn names_use_static_speculation() {
    // A string literal: one resource.
    let mut b = B::new();
    let name = b.str("a");
    b.res("test", name, vec![]);
    assert!(b.unify(&catalog()).is_empty());
    assert_eq!(b.g.ty(name), Some(&Type::Str));

    // A call result is not speculated, so `[]str` is required: a conflict with printf's str.
    let mut b = B::new();
    let f = b.str("%s");
    let a = b.str("a");
    let name = b.call("fmt.printf", vec![f, a]);
    let (stmt, _) = b.res("test", name, vec![]);
    let d = b.unify(&catalog());
    let d = only(&d, Stage::Unify);
    assert_eq!(d.message, "type error: list != str");
    assert_eq!(d.span, Some(stmt));
    assert!(d.notes.iter().any(|n| n.contains("[$x]")));

    // An interpolation of a list: the interpolation forces str.
    let mut b = B::new();
    let a = b.str("a");
    let l = b.list(vec![a]);
    let name = b.interp(vec![l]);
    b.res("test", name, vec![]);
    let d = b.unify(&catalog());
    assert_eq!(only(&d, Stage::Unify).message, "type error: str != list");

    // A list of calls: `[]str`.
    let mut b = B::new();
    let f = b.str("%d");
    let n = b.int(1);
    let call = b.call("fmt.printf", vec![f, n]);
    let name = b.list(vec![call]);
    b.res("test", name, vec![]);
    assert!(b.unify(&catalog()).is_empty());
    assert_eq!(b.g.ty(name), Some(&Type::list(Type::Str)));
}

#[test]
fn static_type_rules() {
    let mut b = B::new();
    let s = b.str("a");
    let f = b.str("%s");
    let call = b.call("fmt.printf", vec![f, s]);
    let c = b.bool(true);
    let if_one_known = b.iff(c, call, s);
    let (p, x) = b.param("x");
    let lam = b.lambda(vec![p], s);
    let iil = b.call_value(lam, vec![x]);
    let inline = b.node(NodeKind::Inline { func: "f".into(), body: s });
    let annotated = b.call("fmt.printf", vec![f, s]);
    b.annotate(annotated, "str");
    let empty = b.list(vec![]);
    let list_of_known = b.list(vec![s, s]);
    let list_of_call = b.list(vec![call]);
    let one = b.int(1);
    let plus = b.bin(BinOp::Add, s, s);
    let g = &b.g;
    assert_eq!(static_type(g, s), Some(Type::Str));
    assert_eq!(static_type(g, call), None);
    assert_eq!(static_type(g, if_one_known), Some(Type::Str));
    assert_eq!(static_type(g, iil), Some(Type::Str));
    assert_eq!(static_type(g, inline), None);
    assert_eq!(static_type(g, x), None);
    assert_eq!(static_type(g, annotated), Some(Type::Str));
    assert_eq!(static_type(g, empty), None);
    assert_eq!(static_type(g, list_of_known), Some(Type::list(Type::Str)));
    assert_eq!(static_type(g, list_of_call), None);
    assert_eq!(static_type(g, one), Some(Type::Int));
    assert_eq!(static_type(g, plus), None);
}

#[test]
fn collect_names_may_be_struct_lists() {
    let mut b = B::new();
    let n = b.str("a");
    let h = b.str("h1");
    let st = b.strukt(vec![("name", n), ("host", h)]);
    let (p, x) = b.param("x");
    let id = b.lambda(vec![p], x);
    let l = b.list(vec![st]);
    let names = b.call_value(id, vec![l]);
    b.res("file", names, vec![]);
    b.last_res().collect = true;
    let d = b.unify(&catalog());
    assert!(d.iter().all(|d| !d.message.contains("list")), "{d:#?}");
    assert_eq!(b.g.ty(names).map(Type::to_string).as_deref(), Some("[]struct{name str; host str}"));
}

#[test]
fn elvis_conditions_and_metas() {
    let mut b = B::new();
    let name = b.str("t");
    let v = b.str("x");
    let cond = b.int(1);
    b.res("test", name, vec![("anotherstr", v)]);
    let retry = b.str("three");
    let noop = b.bool(true);
    let r = b.last_res();
    r.fields[0].cond = Some(cond);
    let span = r.span;
    r.metas.push(IrMeta { name: Some("retry".into()), value: retry, cond: None, span });
    r.metas.push(IrMeta { name: Some("noop".into()), value: noop, cond: None, span });
    r.metas.push(IrMeta { name: Some("bogus".into()), value: noop, cond: None, span });
    let d = b.unify(&catalog());
    let m: Vec<_> = d.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(m, ["type error: bool != int", "type error: int != str", "invalid property: `bogus`"]);
}

#[test]
fn whole_meta_struct_must_match_exactly() {
    let mut b = B::new();
    let name = b.str("t");
    let t = b.bool(true);
    let partial = b.strukt(vec![("noop", t)]);
    b.res("test", name, vec![]);
    let r = b.last_res();
    let span = r.span;
    r.metas.push(IrMeta { name: None, value: partial, cond: None, span });
    let d = b.unify(&catalog());
    assert!(only(&d, Stage::Unify).message.starts_with("struct field count differs"));
    assert_eq!(lang::unify::meta_struct_type().to_string().matches(';').count(), 17);
}

#[test]
fn body_edges_type_their_names() {
    let mut b = B::new();
    let name = b.str("t");
    b.res("test", name, vec![]);
    let f = b.str("%d");
    let n = b.int(1);
    let target = b.call("fmt.printf", vec![f, n]);
    let half = b.half("Test", target, None);
    let cond = b.bool(true);
    let r = b.last_res();
    let span = r.span;
    r.edges.push(IrBodyEdge { prop: EdgeProp::Notify, cond: Some(cond), target: half, span });
    let d = b.unify(&catalog());
    assert_eq!(only(&d, Stage::Unify).message, "type error: list != str");
}

#[test]
fn edges_need_two_halves() {
    let mut b = B::new();
    let n = b.str("a");
    let h = b.half("Test", n, None);
    let span = b.edge(vec![h]);
    let d = b.unify(&catalog());
    let d = only(&d, Stage::Unify);
    assert_eq!(d.message, "can't create an edge with only one half");
    assert_eq!(d.span, Some(span));
}

fn send_recv(from: (&str, &str), to: (&str, &str)) -> Vec<String> {
    let mut b = B::new();
    let a = b.str("a");
    let c = b.str("b");
    let h1 = b.half(from.0, a, Some(from.1));
    let h2 = b.half(to.0, c, Some(to.1));
    b.edge(vec![h1, h2]);
    let d = b.unify(&catalog());
    assert!(d.iter().all(|d| d.stage == Stage::Unify));
    d.into_iter().map(|d| d.message).collect()
}

#[test]
fn send_recv_compatibility() {
    assert_eq!(send_recv(("Test", "hello"), ("Test", "anotherstr")), Vec::<String>::new());
    assert_eq!(
        send_recv(("Test", "answer"), ("Test", "anotherstr")),
        ["cannot send/recv from test[a].answer to test[b].anotherstr: field type mismatch between `int` and `str`"]
    );
    assert_eq!(send_recv(("File", "content"), ("Test", "anotherstr")), ["cannot send from resource of kind: file"]);
    assert_eq!(send_recv(("Test", "hello"), ("Exec", "cmd")), ["cannot recv to resource of kind: exec"]);
    assert_eq!(
        send_recv(("Exec", "shell"), ("File", "content")),
        ["cannot send/recv from exec[a].shell to file[b].content: key not found in send struct"]
    );
    assert_eq!(
        send_recv(("Test", "hello"), ("File", "contents")),
        ["cannot send/recv from test[a].hello to file[b].contents: key not found in recv struct"]
    );
    // variant on either side is compatible.
    assert!(send_recv(("Test", "answer"), ("Value", "any")).is_empty());
    assert!(send_recv(("Value", "any"), ("File", "content")).is_empty());
}

#[test]
fn for_loops_type_their_variables() {
    let mut b = B::new();
    let a = b.str("a");
    let l = b.list(vec![a]);
    let k = b.g.add_param("i", b.span(a));
    let v = b.g.add_param("v", b.span(a));
    let iu = b.param_use(k);
    let vu = b.param_use(v);
    let name = b.list(vec![vu]);
    let span = b.stmt_span();
    b.res("test", name, vec![("int8", iu)]);
    let body = vec![b.g.stmts.pop().unwrap()];
    b.g.stmts.push(IrStmt::For { iter: l, key: k, value: v, kv: false, body, span });
    assert!(b.unify(&catalog()).is_empty());
    assert_eq!(b.g.ty(vu), Some(&Type::Str));
    assert_eq!(b.g.ty(iu), Some(&Type::Int));

    // forkv over a map{int: str} with the value used as an int.
    let mut b = B::new();
    let one = b.int(1);
    let s = b.str("x");
    let m = b.map(vec![(one, s)]);
    let k = b.g.add_param("k", b.span(s));
    let v = b.g.add_param("v", b.span(s));
    let vu = b.param_use(v);
    let name = b.str("t");
    let span = b.stmt_span();
    b.res("test", name, vec![("int8", vu)]);
    let body = vec![b.g.stmts.pop().unwrap()];
    b.g.stmts.push(IrStmt::For { iter: m, key: k, value: v, kv: true, body, span });
    let d = b.unify(&catalog());
    assert_eq!(only(&d, Stage::Unify).message, "type error: int != str");
}

#[test]
fn if_statements_and_panics_need_bools() {
    let mut b = B::new();
    let c = b.str("yes");
    let p = b.int(0);
    let span = b.stmt_span();
    b.g.stmts.push(IrStmt::If { cond: c, then: vec![], els: vec![], span });
    b.g.stmts.push(IrStmt::Panic { check: p, span });
    let d = b.unify(&catalog());
    let m: Vec<_> = d.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(m, ["type error: bool != str", "type error: bool != int"]);
}
