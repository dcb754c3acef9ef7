//! Between the front end's byte offsets and the protocol's positions (lines and UTF-16
//! columns), and between file URIs and paths.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use lsp_types::{Position, Range, Uri};

/// The line starts of a text, for converting offsets and positions.
pub struct Lines<'t> {
    text: &'t str,
    starts: Vec<usize>,
}

impl<'t> Lines<'t> {
    pub fn new(text: &'t str) -> Lines<'t> {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
        Lines { text, starts }
    }

    /// The position of a byte offset (clamped to the text, and back to a char boundary).
    pub fn position(&self, offset: u32) -> Position {
        let mut offset = (offset as usize).min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let col = self.text[self.starts[line]..offset].encode_utf16().count();
        Position { line: line as u32, character: col as u32 }
    }

    pub fn range(&self, start: u32, end: u32) -> Range {
        Range { start: self.position(start), end: self.position(end) }
    }

    /// The byte offset of a position; past a line's end is its end, past the last line the
    /// end of the text.
    pub fn offset(&self, pos: Position) -> u32 {
        let Some(&start) = self.starts.get(pos.line as usize) else { return self.text.len() as u32 };
        let end = self.starts.get(pos.line as usize + 1).map_or(self.text.len(), |e| e - 1);
        let mut units = 0;
        for (i, c) in self.text[start..end].char_indices() {
            if units >= pos.character as usize {
                return (start + i) as u32;
            }
            units += c.len_utf16();
        }
        end as u32
    }
}

/// The path of a `file:` URI.
pub fn path_of(uri: &Uri) -> Option<PathBuf> {
    let rest = uri.as_str().strip_prefix("file://")?;
    // `file://host/path` is not a local file; `file:///path` has an empty host.
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    path.starts_with('/').then(|| PathBuf::from(decode(path)))
}

/// The `file:` URI of an absolute path.
pub fn uri_of(path: &Path) -> Option<Uri> {
    let mut out = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    Uri::from_str(&out).ok()
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).and_then(|b| hex(*b)), bytes.get(i + 2).and_then(|b| hex(*b))) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_utf16_units_and_round_trip() {
        let text = "a\n$é = \"😀x\"\nlast";
        let lines = Lines::new(text);
        let x = text.find('x').unwrap() as u32;
        assert_eq!(lines.position(x), Position { line: 1, character: 8 });
        assert_eq!(lines.offset(Position { line: 1, character: 8 }), x);
        assert_eq!(lines.offset(Position { line: 1, character: 99 }), text.find("\nlast").unwrap() as u32);
        assert_eq!(lines.offset(Position { line: 9, character: 0 }), text.len() as u32);
        assert_eq!(lines.position(text.len() as u32), Position { line: 2, character: 4 });
    }

    #[test]
    fn file_uris_and_paths() {
        let uri = uri_of(Path::new("/tmp/my dir/main.mcl")).unwrap();
        assert_eq!(uri.as_str(), "file:///tmp/my%20dir/main.mcl");
        assert_eq!(path_of(&uri), Some(PathBuf::from("/tmp/my dir/main.mcl")));
    }
}
