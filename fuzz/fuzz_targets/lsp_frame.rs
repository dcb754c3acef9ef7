//! Fuzz target: any bytes on `tend lsp`'s stdin are read as frames, each a message or
//! skipped, without a panic or an allocation past the bound (`tend::fuzzing::lsp_frames`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| tend::fuzzing::lsp_frames(data));
