//! `golang/path` and `golang/path/filepath` (Unix paths, so the two agree): cleaning,
//! joining, splitting, glob matching, relative paths and symbolic link resolution.

use super::typed;
use crate::api::{FuncError, FuncResult};
use crate::builtin;
use crate::registry::Registry;
use lang::value::Value;

pub fn register(r: &mut Registry) {
    for pkg in ["path", "path/filepath"] {
        paths(r, pkg);
    }
    typed(r, "golang/path/filepath.abs", path_filepath_abs::DEF);
    typed(r, "golang/path/filepath.to_slash", path_filepath_to_slash::DEF);
    typed(r, "golang/path/filepath.from_slash", path_filepath_from_slash::DEF);
    typed(r, "golang/path/filepath.eval_symlinks", path_filepath_eval_symlinks::DEF);
    typed(r, "golang/path/filepath.has_prefix", path_filepath_has_prefix::DEF);
    typed(r, "golang/path/filepath.is_local", path_filepath_is_local::DEF);
    typed(r, "golang/path/filepath.localize", path_filepath_localize::DEF);
    typed(r, "golang/path/filepath.rel", path_filepath_rel::DEF);
    typed(r, "golang/path/filepath.volume_name", path_filepath_volume_name::DEF);
}

/// Go's `path.Clean`.
pub fn go_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let body = parts.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".into(),
        (false, false) => body,
    }
}

pub fn go_base(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return "/".into();
    }
    t.rsplit('/').next().unwrap_or(t).to_string()
}

pub fn go_dir(p: &str) -> String {
    let i = p.rfind('/').map(|i| i + 1).unwrap_or(0);
    go_clean(&p[..i])
}

pub fn go_ext(p: &str) -> String {
    for (i, c) in p.char_indices().rev() {
        match c {
            '/' => break,
            '.' => return p[i..].to_string(),
            _ => {}
        }
    }
    String::new()
}

fn paths(r: &mut Registry, pkg: &str) {
    typed(r, format!("golang/{pkg}.base"), paths_base::DEF);
    typed(r, format!("golang/{pkg}.clean"), paths_clean::DEF);
    typed(r, format!("golang/{pkg}.dir"), paths_dir::DEF);
    typed(r, format!("golang/{pkg}.ext"), paths_ext::DEF);
    typed(r, format!("golang/{pkg}.is_abs"), paths_is_abs::DEF);
    typed(r, format!("golang/{pkg}.join"), paths_join::DEF);
    typed(r, format!("golang/{pkg}.match"), paths_match::DEF);
}

builtin! {
    /// an absolute, cleaned path
    fn path_filepath_abs(path: &str) -> FuncResult as "str" {
        let p = path;
        if p.starts_with('/') {
            return Ok(Value::str(go_clean(p)));
        }
        let wd = std::env::current_dir().map_err(|e| FuncError::catchable(e.to_string()))?;
        Ok(Value::str(go_clean(&format!("{}/{p}", wd.display()))))
    }
}

builtin! {
    /// the path with / separators
    fn path_filepath_to_slash(path: &str) -> String {
        String::from(path)
    }
}

builtin! {
    /// the path with OS separators
    fn path_filepath_from_slash(path: &str) -> String {
        String::from(path)
    }
}

builtin! {
    /// the last element of a path
    fn paths_base(path: &str) -> String {
        go_base(path)
    }
}

builtin! {
    /// the shortest equivalent path
    fn paths_clean(path: &str) -> String {
        go_clean(path)
    }
}

builtin! {
    /// all but the last element
    fn paths_dir(path: &str) -> String {
        go_dir(path)
    }
}

builtin! {
    /// the file name extension
    fn paths_ext(path: &str) -> String {
        go_ext(path)
    }
}

builtin! {
    /// whether the path is absolute
    fn paths_is_abs(path: &str) -> bool {
        path.starts_with('/')
    }
}

builtin! {
    /// joins and cleans path elements
    fn paths_join(elem: Vec<&str>) -> FuncResult as "str" {
        let parts: Vec<&str> = elem.into_iter().filter(|s| !s.is_empty()).collect();
        Ok(Value::str(if parts.is_empty() { String::new() } else { go_clean(&parts.join("/")) }))
    }
}

/// Go's `path.Match`: `*` (any run without `/`), `?` (one character but `/`), `[…]`
/// classes with ranges and `^`, `\` escapes. A malformed pattern is an error whatever the
/// name.
pub fn glob_match(pattern: &str, name: &str) -> Result<bool, FuncError> {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let mut at = 0;
    while at < p.len() {
        at = match p[at] {
            '\\' if at + 1 < p.len() => at + 2,
            '\\' => return Err(bad_pattern()),
            '[' => class_end(&p, at)?,
            _ => at + 1,
        };
    }
    let (mut pi, mut ni) = (0, 0);
    // Where the last `*` was and how much of the name it has taken so far.
    let mut star: Option<(usize, usize)> = None;
    loop {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
            continue;
        }
        if pi < p.len()
            && ni < n.len()
            && let Some(next) = one(&p, pi, n[ni])
        {
            pi = next;
            ni += 1;
            continue;
        }
        if pi == p.len() && ni == n.len() {
            return Ok(true);
        }
        match star {
            Some((sp, taken)) if taken < n.len() && n[taken] != '/' => {
                star = Some((sp, taken + 1));
                pi = sp + 1;
                ni = taken + 1;
            }
            _ => return Ok(false),
        }
    }
}

fn bad_pattern() -> FuncError {
    FuncError::catchable("syntax error in pattern")
}

/// One class character at `at` (escaped or not): the character and where the next starts.
fn class_char(p: &[char], at: usize) -> Result<(char, usize), FuncError> {
    match p.get(at) {
        Some('\\') => p.get(at + 1).map(|c| (*c, at + 2)).ok_or_else(bad_pattern),
        Some('-' | ']') | None => Err(bad_pattern()),
        Some(c) => Ok((*c, at + 1)),
    }
}

/// A `[…]` class of a pattern: its ranges, whether `^` negates it, and where it ends.
struct Class {
    ranges: Vec<(char, char)>,
    negated: bool,
    end: usize,
}

/// The class opening at `at`.
fn class(p: &[char], at: usize) -> Result<Class, FuncError> {
    let mut i = at + 1;
    let negated = p.get(i) == Some(&'^');
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    loop {
        if p.get(i) == Some(&']') && !ranges.is_empty() {
            return Ok(Class { ranges, negated, end: i + 1 });
        }
        let (lo, next) = class_char(p, i)?;
        i = next;
        let mut hi = lo;
        if p.get(i) == Some(&'-') {
            (hi, i) = class_char(p, i + 1)?;
        }
        ranges.push((lo, hi));
    }
}

fn class_end(p: &[char], at: usize) -> Result<usize, FuncError> {
    class(p, at).map(|c| c.end)
}

/// Whether the single pattern element at `pi` (not `*`) takes `c`; where the next starts.
fn one(p: &[char], pi: usize, c: char) -> Option<usize> {
    match p[pi] {
        '?' => (c != '/').then_some(pi + 1),
        '\\' => (p.get(pi + 1) == Some(&c)).then_some(pi + 2),
        '[' => {
            let class = class(p, pi).ok()?;
            let inside = class.ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c));
            (inside != class.negated).then_some(class.end)
        }
        lit => (lit == c).then_some(pi + 1),
    }
}

/// The cleaned path's elements, `.` giving none.
fn elements(cleaned: &str) -> Vec<&str> {
    cleaned.split('/').filter(|e| !e.is_empty() && *e != ".").collect()
}

/// Go's `filepath.Rel`: `targ` relative to `base`, both absolute or both relative.
pub fn rel(base: &str, targ: &str) -> Result<String, FuncError> {
    let (b, t) = (go_clean(base), go_clean(targ));
    if b.starts_with('/') != t.starts_with('/') {
        return Err(FuncError::catchable(format!("Rel: can't make {targ} relative to {base}")));
    }
    let (be, te) = (elements(&b), elements(&t));
    let common = be.iter().zip(&te).take_while(|(x, y)| x == y).count();
    if be.get(common) == Some(&"..") {
        return Err(FuncError::catchable(format!("Rel: can't make {targ} relative to {base}")));
    }
    let mut out: Vec<&str> = vec![".."; be.len() - common];
    out.extend(&te[common..]);
    Ok(if out.is_empty() { ".".to_string() } else { out.join("/") })
}

/// Go's `filepath.EvalSymlinks`: every symbolic link in `path` replaced by its target, the
/// result cleaned (and relative if `path` was); a missing element is an error.
pub fn eval_symlinks(path: &str) -> Result<String, FuncError> {
    let err = |what: &str, p: &str, e: std::io::Error| FuncError::catchable(format!("{what} {p}: {e}"));
    let mut rooted = path.starts_with('/');
    let mut done: Vec<String> = Vec::new();
    let mut todo: std::collections::VecDeque<String> = elements(path).into_iter().map(String::from).collect();
    let mut links = 0;
    let render = |rooted: bool, done: &[String]| match (rooted, done.is_empty()) {
        (true, _) => format!("/{}", done.join("/")),
        (false, true) => ".".to_string(),
        (false, false) => done.join("/"),
    };
    while let Some(elem) = todo.pop_front() {
        if elem == ".." {
            if done.last().is_some_and(|l| l != "..") {
                done.pop();
            } else if !rooted {
                done.push(elem);
            }
            continue;
        }
        done.push(elem);
        let here = render(rooted, &done);
        let meta = std::fs::symlink_metadata(&here).map_err(|e| err("lstat", &here, e))?;
        if !meta.file_type().is_symlink() {
            if !meta.is_dir() && !todo.is_empty() {
                return Err(FuncError::catchable(format!("{here}: not a directory")));
            }
            continue;
        }
        links += 1;
        if links > 255 {
            return Err(FuncError::catchable(format!("EvalSymlinks: too many links in {path}")));
        }
        let target = std::fs::read_link(&here).map_err(|e| err("readlink", &here, e))?;
        let target = target.to_string_lossy();
        done.pop();
        if target.starts_with('/') {
            rooted = true;
            done.clear();
        }
        for e in elements(&target).into_iter().rev() {
            todo.push_front(e.to_string());
        }
    }
    Ok(render(rooted, &done))
}

/// Go's `filepath.IsLocal` on Unix: relative, not empty, and not escaping upwards.
fn is_local(path: &str) -> bool {
    if path.is_empty() || path.starts_with('/') {
        return false;
    }
    let cleaned = go_clean(path);
    cleaned != ".." && !cleaned.starts_with("../")
}

/// Go's `fs.ValidPath`: unrooted, slash-separated, no empty, `.` or `..` element.
fn valid_fs_path(path: &str) -> bool {
    path == "." || path.split('/').all(|e| !e.is_empty() && e != "." && e != "..")
}

builtin! {
    /// the path with every symbolic link resolved
    fn path_filepath_eval_symlinks(path: &str) -> FuncResult as "str" {
        eval_symlinks(path).map(Value::str)
    }
}

builtin! {
    /// whether p begins with prefix (as strings: deprecated in Go)
    fn path_filepath_has_prefix(p: &str, prefix: &str) -> bool {
        p.starts_with(prefix)
    }
}

builtin! {
    /// whether the path stays within the directory it is evaluated in
    fn path_filepath_is_local(path: &str) -> bool {
        is_local(path)
    }
}

builtin! {
    /// a slash-separated relative path as an OS path, or an error if it is not one
    fn path_filepath_localize(path: &str) -> FuncResult as "str" {
        if !valid_fs_path(path) || path.contains('\0') {
            return Err(FuncError::catchable("invalid path"));
        }
        Ok(Value::str(path))
    }
}

builtin! {
    /// targpath relative to basepath
    fn path_filepath_rel(basepath: &str, targpath: &str) -> FuncResult as "str" {
        rel(basepath, targpath).map(Value::str)
    }
}

builtin! {
    /// the volume name: always empty on Unix
    fn path_filepath_volume_name(path: &str) -> String {
        String::new()
    }
}

builtin! {
    /// whether name matches the shell pattern
    fn paths_match(pattern: &str, name: &str) -> FuncResult as "bool" {
        glob_match(pattern, name).map(Value::Bool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_match_follows_go_path_match() {
        let yes = [("abc", "abc"), ("*", "abc"), ("*c", "abc"), ("a*", "a"), ("a*/b", "abc/b"), ("a?c", "abc")];
        for (p, n) in yes {
            assert!(glob_match(p, n).unwrap(), "{p} ~ {n}");
        }
        let no = [("a*", "ab/c"), ("a*b*c*d*e*/f", "axbxcxdxexxx/fff"), ("a?b", "a/b"), ("[^a-c]", "b")];
        for (p, n) in no {
            assert!(!glob_match(p, n).unwrap(), "{p} !~ {n}");
        }
        assert!(glob_match("[a-c]x", "bx").unwrap());
        assert!(glob_match("[\\]a]", "]").unwrap());
        assert!(glob_match("a\\*b", "a*b").unwrap());
        assert!(!glob_match("a\\*b", "axb").unwrap());
        for bad in ["[", "[]a]", "[-]", "a\\", "[x-]", "*x[", "[^]"] {
            assert!(glob_match(bad, "x").is_err(), "{bad} is malformed");
        }
    }

    #[test]
    fn rel_follows_go_filepath_rel() {
        let ok = [
            ("/a/b", "/a/b/c/d", "c/d"),
            ("/a/b/c", "/a/x", "../../x"),
            ("a/b", "a/b", "."),
            (".", "a/b", "a/b"),
            ("/", "/a", "a"),
            ("a/b/../c", "a/d", "../d"),
        ];
        for (b, t, want) in ok {
            assert_eq!(rel(b, t).unwrap(), want, "rel({b}, {t})");
        }
        assert!(rel("/a", "b").is_err());
        assert!(rel("../a", "b").is_err());
    }

    #[test]
    fn eval_symlinks_resolves_relative_and_absolute_links() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("real/sub")).unwrap();
        std::os::unix::fs::symlink("real", d.join("rel")).unwrap();
        std::os::unix::fs::symlink(d.join("real/sub"), d.join("abs")).unwrap();
        std::os::unix::fs::symlink("loop", d.join("loop")).unwrap();
        let at = |p: &str| format!("{}/{p}", d.display());
        assert_eq!(eval_symlinks(&at("rel/sub")).unwrap(), at("real/sub"));
        assert_eq!(eval_symlinks(&at("abs/../sub")).unwrap(), at("real/sub"));
        assert!(eval_symlinks(&at("missing")).is_err());
        assert!(matches!(eval_symlinks(&at("loop")), Err(FuncError::Catchable(m)) if m.contains("too many links")));
    }

    #[test]
    fn locality_and_valid_paths() {
        assert!(is_local("a/b"));
        assert!(is_local("a/../b"));
        assert!(!is_local("a/../../b"));
        assert!(!is_local("/a"));
        assert!(!is_local(""));
        assert!(valid_fs_path("a/b"));
        assert!(!valid_fs_path("a//b"));
        assert!(!valid_fs_path("/a"));
        assert!(!valid_fs_path("a/./b"));
    }
}
