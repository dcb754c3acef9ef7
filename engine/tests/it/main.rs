//! The integration tests of `engine`, one binary (each file a module): one link, not one per file.

mod support;

mod batch;
mod engine;
mod scale;
