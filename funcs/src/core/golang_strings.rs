//! `golang/strings`: Go's `strings` package, in snake_case.

use super::strings::{go_replace, go_split};
use super::{arg_int, arg_str, arg_strs, pure, str_list};
use crate::api::FuncError;
use crate::registry::Registry;
use lang::value::Value;

const P: &str = "golang/strings.";

fn reg(r: &mut Registry, name: &str, sig: &'static str, f: crate::api::PureFn, doc: &'static str) {
    pure(r, format!("{P}{name}"), sig, f, doc);
}

fn int(n: usize) -> Value {
    Value::Int(n as i64)
}

/// Go's `strings.Index` family: byte offsets, -1 when absent.
fn opt_index(i: Option<usize>) -> Value {
    i.map(int).unwrap_or(Value::Int(-1))
}

/// Go's `strings.SplitN`/`SplitAfterN`.
pub fn go_split_n(s: &str, sep: &str, n: i64, after: bool) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<String> = s.chars().map(|c| c.to_string()).collect();
        if n < 0 || chars.len() <= n as usize {
            return chars;
        }
        let n = n as usize;
        let mut out: Vec<String> = chars[..n - 1].to_vec();
        out.push(chars[n - 1..].concat());
        return out;
    }
    let mut out = Vec::new();
    let mut rest = s;
    while n < 0 || out.len() + 1 < n as usize {
        let Some(i) = rest.find(sep) else { break };
        let end = if after { i + sep.len() } else { i };
        out.push(rest[..end].to_string());
        rest = &rest[i + sep.len()..];
    }
    out.push(rest.to_string());
    out
}

/// Go's `strings.Title`: upper-cases the first letter of each word.
pub fn go_title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_letter = false;
    for c in s.chars() {
        let is_word = c.is_alphanumeric() || c == '_' || c == '\'';
        if is_word && !prev_letter {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        prev_letter = is_word;
    }
    out
}

pub fn register(r: &mut Registry) {
    reg(
        r,
        "compare",
        "func(a str, b str) int",
        body!(|a| Ok(Value::Int(match arg_str(a, 0)?.cmp(arg_str(a, 1)?) {
            std::cmp::Ordering::Less => -1,
            std::cmp::Ordering::Equal => 0,
            std::cmp::Ordering::Greater => 1,
        }))),
        "-1, 0 or 1 comparing a and b",
    );
    reg(
        r,
        "contains",
        "func(s str, substr str) bool",
        body!(|a| Ok(Value::Bool(arg_str(a, 0)?.contains(arg_str(a, 1)?)))),
        "whether substr is in s",
    );
    reg(
        r,
        "contains_any",
        "func(s str, chars str) bool",
        body!(|a| {
            let chars = arg_str(a, 1)?;
            Ok(Value::Bool(arg_str(a, 0)?.chars().any(|c| chars.contains(c))))
        }),
        "whether any of chars is in s",
    );
    reg(
        r,
        "count",
        "func(s str, substr str) int",
        body!(|a| {
            let (s, sub) = (arg_str(a, 0)?, arg_str(a, 1)?);
            Ok(int(if sub.is_empty() { s.chars().count() + 1 } else { s.matches(sub).count() }))
        }),
        "non-overlapping occurrences of substr",
    );
    reg(
        r,
        "equal_fold",
        "func(s str, t str) bool",
        body!(|a| Ok(Value::Bool(arg_str(a, 0)?.to_lowercase() == arg_str(a, 1)?.to_lowercase()))),
        "case-insensitive equality",
    );
    reg(
        r,
        "fields",
        "func(s str) []str",
        body!(|a| Ok(str_list(arg_str(a, 0)?.split_whitespace()))),
        "splits around runs of white space",
    );
    reg(
        r,
        "has_prefix",
        "func(s str, prefix str) bool",
        body!(|a| Ok(Value::Bool(arg_str(a, 0)?.starts_with(arg_str(a, 1)?)))),
        "whether s starts with prefix",
    );
    reg(
        r,
        "has_suffix",
        "func(s str, suffix str) bool",
        body!(|a| Ok(Value::Bool(arg_str(a, 0)?.ends_with(arg_str(a, 1)?)))),
        "whether s ends with suffix",
    );
    reg(
        r,
        "index",
        "func(s str, substr str) int",
        body!(|a| Ok(opt_index(arg_str(a, 0)?.find(arg_str(a, 1)?)))),
        "byte index of substr, or -1",
    );
    reg(
        r,
        "index_any",
        "func(s str, chars str) int",
        body!(|a| {
            let chars = arg_str(a, 1)?;
            Ok(opt_index(arg_str(a, 0)?.find(|c| chars.contains(c))))
        }),
        "byte index of any of chars, or -1",
    );
    reg(
        r,
        "join",
        "func(elems []str, sep str) str",
        body!(|a| Ok(Value::str(arg_strs(a, 0)?.join(arg_str(a, 1)?)))),
        "joins with sep",
    );
    reg(
        r,
        "last_index",
        "func(s str, substr str) int",
        body!(|a| Ok(opt_index(arg_str(a, 0)?.rfind(arg_str(a, 1)?)))),
        "byte index of the last substr, or -1",
    );
    reg(
        r,
        "last_index_any",
        "func(s str, chars str) int",
        body!(|a| {
            let chars = arg_str(a, 1)?;
            Ok(opt_index(arg_str(a, 0)?.rfind(|c| chars.contains(c))))
        }),
        "byte index of the last of any of chars, or -1",
    );
    reg(
        r,
        "repeat",
        "func(s str, count int) str",
        body!(|a| {
            let n = arg_int(a, 1)?;
            let s = arg_str(a, 0)?;
            if n < 0 {
                return Err(FuncError::fatal("strings: negative Repeat count"));
            }
            if (s.len() as u128) * (n as u128) > super::strings::MAX_STRING as u128 {
                return Err(FuncError::fatal("strings: Repeat output is too long"));
            }
            Ok(Value::str(s.repeat(n as usize)))
        }),
        "s repeated count times",
    );
    reg(
        r,
        "replace",
        "func(s str, old str, new str, n int) str",
        body!(|a| Ok(Value::str(go_replace(arg_str(a, 0)?, arg_str(a, 1)?, arg_str(a, 2)?, arg_int(a, 3)?)))),
        "replaces the first n old (all if n < 0)",
    );
    reg(
        r,
        "replace_all",
        "func(s str, old str, new str) str",
        body!(|a| Ok(Value::str(go_replace(arg_str(a, 0)?, arg_str(a, 1)?, arg_str(a, 2)?, -1)))),
        "replaces every old",
    );
    reg(
        r,
        "split",
        "func(s str, sep str) []str",
        body!(|a| Ok(str_list(go_split(arg_str(a, 0)?, arg_str(a, 1)?)))),
        "splits around sep",
    );
    reg(
        r,
        "split_after",
        "func(s str, sep str) []str",
        body!(|a| Ok(str_list(go_split_n(arg_str(a, 0)?, arg_str(a, 1)?, -1, true)))),
        "splits after each sep",
    );
    reg(
        r,
        "split_after_n",
        "func(s str, sep str, n int) []str",
        body!(|a| Ok(str_list(go_split_n(arg_str(a, 0)?, arg_str(a, 1)?, arg_int(a, 2)?, true)))),
        "splits after sep, at most n parts",
    );
    reg(
        r,
        "split_n",
        "func(s str, sep str, n int) []str",
        body!(|a| Ok(str_list(go_split_n(arg_str(a, 0)?, arg_str(a, 1)?, arg_int(a, 2)?, false)))),
        "splits around sep, at most n parts",
    );
    reg(
        r,
        "title",
        "func(s str) str",
        body!(|a| Ok(Value::str(go_title(arg_str(a, 0)?)))),
        "upper-cases the first letter of each word",
    );
    reg(r, "to_lower", "func(s str) str", body!(|a| Ok(Value::str(arg_str(a, 0)?.to_lowercase()))), "lower-cases");
    reg(
        r,
        "to_title",
        "func(s str) str",
        body!(|a| Ok(Value::str(arg_str(a, 0)?.to_uppercase()))),
        "title-cases every letter",
    );
    reg(r, "to_upper", "func(s str) str", body!(|a| Ok(Value::str(arg_str(a, 0)?.to_uppercase()))), "upper-cases");
    reg(
        r,
        "trim",
        "func(s str, cutset str) str",
        body!(|a| {
            let cut = arg_str(a, 1)?;
            Ok(Value::str(arg_str(a, 0)?.trim_matches(|c| cut.contains(c))))
        }),
        "removes leading and trailing chars of cutset",
    );
    reg(
        r,
        "trim_left",
        "func(s str, cutset str) str",
        body!(|a| {
            let cut = arg_str(a, 1)?;
            Ok(Value::str(arg_str(a, 0)?.trim_start_matches(|c| cut.contains(c))))
        }),
        "removes leading chars of cutset",
    );
    reg(
        r,
        "trim_right",
        "func(s str, cutset str) str",
        body!(|a| {
            let cut = arg_str(a, 1)?;
            Ok(Value::str(arg_str(a, 0)?.trim_end_matches(|c| cut.contains(c))))
        }),
        "removes trailing chars of cutset",
    );
    reg(
        r,
        "trim_prefix",
        "func(s str, prefix str) str",
        body!(|a| {
            let s = arg_str(a, 0)?;
            Ok(Value::str(s.strip_prefix(arg_str(a, 1)?).unwrap_or(s)))
        }),
        "removes a leading prefix",
    );
    reg(
        r,
        "trim_suffix",
        "func(s str, suffix str) str",
        body!(|a| {
            let s = arg_str(a, 0)?;
            Ok(Value::str(s.strip_suffix(arg_str(a, 1)?).unwrap_or(s)))
        }),
        "removes a trailing suffix",
    );
    reg(
        r,
        "trim_space",
        "func(s str) str",
        body!(|a| Ok(Value::str(arg_str(a, 0)?.trim()))),
        "removes leading and trailing white space",
    );
}
