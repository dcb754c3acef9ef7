//! The `convert` package.

use super::{arg_bool, arg_float, arg_int, arg_str, pure};
use crate::api::{CallCtx, FuncError, FuncResult};
use crate::registry::Registry;
use lang::value::Value;

pub fn register(r: &mut Registry) {
    pure(r, "convert.format_bool", "func(a bool) str", format_bool, "\"true\" or \"false\"");
    pure(r, "convert.parse_bool", "func(a str) bool", parse_bool, "parses a bool the Go way (1, t, true, TRUE, ...)");
    pure(r, "convert.str_to_float", "func(a str) float", str_to_float, "parses a float");
    pure(r, "convert.str_to_int", "func(a str) int", str_to_int, "parses a base-10 int");
    pure(r, "convert.to_float", "func(a int) float", to_float, "an int as a float");
    pure(r, "convert.to_int", "func(a float) int", to_int, "a float truncated to an int");
    pure(r, "convert.int_to_str", "func(a int) str", int_to_str, "an int in base 10");
}

fn format_bool(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    Ok(Value::str(if arg_bool(a, 0)? { "true" } else { "false" }))
}

/// Go's `strconv.ParseBool`.
pub fn go_parse_bool(s: &str) -> Result<bool, FuncError> {
    match s {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(FuncError::catchable(format!("parse_bool: invalid syntax: {}", lang::value::quote_str(s)))),
    }
}

fn parse_bool(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    go_parse_bool(arg_str(a, 0)?).map(Value::Bool)
}

/// Go's `strconv.ParseFloat(s, 64)` (decimal forms, `inf`, `nan`, underscores not allowed).
pub fn go_parse_float(s: &str) -> Result<f64, FuncError> {
    let bad = || FuncError::catchable(format!("parsing {}: invalid syntax", lang::value::quote_str(s)));
    let lower = s.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    if matches!(body, "inf" | "infinity" | "nan") {
        return s.parse::<f64>().map_err(|_| bad());
    }
    if body.is_empty() || !body.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | '+' | '-')) {
        return Err(bad());
    }
    let f: f64 = s.parse().map_err(|_| bad())?;
    if f.is_infinite() {
        return Err(FuncError::catchable(format!("parsing {}: value out of range", lang::value::quote_str(s))));
    }
    Ok(f)
}

fn str_to_float(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    go_parse_float(arg_str(a, 0)?).map(Value::Float)
}

/// Go's `strconv.ParseInt(s, base, 64)` for bases 2..=36 (base 0 infers from a prefix).
pub fn go_parse_int(s: &str, base: i64) -> Result<i64, FuncError> {
    let q = lang::value::quote_str(s);
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (base, digits) = if base == 0 {
        let l = digits.to_ascii_lowercase();
        if l.starts_with("0x") {
            (16, &digits[2..])
        } else if l.starts_with("0b") {
            (2, &digits[2..])
        } else if l.starts_with("0o") {
            (8, &digits[2..])
        } else if digits.len() > 1 && digits.starts_with('0') {
            (8, &digits[1..])
        } else {
            (10, digits)
        }
    } else {
        (base, digits)
    };
    if !(2..=36).contains(&base) {
        return Err(FuncError::catchable(format!("parsing {q}: invalid base {base}")));
    }
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return Err(FuncError::catchable(format!("parsing {q}: invalid syntax")));
    }
    let text = if neg { format!("-{digits}") } else { digits.to_string() };
    i64::from_str_radix(&text, base as u32).map_err(|e| {
        let why = match e.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => "value out of range",
            _ => "invalid syntax",
        };
        FuncError::catchable(format!("parsing {q}: {why}"))
    })
}

fn str_to_int(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    go_parse_int(arg_str(a, 0)?, 10).map(Value::Int)
}

fn to_float(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    Ok(Value::Float(arg_int(a, 0)? as f64))
}

fn to_int(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    Ok(Value::Int(arg_float(a, 0)?.trunc() as i64))
}

fn int_to_str(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    Ok(Value::str(arg_int(a, 0)?.to_string()))
}
