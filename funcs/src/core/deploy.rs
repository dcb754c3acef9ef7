//! The `deploy` package: files shipped with the program, addressed relative to the
//! program's root directory (`Host::root`); a leading `/` means the root.

use super::{arg_str, pure, str_list};
use crate::api::{CallCtx, FuncError, FuncResult, Host};
use crate::registry::Registry;
use lang::value::Value;
use std::hash::{Hash, Hasher};
use std::path::{Component, Path, PathBuf};

pub fn register(r: &mut Registry) {
    pure(r, "deploy.abspath", "func(path str) str", abspath, "the absolute deploy path of a module-relative path");
    pure(r, "deploy.readfile", "func(filename str) str", readfile, "the contents of a deploy file (module-relative)");
    pure(
        r,
        "deploy.readfileabs",
        "func(filename str) str",
        readfileabs,
        "the contents of a deploy file (root-relative)",
    );
    pure(r, "deploy.file_exists", "func(filename str) bool", file_exists, "whether a deploy file exists");
    pure(
        r,
        "deploy.directory",
        "func(directory str) str",
        directory,
        "copies a deploy directory locally, returns its path",
    );
    pure(r, "deploy.binary_path", "func() str", binary_path, "the path of the running tend binary");
    pure(
        r,
        "deploy.bootstrap_packages",
        "func(distro str) []str",
        bootstrap_packages,
        "packages tend needs on a distro",
    );
    pure(
        r,
        "_deploy_module_path",
        "func(module str, path str) str",
        body!(|a| module_path(arg_str(a, 0)?, arg_str(a, 1)?).map(Value::str)),
        "internal: a module-relative deploy path made root-relative (for calls inside modules)",
    );
}

/// The normalized deploy path (`/a/b`) of a user path; `..` may not leave the root.
pub fn deploy_path(p: &str) -> Result<String, FuncError> {
    let mut parts: Vec<&str> = Vec::new();
    for c in Path::new(p).components() {
        match c {
            Component::Normal(s) => parts.push(s.to_str().unwrap_or_default()),
            Component::ParentDir if parts.pop().is_none() => {
                return Err(FuncError::fatal(format!("deploy path {p:?} leaves the deploy root")));
            }
            _ => {}
        }
    }
    let mut out = format!("/{}", parts.join("/"));
    if p.ends_with('/') && out.len() > 1 {
        out.push('/');
    }
    Ok(out)
}

/// Where a deploy path lives on disk.
pub fn disk_path(host: &Host, p: &str) -> Result<PathBuf, FuncError> {
    let dp = deploy_path(p)?;
    Ok(host.root.join(dp.trim_start_matches('/')))
}

/// The deploy path of `p` written in the module whose root directory is `module` (`/`
/// for the main program, `/mod1/` for a module): `/files/f` in `/mod1/` is
/// `/mod1/files/f`; `..` may not leave the module.
pub fn module_path(module: &str, p: &str) -> Result<String, FuncError> {
    let inner = deploy_path(p)?;
    let base = deploy_path(module)?;
    let base = base.trim_end_matches('/');
    Ok(format!("{base}{inner}"))
}

/// The root directory of the module a call is in.
///
/// Calls do not carry their module: every call is treated as part of the main program,
/// whose module root is the deploy root. For calls inside a module (`/mod1/`), the front
/// end wraps the path argument of `deploy.abspath/readfile/file_exists/directory` in
/// `_deploy_module_path("/mod1/", path)`, which makes it root-relative first.
fn calling_module(_ctx: &CallCtx<'_>) -> &'static str {
    "/"
}

fn abspath(ctx: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    module_path(calling_module(ctx), arg_str(a, 0)?).map(Value::str)
}

fn read(host: &Host, p: &str) -> FuncResult {
    let path = disk_path(host, p)?;
    std::fs::read(&path)
        .map(|b| Value::str(String::from_utf8_lossy(&b)))
        .map_err(|e| FuncError::fatal(format!("can't read deploy file {p}: {e}")))
}

fn readfile(ctx: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    read(ctx.host, &module_path(calling_module(ctx), arg_str(a, 0)?)?)
}
fn readfileabs(ctx: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    read(ctx.host, arg_str(a, 0)?)
}
fn file_exists(ctx: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    let p = module_path(calling_module(ctx), arg_str(a, 0)?)?;
    Ok(Value::Bool(disk_path(ctx.host, &p)?.exists()))
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    let mut entries: Vec<_> = std::fs::read_dir(from)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let target = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &target)?;
        } else {
            std::fs::copy(e.path(), &target)?;
        }
    }
    Ok(())
}

/// Copies a deploy directory to a stable local directory (named from a hash of its
/// source) and returns that path with a trailing `/`.
fn directory(ctx: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    let p = &module_path(calling_module(ctx), arg_str(a, 0)?)?;
    let src = disk_path(ctx.host, p)?;
    if !src.is_dir() {
        return Err(FuncError::fatal(format!("deploy directory {p} does not exist")));
    }
    let mut h = std::collections::hash_map::DefaultHasher::new();
    src.hash(&mut h);
    let dest = std::env::temp_dir().join(format!("tend-deploy-{:016x}", h.finish()));
    copy_dir(&src, &dest).map_err(|e| FuncError::fatal(format!("can't copy deploy directory {p}: {e}")))?;
    Ok(Value::str(format!("{}/", dest.display())))
}

fn binary_path(_: &CallCtx<'_>, _: &[Value]) -> FuncResult {
    std::env::current_exe()
        .map(|p| Value::str(p.display().to_string()))
        .map_err(|e| FuncError::fatal(format!("can't find the running binary: {e}")))
}

/// tend is a single static binary: no distro needs extra packages to run it, but the
/// distro must be one we know.
fn bootstrap_packages(_: &CallCtx<'_>, a: &[Value]) -> FuncResult {
    let distro = arg_str(a, 0)?;
    match distro {
        "fedora" | "centos" | "rhel" | "debian" | "ubuntu" | "archlinux" => Ok(str_list(Vec::<String>::new())),
        other => Err(FuncError::catchable(format!("unknown distro {other:?}"))),
    }
}
