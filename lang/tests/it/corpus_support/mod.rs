//! What the conformance tests of the front end share: an archive run through parse,
//! init, interpolate and scope resolution, and the constants mgmt's corpus reads.

#![allow(dead_code)]

use lang::catalog::Catalog;
use lang::diag::Diagnostics;
use lang::loader::MemLoader;
use lang::span::{SourceFile, SourceMap};
use lang::value::Value;

/// The constants the corpus's programs read (`$hostname`, `purpleidea`, file states).
pub fn add_corpus_constants(c: &mut Catalog) {
    c.add_constant("hostname", Value::str(""));
    c.add_constant("purpleidea", Value::str("hello world!"));
    for (k, v) in [("exists", "exists"), ("absent", "absent"), ("undefined", "")] {
        c.add_constant(format!("const.res.file.state.{k}"), Value::str(v));
    }
}

/// Parse, init and interpolate one file; the tree when all three passed.
pub fn front(file: lang::span::FileId, text: &str) -> (Option<lang::syntax::ast::File>, Diagnostics) {
    let (parsed, mut diags) = lang::syntax::parse(file, text);
    if !diags.is_empty() {
        return (None, diags);
    }
    diags.extend(lang::init::check(&parsed));
    if !diags.is_empty() {
        return (None, diags);
    }
    let (out, more) = lang::interpolate::run(parsed);
    if !more.is_empty() {
        return (None, more);
    }
    (Some(out), diags)
}

/// An archive's program through scope resolution: the function graph, the diagnostics of
/// that stage and the sources; `None` when it failed an earlier stage (or has no entry
/// file). The entry is `main.mcl`, or what `metadata.yaml` names.
pub fn resolve(
    sections: &[(String, String)],
    catalog: &Catalog,
) -> Option<(lang::ir::FuncGraph, Diagnostics, SourceMap)> {
    let mut loader = MemLoader::new();
    for (name, body) in sections {
        if name != "OUTPUT" && name != "CONFIG" {
            loader = loader.with(&format!("/{name}"), body);
        }
    }
    let entry = testkit::entry(sections);
    let text = loader.files.get(&entry).cloned()?;
    let mut sources = SourceMap::new();
    let id = sources.add(SourceFile::new(entry.clone(), text.clone()));
    let (main, diags) = front(id, &text);
    let main = main.filter(|_| diags.is_empty())?;
    let (graph, diags) = lang::scope::resolve(main, &entry, &loader, catalog, &mut sources);
    // Warnings (unused names) are not errors of the stage.
    let errors = diags.into_vec().into_iter().filter(|d| !d.warning).collect();
    Some((graph, errors, sources))
}

/// The stage of a corpus case's expected `# err: errSTAGE: …` line.
pub fn expected_stage(output: &str) -> Option<&str> {
    let first = output.lines().find(|l| !l.trim().is_empty())?;
    let rest = first.strip_prefix("# err: ")?;
    rest.split(':').next()
}

/// mgmt's corpus archives of `dirs` (under `../shared/conformance`), sorted; `None`, said
/// on stdout, when the corpus is absent.
#[allow(clippy::print_stdout)] // the skip message
pub fn corpus_archives(dirs: &[&str]) -> Option<Vec<std::path::PathBuf>> {
    let Some(shared) = testkit::shared_dir().filter(|s| s.join("conformance").is_dir()) else {
        println!("skipping: ../shared/conformance not found");
        return None;
    };
    let mut files: Vec<std::path::PathBuf> =
        dirs.iter().flat_map(|dir| testkit::archives(&shared.join("conformance").join(dir))).collect();
    files.sort();
    Some(files)
}

/// A catalog of the functions `names`, each taking anything (scope resolution looks only
/// at the names).
pub fn any_funcs(names: &[&str]) -> Catalog {
    let mut c = Catalog::new();
    for name in names {
        c.add_func(lang::catalog::FuncDecl {
            name: name.to_string(),
            sigs: vec![lang::types::Type::func(vec![], lang::types::Type::Var(1))],
            infer: None,
            check: None,
            doc: "",
        });
    }
    c
}

/// An archive as the stage tests read it: its sections, its `OUTPUT`, and its expected
/// first error stage (`None`: it compiles).
pub type Archive = (Vec<(String, String)>, String, Option<String>);

/// The archive at `path`; `None` without an `OUTPUT` section or when it cannot be read.
pub fn archive_with_stage(path: &std::path::Path) -> Option<Archive> {
    let text = std::fs::read_to_string(path).ok()?;
    let sections = testkit::txtar(&text);
    let output = sections.iter().find(|(n, _)| n == "OUTPUT").map(|(_, b)| b.clone())?;
    let stage = expected_stage(&output).map(str::to_string);
    Some((sections, output, stage))
}
