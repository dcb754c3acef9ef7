//! What each name written in the program resolved to: the declaration, the built-in, the
//! value's node. Recorded while elaborating for editors (go to definition, references,
//! hover); nothing else reads it.

use crate::ir::NameUse;
use crate::span::{SourceMap, Span};

use super::Hit;
use super::frame::{Frame, FrameId, Lazy, Ns, VarEntry};

#[derive(Default)]
pub(super) struct Names {
    /// Off unless an editor asked: a compile for running does without.
    on: bool,
    uses: Vec<NameUse>,
    /// Variable uses whose node is known only once their bind is elaborated: the index in
    /// `uses`, the frame holding the entry and its key.
    pending: Vec<(usize, FrameId, String)>,
}

impl Names {
    pub(super) fn new(on: bool) -> Names {
        Names { on, ..Names::default() }
    }

    /// Records a use at `at` of a name found as `hit` in namespace `ns`. A variable
    /// interpolated in a string (`"${x}"`, whose use is the whole string) is placed on its name.
    pub(super) fn found(&mut self, frames: &[Frame<'_>], sources: &SourceMap, ns: Ns, at: Span, name: &str, hit: &Hit) {
        if !self.on {
            return;
        }
        let at = within_string(sources, at, name).unwrap_or(at);
        let (decl, builtin) = match hit {
            Hit::Entry(owner, key) | Hit::Private(_, owner, key) => (decl(&frames[owner.0 as usize], ns, key), None),
            Hit::Builtin(name) => (None, Some(name.clone())),
            Hit::Const(_) | Hit::Silent => (None, None),
        };
        if let (Hit::Entry(owner, key), Ns::Var) = (hit, ns) {
            self.pending.push((self.uses.len(), *owner, key.clone()));
        }
        self.uses.push(NameUse { at, decl, builtin, node: None });
    }

    /// Records an import statement at `at` that loaded the file whose first byte is `file`.
    pub(super) fn imported(&mut self, at: Span, file: Span) {
        if !self.on {
            return;
        }
        self.uses.push(NameUse { at, decl: Some(file), builtin: None, node: None });
    }

    /// Every use, in source order and once each (a class included twice resolves its names
    /// twice), with the nodes of the variables filled in.
    pub(super) fn finish(mut self, frames: &[Frame<'_>]) -> Vec<NameUse> {
        for (index, owner, key) in self.pending {
            self.uses[index].node = match frames[owner.0 as usize].vars.get(&key) {
                Some(VarEntry::Node(n, _)) | Some(VarEntry::Bind { state: Lazy::Done(n), .. }) => Some(*n),
                _ => None,
            };
        }
        self.uses.sort_by_key(|u| (u.at.file, u.at.start, u.at.end, u.node));
        self.uses.dedup_by(|a, b| a.at == b.at && a.decl == b.decl);
        self.uses
    }
}

/// The span that declares `key` in a frame's namespace, when the program writes one.
fn decl(frame: &Frame<'_>, ns: Ns, key: &str) -> Option<Span> {
    match ns {
        Ns::Var => match frame.vars.get(key)? {
            VarEntry::Bind { name, .. } => Some(name.span),
            VarEntry::Node(_, span) => *span,
        },
        Ns::Func => frame.funcs.get(key).map(|f| f.name.span),
        Ns::Class => frame.classes.get(key).map(|c| c.name.span),
        Ns::Type => frame.types.get(key).map(|t| t.decl.name.span),
    }
}

/// Where `${name}` names its variable inside the string literal at `at`.
fn within_string(sources: &SourceMap, at: Span, name: &str) -> Option<Span> {
    let text = sources.snippet(at);
    if !text.starts_with('"') {
        return None;
    }
    let start = text.find(&format!("${{{name}}}"))? as u32 + 2;
    Some(Span { start: at.start + start, end: at.start + start + name.len() as u32, ..at })
}
