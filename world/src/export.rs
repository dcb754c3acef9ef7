//! Exported resources (`Meta:export`, `@@kind`): what a host exports, and how an export is
//! named in a [`crate::Topic::Exports`] view.

use crate::escape::{escape, unescape};

/// One resource this host exports (`Meta:export`, `@@kind`): to the hosts `to` (`*`: every
/// host), as the record the language encoded (opaque here).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Export {
    pub kind: String,
    pub name: String,
    pub to: Vec<String>,
    pub record: String,
}

/// The name of an export in a [`Topic::Exports`] view: `kind/from/name`, each escaped.
pub fn export_entry(kind: &str, from: &str, name: &str) -> String {
    format!("{}/{}/{}", escape(kind), escape(from), escape(name))
}

/// The inverse of [`export_entry`]: (kind, from, name).
pub fn parse_export_entry(entry: &str) -> Option<(String, String, String)> {
    let mut parts = entry.splitn(3, '/');
    let (kind, from, name) = (parts.next()?, parts.next()?, parts.next()?);
    Some((unescape(kind), unescape(from), unescape(name)))
}

/// Whether an export to `to` reaches host `me`.
pub fn reaches(to: &[String], me: &str) -> bool {
    to.iter().any(|t| t == "*" || t == me)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn export_entries_round_trip_with_slashes_in_names() {
        let entry = export_entry("file", "h1", "/etc/motd");
        assert_eq!(entry, "file/h1/%2fetc%2fmotd");
        assert_eq!(parse_export_entry(&entry), Some(("file".into(), "h1".into(), "/etc/motd".into())));
        assert_eq!(parse_export_entry("file/h1"), None);
        assert!(reaches(&hosts(&["*"]), "h2"));
        assert!(reaches(&hosts(&["h1", "h2"]), "h2"));
        assert!(!reaches(&hosts(&["h1"]), "h2"));
    }
}
