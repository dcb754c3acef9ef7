//! A YAML graph's tree as the mcl statements that mean the same: one resource statement
//! per resource, one edge statement per edge, one collector per `collect` entry. Values
//! are read by the type of the param they set (as mgmt's YAML decoder does), so a wrong
//! type is caught here, at its YAML position.

use super::tree::{Node, Yaml};
use crate::catalog::Catalog;
use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::span::{FileId, Span};
use crate::syntax::ast::{self, Expr, ExprKind, Ident, ResEntry, ResEntryKind, Stmt, StmtKind, Virtuality};
use crate::types::Type;
use crate::value::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The statements of the graph, or the errors that keep it from being one; warnings
/// either way (keys mgmt ignores, which tend ignores too but says so).
pub(crate) struct Lowered {
    pub(crate) file: Option<ast::File>,
    pub(crate) errors: Diagnostics,
    pub(crate) warnings: Vec<Diagnostic>,
}

pub(crate) fn lower(file: FileId, root: Option<Yaml>, catalog: &Catalog, whole: Span) -> Lowered {
    let mut l = Lower { file, catalog, errors: Diagnostics::new(), warnings: Vec::new(), stmts: Vec::new() };
    match root {
        Some(root) => l.graph(&root, whole),
        None => l.error(Code::Syntax, "invalid graph: the file holds no YAML document (it needs `graph: NAME`)", whole),
    }
    let file = l.errors.is_empty().then(|| ast::File { file, stmts: std::mem::take(&mut l.stmts) });
    Lowered { file, errors: l.errors, warnings: l.warnings }
}

struct Lower<'c> {
    file: FileId,
    catalog: &'c Catalog,
    errors: Diagnostics,
    warnings: Vec<Diagnostic>,
    stmts: Vec<Stmt>,
}

/// A resource as the edges name it: its kind and its name.
type Named = (String, String);

impl Lower<'_> {
    fn error(&mut self, code: Code, message: impl Into<String>, span: Span) {
        self.errors.push(Diagnostic::new(Stage::LexParse, message, span).with_code(code));
    }

    fn ignored(&mut self, message: impl Into<String>, span: Span) {
        self.warnings.push(Diagnostic::warn(Stage::LexParse, message, span).with_code(Code::UnknownField));
    }

    /// The top level: `graph`, `comment`, `resources`, `edges`, `collect`.
    fn graph(&mut self, root: &Yaml, whole: Span) {
        let Some(entries) = self.map_of(root, "the graph") else { return };
        let mut name = None;
        let (mut resources, mut edges, mut collect) = (None, None, None);
        for (key, value) in entries {
            match key.scalar() {
                Some("graph") => name = Some(value),
                Some("resources") => resources = Some(value),
                Some("edges") => edges = Some(value),
                Some("collect") => collect = Some(value),
                Some("comment") => {}
                _ => self.ignored(
                    format!("{} is not a key of a YAML graph; ignored (it takes graph, resources, edges, collect and comment)", key.what()),
                    key.span,
                ),
            }
        }
        match name {
            Some(n) if n.scalar().is_some_and(|s| !s.is_empty()) && !n.is_null() => {}
            Some(n) => {
                self.error(Code::Syntax, format!("invalid graph: `graph:` needs a name, not {}", n.what()), n.span)
            }
            None => self.error(
                Code::Syntax,
                "invalid graph: it has no `graph: NAME`",
                Span::new(self.file, whole.start as usize, whole.start as usize),
            ),
        }
        let collected: BTreeSet<String> = collect.map(|c| self.collect(c)).unwrap_or_default();
        let declared = resources.map(|r| self.resources(r)).unwrap_or_default();
        if let Some(edges) = edges {
            self.edges(edges, &declared, &collected);
        }
    }

    /// A map's entries, or an error saying what `what` must be.
    fn map_of<'y>(&mut self, node: &'y Yaml, what: &str) -> Option<&'y [(Yaml, Yaml)]> {
        match &node.node {
            Node::Map(entries) => Some(entries),
            _ if node.is_null() => Some(&[]),
            _ => {
                self.error(
                    Code::Syntax,
                    format!("{what} must be a map of `key: value`, not {}", node.what()),
                    node.span,
                );
                None
            }
        }
    }

    fn seq_of<'y>(&mut self, node: &'y Yaml, what: &str) -> Option<&'y [Yaml]> {
        match &node.node {
            Node::Seq(items) => Some(items),
            _ if node.is_null() => Some(&[]),
            _ => {
                self.error(
                    Code::Syntax,
                    format!("{what} must be a list (`- ...` entries), not {}", node.what()),
                    node.span,
                );
                None
            }
        }
    }

    /// `resources:`: kinds, each with a list of resources. Returns what it declared, by
    /// kind and name, with the span of each name.
    fn resources(&mut self, node: &Yaml) -> BTreeMap<Named, Span> {
        let mut declared = BTreeMap::new();
        let Some(kinds) = self.map_of(node, "`resources:`") else { return declared };
        for (kind_node, list) in kinds {
            let kind = kind_node.scalar().unwrap_or_default().to_lowercase();
            if self.catalog.resource(&kind).is_none() {
                let mut d = Diagnostic::new(Stage::LexParse, format!("unknown resource kind `{kind}`"), kind_node.span)
                    .with_code(Code::UnknownKind);
                if let Some(close) =
                    crate::suggest::did_you_mean(&kind, self.catalog.resources().map(|r| r.kind.as_str()))
                {
                    d = d.with_note(format!("did you mean `{close}`?"));
                }
                self.errors.push(d);
                continue;
            }
            let Some(items) = self.seq_of(list, &format!("the `{kind}` resources")) else { continue };
            for item in items {
                let Some((name, span)) = self.resource(&kind, kind_node.span, item) else { continue };
                if let Some(first) = declared.get(&(kind.clone(), name.clone())) {
                    let d =
                        Diagnostic::new(Stage::LexParse, format!("`{kind}` resource `{name}` is declared twice"), span)
                            .with_code(Code::DuplicateResource)
                            .with_label(*first, "first declared here");
                    self.errors.push(d);
                    continue;
                }
                declared.insert((kind.clone(), name), span);
            }
        }
        declared
    }

    /// One resource: `name`, its params, and `meta`.
    fn resource(&mut self, kind: &str, kind_span: Span, item: &Yaml) -> Option<(String, Span)> {
        let entries = self.map_of(item, &format!("a `{kind}` resource"))?;
        // The catalog outlives `self`: no copy of the kind's params per resource.
        let catalog = self.catalog;
        let decl = catalog.resource(kind)?;
        let mut name = None;
        let mut fields = Vec::new();
        for (key, value) in entries {
            let Some(field) = key.scalar() else {
                self.error(Code::Syntax, format!("a param's name must be a string, not {}", key.what()), key.span);
                continue;
            };
            let ident = Ident { name: field.to_string(), span: key.span };
            let entry_span = key.span.to(value.span);
            match field {
                "name" => match value.scalar() {
                    Some(n) if !n.is_empty() && !value.is_null() => name = Some((n.to_string(), value.span)),
                    _ => self.error(
                        Code::Syntax,
                        format!("a resource's `name` must be a string, not {}", value.what()),
                        value.span,
                    ),
                },
                "meta" => {
                    for (mkey, mvalue) in self.map_of(value, "`meta:`").unwrap_or_default() {
                        let mname = mkey.scalar().unwrap_or_default();
                        let Some(ty) = crate::unify::meta_param_type(mname) else {
                            let known = crate::unify::META_PARAMS.map(|(n, _)| n);
                            let mut d = Diagnostic::new(
                                Stage::LexParse,
                                format!("unknown meta parameter {}", mkey.what()),
                                mkey.span,
                            )
                            .with_code(Code::InvalidProperty);
                            if let Some(close) = crate::suggest::did_you_mean(mname, known) {
                                d = d.with_note(format!("did you mean `{close}`?"));
                            }
                            self.errors.push(d);
                            continue;
                        };
                        let Some(v) = self.value(mvalue, &ty, &format!("meta `{mname}`")) else { continue };
                        let kind = ResEntryKind::Meta {
                            name: Some(Ident { name: mname.to_string(), span: mkey.span }),
                            cond: None,
                            value: expr(&v, mvalue.span),
                        };
                        fields.push(ResEntry { kind, span: mkey.span.to(mvalue.span) });
                    }
                }
                _ => {
                    let Some(param) = decl.param(field) else {
                        let mut message = format!("`{field}` is not a param of `{kind}`; ignored, as mgmt ignores it");
                        if let Some(close) =
                            crate::suggest::did_you_mean(field, decl.params.iter().map(|p| p.name.as_str()))
                        {
                            message.push_str(&format!(" (did you mean `{close}`?)"));
                        }
                        self.ignored(message, key.span);
                        continue;
                    };
                    let Some(v) = self.value(value, &param.ty, &format!("`{field}`")) else { continue };
                    let kind = ResEntryKind::Field { name: ident, cond: None, value: expr(&v, value.span) };
                    fields.push(ResEntry { kind, span: entry_span });
                }
            }
        }
        let Some((name, name_span)) = name else {
            // At its first entry: the map's own span runs on to the next line.
            let at = entries.first().map_or(item.span, |(k, v)| k.span.to(v.span));
            self.error(Code::Syntax, format!("this `{kind}` resource has no `name`"), at);
            return None;
        };
        // `@@name`: exported to other hosts, as mgmt's YAML spells it.
        let (shown, virtuality) = match name.strip_prefix("@@") {
            Some(rest) => (rest.to_string(), Virtuality::Exported),
            None => (name.clone(), Virtuality::Real),
        };
        let resource = ast::Resource {
            kind: Ident { name: kind.to_string(), span: kind_span },
            name: Expr { kind: ExprKind::Str(shown.clone()), span: name_span },
            entries: fields,
            collect: false,
            virtuality,
        };
        self.stmts.push(Stmt { kind: StmtKind::Resource(resource), span: item.span, private: None });
        Some((shown, name_span))
    }

    /// `edges:`: `{name, from: {kind, name}, to: {kind, name}, notify}` each.
    fn edges(&mut self, node: &Yaml, declared: &BTreeMap<Named, Span>, collected: &BTreeSet<String>) {
        let Some(items) = self.seq_of(node, "`edges:`") else { return };
        for item in items {
            let Some(entries) = self.map_of(item, "an edge") else { continue };
            let (mut from, mut to, mut notify) = (None, None, false);
            for (key, value) in entries {
                match key.scalar() {
                    Some("from") => from = Some(value),
                    Some("to") => to = Some(value),
                    Some("notify") => {
                        notify = self.value(value, &Type::Bool, "`notify`").is_some_and(|v| v == Value::Bool(true))
                    }
                    Some("name") => {}
                    _ => self.ignored(
                        format!("{} is not a key of an edge; ignored (it takes name, from, to and notify)", key.what()),
                        key.span,
                    ),
                }
            }
            let (Some(from), Some(to)) = (from, to) else {
                let missing = if from.is_none() { "from" } else { "to" };
                self.error(Code::Syntax, format!("this edge has no `{missing}:`"), item.span);
                continue;
            };
            let (Some(a), Some(b)) =
                (self.end(from, "from", declared, collected), self.end(to, "to", declared, collected))
            else {
                continue;
            };
            let link = ast::EdgeLink { notify, backward: false, span: item.span };
            let sides = vec![
                ast::EdgeSide { refs: vec![a], collector: None, span: from.span },
                ast::EdgeSide { refs: vec![b], collector: None, span: to.span },
            ];
            self.stmts.push(Stmt { kind: StmtKind::Edge { sides, links: vec![link] }, span: item.span, private: None });
        }
    }

    /// One end of an edge, which must name a resource of this graph (or of a kind it
    /// collects from other hosts).
    fn end(
        &mut self,
        node: &Yaml,
        side: &str,
        declared: &BTreeMap<Named, Span>,
        collected: &BTreeSet<String>,
    ) -> Option<ast::EdgeHalf> {
        let entries = self.map_of(node, &format!("`{side}:`"))?;
        let field = |k: &str| entries.iter().find(|(key, _)| key.scalar() == Some(k)).map(|(_, v)| v);
        let (Some(kind), Some(name)) = (field("kind"), field("name")) else {
            let missing = if field("kind").is_none() { "kind" } else { "name" };
            self.error(Code::Syntax, format!("`{side}:` needs a `{missing}:`"), node.span);
            return None;
        };
        let (Some(kind_text), Some(name_text)) = (kind.scalar(), name.scalar()) else {
            self.error(Code::Syntax, format!("`{side}:` takes a kind and a name as strings"), node.span);
            return None;
        };
        let kind_text = kind_text.to_lowercase();
        let name_text = name_text.strip_prefix("@@").unwrap_or(name_text).to_string();
        if !declared.contains_key(&(kind_text.clone(), name_text.clone())) && !collected.contains(&kind_text) {
            let what = if declared.keys().any(|(k, _)| *k == kind_text) {
                format!("the graph has no `{kind_text}` resource named `{name_text}`")
            } else {
                format!("the graph has no `{kind_text}` resources")
            };
            self.error(Code::UnknownResource, format!("edge `{side}:` names nothing: {what}"), node.span);
            return None;
        }
        Some(ast::EdgeHalf {
            kind: Ident { name: kind_text, span: kind.span },
            name: Expr { kind: ExprKind::Str(name_text), span: name.span },
            field: None,
            span: node.span,
        })
    }

    /// `collect:`: `{kind, pattern}` each; every resource of the kind other hosts export.
    fn collect(&mut self, node: &Yaml) -> BTreeSet<String> {
        let mut kinds = BTreeSet::new();
        let Some(items) = self.seq_of(node, "`collect:`") else { return kinds };
        for item in items {
            let Some(entries) = self.map_of(item, "a collector") else { continue };
            let mut kind = None;
            for (key, value) in entries {
                match key.scalar() {
                    Some("kind") => kind = Some(value),
                    Some("pattern") if value.scalar().is_some_and(str::is_empty) || value.is_null() => {}
                    Some("pattern") => self.ignored("a collector's `pattern` is not implemented (mgmt ignores it too): it collects every resource of its kind", value.span),
                    _ => self.ignored(format!("{} is not a key of a collector; ignored (it takes kind and pattern)", key.what()), key.span),
                }
            }
            let Some(kind_node) = kind else {
                self.error(Code::Syntax, "this collector has no `kind:`", item.span);
                continue;
            };
            let name = kind_node.scalar().unwrap_or_default().to_lowercase();
            if self.catalog.resource(&name).is_none() {
                self.error(Code::UnknownKind, format!("unknown resource kind `{name}`"), kind_node.span);
                continue;
            }
            let collector = ast::Collector {
                kind: Ident { name: name.clone(), span: kind_node.span },
                exported: true,
                query: None,
                entries: Vec::new(),
                span: item.span,
            };
            self.stmts.push(Stmt { kind: StmtKind::Collect(collector), span: item.span, private: None });
            kinds.insert(name);
        }
        kinds
    }

    /// The value of `node` as a value of type `ty`, read as mgmt's YAML decoder reads it:
    /// a string takes any scalar's text, a number or a bool only a plain scalar, nothing
    /// (`~`, an empty value) is the type's zero value.
    fn value(&mut self, node: &Yaml, ty: &Type, what: &str) -> Option<Value> {
        if node.is_null() {
            return Some(Value::zero(ty));
        }
        let wrong = |l: &mut Self, expected: &str| {
            l.error(Code::TypeMismatch, format!("{what} takes {expected}, not {}", node.what()), node.span);
            None
        };
        match (ty, &node.node) {
            (Type::Str, Node::Scalar { text, .. }) => Some(Value::str(text)),
            (Type::Bool, Node::Scalar { text, plain: true }) => match bool_of(text) {
                Some(b) => Some(Value::Bool(b)),
                None => wrong(self, "a bool (true or false)"),
            },
            (Type::Int, Node::Scalar { text, plain: true }) => match int_of(text) {
                Some(i) => Some(Value::Int(i)),
                None => wrong(self, "an int"),
            },
            (Type::Float, Node::Scalar { text, plain: true }) => match float_of(text) {
                Some(f) => Some(Value::Float(f)),
                None => wrong(self, "a float"),
            },
            (Type::List(elem), Node::Seq(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    out.push(self.value(item, elem, &format!("{what}[{i}]"))?);
                }
                Some(Value::list(out))
            }
            (Type::Map(k, v), Node::Map(entries)) => {
                let mut out = BTreeMap::new();
                for (key, value) in entries {
                    let key = self.value(key, k, &format!("a key of {what}"))?;
                    let value = self.value(value, v, &format!("{what}[{key}]"))?;
                    out.insert(key, value);
                }
                Some(Value::map(out))
            }
            (Type::Struct(fields), Node::Map(entries)) => {
                let mut given = BTreeMap::new();
                for (key, value) in entries {
                    let name = key.scalar().unwrap_or_default();
                    let Some((_, fty)) = fields.iter().find(|(f, _)| f == name) else {
                        let names: Vec<&str> = fields.iter().map(|(f, _)| f.as_str()).collect();
                        self.error(
                            Code::UnknownStructField,
                            format!("{what} has no field {} (it has {})", key.what(), names.join(", ")),
                            key.span,
                        );
                        return None;
                    };
                    given.insert(name.to_string(), self.value(value, fty, &format!("{what}.{name}"))?);
                }
                let all =
                    fields.iter().map(|(f, fty)| (f.clone(), given.remove(f).unwrap_or_else(|| Value::zero(fty))));
                Some(Value::strukt(all.collect()))
            }
            (Type::Str | Type::Bool | Type::Int | Type::Float, _) => wrong(self, &format!("a single {ty}")),
            (Type::List(_), _) => wrong(self, "a list"),
            (Type::Map(..) | Type::Struct(_), _) => wrong(self, "a map"),
            _ => {
                self.error(
                    Code::TypeMismatch,
                    format!("{what} (of type {ty}) cannot be given in a YAML graph"),
                    node.span,
                );
                None
            }
        }
    }
}

/// YAML 1.1's bools, which mgmt's decoder reads.
fn bool_of(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "y" => Some(true),
        "false" | "no" | "off" | "n" => Some(false),
        _ => None,
    }
}

/// An int as YAML 1.1 writes one: decimal, `0x` hex, `0o` or leading-`0` octal, `0b`
/// binary, with an optional sign and `_` separators.
fn int_of(text: &str) -> Option<i64> {
    let cleaned = text.replace('_', "");
    let (negative, digits) = match cleaned.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, cleaned.strip_prefix('+').unwrap_or(&cleaned)),
    };
    let (radix, body) = if let Some(h) = digits.strip_prefix("0x") {
        (16, h)
    } else if let Some(o) = digits.strip_prefix("0o") {
        (8, o)
    } else if let Some(b) = digits.strip_prefix("0b") {
        (2, b)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    if body.is_empty() {
        return None;
    }
    let magnitude = i128::from_str_radix(body, radix).ok()?;
    i64::try_from(if negative { -magnitude } else { magnitude }).ok()
}

fn float_of(text: &str) -> Option<f64> {
    match text.to_ascii_lowercase().as_str() {
        ".inf" | "+.inf" => Some(f64::INFINITY),
        "-.inf" => Some(f64::NEG_INFINITY),
        ".nan" => Some(f64::NAN),
        _ => int_of(text).map(|i| i as f64).or_else(|| text.replace('_', "").parse().ok()),
    }
}

/// A constant value as the literal expression that writes it, at `span`.
fn expr(v: &Value, span: Span) -> Expr {
    let kind = match v {
        Value::Bool(b) => ExprKind::Bool(*b),
        Value::Int(i) => ExprKind::Int(*i),
        Value::Float(f) => ExprKind::Float(*f),
        Value::Str(s) => ExprKind::Str(s.to_string()),
        Value::List(items) => ExprKind::List(items.iter().map(|i| expr(i, span)).collect()),
        Value::Map(entries) => ExprKind::Map(entries.iter().map(|(k, v)| (expr(k, span), expr(v, span))).collect()),
        Value::Struct(fields) => {
            ExprKind::Struct(fields.iter().map(|(n, v)| (Ident { name: n.clone(), span }, expr(v, span))).collect())
        }
        // Not a value a YAML scalar reads as.
        Value::Func(_) => ExprKind::Error,
    };
    Expr { kind, span }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_numbers_and_bools_read_as_mgmt_reads_them() {
        assert_eq!(int_of("0644"), Some(420));
        assert_eq!(int_of("0x1f"), Some(31));
        assert_eq!(int_of("-1_000"), Some(-1000));
        assert_eq!(int_of("12a"), None);
        assert_eq!(int_of("99999999999999999999"), None);
        assert_eq!(bool_of("Yes"), Some(true));
        assert_eq!(bool_of("maybe"), None);
        assert_eq!(float_of("1.5"), Some(1.5));
        assert_eq!(float_of("3"), Some(3.0));
    }
}
