//! Unification and the errGraph checks against the mgmt corpus: every archive of
//! `conformance/{graph,unit-errors,engine}` that gets through scope resolution with this
//! test's catalog is unified. An archive expecting `errUnify`/`errGraph` must fail there
//! with that stage; one expecting a later stage (or a graph) must pass. Archives that fail
//! earlier, or call a function this small catalog does not declare, are skipped (the app's
//! tests run the same corpus with the real catalog).

use crate::corpus_support;

use lang::catalog::{CallSite, Catalog, FuncDecl, ParamDecl, ResourceDecl};
use lang::diag::{Diagnostics, Stage};
use lang::span::SourceMap;
use lang::types::{Type, parse_type};
use lang::value::Value;

/// Built-ins the corpus uses most, with mgmt's signatures.
const FUNCS: &[(&str, &[&str])] = &[
    ("contains", &["func(needle ?1, haystack []?1) bool"]),
    ("concat", &["func(a str, b str) str"]),
    ("list_lookup", &["func(list []?1, index int) ?1"]),
    ("map_lookup", &["func(m map{?1: ?2}, key ?1) ?2"]),
    ("panic_debug", &["func(x bool, err str) bool"]),
    ("iter.map", &["func(inputs []?1, function func(?1) ?2) []?2"]),
    ("iter.filter", &["func(inputs []?1, function func(?1) bool) []?1"]),
    (
        "iter.range",
        &["func(stop int) []int", "func(start int, stop int) []int", "func(start int, stop int, step int) []int"],
    ),
    ("map.lookup", &["func(m map{?1: ?2}, key ?1) ?2"]),
    ("map.keys", &["func(x map{?1: ?2}) []?1"]),
    ("map.values", &["func(x map{?1: ?2}) []?2"]),
    ("list.lookup", &["func(list []?1, index int) ?1"]),
    ("strings.to_upper", &["func(a str) str"]),
    ("convert.int_to_str", &["func(a int) str"]),
    ("datetime.now", &["func() int"]),
    ("sys.getenv", &["func(name str) str"]),
];

fn check_first_arg(t: &Type, ok: fn(&Type) -> bool, what: &str) -> Result<(), String> {
    match t {
        Type::Func(args, _) if args.first().is_some_and(|(_, a)| ok(a)) => Ok(()),
        _ => Err(format!("{what}: got `{t}`")),
    }
}

fn check_len(t: &Type) -> Result<(), String> {
    check_first_arg(
        t,
        |a| matches!(a, Type::Str | Type::List(_) | Type::Map(..)),
        "only str, list and map have a length",
    )
}

fn check_panic(t: &Type) -> Result<(), String> {
    check_first_arg(t, |a| matches!(a, Type::Bool | Type::Str), "panic needs a bool or a str")
}

/// A simplified `fmt.printf` hook: one argument per verb, typed by the verb.
fn printf(site: &CallSite) -> Result<Type, String> {
    let mut args = vec![("format".to_string(), Type::Str)];
    match site.args.first() {
        Some(Some(Value::Str(format))) => {
            let mut chars = format.chars();
            while let Some(c) = chars.next() {
                if c != '%' {
                    continue;
                }
                let ty = match chars.next() {
                    Some('d') => Type::Int,
                    Some('s' | 'q') => Type::Str,
                    Some('t') => Type::Bool,
                    Some('f') => Type::Float,
                    Some('v' | 'T') => Type::Var(args.len() as u32),
                    _ => continue,
                };
                args.push((format!("a{}", args.len()), ty));
            }
            if args.len() != site.args.len() {
                return Err(format!(
                    "number of args ({}) doesn't match format string verb count ({})",
                    site.args.len() - 1,
                    args.len() - 1
                ));
            }
        }
        _ => {
            for i in 1..site.args.len() {
                args.push((format!("a{i}"), Type::Var(i as u32)));
            }
        }
    }
    Ok(Type::Func(args, Box::new(Type::Str)))
}

/// Resource kinds of the corpus (spec 8.5), as the type checker sees them.
/// `(name, type)` pairs of params or send fields.
type Fields = &'static [(&'static str, &'static str)];

/// `(kind, params, sends, can_recv)`.
const KINDS: &[(&str, Fields, Fields, bool)] = &[
    (
        "test",
        &[
            ("bool", "bool"),
            ("str", "str"),
            ("int", "int"),
            ("int8", "int"),
            ("int16", "int"),
            ("int32", "int"),
            ("int64", "int"),
            ("uint", "int"),
            ("uint8", "int"),
            ("uint16", "int"),
            ("uint32", "int"),
            ("uint64", "int"),
            ("byte", "int"),
            ("rune", "int"),
            ("float32", "float"),
            ("float64", "float"),
            ("boolptr", "bool"),
            ("stringptr", "str"),
            ("int64ptr", "int"),
            ("int8ptr", "int"),
            ("uint8ptr", "int"),
            ("int8ptrptrptr", "int"),
            ("slicestring", "[]str"),
            ("mapintfloat", "map{int: float}"),
            ("mixedstruct", "struct{somebool bool; somestr str; someint int; somefloat float}"),
            ("interface", "variant"),
            ("anotherstr", "str"),
            ("func1", "func(int) str"),
            ("validatebool", "bool"),
            ("validateerror", "str"),
            ("alwaysgroup", "bool"),
            ("comparefail", "bool"),
            ("sendvalue", "str"),
            ("expectrecv", "[]str"),
            ("onlyshow", "[]str"),
            ("waitforerror", "int"),
            ("comment", "str"),
        ],
        &[("hello", "str"), ("answer", "int")],
        true,
    ),
    ("print", &[("msg", "str"), ("refresh_only", "bool")], &[], true),
    (
        "file",
        &[
            ("path", "str"),
            ("dirname", "str"),
            ("basename", "str"),
            ("state", "str"),
            ("content", "str"),
            ("source", "str"),
            ("fragments", "[]str"),
            ("owner", "str"),
            ("group", "str"),
            ("mode", "str"),
            ("recurse", "bool"),
            ("force", "bool"),
            ("purge", "bool"),
            ("symlink", "bool"),
            ("selinux", "str"),
        ],
        &[],
        true,
    ),
    ("exec", &[("cmd", "str"), ("args", "[]str"), ("cwd", "str"), ("shell", "str")], &[("output", "str")], false),
    ("value", &[("any", "variant")], &[("any", "variant")], true),
    ("noop", &[("comment", "str")], &[], false),
    ("line", &[("file", "str"), ("state", "str"), ("content", "str"), ("trim", "bool")], &[], false),
    ("pkg", &[("state", "str"), ("allowdowngrade", "bool")], &[], false),
];

fn catalog() -> Catalog {
    let sig = |s: &str| parse_type(s).expect("valid signature");
    let mut c = Catalog::new();
    let decl = |name: &str, sigs: Vec<Type>| FuncDecl { name: name.into(), sigs, infer: None, check: None, doc: "" };
    for (name, sigs) in FUNCS {
        c.add_func(decl(name, sigs.iter().map(|s| sig(s)).collect()));
    }
    c.add_func(FuncDecl { check: Some(check_len), ..decl("len", vec![sig("func(?1) int")]) });
    c.add_func(FuncDecl { check: Some(check_panic), ..decl("panic", vec![sig("func(x ?1) bool")]) });
    c.add_func(FuncDecl { infer: Some(printf), ..decl("fmt.printf", vec![]) });
    for (kind, params, sends, can_recv) in KINDS {
        let p = |fields: &[(&str, &str)]| -> Vec<ParamDecl> {
            fields.iter().map(|(n, t)| ParamDecl::new(*n, sig(t))).collect()
        };
        c.add_resource(ResourceDecl {
            kind: kind.to_string(),
            params: p(params),
            sends: p(sends),
            can_recv: *can_recv,
        });
    }
    corpus_support::add_corpus_constants(&mut c);
    c
}

enum Outcome {
    /// Failed before unification (not this phase's business, or a function this test's
    /// catalog does not declare).
    Earlier,
    Unified(Diagnostics, SourceMap),
}

fn run(sections: &[(String, String)], catalog: &Catalog) -> Outcome {
    let Some((mut graph, diags, sources)) = corpus_support::resolve(sections, catalog) else { return Outcome::Earlier };
    if !diags.is_empty() {
        return Outcome::Earlier;
    }
    let mut diags = lang::unify::unify(&mut graph, catalog);
    if diags.is_empty() {
        diags.extend(lang::graph_check::check(&graph));
    }
    Outcome::Unified(diags, sources)
}

#[test]
fn corpus_unify_stage_matches() {
    let Some(files) = corpus_support::corpus_archives(&["graph", "unit-errors", "engine"]) else { return };
    let catalog = catalog();
    let (mut pass, mut skipped, mut want_fail_ran) = (0, 0, 0);
    let mut failures = Vec::new();
    for path in &files {
        let Some((sections, _, stage)) = corpus_support::archive_with_stage(path) else {
            skipped += 1;
            continue;
        };
        let stage = stage.as_deref();
        if matches!(stage, Some("errLexParse" | "errInit" | "errInterpolate" | "errSetScope")) {
            skipped += 1;
            continue;
        }
        let want = match stage {
            Some("errUnify") => Some(Stage::Unify),
            Some("errGraph") => Some(Stage::Graph),
            _ => None,
        };
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match run(&sections, &catalog) {
            Outcome::Earlier => skipped += 1,
            Outcome::Unified(diags, sources) => {
                want_fail_ran += usize::from(want.is_some());
                let got = diags.first().map(|d| d.stage);
                if got == want && diags.iter().all(|d| Some(d.stage) == want) {
                    pass += 1;
                    if let Some(d) = diags.first() {
                        println!("  {name}: {}", d.one_line(&sources));
                    }
                } else {
                    let first = diags.first().map(|d| d.one_line(&sources)).unwrap_or_default();
                    failures.push(format!("{name} (want {stage:?}): {first}"));
                }
            }
        }
    }
    println!("unify conformance: {pass} passed, {} failed, {skipped} skipped", failures.len());
    for f in &failures {
        println!("  FAIL {f}");
    }
    assert!(failures.is_empty(), "{} archives disagree with the expected stage", failures.len());
    assert!(pass >= 100, "too few archives ran: {pass}");
    assert!(want_fail_ran >= 12, "too few errUnify/errGraph archives ran: {want_fail_ran}");
}
