//! The `strings` package.

use super::{Def, add, arg_int, arg_str, arg_strs, pure, str_list};
use crate::api::{CallCtx, FuncError, FuncResult};
use crate::registry::Registry;
use lang::value::Value;

pub fn register(r: &mut Registry) {
    pure(r, "strings.contains", "func(s str, substr str) bool", contains, "whether substr occurs in s");
    pure(r, "strings.has_prefix", "func(s str, prefix str) bool", has_prefix, "whether s starts with prefix");
    pure(r, "strings.has_suffix", "func(s str, suffix str) bool", has_suffix, "whether s ends with suffix");
    pure(
        r,
        "strings.join_nonempty",
        "func(s []str, sep str) str",
        join_nonempty,
        "joins the non-empty strings with sep",
    );
    pure(
        r,
        "strings.left_pad",
        "func(s str, pad str, len int) str",
        left_pad,
        "prepends pad until s is at least len bytes",
    );
    pure(
        r,
        "strings.right_pad",
        "func(s str, pad str, len int) str",
        right_pad,
        "appends pad until s is at least len bytes",
    );
    pure(r, "strings.replace_all", "func(s str, old str, new str) str", replace_all, "replaces every old with new");
    pure(r, "strings.split", "func(a str, b str) []str", split, "splits a around every b");
    add(r, Def::pure("strings.substr", &["func(s str, low int, high int) str"], substr, "the bytes low..high of s"));
    pure(r, "strings.to_lower", "func(a str) str", to_lower, "lower-cases a");
    pure(r, "strings.to_upper", "func(a str) str", to_upper, "upper-cases a");
    pure(r, "strings.trim_space", "func(a str) str", trim_space, "removes leading and trailing white space");
}

fn contains(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    Ok(Value::Bool(arg_str(a, 0)?.contains(arg_str(a, 1)?)))
}
fn has_prefix(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    Ok(Value::Bool(arg_str(a, 0)?.starts_with(arg_str(a, 1)?)))
}
fn has_suffix(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    Ok(Value::Bool(arg_str(a, 0)?.ends_with(arg_str(a, 1)?)))
}
fn join_nonempty(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    let parts: Vec<&str> = arg_strs(a, 0)?.into_iter().filter(|s| !s.is_empty()).collect();
    Ok(Value::str(parts.join(arg_str(a, 1)?)))
}

/// The longest string the padding and repeating functions build.
pub const MAX_STRING: i64 = 1 << 26;

fn pad(a: &[Value], left: bool) -> FuncResult {
    let s = arg_str(a, 0)?;
    let pad = arg_str(a, 1)?;
    let want = arg_int(a, 2)?;
    if pad.is_empty() {
        return Ok(Value::str(s));
    }
    if want > MAX_STRING {
        return Err(FuncError::fatal(format!("can't pad to {want} bytes (the limit is {MAX_STRING})")));
    }
    let mut extra = String::new();
    while ((s.len() + extra.len()) as i64) < want {
        extra.push_str(pad);
    }
    Ok(Value::str(if left { format!("{extra}{s}") } else { format!("{s}{extra}") }))
}
fn left_pad(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    pad(a, true)
}
fn right_pad(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    pad(a, false)
}

/// Go's `strings.Replace(s, old, new, -1)`: an empty `old` inserts `new` around every char.
pub fn go_replace(s: &str, old: &str, new: &str, n: i64) -> String {
    if old.is_empty() {
        let mut out = String::new();
        let mut done = 0;
        for c in s.chars() {
            if n < 0 || done < n {
                out.push_str(new);
                done += 1;
            }
            out.push(c);
        }
        if n < 0 || done < n {
            out.push_str(new);
        }
        return out;
    }
    if n < 0 { s.replace(old, new) } else { s.replacen(old, new, n as usize) }
}

fn replace_all(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    Ok(Value::str(go_replace(arg_str(a, 0)?, arg_str(a, 1)?, arg_str(a, 2)?, -1)))
}

/// Go's `strings.Split`: an empty separator splits into UTF-8 characters.
pub fn go_split(s: &str, sep: &str) -> Vec<String> {
    if sep.is_empty() {
        return s.chars().map(|c| c.to_string()).collect();
    }
    s.split(sep).map(str::to_string).collect()
}

fn split(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    Ok(str_list(go_split(arg_str(a, 0)?, arg_str(a, 1)?)))
}

fn substr(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    let s = arg_str(a, 0)?;
    let (low, high) = (arg_int(a, 1)?, arg_int(a, 2)?);
    if low < 0 || high < low || high as usize > s.len() {
        return Err(FuncError::catchable(format!(
            "substr: range {low}..{high} is out of bounds for a string of {} bytes",
            s.len()
        )));
    }
    match s.get(low as usize..high as usize) {
        Some(sub) => Ok(Value::str(sub)),
        None => Err(FuncError::catchable(format!("substr: range {low}..{high} splits a UTF-8 character"))),
    }
}

fn to_lower(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    Ok(Value::str(arg_str(a, 0)?.to_lowercase()))
}
fn to_upper(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    Ok(Value::str(arg_str(a, 0)?.to_uppercase()))
}
fn trim_space(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    Ok(Value::str(arg_str(a, 0)?.trim()))
}
