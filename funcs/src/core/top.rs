//! Top-level built-ins (no import needed): `len`, `contains`, `concat`, the lookups,
//! `history`, `random1` and the functions behind the `panic` statement.

use super::streams::{Emitter, boxed, per_input};
use super::{Def, add, arg, arg_int, arg_list, arg_map, pure, typed};
use crate::api::{CallCtx, FuncError, FuncResult, StreamCtx};
use crate::builtin;
use crate::registry::Registry;
use futures::future::BoxFuture;
use lang::types::Type;
use lang::value::Value;
use rand::Rng;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::time::Instant;

pub fn register(r: &mut Registry) {
    add(r, Def::pure("len", &["func(?1) int"], len, "the length of a str (bytes), list or map").check(check_len));
    pure(r, "contains", "func(needle ?1, haystack []?1) bool", contains, "whether a list holds a value (backs `in`)");
    typed(r, "concat", concat::DEF);
    pure(r, "list_lookup", "func(list []?1, index int) ?1", list_lookup, "the element at an index of a list");
    pure(r, "map_lookup", "func(m map{?1: ?2}, key ?1) ?2", map_lookup, "the value of a key of a map");
    add(r, Def::stream("history", &["func(value ?1, index int) ?1"], history, "the value of the input `index` ms ago"));
    add(r, Def::stream("random1", &["func(length int) str"], random1, "a random string of the given length"));
    add(
        r,
        Def::pure("panic", &["func(x ?1) bool"], panic, "fails the program when x is true or a non-empty str")
            .check(check_panic),
    );
    typed(r, "panic_debug", panic_debug::DEF);
    pure(
        r,
        "_unset",
        "func(message str) ?1",
        unset,
        "reading an unsettable attribute left out (an error `<|>` catches)",
    );
}

fn unset(_: &CallCtx<'_>, args: &[Value]) -> FuncResult {
    match arg(args, 0)? {
        Value::Str(s) => Err(FuncError::catchable(s.to_string())),
        other => Err(FuncError::catchable(format!("not set: {other}"))),
    }
}

fn check_len(t: &Type) -> Result<(), String> {
    match t {
        Type::Func(args, _) => match args.first().map(|(_, t)| t) {
            Some(Type::Str | Type::List(_) | Type::Map(..)) => Ok(()),
            Some(other) => Err(format!("can't get length of type {other}: only str, list and map have a length")),
            None => Err("len needs one argument".into()),
        },
        other => Err(format!("unexpected signature {other}")),
    }
}

fn check_panic(t: &Type) -> Result<(), String> {
    match t {
        Type::Func(args, _) => match args.first().map(|(_, t)| t) {
            Some(Type::Bool | Type::Str) => Ok(()),
            Some(other) => Err(format!("panic needs a bool or a str, got {other}")),
            None => Err("panic needs one argument".into()),
        },
        other => Err(format!("unexpected signature {other}")),
    }
}

pub fn len(_: &CallCtx<'_>, args: &[Value]) -> FuncResult {
    let n = match arg(args, 0)? {
        Value::Str(s) => s.len(),
        Value::List(l) => l.len(),
        Value::Map(m) => m.len(),
        other => return Err(FuncError::fatal(format!("can't get length of {other}"))),
    };
    Ok(Value::Int(n as i64))
}

fn contains(_: &CallCtx<'_>, args: &[Value]) -> FuncResult {
    let needle = arg(args, 0)?;
    Ok(Value::Bool(arg_list(args, 1)?.contains(needle)))
}

builtin! {
    /// concatenates two strings
    fn concat(a: &str, b: &str) -> String {
        format!("{a}{b}")
    }
}

/// Indexes a list; a missing or negative index is catchable.
pub fn lookup_list(list: &[Value], index: i64) -> FuncResult {
    if index < 0 {
        return Err(FuncError::catchable(format!("list index negative, got: {index}")));
    }
    list.get(index as usize).cloned().ok_or_else(|| {
        FuncError::catchable(format!(
            "list index not present, got: {index}, len is: {}, in: {}",
            list.len(),
            Value::list(list.to_vec())
        ))
    })
}

pub fn list_lookup(_: &CallCtx<'_>, args: &[Value]) -> FuncResult {
    lookup_list(arg_list(args, 0)?, arg_int(args, 1)?)
}

pub fn map_lookup(_: &CallCtx<'_>, args: &[Value]) -> FuncResult {
    let m = arg_map(args, 0)?;
    let key = arg(args, 1)?;
    m.get(key).cloned().ok_or_else(|| FuncError::catchable(format!("map key not present, want: {key} in {}", args[0])))
}

fn panic(_: &CallCtx<'_>, args: &[Value]) -> FuncResult {
    match arg(args, 0)? {
        Value::Bool(false) => Ok(Value::Bool(false)),
        Value::Bool(true) => Err(FuncError::fatal("bool panic occurred")),
        Value::Str(s) if s.is_empty() => Ok(Value::Bool(false)),
        Value::Str(s) => Err(FuncError::fatal(format!("str panic occurred: {s}"))),
        other => Err(FuncError::fatal(format!("panic of unsupported value {other}"))),
    }
}

builtin! {
    /// fails the program with a message when x is true
    fn panic_debug(x: bool, err: &str) -> Result<bool, FuncError> {
        if x {
            return Err(FuncError::fatal(format!("bool panic occurred: {err}")));
        }
        Ok(false)
    }
}

/// `history(value, index)`: the first value at once, then, as time passes, the newest
/// value that is at least `index` milliseconds old.
fn history(ctx: StreamCtx) -> BoxFuture<'static, ()> {
    boxed(async move {
        let StreamCtx { mut inputs, out, cancel, .. } = ctx;
        // (arrival time, value), oldest first; the front is the value currently emitted.
        let mut buf: VecDeque<(Instant, Value)> = VecDeque::new();
        let mut delay = Duration::ZERO;
        let mut emitted: Option<Value> = None;
        let mut inputs_open = true;
        let mut pending = true;
        loop {
            if pending {
                pending = false;
                let latest = inputs.borrow_and_update().clone();
                if let Some(args) = latest {
                    let (Some(v), Some(ms)) = (args.first().cloned(), args.get(1).and_then(Value::as_int)) else {
                        let _ = out.send(Err(FuncError::fatal("history: bad arguments"))).await;
                        return;
                    };
                    if ms < 0 {
                        let _ = out.send(Err(FuncError::fatal(format!("history: negative index {ms}")))).await;
                        return;
                    }
                    delay = Duration::from_millis(ms as u64);
                    if buf.back().map(|(_, b)| b) != Some(&v) {
                        buf.push_back((Instant::now(), v));
                    }
                }
            }
            // Drop values superseded by a successor that is old enough.
            let now = Instant::now();
            while buf.len() > 1 && buf[1].0 + delay <= now {
                buf.pop_front();
            }
            if let Some((_, v)) = buf.front()
                && emitted.as_ref() != Some(v)
            {
                if out.send(Ok(v.clone())).await.is_err() {
                    return;
                }
                emitted = Some(v.clone());
            }
            let next_due = buf.get(1).map(|(t, _)| *t + delay);
            if next_due.is_none() && !inputs_open {
                cancel.cancelled().await;
                return;
            }
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = async {
                    match next_due {
                        Some(t) => tokio::time::sleep_until(t).await,
                        None => std::future::pending().await,
                    }
                } => {}
                r = inputs.changed(), if inputs_open => {
                    if r.is_err() {
                        inputs_open = false;
                    } else {
                        pending = true;
                    }
                }
            }
        }
    })
}

/// A random alphanumeric string; a new one whenever the length changes.
fn random1(ctx: StreamCtx) -> BoxFuture<'static, ()> {
    boxed(per_input(ctx, |args: Vec<Value>, em: Emitter| async move {
        let r = match args.first().and_then(Value::as_int) {
            Some(n) if n >= 0 => Ok(Value::str(random_string(n as usize))),
            Some(n) => Err(FuncError::catchable(format!("random1: length must not be negative, got {n}"))),
            None => Err(FuncError::fatal("random1: bad argument")),
        };
        em.send(r).await;
    }))
}

pub fn random_string(n: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut rng = rand::rng();
    (0..n).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
}
