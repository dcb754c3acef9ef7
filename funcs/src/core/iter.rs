//! The `iter` package: higher-order list functions (lambdas are called through
//! `CallCtx::caller`) and `range`.

use super::{Def, add, arg, arg_int, arg_list, pure};
use crate::api::{CallCtx, FuncError, FuncResult};
use crate::registry::Registry;
use lang::value::{Closure, Value};

pub fn register(r: &mut Registry) {
    pure(r, "iter.map", "func(inputs []?1, function func(?1) ?2) []?2", map, "applies a function to every element");
    pure(
        r,
        "iter.filter",
        "func(inputs []?1, function func(?1) bool) []?1",
        filter,
        "keeps the elements the function accepts",
    );
    add(
        r,
        Def::pure(
            "iter.reduce",
            &[
                "func(inputs []?1, function func(?1, ?1) ?1) ?1",
                "func(initval ?1, inputs []?1, function func(?1, ?1) ?1) ?1",
            ],
            reduce,
            "left fold, optionally from an initial value",
        ),
    );
    pure(
        r,
        "iter.zip",
        "func(inputs1 []?1, inputs2 []?2, function func(?1, ?2) ?3) []?3",
        zip,
        "combines two lists element-wise (stops at the shorter)",
    );
    pure(r, "iter.flatten", "func(inputs [][]?1) []?1", flatten, "concatenates a list of lists");
    add(
        r,
        Def::pure(
            "iter.range",
            &["func(stop int) []int", "func(start int, stop int) []int", "func(start int, stop int, step int) []int"],
            range,
            "the ints from start (0) up to stop, excluded, by step (1)",
        ),
    );
}

fn closure(args: &[Value], i: usize) -> Result<&Closure, FuncError> {
    match arg(args, i)? {
        Value::Func(c) => Ok(c),
        other => Err(FuncError::fatal(format!("internal error: argument #{i} should be a function, got {other}"))),
    }
}

fn map(ctx: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    let f = closure(a, 1)?;
    let out = arg_list(a, 0)?.iter().map(|v| ctx.caller.call(f, vec![v.clone()])).collect::<Result<_, _>>()?;
    Ok(Value::list(out))
}

fn filter(ctx: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    let f = closure(a, 1)?;
    let mut out = Vec::new();
    for v in arg_list(a, 0)? {
        match ctx.caller.call(f, vec![v.clone()])? {
            Value::Bool(true) => out.push(v.clone()),
            Value::Bool(false) => {}
            other => return Err(FuncError::fatal(format!("filter function returned {other}, not a bool"))),
        }
    }
    Ok(Value::list(out))
}

fn reduce(ctx: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    let (init, list, f) = if a.len() == 3 {
        (Some(arg(a, 0)?.clone()), arg_list(a, 1)?, closure(a, 2)?)
    } else {
        (None, arg_list(a, 0)?, closure(a, 1)?)
    };
    let mut items = list.iter().cloned();
    let mut acc = match init {
        Some(v) => v,
        None => items.next().ok_or_else(|| FuncError::fatal("can't reduce an empty list without an initial value"))?,
    };
    for v in items {
        acc = ctx.caller.call(f, vec![acc, v])?;
    }
    Ok(acc)
}

fn zip(ctx: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    let f = closure(a, 2)?;
    let out = arg_list(a, 0)?
        .iter()
        .zip(arg_list(a, 1)?)
        .map(|(x, y)| ctx.caller.call(f, vec![x.clone(), y.clone()]))
        .collect::<Result<_, _>>()?;
    Ok(Value::list(out))
}

fn flatten(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    let mut out = Vec::new();
    for inner in arg_list(a, 0)? {
        match inner {
            Value::List(l) => out.extend(l.iter().cloned()),
            other => return Err(FuncError::fatal(format!("flatten: {other} is not a list"))),
        }
    }
    Ok(Value::list(out))
}

/// Most elements `range` will build, so a typo can't exhaust memory.
const RANGE_LIMIT: i128 = 10_000_000;

fn range(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    let (start, stop, step) = match a.len() {
        1 => (0, arg_int(a, 0)?, 1),
        2 => (arg_int(a, 0)?, arg_int(a, 1)?, 1),
        _ => (arg_int(a, 0)?, arg_int(a, 1)?, arg_int(a, 2)?),
    };
    if step == 0 {
        return Err(FuncError::fatal("range: step must not be zero"));
    }
    let (s, e, st) = (start as i128, stop as i128, step as i128);
    let count = if (st > 0 && s < e) || (st < 0 && s > e) { ((e - s).abs() + st.abs() - 1) / st.abs() } else { 0 };
    if count > RANGE_LIMIT {
        return Err(FuncError::fatal(format!("range: {count} elements is too many (the limit is {RANGE_LIMIT})")));
    }
    Ok(Value::list((0..count).map(|i| Value::Int((s + i * st) as i64)).collect()))
}
