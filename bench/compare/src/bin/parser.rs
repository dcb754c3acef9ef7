//! tend's hand-written mcl parser against the chumsky prototype: throughput and memory on
//! generated programs, a deeply nested one, and the first error each reports on the
//! corpus's syntax-error cases (whose expected position mgmt's own parser gives).
//!
//! `cargo run --release --bin parser [-- CORPUS_DIR]` from `bench/compare`.

#![allow(clippy::print_stdout, reason = "a report for the terminal")]

use std::path::{Path, PathBuf};

use lang::span::{FileId, SourceFile};
use tend_compare::alloc::{self, Counting};
use tend_compare::mcl_chumsky;
use tend_compare::{median, ms};

#[global_allocator]
static ALLOC: Counting = Counting;

fn main() {
    let corpus = std::env::args().nth(1).map_or_else(|| PathBuf::from("../../../shared/conformance"), PathBuf::from);
    throughput();
    deep();
    errors(&corpus);
}

fn throughput() {
    println!("## Throughput and memory (median of 15; tend's parse includes lexing, so lexing is shown alone)\n");
    println!(
        "| program | bytes | tokens | lex | tend lex+parse | chumsky lex+parse | chumsky / tend | tend peak / kept | chumsky peak / kept | allocations tend / chumsky |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for lines in [2_000, 10_000] {
        // One quarter of `mixed` is a class and includes the prototype also reads.
        let text = testkit::programs::mixed(lines);
        let tokens = lang::syntax::token::lex(FileId(0), &text).tokens.len();
        let (stmts, errors) = mcl_chumsky::parse(&text);
        assert!(errors.is_empty(), "the prototype must read the program: {}", errors[0].message);
        let (file, diags) = lang::syntax::parse(FileId(0), &text);
        assert!(diags.is_empty());
        assert_eq!(stmts.map(|s| s.len()), Some(file.stmts.len()), "both read every statement");
        drop(file);
        let lex = median(15, || drop(lang::syntax::token::lex(FileId(0), &text)));
        let hand = median(15, || drop(lang::syntax::parse(FileId(0), &text)));
        let proto = median(15, || drop(mcl_chumsky::parse(&text)));
        let (hand_peak, hand_kept, hand_allocs, out) = alloc::measure(|| lang::syntax::parse(FileId(0), &text));
        drop(out);
        let (proto_peak, proto_kept, proto_allocs, out) = alloc::measure(|| mcl_chumsky::parse(&text));
        drop(out);
        let split = if tokens >= 1 << 16 { " (tend: two threads)" } else { "" };
        println!(
            "| mixed({lines}){split} | {} | {tokens} | {} | {} | {} | {:.2}x | {} / {} | {} / {} | {hand_allocs} / {proto_allocs} |",
            text.len(),
            ms(lex),
            ms(hand),
            ms(proto),
            proto.as_secs_f64() / hand.as_secs_f64(),
            mib(hand_peak),
            mib(hand_kept),
            mib(proto_peak),
            mib(proto_kept),
        );
    }
    println!();
}

/// A list nested `depth` deep: tend refuses past its nesting bound with an error; what does
/// the prototype do?
fn deep() {
    println!("## Deep nesting\n");
    for depth in [1_000, 100_000] {
        let text = format!("$x = {}1{}\n", "[".repeat(depth), "]".repeat(depth));
        let (hand_peak, _, _, (_, diags)) = alloc::measure(|| lang::syntax::parse(FileId(0), &text));
        let hand = diags.first().map_or_else(|| "parsed".to_string(), |d| d.message.clone());
        let start = std::time::Instant::now();
        let (proto_peak, _, _, (stmts, errors)) = alloc::measure(|| mcl_chumsky::parse(&text));
        let took = start.elapsed();
        let proto = errors
            .first()
            .map_or_else(|| format!("parsed ({} statement)", stmts.map_or(0, |s| s.len())), |e| e.message.clone());
        println!(
            "- depth {depth}: tend: {hand} (peak {}); chumsky: {proto} (peak {}, {})",
            mib(hand_peak),
            mib(proto_peak),
            ms(took)
        );
    }
    println!();
}

/// Every corpus case whose expected output is a lexer or parser error (`errLexParse`).
fn errors(corpus: &Path) {
    println!("## First error on the corpus's errLexParse cases (position as mgmt's, line:column)\n");
    let mut cases = Vec::new();
    for dir in ["graph", "unit-errors"] {
        let Ok(entries) = std::fs::read_dir(corpus.join(dir)) else {
            println!("(no corpus at {}: skipped)", corpus.display());
            return;
        };
        for entry in entries.flatten() {
            cases.push(entry.path());
        }
    }
    cases.sort();
    println!("| case | mgmt | tend | chumsky |");
    println!("|---|---|---|---|");
    let (mut total, mut tend_at, mut proto_at) = (0, 0, 0);
    for path in cases {
        let Ok(archive) = std::fs::read_to_string(&path) else { continue };
        let files = txtar(&archive);
        let Some(output) = files.iter().find(|(n, _)| n == "OUTPUT").map(|(_, t)| t.as_str()) else { continue };
        let Some(line) = output.lines().find(|l| l.starts_with("# err: errLexParse")) else { continue };
        let Some((file, want)) = position(line) else { continue };
        let Some(text) = files.iter().find(|(n, _)| *n == file).map(|(_, t)| t.as_str()) else { continue };
        let source = SourceFile::new(file.clone(), text);
        let at = |offset: usize| {
            let lc = source.line_col(offset as u32);
            format!("{}:{}", lc.line, lc.col)
        };
        let (_, diags) = lang::syntax::parse(FileId(0), text);
        let (tend_pos, tend_msg) = diags.first_error().map_or(("-".into(), "no error".into()), |d| {
            (d.span.map_or("-".into(), |s| at(s.start as usize)), d.message.clone())
        });
        let (_, proto_errors) = mcl_chumsky::parse(text);
        let (proto_pos, proto_msg) =
            proto_errors.first().map_or(("-".into(), "no error".into()), |e| (at(e.span.start), e.message.clone()));
        total += 1;
        tend_at += usize::from(tend_pos == want);
        proto_at += usize::from(proto_pos == want);
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        println!("| {name} | {want} | {tend_pos} {} | {proto_pos} {} |", cell(&tend_msg), cell(&proto_msg));
    }
    println!("\nAt mgmt's position: tend {tend_at}/{total}, chumsky {proto_at}/{total}.");
}

fn cell(message: &str) -> String {
    format!("`{}`", message.replace('|', "\\|").replace('`', "'"))
}

fn mib(bytes: usize) -> String {
    format!("{:.2} MiB", bytes as f64 / (1 << 20) as f64)
}

/// The files of a txtar archive, by name.
fn txtar(archive: &str) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = Vec::new();
    for line in archive.split_inclusive('\n') {
        let trimmed = line.trim_end();
        if let Some(name) = trimmed.strip_prefix("-- ").and_then(|r| r.strip_suffix(" --")) {
            files.push((name.to_string(), String::new()));
        } else if let Some((_, text)) = files.last_mut() {
            text.push_str(line);
        }
    }
    files
}

/// The file and `line:column` of an expected error (`…: /main.mcl @ 5:13-5:14`).
fn position(line: &str) -> Option<(String, String)> {
    let at = line.find(" @ ")?;
    let (_, file) = line[..at].rsplit_once(": /")?;
    let start = line[at + 3..].split('-').next()?;
    Some((file.to_string(), start.to_string()))
}
