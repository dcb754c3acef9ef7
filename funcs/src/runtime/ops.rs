//! The built-in operators, lookups and literals of mcl on plain values (spec 4.6–4.9).
//! No reactivity here: the engine gathers operand values and calls these.

use std::collections::BTreeMap;

use lang::ir::Op;
use lang::syntax::ast::BinOp;
use lang::value::Value;

use crate::api::{FuncError, FuncResult};

/// Applies an operator. Int arithmetic wraps; `/` always yields a float and fails
/// (catchably) on a zero divisor.
pub(crate) fn apply_op(op: Op, args: &[Value]) -> FuncResult {
    use Value::{Bool, Float, Int, Str};
    match (op, args) {
        (Op::Not, [Bool(b)]) => Ok(Bool(!b)),
        (Op::Bin(bin), [a, b]) => match (bin, a, b) {
            (BinOp::Add, Int(x), Int(y)) => Ok(Int(x.wrapping_add(*y))),
            (BinOp::Add, Float(x), Float(y)) => Ok(Float(x + y)),
            (BinOp::Add, Str(x), Str(y)) => {
                let mut s = String::with_capacity(x.len() + y.len());
                s.push_str(x);
                s.push_str(y);
                Ok(Value::str(s))
            }
            (BinOp::Sub, Int(x), Int(y)) => Ok(Int(x.wrapping_sub(*y))),
            (BinOp::Sub, Float(x), Float(y)) => Ok(Float(x - y)),
            (BinOp::Mul, Int(x), Int(y)) => Ok(Int(x.wrapping_mul(*y))),
            (BinOp::Mul, Float(x), Float(y)) => Ok(Float(x * y)),
            (BinOp::Div, Int(_), Int(0)) => Err(divide_by_zero()),
            (BinOp::Div, Int(x), Int(y)) => Ok(Float(*x as f64 / *y as f64)),
            (BinOp::Div, Float(_), Float(y)) if *y == 0.0 => Err(divide_by_zero()),
            (BinOp::Div, Float(x), Float(y)) => Ok(Float(x / y)),
            (BinOp::Lt, Int(x), Int(y)) => Ok(Bool(x < y)),
            (BinOp::Lt, Float(x), Float(y)) => Ok(Bool(x < y)),
            (BinOp::Gt, Int(x), Int(y)) => Ok(Bool(x > y)),
            (BinOp::Gt, Float(x), Float(y)) => Ok(Bool(x > y)),
            (BinOp::Le, Int(x), Int(y)) => Ok(Bool(x <= y)),
            (BinOp::Le, Float(x), Float(y)) => Ok(Bool(x <= y)),
            (BinOp::Ge, Int(x), Int(y)) => Ok(Bool(x >= y)),
            (BinOp::Ge, Float(x), Float(y)) => Ok(Bool(x >= y)),
            (BinOp::Eq, x, y) => Ok(Bool(x == y)),
            (BinOp::Ne, x, y) => Ok(Bool(x != y)),
            (BinOp::And, Bool(x), Bool(y)) => Ok(Bool(*x && *y)),
            (BinOp::Or, Bool(x), Bool(y)) => Ok(Bool(*x || *y)),
            (BinOp::In, x, Value::List(l)) => Ok(Bool(l.iter().any(|e| e == x))),
            _ => Err(bad_operands(op, args)),
        },
        _ => Err(bad_operands(op, args)),
    }
}

fn divide_by_zero() -> FuncError {
    FuncError::catchable("can't divide by zero")
}

fn bad_operands(op: Op, args: &[Value]) -> FuncError {
    let kinds: Vec<&str> = args.iter().map(kind_name).collect();
    FuncError::fatal(format!("operator `{}` can't be applied to ({})", op_name(op), kinds.join(", ")))
}

/// The operator as written in source.
pub(crate) fn op_name(op: Op) -> &'static str {
    match op {
        Op::Not => "not",
        Op::Bin(b) => b.as_str(),
    }
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Bool(_) => "bool",
        Value::Str(_) => "str",
        Value::Int(_) => "int",
        Value::Float(_) => "float",
        Value::List(_) => "list",
        Value::Map(_) => "map",
        Value::Struct(_) => "struct",
        Value::Func(_) => "func",
    }
}

/// `base[index]`: a list index or a map lookup, with mgmt's catchable error texts.
pub(crate) fn index(base: &Value, index: &Value) -> FuncResult {
    match (base, index) {
        (Value::List(l), Value::Int(i)) => {
            if *i < 0 {
                return Err(FuncError::catchable(format!("list index negative, got: {i}")));
            }
            l.get(*i as usize).cloned().ok_or_else(|| {
                FuncError::catchable(format!("list index not present, got: {i}, len is: {}, in: {base}", l.len()))
            })
        }
        (Value::Map(m), k) => {
            m.get(k).cloned().ok_or_else(|| FuncError::catchable(format!("map key not present, want: {k} in {base}")))
        }
        _ => Err(FuncError::fatal(format!("can't index a {} with a {}", kind_name(base), kind_name(index)))),
    }
}

/// `base->field`.
pub(crate) fn field(base: &Value, name: &str) -> FuncResult {
    match base {
        Value::Struct(_) => {
            // Typing guarantees every field but an unsettable attribute left out.
            base.field(name).cloned().ok_or_else(|| FuncError::catchable(format!("attribute `{name}` is not set")))
        }
        _ => Err(FuncError::fatal(format!("can't look up field {name} in a {}", kind_name(base)))),
    }
}

/// A map literal; a later duplicate key overwrites an earlier one.
pub(crate) fn map_literal(items: Vec<Value>) -> Value {
    let mut m = BTreeMap::new();
    let mut it = items.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        m.insert(k, v);
    }
    Value::map(m)
}

/// An interpolated string: the parts concatenated (`str` parts raw).
pub(crate) fn interp(parts: &[Value]) -> Value {
    let mut s = String::new();
    for p in parts {
        match p {
            Value::Str(x) => s.push_str(x),
            other => s.push_str(&other.to_raw_string()),
        }
    }
    Value::str(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin(op: BinOp, a: Value, b: Value) -> FuncResult {
        apply_op(Op::Bin(op), &[a, b])
    }

    #[test]
    fn arithmetic() {
        assert_eq!(bin(BinOp::Add, Value::Int(i64::MAX), Value::Int(1)), Ok(Value::Int(i64::MIN)));
        assert_eq!(bin(BinOp::Div, Value::Int(7), Value::Int(2)), Ok(Value::Float(3.5)));
        assert_eq!(bin(BinOp::Div, Value::Int(7), Value::Int(0)), Err(FuncError::catchable("can't divide by zero")));
        assert_eq!(bin(BinOp::Add, Value::str("a"), Value::str("b")), Ok(Value::str("ab")));
        assert!(matches!(bin(BinOp::Add, Value::str("a"), Value::Int(1)), Err(FuncError::Fatal(_))));
        assert_eq!(apply_op(Op::Not, &[Value::Bool(true)]), Ok(Value::Bool(false)));
        let l = Value::list(vec![Value::Int(1), Value::Int(2)]);
        assert_eq!(bin(BinOp::In, Value::Int(2), l), Ok(Value::Bool(true)));
    }

    #[test]
    fn lookup_messages() {
        let l = Value::list(vec![Value::str("a")]);
        assert_eq!(
            index(&l, &Value::Int(42)),
            Err(FuncError::catchable(r#"list index not present, got: 42, len is: 1, in: ["a"]"#))
        );
        assert_eq!(index(&l, &Value::Int(-1)), Err(FuncError::catchable("list index negative, got: -1")));
        let mut m = BTreeMap::new();
        m.insert(Value::Int(42), Value::str("hello1"));
        assert_eq!(
            index(&Value::map(m), &Value::Int(13)),
            Err(FuncError::catchable(r#"map key not present, want: 13 in {42: "hello1"}"#))
        );
    }
}
