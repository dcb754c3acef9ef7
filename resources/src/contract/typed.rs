//! Params typed once: a kind writes its params as one Rust struct inside [`params!`], and
//! that struct yields both the catalog's declarations (`FIELDS`: each param's mcl type
//! text, which the type checker reads) and the decoder (`decode`), from the Rust type of
//! each field through [`Param`]. Closed sets of strings (`state`, modes, strategies) are
//! enums made by [`choice!`]; a value outside the set is an error naming the allowed ones.
//!
//! Go widths collapse the mgmt way in the declared type (every integer width is `int`) and
//! are range-checked on decode, named like Go in the error (`u8` is `uint8`).

use std::collections::BTreeMap;

use lang::value::Value;

use crate::contract::params::{BuildError, Fields, Params};
use crate::contract::text::Text;

/// One param as a kind declares it: `(name, mcl type text, allowed values, whether leaving
/// it out means the zero value of its type)`, where no allowed values means any value of
/// the type.
pub type Field = (&'static str, &'static str, &'static [&'static str], bool);

/// A Rust type a present param value converts to.
pub trait ParamType: Sized {
    /// The mcl type text the catalog declares.
    const TYPE: &'static str;
    /// Converts `value` (already checked against [`Self::TYPE`]) of `field`.
    fn from_value(p: &Params<'_>, field: &str, value: &Value) -> Result<Self, BuildError>;
    /// The only values allowed, as written in mcl (empty: any value of the type), which
    /// `tend check` checks constants against.
    const CHOICES: &'static [&'static str] = &[];
    /// What a value must be, for errors.
    fn expected() -> String {
        format!("a {}", Self::TYPE)
    }
}

/// How a param field reads, present or absent.
pub trait Param: Sized {
    /// The mcl type text the catalog declares.
    const TYPE: &'static str;
    /// As [`ParamType::CHOICES`].
    const CHOICES: &'static [&'static str] = &[];
    /// Whether an absent param reads as the zero value of its type (`""`, `false`, `0`,
    /// `[]`, `{}`), so that writing that value changes nothing.
    const ZERO_WHEN_ABSENT: bool = false;
    fn read(p: &Params<'_>, field: &str) -> Result<Self, BuildError>;
}

/// An optional param: absent is `None`.
impl<T: ParamType> Param for Option<T> {
    const TYPE: &'static str = T::TYPE;
    const CHOICES: &'static [&'static str] = T::CHOICES;
    fn read(p: &Params<'_>, field: &str) -> Result<Self, BuildError> {
        p.get(field).map(|v| T::from_value(p, field, v)).transpose()
    }
}

/// Reads a param that must be given.
pub fn required<T: ParamType>(p: &Params<'_>, field: &str) -> Result<T, BuildError> {
    match p.get(field) {
        Some(v) => T::from_value(p, field, v),
        None => Err(p.error(Some(field), format!("must be set: expected {}", T::expected()))),
    }
}

fn wrong(p: &Params<'_>, field: &str, expected: &str, found: &Value) -> BuildError {
    p.error(Some(field), format!("expected {expected}, found {found}"))
}

/// Types whose absent value is their `Default` (the Go zero value).
macro_rules! zero_when_absent {
    ($($t:ty),* $(,)?) => {$(
        impl Param for $t {
            const TYPE: &'static str = <$t as ParamType>::TYPE;
            const ZERO_WHEN_ABSENT: bool = true;
            fn read(p: &Params<'_>, field: &str) -> Result<Self, BuildError> {
                Ok(<Option<$t> as Param>::read(p, field)?.unwrap_or_default())
            }
        }
    )*};
}

zero_when_absent!(String, Text, bool, i64, u64, u32, u16, u8, i32, i16, i8, f64, Vec<String>, Box<[String]>, BTreeMap<String, String>);

impl ParamType for String {
    const TYPE: &'static str = "str";
    fn from_value(p: &Params<'_>, field: &str, value: &Value) -> Result<Self, BuildError> {
        value.as_str().map(str::to_string).ok_or_else(|| wrong(p, field, "a str", value))
    }
}

impl ParamType for Text {
    const TYPE: &'static str = "str";
    fn from_value(p: &Params<'_>, field: &str, value: &Value) -> Result<Self, BuildError> {
        std::sync::Arc::<str>::from_value(p, field, value).map(Text::from)
    }
}

impl ParamType for std::sync::Arc<str> {
    const TYPE: &'static str = "str";
    fn from_value(p: &Params<'_>, field: &str, value: &Value) -> Result<Self, BuildError> {
        match value {
            Value::Str(text) => Ok(text.clone()),
            other => Err(wrong(p, field, "a str", other)),
        }
    }
}

impl ParamType for bool {
    const TYPE: &'static str = "bool";
    fn from_value(p: &Params<'_>, field: &str, value: &Value) -> Result<Self, BuildError> {
        value.as_bool().ok_or_else(|| wrong(p, field, "a bool", value))
    }
}

impl ParamType for f64 {
    const TYPE: &'static str = "float";
    fn from_value(p: &Params<'_>, field: &str, value: &Value) -> Result<Self, BuildError> {
        match value {
            Value::Float(f) => Ok(*f),
            other => Err(wrong(p, field, "a float", other)),
        }
    }
}

/// Integers: declared `int`, range-checked for their width with Go's name in the error.
macro_rules! go_int {
    ($($t:ty => $go:literal),* $(,)?) => {$(
        impl ParamType for $t {
            const TYPE: &'static str = "int";
            fn from_value(p: &Params<'_>, field: &str, value: &Value) -> Result<Self, BuildError> {
                let Value::Int(i) = value else { return Err(wrong(p, field, "an int", value)) };
                let max = i64::try_from(<$t>::MAX).unwrap_or(i64::MAX);
                let i = p.int_in(field, *i, <$t>::MIN as i64, max, $go)?;
                <$t>::try_from(i).map_err(|_| p.error(Some(field), format!("int `{i}` does not fit into `{}` field", $go)))
            }
        }
    )*};
}

go_int!(i64 => "int64", u64 => "uint64", u32 => "uint32", u16 => "uint16", u8 => "uint8", i32 => "int32", i16 => "int16", i8 => "int8");

impl ParamType for Vec<String> {
    const TYPE: &'static str = "[]str";
    fn from_value(p: &Params<'_>, field: &str, value: &Value) -> Result<Self, BuildError> {
        match value {
            Value::List(items) => items
                .iter()
                .map(|v| v.as_str().map(str::to_string).ok_or_else(|| wrong(p, field, "a []str", v)))
                .collect(),
            other => Err(wrong(p, field, "a []str", other)),
        }
    }
}

/// A `[]str` kept as it will stay: 8 bytes smaller in a params struct than a `Vec`.
impl ParamType for Box<[String]> {
    const TYPE: &'static str = "[]str";
    fn from_value(p: &Params<'_>, field: &str, value: &Value) -> Result<Self, BuildError> {
        Vec::<String>::from_value(p, field, value).map(Vec::into_boxed_slice)
    }
}

impl ParamType for BTreeMap<String, String> {
    const TYPE: &'static str = "map{str: str}";
    fn from_value(p: &Params<'_>, field: &str, value: &Value) -> Result<Self, BuildError> {
        match value {
            Value::Map(m) => m
                .iter()
                .map(|(k, v)| match (k.as_str(), v.as_str()) {
                    (Some(k), Some(v)) => Ok((k.to_string(), v.to_string())),
                    _ => Err(p.error(Some(field), format!("expected a map{{str: str}}, found entry {k}: {v}"))),
                })
                .collect(),
            other => Err(wrong(p, field, "a map{str: str}", other)),
        }
    }
}

/// A Rust struct a struct-valued param decodes into (`virt`'s disks, `auth`): its mcl
/// struct type, the list type of it, and how its fields read (a missing one is the zero
/// value; the shape was checked against [`Self::TYPE`]).
pub trait StructParam: Sized {
    /// The mcl struct type text: `struct{source str; type str}`.
    const TYPE: &'static str;
    /// `[]` and [`Self::TYPE`] (written out: constants cannot be joined).
    const LIST_TYPE: &'static str;
    fn from_fields(fields: Fields<'_>) -> Self;
}

/// Reads the struct (a value that is not one reads as all zero values).
pub fn struct_of<T: StructParam>(value: &Value) -> T {
    match value {
        Value::Struct(fields) => T::from_fields(Fields::new(fields)),
        _ => T::from_fields(Fields::new(&[])),
    }
}

impl<T: StructParam> ParamType for Vec<T> {
    const TYPE: &'static str = T::LIST_TYPE;
    fn from_value(p: &Params<'_>, field: &str, value: &Value) -> Result<Self, BuildError> {
        match value {
            Value::List(items) => Ok(items.iter().map(struct_of).collect()),
            other => Err(wrong(p, field, "a list of structs", other)),
        }
    }
}

impl<T: StructParam> Param for Vec<T> {
    const TYPE: &'static str = T::LIST_TYPE;
    fn read(p: &Params<'_>, field: &str) -> Result<Self, BuildError> {
        Ok(<Option<Vec<T>> as Param>::read(p, field)?.unwrap_or_default())
    }
}

/// Any value, kept as it is: the field's declared type (`as "…"` in [`params!`]) was
/// checked when the params were read.
impl ParamType for Value {
    const TYPE: &'static str = "variant";
    fn from_value(_: &Params<'_>, _: &str, value: &Value) -> Result<Self, BuildError> {
        Ok(value.clone())
    }
}

/// An unambiguous text of a param value, for `Resource::fingerprint` (two resources with
/// equal fingerprints are interchangeable in a graph swap): strings are length-prefixed,
/// numbers exact, an absent value differs from an empty one. Cheaper and more exact than a
/// `Debug` dump, which escapes every character and promises no stable form.
pub trait Fingerprint {
    fn fingerprint_into(&self, out: &mut String);

    /// The whole text.
    fn fingerprint(&self) -> String {
        let mut out = String::new();
        self.fingerprint_into(&mut out);
        out
    }
}

/// Writes `text` length-prefixed: `3:abc`.
pub fn fingerprint_str(text: &str, out: &mut String) {
    push_decimal(out, text.len() as u64);
    out.push(':');
    out.push_str(text);
}

/// Appends `n` in decimal, as `write!(out, "{n}")` does, without the formatting machinery
/// (a fingerprint is made for every resource of every swap).
pub fn push_decimal(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
}

impl Fingerprint for String {
    fn fingerprint_into(&self, out: &mut String) {
        fingerprint_str(self, out);
    }
}

impl Fingerprint for Text {
    fn fingerprint_into(&self, out: &mut String) {
        fingerprint_str(self, out);
    }
}

impl Fingerprint for std::sync::Arc<str> {
    fn fingerprint_into(&self, out: &mut String) {
        fingerprint_str(self, out);
    }
}

impl Fingerprint for str {
    fn fingerprint_into(&self, out: &mut String) {
        fingerprint_str(self, out);
    }
}

impl Fingerprint for bool {
    fn fingerprint_into(&self, out: &mut String) {
        out.push(if *self { 'y' } else { 'n' });
    }
}

macro_rules! fingerprint_number {
    ($($t:ty),*) => {$(
        impl Fingerprint for $t {
            fn fingerprint_into(&self, out: &mut String) {
                use std::fmt::Write as _;
                let _infallible = write!(out, "{};", self);
            }
        }
    )*};
}

fingerprint_number!(i64, u64, u32, u16, u8, i32, i16, i8);

impl Fingerprint for f64 {
    fn fingerprint_into(&self, out: &mut String) {
        use std::fmt::Write as _;
        let _infallible = write!(out, "{:x};", self.to_bits());
    }
}

impl<T: Fingerprint> Fingerprint for Option<T> {
    fn fingerprint_into(&self, out: &mut String) {
        match self {
            None => out.push('-'),
            Some(v) => {
                out.push('+');
                v.fingerprint_into(out);
            }
        }
    }
}

impl<T: Fingerprint> Fingerprint for Vec<T> {
    fn fingerprint_into(&self, out: &mut String) {
        self.as_slice().fingerprint_into(out);
    }
}

impl<T: Fingerprint> Fingerprint for Box<[T]> {
    fn fingerprint_into(&self, out: &mut String) {
        (**self).fingerprint_into(out);
    }
}

impl<T: Fingerprint> Fingerprint for [T] {
    fn fingerprint_into(&self, out: &mut String) {
        (self.len() as u64).fingerprint_into(out);
        for item in self {
            item.fingerprint_into(out);
        }
    }
}

impl<K: Fingerprint, V: Fingerprint> Fingerprint for BTreeMap<K, V> {
    fn fingerprint_into(&self, out: &mut String) {
        (self.len() as u64).fingerprint_into(out);
        for (k, v) in self {
            k.fingerprint_into(out);
            v.fingerprint_into(out);
        }
    }
}

/// A language value by its printed form (mcl's, exact for every kind of value).
impl Fingerprint for Value {
    fn fingerprint_into(&self, out: &mut String) {
        fingerprint_str(&self.to_string(), out);
    }
}

/// `Resource::fingerprint` for a kind whose fingerprint is its typed params' (its
/// `self.params`, a [`params!`] struct): `crate::fingerprint_by_params!();` in its
/// `impl Resource`.
#[macro_export]
macro_rules! fingerprint_by_params {
    () => {
        fn fingerprint(&self) -> String {
            self.params.fingerprint()
        }
    };
}

/// [`Fingerprint`] for a plain struct, field by field: `fingerprint_fields!(Disk { source, kind });`.
#[macro_export]
macro_rules! fingerprint_fields {
    ($name:ty { $($field:ident),+ $(,)? }) => {
        impl $crate::contract::typed::Fingerprint for $name {
            fn fingerprint_into(&self, out: &mut String) {
                $( $crate::contract::typed::Fingerprint::fingerprint_into(&self.$field, out); )+
            }
        }
    };
}

/// Declares a kind's params struct once. Each field is a param named like the field (or
/// `field("mcl-name")`), declared with its Rust type's mcl type (or `as "type text"`), read
/// through [`Param`] (or `= default` when absent, or `=> reader` for anything else, a
/// `fn(&Params, &str) -> Result<T, BuildError>`, such as [`required`] for a param that must
/// be given). Generates the struct, `FIELDS` (for the
/// kind's [`crate::contract::kind::Kind::params`]), `decode`, and its [`Fingerprint`] (every field).
#[macro_export]
macro_rules! params {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $fvis:vis $field:ident $(($pname:literal))? : $ty:ty
                    $(as $text:literal)? $(= $default:expr)? $(=> $reader:expr)?
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $( $(#[$fmeta])* $fvis $field: $ty, )*
        }

        impl $name {
            /// Every param as `(name, mcl type text, allowed values, zero when absent)`, in
            /// declaration order.
            pub const FIELDS: &'static [$crate::contract::typed::Field] = &[
                $( (
                    $crate::params!(@name $field $($pname)?),
                    $crate::params!(@text $ty, [$($text)?], [$($default)?]),
                    $crate::params!(@choices $ty, [$($text)?], [$($default)?]),
                    $crate::params!(@zero $ty, [$($text)?], [$($default)?], [$($reader)?]),
                ) ),*
            ];

            /// Reads every param (their existence and declared types were checked by
            /// [`$crate::contract::params::Params::new`]).
            pub fn decode(p: &$crate::contract::params::Params<'_>) -> Result<$name, $crate::contract::params::BuildError> {
                Ok($name {
                    $( $field: $crate::params!(@read p, $crate::params!(@name $field $($pname)?), $ty
                        $(, default $default)? $(, reader $reader)?), )*
                })
            }
        }

        impl $crate::contract::typed::Fingerprint for $name {
            fn fingerprint_into(&self, out: &mut String) {
                $( $crate::contract::typed::Fingerprint::fingerprint_into(&self.$field, out); )*
            }
        }
    };
    (@name $field:ident) => { stringify!($field) };
    (@name $field:ident $pname:literal) => { $pname };
    (@text $ty:ty, [$text:literal], [$($default:tt)*]) => { $text };
    (@text $ty:ty, [], []) => { <$ty as $crate::contract::typed::Param>::TYPE };
    (@text $ty:ty, [], [$($default:tt)+]) => { <Option<$ty> as $crate::contract::typed::Param>::TYPE };
    (@choices $ty:ty, [$text:literal], [$($default:tt)*]) => { &[] };
    (@choices $ty:ty, [], []) => { <$ty as $crate::contract::typed::Param>::CHOICES };
    (@choices $ty:ty, [], [$($default:tt)+]) => { <Option<$ty> as $crate::contract::typed::Param>::CHOICES };
    // Only a plain field reads its type's zero value when absent; a default or a reader
    // decides otherwise.
    (@zero $ty:ty, [], [], []) => { <$ty as $crate::contract::typed::Param>::ZERO_WHEN_ABSENT };
    (@zero $ty:ty, [$($text:tt)*], [$($default:tt)*], [$($reader:tt)*]) => { false };
    (@read $p:ident, $pname:expr, $ty:ty) => { <$ty as $crate::contract::typed::Param>::read($p, $pname)? };
    (@read $p:ident, $pname:expr, $ty:ty, default $default:expr) => {
        <Option<$ty> as $crate::contract::typed::Param>::read($p, $pname)?.unwrap_or_else(|| $default)
    };
    (@read $p:ident, $pname:expr, $ty:ty, reader $reader:expr) => {{
        let reader: fn(&$crate::contract::params::Params<'_>, &str) -> Result<$ty, $crate::contract::params::BuildError> = $reader;
        reader($p, $pname)?
    }};
}

/// A closed set of string values as an enum: `choice! { pub enum State { Exists = "exists",
/// Absent = "absent" } }`. It is a [`ParamType`] declared `str`; any other string is an
/// error listing the allowed ones. Give the variant that an absent param means with
/// `#[default]` to make it readable as a plain field.
#[macro_export]
macro_rules! choice {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every allowed value, as written in mcl.
            pub const ALL: &'static [&'static str] = &[$($text),+];

            /// The value as written in mcl.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }

            /// The variant written `text`, if any.
            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $( $text => Some($name::$variant), )+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl $crate::contract::typed::Fingerprint for $name {
            fn fingerprint_into(&self, out: &mut String) {
                $crate::contract::typed::fingerprint_str(self.as_str(), out);
            }
        }

        impl $crate::contract::typed::ParamType for $name {
            const TYPE: &'static str = "str";
            const CHOICES: &'static [&'static str] = $name::ALL;
            fn from_value(
                p: &$crate::contract::params::Params<'_>,
                field: &str,
                value: &lang::value::Value,
            ) -> Result<Self, $crate::contract::params::BuildError> {
                let text = value.as_str().unwrap_or_default();
                $name::parse(text).ok_or_else(|| {
                    let expected = <$name as $crate::contract::typed::ParamType>::expected();
                    let hint = lang::suggest::allowed_value(text, $name::ALL)
                        .map(|close| format!(" (did you mean `{close}`?)"))
                        .unwrap_or_default();
                    p.error(Some(field), format!("`{text}` is not {expected}{hint}"))
                })
            }
            fn expected() -> String {
                $crate::contract::typed::one_of($name::ALL)
            }
        }
    };
}

crate::choice! {
    /// Whether a thing should exist: the `state` of most kinds. Unset is left to each
    /// kind (some leave the thing alone, most reject it in validation).
    #[derive(Default)]
    pub enum Presence {
        #[default]
        Unset = "",
        Exists = "exists",
        Absent = "absent",
    }
}
crate::choice_default_when_absent!(Presence);

crate::choice! {
    /// Whether a unit starts at boot (`svc`, `cron`); unset leaves it alone.
    #[derive(Default)]
    pub enum Startup {
        #[default]
        Unset = "",
        Enabled = "enabled",
        Disabled = "disabled",
    }
}
crate::choice_default_when_absent!(Startup);

impl Startup {
    /// Whether the unit should be enabled (`None`: leave it alone).
    pub fn wanted(self) -> Option<bool> {
        match self {
            Startup::Unset => None,
            Startup::Enabled => Some(true),
            Startup::Disabled => Some(false),
        }
    }
}

/// "one of `a`, `b` or `c`", ending "or unset" when the empty string (an unset param) is
/// among them.
pub fn one_of(all: &[&str]) -> String {
    let quoted: Vec<String> = all.iter().filter(|s| !s.is_empty()).map(|s| format!("`{s}`")).collect();
    let unset = if all.contains(&"") { ", or unset" } else { "" };
    let list = match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("one of {} or {last}", rest.join(", ")),
        None => String::new(),
    };
    format!("{list}{unset}")
}

/// A choice whose absent value is its `#[default]` variant.
#[macro_export]
macro_rules! choice_default_when_absent {
    ($($t:ty),* $(,)?) => {$(
        impl $crate::contract::typed::Param for $t {
            const TYPE: &'static str = "str";
            const CHOICES: &'static [&'static str] = <$t>::ALL;
            fn read(p: &$crate::contract::params::Params<'_>, field: &str) -> Result<Self, $crate::contract::params::BuildError> {
                Ok(<Option<$t> as $crate::contract::typed::Param>::read(p, field)?.unwrap_or_default())
            }
        }
    )*};
}

#[cfg(test)]
mod tests {
    use super::*;
    use lang::params::ParamMap;

    crate::choice! {
        /// A test set.
        #[derive(Default)]
        enum Mood {
            #[default]
            Calm = "",
            Happy = "happy",
            Sad = "sad",
        }
    }
    crate::choice_default_when_absent!(Mood);

    crate::params! {
        #[derive(Debug, PartialEq)]
        struct Sample {
            text: String,
            maybe: Option<String>,
            flag: bool = true,
            small: u8,
            mood: Mood,
            kind_("kind"): String,
            any: Option<Value> as "[]int",
            named: String => |p, f| Ok(p.opt_str(f)?.unwrap_or_else(|| p.name.to_string())),
        }
    }

    fn values(pairs: &[(&str, Value)]) -> ParamMap {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    fn decode(pairs: &[(&str, Value)]) -> Result<Sample, BuildError> {
        let v = values(pairs);
        let p = Params::unchecked("sample", "s1", &v);
        Sample::decode(&p)
    }

    #[test]
    fn decimals_are_written_as_format_writes_them() {
        for n in [0, 7, 10, 99, 100, 12_345, u64::from(u32::MAX), u64::MAX] {
            let mut out = String::from("x");
            push_decimal(&mut out, n);
            assert_eq!(out, format!("x{n}"));
        }
    }

    #[test]
    fn fields_declare_each_param_once_with_its_mcl_type() {
        assert_eq!(
            Sample::FIELDS,
            &[
                // Only plain fields of zero-when-absent types read their zero when left
                // out: not an option, a field with a default or a reader, or a choice.
                ("text", "str", &[][..], true),
                ("maybe", "str", &[], false),
                ("flag", "bool", &[], false),
                ("small", "int", &[], true),
                ("mood", "str", &["", "happy", "sad"], false),
                ("kind", "str", &[], true),
                ("any", "[]int", &[], false),
                ("named", "str", &[], false),
            ]
        );
    }

    #[test]
    fn absent_params_read_as_their_defaults() {
        let s = decode(&[]).unwrap();
        assert_eq!(
            s,
            Sample {
                text: String::new(),
                maybe: None,
                flag: true,
                small: 0,
                mood: Mood::Calm,
                kind_: String::new(),
                any: None,
                named: "s1".into(),
            }
        );
    }

    #[test]
    fn present_params_are_converted() {
        let s = decode(&[
            ("text", Value::str("t")),
            ("flag", Value::Bool(false)),
            ("small", Value::Int(255)),
            ("mood", Value::str("sad")),
            ("kind", Value::str("k")),
            ("named", Value::str("n")),
        ])
        .unwrap();
        assert_eq!((s.text.as_str(), s.flag, s.small, s.mood, s.kind_.as_str()), ("t", false, 255, Mood::Sad, "k"));
        assert_eq!(s.named, "n");
    }

    #[test]
    fn a_value_outside_a_choice_names_the_allowed_ones() {
        let err = decode(&[("mood", Value::str("grumpy"))]).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("mood"));
        assert_eq!(err.message, "`grumpy` is not one of `happy` or `sad`, or unset");
    }

    #[test]
    fn widths_are_checked_with_go_names() {
        let err = decode(&[("small", Value::Int(256))]).unwrap_err();
        assert_eq!(err.message, "int `256` does not fit into `uint8` field");
        let err = decode(&[("small", Value::Int(-1))]).unwrap_err();
        assert_eq!(err.message, "can't store negative int `-1` into unsigned `uint8` field");
    }

    #[test]
    fn fingerprints_tell_apart_what_debug_would_blur() {
        let base = decode(&[("text", Value::str("ab"))]).unwrap();
        let shifted = decode(&[("text", Value::str("a")), ("maybe", Value::str("b"))]).unwrap();
        assert_ne!(base.fingerprint(), shifted.fingerprint());
        let empty = decode(&[("maybe", Value::str(""))]).unwrap();
        let absent = decode(&[]).unwrap();
        assert_ne!(empty.fingerprint(), absent.fingerprint(), "an empty value is not an absent one");
        assert_eq!(absent.fingerprint(), decode(&[]).unwrap().fingerprint(), "stable");
        let sad = decode(&[("mood", Value::str("sad"))]).unwrap();
        assert_ne!(sad.fingerprint(), absent.fingerprint());
    }

    #[test]
    fn a_required_param_says_what_it_expects() {
        let v = values(&[]);
        let p = Params::unchecked("sample", "s1", &v);
        let err = required::<Mood>(&p, "mood").unwrap_err();
        assert_eq!(err.message, "must be set: expected one of `happy` or `sad`, or unset");
    }
}
