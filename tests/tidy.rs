//! Checks that keep the house in order, over the source tree as text: every Rust file says
//! what it is for on its first line (`//!`), product code starts processes only through the
//! two command wrappers, and each crate depends only on the layers below it.

use std::path::{Path, PathBuf};

/// The workspace's root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, but build output and hidden directories.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        if path.is_dir() {
            rust_files(&path, out);
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

#[test]
fn every_rust_file_opens_with_what_it_is_for() {
    let mut files = Vec::new();
    rust_files(&root(), &mut files);
    assert!(files.len() > 100, "the walk found the tree ({} files)", files.len());
    let bare: Vec<String> = files
        .iter()
        .filter(|f| !std::fs::read_to_string(f).is_ok_and(|text| text.starts_with("//!")))
        .map(|f| relative(f))
        .collect();
    assert!(bare.is_empty(), "files without a `//!` first line: {bare:?}");
}

/// The files allowed to start a process in product code: the resources' wrapper (process
/// groups, signals, timeouts), the functions' one, and the world's supervisor of an etcd
/// member (a long-lived child bound to tend's life by the parent-death signal).
const WRAPPERS: &[&str] =
    &["resources/src/util/command.rs", "funcs/src/command.rs", "world/src/etcd/member/process.rs"];

/// What starts a process.
const SPAWNS: &[&str] = &["Command::new(", "process::Command", "posix_spawn", "fork("];

#[test]
fn product_code_starts_processes_only_through_the_wrappers() {
    let mut files = Vec::new();
    for krate in ["src", "world/src", "lang/src", "funcs/src", "engine/src", "resources/src"] {
        rust_files(&root().join(krate), &mut files);
    }
    let mut found = Vec::new();
    for file in &files {
        let name = relative(file);
        if WRAPPERS.contains(&name.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        // A file's unit tests (from its `#[cfg(test)]` module on) may start what they like.
        let product = text.split("#[cfg(test)]").next().unwrap_or("");
        for (n, line) in product.lines().enumerate() {
            if !line.trim_start().starts_with("//") && SPAWNS.iter().any(|s| line.contains(s)) {
                found.push(format!("{name}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "processes started outside {WRAPPERS:?}:\n{}", found.join("\n"));
}

/// The workspace's crates, each with the crates it may depend on (its layers below). `world`
/// and `lang` stand alone, the engine knows neither (no world, no language), `funcs` sees
/// the language and the world, `resources` the engine, the language and the world; the
/// binary glues them all. `testkit` is for tests only and depends on none.
const LAYERS: &[(&str, &[&str])] = &[
    ("world", &[]),
    ("lang", &[]),
    ("engine", &[]),
    ("testkit", &[]),
    ("funcs", &["lang", "world"]),
    ("resources", &["engine", "lang", "world"]),
    (".", &["world", "lang", "funcs", "engine", "resources"]),
];

/// The workspace crates named in the `[dependencies]` section of `manifest`.
fn workspace_dependencies(manifest: &str) -> Vec<String> {
    let crates: Vec<&str> = LAYERS.iter().map(|(c, _)| *c).filter(|c| *c != ".").collect();
    let mut in_deps = false;
    let mut found = Vec::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        let name = line.split(['.', '=', ' ']).next().unwrap_or("");
        if in_deps && crates.contains(&name) {
            found.push(name.to_string());
        }
    }
    found
}

#[test]
fn each_crate_depends_only_on_the_layers_below_it() {
    let mut wrong = Vec::new();
    for (krate, allowed) in LAYERS {
        let manifest = std::fs::read_to_string(root().join(krate).join("Cargo.toml")).unwrap();
        for dep in workspace_dependencies(&manifest) {
            if !allowed.contains(&dep.as_str()) {
                wrong.push(format!("{krate} depends on {dep}"));
            }
        }
    }
    assert!(wrong.is_empty(), "dependencies against the layers: {wrong:?}");
}

#[test]
fn the_manifest_reader_sees_workspace_dependencies_only_in_their_section() {
    let manifest = "[package]\nname = \"x\"\n[dependencies]\nlang.workspace = true\nworld = { workspace = true }\n\
                    tokio.workspace = true\n[dev-dependencies]\nengine.workspace = true\n";
    assert_eq!(workspace_dependencies(manifest), ["lang", "world"]);
}
