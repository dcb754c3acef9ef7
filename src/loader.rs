//! Locating a program on disk and reading its files for the front end.

use crate::modules::{MOUNT, Modules};
use funcs::lease::{Leased, read_leased};
use lang::loader::Loader;
use std::cell::Cell;
use std::path::{Component, Path, PathBuf};

/// A program on disk: its root directory (the deploy's `/`) and entry file.
#[derive(Clone, Debug)]
pub struct ProgramPath {
    pub root: PathBuf,
    /// Deploy path of the entry file, e.g. `/main.mcl`.
    pub entry: String,
    /// Where its imports by URL are found ([`crate::modules::MOUNT`]).
    pub modules: Modules,
}

impl ProgramPath {
    /// A program placed by a deploy: its modules came with it.
    pub fn deployed(root: PathBuf, entry: String) -> ProgramPath {
        ProgramPath { root, entry, modules: Modules::default() }
    }

    /// Where deploy path `path` is on disk: under the module path for
    /// [`crate::modules::MOUNT`], else under the root. `None` for a path that climbs out.
    pub fn real(&self, path: &str) -> Option<PathBuf> {
        let (base, rel) = match (&self.modules.dir, path.strip_prefix(MOUNT)) {
            (Some(dir), Some(rest)) => (dir.as_path(), rest),
            _ => (self.root.as_path(), path.trim_start_matches('/')),
        };
        let rel = Path::new(rel);
        if rel.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
            return None;
        }
        Some(base.join(rel))
    }
}

/// Records where each file of a program read from `root` lives ([`SourceFile::real_path`])
/// and names it for people by that path relative to the working directory (absolute when it
/// is not under it), which terminals and editors open at the line shown.
///
/// [`SourceFile::real_path`]: lang::span::SourceFile::real_path
pub fn name_files(sources: &mut lang::span::SourceMap, program: &ProgramPath) {
    let cwd = std::env::current_dir().ok();
    for file in sources.files_mut() {
        // A module built into tend has no real path: it is named as its import names it.
        if let Some(shown) = lang::embedded::shown(&file.name) {
            file.shown = Some(shown);
            continue;
        }
        let (absolute, shown) = real_and_shown(program, &file.name, cwd.as_deref());
        file.shown = Some(shown);
        file.real_path = Some(absolute);
    }
}

/// The absolute real path of deploy path `name` of `program`, and how people are shown it
/// (relative to `cwd` when under it).
fn real_and_shown(program: &ProgramPath, name: &str, cwd: Option<&Path>) -> (PathBuf, String) {
    let real = program.real(name).unwrap_or_else(|| program.root.join(name.trim_start_matches('/')));
    let absolute = match cwd {
        Some(cwd) if real.is_relative() => cwd.join(&real),
        _ => real,
    };
    let shown = match cwd.and_then(|cwd| absolute.strip_prefix(cwd).ok()) {
        Some(rel) => rel.display().to_string(),
        None => absolute.display().to_string(),
    };
    (absolute, shown)
}

/// Finds the program for `PATH` as given on the command line: a `.mcl` file, or a
/// directory holding `metadata.yaml` (its `main` field) or `main.mcl`.
pub fn locate(path: &Path) -> Result<ProgramPath, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot open `{}`: {e}", path.display()))?;
    if meta.is_file() {
        let root = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
        let name = path.file_name().ok_or_else(|| format!("`{}` is not a file name", path.display()))?;
        let entry = format!("/{}", name.to_string_lossy());
        return Ok(ProgramPath { root, entry, modules: crate::modules::chosen() });
    }
    let root = path.to_path_buf();
    let meta = root.join("metadata.yaml");
    let main = match funcs::lease::read_regular(&meta) {
        Ok(bytes) => {
            let text = String::from_utf8(bytes).map_err(|_| format!("`{}` is not UTF-8 text", meta.display()))?;
            lang::scope::main_of_metadata(&text).map_err(|e| format!("`{}` does not parse: {e}", meta.display()))?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "main.mcl".to_string(),
        Err(e) => return Err(format!("cannot read `{}`: {e}", meta.display())),
    };
    if !root.join(&main).is_file() {
        return Err(format!("`{}` holds no `{main}` (give a .mcl file or a directory with main.mcl)", path.display()));
    }
    let entry = format!("/{}", main.trim_start_matches('/'));
    Ok(ProgramPath { root, entry, modules: crate::modules::chosen() })
}

/// Reads a program's deploy paths (`/x/y.mcl`): below its root directory, and below the
/// module path for [`crate::modules::MOUNT`]; nothing outside them.
pub struct FsLoader {
    program: ProgramPath,
    /// Read each file under a read lease ([`funcs::lease::read_leased`]).
    leases: bool,
    /// A file read under a lease was open for writing: what was read may be half a save.
    busy: Cell<bool>,
}

impl FsLoader {
    /// A loader of the program in directory `root` whose module path is the one the
    /// command line chose.
    pub fn new(root: impl Into<PathBuf>) -> FsLoader {
        let program = ProgramPath { root: root.into(), entry: String::new(), modules: crate::modules::chosen() };
        FsLoader::of(&program)
    }

    /// A loader of `program`, with its module path.
    pub fn of(program: &ProgramPath) -> FsLoader {
        FsLoader { program: program.clone(), leases: false, busy: Cell::new(false) }
    }

    /// A loader for live edits: it reads every file under a read lease, so a save cannot
    /// truncate a file while it is read, and [`FsLoader::busy`] tells when a file was
    /// still open for writing (a save in progress).
    pub fn leased(program: &ProgramPath) -> FsLoader {
        FsLoader { leases: true, ..FsLoader::of(program) }
    }

    /// Whether some file was open for writing when it was read: the reading must be
    /// dropped and done again once that save is complete.
    pub fn busy(&self) -> bool {
        self.busy.get()
    }

    fn resolve(&self, path: &str) -> Option<PathBuf> {
        self.program.real(path)
    }
}

impl Loader for FsLoader {
    fn read(&self, path: &str) -> Option<String> {
        let path = self.resolve(path)?;
        let text = if self.leases {
            let bytes = match read_leased(&path).ok()? {
                Leased::Read(bytes) => bytes,
                Leased::Busy(bytes) => {
                    self.busy.set(true);
                    bytes
                }
            };
            String::from_utf8(bytes).ok()?
        } else {
            String::from_utf8(funcs::lease::read_regular(&path).ok()?).ok()?
        };
        // A byte order mark is refused (see `why_unreadable`), not read as a character.
        (!text.starts_with('\u{feff}')).then_some(text)
    }
    fn why_unreadable(&self, path: &str) -> Option<String> {
        let path = self.resolve(path)?;
        if !path.exists() {
            return None;
        }
        match funcs::lease::read_regular(&path) {
            Ok(bytes) => lang::loader::text_problem(&bytes),
            Err(e) => Some(e.to_string()),
        }
    }
    fn is_dir(&self, path: &str) -> bool {
        self.resolve(path).is_some_and(|p| p.is_dir())
    }
    fn shown(&self, path: &str) -> String {
        if let Some(shown) = lang::embedded::shown(path) {
            return shown;
        }
        real_and_shown(&self.program, path, std::env::current_dir().ok().as_deref()).1
    }
    fn module_path(&self) -> Option<String> {
        Some(MOUNT.to_string())
    }
    fn download(&self, url: &str, reference: Option<&str>, dir: &str) -> Option<Result<(), String>> {
        if !self.program.modules.download {
            return None;
        }
        let Some(dest) = self.resolve(dir.trim_end_matches('/')) else {
            return Some(Err(format!("`{dir}` is not a place to download to")));
        };
        Some(crate::modules::fetch(url, reference, &dest, self.program.modules.timeout))
    }
    fn subdirs(&self, dir: &str) -> Vec<String> {
        let Some(entries) = self.resolve(dir).and_then(|d| std::fs::read_dir(d).ok()) else { return Vec::new() };
        let dirs = entries.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir()));
        dirs.filter_map(|e| e.file_name().into_string().ok()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leased_loader_reads_a_file_open_for_writing_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("main.mcl");
        std::fs::write(&path, "$x = 1\n").unwrap();
        let loader = FsLoader::leased(&ProgramPath::deployed(dir.path().to_path_buf(), "/main.mcl".into()));
        assert_eq!(loader.read("/main.mcl").as_deref(), Some("$x = 1\n"));
        assert!(!loader.busy());
        let _writer = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        assert_eq!(loader.read("/main.mcl").as_deref(), Some("$x = 1\n"));
        assert!(loader.busy(), "a writer has it open");
    }

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
