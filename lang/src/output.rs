//! What one settled evaluation of a program produced: resource declarations and edges
//! with their values, before the merge rules of interpretation. The dataflow runtime
//! (`funcs`) fills it by walking [`crate::ir::IrStmt`]s; `interpret` turns it into a
//! resource graph.

use crate::ir::EdgeProp;
use crate::span::Span;
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
    /// The whole resource statement.
    pub span: Span,
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
}
