//! Statement parsing (spec section 3): every statement form, resource bodies, edges, the
//! newline rules between statements, and the spans of common nodes (spec 6.2).

use crate::syntax_support;

use lang::span::{FileId, SourceFile, SourceMap, Span};
use lang::syntax::ast::{ExprKind, ImportAlias, ResEntryKind, StmtKind};
use syntax_support::{bind_sexpr, expr_sexpr, parse_err, parse_ok, sexpr};

/// `/main.mcl @ l:c-l:c` of a span in `text`.
fn byline(text: &str, span: Span) -> String {
    let mut map = SourceMap::new();
    map.add(SourceFile::new("/main.mcl", text));
    map.byline(span).to_string()
}

#[test]
fn binds_with_and_without_types() {
    let file = parse_ok("$x = 1\n$y int = 2\n$map = 3\n");
    assert_eq!(file.stmts.len(), 3);
    match &file.stmts[1].kind {
        StmtKind::Bind { name, ann, value } => {
            assert_eq!(name.name, "y");
            assert_eq!(ann.as_ref().map(|a| a.ty.to_string()), Some("int".into()));
            assert_eq!(sexpr(value), "2");
        }
        other => panic!("{other:?}"),
    }
    parse_err("$a.b = 1\n");
    parse_err("$x = = 1\n");
    parse_err("$x = 1 $y = 2\n");
}

#[test]
fn if_for_forkv_blocks() {
    let text = "if $c {\n\ttest \"a\" {}\n} else {\n\ttest \"b\" {}\n}\nfor $i, $v in $l {\n}\nforkv $k, $v in $m {\n\t$x = 1\n}\n";
    let file = parse_ok(text);
    assert!(matches!(&file.stmts[0].kind, StmtKind::If { els: Some(_), then, .. } if then.stmts.len() == 1));
    assert!(
        matches!(&file.stmts[1].kind, StmtKind::For { index, value, .. } if index.name == "i" && value.name == "v")
    );
    assert!(matches!(&file.stmts[2].kind, StmtKind::ForKv { body, .. } if body.stmts.len() == 1));
    parse_ok("if $b {}\n");
    // Block bodies are statement lists: a statement needs its own line.
    parse_err("if $b { test \"x\" {} }\n");
    // `else` must share the line of the closing brace.
    parse_err("if $b {\n}\nelse {\n}\n");
    parse_err("for $i in $l {\n}\n");
}

#[test]
fn func_class_include_import_panic() {
    let text = "func f($a, $b int) str {\n\t$a\n}\nclass base:inner($x) {\n}\nclass c {\n}\n\
                include base(\"a\", 80) as b1\ninclude b1.inner\nimport \"fmt\"\nimport \"foo.mcl\" as *\n\
                import \"golang/strings\" as gs\npanic($x)\npanic($x, \"why\")\n";
    let file = parse_ok(text);
    let kinds: Vec<String> = file
        .stmts
        .iter()
        .map(|s| match &s.kind {
            StmtKind::Func { name, func } => format!("func {} {}", name.name, func.params.len()),
            StmtKind::Class { name, params, .. } => format!("class {} {:?}", name.name, params.as_ref().map(Vec::len)),
            StmtKind::Include { name, args, alias } => format!(
                "include {} {:?} {:?}",
                name.name,
                args.as_ref().map(Vec::len),
                alias.as_ref().map(|a| a.name.clone())
            ),
            StmtKind::Import { path, alias, .. } => format!(
                "import {path} {}",
                match alias {
                    None => "-".to_string(),
                    Some(ImportAlias::Star(_)) => "*".to_string(),
                    Some(ImportAlias::Name(n)) => n.name.clone(),
                }
            ),
            StmtKind::Panic { args } => format!("panic {}", args.len()),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "func f 2",
            "class base:inner Some(1)",
            "class c None",
            "include base Some(2) Some(\"b1\")",
            "include b1.inner None None",
            "import fmt -",
            "import foo.mcl *",
            "import golang/strings gs",
            "panic 1",
            "panic 2",
        ]
    );
    parse_err("func($x) { $x }\n");
    parse_err("func map($x) { $x }\n");
    parse_err("panic()\n");
    parse_err("include c as *\n");
}

#[test]
fn resource_bodies() {
    let text = "file \"/tmp/x\" {\n\tcontent => \"x\", mode => \"0644\",\n\tstate => $b ?: \"exists\",\n\
                \tDepend => Pkg[\"p\"],\n\tBefore => $c ?: File[\"/y\"],\n\tRequire => Svc[\"s\"],\n\
                \tMeta:noop => true,\n\tMeta => $m,\n\n}\n";
    let file = parse_ok(text);
    let StmtKind::Resource(res) = &file.stmts[0].kind else { panic!() };
    assert_eq!(res.kind.name, "file");
    assert!(!res.collect);
    let entries: Vec<String> = res
        .entries
        .iter()
        .map(|e| match &e.kind {
            ResEntryKind::Field { name, cond, value } => {
                format!("{} {} {}", name.name, cond.as_deref().map_or("-".into(), sexpr), sexpr(value))
            }
            ResEntryKind::Append { name, value } => format!("{} +> {}", name.name, sexpr(value)),
            ResEntryKind::Splat { value } => format!("* => {}", sexpr(value)),
            ResEntryKind::Edge { prop, cond, target } => format!(
                "{} {} {}[{}]",
                prop.name,
                cond.as_deref().map_or("-".into(), sexpr),
                target.kind.name,
                sexpr(&target.name)
            ),
            ResEntryKind::Meta { name, cond, value } => format!(
                "meta:{} {} {}",
                name.as_ref().map_or("*", |n| n.name.as_str()),
                cond.as_deref().map_or("-".into(), sexpr),
                sexpr(value)
            ),
        })
        .collect();
    assert_eq!(
        entries,
        [
            r#"content - "x""#,
            r#"mode - "0644""#,
            r#"state $b "exists""#,
            r#"depend - pkg["p"]"#,
            r#"before $c file["/y"]"#,
            r#"require - svc["s"]"#,
            "meta:noop - true",
            "meta:* - $m",
        ]
    );
    let file =
        parse_ok("collect file $names {\n\tMeta:hidden => true,\n}\ndocker:image \"x\" {}\ntest [\"a\", \"b\"] {}\n");
    assert!(matches!(&file.stmts[0].kind, StmtKind::Resource(r) if r.collect));
    assert!(matches!(&file.stmts[1].kind, StmtKind::Resource(r) if r.kind.name == "docker:image"));
    parse_ok("test \"t\" { anotherstr => \"x\", }\n");
    let missing = parse_err("test \"t\" {\n\tanotherstr => \"x\"\n}\n");
    assert_eq!(missing.len(), 1);
    assert!(missing[0].message.contains("expected a trailing comma"), "{}", missing[0].message);
    let unknown = parse_err("test \"t\" {\n\tFoo => 42,\n}\n");
    assert_eq!(unknown[0].message, "can't use unknown resource field: foo");
}

#[test]
fn edges_and_send_recv() {
    let file = parse_ok(
        "Pkg[\"a\"] -> File[\"b\"] -> Svc[\"c\"]\nExec[\"e\"].stdout -> File[\"/tmp/o\"].content\nTest[\"x\"]\nHttp:Server:Ui:Input[\"i\"] -> Test[\"t\"]\n",
    );
    let halves: Vec<Vec<String>> = file
        .stmts
        .iter()
        .map(|s| match &s.kind {
            StmtKind::Edge { sides, .. } => sides
                .iter()
                .flat_map(|side| &side.refs)
                .map(|h| format!("{}[{}]{}", h.kind.name, sexpr(&h.name), h.field.as_ref().map_or("", |f| &f.name)))
                .collect(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        halves,
        vec![
            vec![r#"pkg["a"]"#, r#"file["b"]"#, r#"svc["c"]"#],
            vec![r#"exec["e"]stdout"#, r#"file["/tmp/o"]content"#],
            vec![r#"test["x"]"#],
            vec![r#"http:server:ui:input["i"]"#, r#"test["t"]"#],
        ]
    );
    parse_err("Exec[\"e\"].stdout -> File[\"a\"].content -> File[\"b\"].content\n");
    parse_err("Exec[\"e\"].stdout -> File[\"a\"]\n");
    parse_err("Exec[\"e\"].stdout\n");
}

/// Each relationship statement as `side op side op ...`, a side as `[ref ref]`.
fn relationships(text: &str) -> Vec<String> {
    parse_ok(text)
        .stmts
        .iter()
        .map(|s| match &s.kind {
            StmtKind::Edge { sides, links } => {
                let side = |i: usize| {
                    let refs: Vec<String> =
                        sides[i].refs.iter().map(|h| format!("{}[{}]", h.kind.name, sexpr(&h.name))).collect();
                    if refs.len() == 1 { refs[0].clone() } else { format!("[{}]", refs.join(" ")) }
                };
                let mut out = side(0);
                for (i, link) in links.iter().enumerate() {
                    out.push_str(&format!(" {} {}", link.text(), side(i + 1)));
                }
                out
            }
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn relationship_operators_lists_and_chains() {
    assert_eq!(
        relationships(
            "File[\"a\"] ~> Exec[\"x\"]\nExec[\"x\"] <- File[\"a\"]\nSvc[\"s\"] <~ File[\"a\"] -> Exec[\"x\"]\n"
        ),
        vec![r#"file["a"] ~> exec["x"]"#, r#"exec["x"] <- file["a"]"#, r#"svc["s"] <~ file["a"] -> exec["x"]"#]
    );
    // A side may be a list of references, over several lines, with a trailing comma.
    assert_eq!(
        relationships("[File[\"a\"], File[\"b\"],] ~> [\n\tExec[\"x\"],\n\tSvc[\"s\"],\n]\n"),
        vec![r#"[file["a"] file["b"]] ~> [exec["x"] svc["s"]]"#]
    );
    // `<-` is `<` and `-` side by side; elsewhere they keep their meaning: `$a<-1` compares.
    assert_eq!(bind_sexpr("$x = $a<-1\n"), "(< $a -1)");
    // Send/recv flows one way, between single references.
    let d = parse_err("Exec[\"e\"].stdout ~> File[\"a\"].content\n");
    assert!(d[0].message.contains("written with `->`, not `~>`"), "{}", d[0].message);
    parse_err("[Exec[\"e\"].stdout] -> File[\"a\"].content\n");
    let d = parse_err("File[\"a\"] -> [File[\"b\"] File[\"c\"]]\n");
    assert!(d[0].message.contains("expected `,` or `]`"), "{}", d[0].message);
}

#[test]
fn statements_end_with_a_newline() {
    parse_ok("");
    parse_ok("# only a comment\n\n");
    parse_ok("\n\n$x = 1\n\n\n$y = 2\n");
    let diags = parse_err("test \"a\" {}");
    assert!(diags[0].message.contains("end of file"), "{}", diags[0].message);
    parse_err("$x = 1\r\n");
    parse_err("fooBar \"x\" {}\n");
}

#[test]
fn spans_of_common_nodes() {
    let text = "$x = 1\ntest \"a\" {\n\tstringptr => 42, # c\n}\n$y = fmt.printf(\"%d\", $a + $b)\n";
    let file = parse_ok(text);
    assert_eq!(byline(text, file.stmts[0].span), "/main.mcl @ 1:1-1:7");
    assert_eq!(byline(text, file.stmts[1].span), "/main.mcl @ 2:1-4:2");
    let StmtKind::Resource(res) = &file.stmts[1].kind else { panic!() };
    assert_eq!(byline(text, res.entries[0].span), "/main.mcl @ 3:2-3:18");
    assert_eq!(byline(text, res.name.span), "/main.mcl @ 2:6-2:9");
    let StmtKind::Bind { value, .. } = &file.stmts[2].kind else { panic!() };
    assert_eq!(byline(text, value.span), "/main.mcl @ 5:6-5:31");
    let ExprKind::Call { args, .. } = &value.kind else { panic!() };
    assert_eq!(byline(text, args[0].span), "/main.mcl @ 5:17-5:21");
    assert_eq!(byline(text, args[1].span), "/main.mcl @ 5:23-5:30");
}

#[test]
fn syntax_errors_point_at_the_offending_token() {
    let text = "$x = [1, 2]]\n";
    let diags = parse_err(text);
    assert_eq!(diags.len(), 1);
    assert_eq!(byline(text, diags[0].span.unwrap_or_default()), "/main.mcl @ 1:12-1:13");
    let text = "$fn = func($in) {\n\t13\n}\n";
    let diags = parse_err(text);
    assert_eq!(byline(text, diags[0].span.unwrap_or_default()), "/main.mcl @ 1:13-1:15");
    assert!(diags[0].message.contains("unexpected `in`"), "{}", diags[0].message);
    let text = "$x = 18446744073709551615\n";
    let diags = parse_err(text);
    assert_eq!(diags[0].message, "integer: overflow: `18446744073709551615`");
}

#[test]
fn unclosed_delimiters_are_labelled_at_the_opening() {
    let text = "class c {\n\t$x = 1\n";
    let diags = parse_err(text);
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert!(diags[0].message.contains("end of file"), "{}", diags[0].message);
    assert_eq!(diags[0].labels.len(), 1);
    assert_eq!(byline(text, diags[0].labels[0].span), "/main.mcl @ 1:9-1:10");
    let (_, diags) = lang::syntax::parse(FileId(0), "$x = f(1, [2, 3)\n");
    let first = diags.iter().next().expect("an error");
    assert!(!first.labels.is_empty(), "{first:#?}");
}

#[test]
fn common_mistakes_get_a_hint() {
    let call = parse_err("fmt.printf(\"x\")\n");
    assert!(call[0].notes.iter().any(|n| n.contains("not a statement")), "{call:#?}");
    let bare = parse_err("x = 1\n");
    assert!(bare[0].notes.iter().any(|n| n.contains("with a `$`")), "{bare:#?}");
    let bang = parse_err("$x = !$y\n");
    assert!(bang[0].notes.iter().any(|n| n.contains("`not`")), "{bang:#?}");
    let keyword = parse_err("$x = func($str) { 1 }\n");
    assert!(keyword[0].notes.iter().any(|n| n.contains("is a keyword")), "{keyword:#?}");
}

#[test]
fn single_line_lists_broken_by_a_newline_point_at_their_bracket() {
    let text = "$x = f(1, 2\n$y = 1\n";
    let diags = parse_err(text);
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert_eq!(diags[0].labels.len(), 1);
    assert_eq!(byline(text, diags[0].labels[0].span), "/main.mcl @ 1:7-1:8");
}

#[test]
fn params_take_defaults_that_are_expressions() {
    let file = parse_ok("func f($a int, $b int = $a * 2, $c = \"x\") int { $a }\n");
    let StmtKind::Func { func, .. } = &file.stmts[0].kind else { panic!("{file:#?}") };
    let defaults: Vec<Option<String>> = func.params.iter().map(|p| p.default.as_ref().map(sexpr)).collect();
    assert_eq!(defaults, [None, Some("(* $a 2)".to_string()), Some("\"x\"".to_string())]);
    assert!(func.params[1].ann.is_some());
    let class = parse_ok("class web($name str, $port int = 80) {\n}\n");
    let StmtKind::Class { params: Some(params), .. } = &class.stmts[0].kind else { panic!("{class:#?}") };
    assert_eq!(params[1].default.as_ref().map(sexpr).as_deref(), Some("80"));
}

#[test]
fn named_arguments_follow_positional_ones() {
    assert_eq!(expr_sexpr("f(1, b => 3)"), "(f 1 (b => 3))");
    assert_eq!(expr_sexpr("f(b => 3, a => $x + 1)"), "(f (b => 3) (a => (+ $x 1)))");
    let include = parse_ok("include web(\"a\", port => 8080)\n");
    let StmtKind::Include { args: Some(args), .. } = &include.stmts[0].kind else { panic!("{include:#?}") };
    assert_eq!(args.iter().map(sexpr).collect::<Vec<_>>(), ["\"a\"", "(port => 8080)"]);
    let late = parse_err("$x = f(b => 3, 1)\n");
    assert!(late[0].message.contains("expected a named argument"), "{late:#?}");
    assert!(late[0].notes.iter().any(|n| n.contains("after the positional ones")), "{late:#?}");
}

#[test]
fn private_marks_classes_funcs_and_binds_only() {
    let file = parse_ok("private $x = 1\nprivate $y int = 2\nprivate func f() int { 1 }\nprivate class c {\n}\n");
    assert_eq!(file.stmts.len(), 4);
    assert!(file.stmts.iter().all(|s| s.private.is_some()), "{file:#?}");
    assert!(matches!(file.stmts[0].kind, StmtKind::Bind { .. }));
    // The statement's span starts at `private`.
    assert_eq!(file.stmts[2].span.start, file.stmts[2].private.unwrap().start);
    // Anywhere else `private` is an ordinary word: a resource kind here.
    let res = parse_ok("private $name {}\nprivate \"x\" {}\n");
    assert!(res.stmts.iter().all(|s| s.private.is_none() && matches!(s.kind, StmtKind::Resource(_))), "{res:#?}");
    let var = parse_ok("$private = 1\n");
    assert!(var.stmts[0].private.is_none());
}

#[test]
fn type_declarations_parse_attributes_invariants_parents_and_aliases() {
    use lang::syntax::ast::TypeDef;
    let file = parse_ok(
        "type vhost {\n\tattr name str\n\tattr port int { default => 80, check => $it > 0, }\n\
         \tattr state enum[\"present\", \"absent\"] {\n\t\tdefault => \"present\",\n\t}\n\
         \tinvariant \"named\" { $name != \"\" }\n}\ntype tls inherits web.vhost {\n}\ntype port = int\n",
    );
    let StmtKind::Type(vhost) = &file.stmts[0].kind else { panic!("{file:#?}") };
    let TypeDef::Record(record) = &vhost.def else { panic!("{vhost:#?}") };
    let names: Vec<&str> = record.attrs.iter().map(|a| a.name.name.as_str()).collect();
    assert_eq!(names, ["name", "port", "state"]);
    assert_eq!(record.attrs[1].default.as_ref().map(sexpr).as_deref(), Some("80"));
    assert_eq!(record.attrs[1].check.as_ref().map(sexpr).as_deref(), Some("(> $it 0)"));
    let enumerated = lang::types::Type::Enum(vec!["present".into(), "absent".into()]);
    assert_eq!(record.attrs[2].ann.ty, enumerated);
    assert_eq!(record.invariants[0].message.as_deref(), Some("named"));
    let StmtKind::Type(tls) = &file.stmts[1].kind else { panic!() };
    let TypeDef::Record(tls) = &tls.def else { panic!() };
    assert_eq!(tls.parent.as_ref().map(|p| p.name.as_str()), Some("web.vhost"));
    let StmtKind::Type(port) = &file.stmts[2].kind else { panic!() };
    assert!(matches!(&port.def, TypeDef::Alias(a) if a.ty == lang::types::Type::Int));
    // `type` stays an ordinary word elsewhere: a resource of kind `type`.
    let res = parse_ok("type \"x\" {}\n");
    assert!(matches!(res.stmts[0].kind, StmtKind::Resource(_)));
}

#[test]
fn constructions_and_declared_type_annotations() {
    assert_eq!(expr_sexpr("vhost{name => \"a\", port => 1 + 2}"), "vhost{name => \"a\", port => (+ 1 2)}");
    assert_eq!(expr_sexpr("web.vhost{}"), "web.vhost{}");
    let file = parse_ok("$v []web.vhost = []\nfunc f($x vhost) port { 1 }\n");
    let StmtKind::Bind { ann: Some(ann), .. } = &file.stmts[0].kind else { panic!("{file:#?}") };
    assert_eq!(ann.ty, lang::types::Type::list(lang::types::Type::Named("web.vhost".into())));
    // A forgotten `$` before a block is still the old error, not a construction.
    let forgot = parse_err("if x {\n\ttest \"a\" {}\n}\n");
    assert!(forgot[0].message.contains("expected `(`"), "{forgot:#?}");
}

#[test]
fn type_declarations_parse_abstract_options_and_enums_anywhere() {
    use lang::syntax::ast::TypeDef;
    use lang::types::Type;
    let file = parse_ok(
        "type shape {\n\tabstract\n\tattr r int { min => 1, max => 9, }\n\
         \tattr tags []str { unsettable => true, }\n\
         \tattr label str { derived => \"x\", set => struct{r => 1}, }\n\
         \tinvariant { \"\" }\n}\ntype mode = enum[\"a\", \"b\"]\n$m []enum[\"x\"] = []\n",
    );
    let StmtKind::Type(shape) = &file.stmts[0].kind else { panic!("{file:#?}") };
    let TypeDef::Record(record) = &shape.def else { panic!() };
    assert!(record.abstract_at.is_some());
    assert_eq!(record.attrs[0].min.as_ref().map(sexpr).as_deref(), Some("1"));
    assert_eq!(record.attrs[0].max.as_ref().map(sexpr).as_deref(), Some("9"));
    assert!(record.attrs[1].unsettable && !record.attrs[0].unsettable);
    assert!(record.attrs[2].derived.is_some() && record.attrs[2].set.is_some());
    assert_eq!(record.invariants[0].message, None);
    let StmtKind::Type(mode) = &file.stmts[1].kind else { panic!() };
    assert!(matches!(&mode.def, TypeDef::Alias(a) if a.ty == Type::Enum(vec!["a".into(), "b".into()])));
    assert_eq!(Type::Enum(vec!["a".into(), "b".into()]).to_string(), "enum[\"a\", \"b\"]");
    // An enum lists each string once and at least one; options are the known ones.
    for (bad, says) in [
        ("$m enum[\"a\", \"a\"] = \"a\"\n", "listed twice"),
        ("$m enum[] = \"a\"\n", "at least one string"),
        ("type t {\n\tattr a int { low => 1, }\n}\n", "unknown attribute option `low`"),
        ("type t {\n\tattr a int { unsettable => 1, }\n}\n", "takes `true` or `false`"),
        ("type t {\n\tabstract\n\tabstract\n}\n", "`abstract` is given twice"),
    ] {
        let diags = parse_err(bad);
        assert!(diags[0].message.contains(says), "{bad}: {}", diags[0].message);
    }
}
