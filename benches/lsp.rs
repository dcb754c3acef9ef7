//! `tend lsp` on a 10,000-line program, spoken to over JSON-RPC as an editor does: the
//! time from an edit (`didChange`, one line) to its diagnostics (debounce included), and
//! of hover and completion requests; beside the front end alone on the same text, in the
//! same run (what an edit costs before the protocol and the debounce).
//!
//! `cargo bench --bench lsp` (release). Prints medians and 90th percentiles.

// A bench binary's report is its stdout.
#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use lang::loader::MemLoader;
use serde_json::json;
use testkit::lsp::Client;

const TEND: &str = env!("CARGO_BIN_EXE_tend");
const EDITS: usize = 40;

fn main() {
    // `cargo bench` passes `--bench`; a filter that is not ours skips the run.
    if std::env::args().skip(1).any(|a| !a.starts_with('-') && !"lsp".contains(a.as_str())) {
        return;
    }
    let program = testkit::programs::mixed(10_000);
    let lines = program.lines().count();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("main.mcl");
    std::fs::write(&path, &program).expect("written");
    let uri = format!("file://{}", path.display());

    // The baseline: the front end on the same text, in this process.
    let registry = funcs::registry::Registry::core();
    let mut catalog = registry.catalog();
    resources::declare(&mut catalog);
    let loader = MemLoader::new().with("/main.mcl", &program);
    let analysis = lang::ide::analyze("/main.mcl", &loader, &catalog);
    assert!(analysis.errors.is_empty(), "the program compiles: {:?}", analysis.errors.first());
    let front_end = sample(EDITS, || {
        let t = Instant::now();
        std::hint::black_box(lang::ide::analyze("/main.mcl", &loader, &catalog));
        t.elapsed()
    });

    let (mut client, _) = Client::start(TEND, &["lsp"], dir.path());
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "mcl", "version": 1, "text": program}}),
    );
    assert!(client.diagnostics(&uri).is_empty(), "no diagnostics on the generated program");

    // One line edited back and forth: `mode => "0644"` of a resource halfway down becomes
    // an int (a type error), then a string again.
    let target = program.match_indices("\tmode => \"0644\",").nth(program.matches("\tmode").count() / 2).unwrap().0;
    let line = program[..target].matches('\n').count();
    let mut version = 1;
    let mut errors_seen = 0;
    let edit = sample(EDITS, || {
        version += 1;
        let text = if version % 2 == 0 { "\tmode => 644," } else { "\tmode => \"0644\"," };
        let old_len = if version % 2 == 0 { "\tmode => \"0644\",".len() } else { "\tmode => 644,".len() };
        let change = json!({
            "range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": old_len}},
            "text": text,
        });
        let t = Instant::now();
        client.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}),
        );
        let diags = client.diagnostics(&uri);
        let took = t.elapsed();
        errors_seen += usize::from(!diags.is_empty());
        took
    });
    assert_eq!(errors_seen, EDITS / 2, "every other edit is a type error");

    let position = |needle: &str| {
        let at = program.rfind(needle).unwrap();
        let line = program[..at].matches('\n').count();
        json!({"line": line, "character": at - program[..at].rfind('\n').map_or(0, |n| n + 1) + 1})
    };
    let hover_at = position("$s");
    let hover = sample(EDITS, || {
        let t = Instant::now();
        client.request("textDocument/hover", json!({"textDocument": {"uri": uri}, "position": hover_at}));
        t.elapsed()
    });
    let complete_at = position("\tcontent => $s");
    let complete = sample(EDITS, || {
        let t = Instant::now();
        client.request("textDocument/completion", json!({"textDocument": {"uri": uri}, "position": complete_at}));
        t.elapsed()
    });
    assert!(client.shutdown().success());

    println!("tend lsp on a {lines}-line program, {EDITS} samples each (median / p90):");
    report("front end alone (lang::ide::analyze, in process)", &front_end);
    report(&format!("edit -> diagnostics (debounce {} ms included)", tend::lsp::DEBOUNCE.as_millis()), &edit);
    report("hover", &hover);
    report("completion", &complete);
    println!(
        "edit -> diagnostics / front end alone: {:.2}x",
        median(&edit).as_secs_f64() / median(&front_end).as_secs_f64()
    );
}

fn sample(n: usize, mut f: impl FnMut() -> Duration) -> Vec<Duration> {
    let mut out: Vec<Duration> = (0..n).map(|_| f()).collect();
    out.sort();
    out
}

fn median(sorted: &[Duration]) -> Duration {
    sorted[sorted.len() / 2]
}

fn report(what: &str, sorted: &[Duration]) {
    let p90 = sorted[(sorted.len() * 9 / 10).min(sorted.len() - 1)];
    println!("  {what:<58} {:>8.1} ms / {:>8.1} ms", ms(median(sorted)), ms(p90));
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
