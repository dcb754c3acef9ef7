//! The `convert` package.

use super::typed;
use crate::api::FuncError;
use crate::builtin;
use crate::registry::Registry;

pub fn register(r: &mut Registry) {
    typed(r, "convert.format_bool", format_bool::DEF);
    typed(r, "convert.parse_bool", parse_bool::DEF);
    typed(r, "convert.str_to_float", str_to_float::DEF);
    typed(r, "convert.str_to_int", str_to_int::DEF);
    typed(r, "convert.to_float", to_float::DEF);
    typed(r, "convert.to_int", to_int::DEF);
    typed(r, "convert.int_to_str", int_to_str::DEF);
}

builtin! {
    /// "true" or "false"
    fn format_bool(a: bool) -> String {
        if a { "true" } else { "false" }.to_string()
    }
}

/// Go's `strconv.ParseBool`.
pub fn go_parse_bool(s: &str) -> Result<bool, FuncError> {
    match s {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(FuncError::catchable(format!("parse_bool: invalid syntax: {}", lang::value::quote_str(s)))),
    }
}

builtin! {
    /// parses a bool the Go way (1, t, true, TRUE, ...)
    fn parse_bool(a: &str) -> Result<bool, FuncError> {
        go_parse_bool(a)
    }
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

builtin! {
    /// parses a float
    fn str_to_float(a: &str) -> Result<f64, FuncError> {
        go_parse_float(a)
    }
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

builtin! {
    /// parses a base-10 int
    fn str_to_int(a: &str) -> Result<i64, FuncError> {
        go_parse_int(a, 10)
    }
}

builtin! {
    /// an int as a float
    fn to_float(a: i64) -> f64 {
        a as f64
    }
}

builtin! {
    /// a float truncated to an int
    fn to_int(a: f64) -> i64 {
        a.trunc() as i64
    }
}

builtin! {
    /// an int in base 10
    fn int_to_str(a: i64) -> String {
        a.to_string()
    }
}
