//! Expression parsing: operator precedence and associativity (spec 1.8), the single- vs
//! multi-line comma rules (1.9), literals, names, calls and lambdas.

use crate::syntax_support;

use syntax_support::{expr_sexpr, parse_err, parse_ok};

#[test]
fn not_binds_tighter_than_comparison() {
    assert_eq!(expr_sexpr("not $a == $b"), "(== (not $a) $b)");
    assert_eq!(expr_sexpr("not ($a == $b)"), "(not (== $a $b))");
    assert_eq!(expr_sexpr("not $a + 1"), "(+ (not $a) 1)");
    assert_eq!(expr_sexpr("not not $a"), "(not (not $a))");
}

#[test]
fn arithmetic_binds_tighter_than_in() {
    assert_eq!(expr_sexpr("1 + 2 in [3]"), "(in (+ 1 2) [3])");
}

#[test]
fn except_is_the_loosest_operator() {
    assert_eq!(expr_sexpr(r#"$m["k"] <|> "b" + "c""#), r#"(<|> (index $m "k") (+ "b" "c"))"#);
    assert_eq!(expr_sexpr("$a <|> $b <|> $c"), "(<|> (<|> $a $b) $c)");
    assert_eq!(expr_sexpr("$a or $b <|> $c"), "(<|> (or $a $b) $c)");
}

#[test]
fn and_binds_tighter_than_or() {
    assert_eq!(expr_sexpr("true or false and false"), "(or true (and false false))");
    assert_eq!(expr_sexpr("$a and $b or $c"), "(or (and $a $b) $c)");
}

#[test]
fn arithmetic_is_left_associative_with_usual_precedence() {
    assert_eq!(expr_sexpr("1 - 2 - 3"), "(- (- 1 2) 3)");
    assert_eq!(expr_sexpr("1 + 2 * 3"), "(+ 1 (* 2 3))");
    assert_eq!(expr_sexpr("1 / 2 * 3"), "(* (/ 1 2) 3)");
    assert_eq!(expr_sexpr("(1 + 2) * 3"), "(* (+ 1 2) 3)");
    assert_eq!(expr_sexpr("$a < $b and $c >= 2.5"), "(and (< $a $b) (>= $c 2.5))");
}

#[test]
fn comparisons_do_not_associate() {
    for bad in ["$a < $b < $c", "$a == $b == $c", "$x in $l == true", "1 + 2 != 3 == false"] {
        let diags = parse_err(&format!("$x = {bad}\n"));
        assert_eq!(diags.len(), 1, "{bad}: {diags:#?}");
        assert!(diags[0].message.contains("after a comparison"), "{}", diags[0].message);
    }
    assert_eq!(expr_sexpr("($a == $b) == $c"), "(== (== $a $b) $c)");
}

#[test]
fn field_lookup_with_default_is_a_special_form() {
    assert_eq!(expr_sexpr("$s->f"), "(-> $s f)");
    assert_eq!(expr_sexpr(r#"$s->f <|> "d""#), r#"(->? $s f "d")"#);
    assert_eq!(expr_sexpr(r#"$s->f <|> "b" + "c""#), r#"(->? $s f (+ "b" "c"))"#);
    assert_eq!(expr_sexpr(r#"($s->f) <|> "d""#), r#"(<|> (-> $s f) "d")"#);
    assert_eq!(expr_sexpr("$s->a->b"), "(-> (-> $s a) b)");
    assert_eq!(expr_sexpr("$s->l[0]"), "(index (-> $s l) 0)");
    assert_eq!(expr_sexpr("$l[0][1]"), "(index (index $l 0) 1)");
}

#[test]
fn negative_numbers_are_literals_and_there_is_no_unary_minus() {
    assert_eq!(expr_sexpr("-1"), "-1");
    assert_eq!(expr_sexpr("$a - 1"), "(- $a 1)");
    assert_eq!(expr_sexpr("$a-$b"), "(- $a $b)");
    assert_eq!(expr_sexpr("[-1.5, -2]"), "[-1.5 -2]");
    parse_err("$x = $a-1\n");
    parse_err("$x = 5 -3\n");
    parse_err("$x = -$a\n");
}

#[test]
fn literals_and_collections() {
    assert_eq!(expr_sexpr(r#"{"a" => 1, "b" => 2}"#), r#"{"a" => 1, "b" => 2}"#);
    assert_eq!(expr_sexpr("struct{a => 1, b => true}"), "struct{a => 1, b => true}");
    assert_eq!(expr_sexpr("struct{}"), "struct{}");
    assert_eq!(expr_sexpr("[]"), "[]");
    assert_eq!(expr_sexpr("{}"), "{}");
    assert_eq!(expr_sexpr("007"), "7");
    assert_eq!(expr_sexpr("\"multi\nline\""), "\"multi\\nline\"");
}

#[test]
fn names_and_calls() {
    assert_eq!(expr_sexpr("$ns.x"), "$ns.x");
    assert_eq!(expr_sexpr("$map"), "$map");
    assert_eq!(expr_sexpr("$collect"), "$collect");
    assert_eq!(expr_sexpr(r#"fmt.printf("%d", 3)"#), r#"(fmt.printf "%d" 3)"#);
    assert_eq!(expr_sexpr("iter.map($l, $f)"), "(iter.map $l $f)");
    assert_eq!(expr_sexpr("collect.res(\"file\")"), "(collect.res \"file\")");
    assert_eq!(expr_sexpr("$fn(1, 2)"), "($fn 1 2)");
    assert_eq!(expr_sexpr("$i1.f1()"), "($i1.f1)");
    assert_eq!(expr_sexpr("len()"), "(len)");
    parse_err("$x = foo\n");
    parse_err("$x = $in\n");
    parse_err("$x = $f()()\n");
    parse_err("$x = (func() { 1 })()\n");
}

#[test]
fn lambdas_and_if_expressions() {
    assert_eq!(expr_sexpr("func($x) { $x + 1 }"), "(func ($x) (+ $x 1))");
    assert_eq!(expr_sexpr("func($x) {\n\t$x + 1\n}"), "(func ($x) (+ $x 1))");
    assert_eq!(expr_sexpr("func($x str) str { $x }(\"a\")"), r#"((func ($x) $x) "a")"#);
    assert_eq!(expr_sexpr("func() func(int) str { $f }"), "(func () $f)");
    assert_eq!(expr_sexpr("if $c { 1 } else { 2 }"), "(if $c 1 2)");
    assert_eq!(expr_sexpr("if $c {\n\t1\n} else {\n\t2\n}"), "(if $c 1 2)");
    assert_eq!(expr_sexpr("if $c { 1 } else { if $d { 2 } else { 3 } }"), "(if $c 1 (if $d 2 3))");
    parse_err("$x = if $c { 1 }\n");
    parse_err("$x = if $c {\n\t1\n}\nelse {\n\t2\n}\n");
}

#[test]
fn single_line_lists_take_no_trailing_comma() {
    assert_eq!(expr_sexpr("[1, 2, 3]"), "[1 2 3]");
    let diags = parse_err("$l = [1, 2,]\n");
    assert_eq!(diags.len(), 1);
    assert!(diags[0].message.contains("unexpected `]`"), "{}", diags[0].message);
    parse_err("$m = {\"a\" => 1,}\n");
    parse_err("$s = struct{a => 1,}\n");
    parse_err("$c = f(1,)\n");
    parse_err("$f = func($a,) { $a }\n");
}

#[test]
fn multi_line_lists_need_a_comma_after_every_element() {
    assert_eq!(expr_sexpr("[\n\t1,\n\n\t2, # comment\n]"), "[1 2]");
    assert_eq!(expr_sexpr("{\n\t\"a\" => 1,\n}"), r#"{"a" => 1}"#);
    assert_eq!(expr_sexpr("struct{\n\ta => 1,\n\tb => 2,\n}"), "struct{a => 1, b => 2}");
    assert_eq!(expr_sexpr("f(\n\t1,\n\t2,\n)"), "(f 1 2)");
    assert_eq!(expr_sexpr("func(\n\t$a,\n\t$b,\n) { $a }"), "(func ($a $b) $a)");
    assert_eq!(expr_sexpr("[\n]"), "[]");
    let missing = parse_err("$l = [\n\t1,\n\t2\n]\n");
    assert!(missing[0].message.contains("expected a trailing comma"), "{}", missing[0].message);
    parse_err("$l = [\n\t1, 2,\n]\n");
    parse_err("$l = [\n\t1,\n\t,\n]\n");
    parse_err("$l = [\n\t,1,\n]\n");
    parse_err("$l = [1,\n\t2]\n");
}

#[test]
fn newlines_end_expressions() {
    parse_err("$x = $a +\n$b\n");
    parse_err("$x = ($a\n+ $b)\n");
}

#[test]
fn type_annotations() {
    let file = parse_ok("$m map{str: []int} = {}\n$f func(str, $b int) bool = $g\n$s struct{a int; b str} = $t\n");
    let types: Vec<String> = file
        .stmts
        .iter()
        .map(|s| match &s.kind {
            lang::syntax::ast::StmtKind::Bind { ann: Some(ann), .. } => ann.ty.to_string(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(types, ["map{str: []int}", "func(str, b int) bool", "struct{a int; b str}"]);
    let dup = parse_err("$st struct{x int; x int} = struct{x => 0}\n");
    assert!(dup[0].message.starts_with("can't set return type in parser: duplicate struct field"));
    let wrong = parse_err("$x int = \"a\"\n");
    assert!(wrong[0].message.starts_with("can't set return type in parser"), "{}", wrong[0].message);
    parse_err("$x float = 1\n");
    parse_ok("$x float = 1.0\n$y str = \"${z}\"\n$v variant = 3\n");
    parse_err("$st struct{; x str} = $y\n");
    parse_err("$st struct{x str;} = $y\n");
    parse_err("$f func(str) = $g\n");
    parse_err("$f func($a str, $a int) bool = $g\n");
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = format!("$x = {}1{}\n", "[".repeat(5000), "]".repeat(5000));
    let diags = parse_err(&deep);
    assert!(diags.iter().any(|d| d.message.contains("nesting is too deep")), "{diags:#?}");
    let long = format!("$x = 1{}\n", " + 1".repeat(50_000));
    let diags = parse_err(&long);
    assert!(diags.iter().any(|d| d.message.contains("too deep")), "{diags:#?}");
    let index = format!("$x = $l{}\n", "[0]".repeat(5000));
    parse_err(&index);
    let concat = format!("$x = \"a\"{}\n", " + \"b\"".repeat(150));
    parse_ok(&concat);
    let nots = format!("$x = {}true\n", "not ".repeat(5000));
    parse_err(&nots);
    let blocks = format!("{}{}", "if true {\n".repeat(3000), "}\n".repeat(3000));
    parse_err(&blocks);
    let parens = format!("$x = {}1{}\n", "(".repeat(5000), ")".repeat(5000));
    parse_err(&parens);
}
