//! Syntax: tokens, the parser and the AST it produces.

pub mod ast;
