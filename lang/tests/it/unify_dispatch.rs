//! Overloaded funcs and calls no signature takes: the function API's "mismatched
//! arguments" error with the signatures and the actual types, and which overload a call
//! picks.

use crate::unify_support as support;

use lang::diag::{Diagnostic, Stage};
use lang::ir::NodeKind;
use lang::loader::MemLoader;
use lang::pipeline::compile;

fn diags(src: &str) -> Vec<Diagnostic> {
    let loader = MemLoader::new().with("/main.mcl", src);
    compile("/main.mcl", &loader, &support::catalog()).diagnostics.into_vec()
}

const MIN: &str = "func min($a int, $b int) int { $a }\nfunc min($s1 str, $s2 str) str { $s1 }\n";

#[test]
fn no_overload_fits_lists_every_signature_and_the_actual_types() {
    let d = diags(&format!("{MIN}$x = min(3, true)\ntest \"${{x}}\" {{}}\n"));
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0].stage, Stage::Unify);
    assert_eq!(d[0].message, "function `min` called with mismatched arguments");
    assert_eq!(
        d[0].notes,
        ["expected one of:\n  min($a int, $b int) int\n  min($s1 str, $s2 str) str", "actual:\n  min(int, bool)"]
    );
}

#[test]
fn a_wrong_count_is_told_at_the_call_with_the_signatures() {
    let d = diags(&format!("{MIN}$x = min(3)\ntest \"${{x}}\" {{}}\n"));
    assert_eq!(d[0].stage, Stage::SetScope);
    assert_eq!(d[0].message, "function `min` called with 1 argument");
    assert!(d[0].notes[0].contains("min($s1 str, $s2 str) str"), "{d:#?}");
}

#[test]
fn the_first_fitting_overload_is_called() {
    let loader = MemLoader::new().with("/main.mcl", &format!("{MIN}$x = min(\"a\", \"b\")\ntest \"${{x}}\" {{}}\n"));
    let out = compile("/main.mcl", &loader, &support::catalog());
    assert!(out.diagnostics.is_empty(), "{:#?}", out.diagnostics);
    let graph = out.graph.expect("a graph");
    // The dispatch became a call of the second overload's lambda, whose params are strs.
    let calls: Vec<_> = graph
        .nodes
        .iter()
        .filter_map(|n| match &n.kind {
            NodeKind::CallValue { callee, .. } => Some(*callee),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 1);
    let NodeKind::Lambda { params, .. } = &graph.node(calls[0]).kind else { panic!("not a lambda") };
    assert_eq!(graph.params[params[0].0 as usize].name, "s1");
    assert!(!graph.nodes.iter().any(|n| matches!(n.kind, NodeKind::Dispatch { .. })));
}

#[test]
fn a_builtin_given_the_wrong_types_names_its_signature_and_the_argument() {
    let d = diags("import \"strings\"\n$x = strings.to_upper(1)\ntest \"${x}\" {}\n");
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0].message, "function `strings.to_upper` called with mismatched arguments");
    assert!(d[0].notes[0].starts_with("expected:\n  strings.to_upper("), "{d:#?}");
    assert_eq!(d[0].notes[1], "actual:\n  strings.to_upper(int)");
    assert!(d[0].labels.iter().any(|l| l.message.contains("this is `int`")), "{d:#?}");
}

#[test]
fn overloads_need_every_param_typed() {
    let d = diags("func f($a) { $a }\nfunc f($s str) str { $s }\ntest \"t\" {}\n");
    assert_eq!(d[0].stage, Stage::SetScope);
    assert!(d[0].message.contains("duplicate assignment to `func:f`"), "{d:#?}");
    assert!(d[0].notes[0].contains("every param of each is typed"), "{d:#?}");
}
