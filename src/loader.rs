//! Locating a program on disk and reading its files for the front end.

use lang::loader::Loader;
use std::path::{Component, Path, PathBuf};

/// A program on disk: its root directory (the deploy's `/`) and entry file.
#[derive(Clone, Debug)]
pub struct ProgramPath {
    pub root: PathBuf,
    /// Deploy path of the entry file, e.g. `/main.mcl`.
    pub entry: String,
}

/// Finds the program for `PATH` as given on the command line: a `.mcl` file, or a
/// directory holding `metadata.yaml` (its `main` field) or `main.mcl`.
pub fn locate(path: &Path) -> Result<ProgramPath, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot open `{}`: {e}", path.display()))?;
    if meta.is_file() {
        let root = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
        let name = path.file_name().ok_or_else(|| format!("`{}` is not a file name", path.display()))?;
        return Ok(ProgramPath { root, entry: format!("/{}", name.to_string_lossy()) });
    }
    let root = path.to_path_buf();
    let main = match std::fs::read_to_string(root.join("metadata.yaml")) {
        Ok(text) => metadata_main(&text).unwrap_or_else(|| "main.mcl".to_string()),
        Err(_) => "main.mcl".to_string(),
    };
    if !root.join(&main).is_file() {
        return Err(format!("`{}` holds no `{main}` (give a .mcl file or a directory with main.mcl)", path.display()));
    }
    Ok(ProgramPath { root, entry: format!("/{}", main.trim_start_matches('/')) })
}

/// The `main:` field of a metadata.yaml, read with a line scan (the full schema is parsed
/// by the front end for modules).
fn metadata_main(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix("main:")?;
        let v = rest.trim().trim_matches('"').trim_matches('\'');
        (!v.is_empty()).then(|| v.to_string())
    })
}

/// Reads deploy paths (`/x/y.mcl`) below a root directory; nothing outside it.
pub struct FsLoader {
    root: PathBuf,
}

impl FsLoader {
    pub fn new(root: impl Into<PathBuf>) -> FsLoader {
        FsLoader { root: root.into() }
    }

    fn resolve(&self, path: &str) -> Option<PathBuf> {
        let rel = Path::new(path.trim_start_matches('/'));
        if rel.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
            return None;
        }
        Some(self.root.join(rel))
    }
}

impl Loader for FsLoader {
    fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.resolve(path)?).ok()
    }
    fn is_dir(&self, path: &str) -> bool {
        self.resolve(path).is_some_and(|p| p.is_dir())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_entry_and_refuses_to_escape_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("main.mcl"), "\n").unwrap();
        let p = locate(dir.path()).unwrap();
        assert_eq!(p.entry, "/main.mcl");
        std::fs::write(dir.path().join("metadata.yaml"), "main: \"other.mcl\"\n").unwrap();
        std::fs::write(dir.path().join("other.mcl"), "\n").unwrap();
        assert_eq!(locate(dir.path()).unwrap().entry, "/other.mcl");
        let l = FsLoader::new(dir.path());
        assert!(l.read("/main.mcl").is_some());
        assert!(l.read("/../etc/passwd").is_none());
    }
}
