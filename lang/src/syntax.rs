//! Syntax: tokens, the parser and the AST it produces.
//!
//! [`parse`] turns one file's text into an [`ast::File`] plus every lexer and syntax error
//! it found (stage `errLexParse`). It never panics and always returns a tree: statements
//! that failed to parse are left out, and the parser resumes at the next statement.

pub mod ast;
mod parser;
pub mod token;
pub mod visit;

use crate::diag::Diagnostics;
use crate::span::{FileId, Span};

/// Lexes and parses one mcl file (spec sections 1-4 and Appendix A).
/// How many of the lexer's errors are kept (see the parser's own bound).
const LEX_ERRORS: usize = 100;

pub fn parse(file: FileId, text: &str) -> (ast::File, Diagnostics) {
    let (pieces, tokens, diags) = lex_and_parse(file, text);
    // The tokens of a large file weigh more than its statements: gone before those join.
    drop(tokens);
    (ast::File { file, stmts: parser::joined(pieces) }, diags)
}

/// [`parse`], also giving the tokens it read (the formatter lays them out).
pub fn parse_with_tokens(file: FileId, text: &str) -> (ast::File, Vec<(token::Tok, Span)>, Diagnostics) {
    let (pieces, tokens, diags) = lex_and_parse(file, text);
    (ast::File { file, stmts: parser::joined(pieces) }, tokens, diags)
}

/// The statements in pieces (see [`parser::parse_tokens_split`]), the tokens and every
/// diagnostic.
#[allow(clippy::type_complexity)]
fn lex_and_parse(file: FileId, text: &str) -> (Vec<Vec<ast::Stmt>>, Vec<(token::Tok, Span)>, Diagnostics) {
    let token::Lexed { tokens, mut diags, misquoted } = token::lex(file, text);
    // A file of garbage: its first errors say it; the rest are not kept.
    diags.truncate(LEX_ERRORS);
    let (pieces, parse_diags) = if diags.is_empty() {
        parser::parse_tokens_split(file, text, &tokens)
    } else {
        let (stmts, parse_diags) = parser::parse_tokens(file, text, &tokens);
        (vec![stmts], parse_diags)
    };
    // Past a string that lost its closing quote, syntax errors only echo the lexer's.
    let causes = parse_diags
        .into_vec()
        .into_iter()
        .filter(|d| misquoted.is_none_or(|m| d.span.is_none_or(|s| s.start <= m.start)));
    diags.extend(causes.collect());
    (pieces, tokens, diags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_past_a_misquoted_string_are_not_reported() {
        // `"abc` lacks its quote: `print "` closes it, `p` looks like a syntax error, and
        // the last string never ends. Only the cause is reported.
        let (_, diags) = parse(FileId(0), "$x = \"abc\nprint \"p\" {\n\tmsg => \"hi\",\n}\n");
        let messages: Vec<_> = diags.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(messages, ["unterminated string literal"]);
        // Without a misquoted string, syntax errors are all kept.
        let (_, diags) = parse(FileId(0), "$x = = 1\n$y = \"abc\n");
        assert_eq!(diags.len(), 2);
    }
}
