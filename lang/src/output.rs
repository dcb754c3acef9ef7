//! What one settled evaluation of a program produced: resource declarations and edges
//! with their values, before the merge rules of interpretation. The dataflow runtime
//! (`funcs`) fills it by walking [`crate::ir::IrStmt`]s; `interpret` turns it into a
//! resource graph.

use crate::ir::EdgeProp;
use crate::span::Span;
pub use crate::syntax::ast::Virtuality;
use crate::value::Value;

/// One resource as a statement produced it (a list-named resource produces one each).
#[derive(Clone, Debug, PartialEq)]
pub struct ResDecl {
    pub kind: String,
    pub name: String,
    /// Fields that were set (elvis fields whose condition was false are absent), in
    /// body order, with the span of the `field => value,` entry.
    pub params: Vec<(String, Value, Span)>,
    /// The params of `params` that came from a defaults statement (an override may replace
    /// them; it may not replace the others).
    pub defaulted: Vec<String>,
    /// `Meta:x` entries and the fields of a `Meta =>` struct, expanded, in body order.
    pub metas: Vec<(String, Value, Span)>,
    /// Edge properties of the body whose condition held.
    pub edges: Vec<BodyEdge>,
    pub collect: bool,
    /// The host it is collected from: for a `collect` resource, the host its name's
    /// struct names (`None`: any host); for a resource another host exported, that host.
    pub from: Option<String>,
    /// `@kind` or `@@kind`: left out unless a collector or `realize` names it.
    pub virtuality: Virtuality,
    /// The classes whose bodies declared it (with its kind, its implicit tags).
    pub classes: Vec<String>,
    /// The instances of defined types whose bodies declared it, outermost first, as
    /// `(kind, title)`: a reference to one of them (`Vhost["shop"]`) stands for it, and
    /// their kinds are tags of it.
    pub within: Vec<(String, String)>,
    /// The whole resource statement.
    pub span: Span,
}

impl ResDecl {
    /// Whether it has tag `tag`: its kind, a class that declared it, or one of its
    /// `Meta:tags`.
    pub fn has_tag(&self, tag: &str) -> bool {
        self.kind == tag
            || self.classes.iter().any(|c| c == tag)
            || self.within.iter().any(|(kind, _)| kind == tag)
            || self.metas.iter().any(|(name, value, _)| {
                name == "tags" && matches!(value, Value::List(items) if items.iter().any(|t| t.as_str() == Some(tag)))
            })
    }

    /// Whether it is exported (`@@kind`, or `Meta:export` naming any host).
    pub fn exported(&self) -> bool {
        self.virtuality == Virtuality::Exported
            || self.metas.iter().any(|(n, v, _)| n == "export" && matches!(v, Value::List(l) if !l.is_empty()))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct BodyEdge {
    pub prop: EdgeProp,
    pub kind: String,
    pub name: String,
    pub span: Span,
}

/// One edge from an edge statement (a chain or list produces several), always from the
/// resource applied first to the one applied after it.
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeDecl {
    pub from: EdgeEnd,
    pub to: EdgeEnd,
    /// `~>` or `<~`: `to` is refreshed when `from` changes.
    pub notify: bool,
    /// The whole statement.
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct EdgeEnd {
    pub kind: String,
    pub name: String,
    /// Send/recv field name.
    pub field: Option<String>,
    /// The reference as written (`File["/a"]`).
    pub span: Span,
    /// A collector side: every resource `Output::collectors[i]` matches (`name` unused).
    pub collector: Option<usize>,
}

/// One collector, evaluated.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectorDecl {
    pub kind: String,
    /// `<<| |>>`: exported resources only.
    pub exported: bool,
    pub query: Option<Query>,
    /// The override block, applied once to each match.
    pub params: Vec<OverrideParam>,
    pub span: Span,
}

/// A collector's query with its values.
#[derive(Clone, Debug, PartialEq)]
pub enum Query {
    Compare { attr: String, equal: bool, value: Value, span: Span },
    And(Box<Query>, Box<Query>),
    Or(Box<Query>, Box<Query>),
}

/// A `realize(Kind[name])`.
#[derive(Clone, Debug, PartialEq)]
pub struct RealizeDecl {
    pub kind: String,
    pub name: String,
    pub span: Span,
}

/// One instance of a defined type (`vhost "shop" { … }`), evaluated: what collectors of
/// the defined type match, and what `realize` and references name. Its resources are in
/// [`Output::resources`], each naming it in [`ResDecl::within`].
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceDecl {
    pub kind: String,
    /// The title.
    pub name: String,
    /// Every param of the define as the instance bound it, in the define's order.
    pub params: Vec<(String, Value)>,
    pub virtuality: Virtuality,
    /// The classes whose bodies declared it.
    pub classes: Vec<String>,
    /// The resource statement.
    pub span: Span,
}

impl InstanceDecl {
    /// Whether it has tag `tag`: its kind or a class that declared it.
    pub fn has_tag(&self, tag: &str) -> bool {
        self.kind == tag || self.classes.iter().any(|c| c == tag)
    }
}

/// One `Kind[name] { … }` statement, evaluated: it sets params of the resources it names.
#[derive(Clone, Debug, PartialEq)]
pub struct OverrideDecl {
    pub kind: String,
    pub names: Vec<String>,
    /// The reference as written.
    pub target_span: Span,
    pub params: Vec<OverrideParam>,
    /// The whole statement.
    pub span: Span,
    /// The bodies of the base classes of the class it is in: a resource declared in one of
    /// them may have its params replaced (Puppet's class inheritance).
    pub replaces: Vec<Span>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct OverrideParam {
    pub name: String,
    pub value: Value,
    /// `+>`: appended to the list the resource has.
    pub append: bool,
    /// The `name => value,` entry.
    pub span: Span,
}

/// Everything one evaluation produced, in program order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Output {
    pub resources: Vec<ResDecl>,
    pub edges: Vec<EdgeDecl>,
    pub overrides: Vec<OverrideDecl>,
    pub collectors: Vec<CollectorDecl>,
    pub realized: Vec<RealizeDecl>,
    /// The instances of defined types, in program order.
    pub instances: Vec<InstanceDecl>,
    /// Values a declared type's checks rejected while this output was built. Each resource
    /// they fed is its declaration from the previous output (its last good state).
    pub rejected: Vec<crate::diag::Diagnostic>,
}
