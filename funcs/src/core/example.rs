//! The `example` package (and `example/nested`): tiny functions from mgmt's examples.

use super::convert::go_parse_int;
use super::typed;
use crate::api::FuncError;
use crate::api::FuncResult;
use crate::builtin;
use crate::registry::Registry;
use crate::streaming;
use lang::value::Value;
use std::time::Duration;

pub fn register(r: &mut Registry) {
    typed(r, "example.answer", example_answer::DEF);
    typed(r, "example.errorbool", example_errorbool::DEF);
    typed(r, "example.int2str", example_int2str::DEF);
    typed(r, "example.str2int", example_str2int::DEF);
    typed(r, "example.plus", example_plus::DEF);
    typed(r, "example.flipflop", flipflop::DEF);
    typed(r, "example/nested.hello", example_nested_hello::DEF);
}

streaming! {
    /// toggles every 5 s
    fn flipflop(em) -> "bool" {
        let mut v = false;
        while em.value(Value::Bool(v)).await {
            tokio::time::sleep(Duration::from_secs(5)).await;
            v = !v;
        }
    }
}

builtin! {
    /// 42
    fn example_answer() -> i64 {
        42
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
    fn example_int2str(a: i64) -> String {
        a.to_string()
    }
}

builtin! {
    /// a str as an int (0 when it is not one)
    fn example_str2int(a: &str) -> i64 {
        go_parse_int(a, 10).unwrap_or(0)
    }
}

builtin! {
    /// the concatenation of y and z
    fn example_plus(y: &str, z: &str) -> String {
        format!("{}{}", y, z)
    }
}

builtin! {
    /// Hello!
    fn example_nested_hello() -> String {
        String::from("Hello!")
    }
}
