//! The scope phase on one block of 100,000 binds, the graph its cycle check (strongly
//! connected components) runs on: built once with lang's own Tarjan and once with
//! petgraph's, to see which to keep.
//!
//! `cargo run --release --bin scope` from `bench/compare`.

#![allow(clippy::print_stdout, reason = "a report for the terminal")]

use std::fmt::Write;

use lang::catalog::Catalog;
use lang::loader::MemLoader;
use lang::span::{FileId, SourceFile, SourceMap};
use tend_compare::{median, ms};

fn main() {
    let n = 100_000;
    let mut text = String::from("$v0 = 1\n");
    for i in 1..n {
        // Each bind uses two of lower number: a DAG with 2n edges.
        let _ = writeln!(text, "$v{i} = $v{} + $v{}", i / 2, i / 3);
    }
    let (file, diags) = lang::syntax::parse(FileId(0), &text);
    assert!(diags.is_empty());
    let loader = MemLoader::new();
    let catalog = Catalog::default();
    let took = median(9, || {
        let mut sources = SourceMap::new();
        sources.add(SourceFile::new("/main.mcl", text.as_str()));
        let (_, diags) = lang::scope::resolve(file.clone(), "/main.mcl", &loader, &catalog, &mut sources);
        assert!(diags.iter().all(|d| d.warning), "{:?}", diags.first());
    });
    println!("scope of {n} binds (median of 9): {}", ms(took));
}
