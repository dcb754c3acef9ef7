//! The `test` package: small functions mgmt's own test programs use.

use super::streams::{Emitter, boxed, per_input};
use super::{arg_int, pure, stream};
use crate::api::{FuncError, StreamCtx};
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
        pure(
            r,
            format!("test.one_instance_{name}"),
            "func() str",
            body!(|_a| Ok(Value::str("hello"))),
            "the string \"hello\"",
        );
    }
    pure(
        r,
        "test.one_stream",
        "func(count int) str",
        body!(|a| {
            let n = arg_int(a, 0)?;
            if n < 0 {
                return Err(FuncError::fatal(format!("one_stream: negative count {n}")));
            }
            Ok(Value::str("x".repeat(n.min(1 << 20) as usize)))
        }),
        "\"x\" repeated count times",
    );
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
