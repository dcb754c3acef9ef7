//! Provenance: the static dependency tree of a function graph node (what literals,
//! binds, built-in calls, inlined funcs, parameters and streaming facts a value is made
//! of), the statements that gate a resource statement, and a source index that names
//! bind nodes and class includes. Values are not known here; `tend why` adds them.
//! [`probe`] makes the copy of a graph whose one run gives those values.

pub mod probe;

use std::collections::{BTreeMap, HashSet};

use crate::ir::{FuncGraph, IrResource, IrStmt, NodeId, NodeKind, Op, ParamId};
use crate::span::{SourceMap, Span};
use crate::syntax::ast::{self, StmtKind};

/// Deepest level of a tree; below it an entry is marked [`Entry::truncated`].
pub const MAX_DEPTH: usize = 16;
/// Most children shown per entry (long list literals); the rest are counted.
pub const MAX_CHILDREN: usize = 24;

/// How a value got its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindHow {
    /// A bind statement, or an argument in its position.
    Bind,
    /// A param's or an attribute's default value.
    Default,
    /// A named argument (`name => value`).
    Named,
}

/// What the source says about some spans: bind names and class includes.
#[derive(Clone, Debug, Default)]
pub struct SourceIndex {
    /// Bind value span → (`name` without `$`, span of the whole bind statement, how).
    binds: BTreeMap<Span, (String, Span, BindHow)>,
    /// Class definitions: (name, whole statement span, parameter names).
    classes: Vec<(String, Span, Vec<String>)>,
    /// `func` statements by name: their parameter names.
    funcs: BTreeMap<String, Vec<String>>,
    /// Binds whose value is just another variable (`$c = $b`): (name, target, bind span).
    aliases: Vec<(String, String, Span)>,
    /// Include arguments: (argument span, class name, argument position, include span).
    include_args: Vec<(Span, String, usize, Span)>,
    /// Include statements: (class name, whole statement span).
    includes: Vec<(String, Span)>,
}

impl SourceIndex {
    /// Parses every file of `sources` again (cheap, no IO) and records binds and classes.
    pub fn build(sources: &SourceMap) -> SourceIndex {
        let mut index = SourceIndex::default();
        // Call arguments of named calls: (arg span, callee, position, call span).
        let mut call_args: Vec<(Span, String, usize, Span)> = Vec::new();
        // Named arguments (`name => value`): (value span, param, argument span).
        let mut named: Vec<(Span, String, Span)> = Vec::new();
        for (id, file) in sources.files() {
            let (mut ast, _) = crate::syntax::parse(id, &file.text);
            index.add_stmts(&ast.stmts);
            crate::syntax::visit::exprs_mut(&mut ast.stmts, &mut |e| {
                if let ast::ExprKind::Call { name, args } = &e.kind {
                    for (i, a) in args.iter().enumerate() {
                        call_args.push((a.span, name.name.clone(), i, e.span));
                    }
                }
                if let ast::ExprKind::Named { name, value } = &e.kind {
                    named.push((value.span, name.name.clone(), e.span));
                }
            });
        }
        for (span, param, arg) in named {
            index.binds.entry(span).or_insert((param, arg, BindHow::Named));
        }
        // Arguments of calls of `func` statements are named by the func's parameters.
        for (span, func, i, call) in call_args {
            if let Some(p) = index.funcs.get(&func).and_then(|ps| ps.get(i)) {
                index.binds.entry(span).or_insert((p.clone(), call, BindHow::Bind));
            }
        }
        // Include arguments are named by the included class's parameters.
        let args = std::mem::take(&mut index.include_args);
        for (span, class, i, inc) in &args {
            let last = class.rsplit(['.', ':']).next().unwrap_or(class);
            let param = index
                .classes
                .iter()
                .find(|(n, _, _)| n == class || n.rsplit(':').next() == Some(last))
                .and_then(|(_, _, ps)| ps.get(*i).cloned());
            if let Some(p) = param {
                index.binds.entry(*span).or_insert((p, *inc, BindHow::Bind));
            }
        }
        index
    }

    /// A param's default value is named as the param, from the param to the default.
    fn add_defaults<'p>(&mut self, params: impl IntoIterator<Item = &'p ast::Param>) {
        for p in params {
            if let Some(default) = &p.default {
                let site = (p.name.name.clone(), p.name.span.to(default.span), BindHow::Default);
                self.binds.entry(default.span).or_insert(site);
            }
        }
    }

    fn add_stmts(&mut self, stmts: &[ast::Stmt]) {
        for stmt in stmts {
            match &stmt.kind {
                StmtKind::Bind { name, value, .. } => {
                    if let ast::ExprKind::Var(target) = &value.kind {
                        self.aliases.push((name.name.clone(), target.name.clone(), stmt.span));
                    }
                    self.binds.entry(value.span).or_insert((name.name.clone(), stmt.span, BindHow::Bind));
                }
                StmtKind::If { then, els, .. } => {
                    self.add_stmts(&then.stmts);
                    if let Some(b) = els {
                        self.add_stmts(&b.stmts);
                    }
                }
                StmtKind::For { body, .. } | StmtKind::ForKv { body, .. } => self.add_stmts(&body.stmts),
                StmtKind::Class { name, body, params, define, .. } => {
                    let ps = params.iter().flatten().map(|p| p.name.name.clone()).collect();
                    if define.is_none() {
                        self.classes.push((name.name.clone(), stmt.span, ps));
                    }
                    self.add_defaults(params.iter().flatten());
                    self.add_stmts(&body.stmts);
                }
                StmtKind::Func { name, func } => {
                    let ps = func.params.iter().map(|p| p.name.name.clone()).collect();
                    self.funcs.entry(name.name.clone()).or_insert(ps);
                    self.add_defaults(&func.params);
                }
                StmtKind::Type(decl) => {
                    // An attribute's default is named as the attribute.
                    if let ast::TypeDef::Record(record) = &decl.def {
                        for attr in &record.attrs {
                            if let Some(default) = &attr.default {
                                let site = (attr.name.name.clone(), attr.span, BindHow::Default);
                                self.binds.entry(default.span).or_insert(site);
                            }
                        }
                    }
                }
                StmtKind::Include { name, args, .. } => {
                    self.includes.push((name.name.clone(), stmt.span));
                    for (i, a) in args.iter().flatten().enumerate() {
                        self.include_args.push((a.span, name.name.clone(), i, stmt.span));
                    }
                }
                _ => {}
            }
        }
    }

    /// The bind whose value expression is exactly `span`.
    pub fn bind_at(&self, span: Span) -> Option<(&str, Span, BindHow)> {
        self.binds.get(&span).map(|(n, s, how)| (n.as_str(), *s, *how))
    }

    /// Binds in the same file that are plain copies of bind `name` (`$c = $b` for `b`),
    /// transitively, by name (shadowing is not resolved: this is a reading aid).
    pub fn aliases_of(&self, name: &str, file: crate::span::FileId) -> Vec<(String, Span)> {
        let mut out: Vec<(String, Span)> = Vec::new();
        let mut todo = vec![name.to_string()];
        while let Some(t) = todo.pop() {
            for (a, target, span) in &self.aliases {
                if *target == t && span.file == file && !out.iter().any(|(n, _)| n == a) && a != name {
                    out.push((a.clone(), *span));
                    todo.push(a.clone());
                }
            }
        }
        out.sort_by_key(|(_, s)| *s);
        out
    }

    /// The innermost class whose body holds `span`, with the include statements of a
    /// class of that name (any of them may be the one that produced it).
    pub fn class_of(&self, span: Span) -> Option<(&str, Span, Vec<Span>)> {
        let (name, class_span, _) = self
            .classes
            .iter()
            .filter(|(_, s, _)| s.file == span.file && s.start <= span.start && span.end <= s.end)
            .min_by_key(|(_, s, _)| s.end - s.start)?;
        let last = name.rsplit(':').next().unwrap_or(name);
        let includes = self
            .includes
            .iter()
            .filter(|(n, _)| n == name || n.rsplit('.').next() == Some(last) || n.ends_with(&format!(":{last}")))
            .map(|(_, s)| *s)
            .collect();
        Some((name, *class_span, includes))
    }
}

/// What a node is, for a reader.
#[derive(Clone, Debug, PartialEq)]
pub enum What {
    Literal,
    List,
    Map,
    Struct,
    /// An interpolated string `"...${x}..."`.
    Interpolation,
    /// A call of a pure built-in.
    Builtin(String),
    /// A call of a streaming built-in: a fact about the world that can change.
    Fact(String),
    /// The inlined body of one call of the `func` statement of that name.
    Inline(String),
    /// A call of a function value.
    CallValue,
    /// A call of an overloaded func: its name and the signature of the overload chosen.
    Overload(String, String),
    /// A value of a declared type.
    Construct(String),
    Lambda,
    LambdaParam(String),
    LoopVar(String),
    /// A param of a defined type's instance (or its title, `$name`).
    DefineParam(String),
    If,
    /// `lhs <|> rhs`.
    Except,
    Operator(String),
    Index,
    Field(String),
}

impl What {
    pub fn describe(&self) -> String {
        match self {
            What::Literal => "literal".into(),
            What::List => "list".into(),
            What::Map => "map".into(),
            What::Struct => "struct".into(),
            What::Interpolation => "interpolated string".into(),
            What::Builtin(f) => format!("call of built-in `{f}`"),
            What::Fact(f) => format!("fact `{f}` (streaming; may change)"),
            What::Inline(f) => format!("call of func `{f}` (inlined)"),
            What::CallValue => "call of a function value".into(),
            What::Overload(f, sig) => format!("call of func `{f}`, the overload `{sig}`"),
            What::Construct(t) => format!("value of type `{t}`"),
            What::Lambda => "lambda".into(),
            What::LambdaParam(p) => format!("lambda parameter `${p}`"),
            What::LoopVar(p) => format!("loop variable `${p}`"),
            What::DefineParam(p) => format!("param `${p}` of the defined type's instance"),
            What::If => "if expression".into(),
            What::Except => "`<|>` fallback".into(),
            What::Operator(o) => format!("operator `{o}`"),
            What::Index => "index".into(),
            What::Field(f) => format!("field `->{f}`"),
        }
    }

    /// A short machine-readable kind for JSON.
    pub fn key(&self) -> &'static str {
        match self {
            What::Literal => "literal",
            What::List => "list",
            What::Map => "map",
            What::Struct => "struct",
            What::Interpolation => "interpolation",
            What::Builtin(_) => "builtin",
            What::Fact(_) => "fact",
            What::Inline(_) => "func",
            What::CallValue => "call_value",
            What::Overload(..) => "overload",
            What::Construct(_) => "construct",
            What::Lambda => "lambda",
            What::LambdaParam(_) => "lambda_param",
            What::LoopVar(_) => "loop_var",
            What::DefineParam(_) => "define_param",
            What::If => "if",
            What::Except => "except",
            What::Operator(_) => "operator",
            What::Index => "index",
            What::Field(_) => "field",
        }
    }
}

/// A condition under which a node is evaluated: `node` must be `holds`.
pub type Gate = (NodeId, bool);

/// One node of a provenance tree.
#[derive(Clone, Debug)]
pub struct Entry {
    pub node: NodeId,
    pub what: What,
    pub span: Span,
    /// How the parent uses it (`arg 1`, `cond`, `then`, ...); empty at the root.
    pub role: String,
    /// `Some((name, bind statement span, how))` when the node is the value of a bind (or
    /// of a param, through an argument or a default).
    pub bind: Option<(String, Span, BindHow)>,
    pub children: Vec<Entry>,
    /// Already shown earlier in the same traversal; children omitted.
    pub repeat: bool,
    /// Evaluated per call of a lambda, or only when a fallback is needed: no single
    /// value is known for it.
    pub per_call: bool,
    /// Under the fallback of a `<|>` or a `->field <|> default` (evaluated only when
    /// the left side fails or lacks the field).
    pub fallback: bool,
    /// Conditions under which the node is evaluated (if-expression branches).
    pub gates: Vec<Gate>,
    /// Children not shown: beyond [`MAX_DEPTH`] or [`MAX_CHILDREN`].
    pub truncated: usize,
}

/// Builds provenance trees over one graph; shares "seen" state across calls so that a
/// node that feeds several params is expanded once.
pub struct Builder<'a> {
    graph: &'a FuncGraph,
    index: &'a SourceIndex,
    is_fact: &'a dyn Fn(&str) -> bool,
    loop_params: HashSet<ParamId>,
    /// The titles of the instances of defined types.
    titles: HashSet<ParamId>,
    seen: HashSet<NodeId>,
}

impl<'a> Builder<'a> {
    pub fn new(graph: &'a FuncGraph, index: &'a SourceIndex, is_fact: &'a dyn Fn(&str) -> bool) -> Builder<'a> {
        let mut loop_params = HashSet::new();
        collect_loop_params(&graph.stmts, &mut loop_params);
        let mut titles = HashSet::new();
        each_instance(&graph.stmts, &mut |i| {
            titles.insert(i.title);
        });
        Builder { graph, index, is_fact, loop_params, titles, seen: HashSet::new() }
    }

    /// Forgets which nodes were shown (start of a new, independent report).
    pub fn reset(&mut self) {
        self.seen.clear();
    }

    /// The provenance tree of `node`, evaluated under `gates`.
    pub fn tree(&mut self, node: NodeId, role: &str, gates: &[Gate]) -> Entry {
        self.entry(node, role.to_string(), gates.to_vec(), false, 0, None)
    }

    /// What a node is.
    pub fn what(&self, node: NodeId) -> What {
        match &self.graph.node(node).kind {
            NodeKind::Const(_) => What::Literal,
            NodeKind::List(_) => What::List,
            NodeKind::Map(_) => What::Map,
            NodeKind::Struct(_) => What::Struct,
            NodeKind::Param(p) => {
                let name = self.graph.params.get(p.0 as usize).map(|i| i.name.clone()).unwrap_or_default();
                if self.graph.param_values.contains_key(p) || self.titles.contains(p) {
                    What::DefineParam(name)
                } else if self.loop_params.contains(p) {
                    What::LoopVar(name)
                } else {
                    What::LambdaParam(name)
                }
            }
            NodeKind::Interp(_) => What::Interpolation,
            NodeKind::Call { func, .. } if (self.is_fact)(func) => What::Fact(func.clone()),
            NodeKind::Call { func, .. } => What::Builtin(func.clone()),
            NodeKind::CallValue { .. } => match self.graph.overloads.get(&node) {
                Some((func, sig)) => What::Overload(func.clone(), sig.clone()),
                None => What::CallValue,
            },
            NodeKind::Inline { func, .. } => What::Inline(func.clone()),
            NodeKind::Dispatch(d) => What::Inline(d.func.clone()),
            NodeKind::Construct(c) if c.ty.is_empty() => What::Construct("enum".into()),
            NodeKind::Construct(c) => What::Construct(c.ty.clone()),
            NodeKind::Lambda { .. } => What::Lambda,
            NodeKind::If { .. } => What::If,
            NodeKind::Op { op: Op::Not, .. } => What::Operator("not".into()),
            NodeKind::Op { op: Op::Bin(b), .. } => What::Operator(b.as_str().into()),
            NodeKind::Except { .. } => What::Except,
            NodeKind::Index { .. } => What::Index,
            NodeKind::Field { field, .. } | NodeKind::FieldOr { field, .. } => What::Field(field.clone()),
        }
    }

    fn entry(
        &mut self,
        node: NodeId,
        role: String,
        gates: Vec<Gate>,
        per_call: bool,
        depth: usize,
        parent: Option<Span>,
    ) -> Entry {
        let n = self.graph.node(node);
        let what = self.what(node);
        // The literal parts of an interpolation carry the whole string's span: they are
        // not the bind that string may be the value of.
        let bind = if parent == Some(n.span) {
            None
        } else {
            self.index.bind_at(n.span).map(|(name, s, how)| (name.to_string(), s, how))
        };
        let mut e = Entry {
            node,
            what,
            span: n.span,
            role,
            bind,
            children: Vec::new(),
            repeat: false,
            per_call,
            fallback: false,
            gates: gates.clone(),
            truncated: 0,
        };
        // Literals are leaves and cheap to repeat; everything else is shown once.
        let leaf = matches!(n.kind, NodeKind::Const(_) | NodeKind::Param(_));
        if !leaf && !self.seen.insert(node) {
            e.repeat = true;
            return e;
        }
        let kids = self.children(node, &gates, per_call);
        if depth >= MAX_DEPTH {
            e.truncated = kids.len();
            return e;
        }
        let total = kids.len();
        for (child, role, gates, per_call) in kids.into_iter().take(MAX_CHILDREN) {
            let fallback = matches!(role.as_str(), "fallback" | "default") || (e.fallback && per_call);
            let mut c = self.entry(child, role, gates, per_call, depth + 1, Some(e.span));
            c.fallback = fallback && !matches!(e.what, What::Lambda);
            e.children.push(c);
        }
        e.truncated = total.saturating_sub(MAX_CHILDREN);
        e
    }

    /// Operands with their role, gates and whether they are evaluated per call.
    fn children(&self, node: NodeId, gates: &[Gate], per_call: bool) -> Vec<(NodeId, String, Vec<Gate>, bool)> {
        let plain = |c: NodeId, role: String| (c, role, gates.to_vec(), per_call);
        let gated = |c: NodeId, role: &str, g: Gate| {
            let mut gs = gates.to_vec();
            gs.push(g);
            (c, role.to_string(), gs, per_call)
        };
        let numbered = |args: &[NodeId], word: &str| -> Vec<_> {
            args.iter().enumerate().map(|(i, a)| plain(*a, format!("{word} {}", i + 1))).collect()
        };
        match &self.graph.node(node).kind {
            NodeKind::Const(_) | NodeKind::Param(_) => Vec::new(),
            NodeKind::List(items) => numbered(items, "item"),
            NodeKind::Interp(items) => numbered(items, "part"),
            NodeKind::Map(pairs) => pairs
                .iter()
                .enumerate()
                .flat_map(|(i, (k, v))| [plain(*k, format!("key {}", i + 1)), plain(*v, format!("value {}", i + 1))])
                .collect(),
            NodeKind::Struct(fields) => fields.iter().map(|(name, v)| plain(*v, format!("field {name}"))).collect(),
            NodeKind::Call { args, .. } | NodeKind::Op { args, .. } => numbered(args, "arg"),
            NodeKind::CallValue { callee, args } => {
                let mut v = vec![plain(*callee, "callee".into())];
                v.extend(numbered(args, "arg"));
                v
            }
            NodeKind::Inline { body, .. } => vec![plain(*body, "body".into())],
            NodeKind::Dispatch(d) => numbered(&d.args, "arg"),
            NodeKind::Construct(c) => vec![plain(c.value, "attributes".into())],
            NodeKind::Lambda { body, .. } => vec![(*body, "body".into(), gates.to_vec(), true)],
            NodeKind::If { cond, then, els } => vec![
                plain(*cond, "cond".into()),
                gated(*then, "then", (*cond, true)),
                gated(*els, "else", (*cond, false)),
            ],
            NodeKind::Except { lhs, rhs } => {
                vec![plain(*lhs, "try".into()), (*rhs, "fallback".into(), gates.to_vec(), true)]
            }
            NodeKind::Index { base, index } => vec![plain(*base, "base".into()), plain(*index, "index".into())],
            NodeKind::Field { base, .. } => vec![plain(*base, "base".into())],
            NodeKind::FieldOr { base, default, .. } => {
                vec![plain(*base, "base".into()), (*default, "default".into(), gates.to_vec(), true)]
            }
        }
    }
}

/// Calls `f` on every instance of a defined type, nested ones too.
fn each_instance(stmts: &[IrStmt], f: &mut dyn FnMut(&crate::ir::IrInstance)) {
    for s in stmts {
        match s {
            IrStmt::If { then, els, .. } => {
                each_instance(then, f);
                each_instance(els, f);
            }
            IrStmt::For { body, .. } => each_instance(body, f),
            IrStmt::Instance(i) => {
                f(i);
                each_instance(&i.body, f);
            }
            _ => {}
        }
    }
}

fn collect_loop_params(stmts: &[IrStmt], out: &mut HashSet<ParamId>) {
    for s in stmts {
        match s {
            IrStmt::If { then, els, .. } => {
                collect_loop_params(then, out);
                collect_loop_params(els, out);
            }
            IrStmt::For { key, value, body, .. } => {
                out.insert(*key);
                out.insert(*value);
                collect_loop_params(body, out);
            }
            IrStmt::Instance(i) => {
                out.insert(i.title);
                out.extend(i.params.iter().map(|p| p.param));
                collect_loop_params(&i.body, out);
            }
            _ => {}
        }
    }
}

/// A statement that encloses a resource statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Enclosing {
    /// `if cond { ... }`; `then` tells which branch holds the resource.
    If { cond: NodeId, then: bool, span: Span },
    /// `for`/`forkv` with its two loop parameters.
    For { iter: NodeId, key: ParamId, value: ParamId, kv: bool, span: Span },
    /// An instance of a defined type (`vhost "shop" { … }`) with its title's parameter.
    Instance { kind: String, title: ParamId, span: Span },
}

/// A resource statement with the statements around it (outermost first) and its
/// position in a pre-order walk of all statements (a stable id).
#[derive(Clone, Debug)]
pub struct Located<'a> {
    pub id: usize,
    pub resource: &'a IrResource,
    pub enclosing: Vec<Enclosing>,
}

/// Calls `f` on every resource statement, in program order (those inside `if` and `for`
/// bodies too).
pub fn each_resource<'a>(graph: &'a FuncGraph, mut f: impl FnMut(&'a IrResource)) {
    walk(&graph.stmts, &mut Vec::new(), &mut 0, &mut |_, r, _| f(r));
}

/// Every resource statement of `graph` whose kind is `kind`, in program order.
pub fn resources_of_kind<'a>(graph: &'a FuncGraph, kind: &str) -> Vec<Located<'a>> {
    let mut out = Vec::new();
    let mut counter = 0;
    let mut stack = Vec::new();
    walk(&graph.stmts, &mut stack, &mut counter, &mut |id, r, stack| {
        if r.kind == kind {
            out.push(Located { id, resource: r, enclosing: stack.to_vec() });
        }
    });
    out
}

fn walk<'a>(
    stmts: &'a [IrStmt],
    stack: &mut Vec<Enclosing>,
    counter: &mut usize,
    f: &mut dyn FnMut(usize, &'a IrResource, &[Enclosing]),
) {
    for s in stmts {
        match s {
            IrStmt::Resource(r) => {
                f(*counter, r, stack);
                *counter += 1;
            }
            IrStmt::If { cond, then, els, span } => {
                stack.push(Enclosing::If { cond: *cond, then: true, span: *span });
                walk(then, stack, counter, f);
                stack.pop();
                stack.push(Enclosing::If { cond: *cond, then: false, span: *span });
                walk(els, stack, counter, f);
                stack.pop();
            }
            IrStmt::For { iter, key, value, kv, body, span } => {
                stack.push(Enclosing::For { iter: *iter, key: *key, value: *value, kv: *kv, span: *span });
                walk(body, stack, counter, f);
                stack.pop();
            }
            IrStmt::Instance(i) => {
                stack.push(Enclosing::Instance { kind: i.kind.clone(), title: i.title, span: i.span });
                walk(&i.body, stack, counter, f);
                stack.pop();
            }
            IrStmt::Edge(_)
            | IrStmt::Panic { .. }
            | IrStmt::Defaults { .. }
            | IrStmt::Override { .. }
            | IrStmt::Collect(_)
            | IrStmt::Realize { .. } => {}
        }
    }
}

/// Mutable access to the statement list that holds resource statement `id` (as
/// numbered by [`resources_of_kind`]) and its index in it, to insert a statement next
/// to it.
pub fn statement_slot(stmts: &mut Vec<IrStmt>, id: usize) -> Option<(&mut Vec<IrStmt>, usize)> {
    let mut path = Vec::new();
    let mut counter = 0;
    if !locate(stmts, id, &mut counter, &mut path) {
        return None;
    }
    let (&last, steps) = path.split_last()?;
    let mut list = stmts;
    for &(i, branch) in steps {
        list = match (&mut list[i], branch) {
            (IrStmt::If { then, .. }, 0) => then,
            (IrStmt::If { els, .. }, _) => els,
            (IrStmt::For { body, .. }, _) => body,
            (IrStmt::Instance(i), _) => &mut i.body,
            _ => return None,
        };
    }
    Some((list, last.0))
}

/// Finds the path (statement index, branch: 0 then/body, 1 else) to resource `id`.
fn locate(stmts: &[IrStmt], id: usize, counter: &mut usize, path: &mut Vec<(usize, u8)>) -> bool {
    for (i, s) in stmts.iter().enumerate() {
        let branches: Vec<(&[IrStmt], u8)> = match s {
            IrStmt::Resource(_) => {
                if *counter == id {
                    path.push((i, 0));
                    return true;
                }
                *counter += 1;
                continue;
            }
            IrStmt::If { then, els, .. } => vec![(then, 0), (els, 1)],
            IrStmt::For { body, .. } => vec![(body, 0)],
            IrStmt::Instance(i) => vec![(&i.body, 0)],
            IrStmt::Edge(_)
            | IrStmt::Panic { .. }
            | IrStmt::Defaults { .. }
            | IrStmt::Override { .. }
            | IrStmt::Collect(_)
            | IrStmt::Realize { .. } => continue,
        };
        for (list, branch) in branches {
            path.push((i, branch));
            if locate(list, id, counter, path) {
                return true;
            }
            path.pop();
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::IrField;
    use crate::value::Value;

    fn res(g: &mut FuncGraph, name: &str) -> IrStmt {
        let n = g.add(NodeKind::Const(Value::str(name)), Span::default());
        IrStmt::Resource(IrResource {
            kind: "file".into(),
            kind_span: Span::default(),
            name: n,
            fields: vec![IrField {
                origin: Default::default(),
                name: "content".into(),
                value: n,
                cond: None,
                span: Span::default(),
            }],
            edges: vec![],
            metas: vec![],
            collect: false,
            virtuality: Default::default(),
            classes: Vec::new(),
            span: Span::default(),
        })
    }

    fn name_of(g: &FuncGraph, s: &IrStmt) -> String {
        match s {
            IrStmt::Resource(r) => match &g.node(r.name).kind {
                NodeKind::Const(v) => v.to_raw_string(),
                _ => String::new(),
            },
            _ => String::new(),
        }
    }

    #[test]
    fn slots_follow_the_numbering_of_resources_of_kind() {
        let mut g = FuncGraph::default();
        let a = res(&mut g, "a");
        let b = res(&mut g, "b");
        let c = res(&mut g, "c");
        let d = res(&mut g, "d");
        let cond = g.add(NodeKind::Const(Value::Bool(true)), Span::default());
        let p = g.add_param("i", Span::default());
        let q = g.add_param("v", Span::default());
        let iter = g.add(NodeKind::List(vec![]), Span::default());
        g.stmts = vec![
            a,
            IrStmt::If { cond, then: vec![b], els: vec![c], span: Span::default() },
            IrStmt::For { iter, key: p, value: q, kv: false, body: vec![d], span: Span::default() },
        ];
        let found = resources_of_kind(&g, "file");
        assert_eq!(found.len(), 4);
        assert!(matches!(found[2].enclosing[..], [Enclosing::If { then: false, .. }]));
        assert!(matches!(found[3].enclosing[..], [Enclosing::For { .. }]));
        let mut stmts = g.stmts.clone();
        for (id, want) in ["a", "b", "c", "d"].iter().enumerate() {
            let (list, i) = statement_slot(&mut stmts, id).expect("slot");
            assert_eq!(&name_of(&g, &list[i]), want);
        }
        assert!(statement_slot(&mut stmts, 4).is_none());
    }

    #[test]
    fn shared_nodes_are_expanded_once_and_branches_are_gated() {
        let mut g = FuncGraph::default();
        let s = Span::default();
        let x = g.add(NodeKind::Const(Value::Int(1)), s);
        let sum = g.add(NodeKind::Op { op: Op::Bin(ast::BinOp::Add), args: vec![x, x] }, s);
        let c = g.add(NodeKind::Const(Value::Bool(true)), s);
        let iff = g.add(NodeKind::If { cond: c, then: sum, els: sum }, s);
        let index = SourceIndex::default();
        let facts = |f: &str| f == "datetime.now";
        let mut b = Builder::new(&g, &index, &facts);
        let t = b.tree(iff, "", &[]);
        assert_eq!(t.what, What::If);
        assert_eq!(t.children[1].gates, vec![(c, true)]);
        assert_eq!(t.children[1].children.len(), 2);
        assert!(t.children[2].repeat, "the else branch is the same node, shown once");
    }
}
