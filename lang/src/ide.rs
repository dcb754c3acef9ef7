//! What an editor asks about a program, on byte offsets: its diagnostics, the type and
//! documentation under the cursor, where a name is declared and used, what may be typed
//! next, the outline and the highlighting. No protocol here: `tend lsp` (the binary's
//! `lsp` module) speaks the Language Server Protocol over these queries.

mod complete;
mod highlight;
mod hover;
mod navigate;
mod outline;

pub use complete::{Completion, CompletionKind, complete};
pub use highlight::{Highlight, highlight};
pub use hover::{Info, hover};
pub use navigate::{definition, references};
pub use outline::{Symbol, SymbolKind, outline};

use crate::catalog::Catalog;
use crate::diag::Diagnostics;
use crate::ir::{FuncGraph, NameUse, NodeId};
use crate::loader::Loader;
use crate::span::{FileId, SourceMap, Span};
use crate::syntax::ast::{Block, Stmt, StmtKind};
use crate::types::Type;

/// One program as the front end saw it.
pub struct Analysis {
    pub sources: SourceMap,
    pub errors: Diagnostics,
    pub warnings: Diagnostics,
    /// The function graph as far as the front end got: names resolved, types where
    /// unification found them. `None` when the program does not parse.
    pub graph: Option<FuncGraph>,
}

/// Runs the front end on the program whose entry file is `entry`, keeping everything an
/// editor can use even when a stage fails.
pub fn analyze(entry: &str, loader: &dyn Loader, catalog: &Catalog) -> Analysis {
    let out = crate::pipeline::compile_naming(entry, loader, catalog);
    Analysis { sources: out.sources, errors: out.diagnostics, warnings: out.warnings, graph: out.graph.or(out.partial) }
}

impl Analysis {
    /// The file loaded under a deploy name (`/main.mcl`).
    pub fn file(&self, name: &str) -> Option<FileId> {
        self.sources.files().find(|(_, f)| f.name == name).map(|(id, _)| id)
    }

    /// The names used in `file`, in source order.
    fn uses(&self, file: FileId) -> &[NameUse] {
        let Some(graph) = &self.graph else { return &[] };
        let from = graph.names.partition_point(|u| u.at.file < file);
        let to = graph.names.partition_point(|u| u.at.file <= file);
        &graph.names[from..to]
    }

    /// The name used at `offset` of `file`.
    fn use_at(&self, file: FileId, offset: u32) -> Option<&NameUse> {
        self.uses(file).iter().filter(|u| contains(u.at, offset)).min_by_key(|u| u.at.end - u.at.start)
    }

    /// The declaration (as some use resolved it) whose name is at `offset` of `file`.
    fn decl_at(&self, file: FileId, offset: u32) -> Option<Span> {
        let graph = self.graph.as_ref()?;
        graph.names.iter().filter_map(|u| u.decl).find(|d| d.file == file && contains(*d, offset))
    }

    /// The type of a node, when unification found it.
    fn ty(&self, node: NodeId) -> Option<&Type> {
        self.graph.as_ref()?.ty(node)
    }

    /// The type of the value a declaration names, from any use of it.
    fn decl_type(&self, decl: Span) -> Option<&Type> {
        let graph = self.graph.as_ref()?;
        graph.names.iter().filter(|u| u.decl == Some(decl)).find_map(|u| u.node.and_then(|n| graph.ty(n)))
    }

    /// The smallest typed node of `file` whose span holds `offset`.
    fn typed_node_at(&self, file: FileId, offset: u32) -> Option<(Span, &Type)> {
        let graph = self.graph.as_ref()?;
        graph
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.span.file == file && n.span.start < n.span.end && contains(n.span, offset))
            .filter_map(|(i, n)| graph.ty(NodeId(i as u32)).map(|t| (n.span, t)))
            .min_by_key(|(s, _)| s.end - s.start)
    }
}

/// Whether the cursor at `offset` is on `span` (its end included: the cursor right after
/// a name is still on it).
fn contains(span: Span, offset: u32) -> bool {
    span.start <= offset && offset <= span.end
}

/// Calls `f` on every statement of `stmts` and of the blocks nested in them, parents first.
fn walk<'a>(stmts: &'a [Stmt], f: &mut dyn FnMut(&'a Stmt)) {
    for stmt in stmts {
        f(stmt);
        for block in blocks(stmt) {
            walk(&block.stmts, f);
        }
    }
}

/// The blocks a statement holds.
fn blocks(stmt: &Stmt) -> Vec<&Block> {
    match &stmt.kind {
        StmtKind::If { then, els, .. } => std::iter::once(then).chain(els).collect(),
        StmtKind::For { body, .. } | StmtKind::ForKv { body, .. } => vec![body],
        StmtKind::Class { body, .. } | StmtKind::Node { body, .. } => vec![body],
        _ => Vec::new(),
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use crate::catalog::{FuncDecl, ParamDecl, ResourceDecl};
    use crate::loader::MemLoader;

    /// A catalog with a `file` kind, `len`, `sys.hostname` and `strings.to_upper`.
    pub(crate) fn catalog() -> Catalog {
        let mut catalog = Catalog::new();
        catalog.add_resource(ResourceDecl {
            kind: "file".into(),
            params: vec![
                ParamDecl::new("content", Type::Str),
                ParamDecl::new("state", Type::Str).with_allowed(["", "exists", "absent"]),
                ParamDecl::new("mode", Type::Str).zero_when_absent(),
            ],
            sends: Vec::new(),
            can_recv: false,
        });
        let sig = |args: Vec<Type>, ret| Type::func(args, ret);
        catalog.add_func(FuncDecl {
            name: "len".into(),
            sigs: vec![sig(vec![Type::Str], Type::Int)],
            infer: None,
            check: None,
            doc: "the length of a string, list or map",
        });
        catalog.add_func(FuncDecl {
            name: "sys.hostname".into(),
            sigs: vec![sig(vec![], Type::Str)],
            infer: None,
            check: None,
            doc: "the host's name (node definitions match it)",
        });
        catalog.add_func(FuncDecl {
            name: "strings.to_upper".into(),
            sigs: vec![sig(vec![Type::Str], Type::Str)],
            infer: None,
            check: None,
            doc: "the string in upper case",
        });
        catalog
    }

    /// The analysis of a one-file program, and the offset of the first `^` in `marked`
    /// (which the program does not contain).
    pub(crate) fn at(marked: &str) -> (Analysis, Catalog, u32) {
        let offset = marked.find('^').expect("a ^ marks the cursor") as u32;
        let text = marked.replacen('^', "", 1);
        let catalog = catalog();
        let analysis = analyze("/main.mcl", &MemLoader::new().with("/main.mcl", &text), &catalog);
        (analysis, catalog, offset)
    }
}

#[cfg(test)]
mod half_typed {
    use super::testing::catalog;
    use super::*;
    use crate::loader::MemLoader;

    /// Every query on every prefix of a program that uses most of the syntax (what an
    /// editor sends while it is typed) answers without panicking.
    #[test]
    fn every_query_on_every_prefix_answers() {
        let program = "import \"strings\"\nimport \"web/\" as w\n# a comment\ntype vhost {\n\tattr name str\n\tattr port int { default => 80, check => $it > 0, }\n\tinvariant \"named\" { $name != \"\" }\n}\nfunc up($s str) str { strings.to_upper($s) }\nclass site($n, $m = 2) {\n\t$v = vhost{name => $n}\n\tfile \"/srv/${n}\" {\n\t\tcontent => up($v->name),\n\t\tmode => \"0644\",\n\t\tMeta:noop => true,\n\t\tBefore => File[\"/b\"],\n\t}\n}\ninclude site(\"a\") as s\nfor $i, $x in [\"a\", \"b\"] {\n\tfile \"/l/${x}\" { content => $s.v->name, }\n}\nFile { mode => \"0600\", }\nFile <| tag == \"site\" |> { mode => \"0640\", }\nFile[\"/b\"] -> File[\"/c\"]\n@file \"/v\" { }\nnode \"h1\", default {\n\t$z = len(\"x\") + 1 * 2\n}\n";
        let catalog = catalog();
        let mut cut = 0;
        while cut <= program.len() {
            let text = &program[..cut];
            let loader = MemLoader::new().with("/main.mcl", text).with("/web/main.mcl", "$x = 1\n");
            let analysis = analyze("/main.mcl", &loader, &catalog);
            let file = FileId(0);
            for offset in [0, cut / 3, cut / 2, cut] {
                let offset = offset as u32;
                let _ = hover(&analysis, &catalog, file, offset);
                let _ = definition(&analysis, file, offset);
                let _ = references(&analysis, file, offset, true);
                let _ = complete(text, offset, file, &catalog, Some(&analysis));
            }
            let _ = outline(file, text);
            let _ = highlight(file, text);
            cut += 5;
            while !program.is_char_boundary(cut.min(program.len())) {
                cut += 1;
            }
        }
        // The whole program compiles, so the queries had something to work on.
        let loader = MemLoader::new().with("/main.mcl", program).with("/web/main.mcl", "$x = 1\n");
        let analysis = analyze("/main.mcl", &loader, &catalog);
        assert!(analysis.errors.is_empty(), "{:?}", analysis.errors.first());
    }
}
