//! `tend fmt`: files rewritten in place only when they change, `--check` for CI, `-` for
//! stdin, a file that does not parse left as it is; and on mgmt's whole corpus (skipped
//! when `../shared` is absent) every canonical program comes back byte for byte, also
//! with its indentation stripped and its blank lines doubled, formatting is idempotent,
//! keeps the token stream, and compiles to the same function graph.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use lang::loader::MemLoader;
use lang::span::FileId;
use lang::syntax::token::{Tok, lex};

const TEND: &str = env!("CARGO_BIN_EXE_tend");

fn tend(dir: &Path, args: &[&str]) -> Output {
    Command::new(TEND).args(args).current_dir(dir).output().expect("tend runs")
}

fn stdin(text: &str) -> Output {
    let mut child = Command::new(TEND)
        .args(["fmt", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn fmt_rewrites_what_is_not_formatted_and_check_only_lists_it() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    std::fs::create_dir_all(site.join("web")).unwrap();
    std::fs::write(site.join("main.mcl"), "$x=1\nfile \"/tmp/a\" {\ncontent=>\"a\",\n}\n").unwrap();
    std::fs::write(site.join("web/main.mcl"), "$port = 80\n").unwrap();
    std::fs::write(site.join("notes.txt"), "$x=1\n").unwrap();

    let out = tend(dir.path(), &["fmt", "--check", "site"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "site/main.mcl\n");
    assert_eq!(
        std::fs::read_to_string(site.join("main.mcl")).unwrap(),
        "$x=1\nfile \"/tmp/a\" {\ncontent=>\"a\",\n}\n"
    );

    let out = tend(dir.path(), &["fmt", "site"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(site.join("main.mcl")).unwrap(),
        "$x = 1\nfile \"/tmp/a\" {\n\tcontent => \"a\",\n}\n"
    );
    assert_eq!(std::fs::read_to_string(site.join("notes.txt")).unwrap(), "$x=1\n", "only .mcl files");
    let out = tend(dir.path(), &["fmt", "--check", "site"]);
    assert!(out.status.success() && out.stdout.is_empty());
}

#[test]
fn a_file_that_does_not_parse_is_reported_and_left_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.mcl"), "$x = = 1\n").unwrap();
    let out = tend(dir.path(), &["fmt", "bad.mcl"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bad.mcl:1:6") && stderr.contains("additional equals"), "{stderr}");
    assert_eq!(std::fs::read_to_string(dir.path().join("bad.mcl")).unwrap(), "$x = = 1\n");
}

#[test]
fn stdin_is_formatted_to_stdout() {
    let out = stdin("$l=[1,2]\n");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "$l = [1, 2]\n");
    let out = stdin("$l = [1,\n");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
}

/// The tokens of `text` without positions, runs of newlines as one (blank lines are
/// layout), leading and trailing newlines dropped.
fn token_stream(text: &str) -> Vec<Tok> {
    let mut out: Vec<Tok> = Vec::new();
    for (tok, _) in lex(FileId(0), text).tokens {
        if tok == Tok::Newline && matches!(out.last(), None | Some(Tok::Newline)) {
            continue;
        }
        out.push(tok);
    }
    while matches!(out.last(), Some(Tok::Newline | Tok::Eof)) {
        out.pop();
    }
    out
}

/// What a program compiles to, without positions: each node's kind, each node's type, or
/// the errors' messages.
fn meaning(files: &[(String, String)], entry: &str) -> String {
    let (_, catalog) = tend::compile::catalog(None);
    let mut loader = MemLoader::new();
    for (name, text) in files {
        loader = loader.with(&format!("/{name}"), text);
    }
    let out = lang::pipeline::compile(entry, &loader, &catalog);
    match out.graph {
        Some(graph) => {
            let kinds: Vec<String> = graph.nodes.iter().map(|n| format!("{:?}", n.kind)).collect();
            format!("{kinds:?}\n{:?}", graph.types)
        }
        None => out.diagnostics.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("\n"),
    }
}

/// `text` with every line's indentation removed and every blank line doubled.
fn mangled(text: &str) -> String {
    text.lines()
        .map(|l| if l.trim().is_empty() { "\n\n".to_string() } else { format!("{}\n", l.trim_start()) })
        .collect()
}

#[test]
fn the_corpus_comes_back_byte_for_byte_and_means_the_same() {
    let Some(shared) = testkit::shared_dir().map(|s| s.join("conformance")) else {
        println!("skipping: mgmt's conformance corpus (../shared/conformance) is not present");
        return;
    };
    let (mut canonical, mut formatted) = (0, 0);
    for sub in ["graph", "unit-errors", "engine"] {
        for archive in testkit::archives(&shared.join(sub)) {
            let sections = testkit::txtar(&std::fs::read_to_string(&archive).unwrap());
            let nofmt = testkit::section(&sections, "CONFIG").is_some_and(|c| c.contains("\"nofmt\": true"));
            let files: Vec<(String, String)> = sections.iter().filter(|(n, _)| n.ends_with(".mcl")).cloned().collect();
            let entry = testkit::entry(&sections);
            for (name, text) in &files {
                let where_ = format!("{}: {name}", archive.display());
                let Ok(once) = lang::format::format(FileId(0), text) else { continue };
                assert_eq!(
                    lang::format::format(FileId(0), &once).ok().as_deref(),
                    Some(once.as_str()),
                    "{where_}: idempotent"
                );
                assert_eq!(token_stream(&once), token_stream(text), "{where_}: tokens");
                if !nofmt {
                    assert_eq!(once, *text, "{where_}: canonical");
                    let again = lang::format::format(FileId(0), &mangled(text)).expect("mangled parses");
                    assert_eq!(again, *text, "{where_}: from mangled");
                    canonical += 1;
                } else {
                    let swapped: Vec<(String, String)> = files
                        .iter()
                        .map(|(n, t)| (n.clone(), if n == name { once.clone() } else { t.clone() }))
                        .collect();
                    assert_eq!(meaning(&swapped, &entry), meaning(&files, &entry), "{where_}: meaning");
                    formatted += 1;
                }
            }
        }
    }
    // mgmt's formatter cases: NAME.badmcl becomes NAME.mcl, which stays as it is.
    let cases = shared.join("format");
    let mut bad: Vec<_> = std::fs::read_dir(&cases).unwrap().map(|e| e.unwrap().path()).collect();
    bad.retain(|p| p.extension().is_some_and(|e| e == "badmcl"));
    for path in &bad {
        let text = std::fs::read_to_string(path).unwrap();
        let want = std::fs::read_to_string(path.with_extension("mcl")).unwrap();
        let got = lang::format::format(FileId(0), &text).expect("parses");
        assert_eq!(got, want, "{}", path.display());
        assert_eq!(token_stream(&got), token_stream(&text), "{}", path.display());
        let (before, after) = (vec![("main.mcl".to_string(), text)], vec![("main.mcl".to_string(), got)]);
        assert_eq!(meaning(&after, "/main.mcl"), meaning(&before, "/main.mcl"), "{}", path.display());
        formatted += 1;
    }
    println!("{canonical} canonical programs unchanged, {formatted} others reformatted with the same meaning");
    assert!(canonical > 200, "{canonical}");
}
