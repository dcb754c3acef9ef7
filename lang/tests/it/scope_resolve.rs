//! Scope resolution on small programs: error messages and positions, and the shapes of
//! the elaborated function graph (shared binds, inlined funcs and includes, lambdas,
//! loops, imports).

use lang::catalog::Catalog;
use lang::diag::{Diagnostic, Stage};
use lang::ir::{FuncGraph, IrStmt, NodeId, NodeKind};
use lang::loader::MemLoader;
use lang::span::{SourceFile, SourceMap};
use lang::types::Type;
use lang::value::Value;

fn catalog() -> Catalog {
    let names = ["len", "panic", "panic_debug", "fmt.printf", "golang/strings.join", "iter.map", "math.mod"];
    let mut c = super::corpus_support::any_funcs(&names);
    c.add_constant("hostname", Value::str("h1"));
    c.add_constant("const.res.file.state.exists", Value::str("exists"));
    c
}

struct Out {
    graph: FuncGraph,
    diags: Vec<Diagnostic>,
    sources: SourceMap,
}

impl Out {
    /// `message: byline` of every diagnostic, in order.
    fn lines(&self) -> Vec<String> {
        self.diags.iter().map(|d| format!("{}: {}", d.message, self.sources.byline(d.span.unwrap()))).collect()
    }
    fn labels(&self, i: usize) -> Vec<String> {
        self.diags[i].labels.iter().map(|l| self.sources.byline(l.span).to_string()).collect()
    }
    fn ok(&self) -> &Self {
        assert!(self.diags.is_empty(), "unexpected errors: {:?}", self.lines());
        self
    }
    fn kind(&self, id: NodeId) -> &NodeKind {
        &self.graph.node(id).kind
    }
    fn resources(&self) -> Vec<&lang::ir::IrResource> {
        fn walk<'g>(stmts: &'g [IrStmt], out: &mut Vec<&'g lang::ir::IrResource>) {
            for s in stmts {
                match s {
                    IrStmt::Resource(r) => out.push(r),
                    IrStmt::If { then, els, .. } => {
                        walk(then, out);
                        walk(els, out);
                    }
                    IrStmt::For { body, .. } => walk(body, out),
                    _ => {}
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.graph.stmts, &mut out);
        out
    }
    fn count(&self, pred: impl Fn(&NodeKind) -> bool) -> usize {
        self.graph.nodes.iter().filter(|n| pred(&n.kind)).count()
    }
}

fn front(file: lang::span::FileId, text: &str) -> lang::syntax::ast::File {
    let (parsed, diags) = lang::syntax::parse(file, text);
    assert!(diags.is_empty(), "parse errors: {diags:?}");
    let diags = lang::init::check(&parsed);
    assert!(diags.is_empty(), "init errors: {diags:?}");
    let (out, diags) = lang::interpolate::run(parsed);
    assert!(diags.is_empty(), "interpolate errors: {diags:?}");
    out
}

fn resolve_files(files: &[(&str, &str)]) -> Out {
    let mut loader = MemLoader::new();
    for (path, text) in files {
        loader = loader.with(path, text);
    }
    let main_text = files[0].1;
    let mut sources = SourceMap::new();
    let id = sources.add(SourceFile::new(files[0].0, main_text));
    let main = front(id, main_text);
    let (graph, diags) = lang::scope::resolve(main, files[0].0, &loader, &catalog(), &mut sources);
    // Warnings (unused names) are not errors of the stage; `tests/corpus` covers them.
    let diags: Vec<Diagnostic> = diags.into_vec().into_iter().filter(|d| !d.warning).collect();
    assert!(diags.iter().all(|d| d.stage == Stage::SetScope));
    Out { graph, diags, sources }
}

fn resolve(main: &str) -> Out {
    resolve_files(&[("/main.mcl", main)])
}

#[test]
fn unknown_variable_suggests_close_names() {
    let out = resolve("$value = \"a\"\ntest $valeu {}\n");
    assert_eq!(out.lines(), vec!["var `$valeu` does not exist in this scope: /main.mcl @ 2:6-2:12"]);
    assert_eq!(out.diags[0].notes, vec!["did you mean `$value`?".to_string()]);
}

#[test]
fn unknown_func_and_class_messages() {
    let out = resolve("$x = nope(1)\ninclude missing\n");
    assert_eq!(
        out.lines(),
        vec![
            "func `nope` does not exist in this scope: /main.mcl @ 1:6-1:13",
            "class `missing` does not exist in this scope: /main.mcl @ 2:1-2:16",
        ]
    );
}

#[test]
fn package_call_needs_an_import() {
    let out = resolve("$x = fmt.printf(\"a\")\ntest $x {}\n");
    assert_eq!(out.lines(), vec!["func `fmt.printf` does not exist in this scope: /main.mcl @ 1:6-1:21"]);
    assert!(out.diags[0].notes.iter().any(|n| n.contains("import \"fmt\"")), "{:?}", out.diags[0].notes);
}

#[test]
fn import_alias_names_the_full_function() {
    let out = resolve("import \"golang/strings\" as gs\n$x = gs.join([\"a\"], \",\")\ntest $x {}\n");
    out.ok();
    let name = out.resources()[0].name;
    match out.kind(name) {
        NodeKind::Call { func, args } => {
            assert_eq!(func, "golang/strings.join");
            assert_eq!(args.len(), 2);
        }
        other => panic!("expected a call, got {other:?}"),
    }
}

#[test]
fn duplicate_bind_is_an_ordering_error_at_the_later_one() {
    let out = resolve("$x = \"wow\"\n$x = 99\n");
    assert_eq!(
        out.lines(),
        vec!["could not generate ordering: duplicate assignment to `var:x`, have: bind(x): /main.mcl @ 2:1-2:8"]
    );
}

#[test]
fn recursion_is_labelled_at_each_reference_of_the_cycle() {
    let main = "class c2() {\n\t$tmpx = $x\n\t$x = $tmpx + \"wow\"\n}\n";
    let out = resolve(main);
    assert_eq!(out.lines(), vec!["recursive reference while setting scope: not a dag: /main.mcl @ 2:10-2:12"]);
    assert_eq!(out.labels(0), vec!["/main.mcl @ 2:10-2:12", "/main.mcl @ 3:7-3:12"]);
    assert_eq!(out.diags[0].code, Some(lang::diag::Code::ScopeRecursion), "pinned by code, not wording");
}

#[test]
fn recursive_funcs_are_rejected_even_when_never_called() {
    let out = resolve("func f($x) {\n\tg($x)\n}\nfunc g($x) {\n\tf($x)\n}\n");
    assert_eq!(out.diags.len(), 1, "{:?}", out.lines());
    assert_eq!(out.labels(0), vec!["/main.mcl @ 2:2-2:7", "/main.mcl @ 5:2-5:7"]);
}

#[test]
fn recursive_include_through_if_is_rejected() {
    let out = resolve("class c1($n) {\n\tif $n {\n\t\tinclude c1(false)\n\t}\n}\n");
    assert_eq!(out.lines(), vec!["recursive reference while setting scope: not a dag: /main.mcl @ 3:3-3:20"]);
}

#[test]
fn bind_shadowing_itself_in_a_loop_body_is_recursion() {
    let out = resolve("for $i, $v in [1] {\n\t$i = $i\n}\n");
    assert_eq!(out.lines(), vec!["recursive reference while setting scope: not a dag: /main.mcl @ 2:7-2:9"]);
}

#[test]
fn a_bind_used_twice_is_one_node() {
    let out = resolve("$x = \"a\"\ntest $x {}\nprint $x {}\n");
    out.ok();
    let rs = out.resources();
    assert_eq!(rs[0].name, rs[1].name);
}

#[test]
fn a_func_called_twice_is_inlined_twice() {
    let out = resolve("func double($x) {\n\t$x + $x\n}\ntest [double(1)] {}\nprint [double(\"a\")] {}\n");
    out.ok();
    let inlines: Vec<NodeId> = out
        .graph
        .nodes
        .iter()
        .filter_map(|n| match &n.kind {
            NodeKind::Inline { func, body } if func == "double" => Some(*body),
            _ => None,
        })
        .collect();
    assert_eq!(inlines.len(), 2);
    assert_ne!(inlines[0], inlines[1]);
    for body in inlines {
        assert!(matches!(out.kind(body), NodeKind::Op { .. }));
    }
}

#[test]
fn func_annotations_constrain_arguments_and_body() {
    let out = resolve("func f($x int) str {\n\t\"a\"\n}\ntest [f(1)] {}\n");
    out.ok();
    let tys: Vec<String> = out.graph.annotations.iter().map(|a| a.ty.to_string()).collect();
    assert!(tys.contains(&"int".to_string()) && tys.contains(&"str".to_string()), "{tys:?}");
    let int_ann = out.graph.annotations.iter().find(|a| a.ty == Type::Int).unwrap();
    assert!(matches!(out.kind(int_ann.node), NodeKind::Const(Value::Int(1))));
}

#[test]
fn wrong_arity_of_a_func_call_is_left_to_unification() {
    let out = resolve("func f($x) {\n\t$x\n}\ntest [f(1, 2)] {}\n");
    out.ok();
    assert_eq!(out.count(|k| matches!(k, NodeKind::CallValue { .. })), 1);
}

#[test]
fn a_class_included_twice_duplicates_its_statements() {
    let out = resolve("class c($s) {\n\ttest $s {}\n}\ninclude c(\"a\")\ninclude c(\"b\")\n");
    out.ok();
    let rs = out.resources();
    assert_eq!(rs.len(), 2);
    assert_ne!(rs[0].name, rs[1].name);
}

#[test]
fn class_arity_is_checked() {
    let out = resolve("class c1($s) {\n\ttest $s {}\n}\ninclude c1\n");
    assert_eq!(out.lines(), vec!["class `c1` expected 1 args but got 0: /main.mcl @ 4:1-4:11"]);
}

#[test]
fn include_as_exports_vars_funcs_and_classes() {
    let main = "class base($s) {\n\t$v = $s\n\tfunc f() {\n\t\t$v\n\t}\n\tclass inner() {\n\t\t$w = \"w\"\n\t}\n}\n\
                include base(\"x\") as b\ninclude b.inner as i\ntest [$b.v, b.f(), $i.w] {}\n";
    let out = resolve(main);
    out.ok();
    assert_eq!(out.count(|k| matches!(k, NodeKind::Inline { func, .. } if func == "f")), 1);
}

#[test]
fn plain_include_exports_nothing() {
    let out = resolve("class c {\n\tfunc f() {\n\t\t\"hi\"\n\t}\n}\ninclude c\n$x = f()\n");
    assert_eq!(out.lines(), vec!["func `f` does not exist in this scope: /main.mcl @ 7:6-7:9"]);
}

#[test]
fn unused_classes_are_not_checked_but_unused_funcs_and_binds_are() {
    let out = resolve("class c {\n\ttest $nope1 {}\n}\nfunc f() {\n\t$nope2\n}\n$unused = $nope3\n");
    let msgs: Vec<String> = out.diags.iter().map(|d| d.message.clone()).collect();
    assert_eq!(msgs, vec!["var `$nope2` does not exist in this scope", "var `$nope3` does not exist in this scope"]);
}

#[test]
fn every_independent_error_is_reported_in_order() {
    let out = resolve("test $a {}\ntest $b {}\n");
    assert_eq!(out.diags.len(), 2);
    assert!(out.diags[0].message.contains("$a") && out.diags[1].message.contains("$b"));
}

#[test]
fn order_independence_within_a_block() {
    let out = resolve("test $y {}\n$y = $x\n$x = \"a\"\n");
    out.ok();
    assert!(matches!(out.kind(out.resources()[0].name), NodeKind::Const(Value::Str(s)) if &**s == "a"));
}

#[test]
fn inner_blocks_shadow_outer_names() {
    let out = resolve("$x = \"outer\"\nif true {\n\t$x = \"inner\"\n\ttest $x {}\n}\ntest $x {}\n");
    out.ok();
    let names: Vec<String> = out
        .resources()
        .iter()
        .map(|r| match out.kind(r.name) {
            NodeKind::Const(v) => v.to_string(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(names, vec!["\"inner\"", "\"outer\""]);
}

#[test]
fn lambdas_get_fresh_params() {
    let out = resolve("$f = func($x) {\n\t$x\n}\ntest [$f(\"a\"), $f(\"b\")] {}\n");
    out.ok();
    assert_eq!(out.count(|k| matches!(k, NodeKind::Lambda { .. })), 1);
    assert_eq!(out.count(|k| matches!(k, NodeKind::CallValue { .. })), 2);
    let (params, body) = out
        .graph
        .nodes
        .iter()
        .find_map(|n| match &n.kind {
            NodeKind::Lambda { params, body } => Some((params.clone(), *body)),
            _ => None,
        })
        .unwrap();
    assert!(matches!(out.kind(body), NodeKind::Param(p) if *p == params[0]));
}

#[test]
fn loops_bind_their_variables_to_params() {
    let out = resolve("for $i, $v in [\"a\"] {\n\ttest [$v] {}\n}\n");
    out.ok();
    let IrStmt::For { value, kv, body, .. } = &out.graph.stmts[0] else { panic!("expected a loop") };
    assert!(!kv);
    let IrStmt::Resource(r) = &body[0] else { panic!("expected a resource") };
    let NodeKind::List(items) = out.kind(r.name) else { panic!("expected a list") };
    assert!(matches!(out.kind(items[0]), NodeKind::Param(p) if p == value));
}

#[test]
fn panic_with_two_args_is_panic_debug() {
    let out = resolve("panic(true, \"why\")\npanic(false)\n");
    out.ok();
    let funcs: Vec<&str> = out
        .graph
        .stmts
        .iter()
        .map(|s| match s {
            IrStmt::Panic { check, .. } => match out.kind(*check) {
                NodeKind::Call { func, .. } => func.as_str(),
                _ => "?",
            },
            _ => "?",
        })
        .collect();
    assert_eq!(funcs, vec!["panic_debug", "panic"]);
}

#[test]
fn interpolation_of_one_var_is_still_an_interp() {
    let out = resolve("$x = \"a\"\ntest \"${x}\" {}\n");
    out.ok();
    assert!(matches!(out.kind(out.resources()[0].name), NodeKind::Interp(parts) if parts.len() == 1));
}

#[test]
fn constants_are_global() {
    let out = resolve("test $hostname {\n\tstringptr => $const.res.file.state.exists,\n}\n");
    out.ok();
    assert!(matches!(out.kind(out.resources()[0].name), NodeKind::Const(Value::Str(s)) if &**s == "h1"));
}

#[test]
fn local_file_imports_and_their_namespaces() {
    let out = resolve_files(&[
        ("/main.mcl", "import \"y.mcl\" as g\ntest [$g.y, $g.f.x] {}\n"),
        ("/x.mcl", "$x = \"x\"\n"),
        ("/y.mcl", "import \"x.mcl\" as f\n$y = $f.x + \"y\"\n"),
    ]);
    out.ok();
    assert_eq!(out.sources.files().count(), 3);
}

#[test]
fn imports_are_per_file() {
    let out = resolve_files(&[
        ("/main.mcl", "import \"fmt\"\nimport \"lib.mcl\"\ntest [lib.f()] {}\n"),
        ("/lib.mcl", "func f() {\n\tfmt.printf(\"a\")\n}\n"),
    ]);
    assert_eq!(
        out.lines(),
        vec![
            "local import of `lib.mcl` failed: func `fmt.printf` does not exist in this scope: \
             /lib.mcl @ 2:2-2:17: /main.mcl @ 2:1-2:17"
        ]
    );
    assert_eq!(out.labels(0), vec!["/lib.mcl @ 2:2-2:17"]);
}

#[test]
fn errors_in_nested_imports_are_wrapped_once_per_level() {
    let out = resolve_files(&[
        ("/main.mcl", "import \"a.mcl\"\ntest [a.f(), a.f()] {}\n"),
        ("/a.mcl", "import \"b.mcl\"\nfunc f() {\n\tb.g()\n}\n"),
        ("/b.mcl", "func g() {\n\t$nope\n}\n"),
    ]);
    assert_eq!(
        out.lines(),
        vec![
            "local import of `a.mcl` failed: local import of `b.mcl` failed: var `$nope` does not exist in this \
             scope: /b.mcl @ 2:2-2:7: /a.mcl @ 1:1-1:15: /main.mcl @ 1:1-1:15"
        ]
    );
}

#[test]
fn module_directories_use_metadata_main() {
    let out = resolve_files(&[
        ("/main.mcl", "import \"mod1/\"\ntest [$mod1.x] {}\n"),
        ("/mod1/metadata.yaml", "main: \"start.mcl\"\n"),
        ("/mod1/start.mcl", "import \"other.mcl\"\n$x = $other.y\n"),
        ("/mod1/other.mcl", "$y = \"y\"\n"),
    ]);
    out.ok();
}

#[test]
fn import_failures_wrap_the_inner_error() {
    let out = resolve_files(&[("/main.mcl", "import \"foo.mcl\"\n"), ("/foo.mcl", "$x = \"a\"\ntest \"t\" {}\n")]);
    assert_eq!(
        out.lines(),
        vec![
            "local import of `foo.mcl` failed: module contains unused statements: found stmt: res(test): /foo.mcl @ 2:1-2:12: /main.mcl @ 1:1-1:17"
        ]
    );
    assert_eq!(out.labels(0), vec!["/foo.mcl @ 2:1-2:12"]);
}

#[test]
fn import_cycles_are_rejected() {
    let out = resolve_files(&[
        ("/main.mcl", "import \"a.mcl\"\n"),
        ("/a.mcl", "import \"b.mcl\"\n$x = 1\n"),
        ("/b.mcl", "import \"a.mcl\"\n$y = 1\n"),
    ]);
    assert_eq!(out.diags.len(), 1);
    assert!(
        out.diags[0].message.contains("recursive import of: /main.mcl -> /a.mcl -> /b.mcl -> /a.mcl"),
        "{:?}",
        out.lines()
    );
}

#[test]
fn bad_imports_are_reported() {
    let out = resolve(
        "import \"git://example.com/mod/\"\nimport \"/abs.mcl\"\nimport \"nosuchpkg\"\nimport \"fmt\"\nimport \"fmt\"\nimport \"missing.mcl\"\n",
    );
    let msgs: Vec<String> = out.diags.iter().map(|d| d.message.clone()).collect();
    assert_eq!(msgs.len(), 5, "{msgs:?}");
    assert!(msgs.iter().any(|m| m == "import `fmt` already exists in this scope"));
    assert!(msgs.iter().any(|m| m.contains("failed: no module path to look in")));
    assert!(msgs.iter().any(|m| m == "import `/abs.mcl` is not valid: absolute paths are not allowed"));
    assert!(msgs.iter().any(|m| m.starts_with("system import of `nosuchpkg` failed")));
    assert!(msgs.iter().any(|m| m.starts_with("local import of `missing.mcl` failed")));
}

#[test]
fn include_alias_clashing_with_an_import() {
    let out = resolve("import \"fmt\" as i1\nclass c1 {\n}\ninclude c1 as i1\n");
    assert_eq!(
        out.lines(),
        vec![
            "could not generate ordering: duplicate assignment to `scoped:i1`, have: import(fmt): /main.mcl @ 4:1-4:17"
        ]
    );
}

#[test]
fn star_imports_merge_and_later_ones_win() {
    let out = resolve_files(&[
        ("/main.mcl", "import \"a.mcl\" as *\nimport \"b.mcl\" as *\ntest [$x] {}\n"),
        ("/a.mcl", "$x = \"a\"\n"),
        ("/b.mcl", "$x = \"b\"\n"),
    ]);
    out.ok();
    let NodeKind::List(items) = out.kind(out.resources()[0].name) else { panic!() };
    assert!(matches!(out.kind(items[0]), NodeKind::Const(Value::Str(s)) if &**s == "b"));
}

#[test]
fn a_long_chain_of_binds_written_backwards_resolves() {
    // Each bind uses the next one: forcing them lazily from the top would recurse once
    // per link; binds are elaborated dependencies first instead.
    let n = 3000;
    let mut text = String::from("test $x0 {}\n");
    for i in 0..n {
        text.push_str(&format!("$x{i} = $x{} + \"a\"\n", i + 1));
    }
    text.push_str(&format!("$x{n} = \"z\"\n"));
    let out = resolve(&text);
    out.ok();
    assert_eq!(out.count(|k| matches!(k, NodeKind::Op { .. })), n);
}

#[test]
fn cycle_labels_name_both_ends() {
    let out = resolve("$a = $b\n$b = $a\n");
    let labels: Vec<&str> = out.diags[0].labels.iter().map(|l| l.message.as_str()).collect();
    assert_eq!(labels, vec!["`$a` refers to `$b` here", "`$b` refers to `$a` here"]);
    let out = resolve("func f() {\n\tf()\n}\n");
    assert_eq!(out.diags[0].labels[0].message, "func `f` refers to itself here");
}

#[test]
fn resources_of_literals_keep_their_place_and_their_defaults() {
    // The top level's resources of literals are lowered apart from the other statements
    // (and dropped as they go); the output keeps source order, and defaults reach them.
    let out = resolve(
        "$n = \"b\"\n\
         test \"a\" { anotherstr => \"1\", }\n\
         Test { int64 => 7, }\n\
         test $n { anotherstr => \"2\", }\n\
         test \"c\" { anotherstr => \"3\", Meta:noop => true, }\n\
         Test[\"a\"] -> Test[\"c\"]\n\
         test \"d\" { Before => Test[\"a\"], }\n\
         test \"e\" { anotherstr => \"5\", }\n",
    );
    out.ok();
    let lines: Vec<String> = out
        .graph
        .stmts
        .iter()
        .map(|s| match s {
            IrStmt::Resource(r) => {
                // `$n` is its bind's constant node.
                let NodeKind::Const(name) = out.kind(r.name) else { panic!("name not constant") };
                let fields: Vec<String> =
                    r.fields.iter().map(|f| format!("{}={:?}/{:?}", f.name, out.kind(f.value), f.origin)).collect();
                format!("res {name} {} metas={} edges={}", fields.join(" "), r.metas.len(), r.edges.len())
            }
            IrStmt::Defaults { kind, .. } => format!("defaults {kind}"),
            IrStmt::Edge(_) => "edge".to_string(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        lines,
        vec![
            "res \"a\" anotherstr=Const(Str(\"1\"))/Written int64=Const(Int(7))/Default metas=0 edges=0",
            "defaults test",
            "res \"b\" anotherstr=Const(Str(\"2\"))/Written int64=Const(Int(7))/Default metas=0 edges=0",
            "res \"c\" anotherstr=Const(Str(\"3\"))/Written int64=Const(Int(7))/Default metas=1 edges=0",
            "edge",
            "res \"d\" int64=Const(Int(7))/Default metas=0 edges=1",
            "res \"e\" anotherstr=Const(Str(\"5\"))/Written int64=Const(Int(7))/Default metas=0 edges=0",
        ]
    );
}

#[test]
fn a_large_block_of_plain_resources_is_lowered_in_halves_as_in_one_piece() {
    // 40,000 resources of literals with other statements among them: their second half is
    // lowered on a thread of its own. A default for a kind nobody declares makes the block
    // lowered in one piece, and must change nothing but its own statement.
    let n = 40_000;
    assert!(n >= lang::halves::IN_HALVES_LARGE);
    let mut text = String::from("$n = \"bound\"\n");
    for i in 0..n {
        text.push_str(&format!(
            "test \"r{i}\" {{ anotherstr => \"v{i}\", int64 => {i}, boolptr => true, Meta:noop => false, }}\n"
        ));
        match i {
            100 => text.push_str("test $n { anotherstr => $n, }\n"),
            30_000 => text.push_str("Test[\"r1\"] -> Test[\"r2\"]\n"),
            34_000 => text.push_str("test \"x\" { anotherstr => \"${n}\", Before => Test[\"r3\"], }\n"),
            _ => {}
        }
    }
    let halves = resolve(&text);
    halves.ok();
    let one_piece = resolve(&format!("{text}Nothing {{ anotherstr => \"unused\", }}\n"));
    one_piece.ok();
    let stmts = |out: &Out| -> Vec<String> {
        let kept = out.graph.stmts.iter().filter(|s| !matches!(s, IrStmt::Defaults { .. }));
        kept.map(|s| format!("{s:?}")).collect()
    };
    assert_eq!(stmts(&halves), stmts(&one_piece));
    let nodes = halves.graph.nodes.len();
    assert_eq!(format!("{:?}", halves.graph.nodes), format!("{:?}", &one_piece.graph.nodes[..nodes]));
    assert_eq!(halves.resources().len(), n + 2);
}
