//! Resource overrides (`Kind[name] { … }`), applied to the declarations they name before
//! anything is built. As in Puppet outside class inheritance: an override may set a param
//! the resource does not have, or one a default gave it; setting a param the resource
//! itself sets, to another value, is an error naming both places. `+>` appends to a list.
//! In a class that inherits, an override may replace what the base classes' resources set.

use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::output::{Output, OverrideParam, ResDecl};
use crate::value::Value;
use std::collections::HashMap;

/// `out` with every override applied; a conflict or a missing resource is reported and
/// that override entry is left out.
pub(super) fn apply(out: &Output, diags: &mut Diagnostics) -> Output {
    let mut applied = out.clone();
    let mut by_key: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    for (i, r) in out.resources.iter().enumerate() {
        by_key.entry((r.kind.as_str(), r.name.as_str())).or_default().push(i);
    }
    for o in &out.overrides {
        for name in &o.names {
            let Some(found) = by_key.get(&(o.kind.as_str(), name.as_str())) else {
                let msg = format!("override of a resource that does not exist: {}[{name}]", o.kind);
                diags.push(Diagnostic::new(Stage::Interpret, msg, o.target_span).with_code(Code::UnknownResource));
                continue;
            };
            for &i in found {
                let span = out.resources[i].span;
                let inherited =
                    o.replaces.iter().any(|b| b.file == span.file && b.start <= span.start && span.end <= b.end);
                for p in &o.params {
                    if inherited && !p.append {
                        replace(&mut applied.resources[i], p);
                        continue;
                    }
                    if let Err(d) = set(&mut applied.resources[i], p) {
                        diags.push(d);
                    }
                }
            }
        }
    }
    applied
}

/// Sets one param of a base class's resource, whatever it had (a derived class's override).
fn replace(r: &mut ResDecl, p: &OverrideParam) {
    r.defaulted.retain(|n| *n != p.name);
    match r.params.iter().position(|(n, ..)| *n == p.name) {
        Some(at) => r.params[at] = (p.name.clone(), p.value.clone(), p.span),
        None => r.params.push((p.name.clone(), p.value.clone(), p.span)),
    }
}

/// Applies one override entry to one declaration.
fn set(r: &mut ResDecl, p: &OverrideParam) -> Result<(), Diagnostic> {
    let Some(at) = r.params.iter().position(|(n, ..)| *n == p.name) else {
        r.params.push((p.name.clone(), p.value.clone(), p.span));
        return Ok(());
    };
    let (_, current, first) = &r.params[at];
    if p.append {
        let (Value::List(have), Value::List(more)) = (current, &p.value) else {
            // Unification makes both lists; stay robust.
            let msg = format!("`+>` appends to a list, but `{}` of {}[{}] is {current}", p.name, r.kind, r.name);
            return Err(Diagnostic::new(Stage::Interpret, msg, p.span).with_code(Code::ConflictingOverride));
        };
        let joined = Value::list(have.iter().chain(more.iter()).cloned().collect());
        r.params[at] = (p.name.clone(), joined, p.span);
        return Ok(());
    }
    if *current == p.value {
        return Ok(());
    }
    if let Some(d) = r.defaulted.iter().position(|n| *n == p.name) {
        // A default only fills in what nothing else sets.
        r.defaulted.remove(d);
        r.params[at] = (p.name.clone(), p.value.clone(), p.span);
        return Ok(());
    }
    let msg = format!(
        "conflicting override: `{}` of {}[{}] is already set to {current}; the override sets {}",
        p.name, r.kind, r.name, p.value
    );
    Err(Diagnostic::new(Stage::Interpret, msg, p.span)
        .with_code(Code::ConflictingOverride)
        .with_label(*first, "set here")
        .with_note(
            "an override may set a param the resource leaves unset or takes from a default, not one it sets itself",
        ))
}
