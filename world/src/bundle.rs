//! Deploys: a program as one [`Bundle`] of files and the records the world keeps of it
//! ([`Deploy`], [`Parent`]); which files a bundle carries ([`of_tree`], [`of_files`]) and
//! where an agent puts a deploy it runs ([`materialize`], [`prune`]).
//!
//! A program given as a directory carries its whole tree (the entry, every module and
//! imported file, the `files/` its `deploy.*` calls read), without hidden entries
//! (`.git`, editor files) or symlinks. A program given as one `.mcl` file carries the files
//! the compiler read plus its directory's `files/`. Limits keep a bundle within what etcd
//! stores: one file at most [`MAX_FILE`] bytes, the whole at most [`MAX_TOTAL`].
//!
//! Modules from outside the program's directory (the module path) are added with
//! [`add_tree`], each whole, under the deploy path the compiler read them at.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A program to deploy: its files by deploy path (`/main.mcl`) and its entry file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bundle {
    pub entry: String,
    pub files: BTreeMap<String, Vec<u8>>,
}

/// How a deploy is placed after the ones before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parent {
    /// After whatever is latest when it lands (concurrent deploys both land, in turn).
    Latest,
    /// Only right after deploy `n` (0: the first): refused when another landed meanwhile.
    Exactly(u64),
}

/// A deploy as stored: its id, the id it followed, who made it, and its program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deploy {
    pub id: u64,
    pub parent: u64,
    /// The host name of the agent or command that deployed it.
    pub by: String,
    pub bundle: Bundle,
    /// Who signed it (`tend deploy --sign`), as stored: checked by agents that trust keys.
    pub signature: Option<crate::signing::Signature>,
}

/// etcd refuses requests over 1.5 MiB by default.
pub const MAX_FILE: usize = 1024 * 1024;
pub const MAX_TOTAL: usize = 64 * 1024 * 1024;

/// The bundle of the program at directory `root` with entry `entry` (`/main.mcl`): the
/// whole tree.
pub fn of_tree(root: &Path, entry: &str) -> Result<Bundle, String> {
    let mut files = BTreeMap::new();
    walk(root, "", &mut files)?;
    whole(entry, files)
}

/// The bundle of the program in `root` with entry `entry` that the compiler read from the
/// deploy paths `read` (`/main.mcl`, `/lib/x.mcl`): those files and `root`'s `files/`.
pub fn of_files<'a>(root: &Path, entry: &str, read: impl IntoIterator<Item = &'a str>) -> Result<Bundle, String> {
    let mut files = BTreeMap::new();
    for name in read {
        add(&root.join(name.trim_start_matches('/')), name.to_string(), &mut files)?;
    }
    let data = root.join("files");
    if data.is_dir() {
        walk(&data, "/files", &mut files)?;
    }
    whole(entry, files)
}

/// Adds the tree at `dir` (without hidden entries: a module's `.git`) to `bundle` under
/// deploy path `prefix` (`/.modules/example.com/web`).
pub fn add_tree(bundle: Bundle, dir: &Path, prefix: &str) -> Result<Bundle, String> {
    let mut files = bundle.files;
    walk(dir, prefix.trim_end_matches('/'), &mut files)?;
    whole(&bundle.entry, files)
}

fn whole(entry: &str, files: BTreeMap<String, Vec<u8>>) -> Result<Bundle, String> {
    let total: usize = files.values().map(Vec::len).sum();
    if total > MAX_TOTAL {
        return Err(format!("the program's files hold {total} bytes; a deploy holds at most {MAX_TOTAL}"));
    }
    Ok(Bundle { entry: entry.to_string(), files })
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
/// written beside it and renamed into place) and returns that directory, the program's
/// root (its entry is the bundle's).
pub fn materialize(dir: &Path, id: u64, bundle: &Bundle) -> Result<PathBuf, String> {
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
    Ok(root)
}

/// Removes the deploys under `dir` other than the `keep` newest and `spare` (the one running),
/// with the files recorded beside each (`<id>.entry`, `<id>.trusted`, …).
pub fn prune(dir: &Path, keep: usize, spare: Option<u64>) {
    let names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    let mut ids: Vec<u64> = names.iter().filter_map(|n| n.parse().ok()).collect();
    ids.sort_unstable();
    for id in ids.iter().rev().skip(keep).filter(|id| Some(**id) != spare) {
        let _ = std::fs::remove_dir_all(dir.join(id.to_string()));
        let beside = format!("{id}.");
        for name in names.iter().filter(|n| n.starts_with(&beside)) {
            let _ = std::fs::remove_file(dir.join(name));
        }
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
        let bundle = of_tree(&src, "/main.mcl").unwrap();
        assert_eq!(bundle.files.keys().collect::<Vec<_>>(), ["/main.mcl", "/mod/files/data.txt"]);
        let placed = materialize(&dir.path().join("deploys"), 7, &bundle).unwrap();
        assert_eq!(bundle.entry, "/main.mcl");
        assert_eq!(std::fs::read_to_string(placed.join("mod/files/data.txt")).unwrap(), "data");
        let mut evil = bundle.clone();
        evil.files.insert("/../x".into(), vec![]);
        assert!(materialize(&dir.path().join("deploys"), 8, &evil).unwrap_err().contains("outside its root"));
        std::fs::create_dir_all(dir.path().join("deploys/9")).unwrap();
        for beside in ["7.entry", "7.trusted", "9.entry", "70.entry"] {
            std::fs::write(dir.path().join("deploys").join(beside), "x").unwrap();
        }
        prune(&dir.path().join("deploys"), 1, None);
        assert!(!dir.path().join("deploys/7").exists() && dir.path().join("deploys/9").exists());
        let left = |name: &str| dir.path().join("deploys").join(name).exists();
        assert!(!left("7.entry") && !left("7.trusted"), "what was recorded beside deploy 7 goes with it");
        assert!(left("9.entry") && left("70.entry"), "and nothing else");
        // The deploy running is spared, however old.
        std::fs::create_dir_all(dir.path().join("deploys/10")).unwrap();
        std::fs::create_dir_all(dir.path().join("deploys/11")).unwrap();
        prune(&dir.path().join("deploys"), 1, Some(9));
        let kept = |id: u32| dir.path().join(format!("deploys/{id}")).exists();
        assert!(kept(9) && !kept(10) && kept(11));
    }

    #[test]
    fn a_one_file_program_carries_what_was_read_and_its_files_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("files")).unwrap();
        std::fs::create_dir_all(dir.path().join("other")).unwrap();
        std::fs::write(dir.path().join("main.mcl"), "x").unwrap();
        std::fs::write(dir.path().join("lib.mcl"), "y").unwrap();
        std::fs::write(dir.path().join("files/a"), "a").unwrap();
        std::fs::write(dir.path().join("other/b"), "b").unwrap();
        let bundle = of_files(dir.path(), "/main.mcl", ["/main.mcl", "/lib.mcl"]).unwrap();
        assert_eq!(bundle.files.keys().collect::<Vec<_>>(), ["/files/a", "/lib.mcl", "/main.mcl"]);
        let missing = of_files(dir.path(), "/main.mcl", ["/gone.mcl"]).unwrap_err();
        assert!(missing.contains("cannot read") && missing.contains("gone.mcl"), "{missing}");
    }
}
