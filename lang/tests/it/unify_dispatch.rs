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
        [
            "expected one of:\n  min($a int, $b int) int - arg count {2}\n  min($s1 str, $s2 str) str - arg count {2}",
            "actual:\n  min(int, bool) - arg count {2}"
        ]
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

/// The lambda each `CallValue` calls and the number of arguments it is given, in node order.
fn calls(src: &str) -> Vec<(Vec<String>, usize)> {
    let loader = MemLoader::new().with("/main.mcl", src);
    let out = compile("/main.mcl", &loader, &support::catalog());
    assert!(out.diagnostics.is_empty(), "{:#?}", out.diagnostics);
    let graph = out.graph.expect("a graph");
    graph
        .nodes
        .iter()
        .filter_map(|n| match &n.kind {
            NodeKind::CallValue { callee, args } => {
                let NodeKind::Lambda { params, .. } = &graph.node(*callee).kind else { return None };
                let names = params.iter().map(|p| graph.params[p.0 as usize].name.clone()).collect();
                Some((names, args.len()))
            }
            _ => None,
        })
        .collect()
}

const LABEL: &str = "func label($n int, $unit str = \"s\") str { $unit }\n\
                     func label($s str, $parts ...str) str { $s }\n";

#[test]
fn overloads_with_defaults_and_a_repeated_param_take_the_first_that_fits_the_count_and_types() {
    let src = format!(
        "{LABEL}$a = label(5)\n$b = label(5, \"ms\")\n$c = label(\"x\")\n$d = label(\"x\", \"y\", \"z\")\n\
         test [$a, $b, $c, $d] {{}}\n"
    );
    let got = calls(&src);
    // A default fills `$unit` (the lambda takes one param); the repeated `$parts` takes
    // "y" and "z" as one list argument, and nothing when none is left for it.
    assert_eq!(
        got,
        [
            (vec!["n".to_string()], 1),
            (vec!["n".to_string(), "unit".to_string()], 2),
            (vec!["s".to_string()], 1),
            (vec!["s".to_string(), "parts".to_string()], 2)
        ]
    );
}

#[test]
fn a_repeated_param_shows_in_the_signatures_with_the_counts() {
    let d = diags(&format!("{LABEL}$x = label(true, 1)\ntest \"${{x}}\" {{}}\n"));
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(
        d[0].notes,
        [
            "expected one of:\n  label($n int, $unit str = \"s\") str - arg count {1,2}\n  \
             label($s str, $parts ...str) str - arg count {1,}",
            "actual:\n  label(bool, int) - arg count {2}"
        ]
    );
    let none = diags(&format!("{LABEL}$x = label()\ntest \"${{x}}\" {{}}\n"));
    assert_eq!(none[0].message, "function `label` called with 0 arguments");
    let extra = diags(&format!("{LABEL}$x = label(1, \"a\", \"b\")\ntest \"${{x}}\" {{}}\n"));
    assert_eq!(extra[0].message, "function `label` called with mismatched arguments", "{extra:#?}");
}

#[test]
fn a_repeated_param_of_a_plain_func_is_a_list_of_the_arguments_past_the_others() {
    let ok = diags(
        "func sum($a int, $rest ...int) int { $a + len($rest) }\n$x = sum(1) + sum(1, 2, 3)\ntest \"t\" {\n\tint8 => $x,\n}\n",
    );
    assert!(ok.is_empty(), "{ok:#?}");
    let bad =
        diags("func sum($a int, $rest ...int) int { $a }\n$x = sum(1, 2, \"3\")\ntest \"t\" {\n\tint8 => $x,\n}\n");
    assert_eq!(bad.len(), 1, "{bad:#?}");
    assert!(bad[0].message.contains("int != str"), "{bad:#?}");
    for (src, says) in [
        ("func f($a ...int, $b int) int { $b }\n", "only the last param may repeat"),
        ("class c($a ...int) {\n}\n", "only a `func` statement's params may repeat"),
        ("$f = func($a ...int) int { 1 }\n", "only a `func` statement's params may repeat"),
    ] {
        let d = diags(&format!("{src}test \"t\" {{}}\n"));
        assert!(d.iter().any(|d| d.message == says && d.stage == Stage::Init), "{src}: {d:#?}");
    }
}
