//! Generic traversal of the syntax tree: every expression of a statement list, with
//! mutable access, children before parents.

use crate::syntax::ast::{
    Collector, EdgeHalf, Expr, ExprKind, InterpPart, Lambda, Param, ResEntry, ResEntryKind, Stmt, StmtKind, TypeDef,
};

/// Calls `f` on every expression in `stmts` (recursively, including nested blocks,
/// resource bodies, edge halves, lambda bodies and parameter-less sub-expressions).
pub fn exprs_mut(stmts: &mut [Stmt], f: &mut dyn FnMut(&mut Expr)) {
    for stmt in stmts {
        stmt_exprs_mut(stmt, f);
    }
}

fn stmt_exprs_mut(stmt: &mut Stmt, f: &mut dyn FnMut(&mut Expr)) {
    match &mut stmt.kind {
        StmtKind::Bind { value, .. } => expr_mut(value, f),
        StmtKind::If { cond, then, els } => {
            expr_mut(cond, f);
            exprs_mut(&mut then.stmts, f);
            if let Some(els) = els {
                exprs_mut(&mut els.stmts, f);
            }
        }
        StmtKind::For { iter, body, .. } | StmtKind::ForKv { iter, body, .. } => {
            expr_mut(iter, f);
            exprs_mut(&mut body.stmts, f);
        }
        StmtKind::Func { func, .. } => lambda_mut(func, f),
        StmtKind::Class { params, body, .. } => {
            params_mut(params.iter_mut().flatten(), f);
            exprs_mut(&mut body.stmts, f);
        }
        StmtKind::Include { args, .. } => {
            for arg in args.iter_mut().flatten() {
                expr_mut(arg, f);
            }
        }
        StmtKind::Import { .. } => {}
        StmtKind::Type(decl) => {
            if let TypeDef::Record(record) = &mut decl.def {
                for attr in &mut record.attrs {
                    attr.exprs_mut().for_each(|e| expr_mut(e, f));
                }
                for inv in &mut record.invariants {
                    expr_mut(&mut inv.expr, f);
                }
            }
        }
        StmtKind::Panic { args } => {
            for arg in args {
                expr_mut(arg, f);
            }
        }
        StmtKind::Resource(res) => {
            expr_mut(&mut res.name, f);
            entries_mut(&mut res.entries, f);
        }
        StmtKind::Defaults { entries, .. } => entries_mut(entries, f),
        StmtKind::Override { target, entries } => {
            half_mut(target, f);
            entries_mut(entries, f);
        }
        StmtKind::Edge { sides, .. } => {
            for side in sides {
                for half in &mut side.refs {
                    half_mut(half, f);
                }
                if let Some(c) = &mut side.collector {
                    collector_mut(c, f);
                }
            }
        }
        StmtKind::Collect(c) => collector_mut(c, f),
        StmtKind::Node { body, .. } => exprs_mut(&mut body.stmts, f),
        StmtKind::Realize { refs } => refs.iter_mut().for_each(|h| half_mut(h, f)),
    }
}

fn collector_mut(c: &mut Collector, f: &mut dyn FnMut(&mut Expr)) {
    if let Some(q) = &mut c.query {
        for value in q.values_mut() {
            expr_mut(value, f);
        }
    }
    entries_mut(&mut c.entries, f);
}

fn entries_mut(entries: &mut [ResEntry], f: &mut dyn FnMut(&mut Expr)) {
    for entry in entries {
        match &mut entry.kind {
            ResEntryKind::Field { cond, value, .. } | ResEntryKind::Meta { cond, value, .. } => {
                if let Some(cond) = cond {
                    expr_mut(cond, f);
                }
                expr_mut(value, f);
            }
            ResEntryKind::Edge { cond, target, .. } => {
                if let Some(cond) = cond {
                    expr_mut(cond, f);
                }
                half_mut(target, f);
            }
            ResEntryKind::Append { value, .. } | ResEntryKind::Splat { value } => expr_mut(value, f),
        }
    }
}

fn lambda_mut(lambda: &mut Lambda, f: &mut dyn FnMut(&mut Expr)) {
    params_mut(lambda.params.iter_mut(), f);
    expr_mut(&mut lambda.body, f);
}

fn params_mut<'p>(params: impl Iterator<Item = &'p mut Param>, f: &mut dyn FnMut(&mut Expr)) {
    for param in params {
        if let Some(default) = &mut param.default {
            expr_mut(default, f);
        }
    }
}

fn half_mut(half: &mut EdgeHalf, f: &mut dyn FnMut(&mut Expr)) {
    expr_mut(&mut half.name, f);
}

/// Calls `f` on `expr` and everything inside it, children first.
pub fn expr_mut(expr: &mut Expr, f: &mut dyn FnMut(&mut Expr)) {
    match &mut expr.kind {
        ExprKind::Bool(_)
        | ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::RawStr(_)
        | ExprKind::Str(_)
        | ExprKind::Var(_)
        | ExprKind::Error => {}
        ExprKind::Interp(parts) => {
            debug_assert!(parts.iter().all(|p| matches!(p, InterpPart::Lit(_) | InterpPart::Var(_))));
        }
        ExprKind::List(items) => {
            for item in items {
                expr_mut(item, f);
            }
        }
        ExprKind::Map(entries) => {
            for (key, value) in entries {
                expr_mut(key, f);
                expr_mut(value, f);
            }
        }
        ExprKind::Struct(fields) => {
            for (_, value) in fields {
                expr_mut(value, f);
            }
        }
        ExprKind::Call { args, .. } | ExprKind::CallVar { args, .. } => {
            for arg in args {
                expr_mut(arg, f);
            }
        }
        ExprKind::Lambda(lambda) => lambda_mut(lambda, f),
        ExprKind::Named { value, .. } => expr_mut(value, f),
        ExprKind::Construct { fields, .. } => {
            for (_, value) in fields {
                expr_mut(value, f);
            }
        }
        ExprKind::CallLambda { lambda, args } => {
            lambda_mut(lambda, f);
            for arg in args {
                expr_mut(arg, f);
            }
        }
        ExprKind::If { cond, then, els } => {
            expr_mut(cond, f);
            expr_mut(then, f);
            expr_mut(els, f);
        }
        ExprKind::Binary { lhs, rhs, .. } => {
            expr_mut(lhs, f);
            expr_mut(rhs, f);
        }
        ExprKind::Not(inner) => expr_mut(inner, f),
        ExprKind::Index { base, index } => {
            expr_mut(base, f);
            expr_mut(index, f);
        }
        ExprKind::Field { base, .. } => expr_mut(base, f),
        ExprKind::FieldOr { base, default, .. } => {
            expr_mut(base, f);
            expr_mut(default, f);
        }
        ExprKind::Annotated { expr: inner, .. } => expr_mut(inner, f),
    }
    f(expr);
}
