//! Built-in functions of mcl and the dataflow runtime that runs a function graph.

pub mod api;
pub mod command;
pub mod core;
pub mod gofmt;
pub mod lease;
pub mod printf;
pub mod registry;
pub mod runtime;
pub mod template;
pub mod typed;
