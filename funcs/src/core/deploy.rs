//! The `deploy` package: files shipped with the program, addressed relative to the
//! program's root directory (`Host::root`); a leading `/` means the root.

use super::typed;
use crate::api::{CallCtx, FuncError, FuncResult, Host};
use crate::builtin;
use crate::registry::Registry;
use lang::value::Value;
use std::hash::{Hash, Hasher};
use std::path::{Component, Path, PathBuf};

pub fn register(r: &mut Registry) {
    typed(r, "deploy.abspath", abspath::DEF);
    typed(r, "deploy.readfile", readfile::DEF);
    typed(r, "deploy.readfileabs", readfileabs::DEF);
    typed(r, "deploy.file_exists", file_exists::DEF);
    typed(r, "deploy.directory", directory::DEF);
    typed(r, "deploy.binary_path", binary_path::DEF);
    typed(r, "deploy.bootstrap_packages", bootstrap_packages::DEF);
    typed(r, "_deploy_module_path", deploy_module_path::DEF);
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

builtin! {
    /// internal: a module-relative deploy path made root-relative (for calls inside modules)
    fn deploy_module_path(module: &str, path: &str) -> Result<String, FuncError> {
        module_path(module, path)
    }
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

builtin! {
    /// the absolute deploy path of a module-relative path
    fn abspath(ctx: &CallCtx, path: &str) -> Result<String, FuncError> {
        module_path(calling_module(ctx), path)
    }
}

fn read(host: &Host, p: &str) -> FuncResult {
    if let Some(text) = embedded(p)? {
        return Ok(Value::str(text));
    }
    let path = disk_path(host, p)?;
    let bytes = std::fs::read(&path).map_err(|e| FuncError::fatal(format!("can't read deploy file {p}: {e}")))?;
    // Never replaced by lossy text: see `os.readfile`.
    String::from_utf8(bytes).map(Value::str).map_err(|e| {
        FuncError::fatal(format!(
            "deploy file {p} is not UTF-8 text (byte {} is not): tend's strings hold text",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// The text of deploy file `p` when it is in a module built into tend
/// ([`lang::embedded`]): those are read from the binary, never from disk.
fn embedded(p: &str) -> Result<Option<&'static str>, FuncError> {
    let dp = deploy_path(p)?;
    Ok(if dp.starts_with(lang::embedded::ROOT) { lang::embedded::file(&dp) } else { None })
}

builtin! {
    /// the contents of a deploy file (module-relative)
    fn readfile(ctx: &CallCtx, filename: &str) -> FuncResult as "str" {
        read(ctx.host, &module_path(calling_module(ctx), filename)?)
    }
}
builtin! {
    /// the contents of a deploy file (root-relative)
    fn readfileabs(ctx: &CallCtx, filename: &str) -> FuncResult as "str" {
        read(ctx.host, filename)
    }
}
builtin! {
    /// whether a deploy file exists
    fn file_exists(ctx: &CallCtx, filename: &str) -> Result<bool, FuncError> {
        let p = module_path(calling_module(ctx), filename)?;
        Ok(embedded(&p)?.is_some() || disk_path(ctx.host, &p)?.exists())
    }
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

builtin! {
    /// copies a deploy directory locally, returns its path
    fn directory(ctx: &CallCtx, directory: &str) -> Result<String, FuncError> {
        let p = &module_path(calling_module(ctx), directory)?;
        let src = disk_path(ctx.host, p)?;
        if !src.is_dir() {
            return Err(FuncError::fatal(format!("deploy directory {p} does not exist")));
        }
        let mut h = std::collections::hash_map::DefaultHasher::new();
        src.hash(&mut h);
        let dest = std::env::temp_dir().join(format!("tend-deploy-{:016x}", h.finish()));
        copy_dir(&src, &dest).map_err(|e| FuncError::fatal(format!("can't copy deploy directory {p}: {e}")))?;
        Ok(format!("{}/", dest.display()))
    }
}

builtin! {
    /// the path of the running tend binary
    fn binary_path() -> Result<String, FuncError> {
        std::env::current_exe()
            .map(|p| p.display().to_string())
            .map_err(|e| FuncError::fatal(format!("can't find the running binary: {e}")))
    }
}

builtin! {
    /// packages tend needs on a distro
    fn bootstrap_packages(distro: &str) -> Result<Vec<String>, FuncError> {
        match distro {
            "fedora" | "centos" | "rhel" | "debian" | "ubuntu" | "archlinux" => Ok(Vec::new()),
            other => Err(FuncError::catchable(format!("unknown distro {other:?}"))),
        }
    }
}
