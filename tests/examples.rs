//! Every bundled example as a user meets it, and every program of `docs/guide.md`: `tend
//! check` accepts each one, and each example that keeps everything under
//! `$TEND_EXAMPLE_ROOT` is run twice on a temporary root with `--converged-timeout 0`: the
//! first run converges without failure, the second changes nothing (`--detailed-exitcodes`
//! exits 0).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TEND: &str = env!("CARGO_BIN_EXE_tend");

/// Examples whose program follows the clock: a second run may see another hour.
const CLOCK_DRIVEN: &[&str] = &["datetime"];

fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut all: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    all.retain(|p| p.join("main.mcl").is_file());
    all.sort();
    all
}

fn text(out: &Output) -> String {
    format!("stdout:\n{}\nstderr:\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn run(example: &Path, root: &Path, state: &Path) -> Output {
    Command::new(TEND)
        .args(["run", "--converged-timeout", "0", "--detailed-exitcodes", "--hostname", "web7", "--prefix"])
        .arg(state)
        .arg(example)
        .env("TEND_EXAMPLE_ROOT", root)
        .output()
        .expect("tend runs")
}

#[test]
fn there_are_a_dozen_examples_and_tend_check_accepts_each_without_a_warning() {
    let all = examples();
    assert!(all.len() >= 12, "{} examples", all.len());
    for example in &all {
        let out = Command::new(TEND).args(["check", "--deny", "warnings"]).arg(example).output().unwrap();
        assert!(out.status.success(), "{}: {}", example.display(), text(&out));
    }
}

#[test]
fn the_examples_are_formatted() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let out = Command::new(TEND).arg("fmt").arg("--check").arg(&examples).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn every_program_in_the_guide_passes_tend_check() {
    let guide = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guide.md")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for (i, block) in guide.split("```mcl\n").skip(1).enumerate() {
        let program = block.split("```").next().unwrap();
        let path = dir.path().join(format!("block{i}.mcl"));
        std::fs::write(&path, program).unwrap();
        let out = Command::new(TEND).arg("check").arg(&path).output().unwrap();
        assert!(out.status.success(), "guide block {i}:\n{program}\n{}", text(&out));
        checked += 1;
    }
    assert!(checked >= 8, "{checked} programs in the guide");
}

#[test]
fn the_examples_that_keep_to_their_root_converge_and_then_change_nothing() {
    let mut ran = 0;
    for example in examples() {
        let program = std::fs::read_to_string(example.join("main.mcl")).unwrap();
        if !program.contains("TEND_EXAMPLE_ROOT") {
            continue;
        }
        let name = example.file_name().unwrap().to_string_lossy().into_owned();
        let dir = tempfile::tempdir().unwrap();
        let (root, state) = (dir.path().join("root"), dir.path().join("state"));
        let first = run(&example, &root, &state);
        assert_eq!(
            first.status.code(),
            Some(2),
            "{name}: the first run makes changes and no failure\n{}",
            text(&first)
        );
        assert!(root.is_dir(), "{name}: everything lives under the root");
        let second = run(&example, &root, &state);
        if !CLOCK_DRIVEN.contains(&name.as_str()) {
            assert_eq!(second.status.code(), Some(0), "{name}: the second run changes nothing\n{}", text(&second));
        } else {
            assert!(matches!(second.status.code(), Some(0 | 2)), "{name}\n{}", text(&second));
        }
        ran += 1;
    }
    assert!(ran >= 10, "{ran} examples ran");
}
