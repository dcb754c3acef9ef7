//! `golang/strings`: Go's `strings` package, in snake_case.

use super::strings::{go_replace, go_split};
use super::{str_list, typed};
use crate::api::FuncError;
use crate::api::FuncResult;
use crate::builtin;
use crate::registry::Registry;
use lang::value::Value;

const P: &str = "golang/strings.";

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
    typed(r, format!("{P}compare"), compare::DEF);
    typed(r, format!("{P}contains"), contains::DEF);
    typed(r, format!("{P}contains_any"), contains_any::DEF);
    typed(r, format!("{P}count"), count::DEF);
    typed(r, format!("{P}equal_fold"), equal_fold::DEF);
    typed(r, format!("{P}fields"), fields::DEF);
    typed(r, format!("{P}has_prefix"), has_prefix::DEF);
    typed(r, format!("{P}has_suffix"), has_suffix::DEF);
    typed(r, format!("{P}index"), index::DEF);
    typed(r, format!("{P}index_any"), index_any::DEF);
    typed(r, format!("{P}join"), join::DEF);
    typed(r, format!("{P}last_index"), last_index::DEF);
    typed(r, format!("{P}last_index_any"), last_index_any::DEF);
    typed(r, format!("{P}repeat"), repeat::DEF);
    typed(r, format!("{P}replace"), replace::DEF);
    typed(r, format!("{P}replace_all"), replace_all::DEF);
    typed(r, format!("{P}split"), split::DEF);
    typed(r, format!("{P}split_after"), split_after::DEF);
    typed(r, format!("{P}split_after_n"), split_after_n::DEF);
    typed(r, format!("{P}split_n"), split_n::DEF);
    typed(r, format!("{P}title"), title::DEF);
    typed(r, format!("{P}clone"), clone::DEF);
    typed(r, format!("{P}to_valid_utf_8"), to_valid_utf_8::DEF);
    typed(r, format!("{P}to_lower"), to_lower::DEF);
    typed(r, format!("{P}to_title"), to_title::DEF);
    typed(r, format!("{P}to_upper"), to_upper::DEF);
    typed(r, format!("{P}trim"), trim::DEF);
    typed(r, format!("{P}trim_left"), trim_left::DEF);
    typed(r, format!("{P}trim_right"), trim_right::DEF);
    typed(r, format!("{P}trim_prefix"), trim_prefix::DEF);
    typed(r, format!("{P}trim_suffix"), trim_suffix::DEF);
    typed(r, format!("{P}trim_space"), trim_space::DEF);
}

builtin! {
    /// whether substr is in s
    fn contains(s: &str, substr: &str) -> bool {
        s.contains(substr)
    }
}

builtin! {
    /// whether any of chars is in s
    fn contains_any(s: &str, chars: &str) -> bool {
        s.chars().any(|c| chars.contains(c))
    }
}

builtin! {
    /// non-overlapping occurrences of substr
    fn count(s: &str, substr: &str) -> FuncResult as "int" {
        let (s, sub) = (s, substr);
        Ok(int(if sub.is_empty() { s.chars().count() + 1 } else { s.matches(sub).count() }))
    }
}

builtin! {
    /// case-insensitive equality
    fn equal_fold(s: &str, t: &str) -> bool {
        s.to_lowercase() == t.to_lowercase()
    }
}

builtin! {
    /// splits around runs of white space
    fn fields(s: &str) -> FuncResult as "[]str" {
        Ok(str_list(s.split_whitespace()))
    }
}

builtin! {
    /// whether s starts with prefix
    fn has_prefix(s: &str, prefix: &str) -> bool {
        s.starts_with(prefix)
    }
}

builtin! {
    /// whether s ends with suffix
    fn has_suffix(s: &str, suffix: &str) -> bool {
        s.ends_with(suffix)
    }
}

builtin! {
    /// byte index of substr, or -1
    fn index(s: &str, substr: &str) -> FuncResult as "int" {
        Ok(opt_index(s.find(substr)))
    }
}

builtin! {
    /// byte index of any of chars, or -1
    fn index_any(s: &str, chars: &str) -> FuncResult as "int" {
        Ok(opt_index(s.find(|c| chars.contains(c))))
    }
}

builtin! {
    /// joins with sep
    fn join(elems: Vec<&str>, sep: &str) -> String {
        elems.join(sep)
    }
}

builtin! {
    /// byte index of the last substr, or -1
    fn last_index(s: &str, substr: &str) -> FuncResult as "int" {
        Ok(opt_index(s.rfind(substr)))
    }
}

builtin! {
    /// byte index of the last of any of chars, or -1
    fn last_index_any(s: &str, chars: &str) -> FuncResult as "int" {
        Ok(opt_index(s.rfind(|c| chars.contains(c))))
    }
}

builtin! {
    /// s repeated count times
    fn repeat(s: &str, count: i64) -> FuncResult as "str" {
        let n = count;
        if n < 0 {
            return Err(FuncError::fatal("strings: negative Repeat count"));
        }
        if (s.len() as u128) * (n as u128) > crate::core::strings::MAX_STRING as u128 {
            return Err(FuncError::fatal("strings: Repeat output is too long"));
        }
        Ok(Value::str(s.repeat(n as usize)))
    }
}

builtin! {
    /// replaces the first n old (all if n < 0)
    fn replace(s: &str, old: &str, new: &str, n: i64) -> String {
        go_replace(s, old, new, n)
    }
}

builtin! {
    /// replaces every old
    fn replace_all(s: &str, old: &str, new: &str) -> String {
        go_replace(s, old, new, -1)
    }
}

builtin! {
    /// splits around sep
    fn split(s: &str, sep: &str) -> FuncResult as "[]str" {
        Ok(str_list(go_split(s, sep)))
    }
}

builtin! {
    /// splits after each sep
    fn split_after(s: &str, sep: &str) -> FuncResult as "[]str" {
        Ok(str_list(go_split_n(s, sep, -1, true)))
    }
}

builtin! {
    /// splits after sep, at most n parts
    fn split_after_n(s: &str, sep: &str, n: i64) -> FuncResult as "[]str" {
        Ok(str_list(go_split_n(s, sep, n, true)))
    }
}

builtin! {
    /// splits around sep, at most n parts
    fn split_n(s: &str, sep: &str, n: i64) -> FuncResult as "[]str" {
        Ok(str_list(go_split_n(s, sep, n, false)))
    }
}

builtin! {
    /// upper-cases the first letter of each word
    fn title(s: &str) -> String {
        go_title(s)
    }
}

builtin! {
    /// lower-cases
    fn to_lower(s: &str) -> String {
        s.to_lowercase()
    }
}

builtin! {
    /// title-cases every letter
    fn to_title(s: &str) -> String {
        s.to_uppercase()
    }
}

builtin! {
    /// upper-cases
    fn to_upper(s: &str) -> String {
        s.to_uppercase()
    }
}

builtin! {
    /// removes leading and trailing chars of cutset
    fn trim(s: &str, cutset: &str) -> FuncResult as "str" {
        let cut = cutset;
        Ok(Value::str(s.trim_matches(|c| cut.contains(c))))
    }
}

builtin! {
    /// removes leading chars of cutset
    fn trim_left(s: &str, cutset: &str) -> FuncResult as "str" {
        let cut = cutset;
        Ok(Value::str(s.trim_start_matches(|c| cut.contains(c))))
    }
}

builtin! {
    /// removes trailing chars of cutset
    fn trim_right(s: &str, cutset: &str) -> FuncResult as "str" {
        let cut = cutset;
        Ok(Value::str(s.trim_end_matches(|c| cut.contains(c))))
    }
}

builtin! {
    /// removes a leading prefix
    fn trim_prefix(s: &str, prefix: &str) -> String {
        String::from(s.strip_prefix(prefix).unwrap_or(s))
    }
}

builtin! {
    /// removes a trailing suffix
    fn trim_suffix(s: &str, suffix: &str) -> String {
        String::from(s.strip_suffix(suffix).unwrap_or(s))
    }
}

builtin! {
    /// removes leading and trailing white space
    fn trim_space(s: &str) -> String {
        String::from(s.trim())
    }
}

builtin! {
    /// -1, 0 or 1 comparing a and b
    fn compare(a: &str, b: &str) -> i64 {
        match a.cmp(b) {
            std::cmp::Ordering::Less => -1,
            std::cmp::Ordering::Equal => 0,
            std::cmp::Ordering::Greater => 1,
        }
    }
}

builtin! {
    /// a copy of s
    fn clone(s: &str) -> String {
        s.to_string()
    }
}

builtin! {
    /// s with invalid UTF-8 replaced: tend's strings are always valid, so s itself
    fn to_valid_utf_8(s: &str, replacement: &str) -> String {
        s.to_string()
    }
}
