//! `nspawn`: a systemd-nspawn container (a machine image known to `machinectl`, named
//! like the resource) kept `running` (the default) or `stopped`, through the host's
//! [`Machines`] backend (the real one drives `machinectl`; [`FakeMachines`] is the
//! in-memory double). Starting runs `machinectl start` (the `systemd-nspawn@NAME`
//! service), stopping `machinectl poweroff` (the container shuts down on its own, the
//! watch sees it go). A machine that does not run needs an image of its name. A
//! notification reboots a running container (`machinectl reboot`) unless this run just
//! started it.
//!
//! Watch: poll-free, on machined's state file `/run/systemd/machines/NAME`, which exists
//! exactly while the machine is registered (mgmt listens to machined's D-Bus signals
//! instead).

use lang::params::ParamMap;
#[cfg(any(test, feature = "fakes"))]
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
#[cfg(any(test, feature = "fakes"))]
use std::sync::Mutex;

use async_trait::async_trait;
#[cfg(any(test, feature = "fakes"))]
use engine::IoAt;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;

use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::machine::Machine;
use crate::util::events::{run_tool, run_tool_ok};
#[cfg(any(test, feature = "fakes"))]
use crate::util::lock;
use crate::util::watch::watch_loop;

/// Where machined keeps one state file per registered machine.
pub const MACHINES_DIR: &str = "/run/systemd/machines";

/// systemd-machined's machines and images.
#[async_trait]
pub trait Machines: Send + Sync {
    /// machined's state of a registered machine (`opening`, `running`, `closing`), or
    /// `None` when no machine of that name runs.
    async fn state(&self, name: &str) -> Result<Option<String>, ResError>;
    async fn image_exists(&self, name: &str) -> Result<bool, ResError>;
    async fn start(&self, name: &str) -> Result<(), ResError>;
    async fn poweroff(&self, name: &str) -> Result<(), ResError>;
    async fn reboot(&self, name: &str) -> Result<(), ResError>;
    /// The file whose existence follows the machine's registration (watched).
    fn state_file(&self, name: &str) -> PathBuf;
}

/// `machinectl ARGS...`.
pub fn machinectl(args: &[&str]) -> Vec<String> {
    std::iter::once("machinectl").chain(args.iter().copied()).map(str::to_string).collect()
}

/// machined through `machinectl`.
pub struct Machinectl;

#[async_trait]
impl Machines for Machinectl {
    async fn state(&self, name: &str) -> Result<Option<String>, ResError> {
        let argv = machinectl(&["show", name, "--property=State", "--value"]);
        let out = run_tool(&argv, &[], &Default::default()).await?;
        if out.success() {
            return Ok(Some(out.stdout.trim().to_string()));
        }
        if out.output.contains("No machine") {
            return Ok(None);
        }
        Err(ResError::new(format!("`{}` failed: {}", argv.join(" "), out.output.trim())))
    }
    async fn image_exists(&self, name: &str) -> Result<bool, ResError> {
        let argv = machinectl(&["show-image", name]);
        let out = run_tool(&argv, &[], &Default::default()).await?;
        if out.success() {
            return Ok(true);
        }
        if out.output.contains("No image") {
            return Ok(false);
        }
        Err(ResError::new(format!("`{}` failed: {}", argv.join(" "), out.output.trim())))
    }
    async fn start(&self, name: &str) -> Result<(), ResError> {
        run_tool_ok(&machinectl(&["start", name]), &[]).await.map(drop)
    }
    async fn poweroff(&self, name: &str) -> Result<(), ResError> {
        run_tool_ok(&machinectl(&["poweroff", name]), &[]).await.map(drop)
    }
    async fn reboot(&self, name: &str) -> Result<(), ResError> {
        run_tool_ok(&machinectl(&["reboot", name]), &[]).await.map(drop)
    }
    fn state_file(&self, name: &str) -> PathBuf {
        Path::new(MACHINES_DIR).join(name)
    }
}

/// In-memory machined for tests: images must be added; running machines have a state file
/// under `ROOT/run/systemd/machines/`, like the real one; every call is recorded.
#[cfg(any(test, feature = "fakes"))]
pub struct FakeMachines {
    dir: PathBuf,
    images: Mutex<BTreeSet<String>>,
    running: Mutex<BTreeSet<String>>,
    calls: Mutex<Vec<String>>,
}

#[cfg(any(test, feature = "fakes"))]
impl FakeMachines {
    pub fn new(root: &Path) -> FakeMachines {
        FakeMachines {
            dir: root.join(MACHINES_DIR.trim_start_matches('/')),
            images: Mutex::default(),
            running: Mutex::default(),
            calls: Mutex::default(),
        }
    }
    pub fn add_image(&self, name: &str) {
        lock(&self.images).insert(name.to_string());
    }
    pub fn calls(&self) -> Vec<String> {
        lock(&self.calls).clone()
    }
    pub fn is_running(&self, name: &str) -> bool {
        lock(&self.running).contains(name)
    }
    /// The container shuts itself down.
    pub fn exit_behind_our_back(&self, name: &str) {
        lock(&self.running).remove(name);
        let _gone = std::fs::remove_file(self.dir.join(name));
    }
}

#[async_trait]
#[cfg(any(test, feature = "fakes"))]
impl Machines for FakeMachines {
    async fn state(&self, name: &str) -> Result<Option<String>, ResError> {
        Ok(self.is_running(name).then(|| "running".to_string()))
    }
    async fn image_exists(&self, name: &str) -> Result<bool, ResError> {
        Ok(lock(&self.images).contains(name))
    }
    async fn start(&self, name: &str) -> Result<(), ResError> {
        lock(&self.calls).push(format!("start {name}"));
        if !lock(&self.images).contains(name) {
            return Err(ResError::new(format!("No image '{name}' known")));
        }
        std::fs::create_dir_all(&self.dir).at(&self.dir)?;
        std::fs::write(self.dir.join(name), "STATE=running\n").at(self.dir.join(name))?;
        lock(&self.running).insert(name.to_string());
        Ok(())
    }
    async fn poweroff(&self, name: &str) -> Result<(), ResError> {
        lock(&self.calls).push(format!("poweroff {name}"));
        if !self.is_running(name) {
            return Err(ResError::new(format!("No machine '{name}' known")));
        }
        self.exit_behind_our_back(name);
        Ok(())
    }
    async fn reboot(&self, name: &str) -> Result<(), ResError> {
        lock(&self.calls).push(format!("reboot {name}"));
        if !self.is_running(name) {
            return Err(ResError::new(format!("No machine '{name}' known")));
        }
        Ok(())
    }
    fn state_file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

crate::choice! {
    /// Whether a container should run.
    #[derive(Default)]
    pub enum NspawnState {
        #[default]
        Running = "running",
        Stopped = "stopped",
    }
}
crate::choice_default_when_absent!(NspawnState);

crate::params! {
    /// `nspawn`'s params; the name is the machine's.
    #[derive(Clone, Debug, PartialEq)]
    pub struct NspawnParams {
        pub state: NspawnState,
    }
}

pub struct Nspawn {
    raw: Raw,
    params: NspawnParams,
    machines: Arc<dyn Machines>,
}

impl Nspawn {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<Nspawn, BuildError> {
        let (raw, params) = Raw::decoded("nspawn", name, values, NspawnParams::decode)?;
        Ok(Nspawn { raw, params, machines: host.machines.clone() })
    }
}

/// machined's rule for machine names: hostname-like, at most 64 characters.
pub fn valid_machine_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with(['.', '-'])
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[async_trait]
impl Resource for Nspawn {
    fn validate(&self) -> Result<(), ResError> {
        let err = |field: Option<&str>, message: &str| self.raw.invalid(field, message);
        if !valid_machine_name(&self.raw.name) {
            return Err(err(None, "the name must be a machine name: at most 64 letters, digits, `-`, `_` or `.`"));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        watch_loop(vec![self.machines.state_file(&self.raw.name)], false, ctx)
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let name = self.raw.name.clone();
        let key = format!("nspawn[{name}]");
        let state = self.machines.state(&name).await?;
        let want_running = self.params.state == NspawnState::Running;
        match (want_running, state.as_deref()) {
            (false, None) => Ok(true),
            (true, Some("running")) if !ctx.refresh => Ok(true),
            (true, Some("running")) => {
                if apply {
                    self.machines.reboot(&name).await?;
                } else {
                    ctx.report(format!("{key}: would reboot the container"));
                }
                Ok(false)
            }
            (true, _) => {
                if state.is_none() && !self.machines.image_exists(&name).await? {
                    return Err(ResError::new(format!("{key}: no machine nor image named `{name}`")));
                }
                if apply {
                    self.machines.start(&name).await?;
                } else {
                    ctx.report(format!("{key}: would start the container"));
                }
                Ok(false)
            }
            (false, Some(_)) => {
                if apply {
                    self.machines.poweroff(&name).await?;
                } else {
                    ctx.report(format!("{key}: would power the container off"));
                }
                Ok(false)
            }
        }
    }

    crate::fingerprint_by_params!();

    fn refreshable(&self) -> bool {
        true
    }
}

/// The `nspawn` kind: its params and send fields as the type checker sees them, and its constructor.
pub const NSPAWN: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("nspawn", NspawnParams::FIELDS, crate::built_on_host!(Nspawn));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machinectl_command_lines_and_names() {
        assert_eq!(
            machinectl(&["show", "stretch-nspawn-1", "--property=State", "--value"]),
            ["machinectl", "show", "stretch-nspawn-1", "--property=State", "--value"]
        );
        assert_eq!(Machinectl.state_file("m1"), PathBuf::from("/run/systemd/machines/m1"));
        assert!(valid_machine_name("Fedora-Cloud-Base-27-1.6.x86_64"));
        assert!(!valid_machine_name("") && !valid_machine_name("a b") && !valid_machine_name(&"x".repeat(65)));
    }
}
