//! Runtime values of mcl, with mgmt's printed form (spec section 2.5).

use crate::ir::{NodeId, ParamId};
use crate::types::Type;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// A value. Containers are behind `Arc` so cloning is cheap; values are immutable.
#[derive(Clone, Debug)]
pub enum Value {
    Bool(bool),
    Str(Arc<str>),
    Int(i64),
    Float(f64),
    List(Arc<Vec<Value>>),
    /// Keys in value order, which is also the printed order.
    Map(Arc<BTreeMap<Value, Value>>),
    /// Fields in declaration order.
    Struct(Arc<Vec<(String, Value)>>),
    Func(Closure),
}

/// A function value: a lambda of the function graph plus the values of the parameters
/// of enclosing lambdas / loops it captured when it was created.
#[derive(Clone, Debug)]
pub struct Closure {
    pub lambda: NodeId,
    pub env: Env,
}

/// A persistent environment binding [`ParamId`]s to values (innermost first).
#[derive(Clone, Debug, Default)]
pub struct Env(pub Option<Arc<EnvFrame>>);

#[derive(Debug)]
pub struct EnvFrame {
    pub param: ParamId,
    pub value: Value,
    pub parent: Env,
}

impl Env {
    pub fn empty() -> Env {
        Env(None)
    }
    pub fn bind(&self, param: ParamId, value: Value) -> Env {
        Env(Some(Arc::new(EnvFrame { param, value, parent: self.clone() })))
    }
    pub fn get(&self, param: ParamId) -> Option<&Value> {
        let mut cur = self.0.as_ref();
        while let Some(frame) = cur {
            if frame.param == param {
                return Some(&frame.value);
            }
            cur = frame.parent.0.as_ref();
        }
        None
    }
}

impl Value {
    pub fn str(s: impl AsRef<str>) -> Value {
        Value::Str(Arc::from(s.as_ref()))
    }
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Arc::new(items))
    }
    pub fn map(entries: BTreeMap<Value, Value>) -> Value {
        Value::Map(Arc::new(entries))
    }
    pub fn strukt(fields: Vec<(String, Value)>) -> Value {
        Value::Struct(Arc::new(fields))
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }
    pub fn as_float(&self) -> Option<f64> {
        match self {
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }
    pub fn as_list(&self) -> Option<&[Value]> {
        match self {
            Value::List(l) => Some(l),
            _ => None,
        }
    }
    /// The params a `* => value` entry sets: a struct's fields, or a map's entries (whose
    /// keys must be `str`s); `None` for anything else.
    pub fn splat_entries(&self) -> Option<Vec<(String, Value)>> {
        match self {
            Value::Struct(fields) => Some(fields.iter().cloned().collect()),
            Value::Map(m) => m.iter().map(|(k, v)| k.as_str().map(|k| (k.to_string(), v.clone()))).collect(),
            _ => None,
        }
    }
    pub fn as_map(&self) -> Option<&BTreeMap<Value, Value>> {
        match self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }
    pub fn as_struct(&self) -> Option<&[(String, Value)]> {
        match self {
            Value::Struct(s) => Some(s),
            _ => None,
        }
    }
    /// A struct field by name.
    pub fn field(&self, name: &str) -> Option<&Value> {
        self.as_struct()?.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The zero value of a concrete type (empty string, 0, false, empty containers).
    pub fn zero(t: &Type) -> Value {
        match t {
            Type::Bool => Value::Bool(false),
            Type::Str | Type::Variant | Type::Var(_) | Type::Named(_) => Value::str(""),
            Type::Enum(choices) => Value::str(choices.first().map_or("", String::as_str)),
            Type::Int => Value::Int(0),
            Type::Float => Value::Float(0.0),
            Type::List(_) => Value::list(Vec::new()),
            Type::Map(..) => Value::map(BTreeMap::new()),
            Type::Struct(fs) => Value::strukt(fs.iter().map(|(n, t)| (n.clone(), Value::zero(t))).collect()),
            Type::Func(..) => Value::str(""),
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Value::Bool(_) => 0,
            Value::Int(_) => 1,
            Value::Float(_) => 2,
            Value::Str(_) => 3,
            Value::List(_) => 4,
            Value::Map(_) => 5,
            Value::Struct(_) => 6,
            Value::Func(_) => 7,
        }
    }
}

/// Total order used for map keys and sorted output: numeric for numbers,
/// lexicographic (bytes) for strings, element-wise for containers.
impl Ord for Value {
    fn cmp(&self, other: &Value) -> Ordering {
        match (self, other) {
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::Float(a), Value::Float(b)) => a.total_cmp(b),
            (Value::Str(a), Value::Str(b)) => a.cmp(b),
            (Value::List(a), Value::List(b)) => a.iter().cmp(b.iter()),
            (Value::Map(a), Value::Map(b)) => a.iter().cmp(b.iter()),
            (Value::Struct(a), Value::Struct(b)) => a.iter().cmp(b.iter()),
            (Value::Func(a), Value::Func(b)) => a.lambda.cmp(&b.lambda),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Value) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Deep equality (floats compare by value; functions never compare equal unless they
/// are the same lambda with no captured environment).
impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::Func(a), Value::Func(b)) => a.lambda == b.lambda && a.env.0.is_none() && b.env.0.is_none(),
            _ => self.cmp(other) == Ordering::Equal,
        }
    }
}
impl Eq for Value {}

/// Formats a float the mgmt way: shortest exact decimal, no exponent, no forced `.0`.
pub fn format_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    // `{}` on f64 is the shortest round-trip form and never uses an exponent.
    let s = format!("{f}");
    s
}

fn unhex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Percent-decoding as Go's URL path unescaping does it: an escape is `%` and two hex
/// digits (nothing else, not even a sign), and the result must be UTF-8. Used by
/// `net.url_parser` and the HTTP server kinds.
pub fn percent_decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let (Some(h), Some(l)) = (b.get(i + 1).and_then(|c| unhex(*c)), b.get(i + 2).and_then(|c| unhex(*c)))
            else {
                // Up to three characters, not bytes: the escape may be cut by a multi-byte one.
                let escape: String = s[i..].chars().take(3).collect();
                return Err(format!("invalid URL escape {escape:?}"));
            };
            out.push(h * 16 + l);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "invalid UTF-8 in URL".into())
}

/// Writes a Go-quoted string (`"a\tb"`).
pub fn quote_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The value form of section 2.5: strings quoted, containers in brackets. Use
/// [`Value::to_raw_string`] for `%s`/`%v` of a top-level string.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => f.write_str(&format_float(*x)),
            Value::Str(s) => f.write_str(&quote_str(s)),
            Value::List(items) => {
                f.write_str("[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Value::Map(m) => {
                f.write_str("{")?;
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}: {v}")?;
                }
                f.write_str("}")
            }
            Value::Struct(fields) => {
                f.write_str("struct{")?;
                for (i, (n, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{n}: {v}")?;
                }
                f.write_str("}")
            }
            Value::Func(_) => f.write_str("func(...)"),
        }
    }
}

impl Value {
    /// `%s`/`%v` form: a top-level string raw, anything else in value form.
    pub fn to_raw_string(&self) -> String {
        match self {
            Value::Str(s) => s.to_string(),
            other => other.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_like_mgmt() {
        assert_eq!(format_float(13.0), "13");
        assert_eq!(format_float(2.5), "2.5");
        let mut m = BTreeMap::new();
        m.insert(Value::Int(2), Value::str("b"));
        m.insert(Value::Int(1), Value::str("a\t"));
        assert_eq!(Value::map(m).to_string(), r#"{1: "a\t", 2: "b"}"#);
        let s = Value::strukt(vec![("a".into(), Value::Int(1)), ("b".into(), Value::str("x"))]);
        assert_eq!(s.to_string(), r#"struct{a: 1; b: "x"}"#);
    }
}
