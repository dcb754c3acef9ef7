//! `tend fmt [PATH…]`: rewrites mcl files in mgmt's canonical layout (`lang::format`),
//! each atomically and only when it changes; `--check` only lists the files that are not
//! formatted; `-` formats stdin to stdout. A file that does not parse is reported and left
//! as it is.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use lang::span::{SourceFile, SourceMap};

/// What became of one file.
enum Outcome {
    Unchanged,
    Changed,
    Broken,
}

pub fn run(paths: &[PathBuf], check: bool) -> ExitCode {
    if paths.iter().any(|p| p.as_os_str() == "-") {
        if paths.len() > 1 {
            crate::stderr::line(format_args!("error: `-` (stdin) cannot be formatted with other paths"));
            return ExitCode::from(2);
        }
        return stdin();
    }
    let roots: Vec<PathBuf> = if paths.is_empty() { vec![PathBuf::from(".")] } else { paths.to_vec() };
    let mut files = Vec::new();
    for root in &roots {
        if let Err(e) = collect(root, &mut files) {
            crate::stderr::line(format_args!("error: cannot read `{}`: {e}", root.display()));
            return ExitCode::from(2);
        }
    }
    let (mut changed, mut broken) = (0, 0);
    for file in &files {
        match one(file, check) {
            Ok(Outcome::Unchanged) => {}
            Ok(Outcome::Changed) => {
                changed += 1;
                crate::stdout::line(format_args!("{}", file.display()));
            }
            Ok(Outcome::Broken) => broken += 1,
            Err(e) => {
                crate::stderr::line(format_args!("error: `{}`: {e}", file.display()));
                broken += 1;
            }
        }
    }
    if check && changed > 0 {
        crate::stderr::line(format_args!("tend fmt: {changed} of {} file(s) not formatted", files.len()));
    }
    if broken > 0 || (check && changed > 0) { ExitCode::from(1) } else { ExitCode::SUCCESS }
}

/// Formats stdin to stdout (the contract `../shared/tools/conform --mode fmt` scores).
fn stdin() -> ExitCode {
    let mut text = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut text) {
        crate::stderr::line(format_args!("error: cannot read stdin: {e}"));
        return ExitCode::from(1);
    }
    match format(&text, "<stdin>") {
        Some(out) => {
            crate::stdout::print(out);
            ExitCode::SUCCESS
        }
        None => ExitCode::from(1),
    }
}

/// One file: formatted in place (unless `check`), reported when it does not parse.
fn one(path: &Path, check: bool) -> std::io::Result<Outcome> {
    let bytes = std::fs::read(path)?;
    let Ok(text) = String::from_utf8(bytes) else {
        crate::stderr::line(format_args!("error: `{}` is not UTF-8 text; left as it is", path.display()));
        return Ok(Outcome::Broken);
    };
    let Some(out) = format(&text, &path.display().to_string()) else { return Ok(Outcome::Broken) };
    if out == text {
        return Ok(Outcome::Unchanged);
    }
    if !check {
        resources::util::fs::atomic_write(path, out.as_bytes(), None)?;
    }
    Ok(Outcome::Changed)
}

/// `text` formatted, or `None` after its errors were printed (shown as `name`).
fn format(text: &str, name: &str) -> Option<String> {
    let mut sources = SourceMap::new();
    let id = sources.add(SourceFile::new(name, text));
    match lang::format::format(id, text) {
        Ok(out) => Some(out),
        Err(diags) => {
            let diags = diags.into_vec();
            crate::stderr::print(lang::render::render_all(&diags, &sources, crate::stderr::color()));
            None
        }
    }
}

/// The `.mcl` files at `path`: itself, or every one under it (hidden directories
/// skipped), in a stable order.
fn collect(path: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if !std::fs::metadata(path)?.is_dir() {
        if lang::yamlgraph::is_yaml(&path.to_string_lossy()) {
            return Err(std::io::Error::other("it is a YAML graph; `tend fmt` formats mcl files only"));
        }
        out.push(path.to_path_buf());
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    entries.sort();
    for entry in entries {
        let hidden = entry.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if hidden {
            continue;
        }
        if entry.is_dir() {
            collect(&entry, out)?;
        } else if entry.extension().is_some_and(|e| e == "mcl") {
            out.push(entry);
        }
    }
    Ok(())
}
