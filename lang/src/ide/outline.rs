//! The outline of one file: its classes, funcs, types, node definitions, resources and
//! top-level binds, nested as written.

use crate::span::{FileId, Span};
use crate::syntax::ast::{Stmt, StmtKind};

use super::blocks;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolKind {
    Class,
    Func,
    Type,
    Node,
    Resource,
    Variable,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Symbol {
    pub name: String,
    /// What it is, in a few words (`file`, `class`, a func's params).
    pub detail: String,
    pub kind: SymbolKind,
    /// The whole statement.
    pub span: Span,
    /// The name within it.
    pub name_span: Span,
    pub children: Vec<Symbol>,
}

/// The symbols of `text` (parsed with recovery, so a file with errors has an outline too).
pub fn outline(file: FileId, text: &str) -> Vec<Symbol> {
    let (ast, _) = crate::syntax::parse(file, text);
    symbols(&ast.stmts, text, true)
}

fn symbols(stmts: &[Stmt], text: &str, top: bool) -> Vec<Symbol> {
    let mut out = Vec::new();
    for stmt in stmts {
        let snippet = |s: Span| text.get(s.range()).unwrap_or("").to_string();
        let symbol = |name: String, detail: &str, kind, name_span| Symbol {
            name,
            detail: detail.to_string(),
            kind,
            span: stmt.span,
            name_span,
            children: Vec::new(),
        };
        let found = match &stmt.kind {
            StmtKind::Class { name, .. } => Some(symbol(name.name.clone(), "class", SymbolKind::Class, name.span)),
            StmtKind::Func { name, func } => {
                let params: Vec<String> = func.params.iter().map(|p| format!("${}", p.name.name)).collect();
                Some(symbol(name.name.clone(), &format!("func({})", params.join(", ")), SymbolKind::Func, name.span))
            }
            StmtKind::Type(decl) => Some(symbol(decl.name.name.clone(), "type", SymbolKind::Type, decl.name.span)),
            StmtKind::Node { matchers, .. } => {
                let first = matchers.first().map(|m| match m {
                    crate::syntax::ast::NodeMatch::Name { span, .. }
                    | crate::syntax::ast::NodeMatch::Regex { span, .. }
                    | crate::syntax::ast::NodeMatch::Default(span) => *span,
                });
                let span = first.unwrap_or(stmt.span);
                let names: Vec<String> = matchers
                    .iter()
                    .map(|m| match m {
                        crate::syntax::ast::NodeMatch::Name { name, .. } => format!("{name:?}"),
                        crate::syntax::ast::NodeMatch::Regex { pattern, .. } => format!("/{pattern}/"),
                        crate::syntax::ast::NodeMatch::Default(_) => "default".to_string(),
                    })
                    .collect();
                Some(symbol(format!("node {}", names.join(", ")), "node", SymbolKind::Node, span))
            }
            StmtKind::Resource(r) => Some(symbol(
                format!("{} {}", r.kind.name, snippet(r.name.span)),
                &r.kind.name,
                SymbolKind::Resource,
                r.name.span,
            )),
            StmtKind::Bind { name, .. } if top => {
                Some(symbol(format!("${}", name.name), "bind", SymbolKind::Variable, name.span))
            }
            _ => None,
        };
        let children: Vec<Symbol> = blocks(stmt).into_iter().flat_map(|b| symbols(&b.stmts, text, false)).collect();
        match found {
            Some(mut s) => {
                s.children = children;
                out.push(s);
            }
            // An `if` or `for` is no symbol; what it declares is.
            None => out.extend(children),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_hold_their_resources_and_branches_are_flattened() {
        let text =
            "$top = 1\nclass web($port) {\n\tif true {\n\t\tfile \"/etc/web\" { }\n\t}\n}\nfunc f($a, $b) { $a }\n";
        let syms = outline(FileId(0), text);
        let names: Vec<(&str, SymbolKind)> = syms.iter().map(|s| (s.name.as_str(), s.kind)).collect();
        assert_eq!(names, [("$top", SymbolKind::Variable), ("web", SymbolKind::Class), ("f", SymbolKind::Func)]);
        assert_eq!(syms[1].children[0].name, "file \"/etc/web\"");
        assert_eq!(syms[2].detail, "func($a, $b)");
        // Half-typed code still has an outline.
        let syms = outline(FileId(0), "class web {\n\tfile \"/a\" {\n\t\tcontent =>\n\t}\n}\n");
        assert!(syms.iter().any(|s| s.name == "web"), "{syms:?}");
    }
}
