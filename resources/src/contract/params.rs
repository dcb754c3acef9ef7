//! Decoding a resource's params from language values: unknown fields are rejected (with a
//! did-you-mean), every typed getter names the field in its error, and integers are
//! range-checked for the Go widths mgmt uses.

use lang::params::ParamMap;
use std::fmt;

use lang::types::Type;
use lang::value::Value;

/// Why a resource could not be built or is invalid; names the field when one is at fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct BuildError {
    pub kind: String,
    pub name: String,
    pub field: Option<String>,
    pub message: String,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]: ", self.kind, self.name)?;
        if let Some(field) = &self.field {
            write!(f, "field `{field}`: ")?;
        }
        f.write_str(&self.message)
    }
}

/// A read-only view of one resource's params with typed getters.
pub struct Params<'a> {
    pub kind: &'a str,
    pub name: &'a str,
    values: Values<'a>,
    /// The [`sketch`] bits of the names present.
    present: u64,
}

/// One bit of 64 for a param name, from its length and its first and last bytes. A view
/// keeps the bits of the names it has, so most lookups of an absent field (a kind declares
/// many, a resource sets a few, and decoding looks up every one) end without comparing a
/// name.
fn sketch(name: &str) -> u64 {
    let bytes = name.as_bytes();
    let first = u32::from(bytes.first().copied().unwrap_or(0));
    let last = u32::from(bytes.last().copied().unwrap_or(0));
    1 << ((bytes.len() as u32).wrapping_mul(7).wrapping_add(first.wrapping_mul(3)).wrapping_add(last) % 64)
}

/// What a view reads: a graph vertex's map, or the slice (sorted by field) a running
/// resource keeps (`common::Raw`).
#[derive(Clone, Copy)]
enum Values<'a> {
    Map(&'a ParamMap),
    Sorted(&'a [(crate::contract::common::Field, Value)]),
}

impl<'a> Values<'a> {
    fn get(self, field: &str) -> Option<&'a Value> {
        match self {
            Values::Map(map) => map.get(field),
            Values::Sorted(pairs) => lang::params::lookup(pairs, field),
        }
    }

    fn pairs(self) -> impl Iterator<Item = (&'a str, &'a Value)> + 'a {
        let (map, sorted) = match self {
            Values::Map(map) => (Some(map), None),
            Values::Sorted(pairs) => (None, Some(pairs)),
        };
        let from_map = map.into_iter().flat_map(|map| map.iter().map(|(k, v)| (k.as_str(), v)));
        from_map.chain(sorted.into_iter().flat_map(|pairs| pairs.iter().map(|(k, v)| (k.as_ref(), v))))
    }

    /// A view of these values (unchecked).
    fn view(self, kind: &'a str, name: &'a str) -> Params<'a> {
        let present = self.pairs().fold(0, |bits, (field, _)| bits | sketch(field));
        Params { kind, name, values: self, present }
    }
}

impl<'a> Params<'a> {
    /// Checks that the kind exists and every param is one it declares.
    pub fn new(kind: &'a str, name: &'a str, values: &'a ParamMap) -> Result<Params<'a>, BuildError> {
        Params::checked(kind, name, Values::Map(values))
    }

    /// [`Params::new`] over pairs sorted by field.
    pub(crate) fn sorted(
        kind: &'a str,
        name: &'a str,
        pairs: &'a [(crate::contract::common::Field, Value)],
    ) -> Result<Params<'a>, BuildError> {
        Params::checked(kind, name, Values::Sorted(pairs))
    }

    fn checked(kind: &'a str, name: &'a str, values: Values<'a>) -> Result<Params<'a>, BuildError> {
        let params = values.view(kind, name);
        let decl = crate::contract::kind::decl(kind)
            .ok_or_else(|| params.error(None, format!("no resource kind `{kind}` available")))?;
        for (field, value) in values.pairs() {
            if let Some(param) = decl.param(field) {
                if !conforms(value, &param.ty) {
                    return Err(
                        params.error(Some(field), format!("expected a value of type {}, found {value}", param.ty))
                    );
                }
            } else {
                let known: Vec<&str> = decl.params.iter().map(|p| p.name.as_str()).collect();
                let hint = lang::suggest::did_you_mean(field, known.iter().copied())
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                return Err(params.error(Some(field), format!("field does not exist in `{kind}` resource{hint}")));
            }
        }
        Ok(params)
    }

    /// A view without the existence and type checks of [`Params::new`] (for tests of decoders).
    #[cfg(test)]
    pub(crate) fn unchecked(kind: &'a str, name: &'a str, values: &'a ParamMap) -> Params<'a> {
        Values::Map(values).view(kind, name)
    }

    pub fn error(&self, field: Option<&str>, message: impl Into<String>) -> BuildError {
        BuildError {
            kind: self.kind.to_string(),
            name: self.name.to_string(),
            field: field.map(str::to_string),
            message: message.into(),
        }
    }

    fn wrong(&self, field: &str, expected: &str, found: &Value) -> BuildError {
        self.error(Some(field), format!("expected {expected}, found {found}"))
    }

    pub fn get(&self, field: &str) -> Option<&'a Value> {
        if self.present & sketch(field) == 0 {
            return None;
        }
        self.values.get(field)
    }

    pub fn opt_str(&self, field: &str) -> Result<Option<String>, BuildError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Str(s)) => Ok(Some(s.to_string())),
            Some(other) => Err(self.wrong(field, "a str", other)),
        }
    }

    pub fn str_or(&self, field: &str, default: &str) -> Result<String, BuildError> {
        Ok(self.opt_str(field)?.unwrap_or_else(|| default.to_string()))
    }

    /// An int that must fit `[min, max]` (the Go field's width), named like Go in errors.
    pub fn opt_int_in(&self, field: &str, min: i64, max: i64, go_type: &str) -> Result<Option<i64>, BuildError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Int(i)) => self.int_in(field, *i, min, max, go_type).map(Some),
            Some(other) => Err(self.wrong(field, "an int", other)),
        }
    }

    /// `i` of `field` when it fits `[min, max]` (the Go field's width, named like Go).
    pub fn int_in(&self, field: &str, i: i64, min: i64, max: i64, go_type: &str) -> Result<i64, BuildError> {
        if i < min && min == 0 {
            Err(self.error(Some(field), format!("can't store negative int `{i}` into unsigned `{go_type}` field")))
        } else if i < min || i > max {
            Err(self.error(Some(field), format!("int `{i}` does not fit into `{go_type}` field")))
        } else {
            Ok(i)
        }
    }

    pub fn opt_float(&self, field: &str) -> Result<Option<f64>, BuildError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Float(f)) => Ok(Some(*f)),
            Some(other) => Err(self.wrong(field, "a float", other)),
        }
    }

    /// A list-of-structs param, each element's fields (empty when unset).
    pub fn list_struct(&self, field: &str) -> Result<Vec<Fields<'a>>, BuildError> {
        match self.get(field) {
            None => Ok(Vec::new()),
            Some(Value::List(items)) => items
                .iter()
                .map(|v| match v {
                    Value::Struct(fields) => Ok(Fields(fields)),
                    other => Err(self.wrong(field, "a list of structs", other)),
                })
                .collect(),
            Some(other) => Err(self.wrong(field, "a list of structs", other)),
        }
    }
}

/// The fields of one struct value (its shape was checked against the declared type);
/// a missing or mistyped field reads as the zero value.
#[derive(Clone, Copy)]
pub struct Fields<'a>(&'a [(String, Value)]);

impl<'a> Fields<'a> {
    pub fn new(fields: &'a [(String, Value)]) -> Fields<'a> {
        Fields(fields)
    }
    fn get(&self, name: &str) -> Option<&Value> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
    pub fn str(&self, name: &str) -> String {
        self.get(name).and_then(Value::as_str).unwrap_or_default().to_string()
    }
    pub fn bool(&self, name: &str) -> bool {
        self.get(name).and_then(Value::as_bool).unwrap_or(false)
    }
}

/// Whether `value` has type `ty` (`variant` accepts anything).
pub fn conforms(value: &Value, ty: &Type) -> bool {
    match (ty, value) {
        (Type::Variant | Type::Var(_), _) => true,
        (Type::Bool, Value::Bool(_)) | (Type::Str, Value::Str(_)) | (Type::Int, Value::Int(_)) => true,
        (Type::Float, Value::Float(_)) | (Type::Func(..), Value::Func(_)) => true,
        (Type::List(t), Value::List(items)) => items.iter().all(|v| conforms(v, t)),
        (Type::Map(k, v), Value::Map(m)) => m.iter().all(|(mk, mv)| conforms(mk, k) && conforms(mv, v)),
        (Type::Struct(fields), Value::Struct(values)) => {
            fields.len() == values.len()
                && fields.iter().zip(values.iter()).all(|((fname, fty), (vname, v))| fname == vname && conforms(v, fty))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_declared_field_reads_what_is_set_and_nothing_else() {
        let declared: Vec<&str> = crate::files::file::FileParams::FIELDS.iter().map(|f| f.0).collect();
        // Each field set alone, then every other one: the sketch of the names present never
        // hides one of them, and an absent one reads nothing whichever bits it shares.
        let subsets: Vec<Vec<&str>> =
            declared.iter().map(|f| vec![*f]).chain([declared.iter().step_by(2).copied().collect()]).collect();
        for set in subsets {
            let map = values(&set.iter().map(|f| (*f, Value::str(f))).collect::<Vec<_>>());
            let p = Params::unchecked("file", "/x", &map);
            for field in &declared {
                let expected = set.contains(field).then(|| Value::str(field));
                assert_eq!(p.get(field), expected.as_ref(), "{field} of {set:?}");
            }
        }
    }

    fn values(pairs: &[(&str, Value)]) -> ParamMap {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    #[test]
    fn unknown_fields_are_rejected_with_a_hint() {
        let v = values(&[("contnet", Value::str("x"))]);
        let err = Params::new("file", "/tmp/x", &v).err().expect("rejected");
        assert_eq!(
            err.to_string(),
            "file[/tmp/x]: field `contnet`: field does not exist in `file` resource (did you mean `content`?)"
        );
        let err = Params::new("nosuch", "x", &v).err().expect("rejected");
        assert!(err.to_string().contains("no resource kind `nosuch` available"));
    }

    #[test]
    fn getters_name_the_field_and_check_widths() {
        let v = values(&[("uint8", Value::Int(-1)), ("int8", Value::Int(300))]);
        let p = Params::new("test", "t", &v).expect("known fields");
        let err = p.opt_int_in("uint8", 0, 255, "uint8").unwrap_err();
        assert_eq!(err.message, "can't store negative int `-1` into unsigned `uint8` field");
        assert!(p.opt_int_in("int8", -128, 127, "int8").is_err());
        assert_eq!(p.opt_str("anotherstr").unwrap(), None);
        let wrong = values(&[("str", Value::Int(1))]);
        let err = Params::new("test", "t", &wrong).err().expect("type mismatch");
        assert_eq!(err.field.as_deref(), Some("str"));
        assert_eq!(err.message, "expected a value of type str, found 1");
    }
}
