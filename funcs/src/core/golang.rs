//! The `golang` package: `golang.template` (Go text/template), with every simple pure
//! built-in callable inside templates under its name with `.` and `/` replaced by `_`.

use super::{Def, add, arg_str};
use crate::api::{CallCtx, FuncError, FuncImpl, FuncResult, PureFn};
use crate::registry::Registry;
use crate::template::{Funcs, render};
use lang::types::Type;
use lang::value::Value;
use std::collections::BTreeMap;
use std::sync::OnceLock;

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

/// A built-in as templates see it: its body and its signatures.
struct TemplateFunc {
    f: PureFn,
    sigs: Vec<Type>,
}

fn has_func_arg(t: &Type) -> bool {
    match t {
        Type::Func(args, ret) => {
            args.iter().any(|(_, a)| matches!(a, Type::Func(..))) || matches!(**ret, Type::Func(..))
        }
        _ => true,
    }
}

/// The template name of a built-in: `golang/strings.join` -> `golang_strings_join`.
pub fn template_name(name: &str) -> String {
    name.replace(['.', '/'], "_")
}

fn table() -> &'static BTreeMap<String, TemplateFunc> {
    static TABLE: OnceLock<BTreeMap<String, TemplateFunc>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let reg = Registry::core();
        let simple: Vec<(&str, PureFn, &Vec<Type>)> = reg
            .iter()
            .filter(|b| b.decl.infer.is_none() && b.decl.name != "golang.template" && !b.decl.name.starts_with('_'))
            .filter(|b| !b.decl.sigs.iter().any(has_func_arg))
            .filter_map(|b| match b.imp {
                FuncImpl::Pure(f) => Some((b.decl.name.as_str(), f, &b.decl.sigs)),
                FuncImpl::Stream(_) => None,
            })
            .collect();
        let mut table: BTreeMap<String, TemplateFunc> = simple
            .iter()
            .map(|(name, f, sigs)| (template_name(name), TemplateFunc { f: *f, sigs: (*sigs).clone() }))
            .collect();
        // Unambiguous short names too (`int2str` for `example.int2str`), as some mgmt
        // examples use them; a full name always wins.
        let mut short: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, (name, _, _)) in simple.iter().enumerate() {
            short.entry(name.rsplit(['.', '/']).next().unwrap_or(name)).or_default().push(i);
        }
        for (alias, users) in short {
            if let [only] = users.as_slice()
                && !table.contains_key(alias)
            {
                let (_, f, sigs) = simple[*only];
                table.insert(alias.to_string(), TemplateFunc { f, sigs: sigs.clone() });
            }
        }
        table
    })
}

struct Builtins<'a, 'b> {
    ctx: &'a CallCtx<'b>,
}

impl Funcs for Builtins<'_, '_> {
    fn has(&self, name: &str) -> bool {
        table().contains_key(name)
    }

    fn call(&self, name: &str, args: Vec<Value>) -> Option<Result<Value, FuncError>> {
        let tf = table().get(name)?;
        let Some(Type::Func(params, ret)) =
            tf.sigs.iter().find(|s| matches!(s, Type::Func(p, _) if p.len() == args.len()))
        else {
            let want: Vec<String> = tf.sigs.iter().map(|s| s.to_string()).collect();
            return Some(Err(FuncError::fatal(format!(
                "wrong number of args: got {}, want {}",
                args.len(),
                want.join(" or ")
            ))));
        };
        let arg_types: Vec<Type> = args.iter().map(crate::printf::value_type).collect();
        for (i, ((_, want), got)) in params.iter().zip(&arg_types).enumerate() {
            if want.is_concrete() && !same_shape(want, got) {
                return Some(Err(FuncError::fatal(format!(
                    "wrong type for value; expected {want}; got {got} (argument #{})",
                    i + 1
                ))));
            }
        }
        let ret_type = if ret.is_concrete() { (**ret).clone() } else { Type::Variant };
        let sub = CallCtx { arg_types: &arg_types, ret_type: &ret_type, caller: self.ctx.caller, host: self.ctx.host };
        Some((tf.f)(&sub, &args))
    }
}

/// Whether a value's observed type fits a wanted type (`variant` parts of the observed
/// type come from empty containers and match anything).
fn same_shape(want: &Type, got: &Type) -> bool {
    match (want, got) {
        (_, Type::Variant) => true,
        (Type::List(a), Type::List(b)) => same_shape(a, b),
        (Type::Map(ak, av), Type::Map(bk, bv)) => same_shape(ak, bk) && same_shape(av, bv),
        (Type::Struct(a), Type::Struct(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|((an, at), (bn, bt))| an == bn && same_shape(at, bt))
        }
        (a, b) => a == b,
    }
}

fn template(ctx: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    let text = arg_str(a, 0)?;
    let dot = a.get(1).cloned().unwrap_or_else(|| Value::str(""));
    render(text, &dot, &Builtins { ctx }).map(Value::str).map_err(FuncError::from)
}
