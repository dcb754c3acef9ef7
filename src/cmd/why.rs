//! `tend why PATH KIND[NAME]`: explains how a resource's params were produced. Compiles,
//! finds the resource statements of that kind, runs the dataflow once on the copy of the
//! graph that `lang::provenance::probe` makes (a probe beside each statement, carrying
//! the values of its provenance trees), and prints the trees with their values, then each
//! world value the program read with its revision and staleness (`--seeds`: from the etcd
//! cluster).
use crate::cli::WhyFormat;
use crate::compile::{self, FirstRun, Report, WorldUse};
use lang::ir::{FuncGraph, NodeId, NodeKind, Origin};
use lang::provenance::{BindHow, Builder, Enclosing, Entry, Located, SourceIndex, What, probe};
use lang::span::{SourceMap, Span};
use lang::value::Value;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

pub fn run(
    path: &Path,
    target: &str,
    format: WhyFormat,
    timeout: f64,
    hostname: Option<String>,
    world: &WorldUse,
) -> ExitCode {
    let Some((kind, name)) = parse_target(target) else {
        crate::stderr::line(format_args!(
            "error: `{target}` is not a resource: expected KIND[NAME], e.g. file[/tmp/x]"
        ));
        return ExitCode::from(2);
    };
    let (registry, catalog) = compile::catalog(hostname.as_deref());
    let how = if format == WhyFormat::Json { Report::Json } else { Report::Human };
    let (program, sources, graph) = match compile::compile_or_report(path, &catalog, how) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let index = SourceIndex::build(&sources);
    let is_fact = |f: &str| registry.get(f).is_some_and(|b| matches!(b.imp, funcs::api::FuncImpl::Stream(_)));
    let located = lang::provenance::resources_of_kind(&graph, &kind);
    let plans: Vec<probe::Plan> = {
        let mut builder = Builder::new(&graph, &index, &is_fact);
        located.iter().map(|l| probe::Plan::build(&mut builder, l)).collect()
    };
    let probed = probe::with_probes(&graph, &located, &plans);

    let run = FirstRun { root: &program.root, hostname, timeout_secs: timeout, world };
    let (output, read) = match compile::first_output_or_report(probed, registry, &run, &sources, how) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let world_values: Vec<serde_json::Value> = read
        .seen
        .iter()
        .map(|s| {
            json!({
                "topic": s.topic.to_string(),
                "read": s.view.read,
                "stale": s.view.stale,
                "revision": s.view.revision,
                "state": s.view.describe(),
            })
        })
        .collect();

    // Which statements produced it, with the probed values of each production.
    let found = probe::readings(&output.resources, &located, &name);
    if found.is_empty()
        && let Some(instance) = output.instances.iter().find(|i| i.kind == kind && i.name == name)
    {
        let ctx = Ctx { sources: &sources, graph: &graph, index: &index };
        let report = ctx.instance(&output, instance);
        match format {
            WhyFormat::Json => crate::stdout::line(format_args!("{report:#}")),
            WhyFormat::Text => crate::stdout::print(format_args!("{}", instance_text(&report))),
        }
        return ExitCode::SUCCESS;
    }
    if found.is_empty() {
        let existing: Vec<String> = output
            .resources
            .iter()
            .filter(|d| !probe::is_probe(&d.kind))
            .map(|d| format!("{}[{}]", d.kind, d.name))
            .collect();
        let wanted = format!("{kind}[{name}]");
        let near = lang::suggest::closest(&wanted, existing.iter().cloned());
        let mut msg = format!("resource `{wanted}` is not in the graph");
        if existing.is_empty() {
            msg.push_str(" (the program declares no resources)");
        } else if !near.is_empty() {
            msg.push_str(&format!(
                "; did you mean {}?",
                near.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
            ));
        } else {
            msg.push_str(&format!(" ({} resource(s) exist; see `tend graph`)", existing.len()));
        }
        let facts: Vec<String> = plans
            .iter()
            .flat_map(probe::Plan::name_facts)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if !facts.is_empty() {
            msg.push_str(&format!(
                "; note: names of `{kind}` resources depend on {} which may have changed since",
                facts.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
            ));
        }
        match format {
            WhyFormat::Json => {
                crate::stdout::line(format_args!("{:#}", json!({"ok": false, "error": msg, "did_you_mean": near})))
            }
            WhyFormat::Text => crate::stderr::line(format_args!("error: {msg}")),
        }
        return ExitCode::from(1);
    }

    let ctx = Ctx { sources: &sources, graph: &graph, index: &index };
    let mut reports: Vec<serde_json::Value> = found
        .iter()
        .flat_map(|(i, runs)| runs.iter().map(move |vals| (*i, vals)))
        .map(|(i, vals)| ctx.statement(&located[i], &plans[i], vals))
        .collect();
    if !lang::secret::shown() {
        let mut secrets: Vec<String> = Vec::new();
        for d in output.resources.iter().filter(|d| d.kind == kind && d.name == name) {
            let get = |n: &str| d.params.iter().find(|(k, _, _)| k == n).map(|(_, v, _)| v);
            for (k, v, _) in &d.params {
                if let Value::Str(text) = v
                    && lang::secret::is_secret(&kind, &name, get, k)
                {
                    secrets.push(text.to_string());
                }
            }
        }
        for report in &mut reports {
            lang::secret::scrub(report, &secrets);
        }
    }
    let after = ctx.after_evaluation(&output, &kind, &name);
    if let Some(last) = reports.last_mut() {
        last["after_evaluation"] = json!(after);
    }
    match format {
        WhyFormat::Json => crate::stdout::line(format_args!(
            "{:#}",
            json!({"ok": true, "resource": format!("{kind}[{name}]"), "statements": reports, "world": world_values})
        )),
        WhyFormat::Text => {
            let mut out = text(&format!("{kind}[{name}]"), &reports);
            if !world_values.is_empty() {
                let from = if world.seeds.is_empty() { "the local store".to_string() } else { world.seeds.join(",") };
                out.push_str(&format!("\nworld values the program read (from {from}):\n"));
                for v in &world_values {
                    out.push_str(&format!(
                        "  {}: {}\n",
                        v["topic"].as_str().unwrap_or(""),
                        v["state"].as_str().unwrap_or("")
                    ));
                }
            }
            crate::stdout::print(format_args!("{out}"))
        }
    }
    ExitCode::SUCCESS
}

/// `file[/tmp/x]` or `File[/tmp/x]` → (`file`, `/tmp/x`).
fn parse_target(s: &str) -> Option<(String, String)> {
    let open = s.find('[')?;
    let name = s[open + 1..].strip_suffix(']')?;
    let kind = s[..open].trim();
    if kind.is_empty() || name.is_empty() {
        return None;
    }
    Some((kind.to_lowercase(), name.to_string()))
}

struct Ctx<'a> {
    sources: &'a SourceMap,
    graph: &'a FuncGraph,
    index: &'a SourceIndex,
}

impl Ctx<'_> {
    fn at(&self, span: Span) -> String {
        let f = self.sources.get(span.file);
        let lc = f.line_col(span.start);
        format!("{}:{}:{}", f.name, lc.line, lc.col)
    }

    /// The first line of the source a span covers, shortened.
    fn source(&self, span: Span) -> String {
        let text = self.sources.snippet(span);
        let mut first = text.lines().next().unwrap_or("").trim().to_string();
        if text.trim().lines().count() > 1 {
            first.push_str(" …");
        }
        shorten(&first, 80)
    }

    /// A value as `{"text": mcl rendering, "json": the value}`; `null` when not evaluated.
    fn value(v: Option<&Value>) -> serde_json::Value {
        match v {
            None => serde_json::Value::Null,
            Some(Value::Str(s)) if s.as_ref() == probe::FAILED => state("<error, caught by <|>>", "error_caught"),
            Some(v) => json!({"text": shorten(&v.to_string(), 200), "json": crate::cmd::graph::value_json(v)}),
        }
    }

    /// An instance of a defined type (`tend why vhost[shop]`): where it is declared, the
    /// value of each param, and the resources its body declared. A `password` param, and
    /// any text a secret param of its resources holds, are shown as secrets are.
    fn instance(&self, output: &lang::output::Output, i: &lang::output::InstanceDecl) -> serde_json::Value {
        let key = (i.kind.clone(), i.name.clone());
        let declared: Vec<&lang::output::ResDecl> =
            output.resources.iter().filter(|d| !probe::is_probe(&d.kind) && d.within.contains(&key)).collect();
        let mut secrets: Vec<String> = Vec::new();
        if !lang::secret::shown() {
            for d in &declared {
                let get = |n: &str| d.params.iter().find(|(k, _, _)| k == n).map(|(_, v, _)| v);
                for (k, v, _) in &d.params {
                    if let Value::Str(text) = v
                        && lang::secret::is_secret(&d.kind, &d.name, get, k)
                    {
                        secrets.push(text.to_string());
                    }
                }
            }
        }
        let params: Vec<serde_json::Value> = i
            .params
            .iter()
            .map(|(name, value)| {
                let value = match value {
                    Value::Str(text) if name == "password" && !lang::secret::shown() => {
                        state(&lang::secret::summary(text.as_bytes()), "secret")
                    }
                    v => Self::value(Some(v)),
                };
                json!({"param": name, "value": value})
            })
            .collect();
        let mut report = json!({
            "ok": true,
            "instance": format!("{}[{}]", i.kind, i.name),
            "defined_type": i.kind,
            "at": self.at(i.span),
            "source": self.source(i.span),
            "classes": i.classes,
            "virtual": i.virtuality != lang::output::Virtuality::Real,
            "params": params,
            "resources": declared.iter().map(|d| format!("{}[{}]", d.kind, d.name)).collect::<Vec<_>>(),
        });
        lang::secret::scrub(&mut report, &secrets);
        report
    }

    /// What interpretation does to the resource after the statement made it: collectors
    /// that realize or override it, overrides and `realize` statements, in that order.
    fn after_evaluation(&self, output: &lang::output::Output, kind: &str, name: &str) -> Vec<serde_json::Value> {
        let mut out = Vec::new();
        let Some(decl) = output.resources.iter().find(|d| d.kind == kind && d.name == name) else { return out };
        let virtual_res = decl.virtuality != lang::output::Virtuality::Real;
        let set = |by: &str, p: &lang::output::OverrideParam| {
            let how = if p.append { "appended to" } else { "set" };
            json!({"by": by, "param": p.name, "how": how, "value": Self::value(Some(&p.value)), "at": self.at(p.span), "source": self.source(p.span)})
        };
        for c in output.collectors.iter().filter(|c| lang::interpret::collects(c, decl)) {
            if virtual_res {
                out.push(
                    json!({"by": "collector", "how": "realized", "at": self.at(c.span), "source": self.source(c.span)}),
                );
            }
            out.extend(c.params.iter().map(|p| set("collector", p)));
        }
        for r in output.realized.iter().filter(|r| r.kind == kind && r.name == name) {
            out.push(json!({"by": "realize", "how": "realized", "at": self.at(r.span), "source": self.source(r.span)}));
        }
        for o in output.overrides.iter().filter(|o| o.kind == kind && o.names.iter().any(|n| n == name)) {
            out.extend(o.params.iter().map(|p| set("override", p)));
        }
        out
    }

    fn statement(&self, l: &Located<'_>, plan: &probe::Plan, vals: &BTreeMap<String, Value>) -> serde_json::Value {
        let r = l.resource;
        let get = |n: NodeId| vals.get(&probe::field(n));
        let mut gates = Vec::new();
        for enc in &l.enclosing {
            match enc {
                Enclosing::If { cond, then, span } => gates.push(json!({
                    "kind": "if",
                    "at": self.at(*span),
                    "source": self.source(self.graph.node(*cond).span),
                    "branch": if *then { "then" } else { "else" },
                    "value": Self::value(get(*cond)),
                })),
                Enclosing::Instance { kind, title, span } => gates.push(json!({
                    "kind": "define",
                    "at": self.at(*span),
                    "source": self.source(*span),
                    "instance": format!("{kind}[{}]", vals.get(&format!("p{}", title.0)).and_then(|v| v.as_str()).unwrap_or("?")),
                })),
                Enclosing::For { key: k, value: v, kv, span, .. } => {
                    let name = |p: &lang::ir::ParamId| self.graph.params[p.0 as usize].name.clone();
                    gates.push(json!({
                        "kind": if *kv { "forkv" } else { "for" },
                        "at": self.at(*span),
                        "source": self.source(*span),
                        "element": {
                            name(k): Self::value(vals.get(&format!("p{}", k.0))),
                            name(v): Self::value(vals.get(&format!("p{}", v.0))),
                        },
                    }))
                }
            }
        }
        let class = self.index.class_of(r.span).map(|(name, span, includes)| {
            json!({"class": name, "at": self.at(span), "includes": includes.iter().map(|s| json!({"at": self.at(*s), "source": self.source(*s)})).collect::<Vec<_>>()})
        });
        let mut params = Vec::new();
        for probe::Param { name: pname, meta, span, cond, value } in &plan.params {
            let cond_value = cond.as_ref().map(|c| get(c.node));
            if let Some(cv) = cond_value
                && cv != Some(&Value::Bool(true))
            {
                continue; // an elvis field whose condition is false was not set
            }
            let defaulted = r.fields.iter().any(|f| f.span == *span && f.origin == Origin::Default);
            params.push(json!({
                "name": pname,
                "meta": meta,
                "set_by": if defaulted { "default" } else { "statement" },
                "at": self.at(*span),
                "source": self.source(*span),
                "value": Self::value(get(value.node)),
                "condition": cond.as_ref().map(|c| self.entry(c, vals)),
                "provenance": self.entry(value, vals),
            }));
        }
        json!({
            "at": self.at(r.span),
            "source": self.source(r.span),
            "gated_by": gates,
            "class": class,
            "name": self.entry(&plan.name, vals),
            "params": params,
        })
    }

    fn entry(&self, e: &Entry, vals: &BTreeMap<String, Value>) -> serde_json::Value {
        let mut o = serde_json::Map::new();
        o.insert("kind".into(), json!(e.what.key()));
        o.insert("what".into(), json!(e.what.describe()));
        if !e.role.is_empty() {
            o.insert("role".into(), json!(e.role));
        }
        o.insert("at".into(), json!(self.at(e.span)));
        o.insert("source".into(), json!(self.source(e.span)));
        if let Some((name, span, how)) = &e.bind {
            let aliases: Vec<_> = self
                .index
                .aliases_of(name, span.file)
                .into_iter()
                .map(|(a, s)| json!({"name": format!("${a}"), "at": self.at(s)}))
                .collect();
            let how = match how {
                BindHow::Bind => "bind",
                BindHow::Default => "default",
                BindHow::Named => "named",
            };
            let bind = json!({"name": format!("${name}"), "at": self.at(*span), "how": how, "aliases": aliases});
            o.insert("bind".into(), bind);
        }
        if let What::Inline(_) = e.what {
            o.insert("called_at".into(), json!(self.at(e.span)));
        }
        if let What::LambdaParam(_) | What::LoopVar(_) = e.what
            && let NodeKind::Param(p) = self.graph.node(e.node).kind
        {
            o.insert("defined_at".into(), json!(self.at(self.graph.params[p.0 as usize].span)));
        }
        let skipped =
            e.gates.iter().any(|(c, holds)| vals.get(&probe::field(*c)).is_some_and(|v| v != &Value::Bool(*holds)));
        let value = match &self.graph.node(e.node).kind {
            _ if skipped => state("(branch not taken)", "not_taken"),
            NodeKind::Const(v) => Self::value(Some(v)),
            _ if e.fallback => state("(only if the left side fails)", "fallback"),
            _ if e.per_call => state("(per call)", "per_call"),
            _ => Self::value(vals.get(&probe::field(e.node))),
        };
        o.insert("value".into(), value);
        if e.repeat {
            o.insert("see_above".into(), json!(true));
        }
        if !e.children.is_empty() {
            o.insert("children".into(), e.children.iter().map(|c| self.entry(c, vals)).collect());
        }
        if e.truncated > 0 {
            o.insert("truncated".into(), json!(e.truncated));
        }
        o.into()
    }
}

/// The text rendering of the JSON report.
/// The text form of [`Ctx::instance`]'s report.
fn instance_text(report: &serde_json::Value) -> String {
    let s = |v: &serde_json::Value| v.as_str().unwrap_or("").to_string();
    let mut out = format!(
        "{}: an instance of defined type `{}`\n\n{}  {}\n",
        s(&report["instance"]),
        s(&report["defined_type"]),
        s(&report["at"]),
        s(&report["source"])
    );
    for class in report["classes"].as_array().into_iter().flatten() {
        out.push_str(&format!("  in class `{}`\n", s(class)));
    }
    if report["virtual"].as_bool() == Some(true) {
        out.push_str("  virtual: its resources exist only where realized\n");
    }
    out.push_str("\nparams:\n");
    for p in report["params"].as_array().into_iter().flatten() {
        out.push_str(&format!("  ${} = {}\n", s(&p["param"]), plain(&p["value"])));
    }
    let resources = report["resources"].as_array().map_or(&[][..], Vec::as_slice);
    out.push_str(&format!("\nresources it declared ({}):\n", resources.len()));
    for r in resources {
        out.push_str(&format!("  {}\n", s(r)));
    }
    out
}

fn text(resource: &str, statements: &[serde_json::Value]) -> String {
    let s = |v: &serde_json::Value| v.as_str().unwrap_or("").to_string();
    let mut out = format!("{resource}: produced by {} statement evaluation(s)\n", statements.len());
    for st in statements {
        out.push_str(&format!("\n{}  {}\n", s(&st["at"]), s(&st["source"])));
        if let Some(c) = st["class"].as_object() {
            out.push_str(&format!("  in class `{}` ({})", s(&c["class"]), s(&c["at"])));
            let inc: Vec<String> = c["includes"]
                .as_array()
                .map(|a| a.iter().map(|i| format!("{} `{}`", s(&i["at"]), s(&i["source"]))).collect())
                .unwrap_or_default();
            if !inc.is_empty() {
                out.push_str(&format!(", included by {}", inc.join("; ")));
            }
            out.push('\n');
        }
        for g in st["gated_by"].as_array().into_iter().flatten() {
            if s(&g["kind"]) == "define" {
                out.push_str(&format!("  in instance {}  ({})\n", s(&g["instance"]), s(&g["at"])));
            } else if s(&g["kind"]) == "if" {
                out.push_str(&format!(
                    "  gated by if {}  ({})  = {}, {} branch\n",
                    s(&g["source"]),
                    s(&g["at"]),
                    plain(&g["value"]),
                    s(&g["branch"])
                ));
            } else {
                let el: Vec<String> = g["element"]
                    .as_object()
                    .map(|m| m.iter().map(|(k, v)| format!("${k} = {}", plain(v))).collect())
                    .unwrap_or_default();
                out.push_str(&format!("  in loop {}  ({})  element {}\n", s(&g["source"]), s(&g["at"]), el.join(", ")));
            }
        }
        out.push_str(&format!("  name = {}\n", plain(&st["name"]["value"])));
        tree(&st["name"], 2, &mut out);
        for p in st["params"].as_array().into_iter().flatten() {
            let label = if p["meta"].as_bool() == Some(true) { "meta " } else { "" };
            let by = if s(&p["set_by"]) == "default" { "set by the default at " } else { "" };
            out.push_str(&format!("\n  {label}{}  {by}{}  {}\n", s(&p["name"]), s(&p["at"]), s(&p["source"])));
            out.push_str(&format!("    = {}\n", plain(&p["value"])));
            if !p["condition"].is_null() {
                out.push_str("    set because:\n");
                tree(&p["condition"], 4, &mut out);
            }
            tree(&p["provenance"], 4, &mut out);
        }
        let after = st["after_evaluation"].as_array().map(Vec::as_slice).unwrap_or_default();
        if !after.is_empty() {
            out.push_str("\n  then, when the graph was built:\n");
        }
        for a in after {
            match s(&a["how"]).as_str() {
                "realized" => out.push_str(&format!(
                    "    realized by the {} at {}  {}\n",
                    s(&a["by"]),
                    s(&a["at"]),
                    s(&a["source"])
                )),
                how => {
                    let (op, verb) = if how == "set" { ("=", "set") } else { ("+=", "appended") };
                    out.push_str(&format!(
                        "    {} {op} {}, {verb} by the {} at {}  {}\n",
                        s(&a["param"]),
                        plain(&a["value"]),
                        s(&a["by"]),
                        s(&a["at"]),
                        s(&a["source"])
                    ))
                }
            }
        }
    }
    out
}

/// A value that is not one known value, with why.
fn state(text: &str, state: &str) -> serde_json::Value {
    json!({"text": text, "state": state})
}

fn plain(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Object(o) => o.get("text").and_then(|t| t.as_str()).unwrap_or("").to_string(),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "(not evaluated)".into(),
        other => other.to_string(),
    }
}

fn tree(e: &serde_json::Value, indent: usize, out: &mut String) {
    let s = |v: &serde_json::Value| v.as_str().unwrap_or("").to_string();
    let pad = " ".repeat(indent);
    let role = if e["role"].is_string() { format!("{}: ", s(&e["role"])) } else { String::new() };
    let mut line = format!("{pad}{role}{}", s(&e["what"]));
    if let Some(b) = e["bind"].as_object() {
        let how = match b["how"].as_str() {
            Some("default") => "the default at",
            Some("named") => "named argument at",
            _ => "bound at",
        };
        line.push_str(&format!(" via `{}` ({how} {}", s(&b["name"]), s(&b["at"])));
        for a in b["aliases"].as_array().into_iter().flatten() {
            line.push_str(&format!(", copied to `{}` at {}", s(&a["name"]), s(&a["at"])));
        }
        line.push(')');
    }
    line.push_str(&format!("  {}  `{}`", s(&e["at"]), s(&e["source"])));
    if e["defined_at"].is_string() {
        line.push_str(&format!(" (defined at {})", s(&e["defined_at"])));
    }
    if !e["value"].is_null() {
        line.push_str(&format!("  = {}", plain(&e["value"])));
    }
    if e["see_above"].as_bool() == Some(true) {
        line.push_str("  (see above)");
    }
    out.push_str(&line);
    out.push('\n');
    for c in e["children"].as_array().into_iter().flatten() {
        tree(c, indent + 2, out);
    }
    if let Some(n) = e["truncated"].as_u64() {
        out.push_str(&format!("{pad}  … {n} more\n"));
    }
}

/// At most `max` characters of `s`, with `…` when cut (for messages quoting a value).
pub(crate) fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max).collect();
    t.push('…');
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_and_suggestions() {
        assert_eq!(parse_target("File[/tmp/x]"), Some(("file".into(), "/tmp/x".into())));
        assert_eq!(parse_target("file[a[b]]"), Some(("file".into(), "a[b]".into())));
        assert_eq!(parse_target("file/tmp"), None);
        let existing = ["file[/tmp/a]".to_string(), "pkg[cowsay]".to_string()];
        assert_eq!(lang::suggest::closest("file[/tmp/b]", existing.iter().cloned()), vec!["file[/tmp/a]".to_string()]);
    }
}
