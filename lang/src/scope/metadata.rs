//! A module's `metadata.yaml` (mgmt's fields): which file is its entry, where it looks for
//! the modules it imports by URL, and where its data files are.

use std::collections::BTreeMap;

/// A module's (or a program directory's) `metadata.yaml`, with mgmt's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metadata {
    /// The entry file, relative to the module's directory (`main.mcl`).
    pub main: String,
    /// Where imports by URL are looked for first, relative to the module's directory and
    /// ending `/` (`path/`); `None` defers to the importing module, then the module path.
    pub path: Option<String>,
    /// The module's data files, relative and ending `/` (`files/`).
    pub files: String,
    /// `parentpathblock: true`: look no further up than this module for `path`s (the
    /// global module path is still searched last).
    pub parent_path_block: bool,
}

impl Default for Metadata {
    fn default() -> Metadata {
        Metadata { main: "main.mcl".into(), path: None, files: "files/".into(), parent_path_block: false }
    }
}

impl Metadata {
    /// Reads `metadata.yaml`'s text: an empty file (or only comments) means every default.
    /// Other keys (`license`, …) are allowed and ignored, as in mgmt.
    pub fn parse(text: &str) -> Result<Metadata, String> {
        let mut meta = Metadata::default();
        if text.lines().all(|l| l.trim().is_empty() || l.trim_start().starts_with('#')) {
            return Ok(meta);
        }
        let doc: BTreeMap<String, serde_json::Value> = serde_saphyr::from_str(text).map_err(|e| e.to_string())?;
        let string = |key: &str| -> Result<Option<String>, String> {
            match doc.get(key) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(serde_json::Value::String(s)) if s.is_empty() => Ok(None),
                Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(format!("field `{key}` must be a relative path, got {other}")),
            }
        };
        if let Some(main) = string("main")? {
            if main.starts_with('/') || main.ends_with('/') {
                return Err(format!("field `main` must be a relative file path, not `{main}`"));
            }
            meta.main = main;
        }
        meta.path = string("path")?.map(|p| relative_dir("path", p)).transpose()?;
        if let Some(files) = string("files")? {
            meta.files = relative_dir("files", files)?;
        }
        // mgmt's spelling, and `parentpathtoken`, the one the issue that asked for it gives.
        for key in ["parentpathblock", "parentpathtoken"] {
            match doc.get(key) {
                None | Some(serde_json::Value::Null) => {}
                Some(serde_json::Value::Bool(b)) => meta.parent_path_block |= *b,
                Some(other) => return Err(format!("field `{key}` must be true or false, got {other}")),
            }
        }
        Ok(meta)
    }
}

/// A directory field: relative and ending `/`, as mgmt requires.
fn relative_dir(key: &str, dir: String) -> Result<String, String> {
    if dir.starts_with('/') || !dir.ends_with('/') {
        return Err(format!("field `{key}` must be a relative directory ending in `/`, not `{dir}`"));
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fields_and_mgmts_rules() {
        assert_eq!(Metadata::parse("").unwrap(), Metadata::default());
        assert_eq!(Metadata::parse("# empty metadata file (use defaults)\n").unwrap(), Metadata::default());
        let m = Metadata::parse(
            "main: \"main/hello.mcl\"\t# not the default\nfiles: \"files/\"\npath: \"path/\"\nlicense: GPL\n",
        )
        .unwrap();
        assert_eq!(m.main, "main/hello.mcl");
        assert_eq!(m.path.as_deref(), Some("path/"));
        assert!(!m.parent_path_block);
        assert!(Metadata::parse("parentpathblock: true\n").unwrap().parent_path_block);
        assert!(Metadata::parse("parentpathtoken: true\n").unwrap().parent_path_block);
        assert!(Metadata::parse("main: /abs.mcl\n").unwrap_err().contains("relative file path"));
        assert!(Metadata::parse("path: mods\n").unwrap_err().contains("ending in `/`"));
        assert!(Metadata::parse("path: /mods/\n").is_err());
        assert!(Metadata::parse("main: [a]\n").is_err());
        assert!(Metadata::parse("parentpathblock: maybe\n").is_err());
    }
}
