//! The catalog: what `lang` knows about built-in functions and resource kinds, given to it
//! as data. `lang` never names a concrete function or kind; `funcs` and `resources` fill
//! a `Catalog` and the app passes it in.

use crate::types::Type;
use crate::value::Value;
use std::collections::BTreeMap;

/// What a call site looks like before unification, for [`FuncDecl::infer`] hooks.
#[derive(Clone, Debug)]
pub struct CallSite {
    /// One entry per argument: its value when statically known (a literal, or a bind of a
    /// constant expression), else `None`.
    pub args: Vec<Option<Value>>,
}

/// Builds a call-site-specific signature (e.g. `fmt.printf` from its format string).
/// `Err` is the reason, reported as ``func `NAME` infer error: REASON``.
pub type InferFn = fn(&CallSite) -> Result<Type, String>;

/// Rejects a solved instantiation (e.g. `len` of an int). `Err` is the reason, reported as
/// `error setting type: ..., error: REASON`.
pub type CheckFn = fn(&Type) -> Result<(), String>;

/// A built-in function as the type checker sees it.
#[derive(Clone, Debug)]
pub struct FuncDecl {
    /// Full name: `len`, `fmt.printf`, `golang/strings.join`.
    pub name: String,
    /// Polymorphic signatures (`Type::Func` with `Type::Var`s), at most one per arity.
    /// Empty when `infer` builds the signature.
    pub sigs: Vec<Type>,
    pub infer: Option<InferFn>,
    pub check: Option<CheckFn>,
    /// One line for `did you mean` and `tend check --explain` style output.
    pub doc: &'static str,
}

/// A resource parameter or send field.
#[derive(Clone, Debug)]
pub struct ParamDecl {
    pub name: String,
    pub ty: Type,
    /// The only values the kind accepts, as written in mcl (empty: any value of `ty`).
    /// `tend check` rejects a constant outside them.
    pub allowed: Vec<String>,
    /// The value leaving the param out means, when the kind says (a resource that writes it
    /// gets a warning).
    pub default: Option<Value>,
    /// The kind's automatic edges read it: a new value may change the resource's edges.
    pub edges: bool,
}

impl ParamDecl {
    /// A param that takes any value of its type.
    pub fn new(name: impl Into<String>, ty: Type) -> ParamDecl {
        ParamDecl { name: name.into(), ty, allowed: Vec::new(), default: None, edges: false }
    }

    /// A param the kind's automatic edges read.
    pub fn read_by_edges(mut self) -> ParamDecl {
        self.edges = true;
        self
    }

    /// A param that means the zero value of its type (`""`, `false`, `0`, `[]`) when left out.
    pub fn zero_when_absent(mut self) -> ParamDecl {
        self.default = Some(Value::zero(&self.ty));
        self
    }

    /// A param that takes only `allowed` (strings).
    pub fn with_allowed(mut self, allowed: impl IntoIterator<Item = impl Into<String>>) -> ParamDecl {
        self.allowed = allowed.into_iter().map(Into::into).collect();
        self
    }
}

/// A resource kind as the type checker and interpreter see it.
#[derive(Clone, Debug)]
pub struct ResourceDecl {
    pub kind: String,
    /// Settable fields, in the order `lang` should report them.
    pub params: Vec<ParamDecl>,
    /// Fields it can send over send/recv edges (empty: cannot send).
    pub sends: Vec<ParamDecl>,
    /// Whether its params can receive over send/recv edges.
    pub can_recv: bool,
}

impl ResourceDecl {
    pub fn param(&self, name: &str) -> Option<&ParamDecl> {
        self.params.iter().find(|p| p.name == name)
    }
    pub fn send(&self, name: &str) -> Option<&ParamDecl> {
        self.sends.iter().find(|p| p.name == name)
    }
}

/// Every function, resource kind and global constant a program may use.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    funcs: BTreeMap<String, FuncDecl>,
    resources: BTreeMap<String, ResourceDecl>,
    /// Global variables without the `$`: `hostname`, `const.res.file.state.exists`.
    constants: BTreeMap<String, Value>,
    /// Each kind's own validation, run by `tend check` on resources whose params are all
    /// constants (see [`Validator`]).
    validator: Option<Validator>,
}

/// A kind's validation of a resource whose name and params are known at compile time:
/// `kind`, `name`, `params` in, why the kind refuses them out (`None`: it accepts them,
/// or the kind is not one the validator knows).
pub type Validator = fn(kind: &str, name: &str, params: &crate::params::ParamMap) -> Option<Invalid>;

/// Why a kind refuses a resource's params.
#[derive(Clone, Debug, PartialEq)]
pub struct Invalid {
    /// The field at fault, when the kind says.
    pub field: Option<String>,
    pub message: String,
    /// More help (the normal form of a refused path).
    pub note: Option<String>,
    /// The kind could not even build the resource (a value out of its field's range), as
    /// opposed to refusing what it built.
    pub building: bool,
}

impl Catalog {
    pub fn new() -> Catalog {
        Catalog::default()
    }

    pub fn add_func(&mut self, decl: FuncDecl) {
        self.funcs.insert(decl.name.clone(), decl);
    }
    pub fn add_resource(&mut self, decl: ResourceDecl) {
        self.resources.insert(decl.kind.clone(), decl);
    }
    pub fn add_constant(&mut self, name: impl Into<String>, value: Value) {
        self.constants.insert(name.into(), value);
    }
    /// Has `tend check` run each kind's validation on constant resources.
    pub fn set_validator(&mut self, validator: Validator) {
        self.validator = Some(validator);
    }
    /// No validation of constant resources at compile time: for `tend run`, which
    /// validates every resource when it builds the graph anyway.
    pub fn clear_validator(&mut self) {
        self.validator = None;
    }
    pub fn validator(&self) -> Option<Validator> {
        self.validator
    }

    pub fn func(&self, name: &str) -> Option<&FuncDecl> {
        self.funcs.get(name)
    }
    pub fn resource(&self, kind: &str) -> Option<&ResourceDecl> {
        self.resources.get(kind)
    }
    pub fn constant(&self, name: &str) -> Option<&Value> {
        self.constants.get(name)
    }
    pub fn funcs(&self) -> impl Iterator<Item = &FuncDecl> {
        self.funcs.values()
    }
    pub fn resources(&self) -> impl Iterator<Item = &ResourceDecl> {
        self.resources.values()
    }
    pub fn constants(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.constants.iter()
    }

    /// Whether `import "PKG"` names a system package: some function is called `PKG.x`.
    pub fn has_package(&self, pkg: &str) -> bool {
        let prefix = format!("{pkg}.");
        self.funcs.range(prefix.clone()..).next().is_some_and(|(k, _)| k.starts_with(&prefix))
    }

    /// Every system package (`strings`, `golang/strings`, …).
    pub fn packages(&self) -> std::collections::BTreeSet<&str> {
        self.funcs.keys().filter_map(|k| k.rsplit_once('.').map(|(pkg, _)| pkg)).collect()
    }

    /// The functions of a system package, without the `PKG.` prefix.
    pub fn package_funcs<'a>(&'a self, pkg: &str) -> impl Iterator<Item = (&'a str, &'a FuncDecl)> + 'a {
        let prefix = format!("{pkg}.");
        let len = prefix.len();
        self.funcs.range(prefix.clone()..).take_while(move |(k, _)| k.starts_with(&prefix)).filter_map(move |(k, d)| {
            let rest = &k[len..];
            (!rest.contains('.')).then_some((rest, d))
        })
    }
}
