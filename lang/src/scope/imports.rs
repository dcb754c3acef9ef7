//! Imports (spec 3.9): classifying import strings, loading local files and module
//! directories through the [`Loader`], running the earlier phases on them, and rejecting
//! import cycles and modules with output statements.
//!
//! Loading happens before elaboration: every `import` statement of every loaded file
//! (also those in class and if bodies) gets an [`ImportTarget`], keyed by the statement's
//! span. A failure anywhere inside an imported file makes that import fail with one
//! diagnostic at the import statement that wraps the inner message.

use super::metadata::Metadata;
use super::remote::RemoteImport;
use crate::catalog::Catalog;
use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::loader::Loader;
use crate::span::{FileId, SourceFile, SourceMap, Span};
use crate::syntax::ast::{self, StmtKind};
use std::collections::BTreeMap;

/// What one import statement refers to.
#[derive(Clone, Debug)]
pub(crate) enum ImportTarget {
    System(String),
    /// Index into [`Loaded::files`].
    Module(usize),
    /// Reported already.
    Failed,
}

/// Every file of the program (the entry file first) and what each import statement means.
pub(crate) struct Loaded {
    pub(crate) files: Vec<ast::File>,
    pub(crate) targets: BTreeMap<Span, ImportTarget>,
    /// The deploy root of the module each imported file belongs to (`/mod1/`), for files
    /// inside a module directory; files of the main program are not listed (root `/`).
    pub(crate) module_roots: BTreeMap<FileId, String>,
}

use super::FrontEnd;

/// Loads everything the entry file imports, transitively. Errors of imports made by the
/// entry file go to `diags`; errors inside imported files fail the import that led there.
pub(crate) fn load(
    main: ast::File,
    entry: &str,
    loader: &dyn Loader,
    catalog: &Catalog,
    sources: &mut SourceMap,
    frontend: &FrontEnd,
    diags: &mut Diagnostics,
) -> Loaded {
    let loader = &crate::embedded::WithEmbedded(loader);
    let mut l = Load {
        loader,
        catalog,
        sources,
        frontend,
        loaded: Loaded { files: Vec::new(), targets: BTreeMap::new(), module_roots: BTreeMap::new() },
        by_path: BTreeMap::new(),
        stack: vec![entry.to_string()],
        metas: BTreeMap::new(),
        parents: BTreeMap::new(),
    };
    let base = dir_of(entry);
    let imports = collect_imports(&main);
    l.loaded.files.push(main);
    for (span, path) in imports {
        match l.import(&path, &base, "/") {
            Ok(target) => {
                l.loaded.targets.insert(span, target);
            }
            Err(e) => {
                diags.push(e.at(span));
                l.loaded.targets.insert(span, ImportTarget::Failed);
            }
        }
    }
    l.loaded
}

/// The namespace an import gets without `as`: last segment, `.mcl` or `/` removed, a
/// leading `mgmt-` removed, `-` as `_`, lower-cased.
pub fn default_namespace(path: &str) -> String {
    let trimmed = super::remote::without_ref(path).trim_end_matches('/');
    let last = trimmed.rsplit('/').next().unwrap_or(trimmed);
    let last = last.strip_suffix(".mcl").unwrap_or(last);
    let last = last.strip_prefix("mgmt-").unwrap_or(last);
    last.replace('-', "_").to_lowercase()
}

/// An import failure before it is placed at an import statement.
struct ImportError {
    message: String,
    inner: Option<Box<Diagnostic>>,
    /// Did-you-mean and other hints.
    notes: Vec<String>,
}

impl ImportError {
    fn plain(message: String) -> ImportError {
        ImportError { message, inner: None, notes: Vec::new() }
    }
    fn wrapping(message: String, inner: Option<Diagnostic>) -> ImportError {
        ImportError { message, inner: inner.map(Box::new), notes: Vec::new() }
    }
    fn at(self, span: Span) -> Diagnostic {
        let mut d = Diagnostic::new(Stage::SetScope, self.message, span).with_code(Code::ImportFailed);
        d.notes.extend(self.notes);
        if let Some(inner) = self.inner {
            if let Some(s) = inner.span {
                d = d.with_label(s, inner.message.clone());
            }
            d.labels.extend(inner.labels);
            d.notes.extend(inner.notes);
        }
        d
    }
}

struct Load<'l> {
    loader: &'l dyn Loader,
    catalog: &'l Catalog,
    sources: &'l mut SourceMap,
    frontend: &'l FrontEnd,
    loaded: Loaded,
    /// Deploy path of every file loaded so far (success or failure).
    by_path: BTreeMap<String, Result<usize, (String, Option<Diagnostic>)>>,
    /// Files being loaded (for `recursive import of`).
    stack: Vec<String>,
    /// Each module directory's `metadata.yaml` (`/` is the program's own), as read.
    metas: BTreeMap<String, Result<Metadata, String>>,
    /// The module that first imported each module directory: whose `path` it searches
    /// after its own for imports by URL.
    parents: BTreeMap<String, String>,
}

impl Load<'_> {
    /// An inner error as it appears inside the wrapping message: with its position, the
    /// way mgmt nests them (`...: /foo.mcl @ 1:12-1:13`), since the one-line form of the
    /// wrapper only shows the import statement's position.
    fn positioned(&self, d: &Diagnostic) -> String {
        match d.span {
            Some(span) => format!("{}: {}", d.message, self.sources.byline(span)),
            None => d.message.clone(),
        }
    }

    /// Resolves one import string written in a file whose directory is `base` and whose
    /// module's deploy root is `root` (`/` for the main program, `/mod1/` in a module).
    fn import(&mut self, path: &str, base: &str, root: &str) -> Result<ImportTarget, ImportError> {
        if path.contains("://") {
            return self.remote(path, root);
        }
        if path.starts_with('/') {
            return Err(ImportError::plain(format!("import `{path}` is not valid: absolute paths are not allowed")));
        }
        if path.is_empty() {
            return Err(ImportError::plain("import `` is not valid: empty path".to_string()));
        }
        if path.ends_with(".mcl") {
            let full = join(base, path);
            let module_dir = dir_of(&full);
            return self
                .file(&full, &module_dir, root)
                .map(ImportTarget::Module)
                .map_err(|(m, inner)| ImportError::wrapping(format!("local import of `{path}` failed: {m}"), inner));
        }
        if path.ends_with('/') {
            let dir = join(base, path);
            let dir = if dir.ends_with('/') { dir } else { format!("{dir}/") };
            if dir != root {
                self.parents.entry(dir.clone()).or_insert_with(|| root.to_string());
            }
            return self.module_dir(&dir).map(ImportTarget::Module).map_err(|(m, inner)| {
                let mut e = ImportError::wrapping(format!("local import of `{path}` failed: {m}"), inner);
                if !self.loader.is_dir(dir.trim_end_matches('/')) {
                    e.notes.extend(self.nearby_dir(base, path));
                }
                e
            });
        }
        if let Some(dir) = crate::embedded::module_dir(path) {
            return self.module_dir(&dir).map(ImportTarget::Module).map_err(|(m, inner)| {
                ImportError::wrapping(format!("embedded import of `{path}` failed: {m}"), inner)
            });
        }
        if self.catalog.has_package(path) {
            return Ok(ImportTarget::System(path.to_string()));
        }
        let mut e = ImportError::plain(format!(
            "system import of `{path}` failed: could not find any non-empty scope named: {path}"
        ));
        if self.loader.is_dir(&join(base, path)) {
            e.notes.push(format!(
                "`{path}` is a directory here: a local module is imported with a trailing slash, `import \"{path}/\"`"
            ));
        } else if let Some(close) = crate::suggest::did_you_mean(path, self.catalog.packages()) {
            e.notes.push(format!("did you mean the package `{close}`?"));
        }
        Err(e)
    }

    /// Did-you-mean for a local import `path` (ending `/`, written in `base`) whose
    /// directory does not exist: a directory beside it with a close name.
    fn nearby_dir(&self, base: &str, path: &str) -> Option<String> {
        let trimmed = path.trim_end_matches('/');
        let (parent, name) = match trimmed.rsplit_once('/') {
            Some((parent, name)) => (format!("{parent}/"), name),
            None => (String::new(), trimmed),
        };
        let listed = join(base, &parent);
        let close =
            crate::suggest::did_you_mean(name, self.loader.subdirs(if listed.is_empty() { "/" } else { &listed }))?;
        Some(format!("did you mean `{parent}{close}/`?"))
    }

    fn module_dir(&mut self, dir: &str) -> Result<usize, (String, Option<Diagnostic>)> {
        let trimmed = dir.trim_end_matches('/');
        if !self.loader.is_dir(if trimmed.is_empty() { "/" } else { trimmed }) {
            return Err((format!("module directory `{dir}` does not exist"), None));
        }
        let main = self.metadata(dir)?.main;
        let full = join(dir, &main);
        self.file(&full, dir.trim_end_matches('/'), dir)
    }

    /// The `metadata.yaml` of module directory `dir` (ending `/`): its defaults when there
    /// is none.
    fn metadata(&mut self, dir: &str) -> Result<Metadata, (String, Option<Diagnostic>)> {
        if !self.metas.contains_key(dir) {
            let meta_path = format!("{dir}metadata.yaml");
            let read = match self.loader.read(&meta_path) {
                Some(text) => Metadata::parse(&text)
                    .map_err(|e| format!("could not read `{}`: {e}", self.loader.shown(&meta_path))),
                None => Ok(Metadata::default()),
            };
            self.metas.insert(dir.to_string(), read);
        }
        self.metas[dir].clone().map_err(|e| (e, None))
    }

    /// Where a module rooted at `root` looks for imports by URL, in order: its own `path`,
    /// those of the modules that imported it (up to one with `parentpathblock`), then the
    /// global module path (`--module-path`), as mgmt searches.
    fn module_paths(&mut self, root: &str) -> Result<Vec<String>, (String, Option<Diagnostic>)> {
        let mut out = Vec::new();
        let mut at = Some(root.to_string());
        // A chain longer than this has a loop in it (a module is its own ancestor).
        for _ in 0..256 {
            let Some(dir) = at else { break };
            let meta = self.metadata(&dir)?;
            if let Some(path) = &meta.path {
                out.push(format!("{dir}{path}"));
            }
            if meta.parent_path_block {
                break;
            }
            at = self.parents.get(&dir).cloned();
        }
        out.extend(self.loader.module_path());
        Ok(out)
    }

    /// An import by URL, from a module rooted at `root`: the first module path that has the
    /// module, else a download into the first one (with `--download`), else an error that
    /// says where it was looked for.
    fn remote(&mut self, path: &str, root: &str) -> Result<ImportTarget, ImportError> {
        let failed = |m: String| ImportError::plain(format!("remote import of `{path}` failed: {m}"));
        let import = RemoteImport::parse(path).map_err(|e| failed(format!("the import is not a valid URL: {e}")))?;
        let paths = self
            .module_paths(root)
            .map_err(|(m, inner)| ImportError::wrapping(format!("remote import of `{path}` failed: {m}"), inner))?;
        let Some(first) = paths.first() else {
            return Err(failed("no module path to look in: give `--module-path DIR` (or set MGMT_MODULE_PATH), or name one with `path:` in metadata.yaml".into()));
        };
        let has = |dir: &str| self.loader.is_dir(dir.trim_end_matches('/'));
        let dir = match paths.iter().map(|p| format!("{p}{}", import.dir)).find(|d| has(d)) {
            Some(dir) => dir,
            None => {
                let dest = format!("{first}{}", import.dir);
                match self.loader.download(&import.url, import.reference.as_deref(), &dest) {
                    Some(Ok(())) => dest,
                    Some(Err(e)) => return Err(failed(format!("cannot download `{}`: {e}", import.url))),
                    None => {
                        let looked: Vec<String> = paths
                            .iter()
                            .map(|p| format!("`{}`", self.loader.shown(&format!("{p}{}", import.dir))))
                            .collect();
                        let at = import.reference.as_ref().map(|r| format!(" at `{r}`")).unwrap_or_default();
                        let mut e = failed(format!(
                            "the module `{}`{at} is not in the module path (looked for {})",
                            import.url,
                            looked.join(", ")
                        ));
                        e.notes.push("`--download` fetches it into the first of those".into());
                        return Err(e);
                    }
                }
            }
        };
        if dir != root {
            self.parents.entry(dir.clone()).or_insert_with(|| root.to_string());
        }
        self.module_dir(&dir)
            .map(ImportTarget::Module)
            .map_err(|(m, inner)| ImportError::wrapping(format!("remote import of `{path}` failed: {m}"), inner))
    }

    /// Loads one file (memoized by path): read, front end, module rules, its imports.
    /// `root` is the deploy root of the module the file belongs to.
    fn file(&mut self, path: &str, module_dir: &str, root: &str) -> Result<usize, (String, Option<Diagnostic>)> {
        if self.stack.iter().any(|p| p == path) {
            let mut chain = self.stack.clone();
            chain.push(path.to_string());
            return Err((format!("recursive import of: {}", chain.join(" -> ")), None));
        }
        if let Some(done) = self.by_path.get(path) {
            return done.clone();
        }
        let out = self.file_uncached(path, module_dir, root);
        self.by_path.insert(path.to_string(), out.clone());
        out
    }

    fn file_uncached(
        &mut self,
        path: &str,
        module_dir: &str,
        root: &str,
    ) -> Result<usize, (String, Option<Diagnostic>)> {
        let Some(text) = self.loader.read(path) else {
            let why = self.loader.why_unreadable(path).map(|w| format!(": {w}")).unwrap_or_default();
            return Err((format!("can't read file `{path}`{why}"), None));
        };
        let file_id = self.sources.add(SourceFile::new(path, text.clone()));
        if root != "/" {
            self.loaded.module_roots.insert(file_id, root.to_string());
        }
        let (parsed, inner) = (self.frontend)(file_id, &text);
        let parsed = match (parsed, inner.first()) {
            (Some(p), None) => p,
            (_, Some(first)) => {
                let first = first.clone();
                let msg = format!("could not generate AST from import: {}", self.positioned(&first));
                return Err((msg, Some(first)));
            }
            (None, None) => return Err(("could not generate AST from import".to_string(), None)),
        };
        for stmt in &parsed.stmts {
            if let Some(what) = output_stmt(stmt) {
                let d = Diagnostic::new(
                    Stage::SetScope,
                    format!("module contains unused statements: found stmt: {what}"),
                    stmt.span,
                )
                .with_code(Code::ModuleStatement)
                .with_note("an imported file may only contain import, bind, func and class statements");
                return Err((self.positioned(&d), Some(d)));
            }
        }
        if parsed.stmts.is_empty() {
            return Err((format!("could not find any non-empty scope in `{path}`"), None));
        }
        let mut own_diags = Diagnostics::new();
        super::order::check_file(&parsed, &mut own_diags);
        if let Some(first) = own_diags.first() {
            return Err((self.positioned(first), Some(first.clone())));
        }
        let imports = collect_imports(&parsed);
        self.stack.push(path.to_string());
        let mut targets = Vec::new();
        let mut failure = None;
        for (span, import_path) in imports {
            match self.import(&import_path, module_dir, root) {
                Ok(t) => targets.push((span, t)),
                Err(e) => {
                    let d = e.at(span);
                    failure = Some((self.positioned(&d), Some(d)));
                    break;
                }
            }
        }
        self.stack.pop();
        if let Some(f) = failure {
            return Err(f);
        }
        self.loaded.targets.extend(targets);
        self.loaded.files.push(parsed);
        Ok(self.loaded.files.len() - 1)
    }
}

/// Describes a statement a module may not contain (`res(print)`, `include(c)`), or `None`
/// for definitions.
fn output_stmt(stmt: &ast::Stmt) -> Option<String> {
    Some(match &stmt.kind {
        // Defaults produce nothing themselves: at a module's top they apply to its classes.
        StmtKind::Bind { .. }
        | StmtKind::Func { .. }
        | StmtKind::Class { .. }
        | StmtKind::Import { .. }
        | StmtKind::Type(_)
        | StmtKind::Defaults { .. } => {
            return None;
        }
        StmtKind::Resource(r) => format!("res({})", r.kind.name),
        StmtKind::Include { name, .. } => format!("include({})", name.name),
        StmtKind::Edge { .. } => "edge".to_string(),
        StmtKind::Override { target, .. } => format!("override({})", target.kind.name),
        StmtKind::Collect(c) => format!("collect({})", c.kind.name),
        StmtKind::Realize { .. } => "realize".to_string(),
        StmtKind::Node { .. } => "node".to_string(),
        StmtKind::If { .. } => "if".to_string(),
        StmtKind::For { .. } => "for".to_string(),
        StmtKind::ForKv { .. } => "forkv".to_string(),
        StmtKind::Panic { .. } => "panic".to_string(),
    })
}

/// Every import statement of a file, in any block, in source order.
fn collect_imports(file: &ast::File) -> Vec<(Span, String)> {
    fn walk(stmts: &[ast::Stmt], out: &mut Vec<(Span, String)>) {
        for stmt in stmts {
            match &stmt.kind {
                StmtKind::Import { path, .. } => out.push((stmt.span, path.clone())),
                StmtKind::If { then, els, .. } => {
                    walk(&then.stmts, out);
                    if let Some(e) = els {
                        walk(&e.stmts, out);
                    }
                }
                StmtKind::For { body, .. } | StmtKind::ForKv { body, .. } | StmtKind::Class { body, .. } => {
                    walk(&body.stmts, out)
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(&file.stmts, &mut out);
    out
}

/// The `main` field of a module's (or a program directory's) `metadata.yaml` (default
/// `main.mcl`); a file that does not parse is an error.
pub fn main_of_metadata(text: &str) -> Result<String, String> {
    Metadata::parse(text).map(|m| m.main)
}

/// The directory part of a deploy path (`/a/b.mcl` -> `/a`, `/main.mcl` -> ``).
fn dir_of(path: &str) -> String {
    match path.rfind('/') {
        Some(i) => path[..i].to_string(),
        None => String::new(),
    }
}

/// Joins a directory and a relative path, resolving `.` and `..` (never above the root).
fn join(dir: &str, rel: &str) -> String {
    let mut parts: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
    for seg in rel.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    let mut out = format!("/{}", parts.join("/"));
    if rel.ends_with('/') && !out.ends_with('/') {
        out.push('/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_namespaces_follow_the_naming_rules() {
        assert_eq!(default_namespace("fmt"), "fmt");
        assert_eq!(default_namespace("math/trig"), "trig");
        assert_eq!(default_namespace("defs.mcl"), "defs");
        assert_eq!(default_namespace("mod1/"), "mod1");
        assert_eq!(default_namespace("git://github.com/purpleidea/mgmt-example1/"), "example1");
        assert_eq!(default_namespace("Some-Mod/"), "some_mod");
    }

    #[test]
    fn paths_join_relative_to_the_module() {
        assert_eq!(join("", "foo.mcl"), "/foo.mcl");
        assert_eq!(join("/mod1", "../x.mcl"), "/x.mcl");
        assert_eq!(join("/a", "b/"), "/a/b/");
        assert_eq!(dir_of("/mod1/main.mcl"), "/mod1");
    }

    #[test]
    fn metadata_main_defaults() {
        assert_eq!(main_of_metadata("").unwrap(), "main.mcl");
        assert_eq!(main_of_metadata("#files: x\n").unwrap(), "main.mcl");
        assert_eq!(main_of_metadata("main: \"start.mcl\"\n").unwrap(), "start.mcl");
    }
}
