//! The `local` package: per-machine state (a variable directory and stable pools).

use super::{arg_str, pure};
use crate::api::{CallCtx, FuncError, FuncResult};
use crate::registry::Registry;
use lang::value::Value;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

pub fn register(r: &mut Registry) {
    pure(r, "local.pool", "func(namespace str, uid str) int", pool, "a stable small integer (>= 1) per uid");
    pure(r, "local.vardir", "func(path str) str", vardir, "a per-program state directory");
}

/// Where tend keeps local state: `$TEND_VARDIR`, else `/var/lib/tend` for root, else
/// `$XDG_STATE_HOME/tend` (`~/.local/state/tend`).
pub fn state_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("TEND_VARDIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if nix::unistd::getuid().is_root() {
        return PathBuf::from("/var/lib/tend");
    }
    if let Some(d) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("tend");
    }
    match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        Some(h) => PathBuf::from(h).join(".local/state/tend"),
        None => std::env::temp_dir().join("tend-state"),
    }
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

fn vardir(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    vardir_in(&state_dir(), arg_str(a, 0)?)
}

static POOL_LOCK: Mutex<()> = Mutex::new(());

/// Looks up or allocates the number of `uid` in the pool file of `namespace`: the
/// smallest integer >= 1 not used yet. The file holds `uid=number` lines.
pub fn pool_in(base: &Path, namespace: &str, uid: &str) -> FuncResult {
    let _guard = POOL_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = base.join("local").join("pool");
    std::fs::create_dir_all(&dir).map_err(|e| FuncError::fatal(format!("can't create {}: {e}", dir.display())))?;
    let file = dir.join(safe_rel(namespace)?.to_string_lossy().replace('/', "_"));
    let text = std::fs::read_to_string(&file).unwrap_or_default();
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
    std::fs::write(&file, body).map_err(|e| FuncError::fatal(format!("can't write {}: {e}", file.display())))?;
    Ok(Value::Int(n))
}

fn pool(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    pool_in(&state_dir(), arg_str(a, 0)?, arg_str(a, 1)?)
}
