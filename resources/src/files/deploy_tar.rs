//! `deploy:tar`: the files of the program this agent runs (the directory of its entry
//! file, or the deploy it follows) archived at `path` (default the name), as mgmt's: the
//! archive is rewritten when a file of the program changes, when a new deploy arrives, and
//! when the archive itself is changed or removed. `format` is `tar`'s (Go's header format),
//! and the archive is written by `tar`'s deterministic writer.

use lang::params::ParamMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use tokio::sync::watch;

use super::archive::{TarFormat, check_output_path, converge_output, tar_into};
use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::util::watch::FileWatch;

/// The program this agent runs: its directory (which the binary moves on with each
/// deploy), its entry file, and the directories under it that are not part of it (the
/// agent's own state, when kept there).
pub struct ProgramRoot {
    dir: watch::Sender<PathBuf>,
    entry: std::sync::Mutex<String>,
    kept_out: std::sync::Mutex<Vec<PathBuf>>,
}

impl Default for ProgramRoot {
    fn default() -> ProgramRoot {
        ProgramRoot {
            dir: watch::Sender::new(PathBuf::new()),
            entry: std::sync::Mutex::new("/main.mcl".into()),
            kept_out: std::sync::Mutex::default(),
        }
    }
}

impl ProgramRoot {
    /// The program now runs from `dir`.
    pub fn set(&self, dir: &Path) {
        self.dir.send_if_modified(|now| {
            let moved = now != dir;
            if moved {
                *now = dir.to_path_buf();
            }
            moved
        });
    }

    pub fn get(&self) -> PathBuf {
        self.dir.borrow().clone()
    }

    /// The entry file's path in the program (`/main.mcl`).
    pub fn set_entry(&self, entry: &str) {
        *self.entry.lock().unwrap_or_else(|p| p.into_inner()) = entry.to_string();
    }

    pub fn entry(&self) -> String {
        self.entry.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// `dir` is not part of the program even when under it (the agent's state directory).
    pub fn keep_out(&self, dir: &Path) {
        self.kept_out.lock().unwrap_or_else(|p| p.into_inner()).push(dir.to_path_buf());
    }

    pub fn kept_out(&self) -> Vec<PathBuf> {
        self.kept_out.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(crate) fn changes(&self) -> watch::Receiver<PathBuf> {
        self.dir.subscribe()
    }
}

crate::params! {
    /// `deploy:tar`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct DeployTarParams {
        /// The archive written; defaults to the name.
        pub path: String,
        pub format: i64,
    }
}

pub struct DeployTar {
    raw: Raw,
    params: DeployTarParams,
    program: Arc<ProgramRoot>,
}

impl DeployTar {
    pub fn build(program: Arc<ProgramRoot>, name: &str, values: &ParamMap) -> Result<DeployTar, BuildError> {
        let (raw, params) = Raw::decoded("deploy:tar", name, values, DeployTarParams::decode)?;
        Ok(DeployTar { raw, params, program })
    }

    fn path(&self) -> &str {
        if self.params.path.is_empty() { &self.raw.name } else { &self.params.path }
    }
}

#[async_trait]
impl Resource for DeployTar {
    fn validate(&self) -> Result<(), ResError> {
        check_output_path(self.path()).map_err(|m| self.raw.invalid(Some("path"), m))?;
        if TarFormat::from_go(self.params.format).is_none() {
            let m = format!("{} is not a tar format (0 unknown, 2 ustar, 4 pax, 8 gnu)", self.params.format);
            return Err(self.raw.invalid(Some("format"), m));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let out = PathBuf::from(self.path());
        let mut program = self.program.changes();
        Box::pin(async move {
            loop {
                let root = program.borrow_and_update().clone();
                let mut targets = vec![out.clone()];
                if !root.as_os_str().is_empty() {
                    targets.push(root);
                }
                let mut files = FileWatch::new(targets, true)?;
                ctx.event();
                loop {
                    tokio::select! {
                        changed = files.changed() => {
                            changed?;
                            ctx.event();
                        }
                        moved = program.changed() => {
                            if moved.is_err() {
                                ctx.cancelled().await;
                                return Ok(());
                            }
                            break;
                        }
                        _ = ctx.cancelled() => return Ok(()),
                    }
                }
            }
        })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let key = format!("deploy:tar[{}]", self.raw.name);
        let root = self.program.get();
        if root.as_os_str().is_empty() {
            return Err(ResError::new(format!("{key}: this agent runs no program from disk to archive")));
        }
        let out = Path::new(self.path());
        if out.starts_with(&root) {
            return Err(ResError::new(format!(
                "{key}: the archive {} would be inside the program it archives ({})",
                out.display(),
                root.display()
            )));
        }
        let format = TarFormat::from_go(self.params.format)
            .ok_or_else(|| ResError::new(format!("{key}: invalid format {}", self.params.format)))?;
        // The directory's contents, not the directory: a trailing slash, as `tar` reads it.
        let inputs = vec![format!("{}/", root.display().to_string().trim_end_matches('/'))];
        let produce = move |w: &mut dyn Write| tar_into(&inputs, format, w);
        converge_output(&key, out, ctx, apply, &produce)
    }

    crate::fingerprint_by_params!();
}

/// The `deploy:tar` kind: its params as the type checker sees them, and its constructor.
pub const DEPLOY_TAR: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("deploy:tar", DeployTarParams::FIELDS, |host, name, params| {
        Ok(Box::new(DeployTar::build(host.program.clone(), name, params)?))
    });
