//! The names a program declares and never uses: a bind nothing reads (mgmt does not even
//! type-check it, so a mistake in it goes unnoticed), an import nothing refers to, a param
//! of a func or class its body ignores; a bind that hides an outer one of the same name; and
//! an `include` of a class that adds nothing.
//! Recorded while elaborating; turned into warnings once scope resolution found no error.

use std::collections::{BTreeMap, HashSet};

use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::span::Span;
use crate::syntax::ast;

use super::frame::FrameId;

#[derive(Default)]
pub(super) struct Usage {
    /// Every bind declared outside a module's top level, by frame and name (a class body
    /// declares its binds once per include).
    binds: Vec<(FrameId, String, Span)>,
    /// Every named import, by frame and alias.
    imports: Vec<(FrameId, String, Span)>,
    /// Every param of a func statement or class, by the frame of one call or include.
    params: Vec<(FrameId, String, Span)>,
    /// Binds that hide an outer variable of the same name (with the outer bind's name, when
    /// it is a bind and not a param or loop variable).
    shadows: BTreeMap<Span, (String, Option<Span>)>,
    /// `include` statements (without `as`) whose class produced nothing, with the class.
    empty_includes: BTreeMap<Span, String>,
    /// Top frames of imported modules: their binds are for importers.
    exports: HashSet<FrameId>,
    vars: HashSet<(FrameId, String)>,
    aliases: HashSet<(FrameId, String)>,
}

impl Usage {
    pub(super) fn bind(&mut self, frame: FrameId, name: &ast::Ident) {
        if !self.exports.contains(&frame) {
            self.binds.push((frame, name.name.clone(), name.span));
        }
    }

    pub(super) fn import(&mut self, frame: FrameId, alias: &str, span: Span) {
        self.imports.push((frame, alias.to_string(), span));
    }

    pub(super) fn param(&mut self, frame: FrameId, name: &ast::Ident) {
        self.params.push((frame, name.name.clone(), name.span));
    }

    pub(super) fn shadow(&mut self, name: &ast::Ident, outer: Option<Span>) {
        self.shadows.entry(name.span).or_insert((name.name.clone(), outer));
    }

    pub(super) fn empty_include(&mut self, span: Span, class: &str) {
        self.empty_includes.entry(span).or_insert_with(|| class.to_string());
    }

    pub(super) fn exports(&mut self, frame: FrameId) {
        self.exports.insert(frame);
    }

    pub(super) fn used_var(&mut self, frame: FrameId, name: &str) {
        self.vars.insert((frame, name.to_string()));
    }

    pub(super) fn used_alias(&mut self, frame: FrameId, alias: &str) {
        self.aliases.insert((frame, alias.to_string()));
    }

    /// One warning per declaration no elaboration of it used, in source order.
    pub(super) fn warnings(&self) -> Diagnostics {
        let mut out: Vec<Diagnostic> = Vec::new();
        for (span, name) in unused(&self.binds, &self.vars) {
            out.push(
                Diagnostic::warn(Stage::SetScope, format!("unused variable `${name}`"), span)
                    .with_code(Code::UnusedBind)
                    .with_note("nothing uses it, so it is not type-checked either; remove it or use it"),
            );
        }
        for (span, alias) in unused(&self.imports, &self.aliases) {
            out.push(
                Diagnostic::warn(Stage::SetScope, format!("unused import `{alias}`"), span)
                    .with_code(Code::UnusedImport)
                    .with_note(format!("nothing refers to `{alias}.`; remove the import")),
            );
        }
        for (span, name) in unused(&self.params, &self.vars) {
            out.push(
                Diagnostic::warn(Stage::SetScope, format!("unused parameter `${name}`"), span)
                    .with_code(Code::UnusedParam)
                    .with_note("the body never reads it; remove it, or use it"),
            );
        }
        for (span, (name, outer)) in &self.shadows {
            let mut d = Diagnostic::warn(Stage::SetScope, format!("`${name}` hides an outer `${name}`"), *span)
                .with_code(Code::ShadowedBind)
                .with_note(format!("inside this block `${name}` is this bind, everywhere in it; rename one of them"));
            if let Some(outer) = outer {
                d = d.with_label(*outer, "the outer one");
            }
            out.push(d);
        }
        for (span, class) in &self.empty_includes {
            out.push(
                Diagnostic::warn(Stage::SetScope, format!("`include {class}` adds nothing"), *span)
                    .with_code(Code::EmptyInclude)
                    .with_note(format!(
                        "class `{class}` declares no resource, edge or check here; to read its binds, name the instance: `include {class} as NAME`"
                    )),
            );
        }
        out.sort_by_key(|d| d.span.map(|s| (s.file, s.start)));
        out.into_iter().collect()
    }
}

/// The declarations (by frame, name and span) that no instance used: a declaration is
/// used when any elaboration of it is (a class included twice declares its binds twice).
fn unused<'u>(decls: &'u [(FrameId, String, Span)], used: &HashSet<(FrameId, String)>) -> Vec<(Span, &'u str)> {
    let mut by_span: BTreeMap<Span, (&str, bool)> = BTreeMap::new();
    for (frame, name, span) in decls {
        let seen = used.contains(&(*frame, name.clone()));
        by_span.entry(*span).or_insert((name, false)).1 |= seen;
    }
    by_span.into_iter().filter(|(_, (_, seen))| !seen).map(|(span, (name, _))| (span, name)).collect()
}
