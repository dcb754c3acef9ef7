//! Conformance of scope resolution against the mgmt corpus: every archive in
//! `conformance/graph` and `conformance/unit-errors` is run through
//! parse → init → interpolate → resolve with a catalog holding the functions the corpus
//! uses. An archive expecting `errSetScope` must fail resolution; one expecting a later
//! stage (or success) must pass it. Archives that fail an earlier stage are skipped.

use crate::corpus_support;

use lang::catalog::Catalog;
use lang::diag::{Diagnostics, Stage};
use lang::span::SourceMap;

/// Every built-in the corpus calls (names only; signatures do not matter to scope).
const FUNCS: &[&str] = &[
    "len",
    "contains",
    "concat",
    "list_lookup",
    "map_lookup",
    "history",
    "random1",
    "panic",
    "panic_debug",
    "fmt.printf",
    "golang.template",
    "golang/strings.join",
    "golang/strings.trim_space",
    "golang/strings.has_prefix",
    "golang/strings.to_upper",
    "iter.map",
    "iter.filter",
    "iter.reduce",
    "iter.zip",
    "iter.flatten",
    "iter.range",
    "deploy.abspath",
    "deploy.readfile",
    "deploy.readfileabs",
    "deploy.file_exists",
    "deploy.directory",
    "deploy.binary_path",
    "math.fortytwo",
    "math.minus1",
    "math.mod",
    "math.pow",
    "math.sqrt",
    "test.fastcount",
    "test.forloop",
    "test.forkvloop",
    "test.one_instance_a",
    "test.one_instance_b",
    "test.one_instance_c",
    "test.one_instance_d",
    "test.one_instance_e",
    "test.one_instance_f",
    "test.one_instance_g",
    "test.one_instance_h",
    "test.one_stream",
    "test.slow_string",
    "datetime.now",
    "datetime.print",
    "datetime.format",
    "datetime.hour",
    "datetime.weekday",
    "os.readfile",
    "os.system",
    "os.family",
    "os.args",
    "map.keys",
    "map.values",
    "map.lookup",
    "list.concat",
    "list.lookup",
    "sys.load",
    "sys.getenv",
    "sys.hostname",
    "sys.cpu_count",
    "strings.trim_space",
    "strings.to_upper",
    "strings.split",
    "net.cidr_to_ip",
    "net.macfmt",
    "encoding.base64_encode",
    "encoding.base64_decode",
    "encoding.decode_json",
    "convert.str_to_int",
    "convert.int_to_str",
    "convert.format_bool",
    "example/nested.hello",
    "example.answer",
    "regexp.match",
];

fn catalog() -> Catalog {
    let mut c = corpus_support::any_funcs(FUNCS);
    corpus_support::add_corpus_constants(&mut c);
    c
}

enum Outcome {
    /// Failed before scope resolution (not this phase's business).
    Earlier,
    Resolved(Diagnostics, SourceMap),
}

fn run(sections: &[(String, String)], catalog: &Catalog) -> Outcome {
    let Some((_graph, diags, sources)) = corpus_support::resolve(sections, catalog) else { return Outcome::Earlier };
    Outcome::Resolved(diags, sources)
}

#[test]
fn corpus_scope_stage_matches() {
    let Some(files) = corpus_support::corpus_archives(&["graph", "unit-errors"]) else { return };
    let catalog = catalog();
    let (mut pass, mut fail, mut skipped, mut exact) = (0, 0, 0, 0);
    let mut failures = Vec::new();
    for path in &files {
        let Some((sections, output, stage)) = corpus_support::archive_with_stage(path) else {
            skipped += 1;
            continue;
        };
        let stage = stage.as_deref();
        if matches!(stage, Some("errLexParse" | "errInit" | "errInterpolate")) {
            skipped += 1;
            continue;
        }
        let want_fail = stage == Some("errSetScope");
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match run(&sections, &catalog) {
            Outcome::Earlier => {
                skipped += 1;
                println!("earlier-stage failure (skipped): {name}");
            }
            Outcome::Resolved(diags, sources) => {
                assert!(diags.iter().all(|d| d.stage == Stage::SetScope), "{name}: wrong stage");
                let failed = !diags.is_empty();
                if failed == want_fail {
                    pass += 1;
                    if let Some(d) = diags.first() {
                        // Informational: how often mgmt's exact text and position match.
                        let line = d.one_line(&sources);
                        let candidates: Vec<&str> = output
                            .lines()
                            .map(|l| l.trim_start_matches("# err: ").trim_start_matches("errSetScope: "))
                            .collect();
                        if candidates.contains(&line.trim_start_matches("errSetScope: ")) {
                            exact += 1;
                        } else {
                            println!("  text differs in {name}: {line}");
                        }
                    }
                } else {
                    fail += 1;
                    let first = diags.first().map(|d| d.message.clone()).unwrap_or_default();
                    failures.push(format!("{name} (want {}): {first}", if want_fail { "failure" } else { "success" }));
                }
            }
        }
    }
    println!("scope conformance: {pass} passed, {fail} failed, {skipped} skipped; {exact} errors match mgmt's text");
    for f in &failures {
        println!("  FAIL {f}");
    }
    let rate = pass as f64 / (pass + fail).max(1) as f64;
    assert!(pass + fail > 200, "too few archives ran: {}", pass + fail);
    assert!(rate >= 0.95, "pass rate {rate:.3} below 0.95");
}
