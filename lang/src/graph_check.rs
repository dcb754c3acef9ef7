//! Structural checks that run after unification, when the function graph is built
//! (errGraph): today, meta params set both one by one (`Meta:x`) and through a whole
//! `Meta => struct{...}` entry of the same resource (spec 3.5.4).

use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::ir::{FuncGraph, IrResource};
use crate::unify::META_PARAMS;

/// Checks every resource statement, including those inside `if` and loop bodies.
pub fn check(graph: &FuncGraph) -> Diagnostics {
    let mut diags = Diagnostics::new();
    crate::provenance::each_resource(graph, |res| check_metas(res, &mut diags));
    diags
}

fn check_metas(res: &IrResource, diags: &mut Diagnostics) {
    let wholes: Vec<_> = res.metas.iter().filter(|m| m.name.is_none()).collect();
    let Some(whole) = wholes.first() else { return };
    for single in res.metas.iter() {
        let Some(name) = &single.name else { continue };
        if !META_PARAMS.iter().any(|(n, _)| n == name) {
            continue;
        }
        let d = Diagnostic::new(Stage::Graph, format!("resource has duplicate meta entry of: {name}"), res.span)
            .with_code(Code::DuplicateMeta)
            .with_label(single.span, format!("`Meta:{name}` is set here"))
            .with_label(whole.span, "and also by this whole `Meta` struct")
            .with_note("set it in the struct, or replace the struct by single `Meta:x` entries");
        diags.push(d);
    }
    if let Some(second) = wholes.get(1) {
        let d = Diagnostic::new(Stage::Graph, "resource has duplicate meta entry of: Meta", res.span)
            .with_code(Code::DuplicateMeta)
            .with_label(whole.span, "the whole `Meta` struct is set here")
            .with_label(second.span, "and again here");
        diags.push(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{IrMeta, IrStmt, NodeKind};
    use crate::span::{FileId, Span};
    use crate::value::Value;

    fn res_with(metas: Vec<(Option<&str>, Span)>) -> (FuncGraph, Span) {
        let mut g = FuncGraph::default();
        let v = g.add(NodeKind::Const(Value::Bool(true)), Span::default());
        let span = Span::new(FileId(0), 0, 100);
        let metas = metas
            .into_iter()
            .map(|(n, s)| IrMeta { name: n.map(String::from), value: v, cond: None, span: s })
            .collect();
        let res = IrResource {
            kind: "test".into(),
            kind_span: span,
            name: v,
            fields: vec![],
            edges: vec![],
            metas,
            collect: false,
            virtuality: Default::default(),
            classes: Vec::new(),
            span,
        };
        g.stmts.push(IrStmt::If { cond: v, then: vec![IrStmt::Resource(res)], els: vec![], span });
        (g, span)
    }

    #[test]
    fn single_meta_also_in_whole_struct_is_a_graph_error() {
        let s1 = Span::new(FileId(0), 10, 20);
        let s2 = Span::new(FileId(0), 30, 40);
        let (g, span) = res_with(vec![(None, s1), (Some("noop"), s2)]);
        let d = check(&g).into_vec();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].stage, Stage::Graph);
        assert_eq!(d[0].message, "resource has duplicate meta entry of: noop");
        assert_eq!(d[0].span, Some(span));
        assert_eq!(d[0].labels.iter().map(|l| l.span).collect::<Vec<_>>(), [s2, s1]);
    }

    #[test]
    fn single_metas_alone_are_fine() {
        let s = Span::default();
        let (g, _) = res_with(vec![(Some("noop"), s), (Some("retry"), s)]);
        assert!(check(&g).is_empty());
        let (g, _) = res_with(vec![(None, s), (None, s)]);
        assert_eq!(check(&g).into_vec()[0].message, "resource has duplicate meta entry of: Meta");
    }
}
