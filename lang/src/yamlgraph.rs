//! mgmt's second front end: a resource graph written in YAML (`graph:`, `resources:` by
//! kind, `edges:`, `collect:`), read into the mcl statements that mean the same, so every
//! later stage, kind and metaparam is mcl's own.

mod lower;
mod tree;

use crate::catalog::Catalog;
use crate::diag::{Diagnostic, Diagnostics};
use crate::span::{FileId, Span};
use crate::syntax::ast;

/// Whether a program's entry file is a YAML graph rather than mcl (by its extension).
pub fn is_yaml(path: &str) -> bool {
    path.ends_with(".yaml") || path.ends_with(".yml")
}

/// The YAML graph in `text` as mcl statements, or the errors that keep it from being one
/// (each at its YAML position); warnings either way.
pub fn parse(file: FileId, text: &str, catalog: &Catalog) -> (Option<ast::File>, Diagnostics, Vec<Diagnostic>) {
    let root = match tree::parse(file, text) {
        Ok(root) => root,
        Err(e) => return (None, e.into(), Vec::new()),
    };
    let lowered = lower::lower(file, root, catalog, Span::new(file, 0, text.len()));
    (lowered.file, lowered.errors, lowered.warnings)
}
