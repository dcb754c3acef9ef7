//! The mcl front end and interpreter.
//!
//! Pipeline (each phase returns new data plus diagnostics):
//! text → `syntax` (tokens, AST; errLexParse) → `init` (AST validation; errInit)
//! → `interpolate` (string escapes and `${}`; errInterpolate)
//! → `scope` (imports, ordering, name resolution, inlining; errSetScope) → [`ir::FuncGraph`]
//! → `unify` (types; errUnify) → `checks` (declared types' checks on constants; errUnify)
//! → `graph` checks (errGraph)
//! … the `funcs` crate runs the graph …
//! → `interpret` (values → resource graph; errInterpret).
//!
//! `lang` performs no IO (files come through [`loader::Loader`]) and knows no concrete
//! function or resource kind (they come through [`catalog::Catalog`]).

pub mod catalog;
pub mod checks;
pub mod diag;
pub mod embedded;
pub mod exported;
pub mod format;
pub mod graph_check;
pub mod halves;
pub mod ide;
pub mod incremental;
pub mod init;
pub mod interpolate;
pub mod interpret;
pub mod ir;
pub mod loader;
pub mod output;
pub mod params;
pub mod pipeline;
pub mod provenance;
pub mod render;
pub mod repeats;
pub mod resgraph;
pub mod scope;
pub mod secret;
pub mod span;
pub mod suggest;
pub mod syntax;
pub mod types;
pub mod unify;
pub mod validate;
pub mod value;
pub mod yamlgraph;
