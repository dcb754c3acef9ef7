//! Unification of expressions: literals, operators, calls, lambdas, lookups, annotations,
//! ambiguity and the occurs check, on hand-built function graphs.

use crate::unify_support as support;

use lang::diag::Stage;
use lang::ir::NodeKind;
use lang::syntax::ast::BinOp;
use lang::types::Type;
use support::*;

#[test]
fn str_plus_int_is_a_conflict_at_the_operator() {
    let mut b = B::new();
    let s = b.str("hello world");
    let i = b.int(5);
    let add = b.bin(BinOp::Add, s, i);
    b.use_str(add);
    let diags = b.unify(&catalog());
    let d = only(&diags, Stage::Unify);
    assert_eq!(d.message, "type error: str != int");
    assert_eq!(d.span, Some(b.span(add)));
    let labels: Vec<_> = d.labels.iter().map(|l| (l.span, l.message.as_str())).collect();
    assert!(labels.contains(&(b.span(s), "expected `str` because of this")), "{labels:?}");
    assert!(labels.contains(&(b.span(i), "found `int` here")), "{labels:?}");
}

#[test]
fn operators_get_their_result_types() {
    let mut b = B::new();
    let one = b.int(1);
    let two = b.int(2);
    let div = b.bin(BinOp::Div, one, two);
    let lt = b.bin(BinOp::Lt, one, two);
    let not = b.not(lt);
    let elems = b.list(vec![one, two]);
    let isin = b.bin(BinOp::In, one, elems);
    let and = b.bin(BinOp::And, not, isin);
    b.use_any(div);
    b.use_any(and);
    let diags = b.unify(&catalog());
    assert!(diags.is_empty(), "{diags:#?}");
    assert_eq!(b.g.ty(div), Some(&Type::Float));
    assert_eq!(b.g.ty(and), Some(&Type::Bool));
    assert_eq!(b.g.ty(elems), Some(&Type::list(Type::Int)));
}

#[test]
fn operator_kinds_are_checked_after_solving() {
    let mut b = B::new();
    let t = b.bool(true);
    let f = b.bool(false);
    let add = b.bin(BinOp::Add, t, f);
    b.use_any(add);
    let diags = b.unify(&catalog());
    let d = only(&diags, Stage::Unify);
    assert!(d.message.starts_with("error setting type: "), "{}", d.message);
    assert!(d.message.contains("operator `+` does not accept `bool`"), "{}", d.message);
    assert_eq!(d.span, Some(b.span(add)));

    let mut b = B::new();
    let x = b.str("a");
    let y = b.str("b");
    let lt = b.bin(BinOp::Lt, x, y);
    b.use_any(lt);
    let diags = b.unify(&catalog());
    assert!(only(&diags, Stage::Unify).message.contains("operator `<` does not accept `str`"));
}

#[test]
fn equality_rejects_functions() {
    let mut b = B::new();
    let (p, body) = b.param("x");
    let f = b.lambda(vec![p], body);
    b.annotate(body, "int");
    let eq = b.bin(BinOp::Eq, f, f);
    b.use_any(eq);
    let diags = b.unify(&catalog());
    assert!(only(&diags, Stage::Unify).message.contains("operator `==` does not accept `func(x int) int`"));
}

#[test]
fn interpolated_parts_must_be_str() {
    let mut b = B::new();
    let lit = b.str("some_bool: ");
    let flag = b.bool(true);
    let s = b.interp(vec![lit, flag]);
    b.use_str(s);
    let diags = b.unify(&catalog());
    let d = only(&diags, Stage::Unify);
    assert_eq!(d.message, "type error: str != bool");
    assert_eq!(d.span, Some(b.span(s)));
    assert!(d.labels.iter().any(|l| l.span == b.span(flag) && l.message == "found `bool` here"));
}

#[test]
fn list_elements_share_one_type() {
    let mut b = B::new();
    let one = b.int(1);
    let s = b.str("a");
    let l = b.list(vec![one, s]);
    b.use_any(l);
    let d = b.unify(&catalog());
    let d = only(&d, Stage::Unify);
    assert_eq!(d.message, "type error: int != str");
    assert_eq!(d.span, Some(b.span(l)));
    assert!(d.labels.iter().any(|l| l.span == b.span(one) && l.message == "expected `int` because of this"));
}

#[test]
fn struct_field_order_is_part_of_the_type() {
    let mut b = B::new();
    let one = b.int(1);
    let two = b.int(2);
    let s1 = b.strukt(vec![("a", one), ("b", two)]);
    let s2 = b.strukt(vec![("b", two), ("a", one)]);
    let c = b.bool(true);
    let pick = b.iff(c, s1, s2);
    b.use_any(pick);
    let d = b.unify(&catalog());
    assert!(only(&d, Stage::Unify).message.starts_with("struct fields differ"), "{d:#?}");

    let mut b = B::new();
    let one = b.int(1);
    let s1 = b.strukt(vec![("a", one)]);
    let s2 = b.strukt(vec![("a", one), ("b", one)]);
    let c = b.bool(true);
    let pick = b.iff(c, s1, s2);
    b.use_any(pick);
    let d = b.unify(&catalog());
    assert!(only(&d, Stage::Unify).message.starts_with("struct field count differs"), "{d:#?}");
}

#[test]
fn annotations_constrain_and_conflict() {
    let mut b = B::new();
    let l = b.list(vec![]);
    b.annotate(l, "[]str");
    b.use_any(l);
    assert!(b.unify(&catalog()).is_empty());
    assert_eq!(b.g.ty(l), Some(&Type::list(Type::Str)));

    let mut b = B::new();
    let s = b.str("hello");
    let ann = b.annotate(s, "[]str");
    b.use_any(s);
    let d = b.unify(&catalog());
    let d = only(&d, Stage::Unify);
    assert_eq!(d.message, "type error: list != str");
    assert_eq!(d.span, Some(ann));
}

#[test]
fn empty_list_without_context_is_ambiguous() {
    let mut b = B::new();
    let l = b.list(vec![]);
    let n = b.call("len", vec![l]);
    b.use_any(n);
    let d = b.unify(&catalog());
    let d = only(&d, Stage::Unify);
    assert_eq!(d.message, "expr: `[]` is ambiguous: []?1");
    assert_eq!(d.span, Some(b.span(l)));
    assert!(d.notes.iter().any(|n| n.contains("annotation")));
    assert_eq!(b.g.ty(n), Some(&Type::Int));
    assert_eq!(b.g.ty(l), None);
}

#[test]
fn unreachable_nodes_are_not_typed() {
    let mut b = B::new();
    let unused = b.list(vec![]);
    let s = b.str("a");
    b.use_str(s);
    assert!(b.unify(&catalog()).is_empty());
    assert_eq!(b.g.ty(unused), None);
    assert_eq!(b.g.ty(s), Some(&Type::Str));
    assert_eq!(b.g.types.len(), b.g.nodes.len());
}

#[test]
fn calls_instantiate_signatures_per_call_site() {
    let mut b = B::new();
    let ints = {
        let one = b.int(1);
        b.list(vec![one])
    };
    let strs = {
        let a = b.str("a");
        b.list(vec![a])
    };
    let (p1, x1) = b.param("x");
    let f1 = b.lambda(vec![p1], x1);
    let (p2, x2) = b.param("x");
    let f2 = b.lambda(vec![p2], x2);
    let m1 = b.call("iter.map", vec![ints, f1]);
    let m2 = b.call("iter.map", vec![strs, f2]);
    b.use_any(m1);
    b.use_any(m2);
    let d = b.unify(&catalog());
    assert!(d.is_empty(), "{d:#?}");
    assert_eq!(b.g.ty(m1), Some(&Type::list(Type::Int)));
    assert_eq!(b.g.ty(m2), Some(&Type::list(Type::Str)));
    assert_eq!(b.g.ty(f2).map(Type::to_string).as_deref(), Some("func(x str) str"));
}

#[test]
fn a_lambda_value_is_monomorphic() {
    let mut b = B::new();
    let (p, x) = b.param("x");
    let id = b.lambda(vec![p], x);
    let one = b.int(1);
    let a = b.str("a");
    let c1 = b.call_value(id, vec![one]);
    let c2 = b.call_value(id, vec![a]);
    b.use_any(c1);
    b.use_any(c2);
    let d = b.unify(&catalog());
    let d = only(&d, Stage::Unify);
    assert!(d.message == "type error: int != str" || d.message == "type error: str != int", "{}", d.message);
}

#[test]
fn calling_a_non_function_is_a_conflict() {
    let mut b = B::new();
    let notfn = b.int(42);
    let seven = b.int(7);
    let call = b.call_value(notfn, vec![seven]);
    b.use_any(call);
    let d = b.unify(&catalog());
    let d = only(&d, Stage::Unify);
    assert_eq!(d.message, "type error: func != int");
    assert_eq!(d.span, Some(b.span(call)));
    assert!(d.labels.iter().any(|l| l.span == b.span(notfn)));
}

#[test]
fn lambda_arity_mismatch() {
    let mut b = B::new();
    let (p, x) = b.param("x");
    let f = b.lambda(vec![p], x);
    let one = b.int(1);
    let call = b.call_value(f, vec![one, one]);
    b.use_any(call);
    let d = b.unify(&catalog());
    assert!(only(&d, Stage::Unify).message.starts_with("func arg count differs"), "{d:#?}");
}

#[test]
fn self_application_fails_the_occurs_check() {
    let mut b = B::new();
    let (p, x) = b.param("x");
    let x2 = b.param_use(p);
    let app = b.call_value(x, vec![x2]);
    let f = b.lambda(vec![p], app);
    b.use_any(f);
    let d = b.unify(&catalog());
    assert!(d.iter().any(|d| d.message.starts_with("directly in the same set")), "{d:#?}");
    assert!(d.iter().all(|d| d.stage == Stage::Unify));
}

#[test]
fn arity_errors_list_the_signatures() {
    let mut b = B::new();
    let m = b.map(vec![]);
    let k = b.str("key");
    let def = b.str("default");
    let call = b.call("map.lookup", vec![m, k, def]);
    b.use_str(call);
    let d = b.unify(&catalog());
    let d = only(&d, Stage::Unify);
    assert_eq!(
        d.message,
        "func arg count differs: expected one of: map.lookup(m map{?1: ?2}, key ?1) ?2 ; \
         given: map.lookup(map{?1: ?2}, str, str)"
    );
    assert_eq!(d.span, Some(b.span(call)));

    let mut b = B::new();
    let one = b.list(vec![]);
    let call = b.call("list.concat", vec![one]);
    b.use_any(call);
    let d = b.unify(&catalog());
    let msg = &only(&d, Stage::Unify).message;
    assert!(msg.contains("list.concat(a []?1, b []?1) []?1 ; list.concat(a []?1, b []?1, c []?1) []?1"), "{msg}");
}

#[test]
fn overloads_are_chosen_by_arity() {
    let mut b = B::new();
    let a = {
        let x = b.int(1);
        b.list(vec![x])
    };
    let e1 = b.list(vec![]);
    let e2 = b.list(vec![]);
    let call = b.call("list.concat", vec![a, e1, e2]);
    b.use_any(call);
    assert!(b.unify(&catalog()).is_empty());
    assert_eq!(b.g.ty(e2), Some(&Type::list(Type::Int)));
}

#[test]
fn unknown_functions_suggest_similar_ones() {
    let mut b = B::new();
    let s = b.str("x");
    let call = b.call("strings.toupper", vec![s]);
    b.use_str(call);
    let d = b.unify(&catalog());
    let d = only(&d, Stage::Unify);
    assert_eq!(d.message, "func `strings.toupper` does not exist");
    assert!(d.notes.iter().any(|n| n.contains("strings.to_upper(s str) str ; given: strings.toupper(str)")), "{d:#?}");
}

#[test]
fn infer_hooks_see_static_arguments() {
    let mut b = B::new();
    let f = b.str("%d%d");
    let n = b.int(42);
    let call = b.call("fmt.printf", vec![f, n]);
    b.use_str(call);
    let d = b.unify(&catalog());
    let d = only(&d, Stage::Unify);
    assert_eq!(d.message, "func `printf` infer error: number of args (1) doesn't match format string verb count (2)");
    assert_eq!(d.span, Some(b.span(call)));

    // A format made of an interpolation of constants is still static.
    let mut b = B::new();
    let a = b.str("%s");
    let c = b.str(" and %d");
    let f = b.interp(vec![a, c]);
    let s = b.str("x");
    let n = b.int(1);
    let call = b.call("fmt.printf", vec![f, s, n]);
    b.use_str(call);
    assert!(b.unify(&catalog()).is_empty());
}

#[test]
fn check_hooks_reject_instantiations() {
    let mut b = B::new();
    let n = b.int(42);
    let call = b.call("len", vec![n]);
    b.use_any(call);
    let d = b.unify(&catalog());
    let d = only(&d, Stage::Unify);
    assert!(d.message.starts_with("error setting type: "), "{}", d.message);
    assert!(d.message.ends_with("error: can't take the length of a `int`"), "{}", d.message);
}

#[test]
fn struct_field_lookups() {
    let mut b = B::new();
    let one = b.int(42);
    let t = b.bool(true);
    let st = b.strukt(vec![("a", one), ("b", t)]);
    let fa = b.field(st, "a");
    let missing = b.field(st, "missing");
    let fail = b.str("fail");
    let plus = b.bin(BinOp::Add, missing, fail);
    b.use_any(fa);
    b.use_str(plus);
    let d = b.unify(&catalog());
    let d = only(&d, Stage::Unify);
    assert!(d.message.ends_with("error: field missing was not found in struct"), "{}", d.message);
    assert_eq!(d.span, Some(b.span(missing)));
    assert_eq!(b.g.ty(fa), Some(&Type::Int));
}

#[test]
fn field_lookup_waits_for_the_struct_type() {
    // `$f = func($s) { $s->a }` applied to a struct literal: the lookup is constrained
    // before the call tells what `$s` is.
    let mut b = B::new();
    let (p, s) = b.param("s");
    let fa = b.field(s, "a");
    let f = b.lambda(vec![p], fa);
    let one = b.int(1);
    let st = b.strukt(vec![("a", one)]);
    let call = b.call_value(f, vec![st]);
    b.use_any(call);
    assert!(b.unify(&catalog()).is_empty());
    assert_eq!(b.g.ty(call), Some(&Type::Int));
}

#[test]
fn optional_field_lookup_is_static() {
    let mut b = B::new();
    let one = b.int(1);
    let st = b.strukt(vec![("a", one)]);
    let dflt = b.int(0);
    let present = b.field_or(st, "a", dflt);
    let s = b.str("x");
    let absent = b.field_or(st, "zzz", s);
    b.use_any(present);
    b.use_str(absent);
    assert!(b.unify(&catalog()).is_empty());
    assert_eq!(b.g.ty(present), Some(&Type::Int));

    let mut b = B::new();
    let one = b.int(1);
    let st = b.strukt(vec![("a", one)]);
    let s = b.str("x");
    let bad = b.field_or(st, "a", s);
    b.use_any(bad);
    assert_eq!(only(&b.unify(&catalog()), Stage::Unify).message, "type error: int != str");
}

#[test]
fn field_lookup_on_a_non_struct() {
    let mut b = B::new();
    let n = b.int(1);
    let f = b.field(n, "a");
    b.use_any(f);
    let d = b.unify(&catalog());
    assert_eq!(only(&d, Stage::Unify).message, "type error: struct != int");
}

#[test]
fn index_picks_list_or_map_form() {
    let mut b = B::new();
    let a = b.str("a");
    let l = b.list(vec![a]);
    let zero = b.int(0);
    let li = b.index(l, zero);
    let k = b.int(42);
    let v = b.str("x");
    let m = b.map(vec![(k, v)]);
    let mi = b.index(m, zero);
    b.use_str(li);
    b.use_str(mi);
    assert!(b.unify(&catalog()).is_empty());

    // Index by a str on an unknown container: the map form.
    let mut b = B::new();
    let (p, c) = b.param("c");
    let key = b.str("k");
    let look = b.index(c, key);
    let f = b.lambda(vec![p], look);
    b.annotate(look, "int");
    b.use_any(f);
    assert!(b.unify(&catalog()).is_empty());
    assert_eq!(b.g.ty(f).map(Type::to_string).as_deref(), Some("func(c map{str: int}) int"));

    // A list indexed by a str is a conflict.
    let mut b = B::new();
    let a = b.str("a");
    let l = b.list(vec![a]);
    let key = b.str("k");
    let bad = b.index(l, key);
    b.use_any(bad);
    assert_eq!(only(&b.unify(&catalog()), Stage::Unify).message, "type error: int != str");
}

#[test]
fn if_expressions() {
    let mut b = B::new();
    let c = b.int(1);
    let x = b.str("a");
    let y = b.int(2);
    let e = b.iff(c, x, y);
    b.use_any(e);
    let d = b.unify(&catalog());
    let m: Vec<_> = d.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(m, ["type error: bool != int", "type error: str != int"]);
}

#[test]
fn variant_fields_accept_anything_and_keep_the_value_type() {
    let mut b = B::new();
    let x = b.int(42);
    b.use_any(x);
    assert!(b.unify(&catalog()).is_empty());
    assert_eq!(b.g.ty(x), Some(&Type::Int));
}

#[test]
fn large_graphs_are_fast() {
    // 100k nodes: a chain of additions `((1 + 1) + 1) + ...` plus a wide list.
    let mut b = B::new();
    let mut acc = b.int(1);
    for _ in 0..50_000 {
        let one = b.int(1);
        acc = b.bin(BinOp::Add, acc, one);
    }
    b.use_any(acc);
    let started = std::time::Instant::now();
    let d = b.unify(&catalog());
    let took = started.elapsed();
    assert!(d.is_empty());
    assert_eq!(b.g.ty(acc), Some(&Type::Int));
    assert!(b.g.nodes.len() >= 100_000);
    // Generous for debug builds on a loaded machine; release is far below a second.
    assert!(took.as_secs_f64() < 5.0, "took {took:?}");
    assert!(matches!(b.g.node(acc).kind, NodeKind::Op { .. }));
}

#[test]
fn large_mixed_graphs_are_fast() {
    // 10k resources, each `test "r${i}" { anotherstr => fmt.printf("%d", $l[0] + 1),
    // int8 => func($x) { $x * 2 }(len($s)), }` over shared binds `$l` and `$s`: about
    // 100k nodes with calls, lambdas, lookups and operators.
    let mut b = B::new();
    let one = b.int(1);
    let l = b.list(vec![one]);
    let s = b.str("abc");
    let fmt = b.str("%d");
    for i in 0..10_000 {
        let prefix = b.str("r");
        let n = b.str(&i.to_string());
        let name = b.interp(vec![prefix, n]);
        let zero = b.int(0);
        let first = b.index(l, zero);
        let plus = b.bin(BinOp::Add, first, one);
        let text = b.call("fmt.printf", vec![fmt, plus]);
        let (p, x) = b.param("x");
        let two = b.int(2);
        let times = b.bin(BinOp::Mul, x, two);
        let double = b.lambda(vec![p], times);
        let len = b.call("len", vec![s]);
        let applied = b.call_value(double, vec![len]);
        b.res("test", name, vec![("anotherstr", text), ("int8", applied)]);
    }
    assert!(b.g.nodes.len() >= 100_000);
    let started = std::time::Instant::now();
    let d = b.unify(&catalog());
    let took = started.elapsed();
    println!("unified {} nodes in {took:?}", b.g.nodes.len());
    assert!(d.is_empty(), "{:?}", d.first());
    assert!(b.g.types.iter().all(|t| t.is_some()));
    assert!(took.as_secs_f64() < 5.0, "took {took:?}");
}

#[test]
fn infer_hooks_see_through_inlined_functions() {
    // `func fmt() { "%d" }` then `fmt.printf(fmt(), 1)`.
    let mut b = B::new();
    let body = b.str("%d");
    let f = b.node(NodeKind::Inline { func: "fmt".into(), body });
    let n = b.str("not an int");
    let call = b.call("fmt.printf", vec![f, n]);
    b.use_str(call);
    let d = b.unify(&catalog());
    // The format is known, so the verb types the argument.
    let d = only(&d, Stage::Unify);
    assert_eq!(d.message, "function `fmt.printf` called with mismatched arguments");
    assert!(d.notes[0].contains("int) str"), "{d:#?}");
    assert_eq!(d.notes[1], "actual:\n  fmt.printf(str, str)");
}

#[test]
fn nested_conflicts_name_the_outer_types() {
    let mut b = B::new();
    let one = b.int(1);
    let l = b.list(vec![one]);
    let ann = b.annotate(l, "[]str");
    b.use_any(l);
    let d = b.unify(&catalog());
    let d = only(&d, Stage::Unify);
    assert_eq!(d.message, "type error: str != int");
    assert_eq!(d.span, Some(ann));
    assert!(d.notes.contains(&"while matching `[]str` with `[]int`".to_string()), "{d:#?}");
}

#[test]
fn a_failed_constraint_changes_nothing() {
    // `if c { struct{a => [], b => 1} } else { struct{a => ["x"], b => "y"} }`: the `b`
    // conflict must not leave `a`'s element type merged halfway, so the empty list stays
    // ambiguous only through its own uses (here: none, so it is poisoned by the error).
    let mut b = B::new();
    let empty = b.list(vec![]);
    let one = b.int(1);
    let s1 = b.strukt(vec![("a", empty), ("b", one)]);
    let x = b.str("x");
    let lx = b.list(vec![x]);
    let y = b.str("y");
    let s2 = b.strukt(vec![("a", lx), ("b", y)]);
    let c = b.bool(true);
    let pick = b.iff(c, s1, s2);
    b.use_any(pick);
    let d = b.unify(&catalog());
    let d = only(&d, Stage::Unify);
    assert_eq!(d.message, "type error: int != str");
    assert!(
        d.notes.iter().any(|n| n.contains("struct{a []?1; b int}") && n.contains("struct{a []str; b str}")),
        "{d:#?}"
    );
}
