//! Go-style formatting for `fmt.printf` (verbs `%t %s %q %d %f %v %T %%`) and the static
//! check that turns a known format string into a call-site signature.

use lang::catalog::CallSite;
use lang::types::Type;
use lang::value::{Value, format_float, quote_str};

use crate::gofmt::{self, Piece};

const VERBS: &str = "tsqdfvT";

/// The verbs of a format string, in order. Unknown verbs, flags, widths and a trailing
/// lone `%` are errors: mcl's `printf` is Go's without them.
pub fn parse_format(format: &str) -> Result<Vec<Piece<'_>>, String> {
    let pieces = gofmt::pieces(format);
    for p in &pieces {
        match p {
            Piece::Verb(d) if d.is_bare() && VERBS.contains(d.verb) => {}
            Piece::Verb(d) => {
                let shown = if d.is_bare() {
                    format!("`%{}`", d.verb)
                } else {
                    format!("`%{}` with flags, width or precision", d.verb)
                };
                return Err(format!(
                    "invalid format verb {shown}: only %t %s %q %d %f %v %T and %% are supported (no flags, widths or precision)"
                ));
            }
            Piece::NoVerb => return Err("format string ends with a lone `%` (write `%%` for a percent sign)".into()),
            Piece::Lit(_) | Piece::Percent => {}
        }
    }
    Ok(pieces)
}

/// The verbs of a format string, in order.
pub fn verbs<'a>(pieces: &'a [Piece<'_>]) -> impl Iterator<Item = char> + 'a {
    pieces.iter().filter_map(|p| match p {
        Piece::Verb(d) => Some(d.verb),
        Piece::Lit(_) | Piece::Percent | Piece::NoVerb => None,
    })
}

/// The argument type a verb requires (`None`: any type).
pub fn verb_type(verb: char) -> Option<Type> {
    match verb {
        't' => Some(Type::Bool),
        's' | 'q' => Some(Type::Str),
        'd' => Some(Type::Int),
        'f' => Some(Type::Float),
        _ => None,
    }
}

fn arg_name(i: usize) -> String {
    // a, b, ..., z, a1, b1, ...
    let letter = (b'a' + (i % 26) as u8) as char;
    if i < 26 { letter.to_string() } else { format!("{letter}{}", i / 26) }
}

/// The `infer` hook of `fmt.printf`: with a static format every verb fixes its
/// argument's type and the counts must agree; otherwise every argument gets a fresh
/// type variable.
pub fn infer_printf(site: &CallSite) -> Result<Type, String> {
    let Some(first) = site.args.first() else {
        return Err("printf needs at least one argument, the format string".into());
    };
    let rest = site.args.len() - 1;
    let mut next_var = 1;
    let mut fresh = || {
        let t = Type::Var(next_var);
        next_var += 1;
        t
    };
    let mut args = vec![("format".to_string(), Type::Str)];
    match first {
        Some(Value::Str(format)) => {
            let pieces = parse_format(format)?;
            let vs: Vec<char> = verbs(&pieces).collect();
            if vs.len() != rest {
                return Err(format!("number of args ({rest}) doesn't match format string verb count ({})", vs.len()));
            }
            for (i, v) in vs.into_iter().enumerate() {
                args.push((arg_name(i), verb_type(v).unwrap_or_else(&mut fresh)));
            }
        }
        // A static non-str format (or none): unification reports the conflict.
        Some(_) | None => {
            for i in 0..rest {
                args.push((arg_name(i), fresh()));
            }
        }
    }
    Ok(Type::Func(args, Box::new(Type::Str)))
}

/// Formats `args` with a format string. `types` are the argument types (for `%T`).
pub fn sprintf(format: &str, args: &[Value], types: &[Type]) -> Result<String, String> {
    let pieces = parse_format(format)?;
    let count = verbs(&pieces).count();
    if count != args.len() {
        return Err(format!("number of args ({}) doesn't match format string verb count ({count})", args.len()));
    }
    let mut out = String::new();
    let mut i = 0;
    for p in &pieces {
        match p {
            Piece::Lit(s) => out.push_str(s),
            Piece::Percent => out.push('%'),
            Piece::NoVerb => {}
            Piece::Verb(d) => {
                let v = &d.verb;
                let a = &args[i];
                let mismatch = |want: &str| format!("verb %{v} needs a{want} but argument #{} is {a}", i + 1);
                match (v, a) {
                    ('t', Value::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
                    ('s', Value::Str(s)) => out.push_str(s),
                    ('q', Value::Str(s)) => out.push_str(&quote_str(s)),
                    ('d', Value::Int(n)) => out.push_str(&n.to_string()),
                    ('f', Value::Float(f)) => out.push_str(&format_float(*f)),
                    ('v', a) => out.push_str(&a.to_raw_string()),
                    ('T', a) => match types.get(i) {
                        Some(t) if t.is_concrete() => out.push_str(&t.to_string()),
                        _ => out.push_str(&type_of(a)),
                    },
                    ('t', _) => return Err(mismatch(" bool")),
                    ('s' | 'q', _) => return Err(mismatch(" str")),
                    ('d', _) => return Err(mismatch("n int")),
                    ('f', _) => return Err(mismatch(" float")),
                    _ => return Err(format!("invalid format verb `%{v}`")),
                }
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Best-effort type of a value when the call site's types are not known (empty
/// containers print their element type as `variant`).
pub fn type_of(v: &Value) -> String {
    value_type(v).to_string()
}

/// The type of a value as far as the value shows it (`variant` for the element type
/// of empty containers and for function values' signatures).
pub fn value_type(v: &Value) -> Type {
    ty(v)
}

fn ty(v: &Value) -> Type {
    match v {
        Value::Bool(_) => Type::Bool,
        Value::Str(_) => Type::Str,
        Value::Int(_) => Type::Int,
        Value::Float(_) => Type::Float,
        Value::List(l) => Type::list(l.first().map(ty).unwrap_or(Type::Variant)),
        Value::Map(m) => match m.iter().next() {
            Some((k, v)) => Type::map(ty(k), ty(v)),
            None => Type::map(Type::Variant, Type::Variant),
        },
        Value::Struct(fs) => Type::Struct(fs.iter().map(|(n, v)| (n.clone(), ty(v))).collect()),
        Value::Func(_) => Type::Func(Vec::new(), Box::new(Type::Variant)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(args: Vec<Option<Value>>) -> CallSite {
        CallSite { args }
    }

    #[test]
    fn static_format_fixes_argument_types() {
        let t = infer_printf(&site(vec![Some(Value::str("%d and %s, %v %%")), None, None, None])).unwrap();
        assert_eq!(t.to_string(), "func(format str, a int, b str, c ?1) str");
    }

    #[test]
    fn verb_count_must_match() {
        let e = infer_printf(&site(vec![Some(Value::str("%d %d")), None])).unwrap_err();
        assert_eq!(e, "number of args (1) doesn't match format string verb count (2)");
    }

    #[test]
    fn unknown_verbs_and_flags_are_errors() {
        assert!(infer_printf(&site(vec![Some(Value::str("%x")), None])).unwrap_err().contains("%x"));
        assert!(parse_format("%5d").is_err());
        assert!(parse_format("100%").is_err());
    }

    #[test]
    fn dynamic_format_gives_fresh_vars() {
        let t = infer_printf(&site(vec![None, None, Some(Value::Int(1))])).unwrap();
        assert_eq!(t.to_string(), "func(format str, a ?1, b ?2) str");
    }

    #[test]
    fn formats_like_mgmt() {
        let l = Value::list(vec![Value::str("a"), Value::str("b")]);
        let s = sprintf(
            "%t|%s|%q|%d|%f|%v|%v|%T|%%",
            &[
                Value::Bool(true),
                Value::str("x\ty"),
                Value::str("x\ty"),
                Value::Int(-3),
                Value::Float(42.0),
                Value::Float(3.25),
                l.clone(),
                l,
            ],
            &[
                Type::Bool,
                Type::Str,
                Type::Str,
                Type::Int,
                Type::Float,
                Type::Float,
                Type::list(Type::Str),
                Type::list(Type::Str),
            ],
        )
        .unwrap();
        assert_eq!(s, "true|x\ty|\"x\\ty\"|-3|42|3.25|[\"a\", \"b\"]|[]str|%");
    }

    #[test]
    fn runtime_mismatch_is_an_error() {
        assert!(sprintf("%d", &[Value::str("no")], &[Type::Str]).unwrap_err().contains("needs an int"));
        assert!(sprintf("%d %d", &[Value::Int(1)], &[Type::Int]).is_err());
    }
}
