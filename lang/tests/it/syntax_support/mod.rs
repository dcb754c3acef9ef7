//! Helpers shared by the syntax tests: parse a snippet and print expressions as compact
//! s-expressions so tests can state tree shapes in one line.

#![allow(dead_code)]

use lang::diag::Diagnostic;
use lang::span::FileId;
use lang::syntax::ast::{Expr, ExprKind, File, InterpPart, Stmt, StmtKind};
use lang::syntax::parse;

/// Parses `text`, asserting that it has no diagnostics.
pub fn parse_ok(text: &str) -> File {
    let (file, diags) = parse(FileId(0), text);
    let messages: Vec<String> = diags.iter().map(|d| d.message.clone()).collect();
    assert!(messages.is_empty(), "unexpected diagnostics for {text:?}: {messages:#?}");
    file
}

/// Parses `text` and returns its diagnostics (which must not be empty).
pub fn parse_err(text: &str) -> Vec<Diagnostic> {
    let (_, diags) = parse(FileId(0), text);
    let diags = diags.into_vec();
    assert!(!diags.is_empty(), "expected a syntax error for {text:?}");
    diags
}

/// The 1-based line of a diagnostic's primary span in `text`.
pub fn line_of(text: &str, d: &Diagnostic) -> usize {
    let start = d.span.map_or(0, |s| s.start as usize);
    text[..start.min(text.len())].matches('\n').count() + 1
}

/// The value of the single bind in `text` (`$x = <expr>\n`), as an s-expression.
pub fn bind_sexpr(text: &str) -> String {
    let file = parse_ok(text);
    match file.stmts.as_slice() {
        [Stmt { kind: StmtKind::Bind { value, .. }, .. }] => sexpr(value),
        other => panic!("expected one bind, got {other:#?}"),
    }
}

/// Shorthand: the s-expression of `$x = <expr>`.
pub fn expr_sexpr(expr: &str) -> String {
    bind_sexpr(&format!("$x = {expr}\n"))
}

pub fn sexpr(e: &Expr) -> String {
    let list = |items: &[Expr]| items.iter().map(sexpr).collect::<Vec<_>>().join(" ");
    match &e.kind {
        ExprKind::Bool(b) => b.to_string(),
        ExprKind::Int(n) => n.to_string(),
        ExprKind::Float(x) => format!("{x:?}"),
        ExprKind::RawStr(s) => format!("{s:?}"),
        ExprKind::Str(s) => format!("str:{s:?}"),
        ExprKind::Interp(parts) => {
            let parts: Vec<String> = parts
                .iter()
                .map(|p| match p {
                    InterpPart::Lit(s) => format!("{s:?}"),
                    InterpPart::Var(n) => format!("${}", n.name),
                })
                .collect();
            format!("(interp {})", parts.join(" "))
        }
        ExprKind::List(items) => format!("[{}]", list(items)),
        ExprKind::Map(entries) => {
            let entries: Vec<String> = entries.iter().map(|(k, v)| format!("{} => {}", sexpr(k), sexpr(v))).collect();
            format!("{{{}}}", entries.join(", "))
        }
        ExprKind::Struct(fields) => {
            let fields: Vec<String> = fields.iter().map(|(n, v)| format!("{} => {}", n.name, sexpr(v))).collect();
            format!("struct{{{}}}", fields.join(", "))
        }
        ExprKind::Var(name) => format!("${}", name.name),
        ExprKind::Call { name, args } => format!("({} {})", name.name, list(args)).replace(" )", ")"),
        ExprKind::CallVar { name, args } => format!("(${} {})", name.name, list(args)).replace(" )", ")"),
        ExprKind::Lambda(l) => {
            let params: Vec<String> = l.params.iter().map(|p| format!("${}", p.name.name)).collect();
            format!("(func ({}) {})", params.join(" "), sexpr(&l.body))
        }
        ExprKind::CallLambda { lambda, args } => {
            let params: Vec<String> = lambda.params.iter().map(|p| format!("${}", p.name.name)).collect();
            format!("((func ({}) {}) {})", params.join(" "), sexpr(&lambda.body), list(args))
        }
        ExprKind::If { cond, then, els } => format!("(if {} {} {})", sexpr(cond), sexpr(then), sexpr(els)),
        ExprKind::Binary { op, lhs, rhs } => format!("({} {} {})", op.as_str(), sexpr(lhs), sexpr(rhs)),
        ExprKind::Not(inner) => format!("(not {})", sexpr(inner)),
        ExprKind::Index { base, index } => format!("(index {} {})", sexpr(base), sexpr(index)),
        ExprKind::Field { base, field } => format!("(-> {} {})", sexpr(base), field.name),
        ExprKind::FieldOr { base, field, default } => {
            format!("(->? {} {} {})", sexpr(base), field.name, sexpr(default))
        }
        ExprKind::Annotated { expr, ann } => format!("(: {} {})", sexpr(expr), ann.ty),
        ExprKind::Construct { ty, fields } => {
            let fields: Vec<String> = fields.iter().map(|(n, v)| format!("{} => {}", n.name, sexpr(v))).collect();
            format!("{}{{{}}}", ty.name, fields.join(", "))
        }
        ExprKind::Named { name, value } => format!("({} => {})", name.name, sexpr(value)),
        ExprKind::Error => "<error>".to_string(),
    }
}
