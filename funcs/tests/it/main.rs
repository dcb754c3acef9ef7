//! The integration tests of `funcs`, one binary (each file a module): one link, not one per file.

mod common;
mod runtime_support;

mod lib_golang;
mod lib_pure;
mod lib_registry;
mod lib_streams;
mod runtime_conformance;
mod runtime_control;
mod runtime_lambdas;
mod runtime_lifecycle;
mod runtime_propagation;
