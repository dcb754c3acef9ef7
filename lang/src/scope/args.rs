//! Binding the arguments of a call or include to the params of a `func` statement or
//! class: positional arguments left to right, named ones (`name => value`) by name, the
//! rest from the params' defaults, each default elaborated with the params to its left
//! in scope.

use super::Ctx;
use super::frame::{FrameId, VarEntry};
use crate::diag::{Code, Diagnostic, Stage};
use crate::ir::{NodeId, NodeKind};
use crate::span::{SourceMap, Span};
use crate::syntax::ast::{self, ExprKind};

/// The arguments of one call or include, elaborated in the caller's frame.
pub(super) struct Args<'a> {
    pub(super) positional: Vec<NodeId>,
    /// `name => value`: the name and the value's node.
    pub(super) named: Vec<(&'a ast::Ident, NodeId)>,
}

impl Args<'_> {
    /// Whether a call of a callee with `params` is in mgmt's own form: positional
    /// arguments only and no param with a default. A wrong count then gets mgmt's error.
    pub(super) fn mgmt_form(&self, params: &[ast::Param]) -> bool {
        self.named.is_empty() && params.iter().all(|p| p.default.is_none() && p.repeated.is_none())
    }
}

/// What is being called, for messages: `func` or `class`, and its name.
#[derive(Clone, Copy)]
pub(super) struct Callee<'n> {
    pub(super) word: &'static str,
    pub(super) name: &'n ast::Ident,
    /// A func's declared return type.
    pub(super) ret: Option<&'n ast::TypeAnn>,
}

impl<'a> Ctx<'a> {
    /// Elaborates arguments in `fid`, in source order.
    pub(super) fn args(&mut self, fid: FrameId, args: &'a [ast::Expr]) -> Args<'a> {
        let mut out = Args { positional: Vec::with_capacity(args.len()), named: Vec::new() };
        for arg in args {
            match &arg.kind {
                ExprKind::Named { name, value } => {
                    let node = self.expr(fid, value);
                    out.named.push((name, node));
                }
                _ => out.positional.push(self.expr(fid, arg)),
            }
        }
        out
    }

    /// Reports named arguments given to something that has no param names (a built-in, a
    /// lambda value); returns whether there were any.
    pub(super) fn reject_named(&mut self, args: &Args<'a>, what: &str) -> bool {
        for (name, _) in &args.named {
            self.error(
                Diagnostic::new(Stage::SetScope, format!("{what} takes no named arguments"), name.span)
                    .with_code(Code::CallArgs)
                    .with_note("named arguments (`name => value`) are for `func` statements and classes"),
            );
        }
        !args.named.is_empty()
    }

    /// Binds `params` in `frame` (a fresh child of the callee's defining frame) to `args`,
    /// defaults filling the rest. A param's type annotation is put on its node, which is
    /// then checked by unification whether or not the body uses it. Returns false, after
    /// reporting why, when the arguments do not fit.
    pub(super) fn bind_params(
        &mut self,
        frame: FrameId,
        callee: Callee<'_>,
        params: &'a [ast::Param],
        args: Args<'a>,
        span: Span,
    ) -> bool {
        let mut given: Vec<Option<NodeId>> = vec![None; params.len()];
        let mut problems: Vec<(String, Span)> = Vec::new();
        // A repeated last param takes every positional argument past the others, as a list.
        let (_, fixed, repeats) = arity(params);
        if repeats && args.positional.len() > fixed {
            let extras = args.positional[fixed..].to_vec();
            let at = self.graph.node(extras[0]).span.to(self.graph.node(extras[extras.len() - 1]).span);
            given[fixed] = Some(self.graph.add(NodeKind::List(extras), at));
        } else if args.positional.len() > params.len() {
            let message = format!(
                "too many arguments for {} `{}`: it takes {}, {} given",
                callee.word,
                callee.name.name,
                params.len(),
                args.positional.len()
            );
            problems.push((message, span));
        }
        for (slot, node) in given.iter_mut().zip(&args.positional).take(fixed) {
            *slot = Some(*node);
        }
        for (name, node) in &args.named {
            match params.iter().position(|p| p.name.name[..] == name.name[..]) {
                Some(i) if given[i].is_some() => {
                    problems.push((format!("`${}` is given twice", name.name), name.span));
                }
                Some(i) => given[i] = Some(*node),
                None => {
                    let mut message = format!("{} `{}` has no param `${}`", callee.word, callee.name.name, name.name);
                    let names = params.iter().map(|p| p.name.name.as_str());
                    if let Some(close) = crate::suggest::did_you_mean(&name.name, names) {
                        message.push_str(&format!(" (did you mean `{close}`?)"));
                    }
                    problems.push((message, name.span));
                }
            }
        }
        let mut missing = Vec::new();
        for (param, slot) in params.iter().zip(&given) {
            let node = match (slot, &param.default) {
                (Some(node), _) => *node,
                (None, _) if param.repeated.is_some() => self.graph.add(NodeKind::List(Vec::new()), span),
                (None, Some(default)) => self.expr(frame, default),
                (None, None) => {
                    missing.push(format!("`${}`", param.name.name));
                    self.error_node(param.name.span)
                }
            };
            let node = match &param.body_ann() {
                Some(ann) => {
                    self.graph.checked.push(node);
                    self.annotate(frame, node, ann, Some(&format!("${}", param.name.name)))
                }
                None => node,
            };
            self.frame_mut(frame).vars.insert(param.name.name.clone(), VarEntry::Node(node, Some(param.name.span)));
            self.usage.param(frame, &param.name);
        }
        if !missing.is_empty() {
            let noun = if missing.len() == 1 { "argument" } else { "arguments" };
            let message = format!("missing {noun} {} for {} `{}`", missing.join(", "), callee.word, callee.name.name);
            problems.push((message, span));
        }
        if problems.is_empty() {
            return true;
        }
        let signature = signature(self.sources, callee, params);
        for (message, at) in problems {
            self.error(
                Diagnostic::new(Stage::SetScope, message, at)
                    .with_code(Code::CallArgs)
                    .with_label(callee.name.span, format!("{} defined here", callee.word))
                    .with_note(format!("signature: {signature}")),
            );
        }
        false
    }
}

/// `name($a int, $b int = $a * 2) int`, defaults as written.
/// How many arguments `params` take: those without a default, those that are not the
/// repeated one, and whether the last repeats.
pub(super) fn arity(params: &[ast::Param]) -> (usize, usize, bool) {
    let required = params.iter().filter(|p| p.default.is_none() && p.repeated.is_none()).count();
    let fixed = params.iter().filter(|p| p.repeated.is_none()).count();
    (required, fixed, fixed < params.len())
}

/// How many arguments `params` take, as the function API writes it: `{2}`, `{1,3}`, `{1,}`.
pub(super) fn arg_count(params: &[ast::Param]) -> String {
    let (required, fixed, repeats) = arity(params);
    match (repeats, required == fixed) {
        (true, _) => format!("{{{required},}}"),
        (false, true) => format!("{{{required}}}"),
        (false, false) => format!("{{{required},{fixed}}}"),
    }
}

pub(super) fn signature(sources: &SourceMap, callee: Callee<'_>, params: &[ast::Param]) -> String {
    let params: Vec<String> = params
        .iter()
        .map(|p| {
            let mut out = format!("${}", p.name.name);
            if let Some(ann) = &p.ann {
                let dots = if p.repeated.is_some() { "..." } else { "" };
                out.push_str(&format!(" {dots}{}", ann.ty));
            }
            if let Some(default) = &p.default {
                out.push_str(&format!(" = {}", sources.snippet(default.span)));
            }
            out
        })
        .collect();
    match callee.ret {
        Some(ret) => format!("{}({}) {}", callee.name.name, params.join(", "), ret.ty),
        None => format!("{}({})", callee.name.name, params.join(", ")),
    }
}
