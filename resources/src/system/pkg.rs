//! `pkg`: a package through the host's [`PackageManager`] (dpkg/apt on a real host):
//! `state` is `installed` (default), `uninstalled`, `newest`, or an exact version.

use lang::params::ParamMap;
use std::sync::Arc;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource};

use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::machine::{Machine, PackageManager};

crate::params! {
    /// `pkg`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct PkgParams {
        /// `installed`, `uninstalled`, `newest` or a version (an open set).
        pub state: String => |p, f| p.str_or(f, "installed"),
        pub allowdowngrade: bool,
        pub allowuntrusted: bool,
        pub allownonfree: bool,
        pub allowunsupported: bool,
    }
}

pub struct Pkg {
    raw: Raw,
    params: PkgParams,
    packages: Arc<dyn PackageManager>,
}

impl Pkg {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<Pkg, BuildError> {
        let (raw, params) = Raw::decoded("pkg", name, values, PkgParams::decode)?;
        Ok(Pkg { raw, params, packages: host.packages.clone() })
    }
}

#[async_trait]
impl Resource for Pkg {
    fn validate(&self) -> Result<(), ResError> {
        let err = |message: &str| self.raw.invalid(Some("state"), message);
        match self.params.state.as_str() {
            "" => Err(err("must not be empty")),
            "latest" => Err(err("`latest` is not a state: did you mean `newest`?")),
            _ => Ok(()),
        }
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let name = self.raw.name.clone();
        let installed = self.packages.installed(&name).await?;
        let state = self.params.state.as_str();
        let action: Option<(&str, Option<String>)> = match state {
            "uninstalled" => installed.is_some().then_some(("remove", None)),
            "installed" => installed.is_none().then_some(("install", None)),
            "newest" => {
                let candidate = self.packages.candidate(&name).await?;
                (candidate.is_some() && installed != candidate).then_some(("install", None))
            }
            version => (installed.as_deref() != Some(version)).then(|| ("install", Some(version.to_string()))),
        };
        let Some((action, version)) = action else { return Ok(true) };
        if !apply {
            let what = version.as_deref().map(|v| format!("{name}={v}")).unwrap_or(name.clone());
            ctx.report(format!("pkg[{name}]: would {action} {what}"));
            return Ok(false);
        }
        match action {
            "remove" => self.packages.remove(&name).await?,
            _ => self.packages.install(&name, version.as_deref(), self.params.allowdowngrade).await?,
        }
        Ok(false)
    }

    crate::fingerprint_by_params!();
}

/// The `pkg` kind: its params and send fields as the type checker sees them, and its constructor.
pub const PKG: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("pkg", PkgParams::FIELDS, crate::built_on_host!(Pkg));
