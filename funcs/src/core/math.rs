//! The `math` package.

use super::{Def, add, arg, typed};
use crate::api::{CallCtx, FuncError, FuncResult};
use crate::builtin;
use crate::registry::Registry;
use lang::types::Type;
use lang::value::Value;

pub fn register(r: &mut Registry) {
    add(r, Def::pure("math.fortytwo", &["func() ?1"], fortytwo, "42, as an int or a float").check(check_fortytwo));
    typed(r, "math.minus1", minus1::DEF);
    add(
        r,
        Def::pure("math.mod", &["func(?1, ?1) ?1"], modulo, "the remainder of x / y (int or float)").check(check_mod),
    );
    typed(r, "math.pow", pow::DEF);
    typed(r, "math.sqrt", sqrt::DEF);
}

fn ret_of(t: &Type) -> Option<&Type> {
    match t {
        Type::Func(_, r) => Some(r),
        _ => None,
    }
}

fn check_fortytwo(t: &Type) -> Result<(), String> {
    match ret_of(t) {
        Some(Type::Int | Type::Float) => Ok(()),
        Some(other) => Err(format!("fortytwo can only be an int or a float, not {other}")),
        None => Err(format!("unexpected signature {t}")),
    }
}

fn check_mod(t: &Type) -> Result<(), String> {
    match ret_of(t) {
        Some(Type::Int | Type::Float) => Ok(()),
        Some(other) => Err(format!("mod needs int or float operands, not {other}")),
        None => Err(format!("unexpected signature {t}")),
    }
}

fn fortytwo(ctx: &CallCtx<'_>, _: &[Value]) -> FuncResult {
    match ctx.ret_type {
        Type::Float => Ok(Value::Float(42.0)),
        Type::Int => Ok(Value::Int(42)),
        other => Err(FuncError::fatal(format!("fortytwo can't return a {other}"))),
    }
}

builtin! {
    /// x - 1
    fn minus1(x: i64) -> i64 {
        x.wrapping_sub(1)
    }
}

/// Go's `math.Mod`: the result has the sign of x.
pub fn float_mod(x: f64, y: f64) -> FuncResult {
    let r = x % y;
    if r.is_nan() || r.is_infinite() {
        return Err(FuncError::catchable(format!("mod of {x} by {y} is not a number ({r})")));
    }
    Ok(Value::Float(r))
}

fn modulo(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    match (arg(a, 0)?, arg(a, 1)?) {
        (Value::Int(_), Value::Int(0)) => Err(FuncError::catchable("can't take a modulo by zero")),
        (Value::Int(x), Value::Int(y)) => Ok(Value::Int(x.wrapping_rem(*y))),
        (Value::Float(x), Value::Float(y)) => float_mod(*x, *y),
        (x, y) => Err(FuncError::fatal(format!("mod of unsupported values {x} and {y}"))),
    }
}

fn finite(what: &str, r: f64) -> Result<f64, FuncError> {
    if r.is_nan() || r.is_infinite() {
        Err(FuncError::catchable(format!("{what} is not a finite number ({r})")))
    } else {
        Ok(r)
    }
}

builtin! {
    /// x to the power y
    fn pow(x: f64, y: f64) -> Result<f64, FuncError> {
        finite(&format!("pow({x}, {y})"), x.powf(y))
    }
}

builtin! {
    /// the square root of x
    fn sqrt(x: f64) -> Result<f64, FuncError> {
        if x < 0.0 {
            return Err(FuncError::catchable(format!("can't take the square root of a negative number ({x})")));
        }
        finite(&format!("sqrt({x})"), x.sqrt())
    }
}
