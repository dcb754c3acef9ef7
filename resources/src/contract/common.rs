//! Plumbing every kind shares: keeping the raw param values so send/recv can replace one
//! and re-decode, converting between engine payloads and language values, and error
//! conversion.

use lang::params::ParamMap;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use engine::{Payload, ResError};
use lang::value::Value;

use crate::contract::params::{BuildError, Params};

/// A kind's raw params, kept so a received value can be decoded like a declared one.
/// Every resource holds one for as long as it runs, so the values are a slice sorted by
/// field of exactly their size (a map's node would hold room for eleven), and a field the
/// kind declares is named by the declaration's own string, not a copy.
#[derive(Clone, Debug)]
pub(crate) struct Raw {
    pub(crate) kind: &'static str,
    pub(crate) name: String,
    values: Box<[(Field, Value)]>,
}

/// A field's name: the kind's declared one, or (for a field the kind lacks, which decoding
/// then reports) a copy.
pub(crate) type Field = Cow<'static, str>;

impl Raw {
    pub(crate) fn new(kind: &'static str, name: &str, values: &ParamMap) -> Raw {
        Raw { kind, name: name.to_string(), values: sorted(kind, values.iter()) }
    }

    /// The raw params of resource `kind[name]` and their typed decoding by `decode`: what
    /// every kind's `build` starts with.
    pub(crate) fn decoded<T>(
        kind: &'static str,
        name: &str,
        values: &ParamMap,
        decode: impl Fn(&Params<'_>) -> Result<T, BuildError>,
    ) -> Result<(Raw, T), BuildError> {
        let raw = Raw::new(kind, name, values);
        let params = raw.decode(decode)?;
        Ok((raw, params))
    }

    /// A validation error of this resource, naming the field at fault when there is one.
    pub(crate) fn invalid(&self, field: Option<&str>, message: impl Into<String>) -> ResError {
        res_error(BuildError {
            kind: self.kind.to_string(),
            name: self.name.clone(),
            field: field.map(str::to_string),
            message: message.into(),
        })
    }

    /// Decodes `values` with `decode` after checking every field exists.
    pub(crate) fn decode<T>(&self, decode: impl Fn(&Params<'_>) -> Result<T, BuildError>) -> Result<T, BuildError> {
        decode(&Params::sorted(self.kind, &self.name, &self.values)?)
    }

    /// Stores a received value into `key` and re-decodes; returns whether the typed params
    /// changed. A value of the wrong type is an error and leaves everything as it was.
    pub(crate) fn recv<T: PartialEq>(
        &mut self,
        key: &str,
        payload: &Payload,
        current: &mut T,
        decode: impl Fn(&Params<'_>) -> Result<T, BuildError>,
    ) -> Result<bool, ResError> {
        let value = value_of(payload)?.clone();
        let mut values: ParamMap = self.values.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        values.insert(key.to_string(), value);
        let params = Params::new(self.kind, &self.name, &values).map_err(res_error)?;
        let new = decode(&params).map_err(res_error)?;
        self.values = sorted(self.kind, values.iter());
        let changed = new != *current;
        *current = new;
        Ok(changed)
    }
}

/// `values` (in field order, as a map iterates) as a slice, each field named by `kind`'s
/// declaration where it has the field.
fn sorted<'a>(kind: &str, values: impl Iterator<Item = (&'a String, &'a Value)>) -> Box<[(Field, Value)]> {
    let decl = crate::contract::kind::decl(kind);
    values
        .map(|(k, v)| {
            let field = match decl.and_then(|d| d.param(k)) {
                Some(param) => Cow::Borrowed(param.name.as_str()),
                None => Cow::Owned(k.clone()),
            };
            (field, v.clone())
        })
        .collect()
}

/// Wraps a language value for a send/recv edge.
pub fn payload(value: Value) -> Payload {
    Arc::new(value)
}

/// The language value inside a payload.
pub fn value_of(payload: &Payload) -> Result<&Value, ResError> {
    payload.downcast_ref::<Value>().ok_or_else(|| ResError::new("received a value that is not an mcl value"))
}

pub(crate) fn res_error(e: BuildError) -> ResError {
    ResError::new(e.to_string())
}

/// A send map from `(field, value)` pairs.
pub(crate) fn sends(fields: Vec<(&str, Value)>) -> BTreeMap<String, Payload> {
    fields.into_iter().map(|(k, v)| (k.to_string(), payload(v))).collect()
}
