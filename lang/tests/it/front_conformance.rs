//! Front-end conformance: runs parse, init and interpolate over `main.mcl` of every
//! conformance archive (and every example program) and checks that each stage fails
//! exactly when the archive expects it to.

use std::fs;
use std::path::PathBuf;

use lang::diag::Diagnostics;
use lang::span::{FileId, SourceFile, SourceMap};
use lang::{init, interpolate, syntax};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    LexParse,
    Init,
    Interpolate,
    /// Any later stage, or success: the front end must succeed.
    Pass,
}

/// Which of the three front-end stages failed first, if any.
fn run_front(text: &str) -> (Option<Expect>, Diagnostics) {
    let (file, diags) = syntax::parse(FileId(0), text);
    if !diags.is_empty() {
        return (Some(Expect::LexParse), diags);
    }
    let diags = init::check(&file);
    if !diags.is_empty() {
        return (Some(Expect::Init), diags);
    }
    let (_, diags) = interpolate::run(file);
    if !diags.is_empty() {
        return (Some(Expect::Interpolate), diags);
    }
    (None, diags)
}

fn render(text: &str, diags: &Diagnostics) -> String {
    let mut map = SourceMap::new();
    map.add(SourceFile::new("/main.mcl", text));
    diags.iter().map(|d| d.one_line(&map)).collect::<Vec<_>>().join("\n        ")
}

#[test]
fn front_end_stages_match_the_conformance_corpus() {
    let Some(shared) = testkit::shared_dir() else {
        println!("skipping: ../shared (the conformance corpus) is not present");
        return;
    };
    let mut total = [0usize; 4];
    let mut passed = [0usize; 4];
    let mut failures = Vec::new();
    for sub in ["graph", "unit-errors"] {
        for path in testkit::archives(&shared.join("conformance").join(sub)) {
            let Ok(text) = fs::read_to_string(&path) else { continue };
            let sections = testkit::txtar(&text);
            let Some((_, main)) = sections.iter().find(|(name, _)| name == "main.mcl") else { continue };
            let Some((_, output)) = sections.iter().find(|(name, _)| name == "OUTPUT") else { continue };
            let expect = match output.lines().find_map(|l| l.strip_prefix("# err: ")) {
                Some(err) if err.starts_with("errLexParse") => Expect::LexParse,
                Some(err) if err.starts_with("errInit") => Expect::Init,
                Some(err) if err.starts_with("errInterpolate") => Expect::Interpolate,
                _ => Expect::Pass,
            };
            let slot = expect as usize;
            total[slot] += 1;
            let (got, diags) = run_front(main);
            let ok = match expect {
                Expect::Pass => got.is_none(),
                stage => got == Some(stage),
            };
            if std::env::var_os("FRONT_VERBOSE").is_some() && got.is_some() {
                println!("{}: {}", path.display(), render(main, &diags));
            }
            if ok {
                passed[slot] += 1;
            } else {
                let name = format!("{sub}/{}", path.file_name().unwrap_or_default().to_string_lossy());
                failures.push(format!("{name}: expected {expect:?}, got {got:?}\n        {}", render(main, &diags)));
            }
        }
    }
    for (i, stage) in ["errLexParse", "errInit", "errInterpolate", "pass (later stages)"].iter().enumerate() {
        println!("{stage:>20}: {}/{}", passed[i], total[i]);
    }
    for failure in &failures {
        println!("FAIL {failure}");
    }
    let all: usize = total.iter().sum();
    let ok: usize = passed.iter().sum();
    println!("front end: {ok}/{all} archives behave as expected");
    assert!(all > 0, "no archives found");
    assert!(ok * 100 >= all * 98, "pass rate below 98%: {ok}/{all}");
}

#[test]
fn every_example_program_passes_the_front_end() {
    let Some(shared) = testkit::shared_dir() else {
        println!("skipping: ../shared (the conformance corpus) is not present");
        return;
    };
    let mut files: Vec<PathBuf> = Vec::new();
    let mut dirs = vec![shared.join("conformance").join("examples")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        for entry in entries.filter_map(|e| e.ok()) {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "mcl") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut failures = Vec::new();
    for path in &files {
        let Ok(text) = fs::read_to_string(path) else { continue };
        let (got, diags) = run_front(&text);
        if got.is_some() {
            failures.push(format!("{}: {got:?}\n        {}", path.display(), render(&text, &diags)));
        }
    }
    for failure in &failures {
        println!("FAIL {failure}");
    }
    println!("examples: {}/{} pass the front end", files.len() - failures.len(), files.len());
    assert!(!files.is_empty(), "no example programs found");
    assert!(failures.is_empty(), "{} example programs fail the front end", failures.len());
}
