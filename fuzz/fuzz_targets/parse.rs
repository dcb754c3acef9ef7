//! Fuzz target: any input runs through parse, init and interpolate without panicking,
//! and every diagnostic span lies inside the input.

#![no_main]

use lang::span::FileId;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (file, mut diags) = lang::syntax::parse(FileId(0), text);
    diags.extend(lang::init::check(&file));
    let (_, more) = lang::interpolate::run(file);
    diags.extend(more);
    for d in diags.iter() {
        if let Some(span) = d.span {
            assert!(span.start <= span.end && span.end as usize <= text.len(), "bad span {span:?} for {d:?}");
        }
    }
});
