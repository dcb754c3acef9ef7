//! Runs the project's own txtar corpus (`tests/corpus/{check,graph}/*.txtar`) through the
//! real binary. Each archive lays out its files in a temp dir; `OUTPUT` is the exact
//! expected stdout of `tend check` (for `check/`) or `tend graph` (for `graph/`): the
//! `# err: errSTAGE: message: /file @ l:c-l:c` line of a failure, or the sorted graph.
//! An optional `STDERR` section holds lines that must each appear in stderr (the rendered
//! diagnostics: labels, notes, further errors); it is never blessed. An optional
//! `NOT-STDERR` section holds lines that must not appear there (a note that would mislead).
//! `TEND_BLESS=1 cargo test --test corpus` rewrites the OUTPUT sections in place. Each
//! archive is a test of its own (`cargo test --test corpus -- graph/NAME`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn run_case(path: &Path, mode: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let sections = testkit::txtar(&text);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut expected = None;
    let mut stderr_lines: Vec<&str> = Vec::new();
    let mut absent_lines: Vec<&str> = Vec::new();
    for (name, body) in &sections {
        if name == "OUTPUT" {
            expected = Some(body.clone());
            continue;
        }
        if name == "STDERR" {
            stderr_lines.extend(body.lines().map(str::trim).filter(|l| !l.is_empty()));
            continue;
        }
        if name == "NOT-STDERR" {
            absent_lines.extend(body.lines().map(str::trim).filter(|l| !l.is_empty()));
            continue;
        }
        let dest = dir.path().join(name);
        std::fs::create_dir_all(dest.parent().unwrap()).map_err(|e| e.to_string())?;
        std::fs::write(&dest, body).map_err(|e| e.to_string())?;
    }
    let expected = expected.ok_or("no OUTPUT section")?;
    let out = Command::new(env!("CARGO_BIN_EXE_tend"))
        .arg(mode)
        .arg(dir.path().join("main.mcl"))
        .current_dir(dir.path())
        // Imports by URL look in the case's own `modules/` (files `-- modules/host/x/main.mcl --`).
        .env("MGMT_MODULE_PATH", dir.path().join("modules/"))
        .output()
        .map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("panicked") {
        return Err(format!("the binary panicked:\n{stderr}"));
    }
    let missing: Vec<&str> = stderr_lines.iter().copied().filter(|l| !stderr.contains(l)).collect();
    if !missing.is_empty() {
        return Err(format!("stderr lacks:\n{}\nstderr:\n{stderr}", missing.join("\n")));
    }
    let present: Vec<&str> = absent_lines.iter().copied().filter(|l| stderr.contains(l)).collect();
    if !present.is_empty() {
        return Err(format!("stderr must not have:\n{}\nstderr:\n{stderr}", present.join("\n")));
    }
    if stdout.trim() == expected.trim() {
        return Ok(());
    }
    if std::env::var_os("TEND_BLESS").is_some() {
        let mut new = String::new();
        for (name, body) in &sections {
            new.push_str(&format!("-- {name} --\n"));
            new.push_str(if name == "OUTPUT" { &stdout } else { body });
        }
        std::fs::write(path, new).map_err(|e| e.to_string())?;
        return Ok(());
    }
    Err(format!("expected:\n{}\ngot:\n{}\nstderr:\n{stderr}", expected.trim(), stdout.trim()))
}

/// The archives of `tests/corpus/<mode>/`, sorted.
fn cases(mode: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus").join(mode);
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "txtar"))
                .collect()
        })
        .unwrap_or_default();
    cases.sort();
    cases
}

/// One test per archive, named `<mode>/<archive>`, so a failure names its case.
fn main() {
    let args = libtest_mimic::Arguments::from_args();
    let mut trials = Vec::new();
    for mode in ["check", "graph"] {
        let found = cases(mode);
        assert!(!found.is_empty(), "no archives in tests/corpus/{mode}");
        for path in found {
            let name = format!("{mode}/{}", path.file_stem().unwrap_or_default().to_string_lossy());
            trials.push(libtest_mimic::Trial::test(name, move || run_case(&path, mode).map_err(Into::into)));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
