//! The `local` package: per-machine state (a variable directory and stable pools).

use super::typed;
use crate::api::{FuncError, FuncResult};
use crate::builtin;
use crate::registry::Registry;
use lang::value::Value;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

pub fn register(r: &mut Registry) {
    typed(r, "local.pool", pool::DEF);
    typed(r, "local.vardir", vardir::DEF);
}

/// A relative path with no `..`, `.` or root components.
fn safe_rel(p: &str) -> Result<PathBuf, FuncError> {
    let mut out = PathBuf::new();
    for c in Path::new(p).components() {
        match c {
            Component::Normal(s) => out.push(s),
            Component::CurDir | Component::RootDir => {}
            _ => return Err(FuncError::fatal(format!("invalid local path {p:?}"))),
        }
    }
    Ok(out)
}

pub fn vardir_in(base: &Path, p: &str) -> FuncResult {
    let dir = base.join("local").join(safe_rel(p)?);
    std::fs::create_dir_all(&dir).map_err(|e| FuncError::fatal(format!("can't create {}: {e}", dir.display())))?;
    let mut s = dir.display().to_string();
    if !s.ends_with('/') {
        s.push('/');
    }
    Ok(Value::str(s))
}

builtin! {
    /// a per-program state directory
    fn vardir(ctx: &CallCtx, path: &str) -> FuncResult as "str" {
        vardir_in(&ctx.host.state_dir, path)
    }
}

/// Looks up or allocates the number of `uid` in the pool file of `namespace`: the
/// smallest integer >= 1 not used yet. The file holds `uid=number` lines; it is locked
/// (`flock`) while read and rewritten, so concurrent callers, in this process or
/// another, never hand out one number twice.
pub fn pool_in(base: &Path, namespace: &str, uid: &str) -> FuncResult {
    use std::io::{Read, Seek, Write};
    let dir = base.join("local").join("pool");
    std::fs::create_dir_all(&dir).map_err(|e| FuncError::fatal(format!("can't create {}: {e}", dir.display())))?;
    let file = dir.join(safe_rel(namespace)?.to_string_lossy().replace('/', "_"));
    let io_err = |e: std::io::Error| FuncError::fatal(format!("can't update {}: {e}", file.display()));
    let opened = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&file);
    let mut locked = nix::fcntl::Flock::lock(opened.map_err(io_err)?, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, errno)| io_err(errno.into()))?;
    let mut text = String::new();
    locked.read_to_string(&mut text).map_err(io_err)?;
    let mut entries: BTreeMap<String, i64> = text
        .lines()
        .filter_map(|l| l.rsplit_once('=').and_then(|(k, v)| Some((k.to_string(), v.parse().ok()?))))
        .collect();
    if let Some(n) = entries.get(uid) {
        return Ok(Value::Int(*n));
    }
    let mut n = 1;
    while entries.values().any(|v| *v == n) {
        n += 1;
    }
    entries.insert(uid.to_string(), n);
    let body: String = entries.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    locked
        .set_len(0)
        .and_then(|()| locked.rewind())
        .and_then(|()| locked.write_all(body.as_bytes()))
        .map_err(io_err)?;
    Ok(Value::Int(n))
}

builtin! {
    /// a stable small integer (>= 1) per uid
    fn pool(ctx: &CallCtx, namespace: &str, uid: &str) -> FuncResult as "int" {
        pool_in(&ctx.host.state_dir, namespace, uid)
    }
}
