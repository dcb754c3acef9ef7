//! The unified type of every function-graph node, each distinct type stored once: a large
//! program has hundreds of thousands of nodes but a handful of types.

use std::fmt;

use crate::types::Type;

/// Marks a node without a type (never reached by unification).
const UNTYPED: u32 = u32::MAX;

/// Node index → type, as an index into the program's distinct types.
#[derive(Clone, Default)]
pub struct NodeTypes {
    of: Vec<u32>,
    distinct: Vec<Type>,
    index: foldhash::HashMap<Type, u32>,
    /// The type given last: consecutive nodes mostly share one, found without hashing it.
    last: u32,
}

impl NodeTypes {
    /// `len` nodes, none typed yet.
    pub fn untyped(len: usize) -> NodeTypes {
        NodeTypes { of: vec![UNTYPED; len], ..NodeTypes::default() }
    }

    /// How many nodes there are room for (typed or not).
    pub fn len(&self) -> usize {
        self.of.len()
    }

    pub fn is_empty(&self) -> bool {
        self.of.is_empty()
    }

    /// The type of node `i`; `None` when it has none or is past the end.
    pub fn get(&self, i: usize) -> Option<&Type> {
        match self.of.get(i) {
            Some(&id) if id != UNTYPED => Some(&self.distinct[id as usize]),
            _ => None,
        }
    }

    /// Gives node `i` the type `ty` (`None`: untyped), growing the table when `i` is past
    /// its end.
    pub fn set(&mut self, i: usize, ty: Option<Type>) {
        if i >= self.of.len() {
            self.of.resize(i + 1, UNTYPED);
        }
        self.of[i] = match ty {
            None => UNTYPED,
            Some(ty) if self.distinct.get(self.last as usize) == Some(&ty) => self.last,
            Some(ty) => match self.index.get(&ty) {
                Some(&id) => {
                    self.last = id;
                    id
                }
                None => {
                    let id = self.distinct.len() as u32;
                    self.index.insert(ty.clone(), id);
                    self.distinct.push(ty);
                    self.last = id;
                    id
                }
            },
        };
    }

    /// Room for `len` nodes: new ones are untyped, ones past `len` are dropped.
    pub fn resize(&mut self, len: usize) {
        self.of.resize(len, UNTYPED);
    }

    /// Each node's type, in node order.
    pub fn iter(&self) -> impl Iterator<Item = Option<&Type>> + '_ {
        (0..self.of.len()).map(|i| self.get(i))
    }
}

/// Shown as the list of each node's type, as a `Vec<Option<Type>>` would be.
impl fmt::Debug for NodeTypes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_types_are_stored_once_and_read_back_per_node() {
        let mut types = NodeTypes::untyped(4);
        types.set(0, Some(Type::list(Type::Str)));
        types.set(2, Some(Type::list(Type::Str)));
        types.set(3, Some(Type::Int));
        assert_eq!(types.distinct.len(), 2);
        let read: Vec<_> = types.iter().map(|t| t.cloned()).collect();
        assert_eq!(read, vec![Some(Type::list(Type::Str)), None, Some(Type::list(Type::Str)), Some(Type::Int)]);
        // Past the end: untyped, and `set` grows the table.
        assert_eq!(types.get(9), None);
        types.set(5, Some(Type::Bool));
        assert_eq!((types.len(), types.get(4), types.get(5)), (6, None, Some(&Type::Bool)));
        // A type can be taken back.
        types.set(0, None);
        assert_eq!(types.get(0), None);
        assert_eq!(format!("{types:?}"), "[None, None, Some(List(Str)), Some(Int), None, Some(Bool)]");
    }
}
