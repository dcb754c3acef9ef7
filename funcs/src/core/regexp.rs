//! The `regexp` package.

use super::{arg_str, pure};
use crate::api::{CallCtx, FuncError, FuncResult};
use crate::registry::Registry;
use lang::value::Value;

pub fn register(r: &mut Registry) {
    pure(r, "regexp.match", "func(pattern str, s str) bool", matches, "whether s matches a RE2 pattern");
}

fn matches(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    let pattern = arg_str(a, 0)?;
    let re = regex::Regex::new(pattern).map_err(|e| FuncError::fatal(format!("bad regexp {pattern:?}: {e}")))?;
    Ok(Value::Bool(re.is_match(arg_str(a, 1)?)))
}
