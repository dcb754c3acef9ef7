//! The bodies of the fuzz targets that need the binary's parts or the whole front end
//! (`fuzz/fuzz_targets/nesting.rs`, `lsp_frame.rs`), shared with their bounded run in CI
//! (`tests/fuzz_bounded.rs`). Each must return for any input: a panic or a stack overflow
//! is the bug they look for.

use lang::catalog::Catalog;

/// How many levels one byte of a recipe asks for, at most.
const LEVELS_PER_BYTE: usize = 64;

/// Builds a program from `data`, read as pairs of bytes (a construct, how deep), and
/// compiles it: chains of includes and calls, nested lists, parentheses, `if` blocks and
/// lambdas, up to thousands of levels each. It must be compiled or refused, never abort.
pub fn deep_program(data: &[u8], catalog: &Catalog) {
    let mut text = String::new();
    for (n, pair) in data.chunks(2).enumerate() {
        let depth = usize::from(*pair.get(1).unwrap_or(&1)) * LEVELS_PER_BYTE;
        text.push_str(&construct(pair[0] % 6, depth, n));
    }
    let loader = lang::loader::MemLoader::new().with("/main.mcl", &text);
    let _ = lang::pipeline::compile("/main.mcl", &loader, catalog);
}

/// One construct `depth` levels deep; `n` keeps its names apart from the others'.
fn construct(kind: u8, depth: usize, n: usize) -> String {
    let mut t = String::new();
    match kind {
        0 => {
            for i in 0..depth {
                t.push_str(&format!("class k{n}_{i} {{\n\tinclude k{n}_{}\n}}\n", i + 1));
            }
            t.push_str(&format!("class k{n}_{depth} {{\n\tprint \"p{n}\" {{}}\n}}\ninclude k{n}_0\n"));
        }
        1 => {
            t.push_str(&format!("func f{n}_0($x) {{\n\t$x\n}}\n"));
            for i in 1..depth.max(2) {
                t.push_str(&format!("func f{n}_{i}($x) {{\n\tf{n}_{}($x)\n}}\n", i - 1));
            }
            t.push_str(&format!("print \"c{n}\" {{\n\tmsg => f{n}_{}(\"x\"),\n}}\n", depth.max(2) - 1));
        }
        2 => t.push_str(&format!("$l{n} = {}1{}\n", "[".repeat(depth), "]".repeat(depth))),
        3 => t.push_str(&format!("$p{n} = {}1{}\n", "(".repeat(depth), ")".repeat(depth))),
        4 => {
            t.push_str(&"if true {\n".repeat(depth));
            t.push_str(&format!("print \"i{n}\" {{}}\n"));
            t.push_str(&"}\n".repeat(depth));
        }
        _ => {
            t.push_str(&format!("$g{n}_0 = func($x) {{\n\t$x\n}}\n"));
            for i in 1..depth.max(2) {
                t.push_str(&format!("$g{n}_{i} = func($x) {{\n\t$g{n}_{}($x)\n}}\n", i - 1));
            }
            t.push_str(&format!("print \"g{n}\" {{\n\tmsg => $g{n}_{}(\"x\"),\n}}\n", depth.max(2) - 1));
        }
    }
    t
}

/// Reads LSP frames from `data` until its end: every frame is a message or skipped, and
/// the reader never allocates past its bound nor stops early.
pub fn lsp_frames(data: &[u8]) {
    let mut input = std::io::BufReader::new(data);
    for _ in 0..=data.len() {
        match crate::lsp::transport::read_frame(&mut input) {
            Ok(crate::lsp::transport::Frame::End) | Err(_) => return,
            Ok(_) => {}
        }
    }
    panic!("more frames than bytes: the reader does not advance");
}
