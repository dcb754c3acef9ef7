//! Turning solver failures and post-solve checks into diagnostics: messages in mgmt's
//! words (`type error: str != int`) plus labels saying where each side's type came from.

use super::infer::Ctx;
use super::table::{Mismatch, Shape, Table, Var, rename_vars};
use crate::diag::{Code, Diagnostic, Stage};
use crate::ir::{FuncGraph, NodeId, NodeKind, Op};
use crate::span::Span;
use crate::syntax::ast::BinOp;
use crate::types::Type;
use crate::value::Value;

/// A diagnostic for a failed `unify(expected_top, found_top)` at `span`.
pub(crate) fn mismatch(table: &mut Table, m: Mismatch, expected_top: Var, found_top: Var, span: Span) -> Diagnostic {
    let (expected, found) = match m {
        Mismatch::Kinds { expected, found }
        | Mismatch::StructFieldCount { expected, found }
        | Mismatch::StructFields { expected, found }
        | Mismatch::FuncArity { expected, found } => (expected, found),
        Mismatch::Occurs { var, ty } => (var, ty),
    };
    let mut shown =
        [table.resolve(expected), table.resolve(found), table.resolve(expected_top), table.resolve(found_top)];
    rename_vars(&mut shown);
    let [e, f, et, ft] = shown;
    // Declared types are nominal: a struct of other (or no) tags is a different type,
    // whatever its attributes.
    if matches!(m, Mismatch::StructFieldCount { .. } | Mismatch::StructFields { .. })
        && (e.declared_name().is_some() || f.declared_name().is_some())
    {
        let mut d = Diagnostic::new(Stage::Unify, format!("type error: expected `{e}`, found `{f}`"), span)
            .with_code(Code::TypeMismatch);
        if let Some(o) = table.origin(found).filter(|o| *o != span) {
            d = d.with_label(o, format!("found `{f}` here"));
        }
        let name = e.declared_name().or(f.declared_name()).unwrap_or_default();
        return d.with_note(format!(
            "declared types are nominal: a `{name}` is made with `{name}{{…}}` (or is a type that inherits it), \
             not any struct with the same attributes"
        ));
    }
    let message = match m {
        Mismatch::Kinds { .. } => format!("type error: {} != {}", table.kind_name(expected), table.kind_name(found)),
        Mismatch::StructFieldCount { .. } => format!("struct field count differs: expected `{e}`, found `{f}`"),
        Mismatch::StructFields { .. } => format!("struct fields differ: expected `{e}`, found `{f}`"),
        Mismatch::FuncArity { .. } => format!("func arg count differs: expected `{e}`, found `{f}`"),
        Mismatch::Occurs { .. } => {
            format!("directly in the same set: a value of type `{e}` would have to be `{f}`, an infinite type")
        }
    };
    let mut d = Diagnostic::new(Stage::Unify, message, span).with_code(Code::TypeMismatch);
    if let Some(o) = table.origin(expected).filter(|o| *o != span) {
        d = d.with_label(o, format!("expected `{e}` because of this"));
    }
    if let Some(o) = table.origin(found).filter(|o| *o != span) {
        d = d.with_label(o, format!("found `{f}` here"));
    }
    // The outer types are shown as far as they were merged before the conflict; when that
    // makes them look alike the note would only confuse.
    if (et != e || ft != f) && et != ft && !matches!(m, Mismatch::Occurs { .. }) {
        d = d.with_note(format!("while matching `{et}` with `{ft}`"));
    }
    d
}

/// A variable for the type of a constant (fresh variables for the element types of
/// empty containers).
pub(crate) fn type_of_value(table: &mut Table, value: &Value, origin: Span) -> Var {
    let shape = match value {
        Value::List(items) => {
            let elem = match items.first() {
                Some(first) => type_of_value(table, first, origin),
                None => table.fresh(),
            };
            Shape::List(elem)
        }
        Value::Map(m) => match m.iter().next() {
            Some((k, v)) => {
                let k = type_of_value(table, k, origin);
                Shape::Map(k, type_of_value(table, v, origin))
            }
            None => Shape::Map(table.fresh(), table.fresh()),
        },
        Value::Struct(fields) => {
            Shape::Struct(fields.iter().map(|(n, v)| (n.clone(), type_of_value(table, v, origin))).collect())
        }
        Value::Func(_) => return table.fresh(),
        scalar => Shape::of_scalar(scalar).expect("every other value is a scalar"),
    };
    table.shaped(shape, origin)
}

/// A short source-like rendering of an expression for messages.
pub(crate) fn describe_node(graph: &FuncGraph, node: NodeId) -> String {
    describe_at(graph, node, 0)
}

fn describe_at(graph: &FuncGraph, node: NodeId, depth: usize) -> String {
    let sub = |n: &NodeId| if depth >= 1 { "...".to_string() } else { describe_at(graph, *n, depth + 1) };
    match &graph.node(node).kind {
        NodeKind::Const(v) => {
            let s = v.to_string();
            if s.chars().count() > 40 { format!("{}...", s.chars().take(37).collect::<String>()) } else { s }
        }
        NodeKind::List(items) if items.is_empty() => "[]".into(),
        NodeKind::List(_) => "[...]".into(),
        NodeKind::Map(entries) if entries.is_empty() => "{}".into(),
        NodeKind::Map(_) => "{...}".into(),
        NodeKind::Struct(_) => "struct{...}".into(),
        NodeKind::Param(p) => format!("${}", graph.params[p.0 as usize].name),
        NodeKind::Interp(parts) => {
            let mut text = String::new();
            for p in parts {
                match &graph.node(*p).kind {
                    NodeKind::Const(Value::Str(s)) => text.push_str(s),
                    NodeKind::Param(id) => text.push_str(&format!("${{{}}}", graph.params[id.0 as usize].name)),
                    _ => text.push_str("${...}"),
                }
            }
            let quoted = crate::value::quote_str(&text);
            if quoted.chars().count() > 40 {
                format!("{}...\"", quoted.chars().take(36).collect::<String>())
            } else {
                quoted
            }
        }
        NodeKind::Call { func, .. } | NodeKind::Inline { func, .. } => format!("{func}(...)"),
        NodeKind::Dispatch(d) => format!("{}(...)", d.func),
        NodeKind::Construct(c) => format!("{}{{...}}", c.ty),
        NodeKind::CallValue { callee, .. } => format!("{}(...)", sub(callee)),
        NodeKind::Lambda { params, .. } => {
            let names: Vec<String> = params.iter().map(|p| format!("${}", graph.params[p.0 as usize].name)).collect();
            format!("func({}) {{...}}", names.join(", "))
        }
        NodeKind::If { .. } => "if ... {...} else {...}".into(),
        NodeKind::Op { op: Op::Not, args } => format!("not {}", args.first().map(sub).unwrap_or_default()),
        NodeKind::Op { op, args } => {
            let a = args.first().map(sub).unwrap_or_default();
            let b = args.get(1).map(sub).unwrap_or_default();
            format!("{a} {} {b}", op_name(*op))
        }
        NodeKind::Except { lhs, rhs } => format!("{} <|> {}", sub(lhs), sub(rhs)),
        NodeKind::Index { base, index } => format!("{}[{}]", sub(base), sub(index)),
        NodeKind::Field { base, field } => format!("{}->{field}", sub(base)),
        NodeKind::FieldOr { base, field, default } => format!("{}->{field} <|> {}", sub(base), sub(default)),
    }
}

pub(crate) fn op_name(op: Op) -> &'static str {
    match op {
        Op::Not => "not",
        Op::Bin(b) => b.as_str(),
    }
}

/// `name(a str, b int) ret` from a signature.
pub(crate) fn format_sig(name: &str, sig: &Type) -> String {
    let s = sig.to_string();
    match s.strip_prefix("func") {
        Some(rest) if matches!(sig, Type::Func(..)) => format!("{name}{rest}"),
        _ => format!("{name}: {s}"),
    }
}

/// A call whose function is unknown or whose argument count matches no signature:
/// lists what exists next to what was given.
pub(crate) fn bad_call(ctx: &mut Ctx<'_>, node: NodeId) -> Diagnostic {
    let span = ctx.span(node);
    let NodeKind::Call { func, args } = &ctx.graph.node(node).kind else {
        return Diagnostic::new(Stage::Unify, "internal error: bad call report on a non-call node", span)
            .with_code(Code::Internal);
    };
    let mut given: Vec<Type> = args.iter().map(|a| ctx.table.resolve(Ctx::var(*a))).collect();
    rename_vars(&mut given);
    let given = format!("{func}({})", given.iter().map(Type::to_string).collect::<Vec<_>>().join(", "));
    let catalog = ctx.catalog;
    match catalog.func(func) {
        Some(decl) => {
            let expected: Vec<String> = if decl.sigs.is_empty() {
                vec![format!("{func}(...)")]
            } else {
                decl.sigs.iter().map(|s| format_sig(func, s)).collect()
            };
            let counts: Vec<String> = decl
                .sigs
                .iter()
                .filter_map(|s| match s {
                    Type::Func(a, _) => Some(a.len().to_string()),
                    _ => None,
                })
                .collect();
            let msg = format!("func arg count differs: expected one of: {} ; given: {given}", expected.join(" ; "));
            let mut d = Diagnostic::new(Stage::Unify, msg, span).with_code(Code::CallArity);
            if !counts.is_empty() {
                d = d.with_note(format!(
                    "`{func}` takes {} argument(s), but {} were given",
                    counts.join(" or "),
                    args.len()
                ));
            }
            d
        }
        None => {
            let short = func.rsplit('.').next().unwrap_or(func);
            let mut similar: Vec<&str> = catalog
                .funcs()
                .map(|d| d.name.as_str())
                .filter(|n| crate::suggest::distance(n, func) <= 2 || n.rsplit('.').next() == Some(short))
                .collect();
            similar.truncate(8);
            let mut d = Diagnostic::new(Stage::Unify, format!("func `{func}` does not exist"), span)
                .with_code(Code::UnknownFunction);
            if !similar.is_empty() {
                let expected: Vec<String> = similar
                    .iter()
                    .filter_map(|n| catalog.func(n))
                    .flat_map(|decl| {
                        if decl.sigs.is_empty() {
                            vec![format!("{}(...)", decl.name)]
                        } else {
                            decl.sigs.iter().map(|s| format_sig(&decl.name, s)).collect()
                        }
                    })
                    .collect();
                d = d.with_note(format!("expected one of: {} ; given: {given}", expected.join(" ; ")));
            }
            d
        }
    }
}

/// The post-solve check of an operator's operand kinds (spec 4.6).
pub(crate) fn check_op(ctx: &mut Ctx<'_>, node: NodeId) -> Option<Diagnostic> {
    let NodeKind::Op { op: Op::Bin(bin), args } = &ctx.graph.node(node).kind else { return None };
    let operand = Ctx::var(*args.first()?);
    if ctx.table.is_poisoned(operand) {
        return None;
    }
    let ty = ctx.table.resolve(operand);
    if !ty.is_concrete() || ty == Type::Variant {
        return None;
    }
    let (ok, takes) = match bin {
        BinOp::Add => (matches!(ty, Type::Str | Type::Int | Type::Float), "two `str`, `int` or `float`"),
        BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Lt | BinOp::Gt | BinOp::Le | BinOp::Ge => {
            (matches!(ty, Type::Int | Type::Float), "two `int` or two `float`")
        }
        BinOp::Eq | BinOp::Ne => (ty.is_comparable(), "two values of one type that is not (and holds no) func"),
        _ => return None,
    };
    if ok {
        return None;
    }
    let desc = describe_node(ctx.graph, node);
    let name = op_name(Op::Bin(*bin));
    let msg = format!("error setting type: `{desc}`, error: operator `{name}` does not accept `{ty}`");
    Some(
        Diagnostic::new(Stage::Unify, msg, ctx.span(node))
            .with_code(Code::TypeMismatch)
            .with_note(format!("`{name}` takes {takes}")),
    )
}

/// `name(a int, b int) int` for a catalog signature.
pub(crate) fn signature(func: &str, sig: &Type) -> String {
    match sig {
        Type::Func(params, ret) => {
            let params: Vec<String> =
                params.iter().map(|(n, t)| if n.is_empty() { t.to_string() } else { format!("{n} {t}") }).collect();
            format!("{func}({}) {ret}", params.join(", "))
        }
        other => format!("{func}: {other}"),
    }
}

/// The function API's error for a call no signature accepts: the signatures, and the
/// arguments' types as known (`?` where nothing is).
pub(crate) fn mismatched_call(
    table: &mut Table,
    func: &str,
    signatures: &[String],
    args: &[Var],
    counted: bool,
    span: Span,
) -> Diagnostic {
    let actual: Vec<String> = args
        .iter()
        .map(|v| {
            let ty = table.resolve(*v);
            if ty.is_concrete() { ty.to_string() } else { "?".to_string() }
        })
        .collect();
    let expected = if signatures.len() == 1 { "expected:" } else { "expected one of:" };
    Diagnostic::new(Stage::Unify, format!("function `{func}` called with mismatched arguments"), span)
        .with_code(Code::TypeMismatch)
        .with_note(format!("{expected}\n  {}", signatures.join("\n  ")))
        .with_note(match counted {
            true => format!("actual:\n  {func}({}) - arg count {{{}}}", actual.join(", "), actual.len()),
            false => format!("actual:\n  {func}({})", actual.join(", ")),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_interpolations_with_their_text() {
        use crate::ir::NodeKind;
        use crate::span::Span;
        let mut g = FuncGraph::default();
        let a = g.add(NodeKind::Const(Value::str("n-")), Span::default());
        let p = g.add_param("x", Span::default());
        let x = g.add(NodeKind::Param(p), Span::default());
        let i = g.add(NodeKind::Interp(vec![a, x]), Span::default());
        assert_eq!(describe_node(&g, i), "\"n-${x}\"");
    }

    #[test]
    fn formats_signatures_like_calls() {
        let sig = crate::types::parse_type("func(m map{?1: ?2}, key ?1) ?2").unwrap();
        assert_eq!(format_sig("map.lookup", &sig), "map.lookup(m map{?1: ?2}, key ?1) ?2");
    }
}
