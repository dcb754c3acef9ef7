//! A one-file program, statement by statement: which statements a live edit changed,
//! found without keeping the program's text, and whether they can be compiled alone.
//!
//! The text is cut into *segments*, each one top-level statement plus the text after it
//! up to the next one; the outline keeps each segment's offset and hash. An edit's changed
//! segments are those whose hash differs, from the front and from the back. When they are
//! all *standalone resources* before and after the edit (a resource statement whose name
//! and values are literals, without body edges, not virtual, in a program without
//! defaults, overrides or collectors, declaring a resource no other statement declares),
//! and each keeps its *identity* (kind, name, metaparams and the params its kind's
//! automatic edges read), then the edit means exactly those resources' new params: the
//! caller compiles [`Edit::Resources`]' snippet alone and patches the running graph,
//! instead of compiling, interpreting and swapping the whole program.

use std::hash::{DefaultHasher, Hash, Hasher};

use crate::catalog::Catalog;
use crate::output::Output;
use crate::span::FileId;
use crate::syntax::ast::{Block, Expr, ExprKind, ResEntryKind, Stmt, StmtKind, Virtuality};

/// See the module's documentation.
#[derive(Clone, Debug, PartialEq)]
pub struct Outline {
    /// The text's length in bytes.
    len: u32,
    segments: Vec<Segment>,
}

/// One top-level statement and the text after it, up to the next statement (the first
/// also holds the text before it).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Segment {
    start: u32,
    hash: u64,
    /// A standalone resource's identity; 0 for any other statement.
    ident: u64,
}

/// What an edit of the program's text means, as far as the outline can tell.
#[derive(Debug, PartialEq)]
pub enum Edit {
    /// The same text.
    Same,
    /// Only standalone resources changed, each keeping its identity: `snippet` holds their
    /// statements alone, at their lines and columns (the lines before them left empty),
    /// and `outline` is the new text's.
    Resources { snippet: String, statements: usize, outline: Outline },
    /// Anything else: the whole program must be compiled.
    Whole,
}

impl Outline {
    /// The outline of a program whose one file is `text`, parsed into `stmts`; `None` when
    /// the program has a statement that can change what another one declares (defaults,
    /// overrides, collectors, `realize`): then no edit is ever compiled alone.
    pub fn of(stmts: &[Stmt], text: &str, catalog: &Catalog) -> Option<Outline> {
        if !stmts.iter().all(independent) {
            return None;
        }
        let mut segments = segments(stmts, text, 0, text.len());
        for (segment, stmt) in segments.iter_mut().zip(stmts) {
            segment.ident = identity(stmt, text, catalog).unwrap_or(0);
        }
        Some(Outline { len: text.len() as u32, segments })
    }

    /// Keeps as standalone only the resources the program's output declares once, from
    /// their own statement: a key also declared elsewhere (a nested or computed name) is
    /// merged there, which compiling the statement alone would miss.
    pub fn confirm(&mut self, output: &Output) {
        // Keys by hash, sorted: a key declared twice is a hash seen twice (two keys sharing a
        // hash only cost them being compiled with the whole program). A map of the keys
        // would weigh several times more at the run's peak.
        let key = |d: &crate::output::ResDecl| hash_of(&(&d.kind, &d.name));
        let mut keys: Vec<u64> = output.resources.iter().map(key).collect();
        keys.sort_unstable();
        let once = |k: u64| {
            let at = keys.partition_point(|&x| x < k);
            keys.get(at + 1) != Some(&k)
        };
        let mut seen = vec![0u32; self.segments.len()];
        let mut alone = vec![true; self.segments.len()];
        for decl in &output.resources {
            // A standalone segment holds one statement, declaring one resource: whatever
            // lands in it comes from that statement.
            let at = self.segments.partition_point(|s| s.start <= decl.span.start).saturating_sub(1);
            seen[at] += 1;
            alone[at] &= once(key(decl));
        }
        for ((segment, alone), seen) in self.segments.iter_mut().zip(alone).zip(seen) {
            if !(alone && seen == 1) {
                segment.ident = 0;
            }
        }
    }

    /// What the program's new text `text` changed (see [`Edit`]).
    pub fn edit(&self, text: &str, catalog: &Catalog) -> Edit {
        let delta = text.len() as i64 - self.len as i64;
        let n = self.segments.len();
        let end = |i: usize| if i + 1 < n { self.segments[i + 1].start as usize } else { self.len as usize };
        let same_at = |i: usize, shift: i64| {
            let (a, b) = (self.segments[i].start as i64 + shift, end(i) as i64 + shift);
            a >= 0
                && b <= text.len() as i64
                && text.get(a as usize..b as usize).is_some_and(|t| hash_of(t) == self.segments[i].hash)
        };
        // The changed segments are first..=last: the rest hash the same, shifted by `delta`
        // after them. The last segment's end is the text's, from the front as from the back.
        if n == 0 {
            // No statement holds the text (empty, or comments only): nothing can tell it
            // is the same, and compiling it whole costs nothing.
            return Edit::Whole;
        }
        let mut first = 0;
        while first < n && (first + 1 < n || delta == 0) && same_at(first, 0) {
            first += 1;
        }
        if first == n {
            return Edit::Same;
        }
        let mut last = n - 1;
        while last > first
            && self.segments[last].start as i64 + delta >= self.segments[first].start as i64
            && same_at(last, delta)
        {
            last -= 1;
        }
        let (from, to) = (self.segments[first].start as usize, (end(last) as i64 + delta) as usize);
        let Some(region) = text.get(from..to) else { return Edit::Whole };
        let (parsed, diags) = crate::syntax::parse(FileId::default(), region);
        if !diags.is_empty() || parsed.stmts.len() != last - first + 1 {
            return Edit::Whole;
        }
        let mut fresh = segments(&parsed.stmts, region, from, to);
        // Between two changes, statements stay as they were: they are left out, and keep
        // what `confirm` found of them.
        let mut changed = Vec::new();
        let ends: Vec<usize> = fresh.iter().skip(1).map(|s| s.start as usize).chain([to]).collect();
        for (((old, new), stmt), end) in self.segments[first..=last].iter().zip(&mut fresh).zip(&parsed.stmts).zip(ends)
        {
            new.ident = old.ident;
            if old.hash == new.hash {
                continue;
            }
            if old.ident == 0 || identity(stmt, region, catalog) != Some(old.ident) {
                return Edit::Whole;
            }
            changed.push(new.start as usize..end);
        }
        let mut segments = Vec::with_capacity(n);
        segments.extend_from_slice(&self.segments[..first]);
        segments.extend(fresh);
        segments
            .extend(self.segments[last + 1..].iter().map(|s| Segment { start: (s.start as i64 + delta) as u32, ..*s }));
        Edit::Resources {
            snippet: snippet(text, &changed),
            statements: changed.len(),
            outline: Outline { len: text.len() as u32, segments },
        }
    }
}

/// The segments of `stmts`, parsed from `text`, which starts at `base` in the file and
/// ends at `end`; their identities are left to the caller.
fn segments(stmts: &[Stmt], text: &str, base: usize, end: usize) -> Vec<Segment> {
    let starts: Vec<usize> =
        stmts.iter().enumerate().map(|(i, s)| if i == 0 { 0 } else { s.span.start as usize }).collect();
    (0..stmts.len())
        .map(|i| {
            let to = starts.get(i + 1).copied().unwrap_or(end - base);
            Segment { start: (base + starts[i]) as u32, hash: hash_of(&text[starts[i]..to]), ident: 0 }
        })
        .collect()
}

/// The ranges `parts` of `text` alone, at their lines and columns: what lies before and
/// between them is blank, its newlines kept.
fn snippet(text: &str, parts: &[std::ops::Range<usize>]) -> String {
    let mut out = String::with_capacity(parts.iter().map(|r| r.len()).sum::<usize>() + parts.len() * 16);
    let mut at = 0;
    for part in parts {
        let gap = &text.as_bytes()[at..part.start];
        let lines = gap.iter().filter(|&&b| b == b'\n').count();
        let column = part.start - gap.iter().rposition(|&b| b == b'\n').map_or(at, |nl| at + nl + 1);
        out.extend(std::iter::repeat_n('\n', lines));
        out.extend(std::iter::repeat_n(' ', column));
        out.push_str(&text[part.clone()]);
        at = part.end;
    }
    out
}

/// Whether a statement, and every statement nested in it, leaves what others declare alone.
fn independent(stmt: &Stmt) -> bool {
    let block = |b: &Block| b.stmts.iter().all(independent);
    match &stmt.kind {
        StmtKind::Defaults { .. } | StmtKind::Override { .. } | StmtKind::Collect(_) | StmtKind::Realize { .. } => {
            false
        }
        StmtKind::Resource(r) => !r.collect,
        StmtKind::Edge { sides, .. } => sides.iter().all(|s| s.collector.is_none()),
        StmtKind::If { then, els, .. } => block(then) && els.as_ref().is_none_or(block),
        StmtKind::For { body, .. } | StmtKind::ForKv { body, .. } | StmtKind::Class { body, .. } => block(body),
        StmtKind::Node { body, .. } => block(body),
        _ => true,
    }
}

/// A standalone resource statement's identity (see the module's documentation); `None`
/// for any other statement.
fn identity(stmt: &Stmt, text: &str, catalog: &Catalog) -> Option<u64> {
    let StmtKind::Resource(r) = &stmt.kind else { return None };
    let decl = catalog.resource(&r.kind.name)?;
    let named = matches!(r.name.kind, ExprKind::RawStr(_)) && literal(&r.name);
    if stmt.private.is_some() || r.collect || r.virtuality != Virtuality::Real || !named {
        return None;
    }
    let mut h = DefaultHasher::new();
    (&r.kind.name, &text[r.name.span.range()]).hash(&mut h);
    for entry in &r.entries {
        match &entry.kind {
            ResEntryKind::Field { name, cond: None, value } if literal(value) => {
                if decl.param(&name.name).is_none_or(|p| p.edges) {
                    (&name.name, &text[value.span.range()]).hash(&mut h);
                }
            }
            // An exported resource's record must be published again: not standalone.
            ResEntryKind::Meta { name: Some(name), cond: None, value } if literal(value) && name.name != "export" => {
                ("Meta", &name.name, &text[value.span.range()]).hash(&mut h);
            }
            _ => return None,
        }
    }
    // 0 stands for "none".
    Some(h.finish().max(1))
}

/// A value written out in full: no variable, call or `${}`.
fn literal(expr: &Expr) -> bool {
    match &expr.kind {
        ExprKind::Bool(_) | ExprKind::Int(_) | ExprKind::Float(_) => true,
        ExprKind::RawStr(s) => !s.contains('$'),
        ExprKind::List(items) => items.iter().all(literal),
        ExprKind::Map(entries) => entries.iter().all(|(k, v)| literal(k) && literal(v)),
        ExprKind::Struct(fields) => fields.iter().all(|(_, v)| literal(v)),
        _ => false,
    }
}

fn hash_of(value: &(impl Hash + ?Sized)) -> u64 {
    let mut h = DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{ParamDecl, ResourceDecl};
    use crate::output::ResDecl;
    use crate::span::Span;
    use crate::types::Type;

    fn catalog() -> Catalog {
        let mut catalog = Catalog::new();
        catalog.add_resource(ResourceDecl {
            kind: "file".into(),
            params: vec![
                ParamDecl::new("content", Type::Str),
                ParamDecl::new("mode", Type::Str),
                ParamDecl::new("path", Type::Str).read_by_edges(),
            ],
            sends: Vec::new(),
            can_recv: false,
        });
        catalog
    }

    fn outline(text: &str) -> Option<Outline> {
        let (file, diags) = crate::syntax::parse(FileId::default(), text);
        assert!(diags.is_empty(), "{diags:?}");
        Outline::of(&file.stmts, text, &catalog())
    }

    fn file(name: &str, content: &str) -> String {
        format!("file \"{name}\" {{\n\tcontent => \"{content}\",\n\tmode => \"0644\",\n}}\n")
    }

    fn program(contents: &[&str]) -> String {
        let mut text = String::from("# files\n$unused = 1\n");
        for (i, c) in contents.iter().enumerate() {
            text.push_str(&file(&format!("/f{i}"), c));
        }
        text
    }

    #[test]
    fn an_edit_of_resources_params_is_compiled_alone_at_its_lines() {
        let old = program(&["a", "b", "c", "d"]);
        let new = program(&["a", "B", "c", "D"]);
        let Edit::Resources { snippet, statements, outline: next } = outline(&old).unwrap().edit(&new, &catalog())
        else {
            panic!("not compiled alone")
        };
        assert_eq!(statements, 2, "b and d");
        // b from line 7 (after the header's two lines and the first file's four), then c's
        // lines left blank, then d.
        assert_eq!(snippet, format!("{}{}{}{}", "\n".repeat(6), file("/f1", "B"), "\n".repeat(4), file("/f3", "D")));
        assert_eq!(Some(next), outline(&new), "the new outline is the new text's");
        assert_eq!(outline(&old).unwrap().edit(&old, &catalog()), Edit::Same);
    }

    /// Issue 45, defect 2: a program with no statement (empty, comments only) has an
    /// outline of nothing, which every text matched: a save of the real program after an
    /// emptied file was taken for the same text and never applied.
    #[test]
    fn any_text_after_a_program_without_statements_is_compiled_whole() {
        for empty in ["", "# nothing yet\n", "\n\n"] {
            let o = outline(empty).unwrap();
            assert_eq!(o.edit(&program(&["a"]), &catalog()), Edit::Whole, "after {empty:?}");
            assert_eq!(o.edit("# another comment\n", &catalog()), Edit::Whole, "after {empty:?}");
        }
    }

    #[test]
    fn edits_that_can_mean_more_need_the_whole_program() {
        let old = program(&["a", "b"]);
        let whole = |new: &str| outline(&old).unwrap().edit(new, &catalog()) == Edit::Whole;
        assert!(whole(&old.replace("/f1", "/g1")), "a new name");
        assert!(whole(&old.replace("content => \"b\"", "path => \"/elsewhere\"")), "a param edges read");
        assert!(whole(&old.replace("$unused = 1", "$unused = 2")), "a bind");
        assert!(whole(&old.replace("\"b\"", "\"${unused}\"")), "a variable");
        assert!(whole(&old.replace("\"b\"", "strings.to_upper(\"b\")")), "a call");
        assert!(whole(&format!("{old}{}", file("/f9", "new"))), "a new resource");
        assert!(whole(&old.replace(&file("/f1", "b"), "")), "a resource gone");
        assert!(whole(&old.replace("mode => \"0644\",\n}\n", "mode => \"0644\",\n\tMeta:noop => true,\n}\n")));
        assert!(whole(&old.replace("file \"/f1\"", "@file \"/f1\"")), "virtual");
        let export =
            |text: &str| text.replace("mode => \"0644\",\n}\n", "mode => \"0644\",\n\tMeta:export => [\"*\"],\n}\n");
        let exported = outline(&export(&old)).unwrap();
        assert_eq!(exported.edit(&export(&old).replace("\"b\"", "\"B\""), &catalog()), Edit::Whole, "exported");
        // Metaparams other than `export`, as they were: standalone.
        let noop = |text: &str| text.replace("mode => \"0644\",\n}\n", "mode => \"0644\",\n\tMeta:noop => true,\n}\n");
        let quiet = outline(&noop(&old)).unwrap();
        let edit = quiet.edit(&noop(&old).replace("\"b\"", "\"B\""), &catalog());
        assert!(matches!(edit, Edit::Resources { statements: 1, .. }), "{edit:?}");
        assert!(whole(&old.replace("content => \"b\",", "content => \"b\"")), "a syntax error");
        // Comments and blank lines between statements: the neighbours are compiled again.
        let commented = old.replace("file \"/f1\"", "# one more\n\nfile \"/f1\"");
        assert!(matches!(outline(&old).unwrap().edit(&commented, &catalog()), Edit::Resources { .. }));
    }

    #[test]
    fn programs_with_statements_that_change_other_declarations_have_no_outline() {
        for extra in ["File { mode => \"0600\", }\n", "File[\"/f0\"] { mode => \"0600\", }\n", "File <| |>\n"] {
            assert_eq!(outline(&format!("{}{extra}", program(&["a"]))), None, "{extra}");
        }
        let nested = format!("if true {{\n\tFile {{ mode => \"0600\", }}\n}}\n{}", program(&["a"]));
        assert_eq!(outline(&nested), None);
    }

    fn decl(name: &str, start: u32) -> ResDecl {
        ResDecl {
            kind: "file".into(),
            name: name.into(),
            params: Vec::new(),
            defaulted: Vec::new(),
            metas: Vec::new(),
            edges: Vec::new(),
            collect: false,
            from: None,
            virtuality: Virtuality::Real,
            classes: Vec::new(),
            within: Vec::new(),
            span: Span { file: FileId::default(), start, end: start + 1 },
        }
    }

    #[test]
    fn a_resource_declared_twice_is_never_compiled_alone() {
        let old = program(&["a", "b"]);
        let at = |name: &str| old.find(&format!("file \"{name}\"")).unwrap() as u32;
        let new = program(&["A", "B"]);
        let mut o = outline(&old).unwrap();
        o.confirm(&Output { resources: vec![decl("/f0", at("/f0")), decl("/f1", at("/f1"))], ..Output::default() });
        assert!(matches!(o.edit(&new, &catalog()), Edit::Resources { statements: 2, .. }));
        // "/f1" also comes from another statement (a nested one, say, at the header).
        o.confirm(&Output {
            resources: vec![decl("/f0", at("/f0")), decl("/f1", at("/f1")), decl("/f1", 0)],
            ..Output::default()
        });
        assert_eq!(o.edit(&new, &catalog()), Edit::Whole);
        assert!(matches!(o.edit(&program(&["A", "b"]), &catalog()), Edit::Resources { statements: 1, .. }));
        // Left as it was between two changes, it stays declared twice in the next outline.
        let three = program(&["a", "b", "c"]);
        let at = |name: &str| three.find(&format!("file \"{name}\"")).unwrap() as u32;
        let mut o = outline(&three).unwrap();
        let decls = ["/f0", "/f1", "/f2"].map(|n| decl(n, at(n)));
        o.confirm(&Output { resources: [&decls[..], &[decl("/f1", 0)]].concat(), ..Output::default() });
        let Edit::Resources { statements: 2, outline: next, .. } = o.edit(&program(&["A", "b", "C"]), &catalog())
        else {
            panic!("a and c are standalone")
        };
        assert_eq!(next.edit(&program(&["A", "B", "C"]), &catalog()), Edit::Whole);
    }
}
