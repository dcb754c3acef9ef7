//! A YAML document as a tree whose every node keeps its span in the file, read from
//! granit-parser's events (serde's derive would lose the positions errors need).

use crate::diag::{Code, Diagnostic, Stage};
use crate::span::{FileId, Span};
use granit_parser::{Event, Parser, ScalarStyle, ScanError};
use std::collections::BTreeMap;

/// How many nodes a document may expand to, aliases included: a few anchors that alias
/// each other cannot make a small file take all memory.
const MAX_NODES: usize = 1_000_000;

/// One YAML node and where it is written.
#[derive(Clone, Debug)]
pub(crate) struct Yaml {
    pub(crate) node: Node,
    pub(crate) span: Span,
}

#[derive(Clone, Debug)]
pub(crate) enum Node {
    /// A scalar's text after YAML's escapes; `plain` when written without quotes or a
    /// block indicator, the only form YAML reads as a number, a bool or null.
    Scalar {
        text: String,
        plain: bool,
    },
    Seq(Vec<Yaml>),
    /// Entries in the order written; keys are unique (a repeated key is an error).
    Map(Vec<(Yaml, Yaml)>),
}

impl Yaml {
    /// A plain `~`, `null` or nothing at all: YAML's null.
    pub(crate) fn is_null(&self) -> bool {
        matches!(&self.node, Node::Scalar { text, plain: true } if matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL"))
    }

    /// The scalar's text, `None` for a collection.
    pub(crate) fn scalar(&self) -> Option<&str> {
        match &self.node {
            Node::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }

    /// What the node is, for "expected X, found Y" messages.
    pub(crate) fn what(&self) -> String {
        match &self.node {
            _ if self.is_null() => "nothing".to_string(),
            Node::Scalar { text, plain: true } if text.len() <= 40 => format!("`{text}`"),
            Node::Scalar { .. } => "a string".to_string(),
            Node::Seq(_) => "a list".to_string(),
            Node::Map(_) => "a map".to_string(),
        }
    }
}

/// Reads the file's one document: `Ok(None)` for a file with none (empty, or only
/// comments).
pub(crate) fn parse(file: FileId, text: &str) -> Result<Option<Yaml>, Diagnostic> {
    let mut reader = Reader { file, text, anchors: BTreeMap::new(), nodes: 0 };
    reader.document()
}

/// A collection being read, with where it starts.
enum Open {
    Seq { items: Vec<Yaml>, start: u32, anchor: usize },
    Map { entries: Vec<(Yaml, Yaml)>, key: Option<Yaml>, start: u32, anchor: usize },
}

struct Reader<'t> {
    file: FileId,
    text: &'t str,
    /// Anchored nodes by anchor id, for aliases.
    anchors: BTreeMap<usize, Yaml>,
    nodes: usize,
}

impl Reader<'_> {
    fn document(&mut self) -> Result<Option<Yaml>, Diagnostic> {
        let mut stack: Vec<Open> = Vec::new();
        let mut root: Option<Yaml> = None;
        let mut documents = 0;
        for event in Parser::new_from_str(self.text) {
            let (event, span) = event.map_err(|e| self.scan_error(&e))?;
            let (start, end) = (self.offset(&span.start), self.offset(&span.end));
            let done = match event {
                Event::DocumentStart(..) => {
                    documents += 1;
                    if documents > 1 {
                        return Err(self.error(
                            "a YAML graph is one document: a second one starts here",
                            Span::new(self.file, start as usize, end.max(start + 3) as usize),
                        ));
                    }
                    None
                }
                Event::Scalar(text, style, anchor, _) => {
                    let plain = matches!(style, ScalarStyle::Plain);
                    let node =
                        Yaml { node: Node::Scalar { text: text.into_owned(), plain }, span: self.span(start, end) };
                    self.count(&node)?;
                    self.anchor(anchor, &node);
                    Some(node)
                }
                Event::Alias(id) => {
                    let Some(node) = self.anchors.get(&id).cloned() else {
                        return Err(self.error("an alias to no anchor", self.span(start, end)));
                    };
                    self.nodes += size(&node);
                    if self.nodes > MAX_NODES {
                        return Err(self.too_big(start, end));
                    }
                    Some(node)
                }
                Event::SequenceStart(_, anchor, _) => {
                    stack.push(Open::Seq { items: Vec::new(), start, anchor });
                    None
                }
                Event::MappingStart(_, anchor, _) => {
                    stack.push(Open::Map { entries: Vec::new(), key: None, start, anchor });
                    None
                }
                Event::SequenceEnd | Event::MappingEnd => {
                    let Some(open) = stack.pop() else { continue };
                    let (node, from, anchor) = match open {
                        Open::Seq { items, start, anchor } => (Node::Seq(items), start, anchor),
                        Open::Map { entries, start, anchor, .. } => (Node::Map(entries), start, anchor),
                    };
                    let node = Yaml { node, span: self.span(from, end.max(from)) };
                    self.count(&node)?;
                    self.anchor(anchor, &node);
                    Some(node)
                }
                _ => None,
            };
            let Some(node) = done else { continue };
            match stack.last_mut() {
                Some(Open::Seq { items, .. }) => items.push(node),
                Some(Open::Map { entries, key, .. }) => match key.take() {
                    None => *key = Some(node),
                    Some(k) => {
                        if let Some((first, _)) = entries.iter().find(|(e, _)| same_key(e, &k)) {
                            return Err(self
                                .error(format!("the key {} is given twice in this map", k.what()), k.span)
                                .with_label(first.span, "first given here"));
                        }
                        entries.push((k, node));
                    }
                },
                None => root = Some(node),
            }
        }
        Ok(root)
    }

    fn count(&mut self, node: &Yaml) -> Result<(), Diagnostic> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(self.too_big(node.span.start, node.span.end));
        }
        Ok(())
    }

    fn too_big(&self, start: u32, end: u32) -> Diagnostic {
        self.error(
            format!("the document expands to more than {MAX_NODES} nodes (aliases included)"),
            self.span(start, end),
        )
    }

    fn anchor(&mut self, anchor: usize, node: &Yaml) {
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
    }

    fn offset(&self, marker: &granit_parser::Marker) -> u32 {
        let at = marker.byte_offset().unwrap_or_else(|| {
            // Character index to byte offset (only when the parser gave no byte offset).
            self.text.char_indices().nth(marker.index()).map_or(self.text.len(), |(b, _)| b)
        });
        at.min(self.text.len()) as u32
    }

    fn span(&self, start: u32, end: u32) -> Span {
        Span::new(self.file, start as usize, end.max(start) as usize)
    }

    fn scan_error(&self, e: &ScanError) -> Diagnostic {
        let at = self.offset(e.marker());
        let end = self.text[at as usize..].chars().next().map_or(at, |c| at + c.len_utf8() as u32);
        self.error(format!("this is not valid YAML: {}", e.info()), self.span(at, end))
    }

    fn error(&self, message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic::new(Stage::LexParse, message, span).with_code(Code::Syntax)
    }
}

/// Two keys that YAML counts as the same: equal scalars (collections as keys are compared
/// by nothing, and never are equal).
fn same_key(a: &Yaml, b: &Yaml) -> bool {
    matches!((a.scalar(), b.scalar()), (Some(x), Some(y)) if x == y)
}

/// The number of nodes in `node`, itself included.
fn size(node: &Yaml) -> usize {
    match &node.node {
        Node::Scalar { .. } => 1,
        Node::Seq(items) => 1 + items.iter().map(size).sum::<usize>(),
        Node::Map(entries) => 1 + entries.iter().map(|(k, v)| size(k) + size(v)).sum::<usize>(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> FileId {
        let mut sources = crate::span::SourceMap::new();
        sources.add(crate::span::SourceFile::new("/g.yaml", String::new()))
    }

    #[test]
    fn nodes_keep_their_spans() {
        let text = "graph: g\nresources:\n  file:\n  - name: f1\n    mode: '0644'\n";
        let root = parse(file(), text).unwrap().unwrap();
        let Node::Map(entries) = &root.node else { panic!("a map") };
        assert_eq!(entries[0].0.scalar(), Some("graph"));
        let span = entries[0].1.span;
        assert_eq!(&text[span.start as usize..span.end as usize], "g");
        let Node::Map(kinds) = &entries[1].1.node else { panic!("a map") };
        let Node::Seq(list) = &kinds[0].1.node else { panic!("a list") };
        let Node::Map(fields) = &list[0].node else { panic!("a map") };
        assert!(matches!(&fields[1].1.node, Node::Scalar { text, plain: false } if text == "0644"));
    }

    #[test]
    fn bad_yaml_repeated_keys_and_two_documents_are_errors_with_positions() {
        let e = parse(file(), "graph: [a, b\n").unwrap_err();
        assert!(e.message.starts_with("this is not valid YAML"), "{}", e.message);
        let e = parse(file(), "graph: a\ngraph: b\n").unwrap_err();
        assert!(e.message.contains("given twice"), "{}", e.message);
        assert_eq!(e.span.unwrap().start, 9);
        let e = parse(file(), "---\ngraph: a\n---\ngraph: b\n").unwrap_err();
        assert!(e.message.contains("one document"), "{}", e.message);
        assert!(parse(file(), "# nothing\n").unwrap().is_none());
    }

    #[test]
    fn aliases_expand_but_not_without_bound() {
        let root = parse(file(), "a: &x [1, 2]\nb: *x\n").unwrap().unwrap();
        let Node::Map(entries) = &root.node else { panic!("a map") };
        assert!(matches!(&entries[1].1.node, Node::Seq(items) if items.len() == 2));
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let prev = format!("*a{}", i - 1);
            bomb.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 10].join(", ")));
        }
        let e = parse(file(), &bomb).unwrap_err();
        assert!(e.message.contains("more than"), "{}", e.message);
    }
}
