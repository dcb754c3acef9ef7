//! `sysctl`: a kernel parameter, named by its dotted key. `runtime` (default true) writes
//! `/proc/sys/<key as path>`; `persist` (default true) writes `<key> = <value>` to `path`
//! (default `/etc/sysctl.d/99-<key>.conf`). Both are watched.

use lang::params::ParamMap;
use std::path::PathBuf;

use async_trait::async_trait;
use engine::{ApplyCtx, IoAt, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;

use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::machine::Machine;
use crate::util::fs::atomic_write;
use crate::util::watch::watch_loop;

crate::params! {
    /// `sysctl`'s params; the name is the key (`net.ipv4.ip_forward`).
    #[derive(Clone, Debug, PartialEq)]
    pub struct SysctlParams {
        pub value: String,
        /// Set it in `/proc/sys` now.
        pub runtime: bool = true,
        /// Write it to `path` for the next boot.
        pub persist: bool = true,
        pub path: String => |p, f| p.str_or(f, &format!("/etc/sysctl.d/99-{}.conf", p.name)),
    }
}

pub struct Sysctl {
    raw: Raw,
    params: SysctlParams,
    proc_path: PathBuf,
    conf_path: PathBuf,
}

impl Sysctl {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<Sysctl, BuildError> {
        let (raw, params) = Raw::decoded("sysctl", name, values, SysctlParams::decode)?;
        let proc_path = host.path(&format!("/proc/sys/{}", name.replace('.', "/")));
        let conf_path = host.path(&params.path);
        Ok(Sysctl { raw, params, proc_path, conf_path })
    }

    fn line(&self) -> String {
        format!("{} = {}\n", self.raw.name, self.params.value)
    }
}

#[async_trait]
impl Resource for Sysctl {
    fn validate(&self) -> Result<(), ResError> {
        let err = |field: Option<&str>, message: &str| self.raw.invalid(field, message);
        let name = &self.raw.name;
        if name.contains('/') || name.contains('=') || name.starts_with('.') || name.ends_with('.') {
            return Err(err(None, "the name must be a dotted key without `/` or `=`"));
        }
        let v = &self.params.value;
        if v.is_empty() || v.trim() != v {
            return Err(err(Some("value"), "must be non-empty without surrounding whitespace"));
        }
        crate::util::path::check(&self.params.path).map_err(|m| err(Some("path"), &m))?;
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        // /proc/sys does not support inotify; only the persisted file is watched.
        let targets = if self.params.persist { vec![self.conf_path.clone()] } else { Vec::new() };
        watch_loop(targets, false, ctx)
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let mut ok = true;
        let key = format!("sysctl[{}]", self.raw.name);
        if self.params.runtime {
            let current = std::fs::read_to_string(&self.proc_path)
                .map_err(|e| ResError::new(format!("{key}: {}: {e}", self.proc_path.display())))?;
            let normalized: Vec<&str> = current.split_whitespace().collect();
            let wanted: Vec<&str> = self.params.value.split_whitespace().collect();
            if normalized != wanted {
                ok = false;
                if apply {
                    std::fs::write(&self.proc_path, format!("{}\n", self.params.value)).at(&self.proc_path)?;
                } else {
                    ctx.report(format!("{key}: would set runtime value to {}", self.params.value));
                }
            }
        }
        if self.params.persist {
            let line = self.line();
            if std::fs::read_to_string(&self.conf_path).ok().as_deref() != Some(line.as_str()) {
                ok = false;
                if apply {
                    if let Some(dir) = self.conf_path.parent() {
                        std::fs::create_dir_all(dir).at(dir)?;
                    }
                    atomic_write(&self.conf_path, line.as_bytes(), Some(0o644)).at(&self.conf_path)?;
                } else {
                    ctx.report(format!("{key}: would write {}", self.params.path));
                }
            }
        }
        Ok(ok)
    }

    crate::fingerprint_by_params!();
}

/// The `sysctl` kind: its params and send fields as the type checker sees them, and its constructor.
pub const SYSCTL: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("sysctl", SysctlParams::FIELDS, crate::built_on_host!(Sysctl));
