//! The syntax tree of one mcl file, as written (plus the interpolation stage's rewrite of
//! string literals). Every node carries its span; semantics come later.

use crate::span::{FileId, Span};
use crate::types::Type;

/// A name with its position (`x` in `$x`, `printf`, `file`).
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// A dotted name (`fmt.printf`, `ns.x`, `b1.inner`) joined with `.`; or a colon name
/// (`docker:image`, `base:inner`) joined with `:`.
pub type Name = Ident;

/// A type annotation as written.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeAnn {
    pub ty: Type,
    pub span: Span,
}

/// One parsed file.
#[derive(Clone, Debug, PartialEq)]
pub struct File {
    pub file: FileId,
    pub stmts: Vec<Stmt>,
}

/// A `{ ... }` statement block.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    /// From the first token to the end of the last token.
    pub span: Span,
    /// `private` written before a class, func or bind (the keyword's span): the name is
    /// usable only inside the module that declares it.
    pub private: Option<Span>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `$name [type] = value`
    Bind { name: Ident, ann: Option<TypeAnn>, value: Expr },
    /// `if cond { ... } [else { ... }]`
    If { cond: Expr, then: Block, els: Option<Block> },
    /// `for $index, $value in expr { ... }`
    For { index: Ident, value: Ident, iter: Expr, body: Block },
    /// `forkv $key, $value in expr { ... }`
    ForKv { key: Ident, value: Ident, iter: Expr, body: Block },
    /// `func name(params) [type] { expr }`
    Func { name: Ident, func: Lambda },
    /// `class a:b:c[(params)] [inherits base] { ... }`; `name` is the colon name joined
    /// with `:`. `params` is `None` without parentheses. With `define` set it is
    /// `define name[(params)] { ... }`: a defined resource type, instantiated by resource
    /// statements of kind `name` (a define never inherits).
    Class { name: Name, params: Option<Vec<Param>>, body: Block, define: Option<Span>, inherits: Option<Name> },
    /// `type name { attr … invariant … }`, `type name inherits parent { … }` or
    /// `type name = T` (file or module top level only).
    Type(TypeDecl),
    /// `include dotted[(args)] [as alias]`
    Include { name: Name, args: Option<Vec<Expr>>, alias: Option<Ident> },
    /// `import "path" [as alias | as *]`
    Import { path: String, path_span: Span, alias: Option<ImportAlias> },
    /// `panic(args)` with one or two arguments.
    Panic { args: Vec<Expr> },
    /// `kind name { entries }`, or `collect kind name { entries }`.
    Resource(Resource),
    /// `node "web1", /^db\d+$/, default { … }`: a body for the hosts it matches (top level
    /// of the entry file only).
    Node { matchers: Vec<NodeMatch>, body: Block },
    /// `Kind <| query |> [{ overrides }]`: realizes and overrides what it matches.
    Collect(Collector),
    /// `realize(Kind[name], …)`: puts virtual resources in the graph.
    Realize { refs: Vec<EdgeHalf> },
    /// `Kind { entries }`: defaults for every resource of the kind declared in this block
    /// or a block nested in it (lexically).
    Defaults { kind: Ident, entries: Vec<ResEntry> },
    /// `Kind[name] { entries }`: sets params of resources declared elsewhere; `+>` entries
    /// append to a list param.
    Override { target: EdgeHalf, entries: Vec<ResEntry> },
    /// A relationship chain `A[n] -> B[m] ~> ...` (`->`, `~>`, `<-`, `<~`; a side is one
    /// reference or a `[...]` list of them), or a send/recv pair `A[n].f -> B[m].g`.
    /// `links[i]` joins `sides[i]` and `sides[i + 1]`.
    Edge { sides: Vec<EdgeSide>, links: Vec<EdgeLink> },
}

/// A type declaration.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeDecl {
    pub name: Ident,
    pub def: TypeDef,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TypeDef {
    /// `type port = int`: another name for a type.
    Alias(TypeAnn),
    /// `type vhost [inherits parent] { … }`: a new, nominal type of named attributes.
    Record(Record),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// `inherits parent` (dotted).
    pub parent: Option<Name>,
    /// The `abstract` line: the type has no values of its own, only its subtypes do.
    pub abstract_at: Option<Span>,
    pub attrs: Vec<Attr>,
    pub invariants: Vec<Invariant>,
}

/// `attr name T [{ default => expr, check => expr, … }]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Attr {
    pub name: Ident,
    /// Its type as written; `enum["a", "b"]` anywhere in it limits the strings there.
    pub ann: TypeAnn,
    pub default: Option<Expr>,
    /// A `bool` (or a `str` message, empty when the value is fine) over `$it`, the
    /// attribute's value.
    pub check: Option<Expr>,
    /// `min => N` and `max => N`: bounds on the value of an `int` or `float` attribute, on
    /// the length of a list, map or `str` one.
    pub min: Option<Expr>,
    pub max: Option<Expr>,
    /// `derived => expr`: the value is computed from the other attributes (each a
    /// variable) and never given, unless `set` says how.
    pub derived: Option<Expr>,
    /// `set => struct{attr => expr, …}` over `$it`: giving a derived attribute gives these
    /// attributes instead.
    pub set: Option<Expr>,
    /// `unsettable => true`: the attribute may be left out without a default, and "not
    /// set" stays apart from every value (`$v->attr` is then an error `<|>` catches).
    pub unsettable: bool,
    pub span: Span,
}

impl Attr {
    /// Every expression of its options, in a fixed order.
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        [&self.default, &self.check, &self.min, &self.max, &self.derived, &self.set].into_iter().flatten()
    }

    pub fn exprs_mut(&mut self) -> impl Iterator<Item = &mut Expr> {
        [&mut self.default, &mut self.check, &mut self.min, &mut self.max, &mut self.derived, &mut self.set]
            .into_iter()
            .flatten()
    }
}

/// `invariant ["message"] { expr }`: a `bool` over the attributes, each a variable, or a
/// `str` that is the message (empty when the value is fine).
#[derive(Clone, Debug, PartialEq)]
pub struct Invariant {
    pub message: Option<String>,
    pub expr: Expr,
    pub span: Span,
}

/// What a node definition matches.
#[derive(Clone, Debug, PartialEq)]
pub enum NodeMatch {
    /// An exact host name.
    Name { name: String, span: Span },
    /// A regular expression (RE2 syntax) a host name matches.
    Regex { pattern: String, span: Span },
    /// `default`: any host no other node matches.
    Default(Span),
}

/// Whether a resource is in the graph as declared.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Virtuality {
    /// Declared plainly: in the graph.
    #[default]
    Real,
    /// `@kind`: in the graph once something realizes it (a collector, `realize`).
    Virtual,
    /// `@@kind`: virtual, and exported (`Meta:export => ["*"]`).
    Exported,
}

/// `Kind <| query |> [{ overrides }]` or `Kind <<| query |>> [{ overrides }]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Collector {
    pub kind: Ident,
    /// `<<| |>>`: exported resources only.
    pub exported: bool,
    /// `None`: every resource of the kind.
    pub query: Option<Query>,
    /// The override block, applied once to each match.
    pub entries: Vec<ResEntry>,
    pub span: Span,
}

/// A collector's query (Puppet's grammar): `attr == value`, `attr != value`, `and`, `or`,
/// parentheses. `attr` is a param, `name`/`title`, or `tag`; `value` a literal or a variable.
#[derive(Clone, Debug, PartialEq)]
pub enum Query {
    Compare { attr: Ident, equal: bool, value: Expr, span: Span },
    And(Box<Query>, Box<Query>),
    Or(Box<Query>, Box<Query>),
}

impl Query {
    /// The values the query compares with, in source order.
    pub fn values(&self) -> Vec<&Expr> {
        match self {
            Query::Compare { value, .. } => vec![value],
            Query::And(a, b) | Query::Or(a, b) => {
                let mut out = a.values();
                out.extend(b.values());
                out
            }
        }
    }

    pub fn values_mut(&mut self) -> Vec<&mut Expr> {
        match self {
            Query::Compare { value, .. } => vec![value],
            Query::And(a, b) | Query::Or(a, b) => {
                let mut out = a.values_mut();
                out.extend(b.values_mut());
                out
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ImportAlias {
    Name(Ident),
    Star(Span),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Resource {
    /// The kind, lower-cased and colon-joined (`file`, `docker:image`).
    pub kind: Name,
    pub name: Expr,
    pub entries: Vec<ResEntry>,
    pub collect: bool,
    /// `@kind` (virtual) or `@@kind` (exported).
    pub virtuality: Virtuality,
}

/// One `... ,` entry of a resource body. The span covers `key => value,` including the
/// comma.
#[derive(Clone, Debug, PartialEq)]
pub struct ResEntry {
    pub kind: ResEntryKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ResEntryKind {
    /// `field => [cond ?:] value,`
    Field { name: Ident, cond: Option<Box<Expr>>, value: Expr },
    /// `Prop => [cond ?:] Kind[name],` where Prop is any capitalized word, lower-cased;
    /// the init stage rejects anything but before/depend/notify/listen.
    Edge { prop: Ident, cond: Option<Box<Expr>>, target: Box<EdgeHalf> },
    /// `Meta:name => [cond ?:] value,` (`name` is `Some`) or `Meta => [cond ?:] value,`.
    Meta { name: Option<Ident>, cond: Option<Box<Expr>>, value: Expr },
    /// `field +> value,`: appends to a list param (defaults and overrides).
    Append { name: Ident, value: Expr },
    /// `* => value,`: a struct whose fields, or a `map{str: T}` whose keys, are params, as
    /// if each were written one by one (Puppet's splat; at most one per body).
    Splat { value: Expr },
}

/// One side of a relationship: a reference, or a `[...]` list of them (every reference of
/// one side is related to every reference of the next).
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeSide {
    pub refs: Vec<EdgeHalf>,
    /// A collector side (then `refs` is empty): every resource it matches.
    pub collector: Option<Box<Collector>>,
    pub span: Span,
}

/// A relationship operator between two sides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EdgeLink {
    /// `~>` or `<~`: the resource on the arrow's head is refreshed when the other changes.
    pub notify: bool,
    /// `<-` or `<~`: written right to left.
    pub backward: bool,
    pub span: Span,
}

impl EdgeLink {
    /// The operator as written.
    pub fn text(&self) -> &'static str {
        match (self.notify, self.backward) {
            (false, false) => "->",
            (true, false) => "~>",
            (false, true) => "<-",
            (true, true) => "<~",
        }
    }
}

/// `Kind[name]` or `Kind[name].field` (send/recv).
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeHalf {
    /// Lower-cased and colon-joined.
    pub kind: Name,
    pub name: Expr,
    pub field: Option<Ident>,
    pub span: Span,
}

/// A parameter of a func, lambda or class: `$name [type] [= default]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: Ident,
    pub ann: Option<TypeAnn>,
    /// `= expr` (func statements and classes only; init rejects it on a lambda value):
    /// the value when a call or include does not give the param. It may use the params
    /// to its left.
    pub default: Option<Expr>,
    /// `$rest ...int`: the last param of a `func` statement may repeat; it takes every
    /// positional argument past the others (none or many) as a list, `[]int` in the body.
    /// The span is the `...`'s.
    pub repeated: Option<Span>,
}

impl Param {
    /// The type the param has in the body: a repeated param's annotation is its
    /// elements' type.
    pub fn body_ann(&self) -> Option<TypeAnn> {
        let ann = self.ann.as_ref()?;
        Some(match self.repeated {
            Some(_) => TypeAnn { ty: crate::types::Type::list(ann.ty.clone()), span: ann.span },
            None => ann.clone(),
        })
    }
}

/// `func(params) [ret] { body }`
#[derive(Clone, Debug, PartialEq)]
pub struct Lambda {
    pub params: Vec<Param>,
    pub ret: Option<TypeAnn>,
    pub body: Box<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Bool(bool),
    Int(i64),
    Float(f64),
    /// A string literal's raw text between the quotes, as the parser produces it.
    /// The interpolation stage replaces every `RawStr` by `Str` or `Interp`.
    RawStr(String),
    /// A string with escapes processed and no `${}`.
    Str(String),
    /// An interpolated string: at least one `${name}` part.
    Interp(Vec<InterpPart>),
    List(Vec<Expr>),
    Map(Vec<(Expr, Expr)>),
    Struct(Vec<(Ident, Expr)>),
    /// `$name` (dotted).
    Var(Name),
    /// `name(args)` (dotted name: a built-in, a func statement, `ns.f`).
    Call {
        name: Name,
        args: Vec<Expr>,
    },
    /// `$name(args)`: call a function value held in a variable.
    CallVar {
        name: Name,
        args: Vec<Expr>,
    },
    Lambda(Box<Lambda>),
    /// `vhost{name => "a", port => 8080}`: a value of a declared type.
    Construct {
        ty: Name,
        fields: Vec<(Ident, Expr)>,
    },
    /// `name => value` in a call's or include's argument list (after the positional
    /// arguments): the argument of the param `$name`. Only parsed there.
    Named {
        name: Ident,
        value: Box<Expr>,
    },
    /// `func(...) { ... }(args)`: an immediately invoked lambda.
    CallLambda {
        lambda: Box<Lambda>,
        args: Vec<Expr>,
    },
    If {
        cond: Box<Expr>,
        then: Box<Expr>,
        els: Box<Expr>,
    },
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    Not(Box<Expr>),
    /// `base[index]`
    Index {
        base: Box<Expr>,
        index: Box<Expr>,
    },
    /// `base->field`
    Field {
        base: Box<Expr>,
        field: Ident,
    },
    /// `base->field <|> default` (static optional lookup).
    FieldOr {
        base: Box<Expr>,
        field: Ident,
        default: Box<Expr>,
    },
    /// An expression carrying a type annotation (`$x int = ...` puts the annotation on
    /// the bind instead; this form is used where an annotation attaches to an expression,
    /// e.g. a lambda's declared return type applied to its body).
    Annotated {
        expr: Box<Expr>,
        ann: TypeAnn,
    },
    /// Placeholder the parser leaves where it recovered from a syntax error.
    Error,
}

#[derive(Clone, Debug, PartialEq)]
pub enum InterpPart {
    Lit(String),
    /// `${name}`; the span covers the whole string literal (mgmt positions errors about
    /// interpolated variables at the literal).
    Var(Name),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    And,
    Or,
    In,
    /// `<|>`
    Except,
}

impl BinOp {
    pub fn as_str(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Gt => ">",
            BinOp::Le => "<=",
            BinOp::Ge => ">=",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::In => "in",
            BinOp::Except => "<|>",
        }
    }
}
