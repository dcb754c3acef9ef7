//! `hostname`: the static (`/etc/hostname`), pretty (`PRETTY_HOSTNAME` in
//! `/etc/machine-info`) and transient (kernel) hostnames; `hostname` is the fallback for
//! all three. Files are written directly rather than through systemd-hostnamed.

use lang::params::ParamMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use engine::{ApplyCtx, IoAt, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;

use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::machine::{HostnameSetter, Machine};
use crate::util::fs::atomic_write;
use crate::util::watch::watch_loop;

crate::params! {
    /// `hostname`'s params as written: `hostname` stands for each of the three not given.
    pub struct HostnameSpec {
        pub hostname: Option<String>,
        pub pretty_hostname: Option<String>,
        pub static_hostname: Option<String>,
        pub transient_hostname: Option<String>,
    }
}

/// The three names to manage (`None`: leave that one alone).
#[derive(Clone, Debug, PartialEq)]
pub struct HostnameParams {
    pub pretty: Option<String>,
    pub static_name: Option<String>,
    pub transient: Option<String>,
}

crate::fingerprint_fields!(HostnameParams { pretty, static_name, transient });

pub struct Hostname {
    raw: Raw,
    params: HostnameParams,
    etc_hostname: PathBuf,
    machine_info: PathBuf,
    setter: Arc<dyn HostnameSetter>,
}

impl Hostname {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<Hostname, BuildError> {
        let raw = Raw::new("hostname", name, values);
        let spec = raw.decode(HostnameSpec::decode)?;
        let pick = |name: Option<String>| name.or_else(|| spec.hostname.clone());
        let params = HostnameParams {
            pretty: pick(spec.pretty_hostname),
            static_name: pick(spec.static_hostname),
            transient: pick(spec.transient_hostname),
        };
        Ok(Hostname {
            raw,
            params,
            etc_hostname: host.path("/etc/hostname"),
            machine_info: host.path("/etc/machine-info"),
            setter: host.hostnames.clone(),
        })
    }
}

/// `machine-info` with `PRETTY_HOSTNAME` set (other lines kept).
fn with_pretty(text: &str, pretty: &str) -> String {
    let mut out: Vec<String> =
        text.lines().filter(|l| !l.starts_with("PRETTY_HOSTNAME=")).map(str::to_string).collect();
    out.push(format!("PRETTY_HOSTNAME=\"{}\"", pretty.replace('"', "\\\"")));
    out.join("\n") + "\n"
}

#[async_trait]
impl Resource for Hostname {
    fn validate(&self) -> Result<(), ResError> {
        let p = &self.params;
        if p.pretty.is_none() && p.static_name.is_none() && p.transient.is_none() {
            return Err(ResError::new(format!("hostname[{}]: at least one hostname field is required", self.raw.name)));
        }
        for name in [&p.static_name, &p.transient].into_iter().flatten() {
            if name.is_empty()
                || name.len() > 64
                || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
            {
                return Err(ResError::new(format!("hostname[{}]: `{name}` is not a valid hostname", self.raw.name)));
            }
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        watch_loop(vec![self.etc_hostname.clone(), self.machine_info.clone()], false, ctx)
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let mut ok = true;
        let key = format!("hostname[{}]", self.raw.name);
        if let Some(name) = &self.params.static_name {
            let current = std::fs::read_to_string(&self.etc_hostname).unwrap_or_default();
            if current.trim() != name {
                ok = false;
                if apply {
                    atomic_write(&self.etc_hostname, format!("{name}\n").as_bytes(), Some(0o644))
                        .at(&self.etc_hostname)?;
                } else {
                    ctx.report(format!("{key}: would set the static hostname to {name}"));
                }
            }
        }
        if let Some(pretty) = &self.params.pretty {
            let current = std::fs::read_to_string(&self.machine_info).unwrap_or_default();
            let wanted = with_pretty(&current, pretty);
            if current != wanted {
                ok = false;
                if apply {
                    atomic_write(&self.machine_info, wanted.as_bytes(), Some(0o644)).at(&self.machine_info)?;
                } else {
                    ctx.report(format!("{key}: would set the pretty hostname to {pretty}"));
                }
            }
        }
        if let Some(name) = &self.params.transient
            && self.setter.transient()? != *name
        {
            ok = false;
            if apply {
                self.setter.set_transient(name)?;
            } else {
                ctx.report(format!("{key}: would set the transient hostname to {name}"));
            }
        }
        Ok(ok)
    }

    crate::fingerprint_by_params!();
}

/// The `hostname` kind: its params and send fields as the type checker sees them, and its constructor.
pub const HOSTNAME: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("hostname", HostnameSpec::FIELDS, crate::built_on_host!(Hostname));
