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
use crate::span::FileId;

/// Lexes and parses one mcl file (spec sections 1-4 and Appendix A).
pub fn parse(file: FileId, text: &str) -> (ast::File, Diagnostics) {
    let (tokens, mut diags) = token::lex(file, text);
    let (stmts, parse_diags) = parser::parse_tokens(file, &tokens);
    diags.extend(parse_diags);
    (ast::File { file, stmts }, diags)
}
