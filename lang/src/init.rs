//! The Init stage: structural validation of a parsed file that needs no scope or types
//! (spec 6.1 `errInit`, 3.5, 4.2): resource bodies (duplicate fields and meta entries,
//! edge properties, meta names, kinds), variable names, literal map keys, struct literal
//! fields, and imports inside loops.

use std::collections::HashSet;

use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::span::Span;
use crate::syntax::ast::{
    Collector, Expr, ExprKind, File, Ident, Lambda, Param, Query, ResEntry, ResEntryKind, Resource, Stmt, StmtKind,
    TypeDecl, TypeDef,
};
use crate::types::Type;

/// The edge properties a resource body may use (lower-cased).
pub const EDGE_PROPERTIES: [&str; 4] = ["before", "depend", "notify", "listen"];

/// The single meta parameters (`Meta:name`), spec 3.5.4.
pub const META_PARAMS: [&str; 18] = [
    "noop",
    "retry",
    "retryreset",
    "delay",
    "timeout",
    "poll",
    "limit",
    "burst",
    "reset",
    "sema",
    "rewatch",
    "realize",
    "dollar",
    "hidden",
    "export",
    "reverse",
    "autoedge",
    "autogroup",
];

/// Validates `file`; every problem found is reported (stage `errInit`).
pub fn check(file: &File) -> Diagnostics {
    let mut ctx = Ctx { diags: Diagnostics::new(), depth: 0, class_body: None };
    ctx.stmts(&file.stmts, None);
    ctx.diags
}

struct Ctx {
    diags: Diagnostics,
    /// How many blocks deep the statements being checked are (0: the file's top level).
    depth: usize,
    /// The depth of the class body being checked, where a `define` may stand too.
    class_body: Option<usize>,
}

/// Which kind of body a list of entries is.
#[derive(Clone, Copy)]
enum Body {
    Resource,
    Defaults,
    Override,
}

impl Body {
    fn describe(self) -> &'static str {
        match self {
            Body::Resource => "a resource body",
            Body::Defaults => "resource defaults",
            Body::Override => "a resource override",
        }
    }
}

impl Ctx {
    fn error(&mut self, message: impl Into<String>, span: Span) {
        self.diags.push(Diagnostic::new(Stage::Init, message, span).with_code(Code::InvalidStatement));
    }

    /// `in_loop` names the loop statement (`StmtFor`/`StmtForKV`) and holds its span when
    /// the statements are (directly, or through if branches) part of a loop body.
    fn stmts(&mut self, stmts: &[Stmt], in_loop: Option<(&'static str, Span)>) {
        for stmt in stmts {
            if let Some(private) = stmt.private
                && self.depth > 0
            {
                self.diags.push(
                    Diagnostic::new(Stage::Init, "`private` applies only at the top level of a file", private)
                        .with_code(Code::InvalidStatement)
                        .with_note(
                            "a private name is one a module keeps to itself; names inside blocks are local already",
                        ),
                );
            }
            self.stmt(stmt, in_loop);
        }
    }

    /// The statements of a nested block.
    fn nested(&mut self, stmts: &[Stmt], in_loop: Option<(&'static str, Span)>) {
        self.depth += 1;
        self.stmts(stmts, in_loop);
        self.depth -= 1;
    }

    fn stmt(&mut self, stmt: &Stmt, in_loop: Option<(&'static str, Span)>) {
        match &stmt.kind {
            StmtKind::Bind { name, value, .. } => {
                self.var_name(name);
                self.expr(value);
            }
            StmtKind::If { cond, then, els } => {
                self.expr(cond);
                self.nested(&then.stmts, in_loop);
                if let Some(els) = els {
                    self.nested(&els.stmts, in_loop);
                }
            }
            StmtKind::Node { body, .. } => {
                if self.depth > 0 {
                    self.diags.push(
                        Diagnostic::new(
                            Stage::Init,
                            "a node definition must be at the top level of the program",
                            stmt.span,
                        )
                        .with_code(Code::InvalidStatement)
                        .with_note(
                            "node definitions choose what the whole program does for a host; they cannot be nested",
                        ),
                    );
                }
                self.nested(&body.stmts, in_loop);
            }
            StmtKind::For { index: first, value, iter, body } | StmtKind::ForKv { key: first, value, iter, body } => {
                let label = if matches!(stmt.kind, StmtKind::For { .. }) { "StmtFor" } else { "StmtForKV" };
                self.var_name(first);
                self.var_name(value);
                self.expr(iter);
                self.nested(&body.stmts, Some((label, stmt.span)));
            }
            StmtKind::Func { func, .. } => {
                self.params(&func.params, true);
                self.repeated(&func.params, true);
                self.expr(&func.body);
            }
            StmtKind::Class { params, body, define, .. } => {
                if define.is_some() && self.depth > 0 && self.class_body != Some(self.depth) {
                    self.diags.push(
                        Diagnostic::new(
                            Stage::Init,
                            "a defined type must be at the top level of a file or in a class body",
                            stmt.span,
                        )
                        .with_code(Code::InvalidStatement)
                        .with_note(
                            "a define in a class is named after it: `define vhost` in class `web` is `web:vhost`",
                        ),
                    );
                }
                self.params(params.as_deref().unwrap_or_default(), true);
                self.repeated(params.as_deref().unwrap_or_default(), false);
                let outer = self.class_body;
                self.class_body = if define.is_some() { None } else { Some(self.depth + 1) };
                self.nested(&body.stmts, None);
                self.class_body = outer;
            }
            StmtKind::Include { args, .. } => {
                for arg in args.iter().flatten() {
                    self.expr(arg);
                }
            }
            StmtKind::Type(decl) => self.type_decl(decl, stmt.span),
            StmtKind::Import { .. } => {
                if let Some((label, span)) = in_loop {
                    self.error(format!("a StmtImport can't be contained inside a {label}"), span);
                }
            }
            StmtKind::Panic { args } => {
                for arg in args {
                    self.expr(arg);
                }
            }
            StmtKind::Resource(res) => self.resource(res, stmt.span),
            StmtKind::Defaults { entries, .. } => self.body(entries, stmt.span, Body::Defaults),
            StmtKind::Collect(c) => self.collector(c),
            StmtKind::Realize { refs } => refs.iter().for_each(|r| self.expr(&r.name)),
            StmtKind::Override { target, entries } => {
                self.expr(&target.name);
                self.body(entries, stmt.span, Body::Override);
            }
            StmtKind::Edge { sides, .. } => {
                for side in sides {
                    side.refs.iter().for_each(|half| self.expr(&half.name));
                    if let Some(c) = &side.collector {
                        self.collector(c);
                    }
                }
            }
        }
    }

    fn resource(&mut self, res: &Resource, span: Span) {
        if res.kind.name.starts_with('_') && res.kind.name != "_panic" {
            self.error("kind must not start with an underscore", res.kind.span);
        }
        self.expr(&res.name);
        self.body(&res.entries, span, Body::Resource);
    }

    fn collector(&mut self, c: &Collector) {
        for value in c.query.iter().flat_map(Query::values) {
            self.expr(value);
        }
        self.body(&c.entries, c.span, Body::Override);
    }

    /// The entries of a resource, defaults or override body.
    fn body(&mut self, entries: &[ResEntry], span: Span, body: Body) {
        // A body names a few fields: a scan finds a repeat sooner than a set is made.
        let mut fields: Vec<&str> = Vec::with_capacity(entries.len());
        let mut metas: Vec<&str> = Vec::new();
        let mut splat: Option<Span> = None;
        for entry in entries {
            let refused = match (&entry.kind, body) {
                (ResEntryKind::Append { .. }, Body::Resource) => Some(
                    "`+>` appends to a param set elsewhere: it is allowed in defaults (`Kind { … }`) and overrides \
                     (`Kind[name] { … }`), not where the resource is declared",
                ),
                (ResEntryKind::Edge { .. }, Body::Defaults | Body::Override) => {
                    Some("a relationship is written as a statement (`A[x] -> B[y]`), not in defaults or overrides")
                }
                (ResEntryKind::Meta { name: None, .. }, Body::Defaults) => {
                    Some("defaults set meta params one by one: `Meta:noop => true,`")
                }
                (ResEntryKind::Meta { .. }, Body::Override) => Some("an override sets params, not meta params"),
                _ => None,
            };
            if let Some(note) = refused {
                self.diags.push(
                    Diagnostic::new(
                        Stage::Init,
                        format!("this entry is not allowed in {}", body.describe()),
                        entry.span,
                    )
                    .with_code(Code::InvalidStatement)
                    .with_note(note),
                );
                continue;
            }
            match &entry.kind {
                ResEntryKind::Field { name, cond, value } => {
                    if !first_time(&mut fields, name.name.as_str()) {
                        self.error(format!("resource has duplicate field of: {}", name.name), span);
                    }
                    if let Some(cond) = cond {
                        self.expr(cond);
                    }
                    self.expr(value);
                }
                ResEntryKind::Edge { prop, cond, target } => {
                    if !EDGE_PROPERTIES.contains(&prop.name.as_str()) {
                        self.diags.push(
                            Diagnostic::new(Stage::Init, format!("invalid property: `{}`", prop.name), prop.span)
                                .with_code(Code::InvalidProperty)
                                .with_note("edge properties are `Before`, `Depend`, `Notify` and `Listen`"),
                        );
                    }
                    if let Some(cond) = cond {
                        self.expr(cond);
                    }
                    self.expr(&target.name);
                }
                ResEntryKind::Meta { name, cond, value } => {
                    if let Some(name) = name {
                        if !META_PARAMS.contains(&name.name.as_str()) && name.name != "tags" {
                            self.diags.push(
                                Diagnostic::new(Stage::Init, format!("invalid property: `{}`", name.name), name.span)
                                    .with_code(Code::InvalidProperty)
                                    .with_note(format!("meta parameters are: {}", META_PARAMS.join(", "))),
                            );
                        } else if !first_time(&mut metas, name.name.as_str()) {
                            self.error(format!("resource has duplicate meta entry of: {}", name.name), span);
                        }
                    }
                    if let Some(cond) = cond {
                        self.expr(cond);
                    }
                    self.expr(value);
                }
                ResEntryKind::Append { name, value } => {
                    if !first_time(&mut fields, name.name.as_str()) {
                        self.error(format!("resource has duplicate field of: {}", name.name), span);
                    }
                    self.expr(value);
                }
                ResEntryKind::Splat { value } => {
                    if let Some(first) = splat {
                        self.diags.push(
                            Diagnostic::new(
                                Stage::Init,
                                format!("{} has two `* =>` entries", body.describe()),
                                entry.span,
                            )
                            .with_code(Code::InvalidStatement)
                            .with_label(first, "the first one")
                            .with_note("put every param in one struct or map"),
                        );
                    }
                    splat = Some(entry.span);
                    self.expr(value);
                }
            }
        }
    }

    /// A type declaration: only at a file's top level; attribute names once each.
    fn type_decl(&mut self, decl: &TypeDecl, span: Span) {
        if self.depth > 0 {
            self.diags.push(
                Diagnostic::new(Stage::Init, "a type declaration must be at the top level of a file", span)
                    .with_code(Code::InvalidStatement)
                    .with_note("types are declared at the top of a file or module and imported like classes"),
            );
        }
        let TypeDef::Record(record) = &decl.def else { return };
        let mut seen = HashSet::new();
        for attr in &record.attrs {
            if !seen.insert(attr.name.name.as_str()) {
                self.error(
                    format!("attribute `{}` is declared twice in type `{}`", attr.name.name, decl.name.name),
                    attr.name.span,
                );
            }
            attr.exprs().for_each(|e| self.expr(e));
        }
        for inv in &record.invariants {
            self.expr(&inv.expr);
        }
    }

    /// A lambda value (its params take no defaults).
    fn lambda(&mut self, lambda: &Lambda) {
        self.params(&lambda.params, false);
        self.repeated(&lambda.params, false);
        self.expr(&lambda.body);
    }

    /// The params of a func, class (`defaults`: they may have defaults) or lambda.
    fn params(&mut self, params: &[Param], defaults: bool) {
        for (i, param) in params.iter().enumerate() {
            self.var_name(&param.name);
            let Some(default) = &param.default else { continue };
            self.expr(default);
            if !defaults {
                self.diags.push(
                    Diagnostic::new(Stage::Init, "a lambda's params can't have defaults", default.span)
                        .with_code(Code::ParamDefault)
                        .with_note("defaults belong to the params of `func` statements and classes"),
                );
                continue;
            }
            for later in &params[i..] {
                if let Some(span) = mentions(default, &later.name.name) {
                    let message = format!(
                        "the default of `${}` uses `${}`, which is not a param before it",
                        param.name.name, later.name.name
                    );
                    self.diags.push(
                        Diagnostic::new(Stage::Init, message, span)
                            .with_code(Code::ParamDefault)
                            .with_label(later.name.span, "declared here")
                            .with_note("a default may use only the params to its left"),
                    );
                }
            }
        }
    }

    /// A repeated param (`$rest ...int`): only a `func` statement's (`allowed`), only
    /// its last, never with a default.
    fn repeated(&mut self, params: &[Param], allowed: bool) {
        let last = params.len().saturating_sub(1);
        for (i, param) in params.iter().enumerate() {
            let Some(at) = param.repeated else { continue };
            let problem = if !allowed {
                Some("only a `func` statement's params may repeat")
            } else if i != last {
                Some("only the last param may repeat")
            } else if param.default.is_some() {
                Some("a repeated param takes no default: it is an empty list when no argument is left for it")
            } else {
                None
            };
            if let Some(message) = problem {
                self.diags.push(
                    Diagnostic::new(Stage::Init, message, at)
                        .with_code(Code::ParamDefault)
                        .with_note("`func f($a int, $rest ...int)` takes one argument or more; `$rest` is `[]int`"),
                );
            }
        }
    }

    /// Variable names must match `^[a-z]([a-z0-9_]|(\.|_)[a-z0-9_])*$` without `..`/`__`.
    fn var_name(&mut self, name: &Ident) {
        if !valid_var_name(&name.name) {
            self.diags.push(
                Diagnostic::new(Stage::Init, format!("invalid variable name: `${}`", name.name), name.span)
                    .with_code(Code::InvalidName)
                    .with_note("variable names can't contain `__` or `..`"),
            );
        }
    }

    fn expr(&mut self, expr: &Expr) {
        match &expr.kind {
            ExprKind::Bool(_)
            | ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::RawStr(_)
            | ExprKind::Str(_)
            | ExprKind::Interp(_)
            | ExprKind::Error => {}
            ExprKind::Var(name) => self.var_name(name),
            ExprKind::List(items) => items.iter().for_each(|item| self.expr(item)),
            ExprKind::Map(entries) => {
                self.map_keys(entries, expr.span);
                for (key, value) in entries {
                    self.expr(key);
                    self.expr(value);
                }
            }
            ExprKind::Struct(fields) => {
                let mut seen = HashSet::new();
                for (name, value) in fields {
                    if !seen.insert(name.name.as_str()) {
                        self.error(format!("duplicate struct field name of: `{}`", name.name), expr.span);
                    }
                    self.expr(value);
                }
            }
            ExprKind::Call { args, .. } => args.iter().for_each(|arg| self.expr(arg)),
            ExprKind::CallVar { name, args } => {
                self.var_name(name);
                args.iter().for_each(|arg| self.expr(arg));
            }
            ExprKind::Lambda(lambda) => self.lambda(lambda),
            ExprKind::CallLambda { lambda, args } => {
                self.lambda(lambda);
                args.iter().for_each(|arg| self.expr(arg));
            }
            ExprKind::If { cond, then, els } => {
                self.expr(cond);
                self.expr(then);
                self.expr(els);
            }
            ExprKind::Binary { lhs, rhs, .. } => {
                self.expr(lhs);
                self.expr(rhs);
            }
            ExprKind::Not(inner) => self.expr(inner),
            ExprKind::Index { base, index } => {
                self.expr(base);
                self.expr(index);
            }
            ExprKind::Field { base, .. } => self.expr(base),
            ExprKind::FieldOr { base, default, .. } => {
                self.expr(base);
                self.expr(default);
            }
            ExprKind::Annotated { expr, .. } => self.expr(expr),
            ExprKind::Named { value, .. } => self.expr(value),
            ExprKind::Construct { fields, .. } => {
                let mut seen = HashSet::new();
                for (name, value) in fields {
                    if !seen.insert(name.name.as_str()) {
                        self.error(format!("attribute `{}` is given twice", name.name), name.span);
                    }
                    self.expr(value);
                }
            }
        }
    }

    /// Literal map keys: one key kind, hashable, no duplicates (spec 4.2). Keys that are
    /// not literal constants are left to unification.
    fn map_keys(&mut self, entries: &[(Expr, Expr)], span: Span) {
        let mut first: Option<Type> = None;
        let mut seen: Vec<String> = Vec::new();
        for (key, _) in entries {
            let Some(ty) = literal_type(key) else { continue };
            match &first {
                None => {
                    if !ty.is_hashable() {
                        self.error(format!("map key type {ty} is not hashable"), key.span);
                        return;
                    }
                    first = Some(ty);
                }
                Some(first) if first.kind_name() != ty.kind_name() => {
                    let message = format!(
                        "inconsistent map key type: base kind does not match ({} != {})",
                        first.kind_name(),
                        ty.kind_name()
                    );
                    self.error(message, key.span);
                    return;
                }
                Some(_) => {}
            }
            if let Some(value) = constant_text(key) {
                if seen.contains(&value) {
                    self.error(format!("duplicate map key: {value}"), span);
                } else {
                    seen.push(value);
                }
            }
        }
    }
}

/// `^[a-z]([a-z0-9_]|(\.|_)[a-z0-9_])*$`, and neither `..` nor `__` anywhere.
pub fn valid_var_name(name: &str) -> bool {
    !name.contains("..") && !name.contains("__") && var_shape(name)
}

/// `[a-z]([a-z0-9_]|\.[a-z0-9_])*`: the shape of a variable name, dots between parts.
/// Also the rule for `${name}` in strings.
pub(crate) fn var_shape(name: &str) -> bool {
    let bytes = name.as_bytes();
    let Some(first) = bytes.first() else { return false };
    if !first.is_ascii_lowercase() {
        return false;
    }
    let word = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_';
    let mut i = 1;
    while i < bytes.len() {
        if word(bytes[i]) {
            i += 1;
        } else if bytes[i] == b'.' && i + 1 < bytes.len() && word(bytes[i + 1]) {
            i += 2;
        } else {
            return false;
        }
    }
    true
}

/// The type of a literal expression whose type is obvious without context.
fn literal_type(expr: &Expr) -> Option<Type> {
    match &expr.kind {
        ExprKind::Bool(_) => Some(Type::Bool),
        ExprKind::Int(_) => Some(Type::Int),
        ExprKind::Float(_) => Some(Type::Float),
        ExprKind::RawStr(_) | ExprKind::Str(_) | ExprKind::Interp(_) => Some(Type::Str),
        ExprKind::List(items) => {
            let first = literal_type(items.first()?)?;
            items.iter().skip(1).all(|item| literal_type(item).as_ref() == Some(&first)).then(|| Type::list(first))
        }
        ExprKind::Map(entries) => {
            let (key, value) = entries.first()?;
            let (key_ty, value_ty) = (literal_type(key)?, literal_type(value)?);
            entries
                .iter()
                .skip(1)
                .all(|(k, v)| literal_type(k).as_ref() == Some(&key_ty) && literal_type(v).as_ref() == Some(&value_ty))
                .then(|| Type::map(key_ty, value_ty))
        }
        ExprKind::Struct(fields) => {
            let mut out = Vec::new();
            for (name, value) in fields {
                out.push((name.name.clone(), literal_type(value)?));
            }
            Some(Type::Struct(out))
        }
        _ => None,
    }
}

/// The printed value of a scalar constant key (`"k2"`, `42`), when it is one.
fn constant_text(expr: &Expr) -> Option<String> {
    match &expr.kind {
        ExprKind::Bool(b) => Some(b.to_string()),
        ExprKind::Int(n) => Some(n.to_string()),
        ExprKind::Float(x) => Some(x.to_string()),
        ExprKind::Str(s) => Some(format!("{s:?}")),
        ExprKind::RawStr(raw) => match crate::interpolate::parse_string(raw).ok()?.as_slice() {
            [crate::interpolate::Piece::Lit(s)] => Some(format!("{s:?}")),
            _ => None,
        },
        _ => None,
    }
}

/// Where `expr` uses the variable `$name` (not shadowed by a lambda param), if it does.
fn mentions(expr: &Expr, name: &str) -> Option<Span> {
    let any = |items: &mut dyn Iterator<Item = &Expr>| {
        for e in items {
            if let Some(span) = mentions(e, name) {
                return Some(span);
            }
        }
        None
    };
    match &expr.kind {
        ExprKind::Var(var) => (var.name == name).then_some(expr.span),
        ExprKind::Interp(parts) => parts
            .iter()
            .any(|p| matches!(p, crate::syntax::ast::InterpPart::Var(v) if v.name == name))
            .then_some(expr.span),
        ExprKind::Bool(_) | ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::RawStr(_) | ExprKind::Str(_) => None,
        ExprKind::Error => None,
        ExprKind::List(items) => any(&mut items.iter()),
        ExprKind::Map(entries) => any(&mut entries.iter().flat_map(|(k, v)| [k, v])),
        ExprKind::Struct(fields) => any(&mut fields.iter().map(|(_, e)| e)),
        ExprKind::Call { args, .. } => any(&mut args.iter()),
        ExprKind::CallVar { name: callee, args } => {
            if callee.name == name {
                return Some(callee.span);
            }
            any(&mut args.iter())
        }
        ExprKind::Lambda(lambda) => lambda_mentions(lambda, name),
        ExprKind::CallLambda { lambda, args } => lambda_mentions(lambda, name).or_else(|| any(&mut args.iter())),
        ExprKind::If { cond, then, els } => any(&mut [&**cond, then, els].into_iter()),
        ExprKind::Binary { lhs, rhs, .. } => any(&mut [&**lhs, rhs].into_iter()),
        ExprKind::Index { base, index } => any(&mut [&**base, index].into_iter()),
        ExprKind::FieldOr { base, default, .. } => any(&mut [&**base, default].into_iter()),
        ExprKind::Not(inner) | ExprKind::Field { base: inner, .. } | ExprKind::Annotated { expr: inner, .. } => {
            mentions(inner, name)
        }
        ExprKind::Named { value, .. } => mentions(value, name),
        ExprKind::Construct { fields, .. } => any(&mut fields.iter().map(|(_, e)| e)),
    }
}

fn lambda_mentions(lambda: &Lambda, name: &str) -> Option<Span> {
    if lambda.params.iter().any(|p| p.name.name == name) {
        return None;
    }
    mentions(&lambda.body, name)
}

/// Adds `name` to `seen`; false when it was there already.
fn first_time<'a>(seen: &mut Vec<&'a str>, name: &'a str) -> bool {
    if seen.contains(&name) {
        return false;
    }
    seen.push(name);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variable_names() {
        for good in ["x", "a_b", "ns.x", "const.res.file.state.exists", "a1", "x_"] {
            assert!(valid_var_name(good), "{good}");
        }
        for bad in ["a__b", "a..b", "X", "_a", "a.", ".a", "", "a.__b"] {
            assert!(!valid_var_name(bad), "{bad}");
        }
    }
}
