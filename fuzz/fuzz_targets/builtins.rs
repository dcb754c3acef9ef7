//! Fuzz target: any arguments given to the pure built-ins that neither touch the host nor
//! call lambdas return a value or an error, never panic. The input picks the function
//! (by index among them) and is split on NUL bytes into string arguments; ints and floats
//! are read from the same text, so every declared argument type gets a value.

#![no_main]

use funcs::api::{CallCtx, Caller, FuncImpl, FuncResult, Host};
use funcs::registry::Registry;
use lang::types::Type;
use lang::value::{Closure, Value};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

/// Packages whose pure functions only compute: no files, no host, no store.
const PURE_PACKAGES: &[&str] =
    &["strings.", "convert.", "math.", "net.", "regexp.", "datetime.", "golang/strings.", "golang/strconv.", "golang/path", "golang/math.", "golang/html."];

struct NoLambdas;

impl Caller for NoLambdas {
    fn call(&self, _: &Closure, _: Vec<Value>) -> FuncResult {
        Err(funcs::api::FuncError::catchable("no lambdas here"))
    }
}

/// The fuzzable built-ins: name, argument types, result type, implementation.
fn targets() -> &'static [(String, Vec<Type>, Type, funcs::api::PureFn)] {
    static T: OnceLock<Vec<(String, Vec<Type>, Type, funcs::api::PureFn)>> = OnceLock::new();
    T.get_or_init(|| {
        let registry = Registry::core();
        let mut out = Vec::new();
        for b in registry.iter() {
            let FuncImpl::Pure(f) = b.imp else { continue };
            if !PURE_PACKAGES.iter().any(|p| b.decl.name.starts_with(p)) {
                continue;
            }
            for sig in &b.decl.sigs {
                if let Type::Func(args, ret) = sig
                    && sig.is_concrete()
                {
                    out.push((b.decl.name.clone(), args.iter().map(|(_, t)| t.clone()).collect(), (**ret).clone(), f));
                }
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    })
}

fn value_of(t: &Type, text: &str) -> Option<Value> {
    Some(match t {
        Type::Str => Value::str(text),
        Type::Int => Value::Int(text.parse().unwrap_or(text.len() as i64 - 3)),
        Type::Float => Value::Float(text.parse().unwrap_or(text.len() as f64 / 3.0)),
        Type::Bool => Value::Bool(text.len() % 2 == 0),
        Type::List(e) if **e == Type::Str => Value::list(text.split(',').map(Value::str).collect()),
        _ => return None,
    })
}

fuzz_target!(|data: &[u8]| {
    let targets = targets();
    let (Some(&pick), Ok(text)) = (data.first(), std::str::from_utf8(data.get(1..).unwrap_or_default())) else { return };
    let Some((_, arg_types, ret, f)) = targets.get(pick as usize % targets.len().max(1)) else { return };
    let mut parts = text.split('\0');
    let mut args = Vec::new();
    for t in arg_types {
        let Some(v) = value_of(t, parts.next().unwrap_or_default()) else { return };
        args.push(v);
    }
    let host = Host::default();
    let ctx = CallCtx { arg_types, ret_type: ret, caller: &NoLambdas, host: &host };
    let _result = f(&ctx, &args);
});
