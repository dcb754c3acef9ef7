//! The statement walk: evaluates what the program's statements need, in program
//! order, and turns it into an [`Output`]. Only the active branch of an `if` is walked;
//! loop bodies are walked once per element with the loop parameters bound, and the body
//! of an instance of a defined type once per title with its params bound (an override of
//! the instance, found by a first pass over the overrides of defined types, first).

use lang::diag::Code;
use lang::diag::{Diagnostic, Stage};
use lang::ir::{
    IrCollector, IrEdge, IrEdgeHalf, IrInstance, IrMeta, IrOverrideField, IrQuery, IrResource, IrStmt, NodeId, Origin,
    SPLAT,
};
use lang::output::{
    BodyEdge, CollectorDecl, EdgeDecl, EdgeEnd, InstanceDecl, Output, OverrideDecl, OverrideParam, Query, RealizeDecl,
    ResDecl, Virtuality,
};
use lang::span::Span;
use lang::value::{Env, Value};
use std::collections::BTreeMap;

use crate::runtime::evaluator::Evaluator;

/// What one walk produced.
pub(crate) enum Walked {
    Ready(Output),
    /// Some needed value is not known yet (a stream has not produced).
    Pending,
    /// An error reached a statement.
    Failed(Diagnostic),
}

/// Walks the statements; `previous` is the last output sent, whose declarations stand in
/// for resources fed by a value a declared type's checks reject.
pub(crate) fn walk(engine: &Evaluator, previous: Option<&Output>) -> Walked {
    let graph = engine.graph.clone();
    let mut w = Walker {
        engine,
        previous,
        out: Output::default(),
        pending: false,
        within: Vec::new(),
        define_overrides: BTreeMap::new(),
    };
    if !graph.defines.is_empty()
        && let Err(d) = w.define_overrides(&graph.stmts, &Env::empty())
    {
        return Walked::Failed(d);
    }
    // Sized like the last output, or else a declaration per top-level resource statement:
    // doubling its way up, a large program's list was copied over and over (about 20 ms
    // at 100,000 resources).
    let expected = previous.map_or_else(
        || graph.stmts.iter().filter(|s| matches!(s, IrStmt::Resource(_))).count(),
        |last| last.resources.len(),
    );
    w.out.resources.reserve_exact(expected);
    match w.stmts(&graph.stmts, &Env::empty()) {
        Err(d) => Walked::Failed(d),
        Ok(()) if w.pending => Walked::Pending,
        Ok(()) => match w.define_overrides.values().flatten().find(|o| !o.used) {
            // An override of an instance nothing declared, as for a resource.
            Some(o) => Walked::Failed(
                Diagnostic::new(
                    Stage::Interpret,
                    format!("override of a resource that does not exist: {}[{}]", o.kind, o.title),
                    o.target_span,
                )
                .with_code(Code::UnknownResource),
            ),
            None => Walked::Ready(w.out),
        },
    }
}

/// The params a `* =>` entry at `span` sets.
fn splat(value: &Value, span: Span) -> Result<Vec<(String, Value)>, Diagnostic> {
    value.splat_entries().ok_or_else(|| {
        Diagnostic::new(Stage::Interpret, format!("`* =>` takes a struct or a map with str keys, got {value}"), span)
            .with_code(Code::TypeError)
    })
}

/// A param a body sets both through `* =>` (at `splat`) and by its own entry (`written`).
fn twice_set(name: &str, splat: Span, written: Span) -> Diagnostic {
    Diagnostic::new(Stage::Interpret, format!("resource has duplicate field of: {name}"), splat)
        .with_code(Code::InvalidStatement)
        .with_label(written, format!("`{name}` is written here too"))
        .with_note("`* =>` sets its entries as if each were written in the body, so each name may appear once")
}

/// An instance of a defined type whose body is being walked.
struct Within {
    kind: String,
    title: String,
    virtuality: Virtuality,
    metas: Vec<(String, Value, Span)>,
    classes: Vec<String>,
}

/// An override of an instance of a defined type (`Vhost["shop"] { port => 9090, }`).
struct DefineOverride {
    kind: String,
    title: String,
    target_span: Span,
    params: Vec<OverrideParam>,
    /// An instance took it.
    used: bool,
}

struct Walker<'a> {
    engine: &'a Evaluator,
    previous: Option<&'a Output>,
    out: Output,
    /// Set when a value was missing; the walk goes on so that every stream starts.
    pending: bool,
    /// The instances of defined types being walked, outermost first.
    within: Vec<Within>,
    /// The overrides of instances of defined types, by kind and title.
    define_overrides: BTreeMap<(String, String), Vec<DefineOverride>>,
}

type Step<T> = Result<Option<T>, Diagnostic>;

/// The evaluated body of a resource statement, shared by every name it declares.
#[derive(Clone)]
struct Body {
    params: Vec<(String, Value, Span)>,
    defaulted: Vec<String>,
    metas: Vec<(String, Value, Span)>,
    edges: Vec<BodyEdge>,
}

/// What resource statement `r` declares as `name` (on `host`, for a `collect`), inside the
/// instances `within` (whose meta params it takes unless it sets them, whose virtuality it
/// takes when it is real, and whose classes tag it).
fn declared(r: &IrResource, name: String, host: Option<String>, body: Body, within: &[Within]) -> ResDecl {
    let Body { params, defaulted, mut metas, edges } = body;
    let mut virtuality = r.virtuality;
    let mut classes = r.classes.clone();
    for w in within.iter().rev() {
        for (meta, value, span) in &w.metas {
            if !metas.iter().any(|(m, ..)| m == meta) {
                metas.push((meta.clone(), value.clone(), *span));
            }
        }
    }
    for w in within {
        if virtuality == Virtuality::Real {
            virtuality = w.virtuality;
        }
        classes.extend(w.classes.iter().filter(|c| !r.classes.contains(c)).cloned());
    }
    ResDecl {
        kind: r.kind.clone(),
        name,
        params,
        defaulted,
        metas,
        edges,
        collect: r.collect,
        // Only `collect` names a host (`[]struct{name str; host str}`).
        from: host.filter(|_| r.collect),
        virtuality,
        classes,
        within: within.iter().map(|w| (w.kind.clone(), w.title.clone())).collect(),
        span: r.span,
    }
}

impl Walker<'_> {
    fn stmts(&mut self, stmts: &[IrStmt], env: &Env) -> Result<(), Diagnostic> {
        stmts.iter().try_for_each(|s| self.stmt(s, env))
    }

    fn stmt(&mut self, stmt: &IrStmt, env: &Env) -> Result<(), Diagnostic> {
        match stmt {
            IrStmt::Resource(r) => self.resource(r, env),
            IrStmt::Edge(e) => self.edge(e, env),
            IrStmt::If { cond, then, els, .. } => match self.flag(*cond, env)? {
                Some(true) => self.stmts(then, env),
                Some(false) => self.stmts(els, env),
                None => Ok(()),
            },
            IrStmt::For { iter, key, value, body, span, .. } => match self.value(*iter, env)? {
                None => Ok(()),
                Some(Value::List(items)) => items.iter().enumerate().try_for_each(|(i, v)| {
                    self.stmts(body, &env.bind(*key, Value::Int(i as i64)).bind(*value, v.clone()))
                }),
                Some(Value::Map(m)) => {
                    m.iter().try_for_each(|(k, v)| self.stmts(body, &env.bind(*key, k.clone()).bind(*value, v.clone())))
                }
                Some(other) => Err(Diagnostic::new(
                    Stage::Stream,
                    format!("can't iterate over {other}: expected a list or a map"),
                    *span,
                )),
            },
            IrStmt::Panic { check, span } => match self.value(*check, env)? {
                Some(Value::Bool(true)) => Err(Diagnostic::new(Stage::Stream, "bool panic occurred", *span)),
                _ => Ok(()),
            },
            IrStmt::Defaults { .. } => Ok(()),
            IrStmt::Instance(i) => self.instance(i, env),
            // Taken by the first pass ([`Walker::define_overrides`]).
            IrStmt::Override { target, .. } if self.engine.graph.defines.contains_key(&target.kind) => {
                if self.within.is_empty() {
                    return Ok(());
                }
                Err(Diagnostic::new(
                    Stage::Interpret,
                    "an override of a defined type's instance cannot be inside a defined type",
                    target.span,
                )
                .with_code(Code::InvalidStatement)
                .with_note("the overrides of instances are found before any instance is evaluated"))
            }
            IrStmt::Collect(c) => self.collector(c, env).map(drop),
            IrStmt::Realize { refs, .. } => {
                for r in refs {
                    if r.kind.is_empty() {
                        for end in self.referenced(r, env)?.unwrap_or_default() {
                            self.out.realized.push(RealizeDecl { kind: end.kind, name: end.name, span: r.span });
                        }
                        continue;
                    }
                    for name in self.names(r.name, env, r.span)?.unwrap_or_default() {
                        self.out.realized.push(RealizeDecl { kind: r.kind.clone(), name, span: r.span });
                    }
                }
                Ok(())
            }
            IrStmt::Override { target, fields, span, replaces } => {
                let names = self.names(target.name, env, target.span)?;
                let params = self.override_params(fields, env)?.unwrap_or_default();
                if let Some(names) = names {
                    self.out.overrides.push(OverrideDecl {
                        kind: target.kind.clone(),
                        names,
                        target_span: target.span,
                        params,
                        span: *span,
                        replaces: replaces.clone(),
                    });
                }
                Ok(())
            }
        }
    }

    fn resource(&mut self, r: &IrResource, env: &Env) -> Result<(), Diagnostic> {
        let named = self.names_and_hosts(r.name, env, r.span)?;
        let body = match self.body(r, env) {
            Ok(body) => body,
            Err(d) if d.code.is_some_and(lang::diag::Code::is_recoverable) => {
                // A value its type rejects, or a stream's failure: the resources it feeds
                // keep their last good declarations, when they have one (else the walk
                // fails).
                let Some(previous) = self.previous else { return Err(d) };
                let mut kept = Vec::new();
                for (name, _) in named.iter().flatten() {
                    match previous.resources.iter().find(|o| o.kind == r.kind && &o.name == name) {
                        Some(old) => kept.push(old.clone()),
                        None => return Err(d),
                    }
                }
                self.out.resources.extend(kept);
                self.out.rejected.push(d);
                return Ok(());
            }
            Err(d) => return Err(d),
        };
        let mut named = named.unwrap_or_default();
        // The last name (most often the only one) takes the body itself; others get copies.
        let Some((last, last_host)) = named.pop() else { return Ok(()) };
        for (name, host) in named {
            self.out.resources.push(declared(r, name, host, body.clone(), &self.within));
        }
        self.out.resources.push(declared(r, last, last_host, body, &self.within));
        Ok(())
    }

    /// What resource statement `r` declares of each of its resources.
    fn body(&mut self, r: &IrResource, env: &Env) -> Result<Body, Diagnostic> {
        let mut params = Vec::with_capacity(r.fields.len());
        let mut defaulted = Vec::new();
        // A `* =>` entry (the resource's or a default's) sets names no other field shows.
        let splats = r.fields.iter().any(|f| &*f.name == SPLAT);
        for f in &r.fields {
            if self.holds(f.cond, env)?
                && let Some(v) = self.value(f.value, env)?
            {
                let set = |params: &[(String, Value, Span)], name: &str| params.iter().any(|(n, ..)| n == name);
                if splats && &*f.name == SPLAT {
                    for (name, value) in splat(&v, f.span)? {
                        let written = r.fields.iter().find(|w| w.origin == Origin::Written && *w.name == *name);
                        if let (Origin::Written, Some(twice)) = (f.origin, written) {
                            return Err(twice_set(&name, f.span, twice.span));
                        }
                        if set(&params, &name) {
                            continue;
                        }
                        if f.origin == Origin::Default {
                            defaulted.push(name.clone());
                        }
                        params.push((name, value, f.span));
                    }
                    continue;
                }
                if splats && f.origin == Origin::Default && set(&params, &f.name) {
                    continue;
                }
                if f.origin == Origin::Default {
                    defaulted.push(String::from(&*f.name));
                }
                params.push((String::from(&*f.name), v, f.span));
            }
        }
        let metas = self.metas(&r.metas, env)?;
        let mut edges = Vec::new();
        for e in &r.edges {
            if !self.holds(e.cond, env)? {
                continue;
            }
            for name in self.names(e.target.name, env, e.target.span)?.unwrap_or_default() {
                edges.push(BodyEdge { prop: e.prop, kind: e.target.kind.clone(), name, span: e.span });
            }
        }
        Ok(Body { params, defaulted, metas, edges })
    }

    /// The entries of an override or collector body, a `* =>` entry's each on its own.
    fn override_params(&mut self, fields: &[IrOverrideField], env: &Env) -> Step<Vec<OverrideParam>> {
        let mut params = Vec::with_capacity(fields.len());
        for f in fields {
            let Some(value) = self.value(f.value, env)? else { return Ok(None) };
            if f.name == SPLAT {
                for (name, value) in splat(&value, f.span)? {
                    if let Some(twice) = fields.iter().find(|w| w.name == name) {
                        return Err(twice_set(&name, f.span, twice.span));
                    }
                    params.push(OverrideParam { name, value, append: false, span: f.span });
                }
                continue;
            }
            params.push(OverrideParam { name: f.name.clone(), value, append: f.append, span: f.span });
        }
        Ok(Some(params))
    }

    /// `Meta:x` entries whose condition holds, and the fields of a `Meta =>` struct.
    fn metas(&mut self, entries: &[IrMeta], env: &Env) -> Result<Vec<(String, Value, Span)>, Diagnostic> {
        let mut metas = Vec::new();
        for m in entries {
            if !self.holds(m.cond, env)? {
                continue;
            }
            match (self.value(m.value, env)?, &m.name) {
                (None, _) => {}
                (Some(v), Some(name)) => metas.push((name.clone(), v, m.span)),
                (Some(Value::Struct(fields)), None) => {
                    metas.extend(fields.iter().map(|(n, v)| (n.clone(), v.clone(), m.span)));
                }
                (Some(other), None) => {
                    return Err(Diagnostic::new(Stage::Stream, format!("Meta must be a struct, got {other}"), m.span));
                }
            }
        }
        Ok(metas)
    }

    /// An instance of a defined type: for each title, its params bound in order (an
    /// override first, then the statement's value or a default's, then the define's own
    /// default), then the define's body.
    fn instance(&mut self, i: &IrInstance, env: &Env) -> Result<(), Diagnostic> {
        let Some(titles) = self.names(i.titles, env, i.span)? else { return Ok(()) };
        let metas = self.metas(&i.metas, env)?;
        'titles: for title in titles {
            let mut env = env.bind(i.title, Value::str(title.as_str()));
            let key = (i.kind.clone(), title.clone());
            let mut params = Vec::with_capacity(i.params.len());
            for p in &i.params {
                let source = p.given.or(p.defaulted).map(|(node, _)| node).or(p.default);
                let Some(source) = source else { continue };
                let Some(mut value) = self.value(source, &env)? else { continue 'titles };
                for o in self.define_overrides.get_mut(&key).into_iter().flatten() {
                    o.used = true;
                    for set in o.params.iter().filter(|set| set.name == p.name) {
                        value = match (set.append, &value, &set.value) {
                            (true, Value::List(have), Value::List(more)) => {
                                Value::list(have.iter().chain(more.iter()).cloned().collect())
                            }
                            (false, _, new) if p.given.is_some() && *new != value => {
                                let at = p.given.map_or(set.span, |(_, at)| at);
                                let message = format!(
                                    "conflicting override: `{}` of {}[{title}] is already set to {value}; the override sets {new}",
                                    p.name, i.kind
                                );
                                return Err(Diagnostic::new(Stage::Interpret, message, set.span)
                                    .with_code(Code::ConflictingOverride)
                                    .with_label(at, "set here")
                                    .with_note(
                                        "an override may set a param the instance leaves unset or takes from a default, \
                                         not one it sets itself",
                                    ));
                            }
                            (_, _, new) => new.clone(),
                        };
                    }
                }
                env = env.bind(p.param, value.clone());
                params.push((p.name.clone(), value));
            }
            if let Some(o) = self.define_overrides.get(&key).into_iter().flatten().next()
                && let Some(unknown) = o.params.iter().find(|set| !i.params.iter().any(|p| p.name == set.name))
            {
                return Err(Diagnostic::new(
                    Stage::Interpret,
                    format!("defined type `{}` has no param `${}`", i.kind, unknown.name),
                    unknown.span,
                )
                .with_code(Code::UnknownField));
            }
            self.out.instances.push(InstanceDecl {
                kind: i.kind.clone(),
                name: title.clone(),
                params,
                virtuality: i.virtuality,
                classes: i.classes.clone(),
                span: i.span,
            });
            self.within.push(Within {
                kind: i.kind.clone(),
                title,
                virtuality: i.virtuality,
                metas: metas.clone(),
                classes: i.classes.clone(),
            });
            let walked = self.stmts(&i.body, &env);
            self.within.pop();
            walked?;
        }
        Ok(())
    }

    /// The first pass: the overrides of instances of defined types, in the branches and
    /// loops the walk takes (not inside instances, which the main walk refuses).
    fn define_overrides(&mut self, stmts: &[IrStmt], env: &Env) -> Result<(), Diagnostic> {
        for stmt in stmts {
            match stmt {
                IrStmt::Override { target, fields, .. } if self.engine.graph.defines.contains_key(&target.kind) => {
                    let Some(names) = self.names(target.name, env, target.span)? else { continue };
                    let params = self.override_params(fields, env)?.unwrap_or_default();
                    for title in names {
                        let key = (target.kind.clone(), title.clone());
                        self.define_overrides.entry(key).or_default().push(DefineOverride {
                            kind: target.kind.clone(),
                            title,
                            target_span: target.span,
                            params: params.clone(),
                            used: false,
                        });
                    }
                }
                IrStmt::If { cond, then, els, .. } => match self.flag(*cond, env)? {
                    Some(true) => self.define_overrides(then, env)?,
                    Some(false) => self.define_overrides(els, env)?,
                    None => {}
                },
                IrStmt::For { iter, key, value, body, .. } => match self.value(*iter, env)? {
                    Some(Value::List(items)) => {
                        for (i, v) in items.iter().enumerate() {
                            self.define_overrides(body, &env.bind(*key, Value::Int(i as i64)).bind(*value, v.clone()))?;
                        }
                    }
                    Some(Value::Map(m)) => {
                        for (k, v) in m.iter() {
                            self.define_overrides(body, &env.bind(*key, k.clone()).bind(*value, v.clone()))?;
                        }
                    }
                    _ => {}
                },
                _ => {}
            }
        }
        Ok(())
    }

    fn edge(&mut self, e: &IrEdge, env: &Env) -> Result<(), Diagnostic> {
        let mut sides: Vec<Vec<EdgeEnd>> = Vec::with_capacity(e.sides.len());
        for side in &e.sides {
            let mut ends = Vec::new();
            for half in &side.refs {
                ends.extend(self.ends(half, env)?.unwrap_or_default());
            }
            if let Some(c) = &side.collector
                && let Some(i) = self.collector(c, env)?
            {
                let end = EdgeEnd {
                    kind: c.kind.clone(),
                    name: String::new(),
                    field: None,
                    span: c.span,
                    collector: Some(i),
                };
                ends.push(end);
            }
            sides.push(ends);
        }
        for (pair, link) in sides.windows(2).zip(&e.links) {
            let (froms, tos) = if link.backward { (&pair[1], &pair[0]) } else { (&pair[0], &pair[1]) };
            for from in froms {
                for to in tos {
                    let (from, to) = (from.clone(), to.clone());
                    self.out.edges.push(EdgeDecl { from, to, notify: link.notify, span: e.span });
                }
            }
        }
        Ok(())
    }

    /// Evaluates a collector into the output; its index there.
    fn collector(&mut self, c: &IrCollector, env: &Env) -> Step<usize> {
        let query = match &c.query {
            Some(q) => match self.query(q, env)? {
                Some(q) => Some(q),
                None => return Ok(None),
            },
            None => None,
        };
        let Some(params) = self.override_params(&c.fields, env)? else { return Ok(None) };
        self.out.collectors.push(CollectorDecl {
            kind: c.kind.clone(),
            exported: c.exported,
            query,
            params,
            span: c.span,
        });
        Ok(Some(self.out.collectors.len() - 1))
    }

    fn query(&mut self, q: &IrQuery, env: &Env) -> Step<Query> {
        Ok(match q {
            IrQuery::Compare { attr, equal, value, span } => self.value(*value, env)?.map(|value| Query::Compare {
                attr: attr.clone(),
                equal: *equal,
                value,
                span: *span,
            }),
            IrQuery::And(a, b) | IrQuery::Or(a, b) => {
                let (a, b) = (self.query(a, env)?, self.query(b, env)?);
                a.zip(b).map(|(a, b)| match q {
                    IrQuery::And(..) => Query::And(Box::new(a), Box::new(b)),
                    _ => Query::Or(Box::new(a), Box::new(b)),
                })
            }
        })
    }

    fn ends(&mut self, half: &IrEdgeHalf, env: &Env) -> Step<Vec<EdgeEnd>> {
        if half.kind.is_empty() {
            return self.referenced(half, env);
        }
        Ok(self.names(half.name, env, half.span)?.map(|names| {
            names
                .into_iter()
                .map(|name| EdgeEnd {
                    kind: half.kind.clone(),
                    name,
                    field: half.field.clone(),
                    span: half.span,
                    collector: None,
                })
                .collect()
        }))
    }

    /// A side held in a variable: a reference (`struct{kind str; name str}`) or a list.
    fn referenced(&mut self, half: &IrEdgeHalf, env: &Env) -> Step<Vec<EdgeEnd>> {
        let Some(v) = self.value(half.name, env)? else { return Ok(None) };
        let items: Vec<Value> = match &v {
            Value::List(items) => items.iter().cloned().collect(),
            other => vec![other.clone()],
        };
        let mut ends = Vec::with_capacity(items.len());
        for item in &items {
            let (Some(kind), Some(name)) =
                (item.field("kind").and_then(Value::as_str), item.field("name").and_then(Value::as_str))
            else {
                let message = format!("a relationship side must be a resource reference (`File[\"/x\"]`), got {item}");
                return Err(Diagnostic::new(Stage::Interpret, message, half.span).with_code(Code::TypeError));
            };
            ends.push(EdgeEnd {
                kind: kind.to_lowercase(),
                name: name.to_string(),
                field: None,
                span: half.span,
                collector: None,
            });
        }
        Ok(Some(ends))
    }

    /// A resource or edge name: `str`, `[]str`, or (for `collect`) a list of
    /// `struct{name str; host str}`.
    fn names(&mut self, node: NodeId, env: &Env, span: Span) -> Step<Vec<String>> {
        Ok(self.names_and_hosts(node, env, span)?.map(|named| named.into_iter().map(|(name, _)| name).collect()))
    }

    /// A resource statement's names, each with the host a `collect` struct names.
    fn names_and_hosts(&mut self, node: NodeId, env: &Env, span: Span) -> Step<Vec<(String, Option<String>)>> {
        let Some(v) = self.value(node, env)? else { return Ok(None) };
        let bad = |v: &Value| {
            Diagnostic::new(Stage::Stream, format!("a resource name must be a str or a []str, got {v}"), span)
        };
        match &v {
            Value::Str(s) => Ok(Some(vec![(String::from(&**s), None)])),
            Value::List(items) => items
                .iter()
                .map(|item| match item {
                    Value::Str(s) => Ok((String::from(&**s), None)),
                    Value::Struct(_) => {
                        let name = item.field("name").and_then(Value::as_str).ok_or_else(|| bad(item))?;
                        let host = item.field("host").and_then(Value::as_str).filter(|h| !h.is_empty());
                        Ok((name.to_string(), host.map(str::to_string)))
                    }
                    other => Err(bad(other)),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            other => Err(bad(other)),
        }
    }

    /// An optional elvis condition: absent means it holds; a pending one does not.
    fn holds(&mut self, cond: Option<NodeId>, env: &Env) -> Result<bool, Diagnostic> {
        match cond {
            None => Ok(true),
            Some(c) => Ok(self.flag(c, env)? == Some(true)),
        }
    }

    fn flag(&mut self, node: NodeId, env: &Env) -> Step<bool> {
        match self.value(node, env)? {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(other) => Err(Diagnostic::new(
                Stage::Stream,
                format!("expected a bool condition, got {other}"),
                self.engine.graph.node(node).span,
            )),
        }
    }

    fn value(&mut self, node: NodeId, env: &Env) -> Step<Value> {
        match self.engine.get(node, env) {
            None => {
                self.pending = true;
                Ok(None)
            }
            Some(Ok(v)) => Ok(Some(v)),
            Some(Err(f)) => Err(self.engine.diagnostic(&f)),
        }
    }
}
