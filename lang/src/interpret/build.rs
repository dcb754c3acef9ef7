//! Building one vertex from one declared resource: the kind must exist, parameters are
//! collected, meta params are decoded into [`Meta`] and everything is validated the way
//! the engine's generic `Validate` wrapper does (spec 3.5.1, engine 1.2).

use crate::catalog::Catalog;
use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::output::{Output, ResDecl};
use crate::params::ParamMap;
use crate::resgraph::{Meta, Vertex};
use crate::value::Value;

/// One vertex per declaration, `None` where building failed (already reported).
pub(super) fn build_all(out: &Output, catalog: &Catalog, diags: &mut Diagnostics) -> Vec<Option<Vertex>> {
    out.resources
        .iter()
        .map(|decl| match build(decl, catalog) {
            Ok(v) => Some(v),
            Err(d) => {
                diags.push(d);
                None
            }
        })
        .collect()
}

fn build(decl: &ResDecl, catalog: &Catalog) -> Result<Vertex, Diagnostic> {
    let key = || format!("{}[{}]", decl.kind, decl.name);
    let Some(kind) = catalog.resource(&decl.kind) else {
        let msg = format!(
            "error building resource: cannot create resource kind `{}` with name `{}`: no resource kind `{}` available",
            decl.kind, decl.name, decl.kind
        );
        let mut d = Diagnostic::new(Stage::Interpret, msg, decl.span).with_code(Code::UnknownKind);
        if let Some(s) = crate::suggest::did_you_mean(&decl.kind, catalog.resources().map(|r| r.kind.as_str())) {
            d = d.with_note(format!("did you mean `{s}`?"));
        }
        return Err(d);
    };
    for (name, _, span) in &decl.params {
        if kind.param(name).is_none() {
            let msg = format!("error building resource: field `{name}` does not exist in `{}` resource", decl.kind);
            return Err(Diagnostic::new(Stage::Interpret, msg, *span).with_code(Code::UnknownField));
        }
    }
    let params: ParamMap = decl.params.iter().map(|(name, value, _)| (name.clone(), value.clone())).collect();
    // In the keys' order; the last setting of a name is the one kept.
    let param_spans = params
        .keys()
        .map(|k| decl.params.iter().rev().find(|(name, ..)| name == k).map_or(decl.span, |(.., span)| *span))
        .collect();
    let mut meta = Meta::default();
    for (name, value, span) in &decl.metas {
        set_meta(&mut meta, name, value).map_err(|reason| {
            Diagnostic::new(
                Stage::Interpret,
                format!("{} did not Validate: invalid meta param `{name}`: {reason}", key()),
                *span,
            )
            .with_code(Code::InvalidResource)
        })?;
    }
    if decl.collect {
        // Collected resources are not exported again (spec 3.10).
        meta.export.clear();
    }
    let meta = if meta == Meta::default() { Meta::shared_default() } else { std::sync::Arc::new(meta) };
    let vertex = Vertex {
        kind: decl.kind.clone(),
        name: decl.name.clone(),
        params,
        param_spans,
        meta,
        collected: decl.collect,
        span: decl.span,
    };
    validate(&vertex).map_err(|reason| {
        Diagnostic::new(Stage::Interpret, format!("{} did not Validate: {reason}", key()), decl.span)
            .with_code(Code::InvalidResource)
    })?;
    Ok(vertex)
}

/// Decodes one meta param value into `meta`.
fn set_meta(meta: &mut Meta, name: &str, value: &Value) -> Result<(), String> {
    let boolean = || value.as_bool().ok_or_else(|| format!("expected a bool, got {value}"));
    let int = || value.as_int().ok_or_else(|| format!("expected an int, got {value}"));
    let strs = || -> Result<Vec<String>, String> {
        let items = value.as_list().ok_or_else(|| format!("expected a []str, got {value}"))?;
        items
            .iter()
            .map(|v| v.as_str().map(String::from).ok_or_else(|| format!("expected a []str, got {value}")))
            .collect()
    };
    let non_negative = |i: i64| u64::try_from(i).map_err(|_| format!("must not be negative, got {i}"));
    match name {
        "noop" => meta.noop = boolean()?,
        "retry" => {
            let i = int()?;
            meta.retry = i16::try_from(i).map_err(|_| format!("{i} does not fit in int16"))?;
        }
        "retryreset" => meta.retryreset = boolean()?,
        "delay" => meta.delay = non_negative(int()?)?,
        "timeout" => meta.timeout = non_negative(int()?)?,
        "poll" => {
            let i = int()?;
            meta.poll = i32::try_from(i).map_err(|_| format!("{i} does not fit in int32"))?;
        }
        "limit" => {
            meta.limit = match value {
                Value::Float(f) => *f,
                Value::Int(i) => *i as f64,
                other => return Err(format!("expected a float, got {other}")),
            }
        }
        "burst" => meta.burst = int()?,
        "reset" => meta.reset = boolean()?,
        "sema" => meta.sema = strs()?,
        "rewatch" => meta.rewatch = boolean()?,
        "realize" => meta.realize = boolean()?,
        "dollar" => meta.dollar = boolean()?,
        "hidden" => meta.hidden = boolean()?,
        "export" => meta.export = strs()?,
        "reverse" => meta.reverse = boolean()?,
        "autoedge" => meta.autoedge = boolean()?,
        "autogroup" => meta.autogroup = boolean()?,
        "tags" => meta.tags = strs()?,
        other => return Err(format!("there is no meta param called `{other}`")),
    }
    Ok(())
}

/// The checks every kind shares (the kind's own checks run in the resources crate).
fn validate(v: &Vertex) -> Result<(), String> {
    if v.name.is_empty() {
        return Err("the resource name is empty".into());
    }
    if v.name.starts_with('$') && !v.meta.dollar {
        return Err(format!(
            "the resource name `{}` starts with `$` (set `Meta:dollar => true` if that is intended)",
            v.name
        ));
    }
    let m = &v.meta;
    if m.burst == 0 && m.limit.is_finite() {
        return Err(format!("invalid meta params: burst must be non-zero when limit ({}) is finite", m.limit));
    }
    if m.burst < 0 {
        return Err(format!("invalid meta params: burst must not be negative, got {}", m.burst));
    }
    for id in &m.sema {
        if id.is_empty() {
            return Err("invalid meta params: sema id is empty".into());
        }
        if id.parse::<i64>().is_ok() {
            return Err(format!("invalid meta params: sema id `{id}` is only a number; name it (e.g. `lock:{id}`)"));
        }
    }
    if m.export.iter().any(String::is_empty) {
        return Err("invalid meta params: export entry is empty".into());
    }
    Ok(())
}
