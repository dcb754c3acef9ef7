//! How the front end reads imported files without doing IO itself: the app gives it a
//! [`Loader`] (the real filesystem, or an in-memory map in tests).

use std::collections::BTreeMap;

/// Read access to the program's deploy tree. Paths are absolute within the deploy
/// (`/main.mcl`, `/mod1/metadata.yaml`), always with `/` separators.
pub trait Loader {
    /// The file's text, or `None` when it does not exist or is not readable as UTF-8.
    fn read(&self, path: &str) -> Option<String>;
    /// Whether `path` is a directory.
    fn is_dir(&self, path: &str) -> bool;
}

/// An in-memory deploy tree, for tests and for `tend check -` style input.
#[derive(Clone, Debug, Default)]
pub struct MemLoader {
    pub files: BTreeMap<String, String>,
}

impl MemLoader {
    pub fn new() -> MemLoader {
        MemLoader::default()
    }
    pub fn with(mut self, path: &str, text: &str) -> MemLoader {
        self.files.insert(path.to_string(), text.to_string());
        self
    }
}

impl Loader for MemLoader {
    fn read(&self, path: &str) -> Option<String> {
        self.files.get(path).cloned()
    }
    fn is_dir(&self, path: &str) -> bool {
        let prefix = if path.ends_with('/') { path.to_string() } else { format!("{path}/") };
        self.files.keys().any(|k| k.starts_with(&prefix))
    }
}
