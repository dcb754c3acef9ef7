//! `tend functions [PREFIX]`: the function library as the type checker sees it.

use crate::cli::FunctionsFormat;
use std::process::ExitCode;

pub fn run(prefix: Option<&str>, format: FunctionsFormat, hostname: Option<String>) -> ExitCode {
    let (registry, _) = crate::compile::catalog(hostname.as_deref());
    let funcs: Vec<_> = registry
        .iter()
        .filter(|b| !b.decl.name.starts_with('_'))
        .filter(|b| prefix.is_none_or(|p| b.decl.name.starts_with(p)))
        .map(|b| {
            let sigs: Vec<String> = if b.decl.sigs.is_empty() {
                vec!["(signature inferred from the call)".to_string()]
            } else {
                b.decl.sigs.iter().map(|t| t.to_string()).collect()
            };
            (b.decl.name.as_str(), sigs, b.decl.doc.lines().next().unwrap_or(""))
        })
        .collect();
    if funcs.is_empty()
        && let Some(p) = prefix
    {
        crate::stderr::line(format_args!("error: no function's name starts with `{p}`"));
        return ExitCode::from(1);
    }
    match format {
        FunctionsFormat::Json => {
            let doc: Vec<_> = funcs
                .iter()
                .map(|(name, sigs, doc)| serde_json::json!({"name": name, "signatures": sigs, "doc": doc}))
                .collect();
            crate::stdout::line(format_args!("{}", serde_json::Value::Array(doc)));
        }
        FunctionsFormat::Text => {
            let mut out = String::new();
            for (name, sigs, doc) in &funcs {
                out.push_str(&format!("{name}  {}", sigs.join(" | ")));
                if !doc.is_empty() {
                    out.push_str(&format!("  # {doc}"));
                }
                out.push('\n');
            }
            out.push_str(&format!("# {} function(s)\n", funcs.len()));
            crate::stdout::print(out);
        }
    }
    ExitCode::SUCCESS
}
