//! `mount`: the resource name is the mount point. `state => "exists"` keeps an fstab entry
//! (`device`, `type`, `options`, `freq`, `passno`) and the live mount; `absent` removes
//! both. fstab edits are atomic and keep every other line; the live mount goes through the
//! host's [`Mounter`].

use lang::params::ParamMap;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use engine::{ApplyCtx, IoAt, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;

use crate::contract::common::Raw;
use crate::contract::params::{BuildError, Params};
use crate::contract::typed::Fingerprint as _;
use crate::contract::typed::Presence;
use crate::machine::{Machine, Mounter};
use crate::util::fs::{atomic_write, unified_diff};
use crate::util::watch::watch_loop;

crate::params! {
    /// `mount`'s params; the name is the mount point.
    #[derive(Clone, Debug, PartialEq)]
    pub struct MountParams {
        pub state: Presence,
        pub device: String,
        pub fstype("type"): String,
        pub options: BTreeMap<String, String> = BTreeMap::from([("defaults".to_string(), String::new())]),
        pub freq: i64 => non_negative,
        pub passno: i64 => non_negative,
    }
}

fn non_negative(p: &Params<'_>, field: &str) -> Result<i64, BuildError> {
    Ok(p.opt_int_in(field, 0, i64::from(i32::MAX), "int")?.unwrap_or(0))
}

pub struct Mount {
    raw: Raw,
    params: MountParams,
    mounts: Arc<dyn Mounter>,
    fstab: PathBuf,
    filesystems: PathBuf,
    /// The running kernel's module aliases: a type not loaded yet may have a module.
    module_aliases: PathBuf,
}

impl Mount {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<Mount, BuildError> {
        let (raw, params) = Raw::decoded("mount", name, values, MountParams::decode)?;
        Ok(Mount {
            raw,
            params,
            mounts: host.mounts.clone(),
            fstab: host.path("/etc/fstab"),
            filesystems: host.path("/proc/filesystems"),
            module_aliases: host.path(&format!("/lib/modules/{}/modules.alias", kernel_release(host))),
        })
    }

    fn entry(&self) -> String {
        let p = &self.params;
        let options: Vec<String> =
            p.options.iter().map(|(k, v)| if v.is_empty() { k.clone() } else { format!("{k}={v}") }).collect();
        format!("{}\t{}\t{}\t{}\t{} {}", p.device, self.raw.name, p.fstype, options.join(","), p.freq, p.passno)
    }

    /// The fstab text with this mount point's entry set (or removed when `None`).
    fn edited(&self, text: &str, entry: Option<&str>) -> String {
        let mut out = Vec::new();
        let mut placed = false;
        for line in text.lines() {
            let is_ours =
                !line.trim_start().starts_with('#') && line.split_whitespace().nth(1) == Some(self.raw.name.as_str());
            if !is_ours {
                out.push(line.to_string());
            } else if let Some(e) = entry
                && !placed
            {
                out.push(e.to_string());
                placed = true;
            }
        }
        if let Some(e) = entry
            && !placed
        {
            out.push(e.to_string());
        }
        let mut text = out.join("\n");
        if !text.is_empty() {
            text.push('\n');
        }
        text
    }
}

#[async_trait]
impl Resource for Mount {
    fn validate(&self) -> Result<(), ResError> {
        let err = |field: Option<&str>, message: String| self.raw.invalid(field, message);
        let p = &self.params;
        if !self.raw.name.starts_with('/') {
            return Err(err(None, "the name must be an absolute mount point".into()));
        }
        crate::util::path::check(&self.raw.name).map_err(|m| err(None, m))?;
        if p.state == Presence::Unset {
            return Err(err(Some("state"), "must be `exists` or `absent`".into()));
        }
        if p.state == Presence::Exists {
            if p.device.is_empty() {
                return Err(err(Some("device"), "is required".into()));
            }
            // As in mgmt, the type must be one the kernel knows; unlike mgmt, one it would
            // load on demand (a module aliased `fs-TYPE`, as `iso9660` before the first CD
            // is mounted) counts. Where neither can be read, the mount itself will tell.
            if let Ok(known) = std::fs::read_to_string(&self.filesystems)
                && !p.fstype.is_empty()
                && !known.lines().any(|l| l.split_whitespace().last() == Some(p.fstype.as_str()))
                && let Ok(aliases) = std::fs::read_to_string(&self.module_aliases)
                && !aliases.lines().any(|l| {
                    l.strip_prefix("alias fs-").and_then(|a| a.split_whitespace().next()) == Some(p.fstype.as_str())
                })
            {
                return Err(err(
                    Some("type"),
                    format!("`{}` is not listed in /proc/filesystems, and no kernel module provides it", p.fstype),
                ));
            }
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        watch_loop(vec![self.fstab.clone()], false, ctx)
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let point = self.raw.name.clone();
        let key = format!("mount[{point}]");
        let exists = self.params.state == Presence::Exists;
        let text = std::fs::read_to_string(&self.fstab).unwrap_or_default();
        let entry = self.entry();
        let wanted = self.edited(&text, exists.then_some(entry.as_str()));
        let mut ok = true;
        if !exists && self.mounts.is_mounted(&point).await? {
            ok = false;
            if apply {
                self.mounts.unmount(&point).await?;
            } else {
                ctx.report(format!("{key}: would unmount"));
            }
        }
        if wanted != text {
            ok = false;
            if apply {
                atomic_write(&self.fstab, wanted.as_bytes(), None).at(&self.fstab)?;
            } else {
                ctx.report(unified_diff(&self.fstab.display().to_string(), &text, &wanted));
            }
        }
        if exists && !self.mounts.is_mounted(&point).await? {
            ok = false;
            if apply {
                self.mounts.mount(&point).await?;
            } else {
                ctx.report(format!("{key}: would mount"));
            }
        }
        Ok(ok)
    }

    crate::fingerprint_by_params!();
}

/// The `mount` kind: its params and send fields as the type checker sees them, and its constructor.
pub const MOUNT: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("mount", MountParams::FIELDS, crate::built_on_host!(Mount));

/// The running kernel's release (`uname -r`), where its modules live.
fn kernel_release(host: &Machine) -> String {
    std::fs::read_to_string(host.path("/proc/sys/kernel/osrelease")).unwrap_or_default().trim().to_string()
}
