//! Links the `tend` binary with the code a run executes packed together at the front of
//! its text (`link/symbol-order.txt`, written by `bench/symbol_order.py`).
//!
//! The kernel maps an executable's pages in blocks around each one touched, so code spread
//! over the whole text is resident almost whole: 7.8 of 12.4 MB for `examples/hello`,
//! where the functions a converge runs total 2 MB. Packed, the same run keeps about 3 MB
//! resident, and every run's peak is that much lower. A stale list is harmless: names it
//! lacks are linked in their usual place, names no longer in the binary are skipped.
//!
//! Only for `x86_64-unknown-linux-gnu`, whose toolchains (Rust 1.90 on) link with lld;
//! `TEND_SYMBOL_ORDER=0` turns it off for another linker.

use std::path::Path;

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let order = Path::new(&dir).join("link").join("symbol-order.txt");
    println!("cargo:rerun-if-changed={}", order.display());
    println!("cargo:rerun-if-env-changed=TEND_SYMBOL_ORDER");
    let target = std::env::var("TARGET").unwrap_or_default();
    let wanted = std::env::var("TEND_SYMBOL_ORDER").map_or(true, |v| v != "0");
    if wanted && target == "x86_64-unknown-linux-gnu" && order.is_file() {
        println!("cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}", order.display());
        // The list names the shipped (`dist`) build's symbols; other profiles match a few.
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}
