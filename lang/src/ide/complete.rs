//! What may be typed at the cursor: resource kinds and keywords where a statement starts;
//! in a resource body its params not yet set, edges and metaparams, and the allowed
//! values after `=>`; functions of an imported package after `pkg.`; the variables in
//! scope after `$`; a struct's fields after `->`. Works from the text as it is (half-typed
//! code included), with types from the last analysis where it has them.

use std::collections::BTreeSet;

use crate::catalog::{Catalog, FuncDecl};
use crate::init::{EDGE_PROPERTIES, META_PARAMS};
use crate::scope::default_namespace;
use crate::span::{FileId, Span};
use crate::syntax::ast::{Stmt, StmtKind};
use crate::syntax::token::{self, Tok, lex};
use crate::types::Type;

use super::{Analysis, contains};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionKind {
    Kind,
    Param,
    Meta,
    Value,
    Function,
    Variable,
    Field,
    Keyword,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Completion {
    pub label: String,
    pub kind: CompletionKind,
    pub detail: String,
    /// The text to insert in place of the word at the cursor.
    pub insert: String,
}

impl Completion {
    fn new(label: impl Into<String>, kind: CompletionKind, detail: impl Into<String>) -> Completion {
        let label = label.into();
        Completion { insert: label.clone(), label, kind, detail: detail.into() }
    }
}

const STATEMENT_KEYWORDS: [&str; 8] = ["if", "for", "forkv", "func", "class", "include", "import", "panic"];

/// The completions at `offset` of `text` (the current text of `file`); `analysis` is the
/// last one of the program, for types.
pub fn complete(
    text: &str,
    offset: u32,
    file: FileId,
    catalog: &Catalog,
    analysis: Option<&Analysis>,
) -> Vec<Completion> {
    let offset = (offset as usize).min(text.len());
    let before = &text[..offset];
    let word_start = before.trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_').len();
    let head = &before[..word_start];
    // The text as it is, parsed with recovery (half-typed code has a tree too).
    let parsed = || crate::syntax::parse(file, text).0.stmts;
    if head.ends_with('$') {
        return variables(&parsed(), offset as u32, analysis);
    }
    if let Some(alias) = head.strip_suffix('.').and_then(trailing_var) {
        return module_members(&parsed(), alias, analysis, true);
    }
    if let Some(var) = head.strip_suffix("->").and_then(trailing_var) {
        return fields(&parsed(), offset as u32, var, analysis);
    }
    if let Some(alias) = head.strip_suffix('.').and_then(trailing_word) {
        let stmts = parsed();
        let mut out = package_funcs(&stmts, alias, catalog);
        out.extend(module_members(&stmts, alias, analysis, false));
        return out;
    }
    let tokens = lex(file, text).tokens;
    if let Some(kind) = collector_query(text, &tokens, word_start, catalog) {
        return query_attrs(&kind, catalog);
    }
    let line_start = head.rfind('\n').map_or(0, |n| n + 1);
    if head[line_start..]
        .trim_start()
        .strip_prefix("include")
        .is_some_and(|rest| rest.trim().is_empty() && rest.starts_with([' ', '\t']))
    {
        return classes(&parsed());
    }
    let at_line_start = head[line_start..].trim().is_empty();
    let defines = defined_types(&parsed());
    match enclosing_body(text, &tokens, word_start, catalog, &defines) {
        Some(body) if at_line_start => match defines.iter().find(|(kind, _)| *kind == body.kind) {
            Some((_, params)) => define_entries(&body, params),
            None => body_entries(&body, catalog),
        },
        Some(body) => match field_before_rocket(&head[line_start..]) {
            Some(field) => allowed_values(&body.kind, field, catalog),
            None => functions(&parsed(), catalog),
        },
        None if at_line_start => {
            let mut out: Vec<Completion> =
                catalog.resources().map(|r| Completion::new(&r.kind, CompletionKind::Kind, "resource")).collect();
            out.extend(defines.iter().map(|(kind, _)| Completion::new(kind, CompletionKind::Kind, "defined type")));
            out.extend(STATEMENT_KEYWORDS.iter().map(|k| Completion::new(*k, CompletionKind::Keyword, "keyword")));
            out
        }
        None => functions(&parsed(), catalog),
    }
}

/// `$name` (dotted) at the end of `head`, without the `$`.
fn trailing_var(head: &str) -> Option<&str> {
    let name = head.trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    let var = &head[name.len()..];
    (name.ends_with('$') && !var.is_empty()).then_some(var)
}

/// The identifier at the end of `head` (not a variable).
fn trailing_word(head: &str) -> Option<&str> {
    let rest = head.trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_');
    let word = &head[rest.len()..];
    (!word.is_empty() && !rest.ends_with('$')).then_some(word)
}

/// `field =>` with only spaces after it, at the end of a line's text.
fn field_before_rocket(line: &str) -> Option<&str> {
    let head = line.trim_end().strip_suffix("=>")?;
    let field = head.trim();
    (!field.is_empty() && field.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some(field)
}

/// The resource body the cursor is in: its kind and the fields it sets already.
struct Body {
    kind: String,
    set: BTreeSet<String>,
}

/// Finds the innermost `{` open at `offset` and whether it opens a resource body, a
/// defaults block (`File {`) or an override (`File["x"] {`) of a known kind.
fn enclosing_body(
    text: &str,
    tokens: &[(Tok, Span)],
    offset: usize,
    catalog: &Catalog,
    defines: &[(String, Vec<(String, String)>)],
) -> Option<Body> {
    let mut open: Vec<usize> = Vec::new();
    for (i, (tok, span)) in tokens.iter().enumerate() {
        if span.start as usize >= offset {
            break;
        }
        match tok {
            Tok::LBrace => open.push(i),
            Tok::RBrace => {
                open.pop();
            }
            _ => {}
        }
    }
    let brace = *open.last()?;
    // The statement's first token: after the previous newline, `{` or `}` at this depth.
    let mut first = brace;
    let mut depth = 0i32;
    while first > 0 {
        match &tokens[first - 1].0 {
            Tok::RBrack | Tok::RParen => depth += 1,
            Tok::LBrack | Tok::LParen => depth -= 1,
            Tok::Newline | Tok::LBrace | Tok::RBrace if depth <= 0 => break,
            _ => {}
        }
        first -= 1;
    }
    let kind = tokens[first..brace].iter().find_map(|(t, span)| match t {
        Tok::At | Tok::AtAt | Tok::Collect => None,
        Tok::Ident => Some(Some(text[span.range()].to_string())),
        Tok::Cap => Some(Some(token::cap_name(&text[span.range()]))),
        _ => Some(None),
    })??;
    if catalog.resource(&kind).is_none() && !defines.iter().any(|(k, _)| *k == kind) {
        return None;
    }
    // The fields set in the body so far (up to its closing brace).
    let mut set = BTreeSet::new();
    let mut depth = 0;
    for w in tokens[brace..].windows(2) {
        match &w[0].0 {
            Tok::LBrace => depth += 1,
            Tok::RBrace => depth -= 1,
            Tok::Ident if depth == 1 && w[1].0 == Tok::Rocket => {
                set.insert(text[w[0].1.range()].to_string());
            }
            _ => {}
        }
        if depth == 0 {
            break;
        }
    }
    Some(Body { kind, set })
}

/// The kind of the collector whose query (`Kind <| … |>`, `Kind <<| … |>>`) the cursor at
/// `offset` is in, when it is a known kind and the cursor is where an attribute goes (not
/// right after a comparison).
fn collector_query(text: &str, tokens: &[(Tok, Span)], offset: usize, catalog: &Catalog) -> Option<String> {
    let before: Vec<&(Tok, Span)> = tokens.iter().take_while(|(_, s)| (s.start as usize) < offset).collect();
    let open = before.iter().rposition(|(t, _)| matches!(t, Tok::CollectOpen | Tok::ExportOpen))?;
    if before[open..].iter().any(|(t, _)| matches!(t, Tok::CollectClose | Tok::ExportClose)) {
        return None;
    }
    if matches!(before.last(), Some((Tok::EqEq | Tok::NotEq, _))) {
        return None;
    }
    let (Tok::Cap, span) = before.get(open.checked_sub(1)?)? else { return None };
    let kind = token::cap_name(&text[span.range()]);
    catalog.resource(&kind).map(|_| kind)
}

/// What a collector's query may compare: the kind's params, its name and its tags.
fn query_attrs(kind: &str, catalog: &Catalog) -> Vec<Completion> {
    let Some(decl) = catalog.resource(kind) else { return Vec::new() };
    let mut out: Vec<Completion> =
        decl.params.iter().map(|p| Completion::new(&p.name, CompletionKind::Param, p.ty.to_string())).collect();
    out.push(Completion::new("name", CompletionKind::Param, "the resource's name"));
    out.push(Completion::new("tag", CompletionKind::Param, "a tag (its classes, or `Meta:tag`)"));
    out
}

/// A resource body's params not yet set, its edges and metaparams.
fn body_entries(body: &Body, catalog: &Catalog) -> Vec<Completion> {
    let Some(decl) = catalog.resource(&body.kind) else { return Vec::new() };
    let mut out: Vec<Completion> = decl
        .params
        .iter()
        .filter(|p| !body.set.contains(&p.name))
        .map(|p| Completion {
            insert: format!("{} => ", p.name),
            ..Completion::new(&p.name, CompletionKind::Param, p.ty.to_string())
        })
        .collect();
    out.extend(EDGE_PROPERTIES.iter().map(|e| {
        let label = capitalized(e);
        Completion { insert: format!("{label} => "), ..Completion::new(label, CompletionKind::Meta, "edge") }
    }));
    out.extend(META_PARAMS.iter().map(|m| {
        let label = format!("Meta:{m}");
        Completion { insert: format!("{label} => "), ..Completion::new(label, CompletionKind::Meta, "metaparam") }
    }));
    out
}

/// The defined types of the file, by kind (a define in a class as `class:define`), each
/// with its params and their types as written.
fn defined_types(stmts: &[Stmt]) -> Vec<(String, Vec<(String, String)>)> {
    fn params(params: &Option<Vec<crate::syntax::ast::Param>>) -> Vec<(String, String)> {
        let typed = |p: &crate::syntax::ast::Param| p.ann.as_ref().map(|a| a.ty.to_string()).unwrap_or_default();
        params.iter().flatten().map(|p| (p.name.name.clone(), typed(p))).collect()
    }
    let mut out = Vec::new();
    for stmt in stmts {
        match &stmt.kind {
            StmtKind::Class { name, params: ps, define: Some(_), .. } => out.push((name.name.clone(), params(ps))),
            StmtKind::Class { name: class, body, define: None, .. } => {
                for inner in &body.stmts {
                    if let StmtKind::Class { name, params: ps, define: Some(_), .. } = &inner.kind {
                        out.push((format!("{}:{}", class.name, name.name), params(ps)));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// An instance body's params not yet set, its edges and metaparams.
fn define_entries(body: &Body, params: &[(String, String)]) -> Vec<Completion> {
    let mut out: Vec<Completion> = params
        .iter()
        .filter(|(name, _)| !body.set.contains(name))
        .map(|(name, ty)| Completion {
            insert: format!("{name} => "),
            ..Completion::new(name, CompletionKind::Param, ty.clone())
        })
        .collect();
    out.extend(EDGE_PROPERTIES.iter().map(|e| {
        let label = capitalized(e);
        Completion { insert: format!("{label} => "), ..Completion::new(label, CompletionKind::Meta, "edge") }
    }));
    out
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
}

/// The values a param of `kind` allows, quoted.
fn allowed_values(kind: &str, field: &str, catalog: &Catalog) -> Vec<Completion> {
    let Some(param) = catalog.resource(kind).and_then(|d| d.param(field)) else { return Vec::new() };
    if param.ty == Type::Bool {
        return ["true", "false"].iter().map(|b| Completion::new(*b, CompletionKind::Value, "bool")).collect();
    }
    param
        .allowed
        .iter()
        .filter(|a| !a.is_empty())
        .map(|a| Completion::new(format!("\"{a}\""), CompletionKind::Value, format!("{kind} {field}")))
        .collect()
}

/// The import aliases of a file, the import path each names and the statement's span.
fn imports(stmts: &[Stmt]) -> Vec<(String, String, Span)> {
    stmts
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Import { path, alias, .. } => {
                let name = match alias {
                    Some(crate::syntax::ast::ImportAlias::Name(n)) => n.name.clone(),
                    Some(crate::syntax::ast::ImportAlias::Star(_)) => return None,
                    None => default_namespace(path),
                };
                Some((name, path.clone(), s.span))
            }
            _ => None,
        })
        .collect()
}

/// The functions of the package imported as `alias`.
fn package_funcs(stmts: &[Stmt], alias: &str, catalog: &Catalog) -> Vec<Completion> {
    let Some((_, path, _)) = imports(stmts).into_iter().find(|(a, ..)| a == alias) else { return Vec::new() };
    catalog
        .package_funcs(&path)
        .map(|(name, decl)| Completion::new(name, CompletionKind::Function, sig(decl)))
        .collect()
}

/// A built-in's first signature, as a completion's detail.
fn sig(decl: &FuncDecl) -> String {
    decl.sigs.first().map(ToString::to_string).unwrap_or_default()
}

/// The top-level binds (`vars`) or funcs of the module imported as `alias`, as the last
/// analysis loaded it; private names are not offered.
fn module_members(stmts: &[Stmt], alias: &str, analysis: Option<&Analysis>, vars: bool) -> Vec<Completion> {
    let Some((_, _, stmt)) = imports(stmts).into_iter().find(|(a, ..)| a == alias) else { return Vec::new() };
    let Some((analysis, graph)) = analysis.and_then(|a| Some((a, a.graph.as_ref()?))) else { return Vec::new() };
    let Some(module) = graph.names.iter().find(|u| u.at == stmt).and_then(|u| u.decl) else { return Vec::new() };
    let (ast, _) = crate::syntax::parse(module.file, &analysis.sources.get(module.file).text);
    ast.stmts
        .iter()
        .filter(|s| s.private.is_none())
        .filter_map(|s| match &s.kind {
            StmtKind::Bind { name, .. } if vars => {
                let ty = analysis.decl_type(name.span).map(ToString::to_string).unwrap_or_default();
                Some(Completion::new(&name.name, CompletionKind::Variable, ty))
            }
            StmtKind::Func { name, .. } if !vars => Some(Completion::new(&name.name, CompletionKind::Function, "func")),
            _ => None,
        })
        .collect()
}

/// The classes declared in the file (nested ones by their colon names' last part, as
/// their parent's body includes them).
fn classes(stmts: &[Stmt]) -> Vec<Completion> {
    let mut out = Vec::new();
    super::walk(stmts, &mut |s| {
        if let StmtKind::Class { name, params, define: None, .. } = &s.kind {
            let params: Vec<String> = params.iter().flatten().map(|p| format!("${}", p.name.name)).collect();
            out.push(Completion::new(&name.name, CompletionKind::Kind, format!("class({})", params.join(", "))));
        }
    });
    out
}

/// Functions callable without a prefix, the file's func statements and import aliases.
fn functions(stmts: &[Stmt], catalog: &Catalog) -> Vec<Completion> {
    let mut out: Vec<Completion> = catalog
        .funcs()
        .filter(|d| !d.name.contains('.') && !d.name.contains('/') && !d.name.starts_with('_'))
        .map(|d| Completion::new(&d.name, CompletionKind::Function, sig(d)))
        .collect();
    super::walk(stmts, &mut |s| {
        if let StmtKind::Func { name, .. } = &s.kind {
            out.push(Completion::new(&name.name, CompletionKind::Function, "func"));
        }
    });
    out.extend(
        imports(stmts)
            .into_iter()
            .map(|(alias, path, _)| Completion::new(alias, CompletionKind::Keyword, format!("import \"{path}\""))),
    );
    out.extend(["true", "false"].iter().map(|k| Completion::new(*k, CompletionKind::Keyword, "bool")));
    out
}

/// The variables visible at `offset`: binds of the enclosing blocks, params of the
/// enclosing funcs and classes, loop variables.
fn visible(stmts: &[Stmt], offset: u32, out: &mut Vec<(String, Span)>) {
    for stmt in stmts {
        match &stmt.kind {
            StmtKind::Bind { name, .. } => out.push((name.name.clone(), name.span)),
            StmtKind::Func { func, .. } if contains(func.span, offset) => {
                out.extend(func.params.iter().map(|p| (p.name.name.clone(), p.name.span)))
            }
            StmtKind::Class { params, body, define, .. } if contains(body.span, offset) => {
                if let Some(keyword) = define {
                    out.extend(["name", "title"].map(|n| (n.to_string(), *keyword)));
                }
                out.extend(params.iter().flatten().map(|p| (p.name.name.clone(), p.name.span)));
                visible(&body.stmts, offset, out);
            }
            StmtKind::For { index: a, value: b, body, .. } | StmtKind::ForKv { key: a, value: b, body, .. }
                if contains(body.span, offset) =>
            {
                out.push((a.name.clone(), a.span));
                out.push((b.name.clone(), b.span));
                visible(&body.stmts, offset, out);
            }
            StmtKind::If { then, els, .. } => {
                for block in std::iter::once(then).chain(els) {
                    if contains(block.span, offset) {
                        visible(&block.stmts, offset, out);
                    }
                }
            }
            StmtKind::Node { body, .. } if contains(body.span, offset) => visible(&body.stmts, offset, out),
            _ => {}
        }
    }
}

fn variables(stmts: &[Stmt], offset: u32, analysis: Option<&Analysis>) -> Vec<Completion> {
    let mut names = Vec::new();
    visible(stmts, offset, &mut names);
    let mut seen = BTreeSet::new();
    names
        .into_iter()
        .rev()
        .filter(|(name, _)| seen.insert(name.clone()))
        .map(|(name, span)| {
            let ty = analysis.and_then(|a| a.decl_type(span)).map(ToString::to_string).unwrap_or_default();
            Completion::new(name, CompletionKind::Variable, ty)
        })
        .collect()
}

/// The fields of the struct `$var` holds.
fn fields(stmts: &[Stmt], offset: u32, var: &str, analysis: Option<&Analysis>) -> Vec<Completion> {
    let mut names = Vec::new();
    visible(stmts, offset, &mut names);
    let Some((_, decl)) = names.into_iter().rev().find(|(n, _)| n == var) else { return Vec::new() };
    match analysis.and_then(|a| a.decl_type(decl)) {
        Some(Type::Struct(fields)) => {
            fields.iter().map(|(name, ty)| Completion::new(name, CompletionKind::Field, ty.to_string())).collect()
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::analyze;
    use super::super::testing::catalog;
    use super::*;
    use crate::loader::MemLoader;

    /// The labels offered at the `^` of `marked`, with the types of the analysis of
    /// `analysed` (the last text that compiled; `None`: `marked` without the mark).
    fn labels_after(analysed: Option<&str>, marked: &str) -> Vec<String> {
        let offset = marked.find('^').unwrap() as u32;
        let text = marked.replacen('^', "", 1);
        let catalog = catalog();
        let analysed = analysed.unwrap_or(&text);
        let analysis = analyze("/main.mcl", &MemLoader::new().with("/main.mcl", analysed), &catalog);
        complete(&text, offset, FileId(0), &catalog, Some(&analysis)).into_iter().map(|c| c.label).collect()
    }

    fn labels(marked: &str) -> Vec<String> {
        labels_after(None, marked)
    }

    #[test]
    fn a_resource_body_offers_the_params_not_yet_set() {
        let got = labels("file \"/a\" {\n\tcontent => \"x\",\n\t^\n}\n");
        assert!(got.contains(&"state".to_string()) && got.contains(&"mode".to_string()), "{got:?}");
        assert!(!got.contains(&"content".to_string()), "{got:?}");
        assert!(got.contains(&"Meta:noop".to_string()) && got.contains(&"Notify".to_string()), "{got:?}");
        // After `=>`, the values the param allows.
        assert_eq!(labels("file \"/a\" {\n\tstate => ^\n}\n"), ["\"exists\"", "\"absent\""]);
    }

    #[test]
    fn a_collector_query_offers_the_kind_s_params_and_its_body_the_unset_ones() {
        let got = labels("File <| ^ |>\n");
        assert!(got.contains(&"mode".to_string()) && got.contains(&"tag".to_string()), "{got:?}");
        let got = labels("File <| mode == \"0644\" and ^ |>\n");
        assert!(got.contains(&"content".to_string()), "{got:?}");
        let got = labels("File <| tag == \"web\" |> {\n\tmode => \"0600\",\n\t^\n}\n");
        assert!(got.contains(&"content".to_string()) && !got.contains(&"mode".to_string()), "{got:?}");
    }

    #[test]
    fn a_defined_type_s_instance_offers_its_params_and_its_body_the_title() {
        let define =
            "define vhost($port int = 80, $root str = \"/srv\") {\n\tfile $root {\n\t\tcontent => $^,\n\t}\n}\n";
        let got = labels(define);
        assert!(got.contains(&"port".to_string()) && got.contains(&"name".to_string()), "{got:?}");
        let instance = "define vhost($port int = 80, $root str = \"/srv\") {\n}\nvhost \"a\" {\n\tport => 1,\n\t^\n}\n";
        let got = labels(instance);
        assert!(got.contains(&"root".to_string()) && !got.contains(&"port".to_string()), "{got:?}");
        assert!(got.contains(&"Notify".to_string()), "{got:?}");
        // The instance kind at a statement's start, never after `include`.
        let got = labels("define vhost($port int = 80) {\n}\n^\n");
        assert!(got.contains(&"vhost".to_string()), "{got:?}");
        assert!(labels("define vhost() {\n}\nclass web { }\ninclude ^\n") == ["web"]);
    }

    #[test]
    fn include_offers_the_classes() {
        let got = labels("class web($port) { }\nclass db { }\ninclude ^\n");
        assert_eq!(got, ["web", "db"]);
    }

    #[test]
    fn a_statement_start_offers_kinds_and_keywords() {
        let got = labels("$x = 1\n^\n");
        assert!(got.contains(&"file".to_string()) && got.contains(&"class".to_string()), "{got:?}");
        assert!(!got.contains(&"len".to_string()), "{got:?}");
        let got = labels("$x = ^\n");
        assert!(got.contains(&"len".to_string()) && !got.contains(&"file".to_string()), "{got:?}");
    }

    #[test]
    fn variables_in_scope_only() {
        let mut got = labels("$top = 1\nclass c($p) {\n\t$inner = $^\n}\nclass d($q) { $hidden = 1 }\n$other = 2\n");
        got.sort();
        // The bind being typed is not offered (a bind cannot use itself).
        assert_eq!(got, ["other", "p", "top"]);
    }

    #[test]
    fn package_functions_after_the_alias() {
        assert_eq!(labels("import \"strings\"\n$u = strings.^\n"), ["to_upper"]);
        assert_eq!(labels("import \"strings\" as s\n$u = s.^\n"), ["to_upper"]);
    }

    #[test]
    fn struct_fields_after_the_arrow_with_the_last_good_types() {
        let good = "$s = struct{port => 80, host => \"h\"}\n$p = $s->port\nfile \"/a\" { content => \"${p}\", }\n";
        let typing = "$s = struct{port => 80, host => \"h\"}\n$p = $s->^\nfile \"/a\" { content => \"${p}\", }\n";
        assert_eq!(labels_after(Some(good), typing), ["port", "host"]);
    }

    #[test]
    fn a_local_module_offers_its_public_binds_and_funcs() {
        let catalog = catalog();
        let main = "import \"web/\"\n$g = $web.greeting\n$h = web.helper()\nfile \"/a\" { content => $g + $h, }\n";
        let loader = MemLoader::new()
            .with("/main.mcl", main)
            .with("/web/main.mcl", "$greeting = \"hi\"\nprivate $secret = 1\nfunc helper() str { \"h\" }\n");
        let analysis = analyze("/main.mcl", &loader, &catalog);
        assert!(analysis.errors.is_empty(), "{:?}", analysis.errors.first());
        let labels = |needle: &str| -> Vec<(String, String)> {
            let offset = main.find(needle).unwrap() as u32 + needle.len() as u32;
            complete(main, offset, FileId(0), &catalog, Some(&analysis))
                .into_iter()
                .map(|c| (c.label, c.detail))
                .collect()
        };
        assert_eq!(labels("$web."), [("greeting".to_string(), "str".to_string())]);
        assert_eq!(labels("= web."), [("helper".to_string(), "func".to_string())]);
    }
}
