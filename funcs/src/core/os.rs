//! The `os` package: process arguments, users, the distro, and watched files.

use super::follow::{Reading, follow};
use super::streams::poll;
use super::{strukt, typed};
use crate::api::{FuncError, FuncResult, Watched};
use crate::builtin;
use crate::lease::Leased;
use crate::registry::Registry;
use crate::streaming;
use lang::value::Value;
use nix::unistd::User;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::AsyncBufReadExt;

pub fn register(r: &mut Registry) {
    typed(r, "os.args", args::DEF);
    typed(r, "os.expand_home", expand_home::DEF);
    typed(r, "os.home", home::DEF);
    typed(r, "os.uid", uid::DEF);
    typed(r, "os.family", family::DEF);
    typed(r, "os.is_family_redhat", is_redhat::DEF);
    typed(r, "os.is_family_debian", is_debian::DEF);
    typed(r, "os.is_family_archlinux", is_arch::DEF);
    typed(r, "os.is_virtual", is_virtual::DEF);
    typed(r, "os.release", release::DEF);
    typed(r, "os.parse_distro_uid", parse_distro_uid::DEF);
    typed(r, "os.readfile", readfile::DEF);
    typed(r, "os.file_exists", file_exists::DEF);
    typed(r, "os.user_exists", user_exists::DEF);
    typed(r, "os.modinfo_loaded", modinfo_loaded::DEF);
    typed(r, "os.system", system::DEF);
    r.constant("os.family_redhat", Value::str("redhat"));
    r.constant("os.family_debian", Value::str("debian"));
    r.constant("os.family_archlinux", Value::str("archlinux"));
}

builtin! {
    /// the process arguments
    fn args(ctx: &CallCtx) -> Vec<String> {
        ctx.host.args.clone()
    }
}

fn user(name: &str) -> Result<User, FuncError> {
    match User::from_name(name) {
        Ok(Some(u)) => Ok(u),
        Ok(None) => Err(FuncError::fatal(format!("user {name:?} does not exist"))),
        Err(e) => Err(FuncError::fatal(format!("can't look up user {name:?}: {e}"))),
    }
}

fn current_home() -> Result<String, FuncError> {
    if let Some(h) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        return Ok(h.to_string_lossy().into_owned());
    }
    match User::from_uid(nix::unistd::getuid()) {
        Ok(Some(u)) => Ok(u.dir.display().to_string()),
        _ => Err(FuncError::fatal("can't find the current user's home directory")),
    }
}

/// `~` -> `$HOME`, `~user` -> that user's home; anything else unchanged.
pub fn expand_home_path(p: &str) -> Result<String, FuncError> {
    let Some(rest) = p.strip_prefix('~') else {
        return Ok(p.to_string());
    };
    let (name, tail) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let home = if name.is_empty() { current_home()? } else { user(name)?.dir.display().to_string() };
    Ok(format!("{home}{tail}"))
}

builtin! {
    /// expands a leading ~ or ~user
    fn expand_home(path: &str) -> Result<String, FuncError> {
        expand_home_path(path)
    }
}
builtin! {
    /// a user's home directory
    fn home(user: &str) -> Result<String, FuncError> {
        Ok(super::user(user)?.dir.display().to_string())
    }
}
builtin! {
    /// a user's numeric id, as a string
    fn uid(user: &str) -> Result<String, FuncError> {
        Ok(super::user(user)?.uid.to_string())
    }
}

/// Key/value pairs of an os-release file (quotes removed).
pub fn parse_os_release(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            if l.starts_with('#') {
                return None;
            }
            let (k, v) = l.split_once('=')?;
            let v = v.trim();
            let v = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(v);
            let v = v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')).unwrap_or(v);
            Some((k.trim().to_string(), v.to_string()))
        })
        .collect()
}

fn os_release() -> Vec<(String, String)> {
    let text = std::fs::read_to_string("/etc/os-release")
        .or_else(|_| std::fs::read_to_string("/usr/lib/os-release"))
        .unwrap_or_default();
    parse_os_release(&text)
}

/// The family of a distro from its os-release `ID` and `ID_LIKE`.
pub fn family_of(rel: &[(String, String)]) -> &'static str {
    let get = |k: &str| rel.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str()).unwrap_or("");
    let ids: Vec<&str> = std::iter::once(get("ID")).chain(get("ID_LIKE").split_whitespace()).collect();
    for id in ids {
        match id {
            "fedora" | "rhel" | "centos" | "rocky" | "almalinux" => return "redhat",
            "debian" | "ubuntu" => return "debian",
            "arch" | "archlinux" => return "archlinux",
            _ => {}
        }
    }
    ""
}

builtin! {
    /// the distro family: redhat, debian, archlinux or empty
    fn family() -> String {
        family_of(&os_release()).to_string()
    }
}
builtin! {
    /// whether the distro is in the redhat family
    fn is_redhat() -> bool {
        family_of(&os_release()) == "redhat"
    }
}
builtin! {
    /// whether the distro is in the debian family
    fn is_debian() -> bool {
        family_of(&os_release()) == "debian"
    }
}
builtin! {
    /// whether the distro is in the archlinux family
    fn is_arch() -> bool {
        family_of(&os_release()) == "archlinux"
    }
}

builtin! {
    /// whether this machine is a virtual machine
    fn is_virtual() -> FuncResult as "bool" {
        let cpu_flag = std::fs::read_to_string("/proc/cpuinfo")
            .map(|c| c.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor")))
            .unwrap_or(false);
        let vendor = ["/sys/class/dmi/id/sys_vendor", "/sys/class/dmi/id/product_name"]
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .any(|v| {
                let v = v.to_lowercase();
                ["qemu", "kvm", "vmware", "virtualbox", "xen", "bochs", "hyper-v", "parallels"]
                    .iter()
                    .any(|n| v.contains(n))
            });
        Ok(Value::Bool(cpu_flag || vendor || Path::new("/sys/hypervisor/type").exists()))
    }
}

builtin! {
    /// fields of /etc/os-release
    fn release() -> FuncResult as "struct{id str; variant_id str; version_id str}" {
        let rel = os_release();
        let get = |k: &str| Value::str(rel.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str()).unwrap_or(""));
        Ok(strukt([("id", get("ID")), ("variant_id", get("VARIANT_ID")), ("version_id", get("VERSION_ID"))]))
    }
}

/// `fedora39-x86_64` -> (`fedora`, `39`, `x86_64`); `None` when it has another shape.
pub fn split_distro_uid(uid: &str) -> Option<(String, String, String)> {
    let (head, arch) = uid.split_once('-')?;
    let cut = head.find(|c: char| c.is_ascii_digit())?;
    let (distro, version) = head.split_at(cut);
    if distro.is_empty() || arch.is_empty() || !distro.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    Some((distro.to_string(), version.to_string(), arch.to_string()))
}

builtin! {
    /// splits a distro uid like fedora39-x86_64
    fn parse_distro_uid(uid: &str) -> Value as "struct{distro str; version str; arch str}" {
        let (d, v, ar) = split_distro_uid(uid).unwrap_or_default();
        strukt([("distro", Value::str(d)), ("version", Value::str(v)), ("arch", Value::str(ar))])
    }
}

pub fn read_file(p: &Path) -> FuncResult {
    file_value(p, crate::lease::read_regular(p))
}

/// A file's bytes as an mcl string, or the error of reading them. Bytes that are not
/// UTF-8 text are an error, never replaced: a string is text in tend, and a lossy
/// conversion would write other bytes than the file holds wherever the value goes.
fn file_value(p: &Path, read: std::io::Result<Vec<u8>>) -> FuncResult {
    match read {
        Ok(b) => String::from_utf8(b).map(Value::str).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            FuncError::catchable(format!(
                "file {} is not UTF-8 text (byte {at} of {} is not): tend's strings hold text, and it \
                 will not change a file's bytes to make them so",
                p.display(),
                e.as_bytes().len()
            ))
        }),
        Err(e) => Err(FuncError::catchable(format!("can't read file {}: {e}", p.display()))),
    }
}

/// [`read_file`] under a read lease: a file some process still has open for writing is
/// read again once it is closed (see [`follow`]).
fn read_file_settled(p: &Path) -> Reading {
    match crate::lease::read_leased(p) {
        Ok(Leased::Read(b)) => Reading::Settled(file_value(p, Ok(b))),
        Ok(Leased::Busy(b)) => Reading::Unsettled(file_value(p, Ok(b))),
        Err(e) => Reading::Settled(file_value(p, Err(e))),
    }
}

streaming! {
    /// a file's contents, updated when it changes
    fn readfile(em, filename: String) -> "str" {
        follow(PathBuf::from(filename), Watched::Path, em, read_file_settled).await
    }
}

streaming! {
    /// whether a file exists, updated on change
    fn file_exists(em, filename: String) -> "bool" {
        follow(PathBuf::from(filename), Watched::Path, em, |p| Ok(Value::Bool(p.exists()))).await
    }
}

streaming! {
    /// whether a user exists, updated on change
    fn user_exists(em, user: String) -> "bool" {
        follow(PathBuf::from("/etc/passwd"), Watched::Path, em, move |_| match User::from_name(&user) {
            Ok(u) => Ok(Value::Bool(u.is_some())),
            Err(e) => Err(FuncError::catchable(format!("can't look up user {user:?}: {e}"))),
        })
        .await
    }
}

streaming! {
    /// whether a kernel module is loaded
    fn modinfo_loaded(em, module: String) -> "bool" {
        let path = PathBuf::from("/sys/module").join(&module);
        poll(em, Duration::from_secs(2), move || Ok(Value::Bool(path.exists()))).await
    }
}

streaming! {
    /// runs a shell command, one value per output line
    ///
    /// Runs `sh -c CMD` and emits every line of its standard output. A failure to start is
    /// a catchable error; the command is killed when the input changes or on shutdown.
    fn system(em, cmd: String) -> "str" {
        let child = crate::command::new("sh")
            .arg("-c")
            .arg(&cmd)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) => {
                em.send(Err(FuncError::catchable(format!("can't run {cmd:?}: {e}")))).await;
                return;
            }
        };
        let Some(stdout) = child.stdout.take() else { return };
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if !em.value(Value::str(line)).await {
                return;
            }
        }
        let _ = child.wait().await;
    }
}
