//! What the cursor is on: a value's inferred type, a function's signatures and
//! documentation, a declaration's header, a resource kind's params.

use std::fmt::Write;

use crate::catalog::{Catalog, ParamDecl, ResourceDecl};
use crate::span::{FileId, Span};
use crate::syntax::ast::{Collector, EdgeHalf, ResEntry, ResEntryKind, StmtKind};

use super::{Analysis, contains, walk};

/// Markdown about the text at `span`.
#[derive(Clone, Debug, PartialEq)]
pub struct Info {
    pub span: Span,
    pub markdown: String,
}

/// What to show for the cursor at `offset` of `file`.
pub fn hover(analysis: &Analysis, catalog: &Catalog, file: FileId, offset: u32) -> Option<Info> {
    if let Some(info) = resource_part(analysis, catalog, file, offset) {
        return Some(info);
    }
    if let Some(u) = analysis.use_at(file, offset) {
        let mut md = String::new();
        if let Some(name) = &u.builtin {
            md.push_str(&func_doc(catalog, name));
        } else if let Some(decl) = u.decl {
            md.push_str(&header(analysis, decl));
        }
        let ty = u.node.and_then(|n| analysis.ty(n)).or_else(|| {
            // A call: the type of the call expression that starts with the name.
            analysis.typed_node_at(file, u.at.start).filter(|(s, _)| s.start == u.at.start).map(|(_, t)| t)
        });
        if let Some(ty) = ty {
            add_type(&mut md, analysis.sources.snippet(u.at), ty);
        }
        return (!md.is_empty()).then_some(Info { span: u.at, markdown: md });
    }
    if let Some(decl) = analysis.decl_at(file, offset) {
        let mut md = header(analysis, decl);
        if let Some(ty) = analysis.decl_type(decl) {
            add_type(&mut md, analysis.sources.snippet(decl), ty);
        }
        return Some(Info { span: decl, markdown: md });
    }
    let (span, ty) = analysis.typed_node_at(file, offset)?;
    Some(Info { span, markdown: format!("`{ty}`") })
}

/// Appends `` `name`: `type` `` as a paragraph of its own.
fn add_type(md: &mut String, name: &str, ty: &crate::types::Type) {
    let sep = if md.is_empty() { "" } else { "\n\n" };
    let _ = write!(md, "{sep}`{name}`: `{ty}`");
}

/// The source line a declaration is on, as code; a declared type's whole statement (its
/// attributes, defaults, checks and invariants).
fn header(analysis: &Analysis, decl: Span) -> String {
    let file = analysis.sources.get(decl.file);
    let (_, line) = file.line_of(decl.start);
    let is_type = |l: &str| l.trim_start().trim_start_matches("private").trim_start().starts_with("type ");
    if is_type(&file.text[line.clone()])
        && let Some(text) = type_statement(&file.text, decl)
    {
        return format!("```mcl\n{text}\n```");
    }
    let text = file.text[line].trim().trim_end_matches('{').trim_end();
    if text.is_empty() {
        return format!("`{}`", file.shown_name());
    }
    format!("```mcl\n{text}\n```")
}

/// The text of the `type` statement whose name is at `decl`.
fn type_statement(text: &str, decl: Span) -> Option<&str> {
    let (ast, _) = crate::syntax::parse(decl.file, text);
    let mut found = None;
    walk(&ast.stmts, &mut |stmt| {
        if let StmtKind::Type(t) = &stmt.kind
            && t.name.span == decl
        {
            found = text.get(stmt.span.range());
        }
    });
    found
}

/// A built-in function's signatures and documentation.
fn func_doc(catalog: &Catalog, name: &str) -> String {
    let Some(decl) = catalog.func(name) else { return format!("`{name}`") };
    let mut md = String::from("```mcl\n");
    for sig in &decl.sigs {
        let _ = writeln!(md, "{name}: {sig}");
    }
    if decl.sigs.is_empty() {
        let _ = writeln!(md, "{name}: (its signature depends on its arguments)");
    }
    md.push_str("```");
    if !decl.doc.is_empty() {
        let _ = write!(md, "\n\n{}", decl.doc);
    }
    md
}

/// A resource kind's params, send fields and metaparams.
fn kind_doc(decl: &ResourceDecl) -> String {
    let mut md = format!("**{}** resource\n\n", decl.kind);
    for p in &decl.params {
        let _ = writeln!(md, "- {}", param_line(p));
    }
    if !decl.sends.is_empty() {
        let sends: Vec<String> = decl.sends.iter().map(|p| format!("`{}` {}", p.name, p.ty)).collect();
        let _ = write!(md, "\nsends: {}\n", sends.join(", "));
    }
    md.push_str(
        "\nedges: `Before`, `Depend`, `Notify`, `Listen`; metaparams: `Meta:NAME` (`noop`, `retry`, `poll`, …)",
    );
    md
}

fn param_line(p: &ParamDecl) -> String {
    let mut line = format!("`{}` {}", p.name, p.ty);
    if let Some(default) = &p.default {
        let _ = write!(line, " (default `{default}`)");
    }
    let allowed: Vec<String> = p.allowed.iter().filter(|a| !a.is_empty()).map(|a| format!("`\"{a}\"`")).collect();
    if !allowed.is_empty() {
        let _ = write!(line, ": one of {}", allowed.join(", "));
        if p.allowed.iter().any(String::is_empty) {
            line.push_str(", or unset");
        }
    }
    line
}

/// The kind word or a field name of a resource, defaults, override, collector or edge.
fn resource_part(analysis: &Analysis, catalog: &Catalog, file: FileId, offset: u32) -> Option<Info> {
    let text = &analysis.sources.get(file).text;
    // Only a word followed by what follows a kind or a field (a name, `{`, `[`, `=>`, `<|`)
    // is worth parsing the file for.
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let end = text.get(offset as usize..)?.find(|c: char| !word(c)).map_or(text.len(), |n| offset as usize + n);
    let next = text[end..].trim_start_matches([' ', '\t']).chars().next();
    if !matches!(next, Some('"' | '$' | '{' | '[' | '=' | '+' | '<')) {
        return None;
    }
    let (ast, _) = crate::syntax::parse(file, text);
    let mut found = None;
    let kind_info = |kind: &str, span: Span| {
        let decl = catalog.resource(&kind.to_lowercase())?;
        Some(Info { span, markdown: kind_doc(decl) })
    };
    let field_info = |kind: &str, entries: &[ResEntry]| {
        let decl = catalog.resource(&kind.to_lowercase())?;
        entries.iter().find_map(|e| match &e.kind {
            ResEntryKind::Field { name, .. } | ResEntryKind::Append { name, .. } if contains(name.span, offset) => {
                let p = decl.param(&name.name)?;
                Some(Info { span: name.span, markdown: format!("{} param {}", decl.kind, param_line(p)) })
            }
            _ => None,
        })
    };
    let half = |h: &EdgeHalf| contains(h.kind.span, offset).then(|| kind_info(&h.kind.name, h.kind.span)).flatten();
    let collector = |c: &Collector| {
        if contains(c.kind.span, offset) {
            kind_info(&c.kind.name, c.kind.span)
        } else {
            field_info(&c.kind.name, &c.entries)
        }
    };
    walk(&ast.stmts, &mut |stmt| {
        if found.is_some() || !contains(stmt.span, offset) {
            return;
        }
        found = match &stmt.kind {
            StmtKind::Resource(r) if contains(r.kind.span, offset) => kind_info(&r.kind.name, r.kind.span),
            StmtKind::Resource(r) => field_info(&r.kind.name, &r.entries),
            StmtKind::Defaults { kind, entries } if contains(kind.span, offset) => kind_info(&kind.name, kind.span),
            StmtKind::Defaults { kind, entries } => field_info(&kind.name, entries),
            StmtKind::Override { target, entries } => half(target).or_else(|| field_info(&target.kind.name, entries)),
            StmtKind::Collect(c) => collector(c),
            StmtKind::Edge { sides, .. } => sides
                .iter()
                .find_map(|s| s.refs.iter().find_map(half).or_else(|| s.collector.as_deref().and_then(collector))),
            _ => None,
        };
    });
    found
}

#[cfg(test)]
mod tests {
    use super::super::testing::at;
    use super::*;

    fn shown(marked: &str) -> String {
        let (analysis, catalog, offset) = at(marked);
        hover(&analysis, &catalog, FileId(0), offset).map(|i| i.markdown).unwrap_or_default()
    }

    #[test]
    fn a_variable_shows_its_inferred_type_and_declaration() {
        let md = shown("$n = len(\"abc\") + 1\nfile \"/a\" { content => \"${^n}\", }\n");
        assert!(md.contains("`n`: `int`"), "{md}");
        assert!(md.contains("$n = len(\"abc\") + 1"), "{md}");
        // On the declaration itself too.
        let md = shown("$^n = len(\"abc\")\nfile \"/a\" { content => \"${n}\", }\n");
        assert!(md.contains("`int`"), "{md}");
    }

    #[test]
    fn a_declared_type_shows_its_attributes() {
        let src = "type vhost {\n\tattr name str\n\tattr port int { default => 80, }\n}\n$v = vh^ost{name => \"a\"}\nfile \"/a\" { content => $v->name, }\n";
        let md = shown(src);
        assert!(md.contains("attr name str") && md.contains("default => 80"), "{md}");
    }

    #[test]
    fn a_builtin_shows_its_signature_and_doc() {
        let md = shown("$n = le^n(\"abc\")\nfile \"/a\" { content => \"${n}\", }\n");
        assert!(md.contains("len: func(str) int") && md.contains("the length"), "{md}");
    }

    #[test]
    fn a_resource_kind_lists_its_params_and_a_field_its_values() {
        let md = shown("fi^le \"/a\" { state => \"exists\", }\n");
        assert!(md.contains("**file** resource") && md.contains("`content` str"), "{md}");
        assert!(md.contains("`mode` str (default `\"\"`)"), "{md}");
        let md = shown("file \"/a\" { st^ate => \"exists\", }\n");
        assert!(md.contains("`state` str: one of `\"exists\"`, `\"absent\"`, or unset"), "{md}");
    }
}
