//! The checks of declared types on values known at compile time (stage errUnify, after
//! unification): a construction whose attributes are literals (or arithmetic on them) is
//! checked by `tend check`, so `vhost{port => 70000}` never reaches a host. What depends
//! on a function call or a stream is checked when it runs. So are resource fields whose
//! kind takes only some values (`state => "exist"` is caught here, on the value, with the
//! closest allowed one).

use std::collections::HashSet;

use crate::catalog::{Catalog, ParamDecl};
use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::ir::{CheckTest, FuncGraph, IrCheck, IrStmt, NodeId, NodeKind, Op, Origin};
use crate::syntax::ast::BinOp;
use crate::value::Value;

/// How deep a constant expression is followed; deeper ones are left to the run.
const MAX_DEPTH: usize = 64;

/// Every check of every construction whose inputs are constants and that fails.
pub fn constant(graph: &FuncGraph) -> Diagnostics {
    let mut diags = Diagnostics::new();
    for (i, node) in graph.nodes.iter().enumerate() {
        let NodeKind::Construct(c) = &node.kind else { continue };
        let (ty, checks) = (&c.ty, &c.checks);
        // Unreached constructions were never typed, nor will they run.
        if graph.types.get(i).is_none() {
            continue;
        }
        for check in checks {
            let Some(result) = eval(graph, check.node, 0) else { continue };
            let attr = || check.attr.as_ref().and_then(|(_, at)| eval(graph, *at, 0));
            if let Some(message) = check.failure(&result, attr) {
                diags.push(failure(graph, ty, check, message, node.span));
            }
        }
    }
    diags
}

/// Every constant resource field outside the values its kind allows (`state => "exist"`),
/// once per value written, placed on the value; and, as warnings, every literal a resource
/// writes that is what leaving the field out means (`recurse => false`), unless defaults,
/// overrides or collectors of that kind could make the line matter.
pub fn resource_fields(graph: &FuncGraph, catalog: &Catalog) -> Diagnostics {
    let mut steered = HashSet::new();
    steering(&graph.stmts, true, &mut steered);
    let mut fields =
        FieldCheck { graph, catalog, seen: foldhash::HashSet::default(), steered, diags: Diagnostics::new() };
    fields.stmts(&graph.stmts);
    fields.diags
}

/// The kinds that overrides or collectors (and, with `defaults`, defaults statements) set
/// fields of.
pub(crate) fn steering(stmts: &[IrStmt], defaults: bool, out: &mut HashSet<String>) {
    for stmt in stmts {
        match stmt {
            IrStmt::Defaults { kind, .. } if defaults => {
                out.insert(kind.clone());
            }
            IrStmt::Override { target, .. } => {
                out.insert(target.kind.clone());
            }
            IrStmt::Collect(collector) => {
                out.insert(collector.kind.clone());
            }
            IrStmt::If { then, els, .. } => {
                steering(then, defaults, out);
                steering(els, defaults, out);
            }
            IrStmt::For { body, .. } => steering(body, defaults, out),
            IrStmt::Instance(i) => steering(&i.body, defaults, out),
            _ => {}
        }
    }
}

struct FieldCheck<'a> {
    graph: &'a FuncGraph,
    catalog: &'a Catalog,
    /// Value nodes already checked: a value of a defaults statement is checked once, not
    /// once per resource it reaches.
    seen: foldhash::HashSet<NodeId>,
    /// Kinds whose fields defaults, overrides or collectors set ([`steering`]).
    steered: HashSet<String>,
    diags: Diagnostics,
}

impl FieldCheck<'_> {
    fn stmts(&mut self, stmts: &[IrStmt]) {
        for stmt in stmts {
            match stmt {
                IrStmt::Resource(res) => {
                    // Looked up once per resource, each param once per field.
                    let Some(decl) = self.catalog.resource(&res.kind) else { continue };
                    let written = res.fields.iter().filter(|f| f.origin == Origin::Written);
                    for field in written {
                        let Some(param) = decl.param(&field.name) else { continue };
                        self.allowed(param, &res.kind, field.value);
                        self.default_value(param, &res.kind, field);
                        if res.kind == "exec" && &*field.name == "timeout" {
                            self.unit(field.value, Unit::Seconds, "exec's `timeout`");
                        }
                    }
                    for meta in res.metas.iter().filter(|m| m.name.as_deref() == Some("timeout")) {
                        self.unit(meta.value, Unit::Milliseconds, "`Meta:timeout`");
                    }
                }
                IrStmt::Defaults { kind, fields, .. } => {
                    for field in fields {
                        self.field(kind, &field.name, field.value);
                    }
                }
                IrStmt::Override { target, fields, .. } => {
                    for field in fields.iter().filter(|f| !f.append) {
                        self.field(&target.kind, &field.name, field.value);
                    }
                }
                IrStmt::Collect(collector) => {
                    for field in collector.fields.iter().filter(|f| !f.append) {
                        self.field(&collector.kind, &field.name, field.value);
                    }
                }
                IrStmt::If { then, els, .. } => {
                    self.stmts(then);
                    self.stmts(els);
                }
                IrStmt::For { body, .. } => self.stmts(body),
                IrStmt::Instance(i) => self.stmts(&i.body),
                IrStmt::Edge(_) | IrStmt::Realize { .. } | IrStmt::Panic { .. } => {}
            }
        }
    }

    fn field(&mut self, kind: &str, name: &str, value: NodeId) {
        if let Some(param) = self.catalog.resource(kind).and_then(|decl| decl.param(name)) {
            self.allowed(param, kind, value);
        }
    }

    /// The error for a constant `value` of `param` (of `kind`) outside the values it takes.
    fn allowed(&mut self, param: &ParamDecl, kind: &str, value: NodeId) {
        let name = &param.name;
        if param.allowed.is_empty() || !self.seen.insert(value) {
            return;
        }
        let Some(Value::Str(text)) = eval(self.graph, value, 0) else { return };
        if param.allowed.iter().any(|a| **a == *text) {
            return;
        }
        let mut diag = Diagnostic::new(
            Stage::Unify,
            format!("`{text}` is not a valid `{name}` of `{kind}`"),
            self.graph.node(value).span,
        )
        .with_code(Code::InvalidResource);
        if let Some(close) = crate::suggest::allowed_value(&text, &param.allowed) {
            diag = diag.with_note(format!("did you mean `{close}`?"));
        }
        let listed: Vec<String> = param.allowed.iter().filter(|a| !a.is_empty()).map(|a| format!("`{a}`")).collect();
        let unset = if param.allowed.iter().any(String::is_empty) { ", or leave it unset" } else { "" };
        diag = diag.with_note(format!("`{name}` takes {}{unset}", or_list(&listed)));
        self.diags.push(diag);
    }
}

impl FieldCheck<'_> {
    /// The warning for a literal written in a resource that is what leaving it out means.
    fn default_value(&mut self, param: &ParamDecl, kind: &str, field: &crate::ir::IrField) {
        let Some(default) = &param.default else { return };
        let node = self.graph.node(field.value);
        let literal =
            node.span.file == field.span.file && field.span.start <= node.span.start && node.span.end <= field.span.end;
        if field.cond.is_some() || !literal || self.steered.contains(kind) {
            return;
        }
        let NodeKind::Const(value) = &node.kind else { return };
        if value != default {
            return;
        }
        let name = &field.name;
        self.diags.push(
            Diagnostic::warn(
                Stage::Unify,
                format!("`{name} => {value}` is what leaving `{name}` out means"),
                field.span,
            )
            .with_code(Code::DefaultValue)
            .with_note(format!("`{name}` of `{kind}` is {value} when it is not set; the line can go")),
        );
    }
}

/// The unit a duration param counts.
#[derive(Clone, Copy)]
enum Unit {
    Milliseconds,
    Seconds,
}

impl FieldCheck<'_> {
    /// The warning for a constant duration its unit makes implausible: under a second of
    /// milliseconds (seconds were likely meant), or over six hours of seconds (milliseconds).
    fn unit(&mut self, value: NodeId, unit: Unit, what: &str) {
        let Some(Value::Int(n)) = eval(self.graph, value, 0) else { return };
        let span = self.graph.node(value).span;
        let (message, note) = match unit {
            Unit::Milliseconds if (1..1000).contains(&n) => (
                format!("{what} is {n} milliseconds"),
                format!("{what} counts milliseconds, as in mgmt: {n} seconds is {}", n * 1000),
            ),
            Unit::Seconds if n > 6 * 3600 => (
                format!("{what} is {n} seconds ({} hours)", n / 3600),
                format!("{what} counts seconds: {n} milliseconds is {}", (n + 999) / 1000),
            ),
            _ => return,
        };
        self.diags.push(Diagnostic::warn(Stage::Unify, message, span).with_code(Code::ImplausibleUnit).with_note(note));
    }
}

/// "`a`", "`a` or `b`", "one of `a`, `b` or `c`".
fn or_list(items: &[String]) -> String {
    match items {
        [] => "nothing".to_string(),
        [one] => one.clone(),
        [one, two] => format!("{one} or {two}"),
        [rest @ .., last] => format!("one of {} or {last}", rest.join(", ")),
    }
}

fn failure(graph: &FuncGraph, ty: &str, check: &IrCheck, message: String, at: crate::span::Span) -> Diagnostic {
    let label = match (&check.test, &check.attr) {
        (CheckTest::Enums(_), _) if ty.is_empty() => "the type written here".to_string(),
        (_, Some(_)) => format!("declared by type `{ty}`"),
        (_, None) => format!("invariant of type `{ty}`"),
    };
    let at = match &check.attr {
        Some((_, value)) => graph.node(*value).span,
        None => at,
    };
    Diagnostic::new(Stage::Unify, message, at).with_code(Code::CheckFailed).with_label(check.span, label)
}

/// The value of `node` when it is made of constants only, else `None`.
pub fn eval(graph: &FuncGraph, node: NodeId, depth: usize) -> Option<Value> {
    if depth > MAX_DEPTH {
        return None;
    }
    let sub = |n: &NodeId| eval(graph, *n, depth + 1);
    match &graph.node(node).kind {
        NodeKind::Const(v) => Some(v.clone()),
        NodeKind::List(items) => items.iter().map(sub).collect::<Option<Vec<_>>>().map(Value::list),
        NodeKind::Struct(fields) => {
            let values = fields.iter().map(|(n, f)| Some((n.clone(), sub(f)?))).collect::<Option<Vec<_>>>()?;
            Some(Value::Struct(std::sync::Arc::new(values)))
        }
        NodeKind::Map(entries) => {
            let map = entries.iter().map(|(k, v)| Some((sub(k)?, sub(v)?))).collect::<Option<_>>()?;
            Some(Value::Map(std::sync::Arc::new(map)))
        }
        NodeKind::Construct(c) if c.ty.is_empty() => sub(&c.value),
        NodeKind::Inline { body, .. } => sub(body),
        NodeKind::If { cond, then, els } => match sub(cond)? {
            Value::Bool(true) => sub(then),
            Value::Bool(false) => sub(els),
            _ => None,
        },
        NodeKind::Op { op: Op::Not, args } => Some(Value::Bool(!sub(args.first()?)?.as_bool()?)),
        NodeKind::Op { op: Op::Bin(BinOp::And), args } => match sub(args.first()?)?.as_bool()? {
            false => Some(Value::Bool(false)),
            true => Some(Value::Bool(sub(args.get(1)?)?.as_bool()?)),
        },
        NodeKind::Op { op: Op::Bin(BinOp::Or), args } => match sub(args.first()?)?.as_bool()? {
            true => Some(Value::Bool(true)),
            false => Some(Value::Bool(sub(args.get(1)?)?.as_bool()?)),
        },
        NodeKind::Op { op: Op::Bin(op), args } => binary(*op, &sub(args.first()?)?, &sub(args.get(1)?)?),
        _ => None,
    }
}

fn binary(op: BinOp, a: &Value, b: &Value) -> Option<Value> {
    use Value::{Bool, Float, Int};
    Some(match (op, a, b) {
        (BinOp::Eq, a, b) => Bool(a == b),
        (BinOp::Ne, a, b) => Bool(a != b),
        (BinOp::In, a, Value::List(items)) => Bool(items.contains(a)),
        (BinOp::In, Value::Str(a), Value::Str(b)) => Bool(b.contains(&**a)),
        (BinOp::Add, Int(x), Int(y)) => Int(x.checked_add(*y)?),
        (BinOp::Sub, Int(x), Int(y)) => Int(x.checked_sub(*y)?),
        (BinOp::Mul, Int(x), Int(y)) => Int(x.checked_mul(*y)?),
        (BinOp::Add, Float(x), Float(y)) => Float(x + y),
        (BinOp::Sub, Float(x), Float(y)) => Float(x - y),
        (BinOp::Mul, Float(x), Float(y)) => Float(x * y),
        (BinOp::Add, Value::Str(x), Value::Str(y)) => Value::str(format!("{x}{y}")),
        (BinOp::Lt, Int(x), Int(y)) => Bool(x < y),
        (BinOp::Gt, Int(x), Int(y)) => Bool(x > y),
        (BinOp::Le, Int(x), Int(y)) => Bool(x <= y),
        (BinOp::Ge, Int(x), Int(y)) => Bool(x >= y),
        (BinOp::Lt, Float(x), Float(y)) => Bool(x < y),
        (BinOp::Gt, Float(x), Float(y)) => Bool(x > y),
        (BinOp::Le, Float(x), Float(y)) => Bool(x <= y),
        (BinOp::Ge, Float(x), Float(y)) => Bool(x >= y),
        // Division (by zero and rounding are the runtime's) and the rest: at run time.
        _ => return None,
    })
}
