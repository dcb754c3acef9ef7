//! Scope resolution and elaboration (stage errSetScope): imports, ordering and
//! recursion checks, name resolution, and the elaboration of the AST into the function
//! graph ([`crate::ir::FuncGraph`]).
//!
//! Steps, each in its own module:
//! 1. [`imports`]: load every imported file and module (running the earlier phases on
//!    them) and decide what each `import` statement refers to.
//! 2. [`order`]: per-block analysis on the syntax of every file: duplicate definitions
//!    and recursion (`not a dag`), also in classes never included and funcs never called.
//! 3. [`stmt`] and [`expr`]: elaborate the entry file's statements into IR statements and
//!    expression nodes, resolving names through [`frame`]s. Binds become one shared node,
//!    each call of a `func` statement and each `include` is inlined as a fresh copy.
//!
//! Types are not looked at (unification fills `FuncGraph::types` later).

mod args;
mod define;
mod expr;
mod frame;
mod imports;
mod metadata;
mod names;
mod order;
mod plain;
mod remote;
mod stmt;
mod types;
mod usage;

use crate::catalog::Catalog;
use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::ir::{FuncGraph, NodeId, NodeKind};
use crate::loader::Loader;
use crate::span::{FileId, SourceMap, Span};
use crate::syntax::ast;
use crate::value::Value;
use frame::{AliasEntry, Frame, FrameId, Lazy, Ns};
use imports::ImportTarget;
pub use imports::main_of_metadata;
pub use metadata::Metadata;
use std::collections::BTreeMap;

/// How deeply calls of `func` statements and class includes may nest while the program is
/// elaborated (each is elaborated inside the one that reaches it, and every later phase
/// walks what it made as deeply). Real programs stay in the tens; the limit keeps a chain
/// of thousands from overflowing the stack, with room to spare in every phase after.
pub const MAX_NESTING: u32 = 1000;

/// The namespace an import gets without `as` (spec 3.9).
pub use imports::default_namespace;

/// Resolves the entry file `main` (already parsed, init-checked and interpolated; its
/// deploy path is `entry`, e.g. `/main.mcl`) into the function graph. Imported files are
/// read through `loader`, added to `sources` and run through the earlier phases here.
/// Every error is a [`Stage::SetScope`] diagnostic; the graph is only meaningful when
/// there are none.
pub fn resolve(
    main: ast::File,
    entry: &str,
    loader: &dyn Loader,
    catalog: &Catalog,
    sources: &mut SourceMap,
) -> (FuncGraph, Diagnostics) {
    resolve_with(main, entry, loader, catalog, sources, &front_end, false)
}

/// Turns an imported file's text into a checked, interpolated AST (`None` plus the
/// errors when it cannot).
pub type FrontEnd = dyn Fn(FileId, &str) -> (Option<ast::File>, Diagnostics);

/// [`resolve`] with the front end for imported files given by the caller: it turns a
/// file's text into a checked, interpolated AST, or reports why not; `naming` records
/// `FuncGraph::names`.
pub fn resolve_with(
    mut main: ast::File,
    entry: &str,
    loader: &dyn Loader,
    catalog: &Catalog,
    sources: &mut SourceMap,
    front_end: &FrontEnd,
    naming: bool,
) -> (FuncGraph, Diagnostics) {
    let mut diags = Diagnostics::new();
    order::check_file(&main, &mut diags);
    // Elaboration makes about a node per expression written: room for those of the main
    // file up front, so a large program's node vector does not double (and copy itself)
    // on its way to the compile's peak.
    let mut exprs = 0usize;
    crate::syntax::visit::exprs_mut(&mut main.stmts, &mut |_| exprs += 1);
    let mut graph = FuncGraph::default();
    graph.nodes.reserve_exact(exprs);
    let static_recursion = diags.iter().any(|d| d.code == Some(Code::ScopeRecursion));
    let mut loaded = imports::load(main, entry, loader, catalog, sources, front_end, &mut diags);
    // A resource statement of a defined type is no plain resource: it instantiates a body.
    let plain = if loaded.files.iter().any(|f| define::declares_any(&f.stmts)) {
        Vec::new()
    } else {
        plain::take_plain(&mut loaded.files[0].stmts)
    };
    let mut ctx = Ctx {
        catalog,
        sources,
        suppressed: std::collections::BTreeSet::new(),
        files: &loaded.files,
        targets: &loaded.targets,
        module_roots: &loaded.module_roots,
        graph,
        diags,
        frames: vec![Frame::default()],
        modules: BTreeMap::new(),
        instances: BTreeMap::new(),
        bases: BTreeMap::new(),
        bind_orders: BTreeMap::new(),
        static_recursion,
        include_chain: Vec::new(),
        nesting: 0,
        too_deep: false,
        usage: usage::Usage::default(),
        default_nodes: BTreeMap::new(),
        any_defaults: false,
        any_defines: false,
        declared: Vec::new(),
        names: names::Names::new(naming),
        short_strs: expr::ShortStrs::default(),
    };
    let stmts = ctx.block_with(FrameId(0), &loaded.files[0].stmts, plain);
    ctx.graph.stmts = stmts;
    ctx.graph.names = std::mem::take(&mut ctx.names).finish(&ctx.frames);
    let mut diags = sorted(ctx.diags);
    if diags.is_empty() {
        diags.extend(ctx.usage.warnings());
    }
    (ctx.graph, diags)
}

/// Diagnostics in source order (file, then position). Repeats (a func body elaborated once
/// per call, a class body once per include) are folded by the pipeline
/// ([`crate::repeats::fold`]).
fn sorted(diags: Diagnostics) -> Diagnostics {
    let mut items = diags.into_vec();
    items.sort_by_key(|d| d.span.map(|s| (0, s.file, s.start, s.end)).unwrap_or((1, FileId(0), 0, 0)));
    items.into_iter().collect()
}

/// Runs the earlier phases on an imported file.
pub(crate) fn front_end(file: FileId, text: &str) -> (Option<ast::File>, Diagnostics) {
    let (parsed, mut diags) = crate::syntax::parse(file, text);
    if !diags.is_empty() {
        return (None, diags);
    }
    diags.extend(crate::init::check(&parsed));
    if !diags.is_empty() {
        return (None, diags);
    }
    let (interpolated, more) = crate::interpolate::run(parsed);
    diags.extend(more);
    if !diags.is_empty() {
        return (None, diags);
    }
    (Some(interpolated), diags)
}

/// What a name resolved to.
#[derive(Clone, Debug)]
enum Hit {
    /// An entry of a frame, under this key.
    Entry(FrameId, String),
    /// A built-in function, by full name.
    Builtin(String),
    /// A global constant.
    Const(Value),
    /// Resolved through a failed import or include: already reported, stay quiet.
    Silent,
    /// An entry another module declared `private` (with its statement's span); only
    /// [`Ctx::find`] returns it, [`Ctx::find_admitted`] turns it into an entry or an error.
    Private(Span, FrameId, String),
}

/// The elaboration context.
struct Ctx<'a> {
    catalog: &'a Catalog,
    /// Every file, for the positions quoted inside wrapped import errors.
    sources: &'a SourceMap,
    /// Errors already reported wrapped in an import failure: repeats of them (a module's
    /// func inlined again later) are dropped.
    suppressed: std::collections::BTreeSet<(String, Option<Span>)>,
    /// Every loaded file, the entry file first.
    files: &'a [ast::File],
    /// What each import statement (by span) refers to.
    targets: &'a BTreeMap<Span, ImportTarget>,
    /// The deploy root (`/mod1/`) of each file inside a module directory.
    module_roots: &'a BTreeMap<FileId, String>,
    graph: FuncGraph,
    diags: Diagnostics,
    /// Frame 0 is the global scope (its names come from the catalog).
    frames: Vec<Frame<'a>>,
    /// The top frame of each imported module (shared by every import of it).
    modules: BTreeMap<usize, Lazy<FrameId>>,
    /// Class instances: body frame -> (class body, frame holding the class entry, key).
    instances: BTreeMap<FrameId, (&'a ast::Block, FrameId, String)>,
    /// The instance of its base class each instance of a class that inherits has (body
    /// frame -> the base's body frame).
    bases: BTreeMap<FrameId, FrameId>,
    /// [`order::bind_order`] of each block, by the address of its first statement (the
    /// syntax trees do not move while elaborating).
    bind_orders: BTreeMap<usize, std::rc::Rc<Vec<String>>>,
    /// The ordering analysis found a cycle: recursion met during elaboration is a
    /// consequence of it and is not reported again.
    static_recursion: bool,
    /// The `include` statements being elaborated, outermost first.
    include_chain: Vec<Span>,
    /// How many calls of `func` statements and class instances are being elaborated, one
    /// inside the other (see [`MAX_NESTING`]).
    nesting: u32,
    /// [`MAX_NESTING`] was reached and reported (once).
    too_deep: bool,
    /// What was declared and what was used, for the unused-name warnings.
    usage: usage::Usage,
    /// The value (and condition) node of each defaults entry, by the entry's address and
    /// the frame of its block: made once, shared by every resource the default applies to.
    default_nodes: BTreeMap<(usize, FrameId), (NodeId, Option<NodeId>)>,
    /// Whether any block declared defaults (resources look for them only then).
    any_defaults: bool,
    /// Whether any frame declared a defined type (resource statements look for them only
    /// then).
    any_defines: bool,
    /// Resolved type declarations ([`types`]), indexed by [`frame::TypeEntry::state`].
    declared: Vec<types::Declared<'a>>,
    /// What each name used resolved to, for editors.
    names: names::Names,
    /// Short string literals and field names, made once each.
    short_strs: expr::ShortStrs,
}

impl<'a> Ctx<'a> {
    fn new_frame(&mut self, frame: Frame<'a>) -> FrameId {
        self.frames.push(frame);
        FrameId(self.frames.len() as u32 - 1)
    }

    fn frame(&self, id: FrameId) -> &Frame<'a> {
        &self.frames[id.0 as usize]
    }

    fn frame_mut(&mut self, id: FrameId) -> &mut Frame<'a> {
        &mut self.frames[id.0 as usize]
    }

    /// A placeholder node where an error was reported.
    fn error_node(&mut self, span: Span) -> NodeId {
        self.graph.add(NodeKind::Const(Value::Bool(false)), span)
    }

    fn error(&mut self, d: Diagnostic) {
        if !self.suppressed.contains(&(d.message.clone(), d.span)) {
            self.diags.push(d);
        }
    }

    /// Enters one more level of calls and includes, for `what` (``func `f` ``) at `span`;
    /// false, with the error reported once, past [`MAX_NESTING`]. A `true` must be matched
    /// by [`Ctx::leave`].
    fn enter(&mut self, span: Span, what: impl FnOnce() -> String) -> bool {
        if self.nesting >= MAX_NESTING {
            if !self.too_deep {
                self.too_deep = true;
                self.error(
                    Diagnostic::new(
                        Stage::SetScope,
                        format!("{} nests too deeply: more than {MAX_NESTING} levels of calls and includes", what()),
                        span,
                    )
                    .with_code(Code::TooDeep)
                    .with_note(format!(
                        "each call of a `func` statement and each `include` is elaborated inside the one that \
                         reaches it; a chain longer than {MAX_NESTING} is refused rather than risk the process's stack"
                    )),
                );
            }
            return false;
        }
        self.nesting += 1;
        true
    }

    fn leave(&mut self) {
        self.nesting -= 1;
    }

    /// Reports a recursion found while elaborating, unless the ordering analysis already
    /// reported the cycle.
    fn recursion(&mut self, span: Span) {
        if !self.static_recursion {
            self.static_recursion = true;
            self.error(
                Diagnostic::new(Stage::SetScope, "recursive reference while setting scope: not a dag", span)
                    .with_code(Code::ScopeRecursion),
            );
        }
    }

    /// Looks `name` up in namespace `ns`, starting at `start` and going outwards.
    fn find(&mut self, start: FrameId, ns: Ns, name: &str) -> Option<Hit> {
        let mut cur = Some(start);
        while let Some(f) = cur {
            if self.frame(f).has(ns, name) {
                if ns == Ns::Var {
                    self.usage.used_var(f, name);
                }
                return Some(Hit::Entry(f, name.to_string()));
            }
            if let Some((head, rest)) = name.split_once('.')
                && let Some(alias) = self.frame(f).aliases.get(head).cloned()
                && let Some(hit) = self.find_via(f, head, alias, ns, rest)
            {
                self.usage.used_alias(f, head);
                return Some(hit);
            }
            let stars = self.frame(f).stars.clone();
            for alias in stars.into_iter().rev() {
                if let Some(hit) = self.find_via(f, "*", alias, ns, name) {
                    return Some(hit);
                }
            }
            cur = self.frame(f).parent;
        }
        match ns {
            Ns::Var => self.catalog.constant(name).map(|v| Hit::Const(v.clone())),
            Ns::Func if !name.contains('.') && !name.contains('/') => {
                self.catalog.func(name).map(|_| Hit::Builtin(name.to_string()))
            }
            _ => None,
        }
    }

    /// Looks `rest` up behind an alias defined in `owner`.
    fn find_via(&mut self, owner: FrameId, alias_name: &str, alias: AliasEntry<'a>, ns: Ns, rest: &str) -> Option<Hit> {
        match alias {
            AliasEntry::System(pkg) => {
                let full = format!("{pkg}.{rest}");
                match ns {
                    Ns::Var => self.catalog.constant(&full).map(|v| Hit::Const(v.clone())),
                    Ns::Func => self.catalog.func(&full).map(|_| Hit::Builtin(full)),
                    Ns::Class | Ns::Type => None,
                }
            }
            AliasEntry::Frame(fid) => match self.find(fid, ns, rest) {
                // Through an import, the module's private names are not for us.
                Some(Hit::Entry(f, key)) if f == fid => match self.frame(f).private.get(&(ns, key.clone())) {
                    Some(decl) => Some(Hit::Private(*decl, f, key)),
                    None => Some(Hit::Entry(f, key)),
                },
                other => other,
            },
            AliasEntry::Include { .. } => match self.force_include(owner, alias_name) {
                Some(fid) => self.find(fid, ns, rest),
                None => Some(Hit::Silent),
            },
            AliasEntry::Failed => Some(Hit::Silent),
        }
    }

    /// Every name visible from `start` in a namespace (for did-you-mean).
    fn visible(&self, start: FrameId, ns: Ns) -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = Some(start);
        while let Some(f) = cur {
            let frame = self.frame(f);
            out.extend(frame.names(ns));
            for (alias, entry) in &frame.aliases {
                match entry {
                    AliasEntry::System(pkg) if ns == Ns::Func => {
                        out.extend(self.catalog.package_funcs(pkg).map(|(n, _)| format!("{alias}.{n}")))
                    }
                    AliasEntry::Frame(fid) => {
                        let frame = self.frame(*fid);
                        let public =
                            frame.names(ns).into_iter().filter(|n| !frame.private.contains_key(&(ns, n.clone())));
                        out.extend(public.map(|n| format!("{alias}.{n}")))
                    }
                    _ => {}
                }
            }
            cur = frame.parent;
        }
        match ns {
            Ns::Var => out.extend(self.catalog.constants().map(|(n, _)| n.clone())),
            Ns::Func => out.extend(
                self.catalog.funcs().filter(|d| !d.name.contains('.') && !d.name.contains('/')).map(|d| d.name.clone()),
            ),
            Ns::Class | Ns::Type => {}
        }
        out
    }

    /// [`Ctx::find`] for a use at `span`: a private name of another module is reported
    /// (and resolves silently); one of the module the use is in is an ordinary entry.
    fn find_admitted(&mut self, start: FrameId, ns: Ns, name: &str, span: Span) -> Option<Hit> {
        let hit = self.find(start, ns, name);
        if let Some(hit) = &hit {
            self.names.found(&self.frames, self.sources, ns, span, name, hit);
        }
        match hit {
            Some(Hit::Private(decl, owner, key)) => {
                let module = |file| self.module_roots.get(&file);
                if module(decl.file).is_some() && module(decl.file) == module(span.file) {
                    return Some(Hit::Entry(owner, key));
                }
                self.private_use(ns, name, decl, span);
                Some(Hit::Silent)
            }
            other => other,
        }
    }

    /// The error for a use of another module's private name.
    fn private_use(&mut self, ns: Ns, name: &str, decl: Span, span: Span) {
        let shown = if ns == Ns::Var { format!("${name}") } else { name.to_string() };
        let d = Diagnostic::new(
            Stage::SetScope,
            format!(
                "{} `{shown}` is private to its module: declared `private` at {}",
                ns.word(),
                self.sources.byline(decl)
            ),
            span,
        )
        .with_code(Code::PrivateName)
        .with_label(decl, "declared private here")
        .with_note("a `private` name is usable only inside its module (its directory, or its file when the import names a file)");
        self.error(d);
    }

    /// The "does not exist" error for a name, with suggestions.
    fn unknown(&mut self, start: FrameId, ns: Ns, name: &str, span: Span) {
        let shown = if ns == Ns::Var { format!("${name}") } else { name.to_string() };
        let mut d =
            Diagnostic::new(Stage::SetScope, format!("{} `{shown}` does not exist in this scope", ns.word()), span)
                .with_code(Code::UnknownName);
        let close = crate::suggest::closest(name, self.visible(start, ns));
        if !close.is_empty() {
            let list: Vec<String> =
                close.iter().map(|c| if ns == Ns::Var { format!("`${c}`") } else { format!("`{c}`") }).collect();
            d = d.with_note(format!("did you mean {}?", list.join(" or ")));
        }
        // The import note only when the package's functions are not in scope already (a
        // misspelt function of an imported package gets the did-you-mean alone).
        if let Some((head, _)) = name.rsplit_once('.')
            && ns == Ns::Func
            && self.catalog.has_package(head)
            && !self.visible(start, ns).iter().any(|v| v.strip_prefix(head).is_some_and(|r| r.starts_with('.')))
        {
            d = d.with_note(format!("`{head}` is a system package: add `import \"{head}\"` to this file"));
        }
        self.error(d);
    }

    /// The top frame of an imported module, built on first use by the import statement at
    /// `import_span` (written `path`). Errors found while building it (its binds and the
    /// funcs nothing called) fail that import: they are wrapped as
    /// ``local import of `path` failed: ...`` at the import statement.
    fn module_frame(&mut self, module: usize, import_span: Span, path: &str) -> Option<FrameId> {
        match self.modules.get(&module).copied().unwrap_or(Lazy::Pending) {
            Lazy::Done(fid) => Some(fid),
            Lazy::Active => None,
            Lazy::Pending => {
                self.modules.insert(module, Lazy::Active);
                let before = self.diags.len();
                let fid = self.new_frame(Frame::child(FrameId(0)));
                // A module's top-level binds are what it offers its importers.
                self.usage.exports(fid);
                let stmts = &self.files[module].stmts;
                self.declare(fid, stmts);
                self.modules.insert(module, Lazy::Done(fid));
                self.force_binds_in_order(fid, stmts);
                self.finish(fid);
                self.wrap_import_errors(before, import_span, path);
                Some(fid)
            }
        }
    }

    /// Rewrites the diagnostics pushed since `before` as failures of one import.
    fn wrap_import_errors(&mut self, before: usize, import_span: Span, path: &str) {
        let mut items = std::mem::take(&mut self.diags).into_vec();
        let inner: Vec<Diagnostic> = items.split_off(before.min(items.len()));
        for d in items {
            self.diags.push(d);
        }
        for d in inner {
            self.suppressed.insert((d.message.clone(), d.span));
            let quoted = match d.span {
                Some(span) => format!("{}: {}", d.message, self.sources.byline(span)),
                None => d.message.clone(),
            };
            let mut wrapped =
                Diagnostic::new(Stage::SetScope, format!("local import of `{path}` failed: {quoted}"), import_span)
                    .with_code(Code::ImportFailed);
            if let Some(span) = d.span {
                wrapped = wrapped.with_label(span, d.message.clone());
            }
            wrapped.labels.extend(d.labels);
            wrapped.notes.extend(d.notes);
            self.diags.push(wrapped);
        }
    }
}
