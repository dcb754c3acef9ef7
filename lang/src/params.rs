//! `ParamMap`: a resource's param values by name, sorted, each name once. What a
//! `BTreeMap<String, Value>` offers the interpreter and the resource kinds, in a slice of
//! exactly its entries: a B-tree's smallest node holds room for eleven, about 540 bytes
//! for a resource that sets three params, which at 100,000 resources was the largest part
//! of the interpretation's peak.

use std::collections::BTreeMap;

use crate::value::Value;

/// Up to this many params, a lookup scans them: names of different lengths (most of
/// them) differ without comparing a byte, where a binary search compares bytes at every
/// step. A kind's params are decoded by looking up each field it declares, mostly absent.
const SCANNED: usize = 8;

/// The value of `name` among `pairs`, sorted by name, each name once: what [`ParamMap`]
/// and every other sorted list of params look up through.
pub fn lookup<'a, K: AsRef<str>>(pairs: &'a [(K, Value)], name: &str) -> Option<&'a Value> {
    if pairs.len() <= SCANNED {
        return pairs.iter().find(|(k, _)| k.as_ref() == name).map(|(_, v)| v);
    }
    pairs.binary_search_by(|(k, _)| k.as_ref().cmp(name)).ok().map(|at| &pairs[at].1)
}

/// Param values by name, in name order (as a `BTreeMap` iterates).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParamMap(Vec<(String, Value)>);

impl ParamMap {
    pub fn new() -> ParamMap {
        ParamMap(Vec::new())
    }

    /// The map of `entries`, already sorted by name, each name once.
    pub fn from_sorted(entries: Vec<(String, Value)>) -> ParamMap {
        debug_assert!(entries.windows(2).all(|w| w[0].0 < w[1].0), "sorted, each name once");
        ParamMap(entries)
    }

    fn find(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(name))
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        lookup(&self.0, name)
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Sets `name`; returns the value it replaced.
    pub fn insert(&mut self, name: String, value: Value) -> Option<Value> {
        match self.find(&name) {
            Ok(at) => Some(std::mem::replace(&mut self.0[at].1, value)),
            Err(at) => {
                self.0.insert(at, (name, value));
                None
            }
        }
    }

    pub fn remove(&mut self, name: &str) -> Option<Value> {
        self.find(name).ok().map(|at| self.0.remove(at).1)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> Iter<'_> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(k, _)| k)
    }
}

/// What iterating `&ParamMap` gives: `(name, value)` in name order.
pub type Iter<'a> = std::iter::Map<std::slice::Iter<'a, (String, Value)>, fn(&(String, Value)) -> (&String, &Value)>;

impl<'a> IntoIterator for &'a ParamMap {
    type Item = (&'a String, &'a Value);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl IntoIterator for ParamMap {
    type Item = (String, Value);
    type IntoIter = std::vec::IntoIter<(String, Value)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl Extend<(String, Value)> for ParamMap {
    fn extend<I: IntoIterator<Item = (String, Value)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

/// The last value of a name given twice wins, as with a `BTreeMap`.
impl FromIterator<(String, Value)> for ParamMap {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(iter: I) -> ParamMap {
        let mut entries: Vec<(String, Value)> = iter.into_iter().collect();
        // Stable: among equal names the last given stays last, and is the one kept.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<(String, Value)> = Vec::with_capacity(entries.len());
        for entry in entries {
            match out.last_mut() {
                Some(last) if last.0 == entry.0 => *last = entry,
                _ => out.push(entry),
            }
        }
        ParamMap(out)
    }
}

impl From<BTreeMap<String, Value>> for ParamMap {
    fn from(map: BTreeMap<String, Value>) -> ParamMap {
        ParamMap(map.into_iter().collect())
    }
}

impl<const N: usize> From<[(String, Value); N]> for ParamMap {
    fn from(entries: [(String, Value); N]) -> ParamMap {
        entries.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_as_a_sorted_map_whose_last_setting_wins() {
        let mut m: ParamMap =
            [("b", 1), ("a", 2), ("b", 3)].into_iter().map(|(k, n)| (k.to_string(), Value::Int(n))).collect();
        assert_eq!(m.keys().map(String::as_str).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(m.get("b"), Some(&Value::Int(3)));
        assert_eq!(m.insert("c".into(), Value::Int(4)), None);
        assert_eq!(m.insert("a".into(), Value::Int(5)), Some(Value::Int(2)));
        assert_eq!(m.remove("b"), Some(Value::Int(3)));
        assert!(!m.contains_key("b") && m.contains_key("c"));
        let pairs: Vec<(&String, &Value)> = m.iter().collect();
        assert_eq!(pairs, [(&"a".to_string(), &Value::Int(5)), (&"c".to_string(), &Value::Int(4))]);
        let as_map: BTreeMap<String, Value> = m.clone().into_iter().collect();
        assert_eq!(ParamMap::from(as_map), m);
    }

    #[test]
    fn finds_every_name_whether_scanned_or_searched() {
        for n in [1, SCANNED, SCANNED + 1, 40] {
            let names: Vec<String> = (0..n).map(|i| "p".repeat(i % 5 + 1) + &i.to_string()).collect();
            let m: ParamMap = names.iter().enumerate().map(|(i, k)| (k.clone(), Value::Int(i as i64))).collect();
            for (i, k) in names.iter().enumerate() {
                assert_eq!(m.get(k), Some(&Value::Int(i as i64)), "{k} of {n}");
            }
            assert_eq!(m.get("p"), None);
            assert_eq!(m.get("absent"), None);
            assert!(!m.contains_key("pp"));
        }
    }
}
