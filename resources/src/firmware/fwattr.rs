//! `fwattr`: one firmware (BIOS/UEFI) setting through the kernel's firmware-attributes
//! interface, `/sys/class/firmware-attributes/<driver>/attributes/<key>/current_value`
//! (the directory comes from the host's root, so tests lay out the kernel's files in a
//! temporary one). `driver` may be left out when the machine has one; `key` defaults to the
//! name. With `check` (the default) the value is checked against the attribute's `type`
//! (enumeration, integer, string) and bounds first, and an enumeration value the firmware
//! spells otherwise is taken in the spelling it lists (`Enabled` for `Enable`), unless
//! `strict`. `skip` turns a missing interface or attribute into a warning.
//!
//! Many firmwares take a change only at the next boot: they keep `current_value` and set
//! the driver's `attributes/pending_reboot` to 1. A value this agent wrote is then held as
//! set (with a warning that a reboot is pending) instead of being written again and again.
//!
//! sysfs seldom tells inotify about a change, so besides watching the files the watch
//! re-reads them every [`REREAD`] and raises an event only when they differ.

use lang::params::ParamMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;

use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::machine::Machine;
use crate::util::watch::FileWatch;

/// The kernel's directory of firmware-attribute drivers.
pub const FWATTR_DIR: &str = "/sys/class/firmware-attributes";

/// How often the watch re-reads the attribute, for the sysfs files that never notify.
pub const REREAD: Duration = Duration::from_secs(30);

crate::params! {
    /// `fwattr`'s params; the name is the attribute unless `key` is set.
    #[derive(Clone, Debug, PartialEq)]
    pub struct FwattrParams {
        /// The driver directory (`thinklmi`, `dell-wmi-sysman`); empty: the only one there.
        pub driver: String,
        pub key: String => |p, f| p.str_or(f, p.name),
        pub value: String,
        /// Check the value against the attribute's type and bounds before writing.
        pub check: bool = true,
        /// Take the value only as spelt, never a vendor's other spelling of it.
        pub strict: bool,
        /// A missing interface or attribute is a warning, not an error.
        pub skip: bool,
    }
}

pub struct Fwattr {
    raw: Raw,
    params: FwattrParams,
    /// `<root>/sys/class/firmware-attributes`.
    base: PathBuf,
    /// The value this instance last wrote, to tell a write waiting for a reboot from drift.
    written: Option<String>,
}

/// Where one attribute lives, once its driver is known.
struct Attr {
    driver: String,
    dir: PathBuf,
}

impl Attr {
    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// `<driver>/attributes/pending_reboot`.
    fn pending_reboot(&self) -> PathBuf {
        self.dir.parent().map(|d| d.join("pending_reboot")).unwrap_or_default()
    }
}

impl Fwattr {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<Fwattr, BuildError> {
        let (raw, params) = Raw::decoded("fwattr", name, values, FwattrParams::decode)?;
        Ok(Fwattr { raw, params, base: host.path(FWATTR_DIR), written: None })
    }

    fn key(&self) -> String {
        format!("fwattr[{}]", self.raw.name)
    }

    /// The attribute's directory, or `None` when it is missing and `skip` is set.
    fn locate(&self) -> Result<Option<Attr>, ResError> {
        let key = self.key();
        let p = &self.params;
        let driver = match std::fs::read_dir(&self.base) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && p.skip => return Ok(None),
            Err(e) => {
                return Err(ResError::new(format!(
                    "{key}: {}: {e} (this machine's firmware offers no attributes to the kernel)",
                    self.base.display()
                )));
            }
            Ok(entries) => {
                let mut names: Vec<String> =
                    entries.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
                names.sort();
                if !p.driver.is_empty() {
                    if !names.contains(&p.driver) {
                        if p.skip {
                            return Ok(None);
                        }
                        return Err(ResError::new(format!(
                            "{key}: field `driver`: no driver `{}` under {} (there: {})",
                            p.driver,
                            self.base.display(),
                            listed(&names)
                        )));
                    }
                    p.driver.clone()
                } else if names.len() == 1 {
                    names.remove(0)
                } else if names.is_empty() && p.skip {
                    return Ok(None);
                } else {
                    return Err(ResError::new(format!(
                        "{key}: field `driver`: set it, {} has {} drivers ({})",
                        self.base.display(),
                        names.len(),
                        listed(&names)
                    )));
                }
            }
        };
        let dir = self.base.join(&driver).join("attributes").join(&p.key);
        if !dir.join("current_value").exists() {
            if p.skip {
                return Ok(None);
            }
            return Err(ResError::new(format!("{key}: driver `{driver}` has no attribute `{}`", p.key)));
        }
        Ok(Some(Attr { driver, dir }))
    }

    /// The value to write: `value` itself, or the firmware's spelling of it; an error says
    /// why the firmware would refuse it.
    fn effective(&self, attr: &Attr) -> Result<String, ResError> {
        let p = &self.params;
        if !p.check {
            return Ok(p.value.clone());
        }
        let bad = |why: String| ResError::new(format!("{}: field `value`: `{}` {why}", self.key(), p.value));
        let kind = read_trimmed(&attr.file("type"))?.unwrap_or_default();
        match kind.as_str() {
            "enumeration" => {
                let listed = read_trimmed(&attr.file("possible_values"))?.unwrap_or_default();
                let possible: Vec<&str> = listed.split(';').map(str::trim).filter(|v| !v.is_empty()).collect();
                if possible.contains(&p.value.as_str()) {
                    return Ok(p.value.clone());
                }
                if !p.strict
                    && let Some(alias) = aliases(&attr.driver, &p.key, &p.value).iter().find(|a| possible.contains(a))
                {
                    return Ok(alias.to_string());
                }
                Err(bad(format!("is not one of {}", possible.join(", "))))
            }
            "integer" => {
                let n: i64 = p.value.trim().parse().map_err(|_| bad("is not an integer".into()))?;
                let min = read_number(&attr.file("min_value"))?;
                let max = read_number(&attr.file("max_value"))?;
                let step = read_number(&attr.file("scalar_increment"))?;
                if let Some(min) = min
                    && n < min
                {
                    return Err(bad(format!("is below the minimum {min}")));
                }
                if let Some(max) = max
                    && n > max
                {
                    return Err(bad(format!("is above the maximum {max}")));
                }
                if let Some(step) = step.filter(|s| *s > 0)
                    && (n - min.unwrap_or(0)) % step != 0
                {
                    return Err(bad(format!("is not {} plus a multiple of {step}", min.unwrap_or(0))));
                }
                Ok(n.to_string())
            }
            "string" => {
                let len = p.value.chars().count() as i64;
                if let Some(min) = read_number(&attr.file("min_length"))?
                    && len < min
                {
                    return Err(bad(format!("is shorter than {min} characters")));
                }
                if let Some(max) = read_number(&attr.file("max_length"))?
                    && len > max
                {
                    return Err(bad(format!("is longer than {max} characters")));
                }
                Ok(p.value.clone())
            }
            "" => Err(ResError::new(format!("{}: {} has no `type`", self.key(), attr.dir.display()))),
            other => Err(ResError::new(format!(
                "{}: attributes of type `{other}` cannot be checked; set `check => false` to write the value as given",
                self.key()
            ))),
        }
    }
}

/// Other spellings firmware vendors use for one enumeration value, by driver and key.
fn aliases(driver: &str, key: &str, value: &str) -> &'static [&'static str] {
    match (driver, key, value) {
        ("thinklmi", "SecureBoot", "Enabled") => &["Enable"],
        ("thinklmi", "SecureBoot", "Enable") => &["Enabled"],
        ("thinklmi", "SecureBoot", "Disabled") => &["Disable"],
        ("thinklmi", "SecureBoot", "Disable") => &["Disabled"],
        ("thinklmi", "KeyboardLayout", "English") => &["English_US", "English_UK"],
        ("thinklmi", "KeyboardLayout", "English_US") => &["English"],
        ("thinklmi", "KeyboardLayout", "French") => &["CanadianFrenchMultilingual", "CanadianFrench"],
        ("thinklmi", "KeyboardLayout", "CanadianFrenchMultilingual" | "CanadianFrench") => &["French"],
        ("thinklmi", "KeyboardLayout", "Chinese") => &["TraditionalChinese"],
        ("thinklmi", "KeyboardLayout", "TraditionalChinese") => &["Chinese"],
        _ => &[],
    }
}

fn listed(names: &[String]) -> String {
    if names.is_empty() { "none".to_string() } else { names.join(", ") }
}

/// A sysfs file's text without its trailing newline, `None` when it does not exist.
fn read_trimmed(path: &Path) -> Result<Option<String>, ResError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text.trim_end_matches('\n').to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ResError::io(path, &e)),
    }
}

fn read_number(path: &Path) -> Result<Option<i64>, ResError> {
    match read_trimmed(path)? {
        None => Ok(None),
        Some(text) => text
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| ResError::new(format!("{}: `{text}` is not a number", path.display()))),
    }
}

/// What the watch compares between re-reads.
fn snapshot(files: &[PathBuf]) -> Vec<Option<Vec<u8>>> {
    files.iter().map(|f| std::fs::read(f).ok()).collect()
}

#[async_trait]
impl Resource for Fwattr {
    fn validate(&self) -> Result<(), ResError> {
        let p = &self.params;
        let err = |field: &str, message: &str| self.raw.invalid(Some(field), message);
        let plain = |s: &str| !s.contains('/') && s != "." && s != ".." && !s.contains('\0');
        if !plain(&p.driver) {
            return Err(err("driver", "must be a directory name, without `/`"));
        }
        if p.key.is_empty() || !plain(&p.key) {
            return Err(err("key", "must be an attribute name, without `/`"));
        }
        if p.value.contains('\n') {
            return Err(err("value", "must be one line"));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let located = self.locate();
        let skip = self.params.skip;
        let key = self.key();
        Box::pin(async move {
            let attr = match located {
                Ok(Some(attr)) => Some(attr),
                Ok(None) => {
                    tracing::warn!(resource = %key, "skipped: the firmware attribute is not on this machine");
                    None
                }
                // Reported by check_apply; the re-reads below notice when it appears.
                Err(_) => None,
            };
            let files = match &attr {
                Some(a) => vec![a.file("current_value"), a.pending_reboot()],
                None => Vec::new(),
            };
            let mut watch = match files.iter().filter(|f| f.exists()).cloned().collect::<Vec<_>>() {
                targets if !targets.is_empty() => FileWatch::new(targets, false).ok(),
                _ => None,
            };
            let mut seen = snapshot(&files);
            let mut reread = tokio::time::interval_at(tokio::time::Instant::now() + REREAD, REREAD);
            ctx.event();
            loop {
                tokio::select! {
                    changed = async { match watch.as_mut() { Some(w) => w.changed().await, None => std::future::pending().await } } => {
                        changed?;
                        seen = snapshot(&files);
                        ctx.event();
                    }
                    _ = reread.tick(), if !skip || attr.is_some() => {
                        let now = snapshot(&files);
                        if now != seen || attr.is_none() {
                            seen = now;
                            ctx.event();
                        }
                    }
                    _ = ctx.cancelled() => return Ok(()),
                }
            }
        })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let key = self.key();
        let Some(attr) = self.locate()? else {
            return Ok(true);
        };
        let want = self.effective(&attr)?;
        let current_path = attr.file("current_value");
        let current = read_trimmed(&current_path)?.unwrap_or_default();
        if current == want {
            return Ok(true);
        }
        let pending = read_trimmed(&attr.pending_reboot())?.is_some_and(|v| v.trim() == "1");
        if pending && self.written.as_deref() == Some(want.as_str()) {
            tracing::warn!(resource = %key, value = %want, "set; the firmware applies it at the next reboot");
            return Ok(true);
        }
        if !apply {
            ctx.report(format!("{key}: would set `{}` from `{current}` to `{want}`", self.params.key));
            return Ok(false);
        }
        // sysfs attributes are written in place (a rename cannot replace one).
        std::fs::write(&current_path, format!("{want}\n")).map_err(|e| ResError::io(&current_path, &e))?;
        self.written = Some(want.clone());
        if want == self.params.value {
            tracing::info!(resource = %key, "wrote `{want}`");
        } else {
            tracing::info!(resource = %key, "wrote `{want}` (the firmware's spelling of `{}`)", self.params.value);
        }
        Ok(false)
    }

    crate::fingerprint_by_params!();
}

/// The `fwattr` kind: its params as the type checker sees them, and its constructor.
pub const FWATTR: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("fwattr", FwattrParams::FIELDS, crate::built_on_host!(Fwattr));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_go_both_ways_for_the_known_keys_only() {
        assert_eq!(aliases("thinklmi", "SecureBoot", "Enable"), ["Enabled"]);
        assert_eq!(aliases("thinklmi", "SecureBoot", "Enabled"), ["Enable"]);
        assert!(aliases("dell-wmi-sysman", "SecureBoot", "Enable").is_empty());
    }
}
