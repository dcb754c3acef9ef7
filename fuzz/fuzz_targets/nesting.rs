//! Fuzz target: programs nested thousands of levels deep in every way the language nests
//! (includes, calls, lists, parentheses, `if`, lambdas) are compiled or refused, never
//! abort (`tend::fuzzing::deep_program`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    static CATALOG: std::sync::OnceLock<lang::catalog::Catalog> = std::sync::OnceLock::new();
    let catalog = CATALOG.get_or_init(|| tend::compile::catalog(None).1);
    tend::fuzzing::deep_program(data, catalog);
});
