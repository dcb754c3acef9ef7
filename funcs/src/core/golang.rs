//! The `golang` package: `golang.template` (Go text/template).

use super::{Def, add, arg, arg_str};
use crate::api::{CallCtx, FuncError, FuncResult};
use crate::registry::Registry;
use lang::value::Value;

pub fn register(r: &mut Registry) {
    add(
        r,
        Def::pure(
            "golang.template",
            &["func(template str) str", "func(template str, vars ?1) str"],
            template,
            "renders a Go text/template with vars as `.`",
        ),
    );
}

fn template(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    let _text = arg_str(a, 0)?;
    let _vars = if a.len() > 1 { Some(arg(a, 1)?) } else { None };
    Err(FuncError::fatal("not implemented: golang.template"))
}
