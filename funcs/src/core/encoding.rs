//! The `encoding` package: base64 and JSON.

use super::{Def, add, arg_str, typed};
use crate::api::{CallCtx, FuncError, FuncResult};
use crate::builtin;
use crate::registry::Registry;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use lang::catalog::CallSite;
use lang::types::{Type, parse_type};
use lang::value::Value;
use std::collections::BTreeMap;

pub fn register(r: &mut Registry) {
    typed(r, "encoding.base64_encode", base64_encode::DEF);
    typed(r, "encoding.base64_decode", base64_decode::DEF);
    add(
        r,
        Def::pure("encoding.decode_json", &[], decode_json, "decodes JSON into the type given or inferred")
            .infer(infer_decode),
    );
    add(
        r,
        Def::pure(
            "encoding.decode_json_flexible",
            &[],
            decode_json_flexible,
            "like decode_json; missing struct fields become zero",
        )
        .infer(infer_decode),
    );
}

builtin! {
    /// standard base64 with padding
    fn base64_encode(data: &str) -> String {
        STANDARD.encode(data)
    }
}

builtin! {
    /// decodes standard base64
    fn base64_decode(data: &str) -> Result<String, FuncError> {
        let bytes = STANDARD.decode(data).map_err(|e| FuncError::fatal(format!("base64_decode: {e}")))?;
        String::from_utf8(bytes).map_err(|_| FuncError::fatal("base64_decode: the decoded data is not valid UTF-8"))
    }
}

/// `decode_json(data)` returns whatever its context wants; `decode_json(data, "type")`
/// needs the type as a static string.
pub fn infer_decode(site: &CallSite) -> Result<Type, String> {
    let data = ("data".to_string(), Type::Str);
    match site.args.as_slice() {
        [_] => Ok(Type::Func(vec![data], Box::new(Type::Var(1)))),
        [_, Some(Value::Str(t))] => {
            let ty = parse_type(t).map_err(|e| format!("can't parse the type string: {}", e.0))?;
            if !ty.is_concrete() {
                return Err(format!("the type {ty} must not contain type variables"));
            }
            Ok(Type::Func(vec![data, ("type".into(), Type::Str)], Box::new(ty)))
        }
        [_, Some(other)] => Err(format!("the type must be a str, got {other}")),
        [_, None] => Err("the type argument must be a static string (a literal or a constant)".into()),
        _ => Err(format!("expected 1 or 2 args, got {}", site.args.len())),
    }
}

/// Converts parsed JSON to a value of type `t`.
pub fn json_to_value(j: &serde_json::Value, t: &Type, flexible: bool) -> Result<Value, String> {
    use serde_json::Value as J;
    let mismatch = || format!("can't decode JSON {j} as {t}");
    match (t, j) {
        (Type::Bool, J::Bool(b)) => Ok(Value::Bool(*b)),
        (Type::Str, J::String(s)) => Ok(Value::str(s)),
        (Type::Int, J::Number(n)) => n.as_i64().map(Value::Int).ok_or_else(mismatch),
        (Type::Float, J::Number(n)) => n.as_f64().map(Value::Float).ok_or_else(mismatch),
        (Type::List(e), J::Array(items)) => {
            items.iter().map(|i| json_to_value(i, e, flexible)).collect::<Result<_, _>>().map(Value::list)
        }
        (Type::List(_) | Type::Map(..), J::Null) => Ok(Value::zero(t)),
        (Type::Map(k, v), J::Object(o)) => {
            let mut m = BTreeMap::new();
            for (key, val) in o {
                let key = match **k {
                    Type::Str => Value::str(key),
                    Type::Int => Value::Int(key.parse().map_err(|_| format!("map key {key:?} is not an int"))?),
                    Type::Float => Value::Float(key.parse().map_err(|_| format!("map key {key:?} is not a float"))?),
                    Type::Bool => Value::Bool(key.parse().map_err(|_| format!("map key {key:?} is not a bool"))?),
                    _ => return Err(format!("can't decode JSON object keys as {k}")),
                };
                m.insert(key, json_to_value(val, v, flexible)?);
            }
            Ok(Value::map(m))
        }
        (Type::Struct(fields), J::Object(o)) => {
            let mut out = Vec::new();
            for (name, ft) in fields {
                let found =
                    o.get(name).or_else(|| o.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v));
                let v = match found {
                    Some(j) => json_to_value(j, ft, flexible)?,
                    None if flexible => Value::zero(ft),
                    None => return Err(format!("struct field {name} is missing in the JSON data")),
                };
                out.push((name.clone(), v));
            }
            Ok(Value::strukt(out))
        }
        _ => Err(mismatch()),
    }
}

fn decode(ctx: &CallCtx<'_>, a: &[Value], flexible: bool) -> FuncResult {
    let data = arg_str(a, 0)?;
    let j: serde_json::Value =
        serde_json::from_str(data).map_err(|e| FuncError::fatal(format!("decode_json: invalid JSON: {e}")))?;
    json_to_value(&j, ctx.ret_type, flexible).map_err(|e| FuncError::fatal(format!("decode_json: {e}")))
}

fn decode_json(ctx: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    decode(ctx, a, false)
}
fn decode_json_flexible(ctx: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    decode(ctx, a, true)
}
