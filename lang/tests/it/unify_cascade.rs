//! Consequences of a type error are not reported again: a clash with a type an earlier
//! error poisoned stays quiet, while independent errors are all reported.

use crate::unify_support as support;

use lang::diag::Stage;
use lang::loader::MemLoader;
use lang::pipeline::compile;

fn unify_errors(src: &str) -> Vec<(String, String)> {
    let loader = MemLoader::new().with("/main.mcl", src);
    let out = compile("/main.mcl", &loader, &support::catalog());
    out.diagnostics
        .iter()
        .map(|d| {
            assert_eq!(d.stage, Stage::Unify, "{d:#?}");
            let at = d.span.map(|s| out.sources.byline(s).to_string()).unwrap_or_default();
            (d.message.clone(), at)
        })
        .collect()
}

#[test]
fn a_bind_poisoned_by_an_error_is_not_reported_again_where_it_is_used() {
    let errors = unify_errors("$x = 3\n$y = $x + \"a\"\ntest [$y] {}\n");
    assert_eq!(errors, vec![("type error: int != str".to_string(), "/main.mcl @ 2:6-2:14".to_string())]);
}

#[test]
fn independent_errors_are_all_reported() {
    let errors = unify_errors("$x = 3\n$y = $x + \"a\"\n$z = \"b\" + true\ntest [$y, $z] {}\n");
    let messages: Vec<&str> = errors.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(messages, ["type error: int != str", "type error: str != bool"]);
}
