//! The `example` package (and `example/nested`): tiny functions from mgmt's examples.

use super::convert::go_parse_int;
use super::streams::{Emitter, boxed, per_input};
use super::{stream, typed};
use crate::api::FuncResult;
use crate::api::{FuncError, StreamCtx};
use crate::builtin;
use crate::registry::Registry;
use futures::future::BoxFuture;
use lang::value::Value;
use std::time::Duration;

pub fn register(r: &mut Registry) {
    typed(r, "example.answer", example_answer::DEF);
    typed(r, "example.errorbool", example_errorbool::DEF);
    typed(r, "example.int2str", example_int2str::DEF);
    typed(r, "example.str2int", example_str2int::DEF);
    typed(r, "example.plus", example_plus::DEF);
    stream(r, "example.flipflop", "func() bool", flipflop, "toggles every 5 s");
    typed(r, "example/nested.hello", example_nested_hello::DEF);
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

builtin! {
    /// 42
    fn example_answer() -> FuncResult as "int" {
        Ok(Value::Int(42))
    }
}

builtin! {
    /// fails when a is true
    fn example_errorbool(a: bool) -> FuncResult as "str" {
        if a {
            Err(FuncError::fatal("errorbool: we errored on request"))
        } else {
            Ok(Value::str("set false"))
        }
    }
}

builtin! {
    /// an int as a str
    fn example_int2str(a: i64) -> FuncResult as "str" {
        Ok(Value::str(a.to_string()))
    }
}

builtin! {
    /// a str as an int (0 when it is not one)
    fn example_str2int(a: &str) -> FuncResult as "int" {
        Ok(Value::Int(go_parse_int(a, 10).unwrap_or(0)))
    }
}

builtin! {
    /// the concatenation of y and z
    fn example_plus(y: &str, z: &str) -> FuncResult as "str" {
        Ok(Value::str(format!("{}{}", y, z)))
    }
}

builtin! {
    /// Hello!
    fn example_nested_hello() -> FuncResult as "str" {
        Ok(Value::str("Hello!"))
    }
}
