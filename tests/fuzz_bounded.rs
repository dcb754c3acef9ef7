//! The fuzz targets of `fuzz/` that guard against aborts (deep nesting in the front end,
//! LSP framing), run for a bounded time on stable Rust in every test run, so CI exercises
//! them without cargo-fuzz: random inputs from a fixed seed (`TEND_FUZZ_SEED` to vary it)
//! for `TEND_FUZZ_SECS` seconds each (default 10). `cargo fuzz run nesting` and
//! `cargo fuzz run lsp_frame` in `fuzz/` search far longer, with coverage guidance.

use std::time::{Duration, Instant};

fn budget() -> Duration {
    let secs = std::env::var("TEND_FUZZ_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(10);
    Duration::from_secs(secs)
}

/// xorshift64: reproducible random bytes.
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        Rng(std::env::var("TEND_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x9e37_79b9_7f4a_7c15))
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let len = (self.next() as usize) % (max + 1);
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// Runs `body` on random inputs of up to `max` bytes until the budget is spent; the number
/// of inputs tried.
fn run(max: usize, mut body: impl FnMut(&[u8])) -> usize {
    let mut rng = Rng::seeded();
    let start = Instant::now();
    let mut tried = 0;
    while start.elapsed() < budget() {
        body(&rng.bytes(max));
        tried += 1;
    }
    tried
}

/// Deep programs of every kind, each up to 16,320 levels: compiled or refused, never an
/// abort (which would end this test process).
#[test]
fn deep_programs_never_abort() {
    // The compile runs on the main thread's stack in `tend check`: 8 MiB, as here.
    let worker = std::thread::Builder::new().stack_size(8 << 20).spawn(|| {
        let (_, catalog) = tend::compile::catalog(None);
        // The deepest of each construct once, then random recipes.
        for kind in 0..6u8 {
            tend::fuzzing::deep_program(&[kind, 255], &catalog);
        }
        run(8, |data| tend::fuzzing::deep_program(data, &catalog))
    });
    let tried = worker.unwrap().join().expect("no panic");
    assert!(tried > 0);
}

/// Random bytes, and random mixes of well-formed and broken frames, on the LSP reader.
#[test]
fn lsp_framing_never_fails() {
    let tried = run(4096, tend::fuzzing::lsp_frames);
    let mut rng = Rng::seeded();
    let pieces: [&[u8]; 6] = [
        b"Content-Length: 30\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"x\"}",
        b"Content-Length: 2000000000\r\n\r\n",
        b"Content-Length: -1\r\n\r\n",
        b"\r\n\r\n",
        b"Content-Length: 3\r\n\r\n\xff\xfe\xfd",
        b"Content-Type: x\r\n",
    ];
    let start = Instant::now();
    while start.elapsed() < budget() / 2 {
        let mut data = Vec::new();
        for _ in 0..(rng.next() % 16) {
            data.extend_from_slice(pieces[(rng.next() % 6) as usize]);
            if rng.next().is_multiple_of(4) {
                data.extend(rng.bytes(32));
            }
        }
        tend::fuzzing::lsp_frames(&data);
    }
    assert!(tried > 0);
}

/// The YAML graphs of `tests/yaml/`, mutated at random (characters YAML gives meaning
/// inserted, bytes dropped), and documents nested as deep as the parser allows: each is a
/// graph or diagnostics, never a panic.
#[test]
fn mutated_yaml_graphs_never_panic() {
    let (_, catalog) = tend::compile::catalog(None);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/yaml");
    let seeds: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "yaml"))
        .map(|e| std::fs::read(e.path()).unwrap())
        .collect();
    assert!(!seeds.is_empty());
    let compile = |text: &str| {
        let loader = lang::loader::MemLoader::new().with("/g.yaml", text);
        lang::pipeline::compile("/g.yaml", &loader, &catalog)
    };
    for depth in [254, 255, 256, 10_000] {
        compile(&format!("graph: g\nresources: {}{}\n", "[".repeat(depth), "]".repeat(depth)));
        compile(&format!(
            "graph: g\nresources:\n{}",
            (0..depth.min(300)).map(|i| format!("{}a:\n", " ".repeat(i))).collect::<String>()
        ));
    }
    let alphabet = b":-[]{}&*!|>'\"\n #@,?~0123456789 \t";
    let mut rng = Rng::seeded();
    let start = Instant::now();
    let mut tried = 0;
    while start.elapsed() < budget() / 2 {
        let mut text = seeds[(rng.next() as usize) % seeds.len()].clone();
        for _ in 0..=(rng.next() % 8) {
            let at = (rng.next() as usize) % (text.len() + 1);
            match rng.next() % 3 {
                0 if at < text.len() => {
                    text.remove(at);
                }
                1 => text.insert(at, alphabet[(rng.next() as usize) % alphabet.len()]),
                _ => text.insert(at, rng.next() as u8),
            }
        }
        let Ok(text) = String::from_utf8(text) else { continue };
        let out = compile(&text);
        assert!(out.graph.is_some() || !out.diagnostics.is_empty(), "neither a graph nor an error:\n{text}");
        tried += 1;
    }
    assert!(tried > 0);
}
