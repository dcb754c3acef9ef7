//! Go to definition and find references, from what scope resolution recorded of each
//! name (`FuncGraph::names`).

use crate::span::{FileId, Span};

use super::Analysis;

/// Where the name at `offset` of `file` is declared: a bind's or param's name, a func's,
/// class's or type's name, an imported file. `None` for built-ins and unknown names.
pub fn definition(analysis: &Analysis, file: FileId, offset: u32) -> Option<Span> {
    match analysis.use_at(file, offset) {
        Some(u) => u.decl,
        None => analysis.decl_at(file, offset),
    }
}

/// Every use of the name at `offset` of `file` (a use or the declaration itself), in
/// source order; with the declaration first when `with_decl`.
pub fn references(analysis: &Analysis, file: FileId, offset: u32, with_decl: bool) -> Vec<Span> {
    let Some(target) = definition(analysis, file, offset) else { return Vec::new() };
    let Some(graph) = &analysis.graph else { return Vec::new() };
    let uses = graph.names.iter().filter(|u| u.decl == Some(target)).map(|u| u.at);
    with_decl.then_some(target).into_iter().chain(uses).collect()
}

#[cfg(test)]
mod tests {
    use super::super::testing::at;
    use super::*;

    fn text(analysis: &Analysis, span: Span) -> &str {
        analysis.sources.snippet(span)
    }

    #[test]
    fn a_variable_use_leads_to_its_bind_and_back_to_every_use() {
        let (analysis, _, offset) =
            at("$greeting = \"hi\"\nfile \"/a\" { content => $gree^ting, }\nfile \"/b\" { content => $greeting, }\n");
        let decl = definition(&analysis, FileId(0), offset).expect("a definition");
        assert_eq!((decl.start, text(&analysis, decl)), (0, "$greeting"));
        let refs = references(&analysis, FileId(0), offset, true);
        assert_eq!(refs.len(), 3, "{refs:?}");
        assert_eq!(refs[0], decl);
        // From the declaration, the same answer.
        assert_eq!(references(&analysis, FileId(0), 3, false).len(), 2);
    }

    #[test]
    fn params_funcs_and_classes_lead_to_their_declarations() {
        let src = "func double($n) { $n + $n }\nclass c($v) {\n\tfile \"/a\" { content => $v, }\n}\ninclude c(\"x\")\n$d = dou^ble(2)\nfile \"/d\" { mode => \"${d}\", }\n";
        let (analysis, _, offset) = at(src);
        let decl = definition(&analysis, FileId(0), offset).expect("the func");
        assert_eq!(text(&analysis, decl), "double");
        let in_class = src.replacen('^', "", 1).find("$v, }").unwrap() as u32 + 1;
        let param = definition(&analysis, FileId(0), in_class).expect("the class param");
        assert_eq!((text(&analysis, param), param.start), ("$v", src.find("$v)").unwrap() as u32));
        let include = src.replacen('^', "", 1).find("c(\"x\")").unwrap() as u32;
        assert_eq!(text(&analysis, definition(&analysis, FileId(0), include).unwrap()), "c");
        // A built-in has no declaration in the program.
        let (analysis, _, offset) = at("$n = le^n(\"abc\")\nfile \"/a\" { content => \"${n}\", }\n");
        assert_eq!(definition(&analysis, FileId(0), offset), None);
    }

    #[test]
    fn names_of_a_module_lead_into_its_file_and_the_import_to_the_file() {
        let catalog = super::super::testing::catalog();
        let main = "import \"web/\"\nfile \"/a\" { content => $web.greeting, }\n";
        let loader =
            crate::loader::MemLoader::new().with("/main.mcl", main).with("/web/main.mcl", "$greeting = \"hi\"\n");
        let analysis = super::super::analyze("/main.mcl", &loader, &catalog);
        assert!(analysis.errors.is_empty(), "{:?}", analysis.errors.first());
        let web = analysis.file("/web/main.mcl").expect("the module is loaded");
        let use_at = main.find("web.greeting").unwrap() as u32 + 5;
        let decl = definition(&analysis, FileId(0), use_at).expect("the module's bind");
        assert_eq!((decl.file, text(&analysis, decl)), (web, "$greeting"));
        let import = definition(&analysis, FileId(0), 3).expect("the imported file");
        assert_eq!((import.file, import.start), (web, 0));
    }
}
