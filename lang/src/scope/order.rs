//! Per-block ordering analysis, run on the syntax of every block of every file (also class
//! bodies that are never included and funcs that are never called): duplicate definitions
//! and recursion (`not a dag`).
//!
//! The definitions of a block (binds, funcs, classes, import and include aliases) are the
//! vertices; a definition that mentions a name defined in the same block (and not shadowed
//! on the way) has an edge to it. Any cycle is a recursion error, labelled at the use sites
//! along the cycle. Uses inside nested blocks and lambdas count for the definition that
//! contains them, which is how a class including itself through an `if` is found.

use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::span::Span;
use crate::syntax::ast::{self, ExprKind, ImportAlias, InterpPart, ResEntryKind, StmtKind};
use std::collections::{BTreeMap, BTreeSet};

/// A definition key: namespace plus name (`Scoped` is the alias namespace).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Key {
    Var(String),
    Func(String),
    Class(String),
    Type(String),
    Scoped(String),
}

impl Key {
    fn of_var(name: &str) -> Key {
        match name.split_once('.') {
            Some((head, _)) => Key::Scoped(head.to_string()),
            None => Key::Var(name.to_string()),
        }
    }
    fn of_func(name: &str) -> Key {
        match name.split_once('.') {
            Some((head, _)) => Key::Scoped(head.to_string()),
            None => Key::Func(name.to_string()),
        }
    }
    fn of_class(name: &str) -> Key {
        match name.split_once('.') {
            Some((head, _)) => Key::Scoped(head.to_string()),
            None => Key::Class(name.to_string()),
        }
    }
    /// How a definition is named in cycle labels.
    fn shown(&self) -> String {
        match self {
            Key::Var(n) => format!("`${n}`"),
            Key::Func(n) => format!("func `{n}`"),
            Key::Class(n) => format!("class `{n}`"),
            Key::Type(n) => format!("type `{n}`"),
            Key::Scoped(n) => format!("`{n}`"),
        }
    }

    fn describe(&self) -> String {
        match self {
            Key::Var(n) => format!("var:{n}"),
            Key::Func(n) => format!("func:{n}"),
            Key::Class(n) => format!("class:{n}"),
            Key::Type(n) => format!("type:{n}"),
            Key::Scoped(n) => format!("scoped:{n}"),
        }
    }
}

/// Checks every block of a file, recursively.
pub(crate) fn check_file(file: &ast::File, diags: &mut Diagnostics) {
    check_block(&file.stmts, diags);
}

/// The binds of a block, dependencies first (a topological order of the block's
/// definition graph; members of a cycle, already reported, come in any order). Forcing
/// binds in this order keeps elaboration shallow: a long chain of binds written
/// bottom-up would otherwise recurse once per link.
pub(crate) fn bind_order(stmts: &[ast::Stmt]) -> Vec<String> {
    let defs = definitions(stmts, &mut Diagnostics::new());
    let graph = def_graph(&def_edges(&defs));
    // Iterative (a recursive walk would overflow on a long chain of binds); a node's
    // children come out in order of first use, as the edges were added.
    let mut walk = petgraph::visit::DfsPostOrder::empty(&graph);
    let mut out = Vec::new();
    for root in graph.node_indices() {
        if walk.discovered.contains(root.index()) {
            continue;
        }
        walk.move_to(root);
        while let Some(done) = walk.next(&graph) {
            if let Key::Var(name) = &defs[done.index()].key {
                out.push(name.clone());
            }
        }
    }
    out
}

/// The definition graph of [`def_edges`] as a petgraph graph (node `i` is definition `i`).
fn def_graph(edges: &[Vec<(usize, Span)>]) -> petgraph::Graph<(), ()> {
    let mut graph = petgraph::Graph::with_capacity(edges.len(), edges.iter().map(Vec::len).sum());
    for _ in edges {
        graph.add_node(());
    }
    for (from, targets) in edges.iter().enumerate() {
        for &(to, _) in targets {
            graph.add_edge(petgraph::graph::NodeIndex::new(from), petgraph::graph::NodeIndex::new(to), ());
        }
    }
    graph
}

/// For each definition, the definitions of the same block it uses, with the span of its
/// first use, in order of first use.
fn def_edges(defs: &[Def<'_>]) -> Vec<Vec<(usize, Span)>> {
    let index: BTreeMap<&Key, usize> = defs.iter().enumerate().map(|(i, d)| (&d.key, i)).collect();
    // edges[i]: (target, first use span), in source order of first use.
    let mut edges: Vec<Vec<(usize, Span)>> = Vec::with_capacity(defs.len());
    for def in defs {
        let mut uses = Vec::new();
        def_uses(def.stmt, &mut uses);
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for (key, span) in uses {
            if let Some(&target) = index.get(&key)
                && seen.insert(target)
            {
                out.push((target, span));
            }
        }
        edges.push(out);
    }
    edges
}

fn check_block(stmts: &[ast::Stmt], diags: &mut Diagnostics) {
    let defs = definitions(stmts, diags);
    let edges = def_edges(&defs);
    for mut cycle in cycles(&edges) {
        cycle.sort_by_key(|e| e.span);
        let Some(first) = cycle.first().map(|e| e.span) else { continue };
        let mut d = Diagnostic::new(Stage::SetScope, "recursive reference while setting scope: not a dag", first)
            .with_code(Code::ScopeRecursion);
        for e in &cycle {
            let label = if e.from == e.to {
                format!("{} refers to itself here", defs[e.from].key.shown())
            } else {
                format!("{} refers to {} here", defs[e.from].key.shown(), defs[e.to].key.shown())
            };
            d = d.with_label(e.span, label);
        }
        diags.push(d.with_note("definitions may not refer to themselves, directly or through other definitions"));
    }
    for stmt in stmts {
        for block in inner_blocks(stmt) {
            check_block(&block.stmts, diags);
        }
    }
}

struct Def<'a> {
    key: Key,
    stmt: &'a ast::Stmt,
}

/// What a name in a block was defined by, as duplicate errors describe it (`bind(x)`).
enum Defined {
    Bind(String),
    Func(String),
    Class(String),
    Type(String),
    Include(String),
    Import(String),
}

impl std::fmt::Display for Defined {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Defined::Bind(n) => write!(f, "bind({n})"),
            Defined::Func(n) => write!(f, "func({n})"),
            Defined::Class(n) => write!(f, "class({n})"),
            Defined::Type(n) => write!(f, "type({n})"),
            Defined::Include(n) => write!(f, "include({n})"),
            Defined::Import(p) => write!(f, "import({p})"),
        }
    }
}

/// Whether two `func` statements of one name may overload each other: every param of
/// both is typed and their params differ in type or in repetition (defaults may differ;
/// a call takes the first that fits).
pub(super) fn overloadable(a: &ast::Lambda, b: &ast::Lambda) -> bool {
    let types = |l: &ast::Lambda| -> Option<Vec<(crate::types::Type, bool)>> {
        l.params.iter().map(|p| p.ann.as_ref().map(|a| (a.ty.clone(), p.repeated.is_some()))).collect()
    };
    match (types(a), types(b)) {
        (Some(ta), Some(tb)) => ta != tb,
        _ => false,
    }
}

/// The definitions of a block, reporting duplicates (the first one is kept; a later
/// `func` that overloads the earlier ones of its name is no duplicate).
fn definitions<'a>(stmts: &'a [ast::Stmt], diags: &mut Diagnostics) -> Vec<Def<'a>> {
    let mut defs: Vec<Def<'a>> = Vec::new();
    let mut have: BTreeMap<Key, Defined> = BTreeMap::new();
    let mut import_paths: BTreeSet<&str> = BTreeSet::new();
    // The `func` statements of each name so far (overloads of one function).
    let mut funcs: BTreeMap<&str, Vec<&ast::Lambda>> = BTreeMap::new();
    for stmt in stmts {
        let (key, what) = match &stmt.kind {
            StmtKind::Bind { name, .. } => (Key::Var(name.name.clone()), Defined::Bind(name.name.clone())),
            StmtKind::Func { name, .. } => (Key::Func(name.name.clone()), Defined::Func(name.name.clone())),
            StmtKind::Class { name, .. } => (Key::Class(name.name.clone()), Defined::Class(name.name.clone())),
            StmtKind::Type(decl) => (Key::Type(decl.name.name.clone()), Defined::Type(decl.name.name.clone())),
            StmtKind::Include { name, alias: Some(alias), .. } => {
                (Key::Scoped(alias.name.clone()), Defined::Include(name.name.clone()))
            }
            StmtKind::Import { path, alias, .. } => {
                if !import_paths.insert(path.as_str()) {
                    diags.push(
                        Diagnostic::new(
                            Stage::SetScope,
                            format!("import `{path}` already exists in this scope"),
                            stmt.span,
                        )
                        .with_code(Code::DuplicateImport),
                    );
                    continue;
                }
                let name = match alias {
                    Some(ImportAlias::Star(_)) => continue,
                    Some(ImportAlias::Name(n)) => n.name.clone(),
                    None => super::imports::default_namespace(path),
                };
                let key = Key::Scoped(name.clone());
                if let Some(prev) = have.get(&key) {
                    let msg = if matches!(prev, Defined::Import(_)) {
                        format!("import alias `{name}` already exists in this scope")
                    } else {
                        format!(
                            "could not generate ordering: duplicate assignment to `{}`, have: {prev}",
                            key.describe()
                        )
                    };
                    diags.push(Diagnostic::new(Stage::SetScope, msg, stmt.span).with_code(Code::DuplicateAssignment));
                    continue;
                }
                (key, Defined::Import(path.clone()))
            }
            _ => continue,
        };
        if let Some(prev) = have.get(&key) {
            let mut d = Diagnostic::new(
                Stage::SetScope,
                format!("could not generate ordering: duplicate assignment to `{}`, have: {prev}", key.describe()),
                stmt.span,
            )
            .with_code(Code::DuplicateAssignment);
            if let StmtKind::Func { name, func } = &stmt.kind {
                let earlier = funcs.get(name.name.as_str()).map_or(&[][..], Vec::as_slice);
                if earlier.iter().all(|l| overloadable(l, func)) {
                    funcs.entry(&name.name).or_default().push(func);
                    continue;
                }
                d = d.with_note(
                    "`func` statements of one name overload each other only when every param of each is typed \
                     and their param types differ",
                );
            }
            diags.push(d);
            continue;
        }
        if let StmtKind::Func { name, func } = &stmt.kind {
            funcs.entry(&name.name).or_default().push(func);
        }
        have.insert(key.clone(), what);
        defs.push(Def { key, stmt });
    }
    defs
}

/// Names a definition mentions, in source order, minus names shadowed inside it.
fn def_uses(stmt: &ast::Stmt, out: &mut Vec<(Key, Span)>) {
    let mut bound = Bound::default();
    match &stmt.kind {
        StmtKind::Bind { value, .. } => expr_uses(value, &mut bound, out),
        StmtKind::Func { func, .. } => lambda_uses(func, &mut bound, out),
        StmtKind::Class { params, body, .. } => {
            bound.push();
            params_uses(params.iter().flatten(), &mut bound, out);
            block_uses(&body.stmts, &mut bound, out);
            bound.pop();
        }
        StmtKind::Include { .. } => stmt_uses(stmt, &mut bound, out),
        _ => {}
    }
}

/// Names bound by enclosing lambdas and inner blocks (a stack of shadowing layers).
#[derive(Default)]
struct Bound {
    layers: Vec<BTreeSet<Key>>,
}

impl Bound {
    fn push(&mut self) {
        self.layers.push(BTreeSet::new());
    }
    fn pop(&mut self) {
        self.layers.pop();
    }
    fn add(&mut self, key: Key) {
        if let Some(top) = self.layers.last_mut() {
            top.insert(key);
        }
    }
    fn contains(&self, key: &Key) -> bool {
        self.layers.iter().any(|l| l.contains(key))
    }
}

fn note(key: Key, span: Span, bound: &Bound, out: &mut Vec<(Key, Span)>) {
    if !bound.contains(&key) {
        out.push((key, span));
    }
}

fn block_uses(stmts: &[ast::Stmt], bound: &mut Bound, out: &mut Vec<(Key, Span)>) {
    bound.push();
    for stmt in stmts {
        match &stmt.kind {
            StmtKind::Bind { name, .. } => bound.add(Key::Var(name.name.clone())),
            StmtKind::Func { name, .. } => bound.add(Key::Func(name.name.clone())),
            StmtKind::Class { name, .. } => bound.add(Key::Class(name.name.clone())),
            StmtKind::Include { alias: Some(a), .. } => bound.add(Key::Scoped(a.name.clone())),
            StmtKind::Import { path, alias, .. } => match alias {
                Some(ImportAlias::Name(n)) => bound.add(Key::Scoped(n.name.clone())),
                Some(ImportAlias::Star(_)) => {}
                None => bound.add(Key::Scoped(super::imports::default_namespace(path))),
            },
            _ => {}
        }
    }
    for stmt in stmts {
        stmt_uses(stmt, bound, out);
    }
    bound.pop();
}

fn stmt_uses(stmt: &ast::Stmt, bound: &mut Bound, out: &mut Vec<(Key, Span)>) {
    match &stmt.kind {
        StmtKind::Bind { value, .. } => expr_uses(value, bound, out),
        StmtKind::If { cond, then, els } => {
            expr_uses(cond, bound, out);
            block_uses(&then.stmts, bound, out);
            if let Some(els) = els {
                block_uses(&els.stmts, bound, out);
            }
        }
        StmtKind::For { index: a, value: b, iter, body } | StmtKind::ForKv { key: a, value: b, iter, body } => {
            expr_uses(iter, bound, out);
            bound.push();
            bound.add(Key::Var(a.name.clone()));
            bound.add(Key::Var(b.name.clone()));
            block_uses(&body.stmts, bound, out);
            bound.pop();
        }
        StmtKind::Func { func, .. } => lambda_uses(func, bound, out),
        StmtKind::Class { params, body, .. } => {
            bound.push();
            params_uses(params.iter().flatten(), bound, out);
            block_uses(&body.stmts, bound, out);
            bound.pop();
        }
        StmtKind::Include { name, args, .. } => {
            note(Key::of_class(&name.name), stmt.span, bound, out);
            for a in args.iter().flatten() {
                expr_uses(a, bound, out);
            }
        }
        StmtKind::Import { .. } => {}
        StmtKind::Panic { args } => args.iter().for_each(|a| expr_uses(a, bound, out)),
        StmtKind::Resource(res) => {
            expr_uses(&res.name, bound, out);
            entries_uses(&res.entries, bound, out);
        }
        StmtKind::Edge { sides, .. } => {
            for side in sides {
                side.refs.iter().for_each(|h| expr_uses(&h.name, bound, out));
                if let Some(c) = &side.collector {
                    collector_uses(c, bound, out);
                }
            }
        }
        StmtKind::Collect(c) => collector_uses(c, bound, out),
        StmtKind::Type(decl) => {
            let ast::TypeDef::Record(record) = &decl.def else { return };
            // Checks see `$it`, invariants every attribute.
            bound.push();
            bound.add(Key::Var("it".to_string()));
            for attr in &record.attrs {
                bound.add(Key::Var(attr.name.name.clone()));
            }
            for attr in &record.attrs {
                attr.exprs().for_each(|e| expr_uses(e, bound, out));
            }
            record.invariants.iter().for_each(|inv| expr_uses(&inv.expr, bound, out));
            bound.pop();
        }
        StmtKind::Node { body, .. } => {
            bound.push();
            block_uses(&body.stmts, bound, out);
            bound.pop();
        }
        StmtKind::Realize { refs } => refs.iter().for_each(|h| expr_uses(&h.name, bound, out)),
        StmtKind::Defaults { entries, .. } => entries_uses(entries, bound, out),
        StmtKind::Override { target, entries } => {
            expr_uses(&target.name, bound, out);
            entries_uses(entries, bound, out);
        }
    }
}

fn collector_uses(c: &ast::Collector, bound: &mut Bound, out: &mut Vec<(Key, Span)>) {
    c.query.iter().flat_map(ast::Query::values).for_each(|v| expr_uses(v, bound, out));
    entries_uses(&c.entries, bound, out);
}

/// Names the entries of a resource, defaults, override or collector body mention.
fn entries_uses(entries: &[ast::ResEntry], bound: &mut Bound, out: &mut Vec<(Key, Span)>) {
    for entry in entries {
        match &entry.kind {
            ResEntryKind::Field { cond, value, .. } | ResEntryKind::Meta { cond, value, .. } => {
                if let Some(c) = cond {
                    expr_uses(c, bound, out);
                }
                expr_uses(value, bound, out);
            }
            ResEntryKind::Edge { cond, target, .. } => {
                if let Some(c) = cond {
                    expr_uses(c, bound, out);
                }
                expr_uses(&target.name, bound, out);
            }
            ResEntryKind::Append { value, .. } | ResEntryKind::Splat { value } => expr_uses(value, bound, out),
        }
    }
}

fn lambda_uses(lambda: &ast::Lambda, bound: &mut Bound, out: &mut Vec<(Key, Span)>) {
    bound.push();
    params_uses(&lambda.params, bound, out);
    expr_uses(&lambda.body, bound, out);
    bound.pop();
}

/// Binds the params in the innermost level of `bound`, in order: a param's default sees
/// the params to its left.
fn params_uses<'p>(params: impl IntoIterator<Item = &'p ast::Param>, bound: &mut Bound, out: &mut Vec<(Key, Span)>) {
    for p in params {
        if let Some(default) = &p.default {
            expr_uses(default, bound, out);
        }
        bound.add(Key::Var(p.name.name.clone()));
    }
}

fn expr_uses(expr: &ast::Expr, bound: &mut Bound, out: &mut Vec<(Key, Span)>) {
    match &expr.kind {
        ExprKind::Bool(_)
        | ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::RawStr(_)
        | ExprKind::Str(_)
        | ExprKind::Error => {}
        ExprKind::Interp(parts) => {
            for part in parts {
                if let InterpPart::Var(name) = part {
                    note(Key::of_var(&name.name), name.span, bound, out);
                }
            }
        }
        ExprKind::List(items) => items.iter().for_each(|e| expr_uses(e, bound, out)),
        ExprKind::Map(entries) => {
            for (k, v) in entries {
                expr_uses(k, bound, out);
                expr_uses(v, bound, out);
            }
        }
        ExprKind::Struct(fields) | ExprKind::Construct { fields, .. } => {
            fields.iter().for_each(|(_, e)| expr_uses(e, bound, out))
        }
        ExprKind::Var(name) => note(Key::of_var(&name.name), expr.span, bound, out),
        ExprKind::Call { name, args } => {
            note(Key::of_func(&name.name), expr.span, bound, out);
            args.iter().for_each(|e| expr_uses(e, bound, out));
        }
        ExprKind::CallVar { name, args } => {
            note(Key::of_var(&name.name), expr.span, bound, out);
            args.iter().for_each(|e| expr_uses(e, bound, out));
        }
        ExprKind::Lambda(lambda) => lambda_uses(lambda, bound, out),
        ExprKind::CallLambda { lambda, args } => {
            lambda_uses(lambda, bound, out);
            args.iter().for_each(|e| expr_uses(e, bound, out));
        }
        ExprKind::If { cond, then, els } => {
            expr_uses(cond, bound, out);
            expr_uses(then, bound, out);
            expr_uses(els, bound, out);
        }
        ExprKind::Binary { lhs, rhs, .. } => {
            expr_uses(lhs, bound, out);
            expr_uses(rhs, bound, out);
        }
        ExprKind::Not(e)
        | ExprKind::Field { base: e, .. }
        | ExprKind::Annotated { expr: e, .. }
        | ExprKind::Named { value: e, .. } => expr_uses(e, bound, out),
        ExprKind::Index { base, index } => {
            expr_uses(base, bound, out);
            expr_uses(index, bound, out);
        }
        ExprKind::FieldOr { base, default, .. } => {
            expr_uses(base, bound, out);
            expr_uses(default, bound, out);
        }
    }
}

/// The blocks directly nested in a statement (each analysed as its own block).
fn inner_blocks(stmt: &ast::Stmt) -> Vec<&ast::Block> {
    match &stmt.kind {
        StmtKind::If { then, els, .. } => {
            let mut v = vec![then];
            v.extend(els.iter());
            v
        }
        StmtKind::For { body, .. } | StmtKind::ForKv { body, .. } | StmtKind::Class { body, .. } => vec![body],
        _ => Vec::new(),
    }
}

/// One edge of a cycle: definition `from` uses definition `to` at `span`.
struct CycleEdge {
    from: usize,
    to: usize,
    span: Span,
}

/// One cycle per strongly connected component that has one, as its edges. Components in
/// order of their smallest vertex.
fn cycles(edges: &[Vec<(usize, Span)>]) -> Vec<Vec<CycleEdge>> {
    let comps = components(edges);
    let mut out = Vec::new();
    for comp in comps {
        let set: BTreeSet<usize> = comp.iter().copied().collect();
        let start = *set.iter().next().unwrap_or(&0);
        let cyclic = set.len() > 1 || edges[start].iter().any(|(t, _)| *t == start);
        if !cyclic {
            continue;
        }
        // Walk from `start` staying inside the component until we return to `start`:
        // breadth-first search for the shortest path back gives a simple cycle.
        let mut prev: BTreeMap<usize, (usize, Span)> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut found = None;
        'bfs: while let Some(v) = queue.pop_front() {
            for &(t, span) in &edges[v] {
                if !set.contains(&t) {
                    continue;
                }
                if t == start {
                    found = Some((v, span));
                    break 'bfs;
                }
                if let std::collections::btree_map::Entry::Vacant(e) = prev.entry(t) {
                    e.insert((v, span));
                    queue.push_back(t);
                }
            }
        }
        let Some((mut v, span)) = found else { continue };
        let mut cycle = vec![CycleEdge { from: v, to: start, span }];
        while v != start {
            let Some(&(p, s)) = prev.get(&v) else { break };
            cycle.push(CycleEdge { from: p, to: v, span: s });
            v = p;
        }
        out.push((start, cycle));
    }
    out.sort_by_key(|(s, _)| *s);
    out.into_iter().map(|(_, s)| s).collect()
}

/// Strongly connected components, by petgraph's Kosaraju: iterative, so a chain of binds
/// as long as a program can hold never overflows the stack (petgraph's Tarjan recurses).
fn components(edges: &[Vec<(usize, Span)>]) -> Vec<Vec<usize>> {
    let graph = def_graph(edges);
    let comps = petgraph::algo::kosaraju_scc(&graph);
    comps.into_iter().map(|comp| comp.into_iter().map(|n| n.index()).collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::span::FileId;

    fn file(text: &str) -> ast::File {
        let (file, diags) = crate::syntax::parse(FileId(0), text);
        assert!(diags.is_empty(), "{:?}", diags.first());
        file
    }

    #[test]
    fn a_long_chain_of_binds_is_ordered_dependencies_first_without_recursion() {
        // Written last-first: each bind uses the one after it.
        let n = 200_000;
        let mut text: String = (0..n - 1).map(|i| format!("$v{i} = $v{}\n", i + 1)).collect();
        text.push_str(&format!("$v{} = 1\n", n - 1));
        let order = bind_order(&file(&text).stmts);
        assert_eq!(order.len(), n);
        assert_eq!(order.first().map(String::as_str), Some(format!("v{}", n - 1).as_str()));
        assert_eq!(order.last().map(String::as_str), Some("v0"));
    }

    #[test]
    fn a_long_cycle_is_reported_once_with_every_link() {
        let n = 100_000;
        let text: String = (0..n).map(|i| format!("$v{i} = $v{}\n", (i + 1) % n)).collect();
        let mut diags = Diagnostics::new();
        check_file(&file(&text), &mut diags);
        assert_eq!(diags.len(), 1);
        let d = diags.first().expect("one error");
        assert_eq!(d.code, Some(Code::ScopeRecursion));
        assert_eq!(d.labels.len(), n, "every use on the cycle is named");
    }

    #[test]
    fn binds_come_after_what_they_use_in_first_use_order() {
        let order = bind_order(&file("$a = $c + $b\n$b = $c\n$c = 1\n$d = 2\n").stmts);
        assert_eq!(order, ["c", "b", "a", "d"]);
    }
}
