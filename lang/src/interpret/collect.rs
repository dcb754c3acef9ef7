//! Virtual resources and collectors (Puppet's catalog expressions), the first step of
//! interpretation: every collector matches the declarations of its kind by its query
//! (`<<| |>>`: exported ones only), realizes the virtual ones among them and applies its
//! override block once to each; `realize(Kind[name])` realizes by name; a relationship
//! with a collector side becomes one edge per match (none: no edge); what nothing
//! realized is left out, silently, as in Puppet.

use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::output::{CollectorDecl, EdgeDecl, EdgeEnd, Output, OverrideParam, Query, ResDecl, Virtuality};
use crate::value::Value;
use std::collections::HashMap;

pub(super) fn apply(out: &Output, diags: &mut Diagnostics) -> Output {
    let mut resources = out.resources.clone();
    for r in resources.iter_mut().filter(|r| r.virtuality == Virtuality::Exported) {
        // `@@kind` is `Meta:export => ["*"]` on a virtual resource.
        if !r.metas.iter().any(|(n, ..)| n == "export") {
            r.metas.push(("export".into(), Value::list(vec![Value::str("*")]), r.span));
        }
    }
    // mgmt's `collect kind $names { … }` makes a copy of each exported resource it names:
    // the exported resource's params, with the collect body's on top.
    for copy in resources.iter_mut().filter(|r| r.collect) {
        let exported =
            out.resources.iter().find(|e| !e.collect && e.kind == copy.kind && e.name == copy.name && e.exported());
        if let Some(exported) = exported {
            let body = std::mem::replace(&mut copy.params, exported.params.clone());
            for (name, value, span) in body {
                match copy.params.iter_mut().find(|(n, ..)| *n == name) {
                    Some(slot) => *slot = (name, value, span),
                    None => copy.params.push((name, value, span)),
                }
            }
        }
    }
    let mut realized: Vec<bool> = resources.iter().map(|r| r.virtuality == Virtuality::Real).collect();
    let mut matches: Vec<Vec<usize>> = Vec::with_capacity(out.collectors.len());
    for c in &out.collectors {
        let found: Vec<usize> = (0..resources.len()).filter(|&i| collects(c, &resources[i])).collect();
        for &i in &found {
            realized[i] = true;
            for p in &c.params {
                apply_param(&mut resources[i], p);
            }
        }
        matches.push(found);
    }
    let mut by_key: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    for (i, r) in out.resources.iter().enumerate() {
        by_key.entry((r.kind.as_str(), r.name.as_str())).or_default().push(i);
    }
    for r in &out.realized {
        match by_key.get(&(r.kind.as_str(), r.name.as_str())) {
            Some(found) => found.iter().for_each(|&i| realized[i] = true),
            None => {
                let msg = format!("realize of a resource that does not exist: {}[{}]", r.kind, r.name);
                diags.push(Diagnostic::new(Stage::Interpret, msg, r.span).with_code(Code::UnknownResource));
            }
        }
    }
    let named = |i: usize, like: &EdgeEnd| EdgeEnd {
        kind: out.resources[i].kind.clone(),
        name: out.resources[i].name.clone(),
        field: None,
        span: like.span,
        collector: None,
    };
    let ends = |end: &EdgeEnd| -> Vec<EdgeEnd> {
        match end.collector {
            Some(c) => matches.get(c).map(|m| m.iter().map(|&i| named(i, end)).collect()).unwrap_or_default(),
            None => vec![end.clone()],
        }
    };
    let mut edges = Vec::with_capacity(out.edges.len());
    for e in &out.edges {
        for from in ends(&e.from) {
            for to in ends(&e.to) {
                edges.push(EdgeDecl { from: from.clone(), to, notify: e.notify, span: e.span });
            }
        }
    }
    let resources = resources.into_iter().zip(realized).filter(|(_, keep)| *keep).map(|(r, _)| r).collect();
    Output {
        resources,
        edges,
        overrides: out.overrides.clone(),
        collectors: out.collectors.clone(),
        realized: out.realized.clone(),
        rejected: out.rejected.clone(),
    }
}

/// The virtual resources of `out` that no collector matches and no `realize` names: they
/// are silently left out of the graph (`tend check -v` lists them).
pub fn unrealized(out: &Output) -> Vec<&ResDecl> {
    out.resources
        .iter()
        .filter(|r| r.virtuality != Virtuality::Real)
        .filter(|r| !out.collectors.iter().any(|c| collects(c, r)))
        .filter(|r| !out.realized.iter().any(|z| z.kind == r.kind && z.name == r.name))
        .collect()
}

/// Whether collector `c` collects `r`.
pub fn collects(c: &CollectorDecl, r: &ResDecl) -> bool {
    r.kind == c.kind && (!c.exported || r.exported()) && c.query.as_ref().is_none_or(|q| holds(q, r))
}

/// Puppet's query semantics: `name`/`title` compare the name, `tag` tests membership in
/// the tags, a param equals the value (or, for a list param, contains it); `!=` is the
/// negation (an unset param differs from everything).
fn holds(q: &Query, r: &ResDecl) -> bool {
    match q {
        Query::And(a, b) => holds(a, r) && holds(b, r),
        Query::Or(a, b) => holds(a, r) || holds(b, r),
        Query::Compare { attr, equal, value, .. } => {
            let found = match attr.as_str() {
                "name" | "title" => value.as_str() == Some(r.name.as_str()),
                "tag" => value.as_str().is_some_and(|t| r.has_tag(t)),
                param => r.params.iter().any(|(n, v, _)| {
                    n == param && (v == value || matches!(v, Value::List(items) if items.contains(value)))
                }),
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
