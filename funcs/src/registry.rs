//! The registry of built-ins: explicit registration, one module per mcl package.

use crate::api::Builtin;
use lang::catalog::Catalog;
use lang::value::Value;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default)]
pub struct Registry {
    funcs: BTreeMap<String, Builtin>,
    constants: BTreeMap<String, Value>,
}

impl Registry {
    pub fn new() -> Registry {
        Registry::default()
    }

    /// The whole core library.
    pub fn core() -> Registry {
        let mut r = Registry::new();
        crate::core::register_all(&mut r);
        r
    }

    pub fn register(&mut self, b: Builtin) {
        self.funcs.insert(b.decl.name.clone(), b);
    }

    /// A global variable (without `$`), e.g. `const.res.file.state.exists`.
    pub fn constant(&mut self, name: &str, value: Value) {
        self.constants.insert(name.to_string(), value);
    }

    pub fn get(&self, name: &str) -> Option<&Builtin> {
        self.funcs.get(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Builtin> {
        self.funcs.values()
    }

    /// What the type checker needs: every signature and constant (resource kinds are
    /// added by the `resources` crate).
    pub fn catalog(&self) -> Catalog {
        let mut c = Catalog::new();
        for b in self.funcs.values() {
            c.add_func(b.decl.clone());
        }
        for (n, v) in &self.constants {
            c.add_constant(n.clone(), v.clone());
        }
        c
    }
}
