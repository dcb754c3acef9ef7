//! Automatic edges between resources (engine.md 2.14), computed from kinds, names and
//! params alone so the interpreter can add them without building resources.
//!
//! Rules implemented: `file` after its nearest managed ancestor directory and after every
//! managed fragment source; `exec` after the `file` of its program (and of its shell), after
//! the `user`/`group` it runs as; `svc` after its unit file, `cron` after the `svc` it
//! triggers; `user` after the groups it references (reversed when the user is absent);
//! `gzip` and `tar` after what produces their inputs (a `file`, or another archive's output;
//! for `tar` also anything managed inside an input directory); `json:edit` after the `file`
//! of its store; `ssh:authorized_key` after its `user` and the `file` it edits.
//! Not implemented: `pkg` edges, which need the package manager's file lists.

use std::collections::{BTreeMap, BTreeSet};

use engine::fasthash::FastMap as HashMap;

use lang::value::Value;

/// One resource as autoedges sees it: kind, name, params.
pub type AutoRes<'a> = (&'a str, &'a str, &'a BTreeMap<String, Value>);

/// Automatic edges `(from, to)` by index into `res`, sorted and without duplicates or
/// self-loops. Resources with `Meta:autoedge => false` must be left out by the caller (they
/// neither ask for edges nor are matched).
pub fn autoedges(res: &[AutoRes<'_>]) -> Vec<(usize, usize)> {
    let index = Index::new(res);
    let mut edges = BTreeSet::new();
    for (idx, (kind, name, params)) in res.iter().enumerate() {
        match *kind {
            "file" => file_edges(&index, idx, name, params, &mut edges),
            "exec" => exec_edges(&index, idx, params, &mut edges),
            "svc" => svc_edges(&index, idx, name, &mut edges),
            "user" => user_edges(&index, idx, params, &mut edges),
            "gzip" | "tar" => archive_edges(&index, idx, kind, params, &mut edges),
            "json:edit" => json_edit_edges(&index, idx, name, params, &mut edges),
            "ssh:authorized_key" => ssh_key_edges(&index, idx, params, &mut edges),
            _ => {}
        }
    }
    edges.into_iter().filter(|(a, b)| a != b).collect()
}

/// The path a `file` resource manages: `path` (default the name), with `dirname` /
/// `basename` overriding the directory or the last component.
pub fn file_path(name: &str, params: &BTreeMap<String, Value>) -> String {
    let mut path = str_param(params, "path").unwrap_or(name).to_string();
    if let Some(dirname) = str_param(params, "dirname").filter(|s| !s.is_empty()) {
        let (_, base) = split_last(&path);
        path = format!("{dirname}{base}");
    }
    if let Some(basename) = str_param(params, "basename").filter(|s| !s.is_empty()) {
        let (dir, _) = split_last(&path);
        path = format!("{dir}{basename}");
    }
    path
}

/// Lookup tables from what a rule asks for to the resources that provide it.
struct Index<'a> {
    /// `file` resources by managed path (directories keep their trailing `/`).
    files: HashMap<String, usize>,
    /// `(kind, name)` to index for every resource.
    by_key: HashMap<(&'a str, &'a str), usize>,
    /// `group` resources by their `gid` param.
    groups_by_gid: HashMap<i64, usize>,
    /// `cron` resources by the unit they trigger.
    crons_by_unit: HashMap<String, Vec<usize>>,
    /// `gzip` and `tar` resources by the file they write.
    archives: HashMap<String, usize>,
}

impl<'a> Index<'a> {
    fn new(res: &[AutoRes<'a>]) -> Index<'a> {
        let mut index = Index {
            files: HashMap::default(),
            by_key: HashMap::default(),
            groups_by_gid: HashMap::default(),
            crons_by_unit: HashMap::default(),
            archives: HashMap::default(),
        };
        for (idx, (kind, name, params)) in res.iter().enumerate() {
            index.by_key.entry((kind, name)).or_insert(idx);
            match *kind {
                "file" => {
                    index.files.entry(file_path(name, params)).or_insert(idx);
                }
                "group" => {
                    if let Some(gid) = params.get("gid").and_then(Value::as_int) {
                        index.groups_by_gid.entry(gid).or_insert(idx);
                    }
                }
                "cron" => {
                    let unit = str_param(params, "unit")
                        .filter(|u| !u.is_empty())
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("{name}.service"));
                    index.crons_by_unit.entry(unit).or_default().push(idx);
                }
                "gzip" | "tar" => {
                    index.archives.entry(output_path(name, params).to_string()).or_insert(idx);
                }
                _ => {}
            }
        }
        index
    }

    fn file(&self, path: &str) -> Option<usize> {
        self.files.get(path).copied()
    }
}

fn file_edges(
    index: &Index<'_>,
    idx: usize,
    name: &str,
    params: &BTreeMap<String, Value>,
    edges: &mut BTreeSet<(usize, usize)>,
) {
    let path = file_path(name, params);
    // Nearest managed ancestor directory only: it depends on its own parent in turn.
    if let Some(dir) = ancestors(&path).into_iter().find_map(|dir| index.file(&dir)) {
        edges.insert((dir, idx));
    }
    for frag in list_param(params, "fragments") {
        if let Some(src) = index.file(frag) {
            edges.insert((src, idx));
        }
    }
}

fn exec_edges(index: &Index<'_>, idx: usize, params: &BTreeMap<String, Value>, edges: &mut BTreeSet<(usize, usize)>) {
    let mut programs = Vec::new();
    for (cmd, shell) in [
        ("cmd", "shell"),
        ("watchcmd", "watchshell"),
        ("ifcmd", "ifshell"),
        ("nifcmd", "nifshell"),
        ("donecmd", "doneshell"),
    ] {
        let shell = str_param(params, shell).filter(|s| !s.is_empty());
        match (str_param(params, cmd).filter(|s| !s.is_empty()), shell) {
            (Some(_), Some(shell)) => programs.push(shell.to_string()),
            (Some(cmd), None) => programs.extend(cmd.split_whitespace().next().map(str::to_string)),
            _ => {}
        }
    }
    for program in programs.iter().filter(|p| p.starts_with('/')) {
        if let Some(file) = index.file(program) {
            edges.insert((file, idx));
        }
    }
    for (param, kind) in [("user", "user"), ("group", "group")] {
        if let Some(name) = str_param(params, param).filter(|s| !s.is_empty())
            && let Some(&other) = index.by_key.get(&(kind, name))
        {
            edges.insert((other, idx));
        }
    }
}

fn svc_edges(index: &Index<'_>, idx: usize, name: &str, edges: &mut BTreeSet<(usize, usize)>) {
    let unit = format!("{name}.service");
    let unit_file =
        ["/etc/systemd/system/", "/usr/lib/systemd/system/"].iter().find_map(|dir| index.file(&format!("{dir}{unit}")));
    if let Some(file) = unit_file {
        edges.insert((file, idx));
    }
    for &cron in index.crons_by_unit.get(&unit).into_iter().flatten() {
        edges.insert((idx, cron));
    }
}

fn user_edges(index: &Index<'_>, idx: usize, params: &BTreeMap<String, Value>, edges: &mut BTreeSet<(usize, usize)>) {
    let absent = str_param(params, "state") == Some("absent");
    let mut groups = Vec::new();
    if let Some(gid) = params.get("gid").and_then(Value::as_int)
        && let Some(&g) = index.groups_by_gid.get(&gid)
    {
        groups.push(g);
    }
    let names = str_param(params, "group").into_iter().chain(list_param(params, "groups"));
    for group in names {
        if let Some(&g) = index.by_key.get(&("group", group)) {
            groups.push(g);
        }
    }
    for g in groups {
        edges.insert(if absent { (idx, g) } else { (g, idx) });
    }
}

/// The file a `gzip` or `tar` resource writes: `path`, default the name.
fn output_path<'a>(name: &'a str, params: &'a BTreeMap<String, Value>) -> &'a str {
    str_param(params, "path").filter(|p| !p.is_empty()).unwrap_or(name)
}

/// Whether `path` is `input` itself or lies inside it (trailing slashes ignored).
fn within(path: &str, input: &str) -> bool {
    let base = input.trim_end_matches('/');
    let path = path.trim_end_matches('/');
    path == base || path.strip_prefix(base).is_some_and(|rest| rest.starts_with('/'))
}

fn archive_edges(
    index: &Index<'_>,
    idx: usize,
    kind: &str,
    params: &BTreeMap<String, Value>,
    edges: &mut BTreeSet<(usize, usize)>,
) {
    if kind == "gzip" {
        if let Some(input) = str_param(params, "input") {
            edges.extend(index.file(input).or_else(|| index.archives.get(input).copied()).map(|p| (p, idx)));
        }
        return;
    }
    for input in list_param(params, "inputs").filter(|i| i.starts_with('/')) {
        let producers = index.files.iter().chain(&index.archives).filter(|(path, _)| within(path, input));
        edges.extend(producers.map(|(_, &p)| (p, idx)));
    }
}

fn json_edit_edges(
    index: &Index<'_>,
    idx: usize,
    name: &str,
    params: &BTreeMap<String, Value>,
    edges: &mut BTreeSet<(usize, usize)>,
) {
    let store = str_param(params, "store").filter(|s| !s.is_empty()).unwrap_or(name);
    let path = store.strip_prefix("file://").unwrap_or(store);
    if path.starts_with('/') {
        edges.extend(index.file(path).map(|f| (f, idx)));
    }
}

fn ssh_key_edges(
    index: &Index<'_>,
    idx: usize,
    params: &BTreeMap<String, Value>,
    edges: &mut BTreeSet<(usize, usize)>,
) {
    if let Some(user) = str_param(params, "user").filter(|u| !u.is_empty()) {
        edges.extend(index.by_key.get(&("user", user)).map(|&u| (u, idx)));
    }
    if let Some(file) = str_param(params, "file").filter(|f| f.starts_with('/')) {
        edges.extend(index.file(file).map(|f| (f, idx)));
    }
}

/// Ancestor directories of `path`, nearest first, each with a trailing `/`:
/// `/a/b/c` and `/a/b/c/` both give `/a/b/`, `/a/`, `/`.
fn ancestors(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = path.trim_end_matches('/');
    while let Some(pos) = cur.rfind('/') {
        out.push(cur[..=pos].to_string());
        cur = &cur[..pos];
    }
    out
}

/// Splits `/a/b/c` into (`/a/b/`, `c`) and `/a/b/` into (`/a/`, `b/`).
fn split_last(path: &str) -> (&str, &str) {
    let trimmed = path.trim_end_matches('/');
    match trimmed.rfind('/') {
        Some(pos) => (&path[..=pos], &path[pos + 1..]),
        None => ("", path),
    }
}

fn str_param<'a>(params: &'a BTreeMap<String, Value>, name: &str) -> Option<&'a str> {
    params.get(name).and_then(Value::as_str)
}

fn list_param<'a>(params: &'a BTreeMap<String, Value>, name: &str) -> impl Iterator<Item = &'a str> {
    params.get(name).and_then(Value::as_list).unwrap_or(&[]).iter().filter_map(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, Value)]) -> BTreeMap<String, Value> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    fn check(res: &[(&str, &str, BTreeMap<String, Value>)]) -> Vec<String> {
        let borrowed: Vec<AutoRes<'_>> = res.iter().map(|(k, n, p)| (*k, *n, p)).collect();
        autoedges(&borrowed)
            .into_iter()
            .map(|(a, b)| format!("{}[{}] -> {}[{}]", res[a].0, res[a].1, res[b].0, res[b].1))
            .collect()
    }

    #[test]
    fn file_depends_on_nearest_managed_directory_only() {
        let none = BTreeMap::new();
        let edges = check(&[
            ("file", "/tmp/", none.clone()),
            ("file", "/tmp/frags/", none.clone()),
            ("file", "/tmp/frags/a", none.clone()),
            ("file", "/etc/x", none.clone()),
        ]);
        assert_eq!(edges, ["file[/tmp/] -> file[/tmp/frags/]", "file[/tmp/frags/] -> file[/tmp/frags/a]"]);
    }

    #[test]
    fn fragment_sources_come_before_the_fragmented_file() {
        let frags = params(&[(
            "fragments",
            Value::list(vec![Value::str("/tmp/frags/"), Value::str("/tmp/one"), Value::str("/nowhere")]),
        )]);
        let edges = check(&[
            ("file", "/tmp/frags/", BTreeMap::new()),
            ("file", "/tmp/one", BTreeMap::new()),
            ("file", "/etc/whole", frags),
        ]);
        assert_eq!(edges, ["file[/tmp/frags/] -> file[/etc/whole]", "file[/tmp/one] -> file[/etc/whole]"]);
    }

    #[test]
    fn path_param_overrides_the_name() {
        let p = params(&[("path", Value::str("/srv/app/conf"))]);
        let edges = check(&[("file", "dir", params(&[("path", Value::str("/srv/app/"))])), ("file", "conf", p)]);
        assert_eq!(edges, ["file[dir] -> file[conf]"]);
        assert_eq!(file_path("/a/b", &params(&[("basename", Value::str("c"))])), "/a/c");
        assert_eq!(file_path("/a/b", &params(&[("dirname", Value::str("/x/"))])), "/x/b");
    }

    #[test]
    fn exec_depends_on_its_program_user_and_group() {
        let e = params(&[
            ("cmd", Value::str("/usr/bin/tool --flag")),
            ("ifcmd", Value::str("true")),
            ("user", Value::str("alice")),
            ("group", Value::str("staff")),
        ]);
        let edges = check(&[
            ("exec", "e", e),
            ("file", "/usr/bin/tool", BTreeMap::new()),
            ("user", "alice", BTreeMap::new()),
            ("group", "staff", BTreeMap::new()),
        ]);
        assert_eq!(edges, ["file[/usr/bin/tool] -> exec[e]", "user[alice] -> exec[e]", "group[staff] -> exec[e]"]);
        let shell = params(&[("cmd", Value::str("echo hi")), ("shell", Value::str("/bin/bash"))]);
        let edges = check(&[("exec", "e", shell), ("file", "/bin/bash", BTreeMap::new())]);
        assert_eq!(edges, ["file[/bin/bash] -> exec[e]"]);
    }

    #[test]
    fn svc_after_unit_file_and_before_its_cron() {
        let edges = check(&[
            ("svc", "app", BTreeMap::new()),
            ("file", "/usr/lib/systemd/system/app.service", BTreeMap::new()),
            ("file", "/etc/systemd/system/app.service", BTreeMap::new()),
            ("cron", "app", BTreeMap::new()),
        ]);
        assert_eq!(edges, ["svc[app] -> cron[app]", "file[/etc/systemd/system/app.service] -> svc[app]"]);
    }

    #[test]
    fn archives_follow_their_inputs_and_each_other() {
        let none = BTreeMap::new();
        let tar = params(&[("inputs", Value::list(vec![Value::str("/tmp/tar/"), Value::str("/tmp/standalone")]))]);
        let edges = check(&[
            ("file", "/tmp/tar/", none.clone()),
            ("file", "/tmp/tar/dir/deep", none.clone()),
            ("file", "/tmp/standalone", none.clone()),
            ("file", "/tmp/tarnot", none.clone()),
            ("tar", "/tmp/foo.tar", tar),
            ("gzip", "/tmp/foo.tar.gz", params(&[("input", Value::str("/tmp/foo.tar"))])),
            ("gzip", "/tmp/in.gz", params(&[("input", Value::str("/tmp/standalone"))])),
        ]);
        assert_eq!(
            edges,
            [
                "file[/tmp/tar/] -> file[/tmp/tar/dir/deep]",
                "file[/tmp/tar/] -> tar[/tmp/foo.tar]",
                "file[/tmp/tar/dir/deep] -> tar[/tmp/foo.tar]",
                "file[/tmp/standalone] -> tar[/tmp/foo.tar]",
                "file[/tmp/standalone] -> gzip[/tmp/in.gz]",
                "tar[/tmp/foo.tar] -> gzip[/tmp/foo.tar.gz]",
            ]
        );
    }

    #[test]
    fn json_edit_and_ssh_keys_follow_their_files_and_user() {
        let none = BTreeMap::new();
        let key = params(&[("user", Value::str("alice")), ("file", Value::str("/etc/keys"))]);
        let edges = check(&[
            ("json:edit", "e", params(&[("store", Value::str("file:///etc/doc.json"))])),
            ("json:edit", "/etc/doc.json", none.clone()),
            ("file", "/etc/doc.json", none.clone()),
            ("ssh:authorized_key", "k", key),
            ("user", "alice", none.clone()),
            ("file", "/etc/keys", none),
        ]);
        assert_eq!(
            edges,
            [
                "file[/etc/doc.json] -> json:edit[e]",
                "file[/etc/doc.json] -> json:edit[/etc/doc.json]",
                "user[alice] -> ssh:authorized_key[k]",
                "file[/etc/keys] -> ssh:authorized_key[k]",
            ]
        );
    }

    #[test]
    fn user_and_groups_order_flips_when_absent() {
        let exists = params(&[("state", Value::str("exists")), ("groups", Value::list(vec![Value::str("wheel")]))]);
        let absent = params(&[("state", Value::str("absent")), ("gid", Value::Int(7))]);
        let edges = check(&[
            ("user", "a", exists),
            ("user", "b", absent),
            ("group", "wheel", BTreeMap::new()),
            ("group", "seven", params(&[("gid", Value::Int(7))])),
        ]);
        assert_eq!(edges, ["user[b] -> group[seven]", "group[wheel] -> user[a]"]);
    }
}
