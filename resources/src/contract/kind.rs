//! What a resource kind is to the rest of the crate: one [`Kind`] value, defined in the
//! kind's own module beside its implementation (its name, its params and send fields as
//! the type checker sees them, its constructor) and registered in [`crate::KINDS`]. The
//! catalog's declarations ([`declare`]) and [`crate::build_with`] both read that list.
//!
//! Param and send types are mcl type texts. Go widths collapse the mgmt way: every
//! int/uint width is `int`, float32/64 is `float`, pointers are transparent,
//! `interface{}` is `variant`.

use lang::params::ParamMap;

use engine::Resource;
use lang::catalog::{Catalog, ParamDecl, ResourceDecl};
use lang::types::{Type, parse_type};

use crate::contract::params::BuildError;
use crate::machine::Machine;

/// Builds a resource of a kind from its params, against a host's backends and services.
pub type BuildFn = fn(&Machine, &str, &ParamMap) -> Result<Box<dyn Resource>, BuildError>;

/// One resource kind.
pub struct Kind {
    /// The kind as written in mcl: `file`, `http:server:ui`.
    pub name: &'static str,
    /// Settable params, `(name, mcl type text, allowed values)`, in the order errors list
    /// them.
    pub params: &'static [crate::contract::typed::Field],
    /// Fields it can send over send/recv edges (empty: cannot send).
    pub sends: &'static [(&'static str, &'static str)],
    /// Whether it can receive over send/recv edges.
    pub can_recv: bool,
    /// Its automatic edges: what it provides others and what it requires.
    pub autoedges: crate::contract::autoedge::Rules,
    /// Its constructor: decodes and type-checks the params.
    pub build: BuildFn,
    /// What it is in a graph beyond one resource built alone (see [`InGraph`]).
    pub in_graph: InGraph,
}

/// The place a resource claims, from its name and params (see [`InGraph::claims`]).
pub type ClaimFn = for<'a> fn(&'a str, &'a ParamMap) -> std::borrow::Cow<'a, str>;

/// Which resources of a graph group into which: member vertex -> its group's vertex (see
/// [`InGraph::groups`]).
pub type GroupsFn = fn(&[GroupRes<'_>]) -> std::collections::BTreeMap<usize, usize>;

/// A vertex of a graph, as a grouping reads it: kind, name, params, `Meta:autogroup`.
pub type GroupRes<'a> = (&'a str, &'a str, &'a ParamMap, bool);

/// Builds a resource that belongs to a group (the group itself, or a member of one).
pub type GroupedBuildFn = fn(&Machine, &Grouped<'_>) -> Result<Box<dyn Resource>, BuildError>;

/// A vertex in a graph whose groups are known: what a [`GroupedBuildFn`] reads.
pub struct Grouped<'a> {
    pub graph: &'a lang::resgraph::ResGraph,
    /// The vertex to build.
    pub at: usize,
    /// Member vertex -> its group's vertex, for the whole graph.
    pub groups: &'a std::collections::BTreeMap<usize, usize>,
}

impl Grouped<'_> {
    /// The vertices grouped into the one to build.
    pub fn members(&self) -> impl Iterator<Item = &lang::resgraph::ResVertex> {
        self.groups.iter().filter(|(_, g)| **g == self.at).map(|(m, _)| &self.graph.vertices[*m])
    }

    /// The vertex the one to build is grouped into, if any.
    pub fn group(&self) -> Option<&lang::resgraph::ResVertex> {
        self.groups.get(&self.at).map(|g| &self.graph.vertices[*g])
    }
}

/// How a kind's resources take part in a graph beyond being built one by one: the hooks
/// the bridge to the engine ([`crate::contract::graph`]) asks, so that it names no kind.
#[derive(Clone, Copy)]
pub struct InGraph {
    /// The one place a resource of the kind manages, in one spelling (a `file`'s path
    /// without its trailing slash): two resources may not claim one place, and a
    /// purging directory spares the places claimed below it.
    pub claims: Option<ClaimFn>,
    /// Whether a resource of the kind removes what is not claimed below its place (a
    /// `file` directory with `purge`).
    pub purges: Option<fn(&ParamMap) -> bool>,
    /// Finds the groups of this kind in a graph (a `virt:network` and the hosts and
    /// ranges grouped into it).
    pub groups: Option<GroupsFn>,
    /// Builds a resource of the kind knowing its group: the members of a group, or the
    /// group of a member. Such a resource is not checked on its own by `tend check`.
    pub build_grouped: Option<GroupedBuildFn>,
    /// How resources merge into a vertex of this kind (autogrouping,
    /// [`crate::contract::group`]).
    pub autogroup: Option<AutoGroup>,
}

impl InGraph {
    /// A kind whose resources are built and checked one by one.
    pub const NONE: InGraph =
        InGraph { claims: None, purges: None, groups: None, build_grouped: None, autogroup: None };
}

/// Builds a group's one resource from its own vertex and its members' (see
/// [`AutoGroup::build`]).
pub type GroupBuildFn = fn(
    &Machine,
    &lang::resgraph::ResVertex,
    &[lang::resgraph::ResVertex],
) -> Result<Box<dyn Resource>, (usize, BuildError)>;

/// A kind's part in autogrouping (mgmt's `GroupCmp` and `GroupRes`): which resources may
/// join a vertex of this kind, and how the group runs.
#[derive(Clone, Copy)]
pub struct AutoGroup {
    /// Whether resources group without the program asking: true where grouping pays (one
    /// package transaction for many `pkg`s), false where it only changes how a run reports
    /// (`print`), which then groups only where both resources say `Meta:autogroup => true`.
    /// `Meta:autogroup => false` always keeps a resource apart.
    pub by_default: bool,
    /// Other kinds that may join (the routes of an `http:server`); the kind itself always
    /// may.
    pub members: &'static [&'static str],
    /// Whether a notified resource stays apart: the engine notifies a vertex, so in a group
    /// every member would be notified (an `svc` reloads on a notification).
    pub notified_apart: bool,
    /// Whether `member` may join the group of `group` (a resource of this kind), from their
    /// kinds and params.
    pub fits: fn(group: &lang::resgraph::ResVertex, member: &lang::resgraph::ResVertex) -> bool,
    /// Builds the group as one resource that applies every member at once (one package
    /// transaction); an error names the vertex it is about (0: the group's own, then each
    /// member's position plus one). `None`: each is built alone and applied in turn
    /// ([`engine::Group`]).
    pub build: Option<GroupBuildFn>,
}

/// The [`BuildFn`] of a kind whose resource `$res` is built by `$res::build(host, name,
/// params)`: `Kind::new("svc", SvcParams::FIELDS, crate::built_on_host!(Svc))`.
#[macro_export]
macro_rules! built_on_host {
    ($res:ident) => {
        |host, name, params| Ok(Box::new($res::build(host, name, params)?))
    };
}

impl Kind {
    /// A kind called `name` with `params`, built by `build`, that neither sends nor
    /// receives and has no automatic edges (the builders below add them).
    pub const fn new(name: &'static str, params: &'static [crate::contract::typed::Field], build: BuildFn) -> Kind {
        Kind {
            name,
            params,
            sends: &[],
            can_recv: false,
            autoedges: crate::contract::autoedge::Rules::NONE,
            build,
            in_graph: InGraph::NONE,
        }
    }

    /// The same kind, sending `sends` over send/recv edges.
    pub const fn sending(self, sends: &'static [(&'static str, &'static str)]) -> Kind {
        Kind { sends, ..self }
    }

    /// The same kind, receiving over send/recv edges.
    pub const fn receiving(self) -> Kind {
        Kind { can_recv: true, ..self }
    }

    /// The same kind, with automatic edges `rules`.
    pub const fn autoedges(self, rules: crate::contract::autoedge::Rules) -> Kind {
        Kind { autoedges: rules, ..self }
    }

    /// The same kind, taking part in a graph as `in_graph` says.
    pub const fn in_graph(self, in_graph: InGraph) -> Kind {
        Kind { in_graph, ..self }
    }
}

/// The registered kind called `name`.
pub fn find(name: &str) -> Option<&'static Kind> {
    static BY_NAME: std::sync::OnceLock<engine::fasthash::FastMap<&'static str, &'static Kind>> =
        std::sync::OnceLock::new();
    BY_NAME.get_or_init(|| crate::KINDS.iter().map(|k| (k.name, *k)).collect()).get(name).copied()
}

/// Registers a [`ResourceDecl`] for every supported kind, and their validation of
/// constant resources for `tend check`.
pub fn declare(catalog: &mut Catalog) {
    for decl in decls() {
        catalog.add_resource(decl);
    }
    catalog.set_validator(validate_constant);
}

/// Builds and validates a resource whose params are all known at compile time (the
/// catalog's [`lang::catalog::Validator`]): what `run` would refuse when it builds the
/// graph. Kinds built with their group (`virt:network` and its members) are left to the run.
pub fn validate_constant(kind: &str, name: &str, params: &lang::params::ParamMap) -> Option<lang::catalog::Invalid> {
    use lang::catalog::Invalid;
    if find(kind).is_none_or(|k| k.in_graph.build_grouped.is_some()) {
        return None;
    }
    static HOST: std::sync::OnceLock<crate::Machine> = std::sync::OnceLock::new();
    let host = HOST.get_or_init(crate::Machine::system);
    let built = crate::build_with(host, kind, name, params);
    let building = built.is_err();
    let (field, message) = match built {
        Err(e) => (e.field, e.message),
        Ok(res) => {
            let e = res.validate().err()?;
            let key = format!("{kind}[{name}]: ");
            let message = e.message.strip_prefix(&key).unwrap_or(&e.message);
            let field = message.strip_prefix("field `").and_then(|rest| rest.split_once("`: "));
            match field {
                Some((field, rest)) => (Some(field.to_string()), rest.to_string()),
                None => (None, message.to_string()),
            }
        }
    };
    let (message, note) = match message.split_once(crate::util::path::NORMAL_FORM) {
        Some((message, normal)) => {
            (message.to_string(), Some(format!("paths must be in normal form; this one's is {normal}")))
        }
        None => (message, None),
    };
    Some(Invalid { field, message, note, building })
}

/// The declarations of every supported kind, in registration order.
pub fn decls() -> Vec<ResourceDecl> {
    all().to_vec()
}

/// The declaration of one kind.
pub fn decl(kind: &str) -> Option<&'static ResourceDecl> {
    all().iter().find(|d| d.kind == kind)
}

/// Built once (an immutable table): every resource of a graph looks its kind up here.
fn all() -> &'static [ResourceDecl] {
    static ALL: std::sync::OnceLock<Vec<ResourceDecl>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        crate::KINDS
            .iter()
            .map(|kind| ResourceDecl {
                kind: kind.name.to_string(),
                params: kind
                    .params
                    .iter()
                    .map(|&(name, ty, allowed, zero)| {
                        let mut decl = ParamDecl::new(name, ty_of(ty)).with_allowed(allowed.iter().copied());
                        if zero {
                            decl = decl.zero_when_absent();
                        }
                        if kind.autoedges.reads.contains(&name) { decl.read_by_edges() } else { decl }
                    })
                    .collect(),
                sends: kind.sends.iter().map(|&(name, ty)| ParamDecl::new(name, ty_of(ty))).collect(),
                can_recv: kind.can_recv,
            })
            .collect()
    })
}

/// The type texts are constants written in the kinds' modules; a parse failure is a bug
/// there, caught by `every_declared_type_parses` below.
fn ty_of(text: &str) -> Type {
    parse_type(text).unwrap_or_else(|e| panic!("bad type text in a resource kind: {}", e.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_declared_type_parses() {
        for kind in crate::KINDS {
            let params = kind.params.iter().map(|&(name, ty, ..)| (name, ty));
            for (name, ty) in params.chain(kind.sends.iter().copied()) {
                assert!(parse_type(ty).is_ok(), "{}.{name}: {ty}", kind.name);
            }
        }
    }

    #[test]
    fn the_params_automatic_edges_read_are_declared_and_marked() {
        for kind in crate::KINDS {
            let decl = decl(kind.name).expect("declared");
            for read in kind.autoedges.reads {
                assert!(decl.param(read).is_some_and(|p| p.edges), "{}.{read}", kind.name);
            }
            let marked = decl.params.iter().filter(|p| p.edges).count();
            assert_eq!(marked, kind.autoedges.reads.len(), "{}", kind.name);
        }
        assert!(decl("file").and_then(|f| f.param("path")).is_some_and(|p| p.edges));
        assert!(decl("file").and_then(|f| f.param("content")).is_some_and(|p| !p.edges));
    }

    #[test]
    fn only_plain_fields_say_what_leaving_them_out_means() {
        let file = decl("file").expect("file declared");
        let default = |name: &str| file.param(name).and_then(|p| p.default.clone());
        assert_eq!(default("recurse"), Some(lang::value::Value::Bool(false)));
        assert_eq!(default("mode"), Some(lang::value::Value::str("")));
        // An optional field (unset differs from empty), a field with a reader (the path
        // comes from the name) and a choice (its unset is the kind's to decide): none.
        assert_eq!(default("content"), None);
        assert_eq!(default("path"), None);
        assert_eq!(default("state"), None);
    }

    #[test]
    fn kind_names_are_unique() {
        let mut names: Vec<&str> = crate::KINDS.iter().map(|k| k.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before, "a kind is registered twice");
    }

    #[test]
    fn test_kind_has_the_conformance_fields() {
        let mut catalog = Catalog::new();
        declare(&mut catalog);
        let test = catalog.resource("test").expect("test declared");
        assert_eq!(test.param("uint64").map(|p| &p.ty), Some(&Type::Int));
        assert_eq!(test.param("float32").map(|p| &p.ty), Some(&Type::Float));
        assert_eq!(test.param("interface").map(|p| &p.ty), Some(&Type::Variant));
        assert_eq!(test.param("func1").map(|p| p.ty.to_string()), Some("func(int) str".to_string()));
        assert_eq!(test.param("slicestring").map(|p| p.ty.to_string()), Some("[]str".to_string()));
        assert_eq!(test.send("hello").map(|p| &p.ty), Some(&Type::Str));
        assert_eq!(test.send("answer").map(|p| &p.ty), Some(&Type::Int));
        assert!(test.can_recv);
        let exec = catalog.resource("exec").expect("exec declared");
        assert!(!exec.can_recv);
        assert!(exec.send("stdout").is_some());
        assert!(catalog.resource("file").is_some_and(|f| f.sends.is_empty() && f.can_recv));
        assert!(catalog.resource("_panic").is_some());
    }

    #[test]
    fn server_kinds_have_mgmt_fields() {
        let mut catalog = Catalog::new();
        declare(&mut catalog);
        let ui = catalog.resource("http:server:ui").expect("declared");
        assert_eq!(ui.param("data").map(|p| p.ty.to_string()), Some("struct{title str; head str}".to_string()));
        let flag = catalog.resource("http:server:flag").expect("declared");
        assert_eq!(flag.send("value").map(|p| &p.ty), Some(&Type::Str));
        assert!(catalog.resource("http:server:file").is_some_and(|f| f.can_recv && f.param("longpoll").is_some()));
        assert_eq!(catalog.resource("tftp:server").and_then(|t| t.param("timeout")).map(|p| &p.ty), Some(&Type::Int));
    }

    #[test]
    fn no_kind_declares_a_field_twice() {
        for kind in crate::KINDS {
            let mut names: Vec<_> = kind.params.iter().map(|(n, ..)| n).collect();
            names.sort();
            let before = names.len();
            names.dedup();
            assert_eq!(before, names.len(), "{}", kind.name);
        }
    }
}
