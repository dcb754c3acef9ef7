//! Source files and byte spans: the only way positions travel through the pipeline.

use std::fmt;

/// Index of a file in a [`SourceMap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FileId(pub u32);

/// A half-open byte range `start..end` in one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(file: FileId, start: usize, end: usize) -> Span {
        Span { file, start: start as u32, end: end as u32 }
    }

    /// The smallest span covering both (they must be in the same file).
    pub fn to(self, other: Span) -> Span {
        Span { file: self.file, start: self.start.min(other.start), end: self.end.max(other.end) }
    }

    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// One loaded source file.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// The path shown to users, relative to the program root and starting with `/`
    /// (`/main.mcl`, `/mod1/main.mcl`), as mgmt prints it.
    pub name: String,
    /// The real path on disk, when the file came from disk.
    pub real_path: Option<std::path::PathBuf>,
    /// How people are shown the file: its real path relative to their working directory
    /// (terminals and editors jump to it), set by the binary; `name` when unset.
    pub shown: Option<String>,
    pub text: String,
    line_starts: Vec<u32>,
}

/// A 1-based line and column (columns count characters; a tab is one column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineCol {
    pub line: u32,
    pub col: u32,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> SourceFile {
        let text = text.into();
        // Counted first, so the table is made once at its size (a program of 100,000
        // resources has half a million lines).
        let lines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
        let mut line_starts = Vec::with_capacity(lines + 1);
        line_starts.push(0);
        line_starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i as u32 + 1));
        SourceFile { name: name.into(), real_path: None, shown: None, text, line_starts }
    }

    /// The name diagnostics show people: [`SourceFile::shown`], else the deploy name.
    pub fn shown_name(&self) -> &str {
        self.shown.as_deref().unwrap_or(&self.name)
    }

    /// Line and column of a byte offset.
    pub fn line_col(&self, offset: u32) -> LineCol {
        let offset = offset.min(self.text.len() as u32);
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line] as usize;
        let mut end = offset as usize;
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let col = self.text[start..end].chars().count() as u32 + 1;
        LineCol { line: line as u32 + 1, col }
    }

    /// The 0-based index of the line holding byte `offset`, and that line's byte range
    /// (without its newline).
    pub fn line_of(&self, offset: u32) -> (usize, std::ops::Range<usize>) {
        let offset = offset.min(self.text.len() as u32);
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line] as usize;
        let end = self.line_starts.get(line + 1).map_or(self.text.len(), |n| (*n as usize).saturating_sub(1));
        (line, start..end.max(start))
    }
}

/// Every file of one program (entry file, imports, modules).
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    /// No file: the map was let go of (see `tend run`) or nothing was loaded.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    pub fn add(&mut self, file: SourceFile) -> FileId {
        self.files.push(file);
        FileId(self.files.len() as u32 - 1)
    }

    pub fn get(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    pub fn files(&self) -> impl Iterator<Item = (FileId, &SourceFile)> {
        self.files.iter().enumerate().map(|(i, f)| (FileId(i as u32), f))
    }

    /// Every file, to set where it lives on disk ([`SourceFile::real_path`], `shown`).
    pub fn files_mut(&mut self) -> impl Iterator<Item = &mut SourceFile> {
        self.files.iter_mut()
    }

    /// The text a span covers.
    pub fn snippet(&self, span: Span) -> &str {
        let text = &self.get(span.file).text;
        text.get(span.range()).unwrap_or("")
    }

    /// mgmt's position format: `/main.mcl @ 4:7-4:22` (1-based, end column exclusive).
    pub fn byline(&self, span: Span) -> Byline<'_> {
        Byline { map: self, span }
    }
}

/// Display adapter for [`SourceMap::byline`].
pub struct Byline<'a> {
    map: &'a SourceMap,
    span: Span,
}

impl fmt::Display for Byline<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.map.get(self.span.file);
        let a = file.line_col(self.span.start);
        let b = file.line_col(self.span.end);
        write!(f, "{} @ {}:{}-{}:{}", file.name, a.line, a.col, b.line, b.col)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byline_is_one_based_and_end_exclusive() {
        let mut map = SourceMap::new();
        let id = map.add(SourceFile::new("/main.mcl", "$x = 1\n\ttest \"a\" {}\n"));
        let span = Span::new(id, 8, 12);
        assert_eq!(map.snippet(span), "test");
        assert_eq!(map.byline(span).to_string(), "/main.mcl @ 2:2-2:6");
    }
}
