//! The function graph ("IR"): the resolved, elaborated program that the dataflow runtime
//! runs. Built by scope resolution (`scope`), typed in place by unification (`unify`
//! fills [`FuncGraph::types`]), run by `funcs`, interpreted by `interpret`.
//!
//! Shape: expression nodes live in one arena and form a DAG (a bind is one shared node;
//! every use of `$x` is an edge to it). Calls of `func` statements and includes of
//! classes are inlined per call site / include, which is what makes them polymorphic.
//! Lambdas stay values: a `Lambda` node evaluates to a [`crate::value::Closure`], and the
//! nodes of its body may refer to its parameters through `Param` nodes. Loop bodies refer
//! to the loop variables the same way. A node that (transitively) depends on a `Param` is
//! *dynamic*: it has a value per environment, not one value.

mod node_types;

pub use node_types::NodeTypes;

use crate::span::Span;
use crate::syntax::ast::BinOp;
use crate::types::Type;
use crate::value::Value;

/// Index of a node in [`FuncGraph::nodes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

/// Index of a lambda or loop parameter in [`FuncGraph::params`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ParamId(pub u32);

#[derive(Clone, Debug, Default)]
pub struct FuncGraph {
    pub nodes: Vec<Node>,
    pub params: Vec<ParamInfo>,
    /// Type annotations written by the user, as constraints on nodes.
    pub annotations: Vec<Annotation>,
    /// Nodes type-checked although no statement may use them: the arguments given to typed
    /// params of funcs and classes, and typed lambda params. A type written on a param is
    /// checked at every call and include, whether or not the body uses the param (as mgmt
    /// does).
    pub checked: Vec<NodeId>,
    /// Filled by unification: each call of an overloaded func (now a `CallValue` of the
    /// chosen overload), with the func's name and the signature of the overload chosen.
    pub overloads: std::collections::BTreeMap<NodeId, (String, String)>,
    /// The nodes each param of a defined type's instance may take its value from (given,
    /// defaulted, the define's default): what static speculation reads through a `Param`
    /// node of an unannotated define param (a resource named `$root`).
    pub param_values: std::collections::BTreeMap<ParamId, Vec<NodeId>>,
    /// The defined types the program declares, by kind (`vhost`, `web:vhost`).
    pub defines: std::collections::BTreeMap<String, DefineInfo>,
    /// The program's output statements (top level; includes are inlined).
    pub stmts: Vec<IrStmt>,
    /// Filled by unification: the concrete type of every node reachable from `stmts` or
    /// `checked` (`None` for nodes nothing uses, which are never type-checked).
    pub types: NodeTypes,
    /// Every elaboration of a class body by an `include`, in order: an error inside a class
    /// included three times is reported once, naming the includes.
    pub includes: Vec<IrInclude>,
    /// Filled by scope resolution: each name the elaborated program uses and what it
    /// resolved to, in source order (for editors; code nothing elaborates is not in it).
    pub names: Vec<NameUse>,
}

/// A defined type as overrides and collectors of it are checked.
#[derive(Clone, Debug, Default)]
pub struct DefineInfo {
    /// Its params' names, in order.
    pub params: Vec<String>,
    /// Its `define` statement's name.
    pub span: Span,
    /// The params each instance binds, in [`DefineInfo::params`]' order.
    pub bound: Vec<Vec<ParamId>>,
}

/// A name as written at one use, and what scope resolution found for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameUse {
    /// The name at the use (an import statement, for an import).
    pub at: Span,
    /// What declares it, when the program does (a bind's or param's name, a func's, class's
    /// or type's name; an imported file's first byte).
    pub decl: Option<Span>,
    /// The built-in function it names, by full name (`fmt.printf`).
    pub builtin: Option<String>,
    /// The node holding a variable's value.
    pub node: Option<NodeId>,
}

/// One elaboration of a class body.
#[derive(Clone, Debug)]
pub struct IrInclude {
    /// The class as written at its definition.
    pub class: String,
    /// Its body.
    pub body: Span,
    /// The `include` statements that led here, outermost first; the last is this class's.
    pub chain: Vec<Span>,
    /// An instance of a defined type (`class` is the define, the last of `chain` the
    /// resource statement), not an include.
    pub instance: bool,
}

impl FuncGraph {
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.0 as usize]
    }
    pub fn ty(&self, id: NodeId) -> Option<&Type> {
        self.types.get(id.0 as usize)
    }
    pub fn add(&mut self, kind: NodeKind, span: Span) -> NodeId {
        self.nodes.push(Node { kind, span });
        NodeId(self.nodes.len() as u32 - 1)
    }
    pub fn add_param(&mut self, name: impl Into<String>, span: Span) -> ParamId {
        self.params.push(ParamInfo { name: name.into(), span });
        ParamId(self.params.len() as u32 - 1)
    }
}

#[derive(Clone, Debug)]
pub struct ParamInfo {
    pub name: String,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Annotation {
    pub node: NodeId,
    pub ty: Type,
    pub span: Span,
}

/// One condition a declared type (or an annotation with an enum) puts on its values.
#[derive(Clone, Debug)]
pub struct IrCheck {
    /// What is tested: see [`CheckTest`].
    pub node: NodeId,
    pub test: CheckTest,
    /// The attribute it checks and that attribute's value node (none for an invariant).
    /// An annotation's enum check names the bind or param (`$state`).
    pub attr: Option<(String, NodeId)>,
    /// What a failed `bool` says after the attribute and its value ("is not accepted by
    /// the check at …"), or the invariant's message.
    pub what: String,
    /// Where the condition is written.
    pub span: Span,
}

/// How an [`IrCheck`]'s node is read.
#[derive(Clone, Debug)]
pub enum CheckTest {
    /// The node is a `bool` (false fails) or a `str` (the message; empty passes).
    Holds,
    /// The node is the checked value itself, which must keep to the enums in this type.
    Enums(Type),
}

impl IrCheck {
    /// The message when `result` (the node's value) fails the check, else `None`.
    /// `attr_value` gives the checked attribute's value, for the message of a `false`.
    pub fn failure(&self, result: &Value, attr_value: impl FnOnce() -> Option<Value>) -> Option<String> {
        let named = |text: String| match &self.attr {
            Some((name, _)) => format!("{name}: {text}"),
            None => text,
        };
        match (&self.test, result) {
            (CheckTest::Holds, Value::Bool(true)) => None,
            (CheckTest::Holds, Value::Str(s)) if s.is_empty() => None,
            (CheckTest::Holds, Value::Str(s)) => Some(named(s.to_string())),
            (CheckTest::Holds, _) => Some(match &self.attr {
                Some(_) => {
                    let shown = attr_value().map_or_else(|| "?".to_string(), |v| v.to_string());
                    named(format!("{shown} {}", self.what))
                }
                None => self.what.clone(),
            }),
            (CheckTest::Enums(ty), value) => {
                let (path, bad, choices) = ty.stray(value)?;
                let listed: Vec<String> = choices.iter().map(|c| crate::value::quote_str(c)).collect();
                let text = format!("{bad} is not one of {}", listed.join(", "));
                Some(match &self.attr {
                    Some((name, _)) => format!("{name}{path}: {text}"),
                    None if path.is_empty() => text,
                    None => format!("{path}: {text}"),
                })
            }
        }
    }
}

#[derive(Clone, Debug)]
pub struct Node {
    pub kind: NodeKind,
    pub span: Span,
}

/// Unary and binary operators (everything `_operator` covers in mgmt, plus `in`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Bin(BinOp),
    Not,
}

#[derive(Clone, Debug)]
pub enum NodeKind {
    /// A literal (and any constant folded by the front end).
    Const(Value),
    List(Vec<NodeId>),
    Map(Vec<(NodeId, NodeId)>),
    Struct(Vec<(String, NodeId)>),
    /// The value of a lambda or loop parameter in the current environment.
    Param(ParamId),
    /// An interpolated string: the concatenation of parts that are all `str`.
    Interp(Vec<NodeId>),
    /// A call of a built-in by its full name (`len`, `fmt.printf`, `golang/strings.join`,
    /// `panic`, `_collect`).
    Call {
        func: String,
        args: Vec<NodeId>,
    },
    /// A call of a function value (`$f(1)`, `func($x){..}(1)`).
    CallValue {
        callee: NodeId,
        args: Vec<NodeId>,
    },
    /// The inlined body of one call of a `func` statement. Evaluates to `body`; static
    /// type speculation does not look through it (mgmt cannot see through named calls).
    Inline {
        func: String,
        body: NodeId,
    },
    Lambda {
        params: Vec<ParamId>,
        body: NodeId,
    },
    /// A value of a declared type (`vhost{name => "a"}`), see [`ConstructNode`]. Boxed,
    /// as is [`NodeKind::Dispatch`]: both are rare, and every node of a large program would
    /// otherwise take their size.
    Construct(Box<ConstructNode>),
    /// A call of an overloaded func, see [`DispatchNode`].
    Dispatch(Box<DispatchNode>),
    If {
        cond: NodeId,
        then: NodeId,
        els: NodeId,
    },
    /// Operators except `<|>` (which is `Except`). `and`/`or` evaluate both sides.
    Op {
        op: Op,
        args: Vec<NodeId>,
    },
    /// `lhs <|> rhs`: `rhs` when `lhs` fails with a catchable error.
    Except {
        lhs: NodeId,
        rhs: NodeId,
    },
    /// `base[index]`: list index or map lookup (catchable error when missing).
    Index {
        base: NodeId,
        index: NodeId,
    },
    /// `base->field`
    Field {
        base: NodeId,
        field: String,
    },
    /// `base->field <|> default`: `default` when the struct *type* has no such field.
    FieldOr {
        base: NodeId,
        field: String,
        default: NodeId,
    },
}

/// A value of a declared type (`vhost{name => "a"}`): `value` is a `Struct` node of
/// every attribute in declared order; unification types the node as that struct plus
/// the type's `tags` (nominal), and the `checks` (attribute checks, enums, invariants)
/// must hold for the value to exist.
#[derive(Clone, Debug)]
pub struct ConstructNode {
    /// The declared type's name; empty for the guard an annotation with an enum puts on
    /// a value (then `value` is any node and `tags` is empty).
    pub ty: String,
    pub value: NodeId,
    pub tags: Vec<String>,
    pub checks: Vec<IrCheck>,
    /// The unsettable attributes this construction leaves out: in the type, not in the
    /// value.
    pub unset: Vec<(String, Type)>,
}

/// A call of an overloaded func (several `func` statements of one name in one scope,
/// every param typed). `candidates` are the lambdas of those whose param count fits,
/// in source order; `signatures` shows every overload, for the error when none fits.
/// Unification picks the first candidate whose params take the arguments' types and
/// rewrites the node into a [`NodeKind::CallValue`] of it: nothing after unification
/// sees a `Dispatch`.
#[derive(Clone, Debug)]
pub struct DispatchNode {
    pub func: String,
    pub candidates: Vec<NodeId>,
    /// Per candidate: where the arguments its repeated param takes start (`None`: it
    /// takes the arguments one per param).
    pub rest_from: Vec<Option<usize>>,
    pub signatures: Vec<String>,
    pub args: Vec<NodeId>,
}

/// Output statements, after includes were inlined.
#[derive(Clone, Debug)]
pub enum IrStmt {
    Resource(IrResource),
    Edge(IrEdge),
    /// `Kind { … }`: checked here once; the resources it applies to carry its fields (with
    /// [`Origin::Default`]) already, so it produces nothing itself.
    Defaults {
        kind: String,
        kind_span: Span,
        fields: Vec<IrField>,
        metas: Vec<IrMeta>,
        span: Span,
    },
    /// `Kind <| query |> [{ … }]`: realizes and overrides what it matches.
    Collect(IrCollector),
    /// `realize(Kind[name], …)`.
    Realize {
        refs: Vec<IrEdgeHalf>,
        span: Span,
    },
    /// `Kind[name] { … }`: sets params of resources declared elsewhere.
    Override {
        target: IrEdgeHalf,
        fields: Vec<IrOverrideField>,
        span: Span,
        /// In a class that inherits: the bodies of its base classes, whose resources it may
        /// change (Puppet's rule for overrides in a derived class).
        replaces: Vec<Span>,
    },
    If {
        cond: NodeId,
        then: Vec<IrStmt>,
        els: Vec<IrStmt>,
        span: Span,
    },
    /// `for` (`kv == false`: `key` is the int index) or `forkv`.
    For {
        iter: NodeId,
        key: ParamId,
        value: ParamId,
        kv: bool,
        body: Vec<IrStmt>,
        span: Span,
    },
    /// A `panic(...)` statement; `check` is the `panic`/`panic_debug` call node (a bool
    /// that is false unless it fails).
    Panic {
        check: NodeId,
        span: Span,
    },
    /// A resource statement whose kind is a defined type (`define vhost(…) { … }`): its
    /// body, once per title.
    Instance(Box<IrInstance>),
}

/// One resource statement of a defined type, elaborated: for each title its params are
/// bound in order (an override of the instance, else the value the statement or a
/// defaults statement gave, else the param's default, which sees the title and the
/// params to its left), then its body is walked with them.
#[derive(Clone, Debug)]
pub struct IrInstance {
    /// The defined type's kind, as resources are named (`vhost`, `web:vhost`).
    pub kind: String,
    pub kind_span: Span,
    /// `str` (one instance) or `[]str` (one per element).
    pub titles: NodeId,
    /// `$name` and `$title` in the define: the instance's title.
    pub title: ParamId,
    pub params: Vec<IrInstanceParam>,
    /// `Meta:x` entries of the statement: every resource of the instance gets those it does
    /// not set itself (Puppet's metaparameters on a defined type).
    pub metas: Vec<IrMeta>,
    /// `@vhost` or `@@vhost`: every resource of the instance is virtual (or exported).
    pub virtuality: crate::syntax::ast::Virtuality,
    /// The classes whose bodies declared the instance (its implicit tags).
    pub classes: Vec<String>,
    /// The define's body; relationships written in the statement's body (`Before => …`)
    /// are edge statements here, with the instance as one side.
    pub body: Vec<IrStmt>,
    /// The resource statement.
    pub span: Span,
}

/// The name of the field (in [`IrResource::fields`] and override bodies) that stands for a
/// `* => value` entry: the walk sets each of the value's entries as a param.
pub const SPLAT: &str = "*";

/// One param of a defined type as an instance binds it.
#[derive(Clone, Debug)]
pub struct IrInstanceParam {
    pub name: String,
    /// The variable the define's body and the later defaults read.
    pub param: ParamId,
    /// Its `Param` node, which carries the param's type annotation.
    pub node: NodeId,
    /// The value the resource statement gives, with its entry.
    pub given: Option<(NodeId, Span)>,
    /// The value a `Kind { … }` defaults statement gives (when the statement does not).
    pub defaulted: Option<(NodeId, Span)>,
    /// The param's own default (`$port int = 80`).
    pub default: Option<NodeId>,
    /// Where the define declares it.
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct IrResource {
    pub kind: String,
    pub kind_span: Span,
    /// `str` (one resource) or `[]str` (one per element); for `collect`, also
    /// `[]struct{name str; host str}`.
    pub name: NodeId,
    pub fields: Vec<IrField>,
    pub edges: Vec<IrBodyEdge>,
    pub metas: Vec<IrMeta>,
    pub collect: bool,
    pub virtuality: crate::syntax::ast::Virtuality,
    /// The classes whose bodies declared it, outermost first (its implicit tags).
    pub classes: Vec<String>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct IrField {
    /// Where the field came from.
    pub origin: Origin,
    /// Shared by every field of this name in the program.
    pub name: std::sync::Arc<str>,
    pub value: NodeId,
    /// `cond ?: value`: the field counts as omitted when `cond` is false.
    pub cond: Option<NodeId>,
    pub span: Span,
}

/// One entry of an override: `name => value` or `name +> value` (`append`).
#[derive(Clone, Debug)]
pub struct IrOverrideField {
    pub name: String,
    pub value: NodeId,
    pub append: bool,
    pub span: Span,
}

/// Where a resource's field or meta param came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Origin {
    /// The resource's own body.
    #[default]
    Written,
    /// A `Kind { … }` defaults statement of an enclosing block (the entry's span says which).
    Default,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EdgeProp {
    Before,
    Depend,
    Notify,
    Listen,
}

impl EdgeProp {
    /// The property an edge entry names, lower-cased (`before`, `notify`, …).
    pub fn parse(name: &str) -> Option<EdgeProp> {
        match name {
            "before" => Some(EdgeProp::Before),
            "depend" => Some(EdgeProp::Depend),
            "notify" => Some(EdgeProp::Notify),
            "listen" => Some(EdgeProp::Listen),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct IrBodyEdge {
    pub prop: EdgeProp,
    pub cond: Option<NodeId>,
    pub target: IrEdgeHalf,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct IrMeta {
    /// `Some("noop")` for `Meta:noop`, `None` for the whole-struct `Meta =>` form.
    pub name: Option<String>,
    pub value: NodeId,
    pub cond: Option<NodeId>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct IrEdgeHalf {
    pub kind: String,
    /// `str` or `[]str`.
    pub name: NodeId,
    /// Send/recv field.
    pub field: Option<String>,
    pub span: Span,
}

/// A relationship chain: `links[i]` relates every resource of `sides[i]` to every one of
/// `sides[i + 1]`.
#[derive(Clone, Debug)]
pub struct IrEdge {
    pub sides: Vec<IrSide>,
    pub links: Vec<IrEdgeLink>,
    pub span: Span,
}

impl IrEdge {
    /// Every reference, in source order.
    pub fn halves(&self) -> impl Iterator<Item = &IrEdgeHalf> {
        self.sides.iter().flat_map(|side| &side.refs)
    }
}

/// One side of a relationship: references, or a collector (every resource it matches).
#[derive(Clone, Debug, Default)]
pub struct IrSide {
    pub refs: Vec<IrEdgeHalf>,
    pub collector: Option<IrCollector>,
}

/// A collector: the resources of `kind` its query matches (`exported`: exported ones only).
#[derive(Clone, Debug)]
pub struct IrCollector {
    pub kind: String,
    pub kind_span: Span,
    pub exported: bool,
    pub query: Option<IrQuery>,
    /// The override block, applied once to each match.
    pub fields: Vec<IrOverrideField>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum IrQuery {
    Compare { attr: String, equal: bool, value: NodeId, span: Span },
    And(Box<IrQuery>, Box<IrQuery>),
    Or(Box<IrQuery>, Box<IrQuery>),
}

impl IrQuery {
    /// Every comparison, in source order.
    pub fn compares(&self) -> Vec<(&str, NodeId, Span)> {
        match self {
            IrQuery::Compare { attr, value, span, .. } => vec![(attr.as_str(), *value, *span)],
            IrQuery::And(a, b) | IrQuery::Or(a, b) => {
                let mut out = a.compares();
                out.extend(b.compares());
                out
            }
        }
    }
}

/// `->` (neither), `~>` (notify), `<-` (backward), `<~` (both).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IrEdgeLink {
    pub notify: bool,
    pub backward: bool,
}
