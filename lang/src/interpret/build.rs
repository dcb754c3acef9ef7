//! Building one vertex from one declared resource: the kind must exist, parameters are
//! collected, meta params are decoded into [`Meta`] and everything is validated the way
//! the engine's generic `Validate` wrapper does (spec 3.5.1, engine 1.2).

use crate::catalog::Catalog;
use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::halves;
use crate::output::{Output, ResDecl};
use crate::params::ParamMap;
use crate::resgraph::{Meta, ResVertex};
use crate::span::Span;
use crate::value::Value;

/// One vertex per declaration, `None` where building failed (already reported).
pub(super) fn build_all(out: &Output, catalog: &Catalog, diags: &mut Diagnostics) -> Vec<Option<ResVertex>> {
    let built = out.resources.iter().map(|decl| {
        build(decl, catalog, |decl| (decl.kind.clone(), decl.name.clone(), decl.params.clone())).map_err(|f| f.diag)
    });
    reported(built, diags)
}

/// [`build_all`], moving each declaration's kind, name and params into its vertex. A
/// declaration that fails keeps its kind and name (the edges to it are not reported again).
pub(super) fn build_owned(decls: &mut [ResDecl], catalog: &Catalog, diags: &mut Diagnostics) -> Vec<Option<ResVertex>> {
    // A large program builds in halves side by side: each declaration builds alone, and
    // the halves' vertices and errors join in program order.
    if decls.len() >= halves::IN_HALVES {
        let (head, tail) = decls.split_at_mut(decls.len() / 2);
        let ((mut built, head_diags), (tail_built, tail_diags)) =
            halves::both(|| build_owned_here(head, catalog), || build_owned_here(tail, catalog));
        built.extend(tail_built);
        diags.extend(head_diags);
        diags.extend(tail_diags);
        return built;
    }
    let (built, here) = build_owned_here(decls, catalog);
    diags.extend(here);
    built
}

fn build_owned_here(decls: &mut [ResDecl], catalog: &Catalog) -> (Vec<Option<ResVertex>>, Diagnostics) {
    let mut diags = Diagnostics::new();
    let built = decls.iter_mut().map(|decl| {
        let taken = |decl: &mut ResDecl| {
            (std::mem::take(&mut decl.kind), std::mem::take(&mut decl.name), std::mem::take(&mut decl.params))
        };
        build(&mut *decl, catalog, taken).map_err(|failed| {
            let Failed { diag, taken } = *failed;
            if let Some((kind, name)) = taken {
                decl.kind = kind;
                decl.name = name;
            }
            diag
        })
    });
    let built = reported(built, &mut diags);
    (built, diags)
}

fn reported(
    built: impl Iterator<Item = Result<ResVertex, Diagnostic>>,
    diags: &mut Diagnostics,
) -> Vec<Option<ResVertex>> {
    built
        .map(|built| match built {
            Ok(v) => Some(v),
            Err(d) => {
                diags.push(d);
                None
            }
        })
        .collect()
}

/// What a vertex takes from its declaration: kind, name and params (copied or moved).
type Parts = (String, String, Vec<(String, Value, Span)>);

/// Why a declaration did not build; boxed, as errors are rare and the vertex is not.
struct Failed {
    diag: Diagnostic,
    /// The kind and name taken from the declaration before the error was found.
    taken: Option<(String, String)>,
}

/// Builds the vertex of `decl`, taking its parts with `parts` once every check of the
/// declaration alone passed. An error after that hands its kind and name back.
fn build<D>(decl: D, catalog: &Catalog, parts: impl FnOnce(D) -> Parts) -> Result<ResVertex, Box<Failed>>
where
    D: std::ops::Deref<Target = ResDecl>,
{
    let key = |decl: &ResDecl| format!("{}[{}]", decl.kind, decl.name);
    let Some(kind) = catalog.resource(&decl.kind) else {
        let msg = format!(
            "error building resource: cannot create resource kind `{}` with name `{}`: no resource kind `{}` available",
            decl.kind, decl.name, decl.kind
        );
        let mut d = Diagnostic::new(Stage::Interpret, msg, decl.span).with_code(Code::UnknownKind);
        if let Some(s) = crate::suggest::did_you_mean(&decl.kind, catalog.resources().map(|r| r.kind.as_str())) {
            d = d.with_note(format!("did you mean `{s}`?"));
        }
        return Err(Box::new(Failed { diag: d, taken: None }));
    };
    for (name, _, span) in &decl.params {
        if kind.param(name).is_none() {
            let msg = format!("error building resource: field `{name}` does not exist in `{}` resource", decl.kind);
            let diag = Diagnostic::new(Stage::Interpret, msg, *span).with_code(Code::UnknownField);
            return Err(Box::new(Failed { diag, taken: None }));
        }
    }
    let mut meta = Meta::default();
    for (name, value, span) in &decl.metas {
        set_meta(&mut meta, name, value).map_err(|reason| {
            let d = Diagnostic::new(
                Stage::Interpret,
                format!("{} did not Validate: invalid meta param `{name}`: {reason}", key(&decl)),
                *span,
            )
            .with_code(Code::InvalidResource);
            Box::new(Failed { diag: d, taken: None })
        })?;
    }
    if decl.collect {
        // Collected resources are not exported again (spec 3.10).
        meta.export.clear();
    }
    let meta = if meta == Meta::default() { Meta::shared_default() } else { std::sync::Arc::new(meta) };
    let (collected, span) = (decl.collect, decl.span);
    let (kind, name, given) = parts(decl);
    let (params, param_spans) = params_of(given);
    let vertex = ResVertex { kind, name, params, param_spans, meta, collected, span };
    match validate(&vertex) {
        Ok(()) => Ok(vertex),
        Err(reason) => {
            let d = Diagnostic::new(
                Stage::Interpret,
                format!("{}[{}] did not Validate: {reason}", vertex.kind, vertex.name),
                span,
            )
            .with_code(Code::InvalidResource);
            Err(Box::new(Failed { diag: d, taken: Some((vertex.kind, vertex.name)) }))
        }
    }
}

/// The params set, by name, each with the span of its entry; a name set twice keeps its
/// last setting.
fn params_of(mut given: Vec<(String, Value, Span)>) -> (ParamMap, Box<[Span]>) {
    // Stable: among equal names the last given stays last.
    given.sort_by(|a, b| a.0.cmp(&b.0));
    let mut params: Vec<(String, Value)> = Vec::with_capacity(given.len());
    let mut spans: Vec<Span> = Vec::with_capacity(given.len());
    for (name, value, span) in given {
        match (params.last_mut(), spans.last_mut()) {
            (Some(last), Some(last_span)) if last.0 == name => {
                *last = (name, value);
                *last_span = span;
            }
            _ => {
                params.push((name, value));
                spans.push(span);
            }
        }
    }
    (ParamMap::from_sorted(params), spans.into_boxed_slice())
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
        "autogroup" => {
            meta.autogroup = boolean()?;
            meta.autogroup_asked = meta.autogroup;
        }
        "tags" => meta.tags = strs()?,
        other => return Err(format!("there is no meta param called `{other}`")),
    }
    Ok(())
}

/// The checks every kind shares (the kind's own checks run in the resources crate).
fn validate(v: &ResVertex) -> Result<(), String> {
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
