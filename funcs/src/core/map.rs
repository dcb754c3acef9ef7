//! The `map` package.

use super::top::map_lookup;
use super::{arg_map, pure};
use crate::api::{CallCtx, FuncResult};
use crate::registry::Registry;
use lang::value::Value;

pub fn register(r: &mut Registry) {
    pure(r, "map.keys", "func(x map{?1: ?2}) []?1", keys, "the keys of a map (in key order)");
    pure(r, "map.values", "func(x map{?1: ?2}) []?2", values, "the values of a map (in key order)");
    pure(r, "map.lookup", "func(m map{?1: ?2}, key ?1) ?2", map_lookup, "the value of a key of a map");
}

fn keys(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    Ok(Value::list(arg_map(a, 0)?.keys().cloned().collect()))
}
fn values(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    Ok(Value::list(arg_map(a, 0)?.values().cloned().collect()))
}
