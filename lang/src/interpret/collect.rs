//! Virtual resources and collectors (Puppet's catalog expressions), the first step of
//! interpretation: every collector matches the declarations of its kind by its query
//! (`<<| |>>`: exported ones only), realizes the virtual ones among them and applies its
//! override block once to each; `realize(Kind[name])` realizes by name; a relationship
//! with a collector side becomes one edge per match (none: no edge); what nothing
//! realized is left out, silently, as in Puppet. A collector, a `realize` or a reference
//! of a defined type names its instances, each standing for the resources it declared.

use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::output::{
    CollectorDecl, EdgeDecl, EdgeEnd, InstanceDecl, Output, OverrideParam, Query, ResDecl, Virtuality,
};
use crate::span::Span;
use crate::value::Value;
use std::collections::{BTreeMap, HashMap};

/// What other hosts export to this one, for the collectors of an output.
#[derive(Clone, Debug, Default)]
pub struct Remote {
    /// This host's name: a `collect` that names it takes this host's own exports.
    pub me: String,
    /// Their declarations (see [`crate::exported::decode`]; `from` is the exporting host),
    /// never this host's own: those are in the output itself.
    pub exports: Vec<ResDecl>,
}

pub(super) fn apply(out: &Output, remote: &Remote, diags: &mut Diagnostics, left_out: &mut Vec<Diagnostic>) -> Output {
    let mut resources = out.resources.clone();
    for r in resources.iter_mut().filter(|r| r.virtuality == Virtuality::Exported) {
        // `@@kind` is `Meta:export => ["*"]` on a virtual resource.
        if !r.metas.iter().any(|(n, ..)| n == "export") {
            r.metas.push(("export".into(), Value::list(vec![Value::str("*")]), r.span));
        }
    }
    // mgmt's `collect kind $names { … }` makes a copy of each exported resource it names:
    // the exported resource's params and meta params, with the collect body's on top. A
    // name nothing exports gives no resource; one exported differently by two hosts is
    // left out (and reported) while the rest of the graph goes on.
    let local_exports: Vec<&ResDecl> = out.resources.iter().filter(|e| !e.collect && e.exported()).collect();
    let mut dropped = vec![false; resources.len()];
    for (i, copy) in resources.iter_mut().enumerate().filter(|(_, r)| r.collect) {
        let here = copy.from.as_ref().is_none_or(|h| *h == remote.me);
        let sources: Vec<&ResDecl> = local_exports
            .iter()
            .copied()
            .filter(|e| here && e.kind == copy.kind && e.name == copy.name)
            .chain(remote.exports.iter().filter(|e| {
                e.kind == copy.kind
                    && e.name == copy.name
                    && copy.from.as_ref().is_none_or(|h| e.from.as_ref() == Some(h))
            }))
            .collect();
        let Some(base) = sources.first() else {
            dropped[i] = true;
            continue;
        };
        if let Some(other) = sources.iter().find(|s| !crate::exported::same_record(base, s)) {
            left_out.push(conflict(copy, base, other, remote));
            dropped[i] = true;
            continue;
        }
        let body = std::mem::replace(&mut copy.params, base.params.clone());
        overlay(&mut copy.params, body);
        let metas = base.metas.iter().filter(|(n, ..)| n != "export").cloned().collect();
        let body = std::mem::replace(&mut copy.metas, metas);
        overlay(&mut copy.metas, body);
    }
    // Other hosts' exports, for `<<| |>>`: virtual, so in the graph only when collected.
    let first_remote = resources.len();
    resources.extend(remote.exports.iter().cloned());
    dropped.resize(resources.len(), false);
    let mut realized: Vec<bool> = resources.iter().map(|r| r.virtuality == Virtuality::Real).collect();
    let mut matches: Vec<Vec<usize>> = Vec::with_capacity(out.collectors.len());
    // The resources each instance of a defined type declared, by (kind, title).
    let mut contained: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    for (i, r) in out.resources.iter().enumerate() {
        for (kind, title) in &r.within {
            contained.entry((kind.as_str(), title.as_str())).or_default().push(i);
        }
    }
    let of_instance = |kind: &str, title: &str| contained.get(&(kind, title)).cloned().unwrap_or_default();
    let defined = |kind: &str| out.instances.iter().any(|d| d.kind == kind);
    for c in &out.collectors {
        if defined(&c.kind) {
            let found = out.instances.iter().filter(|d| collects_instance(c, d));
            matches.push(found.flat_map(|d| of_instance(&d.kind, &d.name)).filter(|&i| !dropped[i]).collect());
            continue;
        }
        // Only `<<| |>>` reads other hosts' exports (`<| |>` is this host's virtual ones).
        let found: Vec<usize> = (0..resources.len())
            .filter(|&i| !dropped[i] && (i < first_remote || c.exported) && collects(c, &resources[i]))
            .collect();
        matches.push(found);
    }
    // A remote export a collector matched that another host (or this one) exports
    // differently is left out; identical ones are one resource.
    // A remote export is placed at the collector that matched it first.
    for (c, found) in out.collectors.iter().zip(&matches) {
        for &i in found.iter().filter(|&&i| i >= first_remote) {
            if resources[i].span == Span::default() {
                resources[i].span = c.span;
            }
        }
    }
    let mut groups: BTreeMap<(&str, &str), Vec<usize>> = BTreeMap::new();
    for i in (0..resources.len()).filter(|&i| !dropped[i]) {
        let r = &resources[i];
        let wanted = if i < first_remote { !r.collect && r.exported() } else { matches.iter().any(|m| m.contains(&i)) };
        if wanted {
            groups.entry((r.kind.as_str(), r.name.as_str())).or_default().push(i);
        }
    }
    let mut drop_now = Vec::new();
    for group in groups.values().filter(|g| g.iter().any(|&i| i >= first_remote)) {
        let base = &resources[group[0]];
        let remotes = group.iter().copied().filter(|&i| i >= first_remote);
        match group.iter().find(|&&i| !crate::exported::same_record(base, &resources[i])) {
            Some(&other) => {
                let at = group.iter().find(|&&i| i >= first_remote).map_or(other, |&i| i);
                left_out.push(conflict(&resources[at], base, &resources[other], remote));
                drop_now.extend(remotes);
            }
            // The same everywhere: the first declaration stands for all.
            None => drop_now.extend(remotes.filter(|&i| i != group[0])),
        }
    }
    for i in drop_now {
        dropped[i] = true;
    }
    for (c, found) in out.collectors.iter().zip(matches.iter_mut()) {
        found.retain(|&i| !dropped[i]);
        for &i in found.iter() {
            realized[i] = true;
            // A defined type's collector sets no params (unification said so).
            for p in c.params.iter().filter(|_| !defined(&c.kind)) {
                apply_param(&mut resources[i], p);
            }
        }
    }
    let mut by_key: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    for (i, r) in out.resources.iter().enumerate() {
        by_key.entry((r.kind.as_str(), r.name.as_str())).or_default().push(i);
    }
    for r in &out.realized {
        match by_key.get(&(r.kind.as_str(), r.name.as_str())) {
            Some(found) => found.iter().for_each(|&i| realized[i] = true),
            None if out.instances.iter().any(|d| d.kind == r.kind && d.name == r.name) => {
                of_instance(&r.kind, &r.name).into_iter().for_each(|i| realized[i] = true)
            }
            None => {
                let msg = format!("realize of a resource that does not exist: {}[{}]", r.kind, r.name);
                diags.push(Diagnostic::new(Stage::Interpret, msg, r.span).with_code(Code::UnknownResource));
            }
        }
    }
    let named = |i: usize, like: &EdgeEnd| EdgeEnd {
        kind: resources[i].kind.clone(),
        name: resources[i].name.clone(),
        field: None,
        span: like.span,
        collector: None,
    };
    let ends = |end: &EdgeEnd| -> Vec<EdgeEnd> {
        match end.collector {
            Some(c) => matches.get(c).map(|m| m.iter().map(|&i| named(i, end)).collect()).unwrap_or_default(),
            // `Vhost["shop"]`: every resource the instance declared (Puppet's containment).
            None if out.instances.iter().any(|d| d.kind == end.kind && d.name == end.name) => {
                of_instance(&end.kind, &end.name).into_iter().map(|i| named(i, end)).collect()
            }
            // `Class["web"]`: every resource the includes of the class declared.
            None if end.kind == "class" => {
                let of_class = |i: &usize| resources[*i].classes.contains(&end.name);
                (0..resources.len()).filter(|i| !dropped[*i] && of_class(i)).map(|i| named(i, end)).collect()
            }
            None => vec![end.clone()],
        }
    };
    let mut edges = Vec::with_capacity(out.edges.len());
    for e in &out.edges {
        for end in [&e.from, &e.to].into_iter().filter(|end| end.kind == "class" && end.collector.is_none()) {
            if !resources.iter().any(|r| r.classes.contains(&end.name)) {
                let msg = format!("Class[\"{}\"]: no include of class `{}` declared a resource", end.name, end.name);
                diags.push(
                    Diagnostic::new(Stage::Interpret, msg, end.span)
                        .with_code(Code::UnknownResource)
                        .with_note("`Class[name]` stands for the resources the class's includes declare"),
                );
            }
        }
        for from in ends(&e.from) {
            for to in ends(&e.to) {
                edges.push(EdgeDecl { from: from.clone(), to, notify: e.notify, span: e.span });
            }
        }
    }
    let keep: Vec<bool> = realized.iter().zip(&dropped).map(|(r, d)| *r && !*d).collect();
    let resources = resources.into_iter().zip(keep).filter(|(_, keep)| *keep).map(|(r, _)| r).collect();
    Output {
        resources,
        edges,
        overrides: out.overrides.clone(),
        collectors: out.collectors.clone(),
        realized: out.realized.clone(),
        instances: out.instances.clone(),
        rejected: out.rejected.clone(),
    }
}

/// Sets each of `body`'s entries in `base`, replacing one of the same name.
fn overlay(base: &mut Vec<(String, Value, Span)>, body: Vec<(String, Value, Span)>) {
    for (name, value, span) in body {
        match base.iter_mut().find(|(n, ..)| *n == name) {
            Some(slot) => *slot = (name, value, span),
            None => base.push((name, value, span)),
        }
    }
}

/// A collected resource two exports disagree on (`at` is where it is collected).
fn conflict(at: &ResDecl, a: &ResDecl, b: &ResDecl, remote: &Remote) -> Diagnostic {
    let host = |r: &ResDecl| r.from.clone().unwrap_or_else(|| remote.me.clone());
    let msg = format!(
        "collect conflict: {}[{}] is exported differently by {} and {} ({}); it is left out of the graph",
        at.kind,
        at.name,
        host(a),
        host(b),
        crate::exported::difference(a, b)
    );
    Diagnostic::new(Stage::Interpret, msg, at.span)
        .with_code(Code::CollectConflict)
        .with_note("the rest of the graph is applied; the resource comes back once its exports agree")
}

/// The virtual resources of `out` that no collector matches and no `realize` names: they
/// are silently left out of the graph (`tend check -v` lists them).
pub fn unrealized(out: &Output) -> Vec<&ResDecl> {
    let named = |kind: &str, name: &str| out.realized.iter().any(|z| z.kind == kind && z.name == name);
    let instance_realized = |kind: &str, title: &str| {
        named(kind, title)
            || out
                .instances
                .iter()
                .any(|d| d.kind == kind && d.name == title && out.collectors.iter().any(|c| collects_instance(c, d)))
    };
    out.resources
        .iter()
        .filter(|r| r.virtuality != Virtuality::Real)
        .filter(|r| !out.collectors.iter().any(|c| collects(c, r)))
        .filter(|r| !named(&r.kind, &r.name))
        .filter(|r| !r.within.iter().any(|(kind, title)| instance_realized(kind, title)))
        .collect()
}

/// Whether collector `c` collects `r`.
pub fn collects(c: &CollectorDecl, r: &ResDecl) -> bool {
    r.kind == c.kind && (!c.exported || r.exported()) && c.query.as_ref().is_none_or(|q| holds(q, r))
}

/// Whether collector `c` (of a defined type) collects instance `d`.
fn collects_instance(c: &CollectorDecl, d: &InstanceDecl) -> bool {
    d.kind == c.kind
        && (!c.exported || d.virtuality == Virtuality::Exported)
        && c.query.as_ref().is_none_or(|q| holds(q, d))
}

/// What a query reads of a resource or an instance of a defined type.
trait Queried {
    fn title(&self) -> &str;
    fn tagged(&self, tag: &str) -> bool;
    fn param(&self, name: &str) -> Option<&Value>;
}

impl Queried for ResDecl {
    fn title(&self) -> &str {
        &self.name
    }
    fn tagged(&self, tag: &str) -> bool {
        self.has_tag(tag)
    }
    fn param(&self, name: &str) -> Option<&Value> {
        self.params.iter().find(|(n, ..)| n == name).map(|(_, v, _)| v)
    }
}

impl Queried for InstanceDecl {
    fn title(&self) -> &str {
        &self.name
    }
    fn tagged(&self, tag: &str) -> bool {
        self.has_tag(tag)
    }
    fn param(&self, name: &str) -> Option<&Value> {
        self.params.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

/// Puppet's query semantics: `name`/`title` compare the name, `tag` tests membership in
/// the tags, a param equals the value (or, for a list param, contains it); `!=` is the
/// negation (an unset param differs from everything).
fn holds(q: &Query, r: &impl Queried) -> bool {
    match q {
        Query::And(a, b) => holds(a, r) && holds(b, r),
        Query::Or(a, b) => holds(a, r) || holds(b, r),
        Query::Compare { attr, equal, value, .. } => {
            let found = match attr.as_str() {
                "name" | "title" => value.as_str() == Some(r.title()),
                "tag" => value.as_str().is_some_and(|t| r.tagged(t)),
                param => r
                    .param(param)
                    .is_some_and(|v| v == value || matches!(v, Value::List(items) if items.contains(value))),
            };
            found == *equal
        }
    }
}

/// A collector's override: it sets the param (replacing what the resource had, as in
/// Puppet), or appends to it (`+>`).
fn apply_param(r: &mut ResDecl, p: &OverrideParam) {
    let at = r.params.iter().position(|(n, ..)| *n == p.name);
    let value = match (at, p.append) {
        (Some(i), true) => match (&r.params[i].1, &p.value) {
            (Value::List(have), Value::List(more)) => Value::list(have.iter().chain(more.iter()).cloned().collect()),
            _ => p.value.clone(),
        },
        _ => p.value.clone(),
    };
    r.defaulted.retain(|n| *n != p.name);
    match at {
        Some(i) => r.params[i] = (p.name.clone(), value, p.span),
        None => r.params.push((p.name.clone(), value, p.span)),
    }
}
