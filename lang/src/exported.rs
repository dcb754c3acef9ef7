//! Exported resources as records another host collects: which declarations of an output
//! are exported, and to whom ([`exports`]), and their encoding ([`encode`], [`decode`]).
//!
//! A record is JSON holding the declaration's params, its meta params (without `export`,
//! which a collected copy never keeps) and the classes that declared it (its tags, for
//! `<<| tag == … |>>`). Values keep their shape: an int is a JSON integer, a float
//! `{"f": x}`, a list an array, a map `{"m": [[k, v], …]}`, a struct `{"s": [[field, v], …]}`,
//! so a collector rebuilds exactly the values the exporter declared.

use crate::output::{Output, ResDecl, Virtuality};
use crate::span::Span;
use crate::value::Value;
use serde_json::{Value as Json, json};
use std::collections::BTreeMap;

/// One resource this host exports: to hosts `to` (`*`: every host).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ExportRecord {
    pub kind: String,
    pub name: String,
    pub to: Vec<String>,
    pub record: String,
}

/// The resources `out` exports (`Meta:export`, `@@kind`), by kind and name. `collect`
/// copies are never exported again. A declaration whose values cannot be exported (a
/// function value) is an error naming it.
pub fn exports(out: &Output) -> Result<Vec<ExportRecord>, String> {
    let mut found: BTreeMap<(String, String), ExportRecord> = BTreeMap::new();
    for r in out.resources.iter().filter(|r| !r.collect && r.exported()) {
        let mut to: Vec<String> = r
            .metas
            .iter()
            .filter(|(n, ..)| n == "export")
            .filter_map(|(_, v, _)| v.as_list())
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        if to.is_empty() && r.virtuality == Virtuality::Exported {
            to.push("*".into());
        }
        to.sort();
        to.dedup();
        if to.is_empty() {
            continue;
        }
        let record = encode(r).map_err(|e| format!("{}[{}] cannot be exported: {e}", r.kind, r.name))?;
        let key = (r.kind.clone(), r.name.clone());
        match found.get_mut(&key) {
            Some(seen) => {
                seen.to.extend(to);
                seen.to.sort();
                seen.to.dedup();
            }
            None => {
                found.insert(key, ExportRecord { kind: r.kind.clone(), name: r.name.clone(), to, record });
            }
        }
    }
    Ok(found.into_values().collect())
}

/// The record of `decl`.
pub fn encode(decl: &ResDecl) -> Result<String, String> {
    let pairs = |items: &[(String, Value, Span)], skip: &str| -> Result<Json, String> {
        let mut out = Vec::with_capacity(items.len());
        for (name, value, _) in items.iter().filter(|(n, ..)| n != skip) {
            out.push(json!([name, to_json(value)?]));
        }
        Ok(Json::Array(out))
    };
    let record = json!({
        "params": pairs(&decl.params, "")?,
        "metas": pairs(&decl.metas, "export")?,
        "classes": decl.classes,
    });
    Ok(record.to_string())
}

/// The declaration `host` exported as `record`, to collect here: virtual and exported,
/// placed at `span` (the collector that reads it).
pub fn decode(kind: &str, name: &str, host: &str, record: &str, span: Span) -> Result<ResDecl, String> {
    let json: Json = serde_json::from_str(record).map_err(|e| format!("not a record: {e}"))?;
    let pairs = |field: &str| -> Result<Vec<(String, Value, Span)>, String> {
        let Some(items) = json.get(field).and_then(Json::as_array) else { return Ok(Vec::new()) };
        items
            .iter()
            .map(|pair| match pair.as_array().map(Vec::as_slice) {
                Some([Json::String(n), v]) => Ok((n.clone(), from_json(v)?, span)),
                _ => Err(format!("`{field}` holds {pair}, not a [name, value] pair")),
            })
            .collect()
    };
    let classes = json
        .get("classes")
        .and_then(Json::as_array)
        .map(|c| c.iter().filter_map(|c| c.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    Ok(ResDecl {
        kind: kind.to_string(),
        name: name.to_string(),
        params: pairs("params")?,
        defaulted: Vec::new(),
        metas: pairs("metas")?,
        edges: Vec::new(),
        collect: false,
        from: Some(host.to_string()),
        virtuality: Virtuality::Exported,
        classes,
        within: Vec::new(),
        span,
    })
}

/// A resource's params as one line of text (`[[name, value], …]` in the export encoding),
/// which [`params_from_record`] reads back: what the engine keeps on disk of a pending
/// reversal.
pub fn params_to_record(params: &crate::params::ParamMap) -> Result<String, String> {
    let pairs = params.iter().map(|(k, v)| Ok(json!([k, to_json(v)?]))).collect::<Result<Vec<Json>, String>>()?;
    Ok(Json::Array(pairs).to_string())
}

/// The params [`params_to_record`] wrote.
pub fn params_from_record(record: &str) -> Result<crate::params::ParamMap, String> {
    let json: Json = serde_json::from_str(record).map_err(|e| format!("not a record: {e}"))?;
    let items = json.as_array().ok_or("not a list of params")?;
    items
        .iter()
        .map(|p| match p.as_array().map(Vec::as_slice) {
            Some([Json::String(k), v]) => Ok((k.clone(), from_json(v)?)),
            _ => Err(format!("not a param: {p}")),
        })
        .collect()
}

fn to_json(v: &Value) -> Result<Json, String> {
    Ok(match v {
        Value::Bool(b) => Json::Bool(*b),
        Value::Str(s) => Json::String(s.to_string()),
        Value::Int(i) => json!(i),
        Value::Float(f) if f.is_finite() => json!({ "f": f }),
        Value::Float(f) => json!({ "f": f.to_string() }),
        Value::List(items) => Json::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Value::Map(m) => {
            let pairs = m.iter().map(|(k, v)| Ok(json!([to_json(k)?, to_json(v)?]))).collect::<Result<_, String>>()?;
            json!({ "m": Json::Array(pairs) })
        }
        Value::Struct(fields) => {
            let pairs = fields.iter().map(|(n, v)| Ok(json!([n, to_json(v)?]))).collect::<Result<_, String>>()?;
            json!({ "s": Json::Array(pairs) })
        }
        Value::Func(_) => return Err("a function value cannot leave this host".into()),
    })
}

fn from_json(j: &Json) -> Result<Value, String> {
    let pairs = |j: &Json| -> Result<Vec<(Json, Json)>, String> {
        let items = j.as_array().ok_or_else(|| format!("expected pairs, got {j}"))?;
        items
            .iter()
            .map(|p| match p.as_array().map(Vec::as_slice) {
                Some([a, b]) => Ok((a.clone(), b.clone())),
                _ => Err(format!("expected a pair, got {p}")),
            })
            .collect()
    };
    Ok(match j {
        Json::Bool(b) => Value::Bool(*b),
        Json::String(s) => Value::str(s),
        Json::Number(n) => Value::Int(n.as_i64().ok_or_else(|| format!("{n} is not an int"))?),
        Json::Array(items) => Value::list(items.iter().map(from_json).collect::<Result<_, _>>()?),
        Json::Object(o) if o.len() == 1 => match o.iter().next() {
            Some((tag, Json::Number(n))) if tag == "f" => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            Some((tag, Json::String(s))) if tag == "f" => Value::Float(s.parse().map_err(|_| format!("{s}: a float"))?),
            Some((tag, m)) if tag == "m" => Value::map(
                pairs(m)?.iter().map(|(k, v)| Ok((from_json(k)?, from_json(v)?))).collect::<Result<_, String>>()?,
            ),
            Some((tag, s)) if tag == "s" => Value::strukt(
                pairs(s)?
                    .iter()
                    .map(|(n, v)| match n {
                        Json::String(n) => Ok((n.clone(), from_json(v)?)),
                        other => Err(format!("a struct field name must be a string, got {other}")),
                    })
                    .collect::<Result<_, String>>()?,
            ),
            _ => return Err(format!("unknown value {j}")),
        },
        other => return Err(format!("unknown value {other}")),
    })
}

/// Whether two declarations hold the same resource: the same params and meta params
/// (whatever their order; `export` aside).
pub fn same_record(a: &ResDecl, b: &ResDecl) -> bool {
    let params =
        |r: &ResDecl| -> BTreeMap<String, Value> { r.params.iter().map(|(n, v, _)| (n.clone(), v.clone())).collect() };
    let metas = |r: &ResDecl| -> BTreeMap<String, Value> {
        r.metas.iter().filter(|(n, ..)| n != "export").map(|(n, v, _)| (n.clone(), v.clone())).collect()
    };
    params(a) == params(b) && metas(a) == metas(b)
}

/// The first param or meta param in which two declarations differ, for a message.
pub fn difference(a: &ResDecl, b: &ResDecl) -> String {
    let find =
        |xs: &[(String, Value, Span)], name: &str| xs.iter().find(|(n, ..)| n == name).map(|(_, v, _)| v.clone());
    let mut names: Vec<&String> = a.params.iter().chain(b.params.iter()).map(|(n, ..)| n).collect();
    names.sort();
    names.dedup();
    for name in names {
        match (find(&a.params, name), find(&b.params, name)) {
            (x, y) if x == y => {}
            (Some(x), Some(y)) => return format!("`{name}` is {x} on one and {y} on the other"),
            (Some(x), None) | (None, Some(x)) => return format!("`{name}` is {x} on one and unset on the other"),
            _ => {}
        }
    }
    "their meta params differ".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(params: Vec<(&str, Value)>, metas: Vec<(&str, Value)>) -> ResDecl {
        let span = Span::default();
        ResDecl {
            kind: "file".into(),
            name: "/tmp/x".into(),
            params: params.into_iter().map(|(n, v)| (n.to_string(), v, span)).collect(),
            defaulted: Vec::new(),
            metas: metas.into_iter().map(|(n, v)| (n.to_string(), v, span)).collect(),
            edges: Vec::new(),
            collect: false,
            from: None,
            virtuality: Virtuality::Real,
            classes: vec!["web".into()],
            within: Vec::new(),
            span,
        }
    }

    #[test]
    fn a_record_rebuilds_every_value_with_its_shape() {
        let mut m = BTreeMap::new();
        m.insert(Value::Int(1), Value::Float(2.0));
        let values = vec![
            ("s", Value::str("hello\n")),
            ("i", Value::Int(-3)),
            ("f", Value::Float(2.0)),
            ("b", Value::Bool(true)),
            ("l", Value::list(vec![Value::str("a"), Value::str("b")])),
            ("e", Value::list(vec![])),
            ("m", Value::map(m)),
            ("st", Value::strukt(vec![("z".into(), Value::Int(1)), ("a".into(), Value::str("x"))])),
        ];
        let export = ("export", Value::list(vec![Value::str("*")]));
        let d = decl(values, vec![("hidden", Value::Bool(true)), export]);
        let back = decode("file", "/tmp/x", "h1", &encode(&d).unwrap(), Span::default()).unwrap();
        assert_eq!(back.params, d.params);
        assert_eq!(back.metas, vec![("hidden".to_string(), Value::Bool(true), Span::default())]);
        assert_eq!(back.classes, vec!["web".to_string()]);
        assert_eq!(back.from.as_deref(), Some("h1"));
        assert_eq!(back.virtuality, Virtuality::Exported);
        assert!(same_record(&back, &d));
        assert!(decode("file", "/x", "h1", "{\"params\": [[1, 2]]}", Span::default()).is_err());
        assert!(decode("file", "/x", "h1", "not json", Span::default()).is_err());
    }

    #[test]
    fn exports_lists_each_exported_resource_once_with_its_hosts() {
        let to = |hosts: &[&str]| ("export", Value::list(hosts.iter().map(Value::str).collect()));
        let mut out = Output::default();
        out.resources.push(decl(vec![("content", Value::str("a"))], vec![to(&["h2", "h1"])]));
        out.resources.push(decl(vec![("content", Value::str("a"))], vec![to(&["h3"])]));
        let mut puppet = decl(vec![], vec![]);
        puppet.name = "/tmp/y".into();
        puppet.virtuality = Virtuality::Exported;
        out.resources.push(puppet);
        let mut plain = decl(vec![], vec![]);
        plain.name = "/tmp/z".into();
        out.resources.push(plain);
        let found = exports(&out).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].to, vec!["h1", "h2", "h3"]);
        assert_eq!((found[1].name.as_str(), found[1].to.clone()), ("/tmp/y", vec!["*".to_string()]));
        let a = decl(vec![("content", Value::str("a"))], vec![]);
        let b = decl(vec![("content", Value::str("b"))], vec![]);
        assert!(!same_record(&a, &b));
        assert_eq!(difference(&a, &b), "`content` is \"a\" on one and \"b\" on the other");
    }
}
