//! Runs the binary on mgmt's conformance corpus (`../shared/conformance/{graph,
//! unit-errors}`) the way `shared/tools/conform` does: each archive is unpacked into a
//! temp dir and `tend graph|check main.mcl` is run there. One test per archive and mode,
//! named `graph/NAME (graph)`, `graph/NAME (check)`, `unit-errors/NAME (check)`, so a
//! failure names its case; every case must pass but the few listed in [`KNOWN`], each with
//! its reason (run as ignored tests: `-- --ignored` shows whether they still fail). Skips
//! with a message when `../shared` is absent.

#![allow(clippy::print_stdout)] // the skip message

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Stages `tend check` must reproduce; later ones are not its business.
const EARLY: [&str; 5] = ["errLexParse", "errInit", "errInterpolate", "errSetScope", "errUnify"];
const TIMEOUT: Duration = Duration::from_secs(30);

/// Cases tend does not pass yet: (folder, archive, mode, why).
const KNOWN: &[(&str, &str, Mode, &str)] = &[(
    "unit-errors",
    "resdupefields0",
    Mode::Check,
    "a duplicate field in a resource body is found when the graph is built, after `check`'s stages",
)];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Graph,
    Check,
}

impl Mode {
    fn arg(self) -> &'static str {
        match self {
            Mode::Graph => "graph",
            Mode::Check => "check",
        }
    }
}

/// One case's result: its category (expected stage, `graph` or `empty`) and, when it
/// failed, why.
struct Outcome {
    category: String,
    failure: Option<String>,
}

/// Sorted `Vertex:`/`Edge:` lines, edges without their ` # label`.
fn norm_graph(text: &str) -> Vec<String> {
    let mut out: Vec<String> = text
        .lines()
        .map(str::trim_end)
        .filter_map(|l| {
            if l.starts_with("Vertex: ") {
                Some(l.to_string())
            } else if l.starts_with("Edge: ") {
                Some(l.split(" # ").next().unwrap_or(l).to_string())
            } else {
                None
            }
        })
        .collect();
    out.sort();
    out
}

/// The stages of the expected `# err: errStage:` lines.
fn expected_errors(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("# err: err")?;
            let end = rest.find(':')?;
            let word = &rest[..end];
            (!word.is_empty() && word.chars().all(|c| c.is_ascii_alphabetic())).then(|| format!("err{word}"))
        })
        .collect()
}

/// Runs the binary on `main.mcl` in `dir`: (stdout, exit success), or `None` on timeout.
fn run_binary(dir: &Path, mode: Mode) -> Result<Option<(String, bool)>, String> {
    let out_path = dir.join(".tend-conformance-stdout");
    let out_file = std::fs::File::create(&out_path).map_err(|e| e.to_string())?;
    let mut child = Command::new(env!("CARGO_BIN_EXE_tend"))
        .arg(mode.arg())
        .arg(dir.join("main.mcl"))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out_file)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stdout = std::fs::read(&out_path).map_err(|e| e.to_string())?;
    Ok(Some((String::from_utf8_lossy(&stdout).into_owned(), status.success())))
}

/// Runs one archive and judges it like `conform`.
fn run_one(path: &Path, mode: Mode) -> Outcome {
    let fail = |category: &str, why: String| Outcome { category: category.to_string(), failure: Some(why) };
    let files = match std::fs::read(path) {
        Ok(bytes) => sections_by_name(&String::from_utf8_lossy(&bytes)),
        Err(e) => return fail("unreadable", e.to_string()),
    };
    let Some(want) = files.get("OUTPUT") else { return fail("no OUTPUT", "no OUTPUT section".into()) };
    let stages = expected_errors(want);
    let category = match stages.first() {
        Some(s) => s.clone(),
        None if want.trim() == "# empty!" => "empty".to_string(),
        None => "graph".to_string(),
    };
    let judged = (|| -> Result<Option<String>, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        for (file, body) in &files {
            if file == "OUTPUT" || file == "CONFIG" {
                continue;
            }
            let dest = dir.path().join(file.trim_start_matches('/'));
            if let Some(parent) = dest.parent() {
                std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
            }
            std::fs::write(&dest, body).map_err(|e| e.to_string())?;
        }
        let Some((got, success)) = run_binary(dir.path(), mode)? else { return Ok(Some("timeout".into())) };
        Ok(judge(mode, want, &stages, &got, success))
    })();
    let failure = judged.unwrap_or_else(|e| Some(format!("harness error: {e}")));
    Outcome { category, failure }
}

/// `None` when `got` passes, else the reason it fails.
fn judge(mode: Mode, want: &str, stages: &[String], got: &str, success: bool) -> Option<String> {
    let first = got.trim().lines().next().unwrap_or("");
    let shown = |s: &str| -> String { s.chars().take(160).collect() };
    let matches_stage = |s: &String| first.starts_with(&format!("# err: {s}:"));
    let wanted = |list: &[String]| -> String {
        let mut v: Vec<&str> = list.iter().map(String::as_str).collect();
        v.sort();
        v.dedup();
        v.join("/")
    };
    if mode == Mode::Check {
        let early: Vec<String> = stages.iter().filter(|s| EARLY.contains(&s.as_str())).cloned().collect();
        if !early.is_empty() && early.len() == stages.len() {
            if early.iter().any(matches_stage) {
                return None;
            }
            let got = if first.is_empty() { "(no error)".to_string() } else { shown(first) };
            return Some(format!("want {}, got: {got}", wanted(&early)));
        }
        if first.starts_with("# err:") || !success {
            let what = if first.is_empty() { "nonzero exit".to_string() } else { shown(first) };
            return Some(format!("check rejected a program that compiles: {what}"));
        }
        return None;
    }
    if !stages.is_empty() {
        if stages.iter().any(matches_stage) {
            return None;
        }
        let got = if first.is_empty() { "(no error)".to_string() } else { shown(first) };
        return Some(format!("want {}, got: {got}", wanted(stages)));
    }
    if first.starts_with("# err:") {
        return Some(format!("unexpected error: {}", shown(first)));
    }
    if want.trim() == "# empty!" {
        return (!norm_graph(got).is_empty()).then(|| "want empty graph".to_string());
    }
    (norm_graph(got) != norm_graph(want)).then(|| "graph differs".to_string())
}

/// Every archive under `dir` (recursively), sorted.
fn archives(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for entry in rd.flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "txtar") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// `../shared/conformance` (`TEND_SHARED_DIR` overrides `../shared`, for worktrees), or
/// `None` (with a message) when absent.
fn corpus() -> Option<PathBuf> {
    let shared = match std::env::var_os("TEND_SHARED_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"),
    };
    let dir = shared.join("conformance");
    if dir.join("graph").is_dir() && dir.join("unit-errors").is_dir() {
        Some(dir)
    } else {
        println!("skipped: the conformance corpus {} is absent", dir.display());
        None
    }
}

/// One test per archive and mode (graph mode on `graph/`, check mode on both folders), and
/// the judge's own test.
fn main() {
    let args = libtest_mimic::Arguments::from_args();
    let mut trials = vec![libtest_mimic::Trial::test("judging_follows_conform", || {
        judging_follows_conform();
        Ok(())
    })];
    if let Some(corpus) = corpus() {
        for (folder, modes) in [("graph", &[Mode::Graph, Mode::Check][..]), ("unit-errors", &[Mode::Check][..])] {
            let cases = archives(&corpus.join(folder));
            assert!(!cases.is_empty(), "no archives under {}", corpus.join(folder).display());
            for path in cases {
                for &mode in modes {
                    trials.push(trial(folder, &path, mode));
                }
            }
        }
    }
    libtest_mimic::run(&args, trials).exit();
}

/// The test of archive `path` of `folder` in `mode`; ignored (with why) when [`KNOWN`].
fn trial(folder: &str, path: &Path, mode: Mode) -> libtest_mimic::Trial {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy().into_owned();
    let known = KNOWN.iter().find(|(f, n, m, _)| *f == folder && *n == stem && *m == mode);
    let path = path.to_path_buf();
    let test = libtest_mimic::Trial::test(format!("{folder}/{stem} ({})", mode.arg()), move || {
        let outcome = run_one(&path, mode);
        match outcome.failure {
            None => Ok(()),
            Some(why) => Err(format!("[{}] {why}", outcome.category).into()),
        }
    });
    match known {
        Some((.., why)) => test.with_ignored_flag(true).with_kind(format!("known: {why}")),
        None => test,
    }
}

fn judging_follows_conform() {
    let stages = expected_errors("# err: errUnify: bad\n# err: errSetScope: x\n");
    assert_eq!(stages, ["errUnify", "errSetScope"]);
    assert_eq!(judge(Mode::Graph, "", &stages, "# err: errSetScope: y: /main.mcl @ 1:1-1:2\n", false), None);
    assert!(judge(Mode::Graph, "", &stages, "# err: errInit: y\n", false).is_some());
    let want = "Vertex: test[a]\nEdge: test[a] -> test[b] # x\nVertex: test[b]\n";
    let got = "Vertex: test[b]\nVertex: test[a]\nEdge: test[a] -> test[b]\n";
    assert_eq!(judge(Mode::Graph, want, &[], got, true), None);
    assert!(judge(Mode::Graph, want, &[], "Vertex: test[a]\n", true).is_some());
    assert_eq!(judge(Mode::Graph, "# empty!\n", &[], "", true), None);
    // check mode: a later-stage error expectation means the check must pass.
    let later = vec!["errInterpret".to_string()];
    assert_eq!(judge(Mode::Check, "", &later, "", true), None);
    assert!(judge(Mode::Check, "", &later, "", false).is_some());
}

/// The sections of a txtar archive by name (a later section of the same name wins, as in conform).
fn sections_by_name(text: &str) -> BTreeMap<String, String> {
    testkit::txtar(text).into_iter().collect()
}
