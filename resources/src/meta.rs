//! Decoding `Meta:x` entries (mcl.md 3.5.4) into the engine's [`Meta`], with mgmt's
//! ranges (`retry` fits int16, `poll` int32, `delay`/`timeout`/`burst` non-negative).

use engine::Meta;
use lang::value::Value;

use crate::params::BuildError;

/// Builds the metaparams of `kind[name]` from its expanded `Meta:` entries.
pub fn meta_from(kind: &str, name: &str, entries: &[(String, Value)]) -> Result<Meta, BuildError> {
    let mut meta = Meta::default();
    for (field, value) in entries {
        let err = |message: String| BuildError {
            kind: kind.to_string(),
            name: name.to_string(),
            field: Some(format!("Meta:{field}")),
            message,
        };
        let int = |min: i64, max: i64| match value {
            Value::Int(i) if (min..=max).contains(i) => Ok(*i),
            Value::Int(i) => Err(err(format!("{i} is out of range {min}..={max}"))),
            other => Err(err(format!("expected an int, found {other}"))),
        };
        let boolean = || value.as_bool().ok_or_else(|| err(format!("expected a bool, found {value}")));
        let strs = || -> Result<Vec<String>, BuildError> {
            value
                .as_list()
                .and_then(|l| l.iter().map(|v| v.as_str().map(str::to_string)).collect::<Option<Vec<_>>>())
                .ok_or_else(|| err(format!("expected a []str, found {value}")))
        };
        match field.as_str() {
            "noop" => meta.noop = boolean()?,
            "retry" => meta.retry = int(i64::from(i16::MIN), i64::from(i16::MAX))? as i16,
            "retryreset" => meta.retryreset = boolean()?,
            "delay" => meta.delay = int(0, i64::MAX)? as u64,
            "timeout" => meta.timeout = int(0, i64::MAX)? as u64,
            "poll" => meta.poll = int(i64::from(i32::MIN), i64::from(i32::MAX))? as i32,
            "limit" => {
                meta.limit = value.as_float().ok_or_else(|| err(format!("expected a float, found {value}")))?;
            }
            "burst" => meta.burst = int(0, i64::from(u32::MAX))? as u32,
            "reset" => meta.reset = boolean()?,
            "sema" => meta.sema = strs()?,
            "rewatch" => meta.rewatch = boolean()?,
            "realize" => meta.realize = boolean()?,
            "dollar" => meta.dollar = boolean()?,
            "hidden" => meta.hidden = boolean()?,
            "export" => meta.export = strs()?,
            "reverse" => meta.reverse = boolean()?,
            "autoedge" => meta.autoedge = boolean()?,
            "autogroup" => meta.autogroup = boolean()?,
            other => return Err(err(format!("invalid property: `{other}`"))),
        }
    }
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_and_range_checks() {
        let entries = vec![
            ("retry".to_string(), Value::Int(-1)),
            ("sema".to_string(), Value::list(vec![Value::str("a:2")])),
            ("noop".to_string(), Value::Bool(true)),
        ];
        let meta = meta_from("test", "t", &entries).unwrap();
        assert_eq!((meta.retry, meta.noop, meta.sema.clone()), (-1, true, vec!["a:2".to_string()]));
        let err = meta_from("test", "t", &[("retry".into(), Value::Int(40000))]).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("Meta:retry"));
        assert!(meta_from("test", "t", &[("bogus".into(), Value::Bool(true))]).is_err());
    }
}
