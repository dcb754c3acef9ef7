//! A program as one deploy bundle, and back: which files a deploy carries
//! ([`of_program`]) and where an agent puts a deploy it runs ([`materialize`]).
//!
//! A program given as a directory carries its whole tree (the entry, every module and
//! imported file, the `files/` its `deploy.*` calls read), without hidden entries
//! (`.git`, editor files) or symlinks. A program given as one `.mcl` file carries the files
//! the compiler read plus its directory's `files/`. Limits keep a bundle within what etcd
//! stores: one file at most [`MAX_FILE`] bytes, the whole at most [`MAX_TOTAL`].

use crate::loader::ProgramPath;
use engine::world::Bundle;
use lang::span::SourceMap;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// etcd refuses requests over 1.5 MiB by default.
pub const MAX_FILE: usize = 1024 * 1024;
pub const MAX_TOTAL: usize = 64 * 1024 * 1024;

/// The bundle of `program` (located from `given`, compiled into `sources`).
pub fn of_program(given: &Path, program: &ProgramPath, sources: &SourceMap) -> Result<Bundle, String> {
    let mut files = BTreeMap::new();
    if given.is_dir() {
        walk(&program.root, "", &mut files)?;
    } else {
        for (_, file) in sources.files() {
            let path = program.root.join(file.name.trim_start_matches('/'));
            add(&path, file.name.clone(), &mut files)?;
        }
        let data = program.root.join("files");
        if data.is_dir() {
            walk(&data, "/files", &mut files)?;
        }
    }
    let total: usize = files.values().map(Vec::len).sum();
    if total > MAX_TOTAL {
        return Err(format!("the program's files hold {total} bytes; a deploy holds at most {MAX_TOTAL}"));
    }
    Ok(Bundle { entry: program.entry.clone(), files })
}

fn walk(dir: &Path, prefix: &str, files: &mut BTreeMap<String, Vec<u8>>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot list `{}`: {e}", dir.display()))?;
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let Ok(kind) = e.file_type() else { continue };
        let deploy_path = format!("{prefix}/{name}");
        if kind.is_dir() {
            walk(&e.path(), &deploy_path, files)?;
        } else if kind.is_file() {
            add(&e.path(), deploy_path, files)?;
        }
    }
    Ok(())
}

fn add(path: &Path, deploy_path: String, files: &mut BTreeMap<String, Vec<u8>>) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    if bytes.len() > MAX_FILE {
        return Err(format!(
            "`{}` holds {} bytes; a deployed file holds at most {MAX_FILE} (etcd's limit on one value)",
            path.display(),
            bytes.len()
        ));
    }
    files.insert(deploy_path, bytes);
    Ok(())
}

/// Writes deploy `id`'s files under `<dir>/<id>/` (complete or not at all: they are
/// written beside it and renamed into place) and returns the program there.
pub fn materialize(dir: &Path, id: u64, bundle: &Bundle) -> Result<ProgramPath, String> {
    let root = dir.join(id.to_string());
    if !root.is_dir() {
        let partial = dir.join(format!(".{id}.partial"));
        let _ = std::fs::remove_dir_all(&partial);
        for (path, bytes) in &bundle.files {
            let rel =
                safe_relative(path).ok_or_else(|| format!("deploy {id} holds a file outside its root: `{path}`"))?;
            let file = partial.join(rel);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent).map_err(|e| format!("cannot create `{}`: {e}", parent.display()))?;
            }
            std::fs::write(&file, bytes).map_err(|e| format!("cannot write `{}`: {e}", file.display()))?;
        }
        std::fs::create_dir_all(&partial).map_err(|e| format!("cannot create `{}`: {e}", partial.display()))?;
        std::fs::rename(&partial, &root).map_err(|e| format!("cannot place deploy {id}: {e}"))?;
    }
    Ok(ProgramPath { root, entry: bundle.entry.clone() })
}

/// Removes the deploys under `dir` other than the `keep` newest and `spare` (the one running).
pub fn prune(dir: &Path, keep: usize, spare: Option<u64>) {
    let mut ids: Vec<u64> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    ids.sort_unstable();
    for id in ids.iter().rev().skip(keep).filter(|id| Some(**id) != spare) {
        let _ = std::fs::remove_dir_all(dir.join(id.to_string()));
        let _ = std::fs::remove_file(dir.join(format!("{id}.entry")));
    }
}

/// A deploy path (`/a/b.mcl`) as a relative path, `None` if it climbs out.
fn safe_relative(path: &str) -> Option<PathBuf> {
    let rel = Path::new(path.trim_start_matches('/'));
    let normal = rel.components().all(|c| matches!(c, std::path::Component::Normal(_)));
    (normal && !rel.as_os_str().is_empty()).then(|| rel.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_program_round_trips_without_hidden_files() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir_all(src.join("mod/files")).unwrap();
        std::fs::create_dir_all(src.join(".git")).unwrap();
        std::fs::write(src.join("main.mcl"), "import \"mod/\"\n").unwrap();
        std::fs::write(src.join("mod/files/data.txt"), "data").unwrap();
        std::fs::write(src.join(".git/HEAD"), "x").unwrap();
        let program = crate::loader::locate(&src).unwrap();
        let bundle = of_program(&src, &program, &SourceMap::new()).unwrap();
        assert_eq!(bundle.files.keys().collect::<Vec<_>>(), ["/main.mcl", "/mod/files/data.txt"]);
        let placed = materialize(&dir.path().join("deploys"), 7, &bundle).unwrap();
        assert_eq!(placed.entry, "/main.mcl");
        assert_eq!(std::fs::read_to_string(placed.root.join("mod/files/data.txt")).unwrap(), "data");
        let mut evil = bundle.clone();
        evil.files.insert("/../x".into(), vec![]);
        assert!(materialize(&dir.path().join("deploys"), 8, &evil).unwrap_err().contains("outside its root"));
        std::fs::create_dir_all(dir.path().join("deploys/9")).unwrap();
        prune(&dir.path().join("deploys"), 1, None);
        assert!(!dir.path().join("deploys/7").exists() && dir.path().join("deploys/9").exists());
        // The deploy running is spared, however old.
        std::fs::create_dir_all(dir.path().join("deploys/10")).unwrap();
        std::fs::create_dir_all(dir.path().join("deploys/11")).unwrap();
        prune(&dir.path().join("deploys"), 1, Some(9));
        let kept = |id: u32| dir.path().join(format!("deploys/{id}")).exists();
        assert!(kept(9) && !kept(10) && kept(11));
    }
}
