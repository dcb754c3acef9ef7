//! `virt:builder`: a virtual machine disk image built once with `virt-builder` (from the
//! guestfs tools) at `output` (default: the resource name), through the host's
//! [`ImageBuilder`] backend ([`FakeBuilder`] is the in-memory double).
//!
//! The image is never rebuilt or inspected: when the output exists the resource is right
//! (changing params later does not touch an existing image). Otherwise the command line
//! is built from the params (`os_version`, `arch` (default: this machine's), `hostname`,
//! `format`, `size` in bytes, `packages`, `update`, `selinux_relabel`, `ssh_keys`,
//! `root_ssh_inject`, `root_password_selector`, `mkdir`, `copy_in`, `run_cmd`,
//! `firstboot_cmd`, and `tweaks`, which holds grub-pc during a Debian update). With
//! `bootstrap` the running tend binary is copied to `/usr/local/bin/` in the image (tend
//! needs no extra packages; mgmt's `seeds` have no meaning here and are rejected). A
//! failed build deletes the partial image. With `log_output` each run's output is kept in
//! the resource's var directory. When the tool is missing and `no_setup` is false, the
//! `guestfs-tools` package is installed first through the host's package manager.
//!
//! Watch: the output path through the shared file watcher.

use lang::params::ParamMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
#[cfg(any(test, feature = "fakes"))]
use std::sync::Mutex;

use async_trait::async_trait;
use engine::{ApplyCtx, InitCtx, IoAt, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::machine::{Machine, PackageManager};
use crate::util::command::CmdOutput;
use crate::util::events::run_tool;
use crate::util::watch::watch_loop;

/// The program run for a build.
pub const VIRT_BUILDER_TOOL: &str = "virt-builder";

/// The (Debian) package that provides it.
pub const GUESTFS_PACKAGE: &str = "guestfs-tools";

/// Where `bootstrap` puts the tend binary inside the image.
pub const GUEST_BIN_DIR: &str = "/usr/local/bin/";

/// Builds disk images.
#[async_trait]
pub trait ImageBuilder: Send + Sync {
    /// Whether the tool is installed.
    fn available(&self) -> bool;
    /// Runs `virt-builder ARGS` to completion (or until `cancel`).
    async fn build(&self, args: &[String], cancel: &CancellationToken) -> Result<CmdOutput, ResError>;
}

/// The real `virt-builder` found on `PATH`.
pub struct VirtBuilder;

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

#[async_trait]
impl ImageBuilder for VirtBuilder {
    fn available(&self) -> bool {
        on_path(VIRT_BUILDER_TOOL)
    }
    async fn build(&self, args: &[String], cancel: &CancellationToken) -> Result<CmdOutput, ResError> {
        let argv: Vec<String> = std::iter::once(VIRT_BUILDER_TOOL.to_string()).chain(args.iter().cloned()).collect();
        run_tool(&argv, &[], cancel).await
    }
}

/// An in-memory builder: a build writes a small file at `--output`, or fails (leaving a
/// partial file) when told to; every command line is recorded.
#[derive(Default)]
#[cfg(any(test, feature = "fakes"))]
pub struct FakeBuilder {
    pub installed: std::sync::atomic::AtomicBool,
    pub fail: std::sync::atomic::AtomicBool,
    runs: Mutex<Vec<Vec<String>>>,
}

#[cfg(any(test, feature = "fakes"))]
impl FakeBuilder {
    pub fn runs(&self) -> Vec<Vec<String>> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[async_trait]
#[cfg(any(test, feature = "fakes"))]
impl ImageBuilder for FakeBuilder {
    fn available(&self) -> bool {
        self.installed.load(std::sync::atomic::Ordering::SeqCst)
    }
    async fn build(&self, args: &[String], _: &CancellationToken) -> Result<CmdOutput, ResError> {
        self.runs.lock().unwrap_or_else(|e| e.into_inner()).push(args.to_vec());
        let output = args
            .iter()
            .position(|a| a == "--output")
            .and_then(|i| args.get(i + 1))
            .ok_or_else(|| ResError::new("virt-builder: no --output"))?;
        let failing = self.fail.load(std::sync::atomic::Ordering::SeqCst);
        std::fs::write(output, if failing { "partial" } else { "image" }).at(output)?;
        let text = if failing { "virt-builder: error: disk full\n" } else { "[ 1.0] Finishing off\n" };
        Ok(CmdOutput {
            stdout: text.into(),
            stderr: String::new(),
            output: text.into(),
            code: Some(if failing { 1 } else { 0 }),
            not_text: None,
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SshKey {
    pub user: String,
    pub kind: String,
    pub key: String,
    pub comment: String,
}

crate::fingerprint_fields!(SshKey { user, kind, key, comment });

impl SshKey {
    /// `--ssh-inject`'s `USER:string:KEY` form (root when no user is given).
    pub fn inject_arg(&self) -> String {
        let user = if self.user.is_empty() { "root" } else { &self.user };
        let mut line = format!("{} {}", self.kind, self.key);
        if !self.comment.is_empty() {
            line = format!("{line} {}", self.comment);
        }
        format!("{user}:string:{line}")
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyIn {
    pub path: String,
    pub dest: String,
}

crate::fingerprint_fields!(CopyIn { path, dest });

crate::params! {
    /// `virt:builder`'s params.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct BuilderParams {
        /// The image written; defaults to the name.
        pub output: String => |p, f| Ok(p.opt_str(f)?.filter(|o| !o.is_empty()).unwrap_or_else(|| p.name.to_string())),
        pub os_version: String,
        pub arch: String,
        pub hostname: String,
        pub format: String,
        pub size: i64,
        pub packages: Vec<String>,
        pub update: bool = true,
        pub selinux_relabel: bool = true,
        pub no_setup: bool,
        pub ssh_keys: Vec<SshKey> as "[]struct{user str; type str; key str; comment str}" => |p, f| {
            Ok(p.list_struct(f)?
                .iter()
                .map(|s| SshKey { user: s.str("user"), kind: s.str("type"), key: s.str("key"), comment: s.str("comment") })
                .collect())
        },
        pub root_ssh_inject: bool = true,
        pub root_password_selector: String = "disabled".into(),
        pub bootstrap: bool = true,
        pub seeds: Vec<String>,
        pub mkdir: Vec<String>,
        pub copy_in: Vec<CopyIn> as "[]struct{path str; dest str}" => |p, f| {
            Ok(p.list_struct(f)?.iter().map(|s| CopyIn { path: s.str("path"), dest: s.str("dest") }).collect())
        },
        pub run_cmd: Vec<String>,
        pub firstboot_cmd: Vec<String>,
        pub log_output: bool = true,
        pub tweaks: bool = true,
    }
}

impl BuilderParams {
    /// The distribution part of `os_version` (`fedora-40` -> `fedora`).
    pub fn distro(&self) -> &str {
        self.os_version.split_once('-').map(|(d, _)| d).unwrap_or("")
    }
}

/// virt-builder's name for a Rust target architecture.
pub fn builder_arch(rust_arch: &str) -> Option<&'static str> {
    Some(match rust_arch {
        "x86_64" => "x86_64",
        "x86" => "i686",
        "aarch64" => "aarch64",
        "arm" => "armv7l",
        "powerpc64" if cfg!(target_endian = "little") => "ppc64le",
        "powerpc64" => "ppc64",
        "s390x" => "s390x",
        "riscv64" => "riscv64",
        _ => return None,
    })
}

/// The virt-builder arguments for `p`; `binary` is the tend executable to copy in when
/// bootstrapping.
pub fn builder_args(p: &BuilderParams, binary: Option<&Path>) -> Vec<String> {
    let mut a: Vec<String> = vec![p.os_version.clone(), "--output".into(), p.output.clone()];
    let mut push = |flag: &str, value: String| {
        a.push(flag.to_string());
        a.push(value);
    };
    let arch =
        if p.arch.is_empty() { builder_arch(std::env::consts::ARCH).unwrap_or("").to_string() } else { p.arch.clone() };
    if !arch.is_empty() {
        push("--arch", arch);
    }
    if !p.hostname.is_empty() {
        push("--hostname", p.hostname.clone());
    }
    if !p.format.is_empty() {
        push("--format", p.format.clone());
    }
    if p.size > 0 {
        push("--size", format!("{}b", p.size));
    }
    if !p.packages.is_empty() {
        push("--install", p.packages.join(","));
    }
    // Debian's grub-pc upgrade prompts inside the build; hold it and release it on boot.
    let grub_tweak = p.tweaks && p.update && p.distro() == "debian";
    if grub_tweak {
        push("--run-command", "apt-mark hold grub-pc".into());
    }
    if p.update {
        a.push("--update".into());
    }
    if grub_tweak {
        a.push("--firstboot-command".into());
        a.push("apt-mark unhold grub-pc".into());
    }
    if p.selinux_relabel {
        a.push("--selinux-relabel".into());
    }
    for key in &p.ssh_keys {
        a.push("--ssh-inject".into());
        a.push(key.inject_arg());
    }
    if p.root_ssh_inject {
        a.push("--ssh-inject".into());
        a.push("root".into());
    }
    if !p.root_password_selector.is_empty() {
        a.push("--root-password".into());
        a.push(p.root_password_selector.clone());
    }
    if p.bootstrap
        && let Some(bin) = binary
    {
        a.extend([
            "--mkdir".into(),
            GUEST_BIN_DIR.into(),
            "--copy-in".into(),
            format!("{}:{GUEST_BIN_DIR}", bin.display()),
        ]);
    }
    for dir in &p.mkdir {
        a.extend(["--mkdir".into(), dir.clone()]);
    }
    for c in &p.copy_in {
        a.extend(["--copy-in".into(), format!("{}:{}", c.path, c.dest)]);
    }
    for cmd in &p.run_cmd {
        a.extend(["--run-command".into(), cmd.clone()]);
    }
    for cmd in &p.firstboot_cmd {
        a.extend(["--firstboot-command".into(), cmd.clone()]);
    }
    a
}

pub struct VirtBuilderRes {
    raw: Raw,
    params: BuilderParams,
    builder: Arc<dyn ImageBuilder>,
    packages: Arc<dyn PackageManager>,
    var_dir: Option<PathBuf>,
}

impl VirtBuilderRes {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<VirtBuilderRes, BuildError> {
        let (raw, params) = Raw::decoded("virt:builder", name, values, BuilderParams::decode)?;
        Ok(VirtBuilderRes {
            raw,
            params,
            builder: host.builder.clone(),
            packages: host.packages.clone(),
            var_dir: None,
        })
    }

    fn key(&self) -> String {
        format!("virt:builder[{}]", self.raw.name)
    }

    fn save_log(&self, output: &str) {
        let Some(dir) = self.var_dir.as_ref().filter(|_| self.params.log_output) else { return };
        let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        let saved = std::fs::create_dir_all(dir).and_then(|()| {
            crate::util::fs::atomic_write(&dir.join(format!("{stamp}.log")), output.as_bytes(), Some(0o600))
        });
        if let Err(e) = saved {
            tracing::warn!(resource = %self.key(), error = %e, "cannot keep the build log");
        }
    }
}

fn no_space(s: &str) -> bool {
    !s.chars().any(char::is_whitespace)
}

#[async_trait]
impl Resource for VirtBuilderRes {
    fn validate(&self) -> Result<(), ResError> {
        let p = &self.params;
        let err = |field: &str, message: String| self.raw.invalid(Some(field), message);
        if !p.output.starts_with('/') {
            return Err(err("output", "must be an absolute path".into()));
        }
        crate::util::path::check(&p.output).map_err(|m| err("output", m))?;
        if p.os_version.is_empty() {
            return Err(err("os_version", "is required (see `virt-builder --list`)".into()));
        }
        if !matches!(p.format.as_str(), "" | "raw" | "qcow2") {
            return Err(err("format", "must be `raw` or `qcow2`".into()));
        }
        if p.size < 0 {
            return Err(err("size", "must not be negative".into()));
        }
        if let Some(bad) = p.packages.iter().find(|x| x.is_empty() || x.contains(',')) {
            return Err(err("packages", format!("`{bad}` is not a package name (empty, or has a comma)")));
        }
        for k in &p.ssh_keys {
            if k.kind.is_empty() || k.key.is_empty() {
                return Err(err("ssh_keys", "every key needs a type and a key".into()));
            }
            if ![&k.user, &k.kind, &k.key, &k.comment].iter().all(|s| no_space(s)) {
                return Err(err("ssh_keys", "key fields must not contain white space".into()));
            }
        }
        if !p.seeds.is_empty() {
            return Err(err("seeds", "tend has no cluster for a bootstrapped guest to join; leave it empty".into()));
        }
        if let Some(bad) = p.mkdir.iter().find(|d| !d.starts_with('/') || !d.ends_with('/')) {
            return Err(err("mkdir", format!("`{bad}` must be an absolute directory ending in `/`")));
        }
        for dir in &p.mkdir {
            crate::util::path::check(dir).map_err(|m| err("mkdir", m))?;
        }
        for c in &p.copy_in {
            if !c.path.starts_with('/') {
                return Err(err("copy_in", format!("the path `{}` must be absolute", c.path)));
            }
            for path in [&c.path, &c.dest] {
                crate::util::path::check(path).map_err(|m| err("copy_in", m))?;
            }
            if !c.dest.starts_with('/') || !c.dest.ends_with('/') {
                return Err(err(
                    "copy_in",
                    format!("the dest `{}` must be an absolute directory ending in `/`", c.dest),
                ));
            }
        }
        if p.run_cmd.iter().any(String::is_empty) {
            return Err(err("run_cmd", "commands must not be empty".into()));
        }
        if p.firstboot_cmd.iter().any(String::is_empty) {
            return Err(err("firstboot_cmd", "commands must not be empty".into()));
        }
        Ok(())
    }

    async fn init(&mut self, ctx: &InitCtx) -> Result<(), ResError> {
        self.var_dir = Some(ctx.var_dir());
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        watch_loop(vec![PathBuf::from(&self.params.output)], false, ctx)
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let (p, key) = (self.params.clone(), self.key());
        let output = PathBuf::from(&p.output);
        match std::fs::symlink_metadata(&output) {
            Ok(_) => return Ok(true),
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(ResError::new(format!("{key}: {}: {e}", p.output)));
            }
            Err(_) => {}
        }
        if !apply {
            ctx.report(format!("{key}: would build {} ({})", p.output, p.os_version));
            return Ok(false);
        }
        if !self.builder.available() {
            if p.no_setup {
                return Err(ResError::new(format!("{key}: {VIRT_BUILDER_TOOL} is not installed and no_setup is set")));
            }
            tracing::info!(resource = %key, package = GUESTFS_PACKAGE, "installing the image builder");
            let tx = crate::machine::Transaction {
                install: vec![(GUESTFS_PACKAGE.to_string(), None)],
                ..Default::default()
            };
            self.packages.apply(&tx).await?;
        }
        let binary = if p.bootstrap {
            Some(std::env::current_exe().and_then(|p| p.canonicalize()).at("/proc/self/exe")?)
        } else {
            None
        };
        let args = builder_args(&p, binary.as_deref());
        tracing::info!(resource = %key, args = %args.join(" "), "building the image");
        let result = self.builder.build(&args, &ctx.cancel).await;
        if let Ok(out) = &result {
            self.save_log(&out.output);
        }
        match result {
            Ok(out) if out.success() => Ok(false),
            failed => {
                // Never leave a partial image behind: its existence would mean "done".
                match std::fs::remove_file(&output) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(ResError::new(format!("{key}: cannot delete the partial image {}: {e}", p.output)));
                    }
                    _ => {}
                }
                Err(match failed {
                    Ok(out) => {
                        let tail: Vec<&str> =
                            out.output.lines().rev().take(10).collect::<Vec<_>>().into_iter().rev().collect();
                        let status = out.code.map(|c| format!("exit status {c}")).unwrap_or_else(|| "a signal".into());
                        ResError::new(format!("{key}: {VIRT_BUILDER_TOOL} failed with {status}: {}", tail.join("\n")))
                    }
                    Err(e) => ResError::new(format!("{key}: {e}")),
                })
            }
        }
    }

    crate::fingerprint_by_params!();
}

/// The `virt:builder` kind: its params and send fields as the type checker sees them, and its constructor.
pub const VIRT_BUILDER: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("virt:builder", BuilderParams::FIELDS, crate::built_on_host!(VirtBuilderRes));

#[cfg(test)]
mod tests {
    use super::*;
    use lang::value::Value;

    fn params(pairs: &[(&str, Value)]) -> BuilderParams {
        let values: ParamMap = pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        Raw::new("virt:builder", "/img/vm.raw", &values).decode(BuilderParams::decode).unwrap()
    }

    #[test]
    fn the_command_line_follows_the_params() {
        let p = params(&[
            ("os_version", Value::str("fedora-40")),
            ("arch", Value::str("x86_64")),
            ("size", Value::Int(100 * 1024 * 1024 * 1024)),
            ("packages", Value::list(vec![Value::str("@minimal-environment"), Value::str("screen")])),
        ]);
        assert_eq!(p.output, "/img/vm.raw", "the output defaults to the name");
        assert_eq!(
            builder_args(&p, Some(Path::new("/usr/bin/tend"))),
            [
                "fedora-40",
                "--output",
                "/img/vm.raw",
                "--arch",
                "x86_64",
                "--size",
                "107374182400b",
                "--install",
                "@minimal-environment,screen",
                "--update",
                "--selinux-relabel",
                "--ssh-inject",
                "root",
                "--root-password",
                "disabled",
                "--mkdir",
                "/usr/local/bin/",
                "--copy-in",
                "/usr/bin/tend:/usr/local/bin/",
            ]
        );
    }

    #[test]
    fn debian_updates_hold_grub_and_options_can_be_turned_off() {
        let key = Value::strukt(vec![
            ("user".into(), Value::str("james")),
            ("type".into(), Value::str("ssh-ed25519")),
            ("key".into(), Value::str("AAAA")),
            ("comment".into(), Value::str("")),
        ]);
        let copy = Value::strukt(vec![("path".into(), Value::str("/etc/motd")), ("dest".into(), Value::str("/etc/"))]);
        let p = params(&[
            ("os_version", Value::str("debian-12")),
            ("hostname", Value::str("vm1")),
            ("format", Value::str("qcow2")),
            ("selinux_relabel", Value::Bool(false)),
            ("root_ssh_inject", Value::Bool(false)),
            ("root_password_selector", Value::str("")),
            ("bootstrap", Value::Bool(false)),
            ("ssh_keys", Value::list(vec![key])),
            ("copy_in", Value::list(vec![copy])),
            ("run_cmd", Value::list(vec![Value::str("echo hi")])),
        ]);
        let args = builder_args(&p, Some(Path::new("/usr/bin/tend")));
        let text = args.join(" ");
        assert!(text.contains("--hostname vm1 --format qcow2"), "{text}");
        assert!(
            text.contains("--run-command apt-mark hold grub-pc --update --firstboot-command apt-mark unhold grub-pc"),
            "{text}"
        );
        assert!(text.contains("--ssh-inject james:string:ssh-ed25519 AAAA"), "{text}");
        assert!(text.ends_with("--copy-in /etc/motd:/etc/ --run-command echo hi"), "{text}");
        assert!(!text.contains("selinux") && !text.contains("root-password") && !text.contains("/usr/local/bin"));
        assert_eq!(builder_arch("x86_64"), Some("x86_64"));
        assert_eq!(builder_arch("x86"), Some("i686"));
        assert_eq!(builder_arch("wasm32"), None);
    }
}
