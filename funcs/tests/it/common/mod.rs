//! Shared helpers for the core library tests: call a registered pure function, and a
//! tiny `Caller` whose lambdas are Rust closures chosen by lambda id.
#![allow(dead_code)]

use funcs::api::{CallCtx, Caller, FuncError, FuncImpl, FuncResult, Host};
use funcs::registry::Registry;
use lang::ir::NodeId;
use lang::types::Type;
use lang::value::{Closure, Env, Value};
use std::collections::BTreeMap;
use std::sync::OnceLock;

pub fn registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(Registry::core)
}

/// Lambda 0: x + x (ints or strs); 1: x + y (ints); 2: x is even; 3: "x:y"; 4: fails.
pub struct TestCaller;

impl Caller for TestCaller {
    fn call(&self, f: &Closure, args: Vec<Value>) -> FuncResult {
        match (f.lambda.0, args.as_slice()) {
            (0, [Value::Int(x)]) => Ok(Value::Int(x + x)),
            (0, [Value::Str(x)]) => Ok(Value::str(format!("{x}{x}"))),
            (1, [Value::Int(x), Value::Int(y)]) => Ok(Value::Int(x + y)),
            (2, [Value::Int(x)]) => Ok(Value::Bool(x % 2 == 0)),
            (3, [x, y]) => Ok(Value::str(format!("{}:{}", x.to_raw_string(), y.to_raw_string()))),
            (4, _) => Err(FuncError::catchable("lambda failed")),
            other => panic!("unexpected lambda call {other:?}"),
        }
    }
}

pub fn lambda(id: u32) -> Value {
    Value::Func(Closure { lambda: NodeId(id), env: Env::empty() })
}

/// Calls a pure built-in with types taken from the values and the given result type.
pub fn call_ret(name: &str, args: Vec<Value>, ret: Type) -> FuncResult {
    call_host(name, args, ret, &Host::default())
}

pub fn call_host(name: &str, args: Vec<Value>, ret: Type, host: &Host) -> FuncResult {
    let b = registry().get(name).unwrap_or_else(|| panic!("{name} is not registered"));
    let FuncImpl::Pure(f) = b.imp else { panic!("{name} is not pure") };
    let types: Vec<Type> = args.iter().map(funcs::printf::value_type).collect();
    let ctx = CallCtx { arg_types: &types, ret_type: &ret, caller: &TestCaller, host };
    f(&ctx, &args)
}

pub fn call(name: &str, args: Vec<Value>) -> FuncResult {
    call_ret(name, args, Type::Variant)
}

/// The value of a successful call.
pub fn ok(name: &str, args: Vec<Value>) -> Value {
    call(name, args.clone()).unwrap_or_else(|e| panic!("{name}({args:?}) failed: {e:?}"))
}

pub fn catchable(name: &str, args: Vec<Value>) -> String {
    match call(name, args.clone()) {
        Err(FuncError::Catchable(m)) => m,
        other => panic!("{name}({args:?}) should fail catchably, got {other:?}"),
    }
}

pub fn fatal(name: &str, args: Vec<Value>) -> String {
    match call(name, args.clone()) {
        Err(FuncError::Fatal(m)) => m,
        other => panic!("{name}({args:?}) should fail fatally, got {other:?}"),
    }
}

pub fn s(x: &str) -> Value {
    Value::str(x)
}
pub fn i(x: i64) -> Value {
    Value::Int(x)
}
pub fn f(x: f64) -> Value {
    Value::Float(x)
}
pub fn b(x: bool) -> Value {
    Value::Bool(x)
}
pub fn l(items: Vec<Value>) -> Value {
    Value::list(items)
}
pub fn strs(items: &[&str]) -> Value {
    Value::list(items.iter().map(Value::str).collect())
}
pub fn ints(items: &[i64]) -> Value {
    Value::list(items.iter().map(|x| Value::Int(*x)).collect())
}
pub fn m(entries: Vec<(Value, Value)>) -> Value {
    Value::map(entries.into_iter().collect::<BTreeMap<_, _>>())
}
pub fn st(fields: Vec<(&str, Value)>) -> Value {
    Value::strukt(fields.into_iter().map(|(n, v)| (n.to_string(), v)).collect())
}

/// A host whose file-following built-ins watch through the resources' inotify hub, as in
/// `tend run`.
pub fn watching_host() -> Host {
    Host { watcher: resources::cluster::world::hub(), ..Host::default() }
}
