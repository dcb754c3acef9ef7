//! The `tend` command line as a library: glue over the `world`, `lang`, `funcs`, `engine`
//! and `resources` crates, one module per subcommand (`cmd`) plus what they share. `main.rs`
//! only parses arguments and calls in; tests use these modules directly.

pub mod agent_lock;
pub mod cli;
pub mod cmd;
pub mod compile;
pub mod firmware;
pub mod fuzzing;
pub mod loader;
pub mod lsp;
pub mod memory;
pub mod modules;
pub mod observe;
pub mod services;
pub mod stderr;
pub mod stdout;
