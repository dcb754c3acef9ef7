//! The `value` package: read back what `value` resources store, as
//! `struct{value T; ready bool}` (`ready` is false until the resource has stored one).
//!
//! The functions read the [`ValueSource`] of their [`crate::api::Host`]: in `tend run` the
//! store the `value` resources write, elsewhere an in-memory [`MemValues`].

use super::stream;
use super::streams::{Emitter, boxed, per_input};
use crate::api::{FuncError, StreamCtx};
use crate::registry::Registry;
use futures::future::BoxFuture;
use lang::types::Type;
use lang::value::Value;
use std::collections::BTreeMap;
use std::sync::Mutex;
use tokio::sync::watch;

pub fn register(r: &mut Registry) {
    stream(
        r,
        "value.get",
        "func(key str) struct{value ?1; ready bool}",
        get,
        "a stored value, of the type the program wants",
    );
    stream(r, "value.get_bool", "func(key str) struct{value bool; ready bool}", get, "a stored bool");
    stream(r, "value.get_str", "func(key str) struct{value str; ready bool}", get, "a stored str");
    stream(r, "value.get_int", "func(key str) struct{value int; ready bool}", get, "a stored int");
    stream(r, "value.get_float", "func(key str) struct{value float; ready bool}", get, "a stored float");
}

pub use crate::api::ValueSource;

/// A simple in-memory store (the default source).
pub struct MemValues {
    values: Mutex<BTreeMap<String, Value>>,
    version: watch::Sender<u64>,
}

impl Default for MemValues {
    fn default() -> MemValues {
        MemValues { values: Mutex::new(BTreeMap::new()), version: watch::Sender::new(0) }
    }
}

impl MemValues {
    pub fn set(&self, key: &str, v: Value) {
        let mut values = self.values.lock().unwrap_or_else(|e| e.into_inner());
        if values.get(key) != Some(&v) {
            values.insert(key.to_string(), v);
            self.version.send_modify(|n| *n += 1);
        }
    }
}

impl ValueSource for MemValues {
    fn get(&self, key: &str) -> Option<Value> {
        self.values.lock().unwrap_or_else(|e| e.into_inner()).get(key).cloned()
    }
    fn changes(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }
}

/// Whether a stored value fits the wanted type (empty containers fit any element type).
fn fits(v: &Value, t: &Type) -> bool {
    match (v, t) {
        (Value::Bool(_), Type::Bool) | (Value::Str(_), Type::Str) | (Value::Int(_), Type::Int) => true,
        (Value::Float(_), Type::Float) => true,
        (Value::List(l), Type::List(e)) => l.iter().all(|x| fits(x, e)),
        (Value::Map(m), Type::Map(k, e)) => m.iter().all(|(a, b)| fits(a, k) && fits(b, e)),
        (Value::Struct(fs), Type::Struct(ts)) => {
            fs.len() == ts.len() && fs.iter().zip(ts).all(|((n, x), (tn, tt))| n == tn && fits(x, tt))
        }
        (_, Type::Variant) => true,
        _ => false,
    }
}

/// The `struct{value T; ready bool}` result for a stored value (or its absence).
pub fn lookup(stored: Option<Value>, want: &Type, key: &str) -> Result<Value, FuncError> {
    let (value, ready) = match stored {
        None => (Value::zero(want), false),
        Some(v) if fits(&v, want) => (v, true),
        Some(v) => {
            return Err(FuncError::catchable(format!("value {key:?} holds {v}, which is not a {want}")));
        }
    };
    Ok(Value::strukt(vec![("value".into(), value), ("ready".into(), Value::Bool(ready))]))
}

fn get(ctx: StreamCtx) -> BoxFuture<'static, ()> {
    let want = match &ctx.ret_type {
        Type::Struct(fields) => fields.iter().find(|(n, _)| n == "value").map(|(_, t)| t.clone()),
        _ => None,
    }
    .unwrap_or(Type::Str);
    boxed(per_input(ctx, move |args, em: Emitter| {
        let want = want.clone();
        async move {
            let Some(key) = args.first().and_then(Value::as_str).map(str::to_string) else { return };
            let src = em.host().values.clone();
            let mut changes = src.changes();
            let mut last = None;
            loop {
                let r = lookup(src.get(&key), &want, &key);
                if last.as_ref() != Some(&r) {
                    if !em.send(r.clone()).await {
                        return;
                    }
                    last = Some(r);
                }
                if changes.changed().await.is_err() {
                    return;
                }
            }
        }
    }))
}
