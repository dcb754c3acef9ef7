//! The integration tests of `lang`, one binary (each file a module): one link, not one per file.

mod corpus_support;
mod syntax_support;
mod unify_support;

mod front_conformance;
mod interpret_collect;
mod interpret_graph;
mod scope_conformance;
mod scope_resolve;
mod syntax_expr;
mod syntax_fuzz;
mod syntax_init;
mod syntax_interpolate;
mod syntax_recovery;
mod syntax_stmt;
mod unify_cascade;
mod unify_conformance;
mod unify_dispatch;
mod unify_exprs;
mod unify_random;
mod unify_stmts;
