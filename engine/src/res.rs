//! The resource contract: what every kind implements so the engine can run it, and the
//! contexts the engine hands it (watch, check-apply, init).
//!
//! The contract in brief (engine.md section 1): `validate` is pure; `init` runs once before
//! the worker starts; `watch` sends one event once it is listening and one per possible
//! change afterwards (spurious events are fine, missed ones are bugs) and returns when
//! cancelled; `check_apply(apply)` returns `Ok(true)` when the state was already right,
//! `Ok(false)` when it was wrong (and, with `apply`, is now fixed), and must not change
//! anything when `apply` is false; `cleanup` runs once after the worker has exited.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::converger::Converger;
use crate::key::{Payload, ResError, ResKey};
use crate::node::Node;

/// A resource kind's implementation. Object safe: the engine holds `Box<dyn Resource>`.
#[async_trait]
pub trait Resource: Send + Sync + 'static {
    /// Checks the params without touching the system.
    fn validate(&self) -> Result<(), ResError> {
        Ok(())
    }

    /// Runs once, after validation and before the worker starts. A failure rejects the
    /// whole candidate graph.
    async fn init(&mut self, _ctx: &InitCtx) -> Result<(), ResError> {
        Ok(())
    }

    /// Builds the watch loop. The future owns what it needs (it runs concurrently with
    /// `check_apply`), calls [`WatchCtx::event`] once when listening and on every possible
    /// change, and returns `Ok` once [`WatchCtx::cancelled`] fires. An `Err` asks the
    /// engine to restart the watch (per `Meta:retry` / `Meta:delay`).
    ///
    /// The default suits resources whose state nothing else changes: one startup event.
    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        Box::pin(async move {
            ctx.event();
            ctx.cancelled().await;
            Ok(())
        })
    }

    /// Whether the watch only observes: it waits and forwards events (as a future or as a
    /// [`Resource::subscribe`] registration), doing no work of its own that must not wait
    /// (it serves nothing, runs no timer or command others rely on). Such a watch:
    /// - with workers on an apply pool, is polled inside the worker's own task, where events
    ///   that come during a check-apply wait until the step is over, instead of getting a
    ///   task of its own on the engine's runtime (a task, a join handle and a wrapper less
    ///   per resource);
    /// - is not started at all by a run that ends at its first converge
    ///   ([`crate::EngineConfig::one_shot`]): nothing it could report would be acted on, and
    ///   at a hundred thousand files its registrations and the events of the run's own
    ///   writes were the larger part of a cold run.
    fn watch_passive(&self) -> bool {
        false
    }

    /// A watch that runs nothing between events, instead of [`Resource::watch`]: the
    /// resource registers callbacks (holding a clone of `ctx`) with something that already
    /// runs (the file watcher's thread) and returns what keeps them registered; dropping it
    /// unregisters them. The engine reports the startup event once it is returned. `None`:
    /// the resource watches with [`Resource::watch`]. A watched file costs a callback this
    /// way, where a watch future cost a few hundred bytes per resource for as long as the
    /// graph runs.
    fn subscribe(&self, _ctx: &WatchCtx) -> Option<Result<Box<dyn Subscription>, ResError>> {
        None
    }

    /// Checks the state and, when `apply` is true, fixes it. `Ok(true)`: it was right;
    /// `Ok(false)`: it was wrong (and has been fixed when `apply`).
    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError>;

    /// Runs once after the worker has exited (removal or shutdown).
    async fn cleanup(&mut self) -> Result<(), ResError> {
        Ok(())
    }

    /// A stable rendering of the params that matter: two instances of the same kind and
    /// name with equal fingerprints are interchangeable, so a graph swap keeps the running
    /// one.
    fn fingerprint(&self) -> String;

    /// For `Meta:reverse`: the resource that puts back the state found before this one
    /// ever ran, computed from the system after `init` and before the first check-apply.
    /// When this resource later leaves the graph, the engine runs the reversal in its place
    /// until it succeeds. `Ok(None)`: this kind is not reversible. An `Err` rejects the
    /// candidate graph.
    fn reversal(&self) -> Result<Option<Box<dyn Resource>>, ResError> {
        Ok(None)
    }

    /// For a reversal ([`Resource::reversal`]): a text from which the binary builds it again
    /// after a restart ([`crate::Revive`]), so a pending undo outlives the process. `None`:
    /// it lives in memory only.
    fn record(&self) -> Option<String> {
        None
    }

    /// Whether notifications reach this resource ([`ApplyCtx::refresh`]).
    fn refreshable(&self) -> bool {
        false
    }

    /// The values this resource sends, read by the engine after every check-apply that ran
    /// without error. `None`: it sends nothing (yet).
    fn sends(&self) -> Option<BTreeMap<String, Payload>> {
        None
    }

    /// Tells the resource, once it is built and before it runs, which of its sent fields
    /// the graph's send/recv edges read: a kind may keep the others bounded (a tail of a
    /// command's output instead of all of it). A kind that keeps less for fields not
    /// received must make its fingerprint depend on what it was told, so that a graph
    /// that starts receiving one builds it anew.
    fn received_fields(&mut self, _fields: &[&str]) {}

    /// Stores a received value into param `key`; returns whether the param changed.
    fn recv(&mut self, key: &str, _value: &Payload) -> Result<bool, ResError> {
        Err(ResError::new(format!("cannot receive into `{key}`: this kind does not receive")))
    }
}

/// A registered watch (see [`Resource::subscribe`]).
pub trait Subscription: Send + Sync {
    /// Called by the worker when an event arrived, before it runs the resource: brings the
    /// registration up to date with what the event may have moved (a watched directory
    /// made or removed). An `Err` counts as a failed watch: the engine drops this
    /// subscription and subscribes again (per `Meta:retry` / `Meta:delay`).
    fn refresh(&self) -> Result<(), ResError> {
        Ok(())
    }
}

/// What `init` gets.
#[derive(Clone, Debug)]
pub struct InitCtx {
    pub key: ResKey,
    /// Where [`InitCtx::var_dir`] points instead of its default (tests); `None` in a
    /// running engine.
    pub var_dir: Option<PathBuf>,
    /// The engine's state root, for stores shared between resources (e.g. `kv`).
    pub state_dir: PathBuf,
}

impl InitCtx {
    /// A directory private to this kind+name that survives swaps and restarts (created on
    /// demand by the resource): `<state>/engine/state/<kind>-<name, unsafe bytes escaped>`.
    /// Made on request: most kinds never ask, and a swap of thousands of resources need not
    /// format a path for each.
    pub fn var_dir(&self) -> PathBuf {
        if let Some(dir) = &self.var_dir {
            return dir.clone();
        }
        let key = &self.key;
        let mut safe = String::with_capacity(key.name.len());
        for b in key.name.bytes() {
            if b.is_ascii_alphanumeric() || b"-_.".contains(&b) {
                safe.push(b as char);
            } else {
                use std::fmt::Write as _;
                let _infallible = write!(safe, "%{b:02x}");
            }
        }
        self.state_dir.join("engine").join("state").join(format!("{}-{safe}", key.kind.replace(':', "_")))
    }
}

/// The handle a watch loop uses to report events.
#[derive(Clone)]
pub struct WatchCtx {
    /// The vertex whose worker receives the events.
    pub(crate) node: Arc<Node>,
    pub(crate) converger: Arc<Converger>,
}

impl WatchCtx {
    /// Reports that the state may have changed (the first call means "started"). Never
    /// blocks: when an event is already pending, this one is covered by it.
    pub fn event(&self) {
        // A watch that outlived its worker must not disturb a replacement with the same key.
        if !self.node.is_stopped() {
            self.node.event(&self.converger);
        }
    }

    /// Resolves when the watch must stop (the worker was stopped).
    pub async fn cancelled(&self) {
        self.node.token().cancelled_owned().await
    }

    /// The cancellation token, for handing to helpers: cancelled when the worker stops.
    pub fn token(&self) -> CancellationToken {
        self.node.token()
    }

    pub fn key(&self) -> &ResKey {
        &self.node.key
    }
}

/// What one check-apply gets.
pub struct ApplyCtx {
    /// A notification is pending (only ever true for refreshable resources).
    pub refresh: bool,
    /// Params changed by send/recv since the last check-apply that ran without error.
    pub recv_changed: BTreeSet<String>,
    /// Cancelled on shutdown or removal; long operations should honour it. It is this run's:
    /// an idle worker lets its token go, so a clone kept past the run may never fire.
    pub cancel: CancellationToken,
    /// Human-readable notes: in noop mode whole lines saying what would change (diffs); in
    /// apply mode short phrases saying what was done (`created (12 bytes)`).
    pub(crate) reports: Vec<String>,
    /// Where [`ApplyCtx::request_exit`] goes; `None` outside the engine.
    pub(crate) exit: Option<Arc<tokio::sync::watch::Sender<Option<i32>>>>,
    /// For a vertex that applies a group of resources (autogrouping): what its members did,
    /// each reported under its own name ([`ApplyCtx::member`]).
    pub(crate) members: Vec<MemberApplied>,
    /// For a group: whether the group's own resource changed, apart from its members; `None`
    /// for a plain resource (its outcome is the check-apply's).
    pub(crate) own_changed: Option<bool>,
}

/// What one member of a group did in the group's check-apply (see [`ApplyCtx::member`]).
#[derive(Clone, Debug)]
pub(crate) struct MemberApplied {
    pub key: ResKey,
    pub changed: bool,
    pub reports: Vec<String>,
}

impl ApplyCtx {
    /// A context for calling `check_apply` outside the engine (tests, one-shot tools).
    pub fn detached() -> ApplyCtx {
        ApplyCtx {
            refresh: false,
            recv_changed: BTreeSet::new(),
            cancel: CancellationToken::new(),
            reports: Vec::new(),
            exit: None,
            members: Vec::new(),
            own_changed: None,
        }
    }

    /// A context for one resource of a group, run inside the group's check-apply: this
    /// run's cancellation and exit, the refresh when `refreshable`, and the params received
    /// into it (`received`, its own names).
    pub fn for_member(&self, refreshable: bool, received: BTreeSet<String>) -> ApplyCtx {
        ApplyCtx {
            refresh: self.refresh && refreshable,
            recv_changed: received,
            cancel: self.cancel.clone(),
            reports: Vec::new(),
            exit: self.exit.clone(),
            members: Vec::new(),
            own_changed: None,
        }
    }

    /// For a resource that applies a group (autogrouping): says what one of its parts did,
    /// `changed` (or, in noop mode, would change) with its notes. The group's `own` part
    /// (the vertex's key) is reported as the vertex, its notes as [`ApplyCtx::report`]'s and
    /// its change apart from the members'; a member (`key`) is reported under its own name,
    /// as if it were a vertex of its own.
    pub fn part(&mut self, own: bool, key: &ResKey, changed: bool, notes: Vec<String>) {
        if own {
            self.reports.extend(notes);
            self.own_changed = Some(changed);
        } else {
            self.members.push(MemberApplied { key: key.clone(), changed, reports: notes });
        }
    }

    /// Asks the program running the engine to shut down with `code` (the `exit` kind).
    /// Returns false outside an engine.
    pub fn request_exit(&self, code: i32) -> bool {
        match &self.exit {
            Some(tx) => {
                tx.send_replace(Some(code));
                true
            }
            None => false,
        }
    }

    /// Records a note; the engine emits it with the [`crate::EngineEvent::Applied`] event.
    /// In noop mode a whole line (`file[/x]: would change content:` and the diff); in
    /// apply mode a short phrase about what was done, without the resource's name
    /// (`created (12 bytes)`, `mode 0644 -> 0600`), which `tend run` prints after the name.
    pub fn report(&mut self, note: impl Into<String>) {
        self.reports.push(note.into());
    }

    pub fn reports(&self) -> &[String] {
        &self.reports
    }
}

/// A resource that is always in its state, for the unit tests of the graph and the worker.
#[cfg(test)]
pub(crate) struct Nothing;

#[cfg(test)]
#[async_trait::async_trait]
impl Resource for Nothing {
    async fn check_apply(&mut self, _ctx: &mut ApplyCtx, _apply: bool) -> Result<bool, ResError> {
        Ok(true)
    }
    fn fingerprint(&self) -> String {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_var_dir_is_private_to_kind_and_name_and_safe_to_use_as_a_path() {
        let ctx = |kind: &str, name: &str| InitCtx {
            key: ResKey::new(kind, name),
            var_dir: None,
            state_dir: PathBuf::from("/var/lib/tend"),
        };
        assert_eq!(
            ctx("exec", "make-all_1.0").var_dir(),
            PathBuf::from("/var/lib/tend/engine/state/exec-make-all_1.0")
        );
        // Slashes and spaces cannot split or escape the directory; `:` in a kind is kept out.
        assert_eq!(
            ctx("virt:builder", "../a b/c").var_dir(),
            PathBuf::from("/var/lib/tend/engine/state/virt_builder-..%2fa%20b%2fc")
        );
        let pinned = InitCtx { var_dir: Some(PathBuf::from("/tmp/x")), ..ctx("exec", "a") };
        assert_eq!(pinned.var_dir(), PathBuf::from("/tmp/x"));
    }
}
