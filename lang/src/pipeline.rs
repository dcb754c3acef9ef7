//! The compile pipeline in one place: text → checked, typed function graph.

use crate::catalog::Catalog;
use crate::diag::{Code, Diagnostic, Diagnostics, Stage};
use crate::incremental::Outline;
use crate::ir::FuncGraph;
use crate::loader::Loader;
use crate::span::{SourceFile, SourceMap};

/// A program that went through every front-end stage.
#[derive(Debug)]
pub struct Compiled {
    pub sources: SourceMap,
    pub graph: FuncGraph,
}

/// The result of [`compile`]: the sources are always returned, so diagnostics can be
/// rendered; the graph only when there was no error.
pub struct Outcome {
    pub sources: SourceMap,
    pub graph: Option<FuncGraph>,
    pub diagnostics: Diagnostics,
    /// Likely mistakes that still compile (unused binds and imports), found once scope
    /// resolution succeeded, minus those a `# tend: allow(CODE)` comment silences.
    pub warnings: Diagnostics,
    /// When scope resolution ran but a stage failed: the function graph as far as it got
    /// (names resolved; types where unification found them), for editors.
    pub partial: Option<FuncGraph>,
    /// Asked for by [`compile_outlined`]: the entry file statement by statement, when the
    /// program compiled, is that one file, and lets an edit be compiled alone.
    pub outline: Option<Outline>,
}

/// Runs lex/parse, init, interpolate, scope, unify and the graph checks on the program
/// whose entry file is `entry` (a deploy path such as `/main.mcl`). Stops after the first
/// stage that reports errors, but reports every error of that stage.
pub fn compile(entry: &str, loader: &dyn Loader, catalog: &Catalog) -> Outcome {
    compile_with(entry, loader, catalog, Asked::default())
}

/// [`compile`], also giving the [`Outline`] of a one-file program, for `tend run`, whose
/// live edits of resources' params compile only what changed.
pub fn compile_outlined(entry: &str, loader: &dyn Loader, catalog: &Catalog) -> Outcome {
    compile_with(entry, loader, catalog, Asked { naming: false, outline: true })
}

/// What a compile records beside the function graph.
#[derive(Clone, Copy, Default)]
struct Asked {
    /// What each name resolved to (`FuncGraph::names`).
    naming: bool,
    outline: bool,
}

/// [`compile`], also recording what each name resolved to (`FuncGraph::names`), for
/// editors.
pub fn compile_naming(entry: &str, loader: &dyn Loader, catalog: &Catalog) -> Outcome {
    compile_with(entry, loader, catalog, Asked { naming: true, outline: false })
}

fn compile_with(entry: &str, loader: &dyn Loader, catalog: &Catalog, asked: Asked) -> Outcome {
    let mut sources = SourceMap::new();
    let Some(text) = loader.read(entry) else {
        let why = loader.why_unreadable(entry).map(|w| format!(": {w}")).unwrap_or_default();
        let d = Diagnostic::without_span(
            Stage::LexParse,
            format!("cannot read the program's entry file `{}`{why}", loader.shown(entry)),
        )
        .with_code(Code::EntryUnreadable);
        return Outcome {
            sources,
            graph: None,
            diagnostics: d.into(),
            warnings: Diagnostics::new(),
            partial: None,
            outline: None,
        };
    };
    let file = sources.add(SourceFile::new(entry, text));
    let fail = |sources, diagnostics| Outcome {
        sources,
        graph: None,
        diagnostics,
        warnings: Diagnostics::new(),
        partial: None,
        outline: None,
    };

    // A YAML graph (mgmt's other front end) is read into the statements that mean the same.
    let (ast, diags, yaml_warnings) = if crate::yamlgraph::is_yaml(entry) {
        let (ast, diags, warned) = crate::yamlgraph::parse(file, &sources.get(file).text, catalog);
        (ast.unwrap_or(crate::syntax::ast::File { file, stmts: Vec::new() }), diags, warned)
    } else {
        let (ast, diags) = crate::syntax::parse(file, &sources.get(file).text);
        (ast, diags, Vec::new())
    };
    if !diags.is_empty() {
        return fail(sources, diags);
    }
    let outline = match asked.outline && !crate::yamlgraph::is_yaml(entry) {
        true => Outline::of(&ast.stmts, &sources.get(file).text, catalog),
        false => None,
    };
    let diags = crate::init::check(&ast);
    if !diags.is_empty() {
        return fail(sources, diags);
    }
    let (ast, diags) = crate::interpolate::run(ast);
    if !diags.is_empty() {
        return fail(sources, diags);
    }
    // With `naming`, also what each name resolved to (`FuncGraph::names`), for editors.
    let front_end = &crate::scope::front_end;
    let (mut graph, found) =
        crate::scope::resolve_with(ast, entry, loader, catalog, &mut sources, front_end, asked.naming);
    let (mut warnings, errors): (Vec<_>, Vec<_>) = found.into_vec().into_iter().partition(|d| d.warning);
    warnings.extend(yaml_warnings);
    let checked = check_graph(&mut graph, errors.into_iter().collect(), catalog, &mut warnings);
    // The warnings of every stage, in source order, minus those a comment silences. mgmt's
    // YAML writes every param out, zero values too: those are no likely mistake there.
    let zero_values_written = crate::yamlgraph::is_yaml(entry);
    let expected = |d: &Diagnostic| zero_values_written && d.code == Some(Code::DefaultValue);
    // A module built into tend is not the user's to change: its warnings are not theirs.
    let embedded = |d: &Diagnostic| d.span.is_some_and(|s| sources.get(s.file).name.starts_with(crate::embedded::ROOT));
    warnings.retain(|d| !silenced(&sources, d) && !expected(d) && !embedded(d));
    warnings.sort_by_key(|d| d.span.map(|s| (s.file, s.start)));
    let warnings: Diagnostics = warnings.into_iter().collect();
    match checked {
        Ok(()) => {
            // Imports of other files: an edit there can mean anything to this one.
            let outline = outline.filter(|_| sources.files().count() == 1);
            Outcome { sources, graph: Some(graph), diagnostics: Diagnostics::new(), warnings, partial: None, outline }
        }
        // A class body is elaborated once per include and a func body once per call:
        // repeats of one error are folded. The graph and warnings stay, for editors.
        Err(diags) => Outcome {
            sources,
            diagnostics: crate::repeats::fold(diags, &graph.includes),
            graph: None,
            warnings,
            partial: Some(graph),
            outline: None,
        },
    }
}

/// The stages after scope resolution (whose errors are `diags`), each run only when the
/// ones before it found nothing; the checks' warnings join `warnings`.
fn check_graph(
    graph: &mut FuncGraph,
    diags: Diagnostics,
    catalog: &Catalog,
    warnings: &mut Vec<Diagnostic>,
) -> Result<(), Diagnostics> {
    let some = |diags: Diagnostics| if diags.is_empty() { Ok(()) } else { Err(diags) };
    some(diags)?;
    some(crate::unify::unify(graph, catalog))?;
    let mut diags = crate::checks::constant(graph);
    let (warned, errors): (Vec<_>, Vec<_>) =
        crate::checks::resource_fields(graph, catalog).into_vec().into_iter().partition(|d| d.warning);
    warnings.extend(warned);
    diags.extend(errors.into_iter().collect());
    diags.extend(crate::validate::constant_resources(graph, catalog));
    some(diags)?;
    some(crate::graph_check::check(graph))
}

/// Whether a `# tend: allow(CODE)` comment on the warning's line or the line above names
/// its code.
fn silenced(sources: &SourceMap, d: &Diagnostic) -> bool {
    let (Some(span), Some(code)) = (d.span, d.code) else { return false };
    let file = sources.get(span.file);
    let allow = format!("tend: allow({})", code.as_str());
    let (_, this) = file.line_of(span.start);
    let above = (this.start > 0).then(|| file.line_of(this.start as u32 - 1).1);
    [Some(this), above].into_iter().flatten().any(|range| file.text[range].contains(&allow))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{ParamDecl, ResourceDecl};
    use crate::diag::Code;
    use crate::loader::MemLoader;
    use crate::types::Type;

    fn first_code(src: &str) -> Option<Code> {
        let mut catalog = Catalog::new();
        catalog.add_resource(ResourceDecl {
            kind: "file".into(),
            params: vec![ParamDecl::new("content", Type::Str)],
            sends: Vec::new(),
            can_recv: false,
        });
        let out = compile("/main.mcl", &MemLoader::new().with("/main.mcl", src), &catalog);
        out.diagnostics.iter().next().map(|d| d.code.unwrap_or_else(|| panic!("no code on {d:#?}")))
    }

    #[test]
    fn equal_short_literals_share_one_string() {
        let mut catalog = Catalog::new();
        catalog.add_resource(ResourceDecl {
            kind: "file".into(),
            params: vec![ParamDecl::new("content", Type::Str), ParamDecl::new("mode", Type::Str)],
            sends: Vec::new(),
            can_recv: false,
        });
        let long = "x".repeat(40);
        let src = format!(
            "file \"/a\" {{ mode => \"0644\", content => \"{long}\", }}\n\
             file \"/b\" {{ mode => \"0644\", content => \"{long}\", }}\n"
        );
        let out = compile("/main.mcl", &MemLoader::new().with("/main.mcl", &src), &catalog);
        let graph = out.graph.expect("compiles");
        let strs = |text: &str| -> Vec<std::sync::Arc<str>> {
            graph
                .nodes
                .iter()
                .filter_map(|n| match &n.kind {
                    crate::ir::NodeKind::Const(crate::value::Value::Str(s)) if &**s == text => Some(s.clone()),
                    _ => None,
                })
                .collect()
        };
        let modes = strs("0644");
        assert_eq!(modes.len(), 2);
        assert!(std::sync::Arc::ptr_eq(&modes[0], &modes[1]), "one string for both modes");
        let contents = strs(&long);
        assert_eq!(contents.len(), 2);
        assert!(!std::sync::Arc::ptr_eq(&contents[0], &contents[1]), "long literals are not looked up");
    }

    #[test]
    fn errors_carry_stable_codes() {
        let cases = [
            ("$x = 1 +\n", Code::Syntax),
            ("$x = \"\\q\"\n", Code::BadString),
            ("$x = 1\n$x = 2\n", Code::DuplicateAssignment),
            ("file \"/a\" { content => $nope, }\n", Code::UnknownName),
            ("$x = 1 + \"a\"\nfile \"/a\" { content => $x, }\n", Code::TypeMismatch),
            ("file \"/a\" { content => nosuch(1), }\n", Code::UnknownName),
            ("filez \"/a\" { content => \"x\", }\n", Code::UnknownKind),
            ("file \"/a\" { contnet => \"x\", }\n", Code::UnknownField),
            ("import \"nowhere/\"\n", Code::ImportFailed),
        ];
        for (src, want) in cases {
            assert_eq!(first_code(src), Some(want), "{src:?}");
        }
    }

    /// The errors `tend check` gives `src`, against a `file` kind whose `state` takes
    /// `exists` or `absent` (the editors' test catalog).
    fn field_errors(src: &str) -> Vec<(String, String)> {
        let catalog = crate::ide::testing::catalog();
        let loader = MemLoader::new().with("/main.mcl", src);
        let out = compile("/main.mcl", &loader, &catalog);
        out.diagnostics
            .iter()
            .map(|d| (d.message.clone(), d.span.map(|s| out.sources.byline(s).to_string()).unwrap_or_default()))
            .collect()
    }

    #[test]
    fn constant_field_values_outside_the_allowed_ones_are_errors_on_the_value() {
        let errors = field_errors("file \"/a\" {\n\tstate => \"exist\",\n}\n");
        assert_eq!(errors, [("`exist` is not a valid `state` of `file`".into(), "/main.mcl @ 2:11-2:18".into())]);
        // Once for a value given by defaults, however many resources it reaches.
        let errors = field_errors("File { state => \"gone\", }\nfile \"/a\" { }\nfile \"/b\" { }\n");
        assert_eq!(errors.len(), 1, "{errors:?}");
        // In a branch too: the checker does not know which branch will run.
        assert_eq!(field_errors("if 1 > 2 { file \"/a\" { state => \"no\", } }\n").len(), 1);
        // Allowed values, an unset state and values known only at run time pass.
        assert!(field_errors("file \"/a\" { state => \"absent\", }\nfile \"/b\" { state => \"\", }\n").is_empty());
        assert!(field_errors("$s = \"exi\" + \"sts\"\nfile \"/a\" { state => $s, }\n").is_empty());
    }

    #[test]
    fn warnings_name_unused_binds_and_imports_and_never_stop_a_program() {
        let catalog = Catalog::new();
        let loader = MemLoader::new()
            .with("/main.mcl", "import \"m/\"\nimport \"x/\"\n$used = $m.offered\n$alone = 1\nclass c($n) {\n\t$v = $n\n}\ninclude c(1) as one\ninclude c(2)\n$w = $one.v + $used\n")
            .with("/m/main.mcl", "$offered = 1\n")
            .with("/x/main.mcl", "$y = 1\n");
        let out = compile("/main.mcl", &loader, &catalog);
        assert!(out.diagnostics.is_empty() && out.graph.is_some());
        let warnings: Vec<_> = out.warnings.iter().map(|d| (d.message.as_str(), d.code)).collect();
        assert_eq!(
            warnings,
            [
                ("unused import `x`", Some(Code::UnusedImport)),
                ("unused variable `$alone`", Some(Code::UnusedBind)),
                ("`include c` adds nothing", Some(Code::EmptyInclude)),
                ("unused variable `$w`", Some(Code::UnusedBind)),
            ]
        );
        assert!(out.warnings.iter().all(|d| d.warning));
    }

    /// The default-value warnings `src` gets, against a `file` whose `recurse` and `mode`
    /// mean `false` and `""` when left out and whose `content` is optional.
    fn default_warnings(src: &str) -> Vec<String> {
        let mut catalog = Catalog::new();
        catalog.add_resource(ResourceDecl {
            kind: "file".into(),
            params: vec![
                ParamDecl::new("content", Type::Str),
                ParamDecl::new("recurse", Type::Bool).zero_when_absent(),
                ParamDecl::new("mode", Type::Str).zero_when_absent(),
            ],
            sends: Vec::new(),
            can_recv: false,
        });
        let out = compile("/main.mcl", &MemLoader::new().with("/main.mcl", src), &catalog);
        assert!(out.diagnostics.is_empty(), "{:?}", out.diagnostics.first());
        let ours = out.warnings.iter().filter(|d| d.code == Some(Code::DefaultValue));
        ours.map(|d| format!("{} @ {}", d.message, out.sources.byline(d.span.unwrap()))).collect()
    }

    #[test]
    fn a_field_written_as_what_leaving_it_out_means_is_a_warning() {
        let got = default_warnings("file \"/a\" {\n\trecurse => false,\n\tmode => \"\",\n\tcontent => \"\",\n}\n");
        assert_eq!(
            got,
            [
                "`recurse => false` is what leaving `recurse` out means @ /main.mcl @ 2:2-2:19",
                "`mode => \"\"` is what leaving `mode` out means @ /main.mcl @ 3:2-3:13",
            ]
        );
        // Other values, values from elsewhere, conditional fields: no warning.
        assert!(default_warnings("file \"/a\" { recurse => true, mode => \"0644\", }\n").is_empty());
        assert!(default_warnings("$r = false\nfile \"/a\" { recurse => $r, }\n").is_empty());
        assert!(default_warnings("file \"/a\" { recurse => 1 > 2 ?: false, }\n").is_empty());
        // Where defaults, an override or a collector may set the field, the line matters.
        assert!(default_warnings("File { recurse => true, }\nfile \"/a\" { recurse => false, }\n").is_empty());
        assert!(default_warnings("file \"/a\" { recurse => false, }\nFile[\"/a\"] { mode => \"1\", }\n").is_empty());
        // Silenced by a comment.
        assert!(default_warnings("file \"/a\" {\n\trecurse => false, # tend: allow(default-value)\n}\n").is_empty());
    }

    #[test]
    fn codes_are_distinct_kebab_case() {
        let mut seen = std::collections::BTreeSet::new();
        for code in Code::ALL {
            let text = code.as_str();
            assert!(text.chars().all(|c| c.is_ascii_lowercase() || c == '-'), "{text}");
            assert!(seen.insert(text), "{text} twice");
        }
    }
}
