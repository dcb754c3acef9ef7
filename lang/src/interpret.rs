//! Interpretation (errInterpret): one evaluation's [`Output`] becomes a [`ResGraph`] by
//! the rules of spec 3.12 and 3.6.
//!
//! Steps: realize virtual resources, apply collectors' overrides and expand relationships
//! with collector sides (`collect`); apply overrides to the declarations they name
//! (`overrides`); build and validate
//! every declared resource (`build`); merge duplicates
//! (`merge`: hidden, exported and normal duplicates); resolve body edges and edge
//! statements to vertices, deduplicate them and attach send/recv (`edges`); reject
//! cycles. A resource that fails is left out and the others go on, so one run reports
//! every independent problem; edges to a resource that failed are not reported again.

mod build;
mod collect;
mod edges;
mod merge;
mod overrides;

pub use collect::{Remote, collects, unrealized};
pub use merge::{MergeOutcome, merge_duplicate};

use crate::catalog::Catalog;
use crate::diag::Diagnostics;
use crate::output::{Output, Virtuality};
use crate::resgraph::ResGraph;
use std::borrow::Cow;

/// Builds the resource graph of one evaluation on a host that collects nothing from
/// others.
pub fn interpret(out: &Output, catalog: &Catalog) -> (ResGraph, Diagnostics) {
    let (graph, mut diags, left_out) = interpret_with(out, catalog, &Remote::default());
    for d in left_out {
        diags.push(d);
    }
    (graph, diags)
}

/// Builds the resource graph of one evaluation, collecting from what other hosts export
/// (`remote`). Besides the errors that reject the graph, returns the resources it left
/// out (collect conflicts): those are reported while the rest of the graph applies.
pub fn interpret_with(
    out: &Output,
    catalog: &Catalog,
    remote: &Remote,
) -> (ResGraph, Diagnostics, Vec<crate::diag::Diagnostic>) {
    interpret_cow(Cow::Borrowed(out), catalog, remote)
}

/// [`interpret_with`] of an output nothing else holds: each declaration's kind, name and
/// params move into its vertex instead of being copied (at 100,000 resources, half a
/// million strings fewer to copy, then to free).
pub fn interpret_owned(
    out: Output,
    catalog: &Catalog,
    remote: &Remote,
) -> (ResGraph, Diagnostics, Vec<crate::diag::Diagnostic>) {
    interpret_cow(Cow::Owned(out), catalog, remote)
}

fn interpret_cow(
    out: Cow<'_, Output>,
    catalog: &Catalog,
    remote: &Remote,
) -> (ResGraph, Diagnostics, Vec<crate::diag::Diagnostic>) {
    let mut diags = Diagnostics::new();
    let mut left_out = Vec::new();
    let mut graph = ResGraph::default();
    let plain = |r: &crate::output::ResDecl| r.virtuality == Virtuality::Real && !r.collect;
    let out = if out.collectors.is_empty()
        && out.realized.is_empty()
        && out.instances.is_empty()
        && !out.edges.iter().any(|e| e.from.kind == "class" || e.to.kind == "class")
        && out.resources.iter().all(plain)
    {
        out
    } else {
        Cow::Owned(collect::apply(&out, remote, &mut diags, &mut left_out))
    };
    let out = if out.overrides.is_empty() { out } else { Cow::Owned(overrides::apply(&out, &mut diags)) };
    let (built, out) = match out {
        Cow::Owned(mut owned) => (build::build_owned(&mut owned.resources, catalog, &mut diags), Cow::Owned(owned)),
        Cow::Borrowed(out) => (build::build_all(out, catalog, &mut diags), Cow::Borrowed(out)),
    };
    let placed = merge::place_all(built, &mut graph, &mut diags);
    edges::add_all(&out, &placed, &mut graph, &mut diags);
    edges::check_send_recv(&graph, &mut diags);
    edges::check_acyclic(&graph, &mut diags);
    (graph, diags, left_out)
}

/// Whether `out` reads what other hosts export (a collector or a `collect` statement):
/// only then does a host follow the world's exports.
pub fn collects_remote(out: &Output) -> bool {
    out.collectors.iter().any(|c| c.exported) || out.resources.iter().any(|r| r.collect)
}
