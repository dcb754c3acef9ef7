//! Scope frames: one per block instance (and per parameter list), kept in an arena and
//! linked to their lexical parent. A frame holds the three namespaces (variables,
//! functions, classes) plus the alias namespace shared by imports and `include ... as`.
//!
//! Entries are lazy: a bind is elaborated on first use and memoized in its frame, an
//! `include ... as` alias is instantiated on first use. Lookups never create nodes; the
//! elaborator in [`super::expr`] forces entries.

use crate::ir::NodeId;
use crate::span::Span;
use crate::syntax::ast;
use std::collections::BTreeMap;

/// Index of a frame in [`super::Ctx::frames`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct FrameId(pub(crate) u32);

/// Progress of a lazily elaborated entry. `Active` while it is being elaborated, which is
/// how a recursion the static analysis missed is still caught.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lazy<T> {
    Pending,
    Active,
    Done(T),
}

#[derive(Clone, Debug)]
pub(crate) enum VarEntry<'a> {
    /// Already a node: a parameter, a loop variable, a class/func argument; with the span
    /// that declares the name, when it is written in the program.
    Node(NodeId, Option<Span>),
    /// `$name [ann] = value`, elaborated on first use.
    Bind { name: &'a ast::Ident, ann: Option<&'a ast::TypeAnn>, value: &'a ast::Expr, state: Lazy<NodeId> },
}

#[derive(Clone, Debug)]
pub(crate) struct FuncEntry<'a> {
    pub(crate) name: &'a ast::Ident,
    pub(crate) lambda: &'a ast::Lambda,
    /// Later `func` statements of the same name in the same block that overload this one
    /// (every param typed, param types differ), in source order.
    pub(crate) overloads: Vec<(&'a ast::Ident, &'a ast::Lambda)>,
    /// The frame the func statement is in: its body sees this scope.
    pub(crate) frame: FrameId,
    /// Number of calls currently being inlined (recursion guard).
    pub(crate) active: u32,
    pub(crate) called: bool,
}

/// A `type` statement; `state` holds its index in [`super::Ctx::declared`] once resolved.
#[derive(Clone, Debug)]
pub(crate) struct TypeEntry<'a> {
    pub(crate) decl: &'a ast::TypeDecl,
    pub(crate) frame: FrameId,
    pub(crate) state: Lazy<usize>,
}

#[derive(Clone, Debug)]
pub(crate) struct ClassEntry<'a> {
    pub(crate) name: &'a ast::Name,
    /// `class special inherits base`: the base, evaluated first with its defaults.
    pub(crate) inherits: Option<&'a ast::Name>,
    pub(crate) params: Option<&'a [ast::Param]>,
    pub(crate) body: &'a ast::Block,
    pub(crate) frame: FrameId,
    pub(crate) active: u32,
}

/// What an alias prefix (`fmt.`, `g.`, `i1.`) refers to.
#[derive(Clone, Debug)]
pub(crate) enum AliasEntry<'a> {
    /// A system package: names resolve to catalog entries `PKG.name`.
    System(String),
    /// A module's top frame, or a class instance's body frame.
    Frame(FrameId),
    /// An `include ... as` not instantiated yet.
    Include { stmt: &'a ast::Stmt, state: Lazy<FrameId> },
    /// A failed import or include: lookups through it succeed silently (the failure was
    /// reported once already).
    Failed,
}

/// A `Kind { … }` defaults statement, as the resources of its block and the blocks nested
/// in it see it.
#[derive(Clone, Debug)]
pub(crate) struct DefaultsEntry<'a> {
    /// Lower-cased and colon-joined, as resource kinds are.
    pub(crate) kind: String,
    pub(crate) entries: &'a [ast::ResEntry],
}

/// One scope.
#[derive(Clone, Debug, Default)]
pub(crate) struct Frame<'a> {
    /// The defaults statements of the block, in source order.
    pub(crate) defaults: Vec<DefaultsEntry<'a>>,
    pub(crate) parent: Option<FrameId>,
    pub(crate) vars: BTreeMap<String, VarEntry<'a>>,
    pub(crate) funcs: BTreeMap<String, FuncEntry<'a>>,
    pub(crate) classes: BTreeMap<String, ClassEntry<'a>>,
    /// Defined types (`define vhost(…) { … }`) by their kind: a define in a class body is
    /// kept in the class's own frame as `class:define`.
    pub(crate) defines: BTreeMap<String, ClassEntry<'a>>,
    pub(crate) types: BTreeMap<String, TypeEntry<'a>>,
    pub(crate) aliases: BTreeMap<String, AliasEntry<'a>>,
    /// `import ... as *` targets, in import order (later ones win).
    pub(crate) stars: Vec<AliasEntry<'a>>,
    /// Names declared `private` in this frame (a file's or module's top level), with the
    /// span of their statement: not visible through an import.
    pub(crate) private: BTreeMap<(Ns, String), crate::span::Span>,
}

/// The namespaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Ns {
    Var,
    Func,
    Class,
    Type,
}

impl Ns {
    pub(crate) fn word(self) -> &'static str {
        match self {
            Ns::Var => "var",
            Ns::Func => "func",
            Ns::Class => "class",
            Ns::Type => "type",
        }
    }
}

impl<'a> Frame<'a> {
    pub(crate) fn child(parent: FrameId) -> Frame<'a> {
        Frame { parent: Some(parent), ..Frame::default() }
    }

    pub(crate) fn has(&self, ns: Ns, name: &str) -> bool {
        match ns {
            Ns::Var => self.vars.contains_key(name),
            Ns::Func => self.funcs.contains_key(name),
            Ns::Class => self.classes.contains_key(name),
            Ns::Type => self.types.contains_key(name),
        }
    }

    /// Names defined directly in this frame in one namespace (for did-you-mean).
    pub(crate) fn names(&self, ns: Ns) -> Vec<String> {
        match ns {
            Ns::Var => self.vars.keys().cloned().collect(),
            Ns::Func => self.funcs.keys().cloned().collect(),
            Ns::Class => self.classes.keys().cloned().collect(),
            Ns::Type => self.types.keys().cloned().collect(),
        }
    }
}
