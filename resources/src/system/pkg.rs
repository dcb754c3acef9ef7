//! `pkg`: packages through the host's [`PackageManager`] (dpkg/apt, or PackageKit where
//! the machine has it): `state` is `installed` (default), `uninstalled`, `newest`, or an
//! exact version. Packages of one state group (autogrouping, mgmt's rule: not a version):
//! a group asks the backend once for every package and changes them all in one
//! transaction, each package still reported under its own name. The watch follows the
//! backend's changes (dpkg's status file, PackageKit's `Changed`), so a package removed by
//! hand is put back without `Meta:poll`.

use lang::params::ParamMap;
use std::sync::Arc;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, ResKey, Resource, WatchCtx};
use futures::future::BoxFuture;

use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::machine::{Machine, PackageManager, PkgStatus, Transaction};

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

/// One package of a `pkg` vertex: its own, or a grouped one.
struct Want {
    key: ResKey,
    raw: Raw,
    params: PkgParams,
}

/// A `pkg` vertex: one package, or a group of them applied in one transaction.
pub struct Pkg {
    wants: Vec<Want>,
    packages: Arc<dyn PackageManager>,
}

/// What one package needs.
#[derive(Clone, Debug, PartialEq)]
enum Action {
    Install(Option<String>),
    Remove,
}

impl Pkg {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<Pkg, BuildError> {
        Ok(Pkg { wants: vec![want(name, values)?], packages: host.packages.clone() })
    }

    /// The group of `own` and `members` (see [`crate::contract::kind::AutoGroup::build`]).
    fn build_group(
        host: &Machine,
        own: &lang::resgraph::ResVertex,
        members: &[lang::resgraph::ResVertex],
    ) -> Result<Box<dyn Resource>, (usize, BuildError)> {
        let mut wants = Vec::with_capacity(members.len() + 1);
        for (at, v) in std::iter::once(own).chain(members).enumerate() {
            wants.push(want(&v.name, &v.params).map_err(|e| (at, e))?);
        }
        Ok(Box::new(Pkg { wants, packages: host.packages.clone() }))
    }

    /// The transaction for `actions`: all of them, or only package `only`'s.
    fn transaction(&self, actions: &[Option<Action>], only: Option<usize>) -> Transaction {
        let mut tx = Transaction::default();
        for (i, (w, action)) in self.wants.iter().zip(actions).enumerate() {
            if only.is_some_and(|o| o != i) {
                continue;
            }
            match action {
                Some(Action::Install(version)) => tx.install.push((w.raw.name.to_string(), version.clone())),
                Some(Action::Remove) => tx.remove.push(w.raw.name.to_string()),
                None => continue,
            }
            tx.allow_downgrade |= w.params.allowdowngrade;
            tx.allow_untrusted |= w.params.allowuntrusted;
            tx.allow_nonfree |= w.params.allownonfree;
            tx.allow_unsupported |= w.params.allowunsupported;
        }
        tx
    }

    fn validate_one(w: &Want) -> Result<(), ResError> {
        let err = |message: &str| w.raw.invalid(Some("state"), message);
        match w.params.state.as_str() {
            "" => Err(err("must not be empty")),
            "latest" => Err(err("`latest` is not a state: did you mean `newest`?")),
            _ => Ok(()),
        }
    }
}

fn want(name: &str, values: &ParamMap) -> Result<Want, BuildError> {
    let (raw, params) = Raw::decoded("pkg", name, values, PkgParams::decode)?;
    Ok(Want { key: ResKey::new("pkg", name), raw, params })
}

/// What package `name` needs to reach `state`, given what the machine has.
fn needs(state: &str, has: &PkgStatus) -> Option<Action> {
    match state {
        "uninstalled" => has.installed.is_some().then_some(Action::Remove),
        "installed" => has.installed.is_none().then_some(Action::Install(None)),
        "newest" => (has.candidate.is_some() && has.installed != has.candidate).then_some(Action::Install(None)),
        version => (has.installed.as_deref() != Some(version)).then(|| Action::Install(Some(version.to_string()))),
    }
}

/// The note for `action` on `name` (`would install vim`, `removed vim`).
fn note(action: &Action, name: &str, apply: bool) -> String {
    let (verb, what) = match action {
        Action::Remove => (if apply { "removed" } else { "would remove" }, name.to_string()),
        Action::Install(Some(v)) => (if apply { "installed" } else { "would install" }, format!("{name}={v}")),
        Action::Install(None) => (if apply { "installed" } else { "would install" }, name.to_string()),
    };
    format!("{verb} {what}")
}

#[async_trait]
impl Resource for Pkg {
    fn validate(&self) -> Result<(), ResError> {
        self.wants.iter().try_for_each(Pkg::validate_one)
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        self.packages.watch(ctx)
    }

    fn watch_passive(&self) -> bool {
        true
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let names: Vec<&str> = self.wants.iter().map(|w| &*w.raw.name).collect();
        let candidates = self.wants.iter().any(|w| w.params.state == "newest");
        let found = self.packages.query(&names, candidates).await?;
        let absent = PkgStatus::default();
        let actions: Vec<Option<Action>> =
            self.wants.iter().map(|w| needs(&w.params.state, found.get(&*w.raw.name).unwrap_or(&absent))).collect();
        if actions.iter().all(Option::is_none) {
            return Ok(true);
        }
        let grouped = self.wants.len() > 1;
        if apply && !self.packages.cannot_honour().is_empty() {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                tracing::info!(
                    backend = self.packages.name(),
                    flags = ?self.packages.cannot_honour(),
                    "this package manager cannot tell these packages apart: the flags have no effect"
                );
            });
        }
        // What went wrong, by package (only when applying).
        let mut errors: Vec<Option<ResError>> = vec![None; self.wants.len()];
        if apply && let Err(e) = self.packages.apply(&self.transaction(&actions, None)).await {
            if !grouped {
                return Err(e);
            }
            // The one transaction failed, so nothing of it was made: each package alone
            // then, so that one broken package neither holds the others back nor hides
            // which it is.
            tracing::info!(group = %self.wants[0].key, error = %e.message, "a grouped package transaction failed; applying each package alone");
            for (i, action) in actions.iter().enumerate() {
                if action.is_some() {
                    errors[i] = self.packages.apply(&self.transaction(&actions, Some(i))).await.err();
                }
            }
        }
        for (i, (w, action)) in self.wants.iter().zip(&actions).enumerate() {
            let done = action.as_ref().filter(|_| errors[i].is_none());
            // Noop mode's notes are whole lines, naming the package's resource.
            let line = |a: &Action| match apply {
                true => note(a, &w.raw.name, apply),
                false => format!("{}: {}", w.key, note(a, &w.raw.name, apply)),
            };
            let notes: Vec<String> = done.map(line).into_iter().collect();
            ctx.part(i == 0, &w.key, done.is_some(), notes);
        }
        let failed: Vec<(&ResKey, ResError)> =
            self.wants.iter().zip(errors).filter_map(|(w, e)| Some((&w.key, e?))).collect();
        if failed.is_empty() {
            return Ok(false);
        }
        let transient = failed.iter().all(|(_, e)| e.is_transient());
        let message: Vec<String> = failed.iter().map(|(k, e)| format!("{k}: {}", e.message)).collect();
        let message = message.join("; ");
        Err(if transient { ResError::transient(message) } else { ResError::new(message) })
    }

    fn fingerprint(&self) -> String {
        let mut out = String::new();
        for w in &self.wants {
            out.push_str(&format!("{}:{}{};", w.raw.name.len(), w.raw.name, w.params.fingerprint()));
        }
        out
    }
}

/// The `pkg` kind: its params and send fields as the type checker sees them, and its constructor.
pub const PKG: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("pkg", PkgParams::FIELDS, crate::built_on_host!(Pkg)).in_graph(
        crate::contract::kind::InGraph {
            // As mgmt's: packages of one state group, never an exact version.
            autogroup: Some(crate::contract::kind::AutoGroup {
                by_default: true,
                members: &[],
                notified_apart: false,
                fits: |group, member| {
                    let state = |v| match crate::contract::group::str_param(v, "state") {
                        "" => "installed",
                        s => s,
                    };
                    let plain = |s: &str| matches!(s, "installed" | "uninstalled" | "newest");
                    state(group) == state(member) && plain(state(group))
                },
                build: Some(Pkg::build_group),
            }),
            ..crate::contract::kind::InGraph::NONE
        },
    );
