//! Fuzz target: any string given to the signature/type-string parser (the one
//! `encoding.decode_json` uses on program text) returns a type or an error, never panics
//! or overflows, and a parsed type prints to text that parses back to the same type.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(ty) = lang::types::parse_type(text) {
        let printed = ty.to_string();
        let again = lang::types::parse_type(&printed).expect("a printed type parses");
        assert_eq!(again, ty, "{text:?} printed as {printed:?}");
    }
});
