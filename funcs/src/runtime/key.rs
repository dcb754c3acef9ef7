//! Identity of values for the runtime's caches: the equality used for the "unchanged
//! value does not wake dependants" cut-off and for looking up per-environment instances,
//! plus a hash consistent with it.
//!
//! It differs from `Value`'s `PartialEq` in two places, both on purpose: function values
//! are equal when they are the same lambda with equal captured parameters (so a lambda
//! that captures a loop variable is still cached per element), and `NaN` equals `NaN`
//! (so a `NaN` result does not re-trigger its dependants forever).

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use lang::ir::NodeId;
use lang::value::{Env, Value};

/// True when two values are interchangeable for caching.
pub(crate) fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::List(x), Value::List(y)) => {
            Arc::ptr_eq(x, y) || (x.len() == y.len() && x.iter().zip(y.iter()).all(|(a, b)| same(a, b)))
        }
        (Value::Map(x), Value::Map(y)) => {
            Arc::ptr_eq(x, y)
                || (x.len() == y.len()
                    && x.iter().zip(y.iter()).all(|((ka, va), (kb, vb))| same(ka, kb) && same(va, vb)))
        }
        (Value::Struct(x), Value::Struct(y)) => {
            Arc::ptr_eq(x, y)
                || (x.len() == y.len() && x.iter().zip(y.iter()).all(|((na, va), (nb, vb))| na == nb && same(va, vb)))
        }
        (Value::Func(x), Value::Func(y)) => x.lambda == y.lambda && same_env(&x.env, &y.env),
        _ => false,
    }
}

fn same_env(a: &Env, b: &Env) -> bool {
    let (mut a, mut b) = (a.0.as_ref(), b.0.as_ref());
    loop {
        match (a, b) {
            (None, None) => return true,
            (Some(fa), Some(fb)) => {
                if Arc::ptr_eq(fa, fb) {
                    return true;
                }
                if fa.param != fb.param || !same(&fa.value, &fb.value) {
                    return false;
                }
                a = fa.parent.0.as_ref();
                b = fb.parent.0.as_ref();
            }
            _ => return false,
        }
    }
}

/// A hash consistent with [`same`].
pub(crate) fn hash_value<H: Hasher>(v: &Value, h: &mut H) {
    match v {
        Value::Bool(b) => {
            h.write_u8(0);
            b.hash(h);
        }
        Value::Int(i) => {
            h.write_u8(1);
            i.hash(h);
        }
        Value::Float(f) => {
            h.write_u8(2);
            // 0.0 == -0.0 and all NaNs are one value under `same`.
            let bits = if *f == 0.0 {
                0
            } else if f.is_nan() {
                u64::MAX
            } else {
                f.to_bits()
            };
            bits.hash(h);
        }
        Value::Str(s) => {
            h.write_u8(3);
            s.hash(h);
        }
        Value::List(l) => {
            h.write_u8(4);
            h.write_usize(l.len());
            l.iter().for_each(|x| hash_value(x, h));
        }
        Value::Map(m) => {
            h.write_u8(5);
            h.write_usize(m.len());
            for (k, x) in m.iter() {
                hash_value(k, h);
                hash_value(x, h);
            }
        }
        Value::Struct(fs) => {
            h.write_u8(6);
            for (n, x) in fs.iter() {
                n.hash(h);
                hash_value(x, h);
            }
        }
        Value::Func(c) => {
            // Captured values are left out: equal closures still hash equally.
            h.write_u8(7);
            c.lambda.hash(h);
        }
    }
}

/// A fast non-cryptographic hasher for instance keys (the multiply-rotate scheme of
/// rustc's `FxHasher`). Keys come from program values, not from an adversary, and the
/// lookup sits on the hot path of every lambda call.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(c);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 56));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        self.hash
    }
}

pub(crate) type FxBuild = std::hash::BuildHasherDefault<FxHasher>;

/// Identifies one dynamic instance: a node plus the values of its free parameters.
#[derive(Debug)]
pub(crate) struct InstKey {
    pub node: NodeId,
    pub vals: Arc<[Value]>,
}

/// The hash of an instance key, from the node and borrowed values (so that lookups
/// need not build an [`InstKey`]).
pub(crate) fn key_hash<'a>(node: NodeId, vals: impl Iterator<Item = &'a Value>) -> u64 {
    let mut h = FxHasher::default();
    node.hash(&mut h);
    vals.for_each(|v| hash_value(v, &mut h));
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lang::ir::ParamId;
    use lang::value::Closure;
    use std::collections::hash_map::DefaultHasher;

    fn hash(v: &Value) -> u64 {
        let mut h = DefaultHasher::new();
        hash_value(v, &mut h);
        h.finish()
    }

    #[test]
    fn closures_with_equal_captures_are_the_same() {
        let env = |v: i64| Env::empty().bind(ParamId(0), Value::Int(v));
        let a = Value::Func(Closure { lambda: NodeId(3), env: env(1) });
        let b = Value::Func(Closure { lambda: NodeId(3), env: env(1) });
        let c = Value::Func(Closure { lambda: NodeId(3), env: env(2) });
        assert!(same(&a, &b));
        assert!(!same(&a, &c));
        assert_eq!(hash(&a), hash(&b));
    }

    #[test]
    fn key_hash_follows_same() {
        let a = [Value::Float(0.0), Value::str("x")];
        let b = [Value::Float(-0.0), Value::str("x")];
        assert_eq!(key_hash(NodeId(1), a.iter()), key_hash(NodeId(1), b.iter()));
        assert_ne!(key_hash(NodeId(1), a.iter()), key_hash(NodeId(2), a.iter()));
        let c = [Value::str("x"), Value::Float(0.0)];
        assert_ne!(key_hash(NodeId(1), a.iter()), key_hash(NodeId(1), c.iter()));
    }

    #[test]
    fn float_corner_cases() {
        assert!(same(&Value::Float(f64::NAN), &Value::Float(f64::NAN)));
        assert!(same(&Value::Float(0.0), &Value::Float(-0.0)));
        assert_eq!(hash(&Value::Float(0.0)), hash(&Value::Float(-0.0)));
        assert!(!same(&Value::Float(1.0), &Value::Int(1)));
    }
}
