//! Type unification (errUnify): gives every node reachable from the program's statements
//! a concrete type, or explains why it cannot.
//!
//! Steps: constraints are generated per node in post-order (inputs before users, so the
//! literal side of a conflict is already known and the error lands on the use), then per
//! statement; lookups whose container is not yet known wait in a queue until it is; after
//! solving, the post-solve checks run (operator kinds, built-in `check` hooks, hashable map
//! keys, comparable `==`) and every type is read back, reporting leftover variables as
//! ambiguities. Solving is a union-find over type variables (`table`).
//!
//! Nodes nothing reachable uses are never type-checked (their type stays `None`).

mod dispatch;
mod finish;
mod infer;
mod lookup;
mod meta;
mod report;
mod speculate;
mod stmts;
mod table;

pub use meta::{EXTRA_META_PARAMS, META_PARAMS, MetaKind, meta_param_type, meta_struct_type};
pub use speculate::static_type;

use crate::catalog::Catalog;
use crate::diag::Diagnostics;
use crate::ir::FuncGraph;

/// Types `graph` in place (fills [`FuncGraph::types`]) and returns the errors found.
pub fn unify(graph: &mut FuncGraph, catalog: &Catalog) -> Diagnostics {
    let (types, diags, chosen) = {
        let mut ctx = infer::Ctx::new(graph, catalog);
        ctx.constrain_program();
        ctx.solve_deferred();
        ctx.post_checks();
        let chosen = std::mem::take(&mut ctx.chosen);
        let (types, diags) = ctx.finish();
        (types, diags, chosen)
    };
    graph.types = types;
    dispatch::apply(graph, &chosen);
    diags
}
