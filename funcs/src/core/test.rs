//! The `test` package: small functions mgmt's own test programs use.

use super::typed;
use crate::api::FuncError;
use crate::builtin;
use crate::registry::Registry;
use crate::streaming;
use lang::value::Value;
use std::collections::BTreeMap;
use std::time::Duration;

pub fn register(r: &mut Registry) {
    typed(r, "test.fastcount", fastcount::DEF);
    typed(r, "test.forloop", forloop::DEF);
    typed(r, "test.forkvloop", forkvloop::DEF);
    for name in ["a", "b", "c", "d", "e", "f", "g", "h"] {
        typed(r, format!("test.one_instance_{name}"), test_one_instance::DEF);
    }
    typed(r, "test.one_stream", test_one_stream::DEF);
    typed(r, "test.slow_string", slow_string::DEF);
}

streaming! {
    /// counts up from 0, as fast as values are taken
    fn fastcount(em) -> "int" {
        let mut n = 0i64;
        while em.value(Value::Int(n)).await {
            n = n.wrapping_add(1);
            tokio::task::yield_now().await;
        }
    }
}

streaming! {
    /// ["foo"], then ["bar"] every 5 s
    fn forloop(em) -> "[]str" {
        if !em.value(crate::core::str_list(["foo"])).await {
            return;
        }
        loop {
            tokio::time::sleep(Duration::from_secs(5)).await;
            if !em.value(crate::core::str_list(["bar"])).await {
                return;
            }
        }
    }
}

streaming! {
    /// {"foo": "bar"}
    fn forkvloop(em) -> "map{str: str}" {
        let m: BTreeMap<Value, Value> = [(Value::str("foo"), Value::str("bar"))].into_iter().collect();
        em.value(Value::map(m)).await;
    }
}

streaming! {
    /// "slow", after 5 s
    fn slow_string(em) -> "str" {
        tokio::time::sleep(Duration::from_secs(5)).await;
        em.value(Value::str("slow")).await;
    }
}

builtin! {
    /// "x" repeated count times
    fn test_one_stream(count: i64) -> Result<String, FuncError> {
        if count < 0 {
            return Err(FuncError::fatal(format!("one_stream: negative count {count}")));
        }
        Ok("x".repeat(count.min(1 << 20) as usize))
    }
}

builtin! {
    /// the string "hello" (`test.one_instance_a` to `_h`)
    fn test_one_instance() -> String {
        "hello".to_string()
    }
}
