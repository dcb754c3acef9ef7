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
    /// Why [`Loader::read`] gave nothing for a file that exists (it is not UTF-8 text, it
    /// starts with a byte order mark), when the loader can tell.
    fn why_unreadable(&self, _path: &str) -> Option<String> {
        None
    }
    /// The names of the directories directly inside `dir`, for did-you-mean on a
    /// misspelt module directory (a loader that cannot list gives none).
    fn subdirs(&self, _dir: &str) -> Vec<String> {
        Vec::new()
    }
    /// How a message names the file at `path` for people: its real path relative to the
    /// working directory where the loader knows it, else the deploy path itself.
    fn shown(&self, path: &str) -> String {
        path.to_string()
    }
    /// The deploy path (ending `/`) of the module path searched last for imports by URL
    /// (`--module-path`); `None` when there is none.
    fn module_path(&self) -> Option<String> {
        None
    }
    /// Fetches the module at `url` (at `reference`, else its default branch) into the
    /// deploy directory `dir`, complete or not at all, when the command asked for downloads
    /// (`--download`); `None` when it did not.
    fn download(&self, _url: &str, _reference: Option<&str>, _dir: &str) -> Option<Result<(), String>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::text_problem;

    #[test]
    fn text_problems_name_the_byte_and_where() {
        assert_eq!(text_problem(b"$x = 1\n"), None);
        assert_eq!(text_problem("$é = \"ü\"".as_bytes()), None);
        let bad = text_problem(b"$x = 1\n$y = \"\xff\"\n").unwrap();
        assert_eq!(bad, "it is not UTF-8 text: byte 0xFF at offset 13 (line 2) is not valid UTF-8");
        assert!(text_problem(b"\xef\xbb\xbf$x = 1\n").unwrap().contains("byte order mark"));
    }
}

/// What is wrong with `bytes` as the text of an mcl file: not UTF-8 (the first bad byte,
/// its offset and line), or a leading byte order mark; `None` when it is fine.
pub fn text_problem(bytes: &[u8]) -> Option<String> {
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return Some(
            "it starts with a UTF-8 byte order mark (bytes EF BB BF at offset 0); save it as UTF-8 without a BOM"
                .into(),
        );
    }
    let e = std::str::from_utf8(bytes).err()?;
    let at = e.valid_up_to();
    let line = bytes[..at].iter().filter(|b| **b == b'\n').count() + 1;
    Some(format!("it is not UTF-8 text: byte 0x{:02X} at offset {at} (line {line}) is not valid UTF-8", bytes[at]))
}

/// An in-memory deploy tree, for tests and for `tend check -` style input.
#[derive(Clone, Debug, Default)]
pub struct MemLoader {
    pub files: BTreeMap<String, String>,
    /// What [`Loader::module_path`] gives.
    pub module_path: Option<String>,
}

impl MemLoader {
    pub fn new() -> MemLoader {
        MemLoader::default()
    }
    pub fn with(mut self, path: &str, text: &str) -> MemLoader {
        self.files.insert(path.to_string(), text.to_string());
        self
    }
    /// The deploy directory (ending `/`) searched last for imports by URL.
    pub fn with_module_path(mut self, dir: &str) -> MemLoader {
        self.module_path = Some(dir.to_string());
        self
    }
}

impl Loader for MemLoader {
    fn read(&self, path: &str) -> Option<String> {
        self.files.get(path).cloned()
    }
    fn module_path(&self) -> Option<String> {
        self.module_path.clone()
    }
    fn is_dir(&self, path: &str) -> bool {
        let prefix = if path.ends_with('/') { path.to_string() } else { format!("{path}/") };
        self.files.keys().any(|k| k.starts_with(&prefix))
    }
    fn subdirs(&self, dir: &str) -> Vec<String> {
        let prefix = if dir.ends_with('/') { dir.to_string() } else { format!("{dir}/") };
        let mut names: Vec<String> = self
            .files
            .keys()
            .filter_map(|k| k.strip_prefix(&prefix)?.split_once('/').map(|(name, _)| name.to_string()))
            .collect();
        names.dedup();
        names
    }
}
