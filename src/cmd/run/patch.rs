//! Live edits that change only some resources' params: the changed statements are
//! compiled, evaluated and interpreted alone, and the running graph is patched
//! (`Engine::patch`), instead of compiling, interpreting and swapping the whole program.
//!
//! When: the program is one file whose last output is applied (no streams, nothing
//! collected from other hosts), with no defaults, overrides or collectors, and the edit
//! changed only standalone resource statements without changing their identity (kind,
//! name, metaparams, the params automatic edges read): see `lang::incremental`. Anything
//! else (and any error, which the whole compile then reports with its context) compiles
//! the whole program, as before.

use std::sync::Arc;
use std::time::Duration;

use lang::incremental::{Edit, Outline};
use lang::loader::Loader;

use super::{Runner, print_warnings, tell, watch_code};

/// How long the changed statements may take to evaluate (they hold literals only).
const EVALUATION: Duration = Duration::from_secs(10);

/// What came of an attempt to patch.
pub(super) enum Patched {
    /// The running graph holds the edit; the new text's outline.
    Applied(Outline),
    /// Nothing to do now: the same text, a save in progress (its end reloads again), or
    /// an edit the engine rejected (reported; the running graph stays).
    Kept,
    /// Compile the whole program.
    Whole,
}

impl Runner {
    /// Patches the running graph with an edit of the program whose outline is `outline`.
    pub(super) async fn patch(&mut self, outline: &Outline, watcher: &mut Option<watch_code::CodeWatcher>) -> Patched {
        let loader = crate::loader::FsLoader::leased(&self.program);
        let Some(text) = loader.read(&self.program.entry) else { return Patched::Whole };
        if loader.busy() {
            tracing::debug!("a source file was still open for writing; waiting for that save to end");
            return Patched::Kept;
        }
        if watcher.as_mut().is_some_and(|w| w.changed_meanwhile()) {
            tracing::debug!("the sources changed while they were read; waiting for that save to settle");
            return Patched::Kept;
        }
        let (snippet, statements, next) = match outline.edit(&text, &self.catalog) {
            Edit::Same => {
                tracing::debug!("the program's text is what runs");
                return Patched::Kept;
            }
            Edit::Whole => return Patched::Whole,
            // Only the text between statements changed.
            Edit::Resources { statements: 0, outline, .. } => return Patched::Applied(outline),
            Edit::Resources { snippet, statements, outline } => (snippet, statements, outline),
        };
        let mem = lang::loader::MemLoader::new().with(&self.program.entry, &snippet);
        let mut compiled = lang::pipeline::compile(&self.program.entry, &mem, &self.catalog);
        crate::loader::name_files(&mut compiled.sources, &self.program);
        let graph = match compiled.graph {
            Some(g) if compiled.diagnostics.is_empty() => g,
            _ => return Patched::Whole,
        };
        if self.style.show {
            print_warnings(&compiled.warnings.into_vec(), &compiled.sources);
        }
        let output =
            funcs::runtime::first_output(Arc::new(graph), self.registry.clone(), self.funcs_host.clone(), EVALUATION);
        let Ok(output) = output.await else { return Patched::Whole };
        if output.resources.len() != statements || !output.rejected.is_empty() {
            return Patched::Whole;
        }
        // Their automatic edges among themselves are already running (their identities
        // are unchanged): only the vertices count.
        let Ok(interpreted) = crate::compile::interpreted(&output, &self.catalog) else { return Patched::Whole };
        // A resource that may be grouped belongs to a vertex only the whole graph decides.
        if interpreted.vertices.iter().any(|v| resources::contract::group::may_group(&v.kind)) {
            return Patched::Whole;
        }
        let Ok(mut candidate) = resources::contract::graph::to_engine(&self.host, interpreted, self.noop) else {
            return Patched::Whole;
        };
        if self.metrics_addr.is_some() {
            crate::observe::timing::time_check_applies(&mut candidate, &self.metrics);
        }
        if let Some(w) = watcher.as_mut()
            && let Some((_, file)) = compiled.sources.files().next()
        {
            w.compiled(&self.program.root, file, &text);
        }
        tracing::info!(statements, "compiled the changed resources alone; patching the running graph");
        match self.engine.patch(candidate.vertices).await {
            Ok(_) => {
                self.swaps += 1;
                Patched::Applied(next)
            }
            Err(e) => {
                self.metrics.swap_rejected();
                crate::stderr::line(format_args!("error: the new resource graph was rejected: {e}"));
                tell("the running graph stays");
                Patched::Kept
            }
        }
    }
}
