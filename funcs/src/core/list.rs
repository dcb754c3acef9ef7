//! The `list` package.

use super::top::list_lookup;
use super::{Def, add, arg_list, pure};
use crate::api::{CallCtx, FuncResult};
use crate::registry::Registry;
use lang::catalog::CallSite;
use lang::types::Type;
use lang::value::Value;

pub fn register(r: &mut Registry) {
    add(r, Def::pure("list.concat", &[], concat, "concatenates one or more lists, in order").infer(infer_concat));
    pure(r, "list.lookup", "func(list []?1, index int) ?1", list_lookup, "the element at an index of a list");
}

/// `list.concat` takes one or more lists of one element type.
pub fn infer_concat(site: &CallSite) -> Result<Type, String> {
    if site.args.is_empty() {
        return Err("concat needs at least one list".into());
    }
    let l = Type::list(Type::Var(1));
    let args = (0..site.args.len()).map(|i| (format!("a{i}"), l.clone())).collect();
    Ok(Type::Func(args, Box::new(l)))
}

fn concat(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    let mut out = Vec::new();
    for i in 0..a.len() {
        out.extend(arg_list(a, i)?.iter().cloned());
    }
    Ok(Value::list(out))
}
