//! The `fmt` package: `fmt.printf`.

use super::{Def, add, arg_str};
use crate::api::{CallCtx, FuncError, FuncResult};
use crate::printf::{infer_printf, sprintf};
use crate::registry::Registry;
use lang::value::Value;

pub fn register(r: &mut Registry) {
    add(
        r,
        Def::pure("fmt.printf", &[], printf, "formats its arguments with %t %s %q %d %f %v %T %%").infer(infer_printf),
    );
}

fn printf(ctx: &CallCtx<'_>, args: &[Value]) -> FuncResult {
    let format = arg_str(args, 0)?;
    let types = ctx.arg_types.get(1..).unwrap_or(&[]);
    sprintf(format, &args[1..], types).map(Value::str).map_err(|e| FuncError::fatal(format!("printf: {e}")))
}
