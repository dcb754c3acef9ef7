//! The Interpolate stage (spec 1.7.1 and 3.8): string escapes and `${name}` expansion in
//! every string literal, and class colon-nesting (`class a:b {}` moves into class `a`).
//!
//! Import paths are not expressions and stay raw.

use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::halves;
use crate::syntax::ast::{ExprKind, File, InterpPart, Stmt, StmtKind};
use crate::syntax::visit;

/// Rewrites every `ExprKind::RawStr` into `Str` or `Interp` and nests colon-named classes.
/// Strings that fail to parse become `ExprKind::Error`.
pub fn run(mut file: File) -> (File, Diagnostics) {
    let mut diags = if file.stmts.len() >= halves::IN_HALVES_LARGE {
        // Statements are interpolated alone: a large program's halves at once, their
        // errors joined in program order.
        let mid = file.stmts.len() / 2;
        let (head, tail) = file.stmts.split_at_mut(mid);
        let (mut diags, tail) = halves::both(|| strings(head), || strings(tail));
        diags.extend(tail);
        diags
    } else {
        strings(&mut file.stmts)
    };
    nest_classes(&mut file.stmts, &mut diags);
    (file, diags)
}

/// Unescapes and expands every string literal of `stmts`.
fn strings(stmts: &mut [Stmt]) -> Diagnostics {
    let mut diags = Diagnostics::new();
    visit::exprs_mut(stmts, &mut |expr| {
        let ExprKind::RawStr(raw) = &mut expr.kind else { return };
        if memchr::memchr2(b'\\', b'$', raw.as_bytes()).is_none() {
            // Nothing to unescape or interpolate (most strings): the text is the value.
            expr.kind = ExprKind::Str(std::mem::take(raw));
            return;
        }
        expr.kind = match parse_string(raw) {
            Ok(pieces) => to_expr_kind(pieces, expr.span),
            Err(err) => {
                let message = match &err {
                    StrError::UnknownEscape(seq) => format!("parser failed: unknown escape sequence: {seq}"),
                    StrError::CannotParse => format!("parser failed: cannot parse string: {raw}"),
                };
                let mut diag = Diagnostic::new(Stage::Interpolate, message, expr.span).with_code(Code::BadString);
                diag = diag.with_note(match err {
                    StrError::UnknownEscape(_) => "valid escapes are \\a \\b \\f \\n \\r \\t \\v \\\\ \\\" and \\$",
                    StrError::CannotParse => {
                        "`${...}` takes a variable name like `${x}` or `${ns.x}`; write `\\${` for a literal `${`"
                    }
                });
                diags.push(diag);
                ExprKind::Error
            }
        };
    });
    diags
}

/// One piece of a string literal's body.
#[derive(Clone, Debug, PartialEq)]
pub enum Piece {
    Lit(String),
    Var(String),
}

/// Why a string literal's body is invalid.
#[derive(Clone, Debug, PartialEq)]
pub enum StrError {
    /// The escape sequence as written (`\z`).
    UnknownEscape(String),
    /// A `${` not followed by a valid variable name and `}`.
    CannotParse,
}

/// Splits a raw string literal body into literal text (escapes processed, adjacent pieces
/// merged) and `${name}` references.
pub fn parse_string(raw: &str) -> Result<Vec<Piece>, StrError> {
    let mut pieces = Vec::new();
    // Room for the whole text: most strings that come here are one piece with an escape.
    let mut lit = String::with_capacity(raw.len());
    // Runs of plain text are copied whole; only a backslash or a `$` stops the copy.
    let bytes = raw.as_bytes();
    let mut at = 0;
    while let Some(found) = memchr::memchr2(b'\\', b'$', &bytes[at..]) {
        let i = at + found;
        lit.push_str(&raw[at..i]);
        if bytes[i] == b'\\' {
            let Some(next) = raw[i + 1..].chars().next() else { return Err(StrError::CannotParse) };
            lit.push(match next {
                'a' => '\x07',
                'b' => '\x08',
                'f' => '\x0c',
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                'v' => '\x0b',
                '\\' => '\\',
                '"' => '"',
                '$' => '$',
                other => return Err(StrError::UnknownEscape(format!("\\{other}"))),
            });
            at = i + 1 + next.len_utf8();
        } else if raw[i + 1..].starts_with('{') {
            let rest = &raw[i + 2..];
            let end = rest.find('}').ok_or(StrError::CannotParse)?;
            let name = &rest[..end];
            if !crate::init::var_shape(name) {
                return Err(StrError::CannotParse);
            }
            if !lit.is_empty() {
                pieces.push(Piece::Lit(std::mem::take(&mut lit)));
            }
            pieces.push(Piece::Var(name.to_string()));
            at = i + 2 + end + 1;
        } else {
            lit.push('$');
            at = i + 1;
        }
    }
    lit.push_str(&raw[at..]);
    if !lit.is_empty() || pieces.is_empty() {
        pieces.push(Piece::Lit(lit));
    }
    Ok(pieces)
}

fn to_expr_kind(mut pieces: Vec<Piece>, span: crate::span::Span) -> ExprKind {
    if let [Piece::Lit(text)] = pieces.as_mut_slice() {
        return ExprKind::Str(std::mem::take(text));
    }
    let parts = pieces
        .into_iter()
        .map(|piece| match piece {
            Piece::Lit(text) => InterpPart::Lit(text),
            Piece::Var(name) => InterpPart::Var(crate::syntax::ast::Ident { name, span }),
        })
        .collect();
    ExprKind::Interp(parts)
}

/// In one block: moves every `class a:rest` into the body of class `a` of the same block
/// (as `class rest`), reports duplicate class names, then does the same in every nested
/// block.
fn nest_classes(stmts: &mut Vec<Stmt>, diags: &mut Diagnostics) {
    let mut i = 0;
    while i < stmts.len() {
        let parent = match &stmts[i].kind {
            StmtKind::Class { name, .. } => name.name.split_once(':').map(|(head, _)| head.to_string()),
            _ => None,
        };
        let Some(parent) = parent else {
            i += 1;
            continue;
        };
        let target = stmts.iter().position(|s| matches!(&s.kind, StmtKind::Class { name, .. } if name.name == parent));
        let Some(target) = target else {
            i += 1;
            continue;
        };
        let mut child = stmts.remove(i);
        if let StmtKind::Class { name, .. } = &mut child.kind {
            let rest = name.name.split_once(':').map(|(_, rest)| rest.to_string()).unwrap_or_default();
            name.name = rest;
        }
        let target = if target > i { target - 1 } else { target };
        if let StmtKind::Class { body, .. } = &mut stmts[target].kind {
            body.stmts.push(child);
        }
    }

    let mut seen: Vec<&str> = Vec::new();
    for stmt in stmts.iter() {
        if let StmtKind::Class { name, .. } = &stmt.kind {
            if seen.contains(&name.name.as_str()) {
                diags.push(
                    Diagnostic::new(Stage::Interpolate, format!("duplicate class name of: `{}`", name.name), stmt.span)
                        .with_code(Code::DuplicateClass),
                );
            } else {
                seen.push(&name.name);
            }
        }
    }

    for stmt in stmts.iter_mut() {
        match &mut stmt.kind {
            StmtKind::If { then, els, .. } => {
                nest_classes(&mut then.stmts, diags);
                if let Some(els) = els {
                    nest_classes(&mut els.stmts, diags);
                }
            }
            StmtKind::For { body, .. } | StmtKind::ForKv { body, .. } | StmtKind::Class { body, .. } => {
                nest_classes(&mut body.stmts, diags)
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_processed() {
        assert_eq!(parse_string(r#"a\tb\"c\\d\$e"#), Ok(vec![Piece::Lit("a\tb\"c\\d$e".into())]));
        assert_eq!(parse_string(r"X: \z"), Err(StrError::UnknownEscape(r"\z".into())));
        assert_eq!(parse_string(r"\x41"), Err(StrError::UnknownEscape(r"\x".into())));
        // Text around escapes, in several bytes per character, and an escape at either end.
        assert_eq!(parse_string(r"\nété\tŝ\\"), Ok(vec![Piece::Lit("\nété\tŝ\\".into())]));
        assert_eq!(parse_string(r"é\é"), Err(StrError::UnknownEscape(r"\é".into())));
        assert_eq!(parse_string("trailing \\"), Err(StrError::CannotParse));
    }

    #[test]
    fn variables_interpolate_only_in_braces() {
        assert_eq!(
            parse_string("a${x}b${ns.y_1}"),
            Ok(vec![
                Piece::Lit("a".into()),
                Piece::Var("x".into()),
                Piece::Lit("b".into()),
                Piece::Var("ns.y_1".into())
            ])
        );
        assert_eq!(parse_string("$x $$ $"), Ok(vec![Piece::Lit("$x $$ $".into())]));
        assert_eq!(parse_string("$${x}"), Ok(vec![Piece::Lit("$".into()), Piece::Var("x".into())]));
        assert_eq!(parse_string(r"\${test}"), Ok(vec![Piece::Lit("${test}".into())]));
        assert_eq!(parse_string(""), Ok(vec![Piece::Lit(String::new())]));
    }

    #[test]
    fn bad_interpolations_are_errors() {
        for bad in ["${}", "${foo()}", "${bad +}", "${X}", "${x.}", "${x", "${x..y}", "${.x}"] {
            assert_eq!(parse_string(bad), Err(StrError::CannotParse), "{bad}");
        }
    }
}
