//! The union-find table of type variables: classes of variables that must have equal
//! types, each with at most one structural shape whose children are again variables.
//!
//! Knows nothing about the function graph; [`super::infer`] generates the constraints and
//! turns [`Mismatch`]es into diagnostics. Everything is iterative (no recursion on the
//! length of a chain) and `find` compresses paths, so large graphs stay linear.

use crate::span::Span;
use crate::types::Type;
use crate::value::Value;
use std::collections::HashMap;

/// A type variable: an index into the table.
pub(crate) type Var = u32;

/// The outermost constructor of a class's type; children are variables.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Shape {
    Bool,
    Str,
    Int,
    Float,
    List(Var),
    Map(Var, Var),
    Struct(Vec<(String, Var)>),
    Func(Vec<(String, Var)>, Var),
}

impl Shape {
    pub(crate) fn kind_name(&self) -> &'static str {
        match self {
            Shape::Bool => "bool",
            Shape::Str => "str",
            Shape::Int => "int",
            Shape::Float => "float",
            Shape::List(_) => "list",
            Shape::Map(..) => "map",
            Shape::Struct(_) => "struct",
            Shape::Func(..) => "func",
        }
    }

    /// The shape of a type that has no children (`bool`, `str`, `int`, `float`).
    pub(crate) fn leaf(ty: &Type) -> Option<Shape> {
        match ty {
            Type::Bool => Some(Shape::Bool),
            Type::Str => Some(Shape::Str),
            Type::Int => Some(Shape::Int),
            Type::Float => Some(Shape::Float),
            _ => None,
        }
    }

    /// The shape of a scalar value (`bool`, `str`, `int`, `float`), which has no children.
    pub(crate) fn of_scalar(value: &Value) -> Option<Shape> {
        match value {
            Value::Bool(_) => Some(Shape::Bool),
            Value::Str(_) => Some(Shape::Str),
            Value::Int(_) => Some(Shape::Int),
            Value::Float(_) => Some(Shape::Float),
            _ => None,
        }
    }

    pub(crate) fn is_leaf(&self) -> bool {
        matches!(self, Shape::Bool | Shape::Str | Shape::Int | Shape::Float)
    }

    fn same_constructor(&self, other: &Shape) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }

    /// The child variables, in order.
    fn children(&self) -> Vec<Var> {
        match self {
            Shape::Bool | Shape::Str | Shape::Int | Shape::Float => Vec::new(),
            Shape::List(e) => vec![*e],
            Shape::Map(k, v) => vec![*k, *v],
            Shape::Struct(fs) => fs.iter().map(|(_, v)| *v).collect(),
            Shape::Func(args, r) => args.iter().map(|(_, v)| *v).chain(std::iter::once(*r)).collect(),
        }
    }
}

/// Why two classes could not be merged. `expected`/`found` are the sides as the failing
/// constraint named them (possibly nested inside the types it was given).
#[derive(Clone, Debug)]
pub(crate) enum Mismatch {
    /// Two different constructors met (`str != int`).
    Kinds {
        expected: Var,
        found: Var,
    },
    StructFieldCount {
        expected: Var,
        found: Var,
    },
    StructFields {
        expected: Var,
        found: Var,
    },
    FuncArity {
        expected: Var,
        found: Var,
    },
    /// Binding a variable to a type that contains it (an infinite type).
    Occurs {
        var: Var,
        ty: Var,
    },
}

/// How to take back one merge of [`Table::unify`]: the child's own origin and flags were
/// never changed, so only the root's state and both shapes are kept.
struct Undo {
    root: Var,
    child: Var,
    rank: u8,
    flags: u8,
    origin: Option<Span>,
    root_shape: Option<Shape>,
    child_shape: Option<Shape>,
}

/// Per-class flags, OR-ed on union.
const VARIANT_OK: u8 = 1;
const POISONED: u8 = 2;

#[derive(Default)]
pub(crate) struct Table {
    parent: Vec<Var>,
    rank: Vec<u8>,
    /// Valid at roots only.
    shape: Vec<Option<Shape>>,
    /// Valid at roots only: the span of the constraint that first gave the class a shape.
    origin: Vec<Option<Span>>,
    flags: Vec<u8>,
    /// Scratch for the occurs check: `seen[v] == stamp` marks a visited variable.
    seen: Vec<u32>,
    stamp: u32,
}

impl Table {
    /// A table of `n` unconstrained variables, with room for some more: the function graph
    /// has a variable per node and per param, and the few made beyond them (a call's
    /// signature, an empty list's element) must not double every vector at the peak of a
    /// large program's compile.
    pub(crate) fn with_vars(n: usize) -> Table {
        let mut t = Table::default();
        let room = n + n / 8 + 16;
        t.parent.reserve_exact(room);
        t.rank.reserve_exact(room);
        t.shape.reserve_exact(room);
        t.origin.reserve_exact(room);
        t.flags.reserve_exact(room);
        t.seen.reserve_exact(room);
        for _ in 0..n {
            t.fresh();
        }
        t
    }

    pub(crate) fn fresh(&mut self) -> Var {
        let v = self.parent.len() as Var;
        self.parent.push(v);
        self.rank.push(0);
        self.shape.push(None);
        self.origin.push(None);
        self.flags.push(0);
        self.seen.push(0);
        v
    }

    pub(crate) fn shaped(&mut self, shape: Shape, origin: Span) -> Var {
        let v = self.fresh();
        self.shape[v as usize] = Some(shape);
        self.origin[v as usize] = Some(origin);
        v
    }

    /// Gives `v`'s class the childless `shape` as [`Table::shaped`] plus [`Table::unify`]
    /// would (the class takes `origin`), without a variable for the shape: most
    /// constraints of a large program are of this kind (a string field, a string constant),
    /// and a variable each doubled the table. False, changing nothing, when the class has
    /// another shape: the caller then takes the general path, which reports the mismatch.
    pub(crate) fn constrain_leaf(&mut self, v: Var, shape: &Shape, origin: Span) -> bool {
        debug_assert!(shape.is_leaf());
        let r = self.find(v) as usize;
        match &self.shape[r] {
            Some(s) if s != shape => return false,
            Some(_) => {}
            None => self.shape[r] = Some(shape.clone()),
        }
        self.origin[r] = Some(origin);
        true
    }

    pub(crate) fn find(&mut self, v: Var) -> Var {
        let mut root = v;
        while self.parent[root as usize] != root {
            root = self.parent[root as usize];
        }
        let mut cur = v;
        while self.parent[cur as usize] != root {
            let next = self.parent[cur as usize];
            self.parent[cur as usize] = root;
            cur = next;
        }
        root
    }

    pub(crate) fn shape(&mut self, v: Var) -> Option<&Shape> {
        let r = self.find(v);
        self.shape[r as usize].as_ref()
    }

    pub(crate) fn origin(&mut self, v: Var) -> Option<Span> {
        let r = self.find(v);
        self.origin[r as usize]
    }

    pub(crate) fn kind_name(&mut self, v: Var) -> &'static str {
        self.shape(v).map_or("?", Shape::kind_name)
    }

    /// Marks a class as satisfied by `variant`: when nothing else fixes its type it
    /// becomes `variant` instead of being ambiguous.
    pub(crate) fn allow_variant(&mut self, v: Var) {
        let r = self.find(v) as usize;
        self.flags[r] |= VARIANT_OK;
    }

    /// Marks a class as the result of an error already reported, so that it does not
    /// also produce an ambiguity error.
    pub(crate) fn poison(&mut self, v: Var) {
        let r = self.find(v) as usize;
        self.flags[r] |= POISONED;
    }

    /// Poisons a class and every class inside its type.
    pub(crate) fn poison_deep(&mut self, v: Var) {
        let mut stack = vec![v];
        while let Some(v) = stack.pop() {
            let r = self.find(v) as usize;
            if self.flags[r] & POISONED != 0 {
                continue;
            }
            self.flags[r] |= POISONED;
            if let Some(s) = &self.shape[r] {
                stack.extend(s.children());
            }
        }
    }

    pub(crate) fn is_poisoned(&mut self, v: Var) -> bool {
        let r = self.find(v) as usize;
        self.flags[r] & POISONED != 0
    }

    /// Builds variables for a signature or annotation type. `Var(n)`s are looked up in
    /// (or added to) `subst`, so one map per call site instantiates a signature freshly.
    pub(crate) fn instantiate(&mut self, ty: &Type, subst: &mut HashMap<u32, Var>, origin: Span) -> Var {
        let shape = match ty {
            Type::Bool => Shape::Bool,
            // The scope stage makes every enum a `str`; one that reached here is one still.
            Type::Str | Type::Enum(_) => Shape::Str,
            Type::Int => Shape::Int,
            Type::Float => Shape::Float,
            Type::Variant => {
                let v = self.fresh();
                self.allow_variant(v);
                return v;
            }
            Type::Named(_) => {
                // The scope stage resolves every name or reports it: stay quiet here.
                let v = self.fresh();
                self.poison(v);
                return v;
            }
            Type::Var(n) => {
                if let Some(v) = subst.get(n) {
                    return *v;
                }
                let v = self.fresh();
                subst.insert(*n, v);
                return v;
            }
            Type::List(e) => Shape::List(self.instantiate(e, subst, origin)),
            Type::Map(k, v) => {
                let k = self.instantiate(k, subst, origin);
                Shape::Map(k, self.instantiate(v, subst, origin))
            }
            Type::Struct(fs) => {
                Shape::Struct(fs.iter().map(|(n, t)| (n.clone(), self.instantiate(t, subst, origin))).collect())
            }
            Type::Func(args, ret) => {
                let args = args.iter().map(|(n, t)| (n.clone(), self.instantiate(t, subst, origin))).collect();
                Shape::Func(args, self.instantiate(ret, subst, origin))
            }
        };
        self.shaped(shape, origin)
    }

    /// Makes `expected` and `found` the same type, or changes nothing: on a mismatch every
    /// merge this call made is undone, so the message can show both sides as they were.
    pub(crate) fn unify(&mut self, expected: Var, found: Var) -> Result<(), Mismatch> {
        let mut trail = Vec::new();
        let out = self.unify_inner(expected, found, &mut trail);
        if out.is_err() {
            for undo in trail.into_iter().rev() {
                self.undo(undo);
            }
        }
        out
    }

    fn unify_inner(&mut self, expected: Var, found: Var, trail: &mut Vec<Undo>) -> Result<(), Mismatch> {
        let mut stack = vec![(expected, found)];
        while let Some((a, b)) = stack.pop() {
            // No path compression here: it would survive an undo of the links it follows.
            let ra = self.root(a);
            let rb = self.root(b);
            if ra == rb {
                continue;
            }
            let sa = self.shape[ra as usize].take();
            let sb = self.shape[rb as usize].take();
            match (sa, sb) {
                (None, None) => {
                    let o = self.origin[ra as usize].or(self.origin[rb as usize]);
                    self.link(ra, rb, None, None, None, o, trail);
                }
                (Some(s), None) => {
                    if self.occurs(rb, &s) {
                        self.shape[ra as usize] = Some(s);
                        return Err(Mismatch::Occurs { var: b, ty: a });
                    }
                    let o = self.origin[ra as usize];
                    self.link(ra, rb, Some(s.clone()), None, Some(s), o, trail);
                }
                (None, Some(s)) => {
                    if self.occurs(ra, &s) {
                        self.shape[rb as usize] = Some(s);
                        return Err(Mismatch::Occurs { var: a, ty: b });
                    }
                    let o = self.origin[rb as usize];
                    self.link(ra, rb, None, Some(s.clone()), Some(s), o, trail);
                }
                (Some(s1), Some(s2)) => {
                    let err = if !s1.same_constructor(&s2) {
                        Some(Mismatch::Kinds { expected: a, found: b })
                    } else {
                        match (&s1, &s2) {
                            (Shape::Struct(f1), Shape::Struct(f2)) if f1.len() != f2.len() => {
                                Some(Mismatch::StructFieldCount { expected: a, found: b })
                            }
                            (Shape::Struct(f1), Shape::Struct(f2))
                                if f1.iter().zip(f2).any(|((n1, _), (n2, _))| n1 != n2) =>
                            {
                                Some(Mismatch::StructFields { expected: a, found: b })
                            }
                            (Shape::Func(a1, _), Shape::Func(a2, _)) if a1.len() != a2.len() => {
                                Some(Mismatch::FuncArity { expected: a, found: b })
                            }
                            _ => None,
                        }
                    };
                    if let Some(err) = err {
                        self.shape[ra as usize] = Some(s1);
                        self.shape[rb as usize] = Some(s2);
                        return Err(err);
                    }
                    let pairs: Vec<(Var, Var)> = s1.children().into_iter().zip(s2.children()).collect();
                    let o = self.origin[ra as usize];
                    let merged = merge_arg_names(s1.clone(), &s2);
                    self.link(ra, rb, Some(s1), Some(s2), Some(merged), o, trail);
                    stack.extend(pairs.into_iter().rev());
                }
            }
        }
        Ok(())
    }

    /// The root of `v`'s class without compressing the path.
    fn root(&self, v: Var) -> Var {
        let mut r = v;
        while self.parent[r as usize] != r {
            r = self.parent[r as usize];
        }
        r
    }

    /// Merges the classes `ra` and `rb` (whose shapes were taken out: `shape_a`/`shape_b`)
    /// into one with `shape`, recording how to undo it.
    #[allow(clippy::too_many_arguments)]
    fn link(
        &mut self,
        ra: Var,
        rb: Var,
        shape_a: Option<Shape>,
        shape_b: Option<Shape>,
        shape: Option<Shape>,
        origin: Option<Span>,
        trail: &mut Vec<Undo>,
    ) {
        let a_is_root = self.rank[ra as usize] >= self.rank[rb as usize];
        let (root, child) = if a_is_root { (ra, rb) } else { (rb, ra) };
        let (root_shape, child_shape) = if a_is_root { (shape_a, shape_b) } else { (shape_b, shape_a) };
        trail.push(Undo {
            root,
            child,
            rank: self.rank[root as usize],
            flags: self.flags[root as usize],
            origin: self.origin[root as usize],
            root_shape,
            child_shape,
        });
        if self.rank[root as usize] == self.rank[child as usize] {
            self.rank[root as usize] += 1;
        }
        self.parent[child as usize] = root;
        self.flags[root as usize] |= self.flags[child as usize];
        self.shape[root as usize] = shape;
        self.shape[child as usize] = None;
        self.origin[root as usize] = origin;
    }

    fn undo(&mut self, u: Undo) {
        self.parent[u.child as usize] = u.child;
        self.rank[u.root as usize] = u.rank;
        self.flags[u.root as usize] = u.flags;
        self.origin[u.root as usize] = u.origin;
        self.shape[u.root as usize] = u.root_shape;
        self.shape[u.child as usize] = u.child_shape;
    }

    /// Whether the class `root` occurs anywhere inside `shape`.
    fn occurs(&mut self, root: Var, shape: &Shape) -> bool {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.seen.iter_mut().for_each(|s| *s = 0);
            self.stamp = 1;
        }
        let mut stack = shape.children();
        while let Some(v) = stack.pop() {
            let r = self.root(v);
            if r == root {
                return true;
            }
            if self.seen[r as usize] == self.stamp {
                continue;
            }
            self.seen[r as usize] = self.stamp;
            if let Some(s) = &self.shape[r as usize] {
                stack.extend(s.children());
            }
        }
        false
    }

    /// The type of a variable as far as it is known: unresolved classes print as
    /// `Var(root)` (or `variant` when allowed), an infinite type stops at `Var`.
    pub(crate) fn resolve(&mut self, v: Var) -> Type {
        let mut in_progress = Vec::new();
        self.resolve_inner(v, &mut in_progress)
    }

    fn resolve_inner(&mut self, v: Var, in_progress: &mut Vec<Var>) -> Type {
        let r = self.find(v);
        if in_progress.contains(&r) {
            return Type::Var(r);
        }
        let Some(shape) = self.shape[r as usize].clone() else {
            return if self.flags[r as usize] & VARIANT_OK != 0 { Type::Variant } else { Type::Var(r) };
        };
        in_progress.push(r);
        let ty = match shape {
            Shape::Bool => Type::Bool,
            Shape::Str => Type::Str,
            Shape::Int => Type::Int,
            Shape::Float => Type::Float,
            Shape::List(e) => Type::list(self.resolve_inner(e, in_progress)),
            Shape::Map(k, v) => {
                let k = self.resolve_inner(k, in_progress);
                Type::map(k, self.resolve_inner(v, in_progress))
            }
            Shape::Struct(fs) => {
                Type::Struct(fs.into_iter().map(|(n, v)| (n, self.resolve_inner(v, in_progress))).collect())
            }
            Shape::Func(args, ret) => {
                let args = args.into_iter().map(|(n, v)| (n, self.resolve_inner(v, in_progress))).collect();
                Type::Func(args, Box::new(self.resolve_inner(ret, in_progress)))
            }
        };
        in_progress.pop();
        ty
    }
}

/// Keeps the argument names of function types readable: a positional name (`0`) is
/// replaced by a real one from the other side.
fn merge_arg_names(s1: Shape, s2: &Shape) -> Shape {
    match (s1, s2) {
        (Shape::Func(mut a1, r), Shape::Func(a2, _)) => {
            for ((n1, _), (n2, _)) in a1.iter_mut().zip(a2) {
                let positional = |n: &str| n.is_empty() || n.chars().all(|c| c.is_ascii_digit());
                if positional(n1) && !positional(n2) {
                    n1.clone_from(n2);
                }
            }
            Shape::Func(a1, r)
        }
        (s1, _) => s1,
    }
}

/// Renumbers the variables of types shown together in one message to `?1`, `?2`, ... in
/// order of appearance, so messages do not leak internal numbers.
pub(crate) fn rename_vars(types: &mut [Type]) {
    let mut map = HashMap::new();
    for t in types {
        rename(t, &mut map);
    }
}

fn rename(t: &mut Type, map: &mut HashMap<u32, u32>) {
    match t {
        Type::Var(n) => {
            let next = map.len() as u32 + 1;
            *n = *map.entry(*n).or_insert(next);
        }
        Type::List(e) => rename(e, map),
        Type::Map(k, v) => {
            rename(k, map);
            rename(v, map);
        }
        Type::Struct(fs) => fs.iter_mut().for_each(|(_, t)| rename(t, map)),
        Type::Func(args, r) => {
            args.iter_mut().for_each(|(_, t)| rename(t, map));
            rename(r, map);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::parse_type;

    fn ty(table: &mut Table, s: &str) -> Var {
        table.instantiate(&parse_type(s).unwrap(), &mut HashMap::new(), Span::default())
    }

    #[test]
    fn unifies_structures_through_variables() {
        let mut t = Table::default();
        let a = ty(&mut t, "[]?1");
        let b = ty(&mut t, "[]int");
        t.unify(a, b).unwrap();
        assert_eq!(t.resolve(a), Type::list(Type::Int));
    }

    #[test]
    fn reports_kind_conflicts_with_sides() {
        let mut t = Table::default();
        let a = ty(&mut t, "map{str: int}");
        let b = ty(&mut t, "map{str: str}");
        match t.unify(a, b) {
            Err(Mismatch::Kinds { expected, found }) => {
                assert_eq!(t.kind_name(expected), "int");
                assert_eq!(t.kind_name(found), "str");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn struct_shapes_and_func_arity() {
        let mut t = Table::default();
        let a = ty(&mut t, "struct{a int; b int}");
        let b = ty(&mut t, "struct{b int; a int}");
        assert!(matches!(t.unify(a, b), Err(Mismatch::StructFields { .. })));
        let c = ty(&mut t, "struct{a int}");
        assert!(matches!(t.unify(a, c), Err(Mismatch::StructFieldCount { .. })));
        let f = ty(&mut t, "func(int) int");
        let g = ty(&mut t, "func(int, int) int");
        assert!(matches!(t.unify(f, g), Err(Mismatch::FuncArity { .. })));
    }

    #[test]
    fn occurs_check_rejects_infinite_types() {
        let mut t = Table::default();
        let v = t.fresh();
        let l = t.shaped(Shape::List(v), Span::default());
        assert!(matches!(t.unify(v, l), Err(Mismatch::Occurs { .. })));
        // The failed binding leaves both classes apart and resolvable.
        assert!(matches!(t.resolve(l), Type::List(_)));
    }

    #[test]
    fn variant_is_a_weak_default() {
        let mut t = Table::default();
        let v = ty(&mut t, "variant");
        assert_eq!(t.resolve(v), Type::Variant);
        let w = t.fresh();
        t.unify(v, w).unwrap();
        let i = ty(&mut t, "int");
        t.unify(w, i).unwrap();
        assert_eq!(t.resolve(v), Type::Int);
    }

    #[test]
    fn long_chains_do_not_recurse() {
        let mut t = Table::default();
        let vars: Vec<Var> = (0..200_000).map(|_| t.fresh()).collect();
        for w in vars.windows(2) {
            t.unify(w[1], w[0]).unwrap();
        }
        let s = ty(&mut t, "str");
        t.unify(vars[0], s).unwrap();
        assert_eq!(t.resolve(vars[199_999]), Type::Str);
    }

    #[test]
    fn renames_variables_in_order() {
        let mut types = vec![Type::list(Type::Var(7)), Type::map(Type::Var(3), Type::Var(7))];
        rename_vars(&mut types);
        assert_eq!(types[0].to_string(), "[]?1");
        assert_eq!(types[1].to_string(), "map{?2: ?1}");
    }
}
