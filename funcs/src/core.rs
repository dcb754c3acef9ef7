//! The core library, one module per mcl package, plus the registration and argument
//! helpers they share.

pub mod constants;
pub mod convert;
pub mod datetime;
pub mod deploy;
pub mod encoding;
pub mod example;
pub mod fmt;
pub mod follow;
pub mod golang;
pub mod golang_math;
pub mod golang_path;
pub mod golang_std;
pub mod golang_strings;
pub mod iter;
pub mod list;
pub mod local;
pub mod map;
pub mod math;
pub mod net;
pub mod net_http;
pub mod os;
pub mod provisioner;
pub mod regexp;
pub mod streams;
pub mod strings;
pub mod sys;
pub mod sys_fwupd;
pub mod test;
pub mod top;
pub mod util;
pub mod value;
pub mod world;

use crate::api::{Builtin, FuncError, FuncImpl, PureFn, StreamFn};
use crate::registry::Registry;
use lang::catalog::{CheckFn, FuncDecl, InferFn};
use lang::types::{Type, parse_type};
use lang::value::Value;
use std::collections::BTreeMap;

/// Registers every core built-in and constant.
pub fn register_all(r: &mut Registry) {
    top::register(r);
    fmt::register(r);
    strings::register(r);
    math::register(r);
    convert::register(r);
    datetime::register(r);
    deploy::register(r);
    encoding::register(r);
    iter::register(r);
    list::register(r);
    map::register(r);
    os::register(r);
    sys::register(r);
    sys_fwupd::register(r);
    provisioner::register(r);
    net::register(r);
    net_http::register(r);
    regexp::register(r);
    util::register(r);
    local::register(r);
    golang::register(r);
    golang_strings::register(r);
    golang_std::register(r);
    golang_math::register(r);
    golang_path::register(r);
    test::register(r);
    value::register(r);
    world::register(r);
    example::register(r);
    constants::register(r);
}

/// Parses a signature written in this crate. The strings are fixed at compile time and
/// covered by a test that registers everything, so a bad one is a programming error.
pub(crate) fn sig(text: &str) -> Type {
    match parse_type(text) {
        Ok(t) => t,
        Err(e) => panic!("bad built-in signature `{text}`: {}", e.0),
    }
}

/// The full description of one registration.
pub(crate) struct Def {
    pub name: String,
    pub sigs: Vec<&'static str>,
    pub imp: FuncImpl,
    pub check: Option<CheckFn>,
    pub infer: Option<InferFn>,
    pub doc: &'static str,
}

impl Def {
    pub fn pure(name: impl Into<String>, sigs: &[&'static str], f: PureFn, doc: &'static str) -> Def {
        Def { name: name.into(), sigs: sigs.to_vec(), imp: FuncImpl::Pure(f), check: None, infer: None, doc }
    }
    pub fn stream(name: impl Into<String>, sigs: &[&'static str], f: StreamFn, doc: &'static str) -> Def {
        Def { name: name.into(), sigs: sigs.to_vec(), imp: FuncImpl::Stream(f), check: None, infer: None, doc }
    }
    pub fn check(mut self, c: CheckFn) -> Def {
        self.check = Some(c);
        self
    }
    pub fn infer(mut self, i: InferFn) -> Def {
        self.infer = Some(i);
        self
    }
}

pub(crate) fn add(r: &mut Registry, d: Def) {
    r.register(Builtin {
        decl: FuncDecl {
            name: d.name,
            sigs: d.sigs.iter().map(|s| sig(s)).collect(),
            infer: d.infer,
            check: d.check,
            doc: d.doc,
        },
        imp: d.imp,
    });
}

/// Registers a typed built-in (made by `builtin!`): its signature comes from its Rust types.
pub(crate) fn typed(r: &mut Registry, name: impl Into<String>, f: crate::typed::Typed) {
    r.register(Builtin {
        decl: FuncDecl {
            name: name.into(),
            sigs: vec![sig(&f.signature())],
            infer: None,
            check: None,
            doc: f.doc.trim(),
        },
        imp: f.imp,
    });
}

/// Registers a pure function with one signature.
pub(crate) fn pure(r: &mut Registry, name: impl Into<String>, sig: &'static str, f: PureFn, doc: &'static str) {
    add(r, Def::pure(name, &[sig], f, doc));
}

/// Registers a streaming function with one signature.
pub(crate) fn stream(r: &mut Registry, name: impl Into<String>, sig: &'static str, f: StreamFn, doc: &'static str) {
    add(r, Def::stream(name, &[sig], f, doc));
}

fn bad_arg(i: usize, want: &str, got: Option<&Value>) -> FuncError {
    match got {
        Some(v) => FuncError::fatal(format!("internal error: argument #{i} should be {want}, got {v}")),
        None => FuncError::fatal(format!("internal error: missing argument #{i} (expected {want})")),
    }
}

pub(crate) fn arg(args: &[Value], i: usize) -> Result<&Value, FuncError> {
    args.get(i).ok_or_else(|| bad_arg(i, "a value", None))
}
pub(crate) fn arg_str(args: &[Value], i: usize) -> Result<&str, FuncError> {
    args.get(i).and_then(Value::as_str).ok_or_else(|| bad_arg(i, "a str", args.get(i)))
}
pub(crate) fn arg_int(args: &[Value], i: usize) -> Result<i64, FuncError> {
    args.get(i).and_then(Value::as_int).ok_or_else(|| bad_arg(i, "an int", args.get(i)))
}
pub(crate) fn arg_list(args: &[Value], i: usize) -> Result<&[Value], FuncError> {
    args.get(i).and_then(Value::as_list).ok_or_else(|| bad_arg(i, "a list", args.get(i)))
}
pub(crate) fn arg_map(args: &[Value], i: usize) -> Result<&BTreeMap<Value, Value>, FuncError> {
    args.get(i).and_then(Value::as_map).ok_or_else(|| bad_arg(i, "a map", args.get(i)))
}

/// A list of strings as a value.
pub(crate) fn str_list<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> Value {
    Value::list(items.into_iter().map(|s| Value::str(s)).collect())
}

/// A struct value from `(name, value)` pairs.
pub(crate) fn strukt(fields: impl IntoIterator<Item = (&'static str, Value)>) -> Value {
    Value::strukt(fields.into_iter().map(|(n, v)| (n.to_string(), v)).collect())
}
