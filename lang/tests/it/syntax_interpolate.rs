//! The Interpolate stage (`lang::interpolate::run`): escapes, `${name}`, class nesting.

use crate::syntax_support;

use lang::diag::Stage;
use lang::syntax::ast::{File, StmtKind};
use syntax_support::{parse_ok, sexpr};

fn run(text: &str) -> (File, Vec<String>) {
    let (file, diags) = lang::interpolate::run(parse_ok(text));
    assert!(diags.iter().all(|d| d.stage == Stage::Interpolate));
    (file, diags.iter().map(|d| d.message.clone()).collect())
}

/// The interpolated value of `$x = <string>`.
fn value(string: &str) -> String {
    let (file, errors) = run(&format!("$x = {string}\n"));
    assert_eq!(errors, Vec::<String>::new());
    match &file.stmts[0].kind {
        StmtKind::Bind { value, .. } => sexpr(value),
        other => panic!("{other:?}"),
    }
}

#[test]
fn strings_become_plain_or_interpolated() {
    assert_eq!(value(r#""plain""#), r#"str:"plain""#);
    assert_eq!(value(r#""a\tb""#), r#"str:"a\tb""#);
    assert_eq!(value(r#""${x}""#), "(interp $x)");
    assert_eq!(value(r#""a${x}b${ns.y}""#), r#"(interp "a" $x "b" $ns.y)"#);
    assert_eq!(value(r#""\${x}""#), r#"str:"${x}""#);
}

#[test]
fn interpolated_variables_are_positioned_at_the_literal() {
    let (file, _) = run("$x = \"a${y}\"\n");
    let StmtKind::Bind { value, .. } = &file.stmts[0].kind else { panic!() };
    let lang::syntax::ast::ExprKind::Interp(parts) = &value.kind else { panic!() };
    let lang::syntax::ast::InterpPart::Var(name) = &parts[1] else { panic!() };
    assert_eq!(name.span, value.span);
    assert_eq!((value.span.start, value.span.end), (5, 12));
}

#[test]
fn every_string_literal_is_rewritten() {
    let text = "test \"${n}\" {\n\tf => [\"\\n\"],\n\tDepend => Test[\"${m}\"],\n}\nimport \"a\\zb.mcl\"\n\
                $f = func($x) { {\"k\" => if $c { \"${a}\" } else { \"b\" }} }\n";
    let (file, errors) = run(text);
    assert_eq!(errors, Vec::<String>::new(), "import paths stay raw, so `\\z` there is no error");
    let printed = format!("{file:?}");
    assert!(!printed.contains("RawStr"), "{printed}");
}

#[test]
fn bad_strings_report_mgmt_messages() {
    let (_, errors) = run("test \"X: \\z\" {}\n$y = \"X: ${}\"\n");
    assert_eq!(errors, ["parser failed: unknown escape sequence: \\z", "parser failed: cannot parse string: X: ${}"]);
}

#[test]
fn colon_classes_move_into_their_parent() {
    let text = "class a {\n}\nclass a:b {\n}\nclass a:b:c {\n}\nclass x:y {\n}\n";
    let (file, errors) = run(text);
    assert_eq!(errors, Vec::<String>::new());
    let names: Vec<String> = file
        .stmts
        .iter()
        .map(|s| match &s.kind {
            StmtKind::Class { name, body, .. } => {
                let inner: Vec<String> = body
                    .stmts
                    .iter()
                    .map(|s| match &s.kind {
                        StmtKind::Class { name, body, .. } => format!("{}({})", name.name, body.stmts.len()),
                        _ => String::new(),
                    })
                    .collect();
                format!("{}[{}]", name.name, inner.join(","))
            }
            _ => String::new(),
        })
        .collect();
    assert_eq!(names, ["a[b(1)]", "x:y[]"]);
}

#[test]
fn duplicate_class_names_in_one_block() {
    let (_, errors) = run("class foo {\n}\nclass foo {\n}\nclass a {\n\tclass b {\n\t}\n}\nclass a:b {\n}\n");
    assert_eq!(errors, ["duplicate class name of: `foo`", "duplicate class name of: `b`"]);
}

#[test]
fn a_large_program_is_interpolated_in_halves_as_in_one_piece() {
    // Enough statements to be interpolated in two halves at once, with a bad string in
    // each half: the statements and the errors (in program order) must be those of each
    // half interpolated alone, in one piece.
    let n = 40_000;
    let mut text = String::new();
    for i in 0..n {
        if i == 10 || i == n - 10 {
            text.push_str(&format!("$x{i} = \"bad \\q {i}\"\n"));
        } else {
            text.push_str(&format!("$x{i} = \"v${{y}} {i}\\n\"\n"));
        }
    }
    let whole = parse_ok(&text);
    assert!(whole.stmts.len() >= lang::halves::IN_HALVES_LARGE && n / 2 < lang::halves::IN_HALVES_LARGE);
    let mut head = whole.clone();
    let tail = File { file: whole.file, stmts: head.stmts.split_off(n / 2) };

    let (split, diags) = lang::interpolate::run(whole);
    let (head, head_diags) = lang::interpolate::run(head);
    let (tail, tail_diags) = lang::interpolate::run(tail);
    let alone: Vec<_> = head.stmts.into_iter().chain(tail.stmts).collect();
    assert_eq!(split.stmts, alone);
    let spans = |d: &lang::diag::Diagnostics| d.iter().map(|d| (d.message.clone(), d.span)).collect::<Vec<_>>();
    let mut expected = spans(&head_diags);
    expected.extend(spans(&tail_diags));
    assert_eq!(spans(&diags), expected);
    assert_eq!(expected.len(), 2, "one bad string in each half");
}
