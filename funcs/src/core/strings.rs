//! The `strings` package: every function typed once with `builtin!`.

use super::typed;
use crate::api::FuncError;
use crate::builtin;
use crate::registry::Registry;

pub fn register(r: &mut Registry) {
    typed(r, "strings.contains", contains::DEF);
    typed(r, "strings.has_prefix", has_prefix::DEF);
    typed(r, "strings.has_suffix", has_suffix::DEF);
    typed(r, "strings.join_nonempty", join_nonempty::DEF);
    typed(r, "strings.left_pad", left_pad::DEF);
    typed(r, "strings.right_pad", right_pad::DEF);
    typed(r, "strings.replace_all", replace_all::DEF);
    typed(r, "strings.split", split::DEF);
    typed(r, "strings.substr", substr::DEF);
    typed(r, "strings.to_lower", to_lower::DEF);
    typed(r, "strings.to_upper", to_upper::DEF);
    typed(r, "strings.trim_space", trim_space::DEF);
}

builtin! {
    /// whether substr occurs in s
    fn contains(s: &str, substr: &str) -> bool { s.contains(substr) }
}

builtin! {
    /// whether s starts with prefix
    fn has_prefix(s: &str, prefix: &str) -> bool { s.starts_with(prefix) }
}

builtin! {
    /// whether s ends with suffix
    fn has_suffix(s: &str, suffix: &str) -> bool { s.ends_with(suffix) }
}

builtin! {
    /// joins the non-empty strings with sep
    fn join_nonempty(s: Vec<&str>, sep: &str) -> String {
        s.into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>().join(sep)
    }
}

/// The longest string the padding and repeating functions build.
pub const MAX_STRING: i64 = 1 << 26;

fn pad(s: &str, pad: &str, want: i64, left: bool) -> Result<String, FuncError> {
    if pad.is_empty() {
        return Ok(s.to_string());
    }
    if want > MAX_STRING {
        return Err(FuncError::fatal(format!("can't pad to {want} bytes (the limit is {MAX_STRING})")));
    }
    let mut extra = String::new();
    while ((s.len() + extra.len()) as i64) < want {
        extra.push_str(pad);
    }
    Ok(if left { format!("{extra}{s}") } else { format!("{s}{extra}") })
}

builtin! {
    /// prepends pad until s is at least len bytes
    fn left_pad(s: &str, pad: &str, len: i64) -> Result<String, FuncError> { super::pad(s, pad, len, true) }
}

builtin! {
    /// appends pad until s is at least len bytes
    fn right_pad(s: &str, pad: &str, len: i64) -> Result<String, FuncError> { super::pad(s, pad, len, false) }
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

builtin! {
    /// replaces every old with new
    fn replace_all(s: &str, old: &str, new: &str) -> String { go_replace(s, old, new, -1) }
}

/// Go's `strings.Split`: an empty separator splits into UTF-8 characters.
pub fn go_split(s: &str, sep: &str) -> Vec<String> {
    if sep.is_empty() {
        return s.chars().map(|c| c.to_string()).collect();
    }
    s.split(sep).map(str::to_string).collect()
}

builtin! {
    /// splits a around every b
    fn split(a: &str, b: &str) -> Vec<String> { go_split(a, b) }
}

builtin! {
    /// the bytes low..high of s
    fn substr(s: &str, low: i64, high: i64) -> Result<String, FuncError> {
        if low < 0 || high < low || high as usize > s.len() {
            return Err(FuncError::catchable(format!(
                "substr: range {low}..{high} is out of bounds for a string of {} bytes",
                s.len()
            )));
        }
        match s.get(low as usize..high as usize) {
            Some(sub) => Ok(sub.to_string()),
            None => Err(FuncError::catchable(format!("substr: range {low}..{high} splits a UTF-8 character"))),
        }
    }
}

builtin! {
    /// lower-cases a
    fn to_lower(a: &str) -> String { a.to_lowercase() }
}

builtin! {
    /// upper-cases a
    fn to_upper(a: &str) -> String { a.to_uppercase() }
}

builtin! {
    /// removes leading and trailing white space
    fn trim_space(a: &str) -> String { a.trim().to_string() }
}
