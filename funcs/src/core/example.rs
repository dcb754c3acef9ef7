//! The `example` package (and `example/nested`): tiny functions from mgmt's examples.

use super::convert::go_parse_int;
use super::streams::{Emitter, boxed, per_input};
use super::{arg_bool, arg_int, arg_str, pure, stream};
use crate::api::{FuncError, StreamCtx};
use crate::registry::Registry;
use futures::future::BoxFuture;
use lang::value::Value;
use std::time::Duration;

pub fn register(r: &mut Registry) {
    pure(r, "example.answer", "func() int", body!(|_a| Ok(Value::Int(42))), "42");
    pure(
        r,
        "example.errorbool",
        "func(a bool) str",
        body!(|a| if arg_bool(a, 0)? {
            Err(FuncError::fatal("errorbool: we errored on request"))
        } else {
            Ok(Value::str("set false"))
        }),
        "fails when a is true",
    );
    pure(
        r,
        "example.int2str",
        "func(a int) str",
        body!(|a| Ok(Value::str(arg_int(a, 0)?.to_string()))),
        "an int as a str",
    );
    pure(
        r,
        "example.str2int",
        "func(a str) int",
        body!(|a| Ok(Value::Int(go_parse_int(arg_str(a, 0)?, 10).unwrap_or(0)))),
        "a str as an int (0 when it is not one)",
    );
    pure(
        r,
        "example.plus",
        "func(y str, z str) str",
        body!(|a| Ok(Value::str(format!("{}{}", arg_str(a, 0)?, arg_str(a, 1)?)))),
        "the concatenation of y and z",
    );
    stream(r, "example.flipflop", "func() bool", flipflop, "toggles every 5 s");
    pure(r, "example/nested.hello", "func() str", body!(|_a| Ok(Value::str("Hello!"))), "\"Hello!\"");
}

fn flipflop(ctx: StreamCtx) -> BoxFuture<'static, ()> {
    boxed(per_input(ctx, |_, em: Emitter| async move {
        let mut v = false;
        while em.value(Value::Bool(v)).await {
            tokio::time::sleep(Duration::from_secs(5)).await;
            v = !v;
        }
    }))
}
