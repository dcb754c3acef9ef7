//! What the workspace's tests share (a dev-dependency of every crate, never a dependency):
//! the one txtar reader, where mgmt's conformance corpus lives, and a corpus folder's
//! archives. The corpus is test data outside the repository (`../shared/conformance`
//! next to the workspace); tests that need it skip with a message when it is absent.

use std::path::{Path, PathBuf};

/// The sections of a txtar archive, in order: `-- NAME --` starts one (the name trimmed),
/// every following line up to the next header is its body, lines before the first header
/// are the archive's comment and are dropped.
pub fn txtar(text: &str) -> Vec<(String, String)> {
    let mut sections: Vec<(String, String)> = Vec::new();
    for line in text.split_inclusive('\n') {
        let header = line.trim_end().strip_prefix("-- ").and_then(|rest| rest.strip_suffix(" --"));
        match header {
            Some(name) if !name.trim().is_empty() => sections.push((name.trim().to_string(), String::new())),
            _ => {
                if let Some((_, body)) = sections.last_mut() {
                    body.push_str(line);
                }
            }
        }
    }
    sections
}

/// The section called `name` (the last one, if the archive repeats it).
pub fn section<'a>(sections: &'a [(String, String)], name: &str) -> Option<&'a str> {
    sections.iter().rev().find(|(n, _)| n == name).map(|(_, body)| body.as_str())
}

/// The entry file of a txtar program, as a path from its root: `/main.mcl`, or the file a
/// `metadata.yaml` section names (`main: "x.mcl"`).
pub fn entry(sections: &[(String, String)]) -> String {
    // Parsed as YAML, as the front end does: a line scan would read a trailing
    // `# comment` into the name.
    let main = section(sections, "metadata.yaml")
        .and_then(|meta| serde_saphyr::from_str::<std::collections::BTreeMap<String, serde_json::Value>>(meta).ok())
        .and_then(|doc| doc.get("main").and_then(|m| m.as_str()).filter(|m| !m.is_empty()).map(str::to_string));
    format!("/{}", main.as_deref().unwrap_or("main.mcl").trim_start_matches('/'))
}

/// `../shared` next to the workspace (`TEND_SHARED_DIR` overrides it, for worktrees that
/// live elsewhere), if it is there.
pub fn shared_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("TEND_SHARED_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
    };
    dir.is_dir().then_some(dir)
}

/// `../shared/conformance/SUB`, or `None` after saying on stdout that the test is skipped
/// because the corpus is absent (a user's fresh clone has none).
#[allow(clippy::print_stdout)] // the skip message is for the test's output
pub fn conformance(sub: &str) -> Option<PathBuf> {
    let dir = shared_dir().map(|s| s.join("conformance").join(sub)).filter(|d| d.is_dir());
    if dir.is_none() {
        println!("skipping: mgmt's conformance corpus (../shared/conformance/{sub}) is not present");
    }
    dir
}

/// The `.txtar` archives directly in `dir`, sorted by name.
pub fn archives(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    out.retain(|p| p.extension().is_some_and(|e| e == "txtar"));
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_sections_in_order() {
        let text = "comment\n-- main.mcl --\n$x = 1\n\n-- OUTPUT --  \n# err: errUnify: x\n-- a/b.mcl --\n";
        let s = txtar(text);
        assert_eq!(
            s,
            vec![
                ("main.mcl".to_string(), "$x = 1\n\n".to_string()),
                ("OUTPUT".to_string(), "# err: errUnify: x\n".to_string()),
                ("a/b.mcl".to_string(), String::new()),
            ]
        );
        assert_eq!(section(&s, "OUTPUT"), Some("# err: errUnify: x\n"));
        assert_eq!(section(&s, "nope"), None);
        assert!(txtar("-- --\nx\n").is_empty(), "an empty name is not a header");
    }
}

pub mod bus;
pub mod daemon;
pub mod etcd;
pub mod fwupd;
pub mod lsp;
pub mod packagekit;
pub mod programs;
