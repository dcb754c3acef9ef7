//! Automatic edges between resources (engine.md 2.14), computed from kinds, names and
//! params alone so the interpreter can add them without building resources.
//!
//! Each kind states its own rules beside its implementation, in its [`crate::contract::kind::Kind`]:
//! what it `provides` to the [`Index`] (a `file` its path, a `group` its gid, a `cron` the
//! unit it starts, a `gzip` or `tar` the file it writes) and the edges it `requires` from
//! what others provide. Rules today: `file` after its nearest managed ancestor directory
//! and its fragment sources; `exec` after the `file` of its program (and of its shell) and
//! the `user`/`group` it runs as; `svc` after its unit file and before the `cron` that
//! triggers it; `user` after its groups (reversed when absent); `gzip` and `tar` after what
//! produces their inputs; `json:edit` after the `file` of its store; `ssh:authorized_key`
//! after its `user` and the `file` it edits; `fwupd:remote` after the `svc` of the daemon
//! and the `file` of its configuration, and `fwupd:device` and `fwupd:system` after every
//! `fwupd:remote` (any of them may offer the release). Not implemented: `pkg` edges, which need the
//! package manager's file lists.

use lang::params::ParamMap;
use std::borrow::Cow;

use engine::fasthash::FastMap as HashMap;

use lang::value::Value;

/// One resource as autoedges sees it: kind, name, params.
pub type AutoRes<'a> = (&'a str, &'a str, &'a ParamMap);

/// Edges `(from, to)` by index into the resources, as the rules find them (duplicates
/// allowed: [`autoedges`] sorts them and keeps each once).
pub type Edges = Vec<(usize, usize)>;

/// Records what resource `idx` (`name`, `params`) offers others; the index may borrow
/// from both for as long as it lives.
pub type ProvideFn = for<'a> fn(&mut Index<'a>, usize, &'a str, &'a ParamMap);

/// Adds the edges resource `idx` needs from what the index holds.
pub type RequireFn = fn(&Index<'_>, usize, &str, &ParamMap, &mut Edges);

/// A kind's automatic-edge rules (both optional).
#[derive(Clone, Copy)]
pub struct Rules {
    pub provides: Option<ProvideFn>,
    pub requires: Option<RequireFn>,
    /// Every param the two read: a resource whose other params change keeps its edges (a
    /// live edit of such params patches the running graph instead of rebuilding it). Debug
    /// builds, and so the tests, show the rules only these params.
    pub reads: &'static [&'static str],
}

impl Rules {
    /// A kind with no automatic edges.
    pub const NONE: Rules = Rules { provides: None, requires: None, reads: &[] };
}

/// Automatic edges `(from, to)` by index into `res`, sorted and without duplicates or
/// self-loops. Resources with `Meta:autoedge => false` must be left out by the caller (they
/// neither ask for edges nor are matched).
pub fn autoedges(res: &[AutoRes<'_>]) -> Vec<(usize, usize)> {
    let rules: Vec<Rules> =
        res.iter().map(|(kind, _, _)| crate::contract::kind::find(kind).map_or(Rules::NONE, |k| k.autoedges)).collect();
    // Debug builds hold each kind to its `reads`: its rules see only those params, so a
    // rule reading another one fails its tests.
    #[cfg(debug_assertions)]
    let shown: Vec<ParamMap> = res
        .iter()
        .zip(&rules)
        .map(|((_, _, params), rules)| {
            params
                .iter()
                .filter(|(k, _)| rules.reads.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .collect();
    #[cfg(debug_assertions)]
    let res: Vec<AutoRes<'_>> =
        res.iter().zip(&shown).map(|((kind, name, _), params)| (*kind, *name, params)).collect();
    // Sized up front: at 100,000 files, growing the path table doubling by doubling
    // rehashed every path several times over.
    let provide_files = rules.iter().filter(|r| r.provides.is_some()).count();
    let mut index = Index {
        paths: vec![None; res.len()],
        files: HashMap::with_capacity_and_hasher(provide_files, Default::default()),
        ..Index::default()
    };
    for (idx, ((kind, name, params), rules)) in res.iter().zip(&rules).enumerate() {
        if FOUND_BY_NAME.contains(kind) {
            index.by_key.entry((kind, name)).or_insert(idx);
        }
        if let Some(provides) = rules.provides {
            provides(&mut index, idx, name, params);
        }
    }
    let mut edges = Edges::with_capacity(provide_files);
    for (idx, ((_, name, params), rules)) in res.iter().zip(&rules).enumerate() {
        if let Some(requires) = rules.requires {
            requires(&index, idx, name, params, &mut edges);
        }
    }
    edges.retain(|(a, b)| a != b);
    edges.sort_unstable();
    edges.dedup();
    edges
}

/// The path a `file` resource manages: `path` (default the name), with `dirname` /
/// `basename` overriding the directory or the last component. Borrowed unless one of
/// those two rewrites it.
pub fn file_path<'a>(name: &'a str, params: &'a ParamMap) -> Cow<'a, str> {
    let mut path = Cow::Borrowed(str_param(params, "path").unwrap_or(name));
    if let Some(dirname) = str_param(params, "dirname").filter(|s| !s.is_empty()) {
        let (_, base) = split_last(&path);
        path = Cow::Owned(format!("{dirname}{base}"));
    }
    if let Some(basename) = str_param(params, "basename").filter(|s| !s.is_empty()) {
        let (dir, _) = split_last(&path);
        path = Cow::Owned(format!("{dir}{basename}"));
    }
    path
}

/// The kinds whose resources rules look up by name ([`Index::resource`]).
const FOUND_BY_NAME: &[&str] = &["user", "group", "net", "svc"];

/// What the resources of a graph provide, for the rules that ask.
#[derive(Default)]
pub struct Index<'a> {
    /// `file` resources by managed path (directories keep their trailing `/`).
    files: HashMap<Cow<'a, str>, usize>,
    /// The path each `file` resource manages, by index.
    paths: Vec<Option<Cow<'a, str>>>,
    /// `(kind, name)` to index for the resources of the kinds [`FOUND_BY_NAME`].
    by_key: HashMap<(&'a str, &'a str), usize>,
    /// `group` resources by their `gid` param.
    groups_by_gid: HashMap<i64, usize>,
    /// `cron` resources by the unit they trigger.
    crons_by_unit: HashMap<String, Vec<usize>>,
    /// `gzip` and `tar` resources by the file they write.
    archives: HashMap<String, usize>,
    /// The `fwupd:remote` resources.
    fwupd_remotes: Vec<usize>,
}

impl<'a> Index<'a> {
    /// The `fwupd:remote` resources.
    pub fn fwupd_remotes(&self) -> &[usize] {
        &self.fwupd_remotes
    }

    pub fn add_fwupd_remote(&mut self, idx: usize) {
        self.fwupd_remotes.push(idx);
    }

    /// The `file` resource managing `path` (a directory with its trailing `/`).
    pub fn file(&self, path: &str) -> Option<usize> {
        self.files.get(path).copied()
    }

    /// Records that resource `idx` is a `file` managing `path`.
    pub fn add_file(&mut self, path: Cow<'a, str>, idx: usize) {
        if let Some(slot) = self.paths.get_mut(idx) {
            *slot = Some(path.clone());
        }
        self.files.entry(path).or_insert(idx);
    }

    /// The path the `file` resource `idx` manages, as it provided it.
    pub fn path_of(&self, idx: usize) -> Option<&str> {
        self.paths.get(idx)?.as_deref()
    }

    /// The resource `kind[name]`, for the kinds [`FOUND_BY_NAME`].
    pub fn resource(&self, kind: &str, name: &str) -> Option<usize> {
        self.by_key.get(&(kind, name)).copied()
    }

    pub fn group_by_gid(&self, gid: i64) -> Option<usize> {
        self.groups_by_gid.get(&gid).copied()
    }

    pub fn add_group_gid(&mut self, gid: i64, idx: usize) {
        self.groups_by_gid.entry(gid).or_insert(idx);
    }

    /// The `cron` resources that start `unit`.
    pub fn crons_of(&self, unit: &str) -> &[usize] {
        self.crons_by_unit.get(unit).map_or(&[], Vec::as_slice)
    }

    pub fn add_cron(&mut self, unit: String, idx: usize) {
        self.crons_by_unit.entry(unit).or_default().push(idx);
    }

    /// The archive resource writing `path`.
    pub fn archive(&self, path: &str) -> Option<usize> {
        self.archives.get(path).copied()
    }

    pub fn add_archive(&mut self, path: String, idx: usize) {
        self.archives.entry(path).or_insert(idx);
    }

    /// Every `file` and archive resource whose path is `dir` or lies inside it.
    pub fn producers_within<'s>(&'s self, dir: &'s str) -> impl Iterator<Item = usize> + 's {
        let files = self.files.iter().map(|(path, &idx)| (&**path, idx));
        let archives = self.archives.iter().map(|(path, &idx)| (path.as_str(), idx));
        files.chain(archives).filter(move |(path, _)| within(path, dir)).map(|(_, idx)| idx)
    }
}

/// Whether `path` is `input` itself or lies inside it (trailing slashes ignored).
fn within(path: &str, input: &str) -> bool {
    let base = input.trim_end_matches('/');
    let path = path.trim_end_matches('/');
    path == base || path.strip_prefix(base).is_some_and(|rest| rest.starts_with('/'))
}

/// Ancestor directories of `path`, nearest first, each with a trailing `/`:
/// `/a/b/c` and `/a/b/c/` both give `/a/b/`, `/a/`, `/`.
pub fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    let mut cur = path.trim_end_matches('/');
    std::iter::from_fn(move || {
        let pos = cur.rfind('/')?;
        let dir = &cur[..=pos];
        cur = &cur[..pos];
        Some(dir)
    })
}

/// Splits `/a/b/c` into (`/a/b/`, `c`) and `/a/b/` into (`/a/`, `b/`).
fn split_last(path: &str) -> (&str, &str) {
    let trimmed = path.trim_end_matches('/');
    match trimmed.rfind('/') {
        Some(pos) => (&path[..=pos], &path[pos + 1..]),
        None => ("", path),
    }
}

/// A str param as given (rules read raw params: the resources are not built yet).
pub fn str_param<'a>(params: &'a ParamMap, name: &str) -> Option<&'a str> {
    params.get(name).and_then(Value::as_str)
}

/// The strings of a `[]str` param as given.
pub fn list_param<'a>(params: &'a ParamMap, name: &str) -> impl Iterator<Item = &'a str> {
    params.get(name).and_then(Value::as_list).unwrap_or(&[]).iter().filter_map(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, Value)]) -> ParamMap {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    fn check(res: &[(&str, &str, ParamMap)]) -> Vec<String> {
        let borrowed: Vec<AutoRes<'_>> = res.iter().map(|(k, n, p)| (*k, *n, p)).collect();
        autoedges(&borrowed)
            .into_iter()
            .map(|(a, b)| format!("{}[{}] -> {}[{}]", res[a].0, res[a].1, res[b].0, res[b].1))
            .collect()
    }

    #[test]
    fn file_depends_on_nearest_managed_directory_only() {
        let none = ParamMap::new();
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
            ("file", "/tmp/frags/", ParamMap::new()),
            ("file", "/tmp/one", ParamMap::new()),
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
            ("file", "/usr/bin/tool", ParamMap::new()),
            ("user", "alice", ParamMap::new()),
            ("group", "staff", ParamMap::new()),
        ]);
        assert_eq!(edges, ["file[/usr/bin/tool] -> exec[e]", "user[alice] -> exec[e]", "group[staff] -> exec[e]"]);
        let shell = params(&[("cmd", Value::str("echo hi")), ("shell", Value::str("/bin/bash"))]);
        let edges = check(&[("exec", "e", shell), ("file", "/bin/bash", ParamMap::new())]);
        assert_eq!(edges, ["file[/bin/bash] -> exec[e]"]);
    }

    #[test]
    fn svc_after_unit_file_and_before_its_cron() {
        let edges = check(&[
            ("svc", "app", ParamMap::new()),
            ("file", "/usr/lib/systemd/system/app.service", ParamMap::new()),
            ("file", "/etc/systemd/system/app.service", ParamMap::new()),
            ("cron", "app", ParamMap::new()),
        ]);
        assert_eq!(edges, ["svc[app] -> cron[app]", "file[/etc/systemd/system/app.service] -> svc[app]"]);
    }

    #[test]
    fn fwupd_remotes_follow_the_daemon_and_come_before_devices() {
        let none = ParamMap::new();
        let edges = check(&[
            ("fwupd:remote", "lvfs", none.clone()),
            ("fwupd:remote", "mirror", none.clone()),
            ("svc", "fwupd", none.clone()),
            ("file", "/etc/fwupd/remotes.d/mirror.conf", none.clone()),
            ("fwupd:system", "update", none.clone()),
            ("fwupd:device", "webcam", none),
        ]);
        assert_eq!(
            edges,
            [
                "fwupd:remote[lvfs] -> fwupd:system[update]",
                "fwupd:remote[lvfs] -> fwupd:device[webcam]",
                "fwupd:remote[mirror] -> fwupd:system[update]",
                "fwupd:remote[mirror] -> fwupd:device[webcam]",
                "svc[fwupd] -> fwupd:remote[lvfs]",
                "svc[fwupd] -> fwupd:remote[mirror]",
                "file[/etc/fwupd/remotes.d/mirror.conf] -> fwupd:remote[mirror]",
            ]
        );
    }

    #[test]
    fn archives_follow_their_inputs_and_each_other() {
        let none = ParamMap::new();
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
        let none = ParamMap::new();
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
            ("group", "wheel", ParamMap::new()),
            ("group", "seven", params(&[("gid", Value::Int(7))])),
        ]);
        assert_eq!(edges, ["user[b] -> group[seven]", "group[wheel] -> user[a]"]);
    }
}
