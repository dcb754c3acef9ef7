//! The `test` package: small functions mgmt's own test programs use.

use super::streams::{Emitter, boxed, per_input};
use super::{stream, typed};
use crate::api::FuncResult;
use crate::api::{FuncError, StreamCtx};
use crate::builtin;
use crate::registry::Registry;
use futures::future::BoxFuture;
use lang::value::Value;
use std::collections::BTreeMap;
use std::time::Duration;

pub fn register(r: &mut Registry) {
    stream(r, "test.fastcount", "func() int", fastcount, "counts up from 0, as fast as values are taken");
    stream(r, "test.forloop", "func() []str", forloop, "[\"foo\"], then [\"bar\"] every 5 s");
    stream(r, "test.forkvloop", "func() map{str: str}", forkvloop, "{\"foo\": \"bar\"}");
    for name in ["a", "b", "c", "d", "e", "f", "g", "h"] {
        typed(r, format!("test.one_instance_{name}"), test_one_instance::DEF);
    }
    typed(r, "test.one_stream", test_one_stream::DEF);
    stream(r, "test.slow_string", "func() str", slow_string, "\"slow\", after 5 s");
}

fn fastcount(ctx: StreamCtx) -> BoxFuture<'static, ()> {
    boxed(per_input(ctx, |_, em: Emitter| async move {
        let mut n = 0i64;
        while em.value(Value::Int(n)).await {
            n = n.wrapping_add(1);
            tokio::task::yield_now().await;
        }
    }))
}

fn forloop(ctx: StreamCtx) -> BoxFuture<'static, ()> {
    boxed(per_input(ctx, |_, em: Emitter| async move {
        if !em.value(super::str_list(["foo"])).await {
            return;
        }
        loop {
            tokio::time::sleep(Duration::from_secs(5)).await;
            if !em.value(super::str_list(["bar"])).await {
                return;
            }
        }
    }))
}

fn forkvloop(ctx: StreamCtx) -> BoxFuture<'static, ()> {
    boxed(per_input(ctx, |_, em: Emitter| async move {
        let m: BTreeMap<Value, Value> = [(Value::str("foo"), Value::str("bar"))].into_iter().collect();
        em.value(Value::map(m)).await;
    }))
}

fn slow_string(ctx: StreamCtx) -> BoxFuture<'static, ()> {
    boxed(per_input(ctx, |_, em: Emitter| async move {
        tokio::time::sleep(Duration::from_secs(5)).await;
        em.value(Value::str("slow")).await;
    }))
}

builtin! {
    /// x" repeated count times
    fn test_one_stream(count: i64) -> FuncResult as "str" {
        {
            let n = count;
            if n < 0 {
                return Err(FuncError::fatal(format!("one_stream: negative count {n}")));
            }
            Ok(Value::str("x".repeat(n.min(1 << 20) as usize)))
        }
    }
}

builtin! {
    /// the string "hello" (`test.one_instance_a` to `_h`)
    fn test_one_instance() -> String {
        "hello".to_string()
    }
}
