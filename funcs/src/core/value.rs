//! The `value` package: read back what `value` resources store, as
//! `struct{value T; ready bool}` (`ready` is false until the resource has stored one).
//!
//! The functions read the [`ValueSource`] of their [`crate::api::Host`]: in `tend run` the
//! store the `value` resources write, elsewhere an in-memory [`MemValues`].

use super::streams::{Emitter, boxed, per_input};
use super::{stream, typed};
use crate::api::{FuncError, StreamCtx};
use crate::registry::Registry;
use crate::streaming;
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
    typed(r, "value.get_bool", get_bool::DEF);
    typed(r, "value.get_str", get_str::DEF);
    typed(r, "value.get_int", get_int::DEF);
    typed(r, "value.get_float", get_float::DEF);
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

/// `value.get`: the type it reads is the one the program wants at the call site.
fn get(ctx: StreamCtx) -> BoxFuture<'static, ()> {
    let want = match &ctx.ret_type {
        Type::Struct(fields) => fields.iter().find(|(n, _)| n == "value").map(|(_, t)| t.clone()),
        _ => None,
    }
    .unwrap_or(Type::Str);
    boxed(per_input(ctx, move |args, em: Emitter| {
        let want = want.clone();
        async move {
            match args.first().and_then(Value::as_str) {
                Some(key) => follow_value(em, key.to_string(), want).await,
                None => {
                    em.send(Err(crate::typed::bad_arg(0, "key", "str", args.first()))).await;
                }
            }
        }
    }))
}

streaming! {
    /// a stored bool
    fn get_bool(em, key: String) -> "struct{value bool; ready bool}" {
        follow_value(em, key, Type::Bool).await
    }
}

streaming! {
    /// a stored str
    fn get_str(em, key: String) -> "struct{value str; ready bool}" {
        follow_value(em, key, Type::Str).await
    }
}

streaming! {
    /// a stored int
    fn get_int(em, key: String) -> "struct{value int; ready bool}" {
        follow_value(em, key, Type::Int).await
    }
}

streaming! {
    /// a stored float
    fn get_float(em, key: String) -> "struct{value float; ready bool}" {
        follow_value(em, key, Type::Float).await
    }
}

/// Emits the value stored under `key` as `want`, now and after every change of the store.
async fn follow_value(em: Emitter, key: String, want: Type) {
    follow_store(em, move |src| lookup(src.get(&key), &want, &key)).await
}

/// Emits what `read` makes of the host's value store, now and after every change of it
/// that changes the result.
pub(crate) async fn follow_store(em: Emitter, read: impl Fn(&dyn ValueSource) -> crate::api::FuncResult) {
    let src = em.host().values.clone();
    let mut changes = src.changes();
    let mut last = None;
    loop {
        let r = read(src.as_ref());
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
