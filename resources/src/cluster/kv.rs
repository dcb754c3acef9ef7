//! `kv`: a key/value pair in the world (the local store under the state directory, or
//! etcd with `--seeds`): a plain key shared by every host, or with `mapped` this host's
//! entry of the namespace `key`, which `world.kvlookup` reads on every host. An unset
//! `value` deletes the key; `skiplessthan` keeps a stored value that compares greater (as
//! integers, or as strings with `skipcmpstyle => 1`) unless a notification forces the
//! write. The resource follows its key, so a change made elsewhere (another host, an etcd
//! that came back empty) is checked again at once.

use lang::params::ParamMap;
use std::sync::Arc;

use async_trait::async_trait;
use engine::{ApplyCtx, InitCtx, Payload, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use world::{Follow, Topic, World};

use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::machine::Machine;

crate::params! {
    /// `kv`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct KvParams {
        /// The key; defaults to the resource's name.
        pub key: String => |p, f| p.str_or(f, p.name),
        pub value: Option<String>,
        pub mapped: bool,
        pub skiplessthan: bool,
        pub skipcmpstyle: i64,
    }
}

pub struct Kv {
    raw: Raw,
    params: KvParams,
    world: Arc<dyn World>,
    /// The key as last seen, followed from init on.
    view: Option<Follow>,
}

impl Kv {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<Kv, BuildError> {
        let (raw, params) = Raw::decoded("kv", name, values, KvParams::decode)?;
        Ok(Kv { raw, params, world: host.world.clone(), view: None })
    }

    fn topic(&self) -> Topic {
        if self.params.mapped { Topic::Map(self.params.key.clone()) } else { Topic::Val(self.params.key.clone()) }
    }

    /// The stored value this resource manages, as last seen.
    fn stored(&self) -> Option<String> {
        let view = self.view.as_ref()?.borrow();
        let name = if self.params.mapped { self.world.hostname() } else { self.params.key.as_str() };
        view.entries.get(name).cloned()
    }

    async fn write(&self, value: Option<&str>) -> Result<(), ResError> {
        let key = &self.params.key;
        let written =
            if self.params.mapped { self.world.set_mine(key, value).await } else { self.world.set(key, value).await };
        let written = written.map_err(|e| ResError::transient(format!("kv[{}]: {e}", self.raw.name)))?;
        crate::cluster::world::note_queued(written, &format!("kv[{}]", self.raw.name));
        Ok(())
    }
}

/// Whether the stored value should win under `skiplessthan`.
fn stored_is_greater(stored: &str, new: &str, style: i64) -> bool {
    if style == 1 {
        return stored > new;
    }
    match (stored.trim().parse::<i64>(), new.trim().parse::<i64>()) {
        (Ok(a), Ok(b)) => a > b,
        _ => false,
    }
}

#[async_trait]
impl Resource for Kv {
    fn validate(&self) -> Result<(), ResError> {
        let err = |field: &str, message: &str| self.raw.invalid(Some(field), message);
        if self.params.key.is_empty() {
            return Err(err("key", "must not be empty"));
        }
        if !(0..=1).contains(&self.params.skipcmpstyle) {
            return Err(err("skipcmpstyle", "must be 0 (integer compare) or 1 (string compare)"));
        }
        Ok(())
    }

    async fn init(&mut self, _ctx: &InitCtx) -> Result<(), ResError> {
        self.view = Some(self.world.follow(&self.topic()));
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        crate::cluster::world::watch_view(self.view.clone(), ctx, format!("kv[{}]", self.raw.name))
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let key = format!("kv[{}]", self.raw.name);
        if !self.view.as_ref().is_some_and(|v| v.borrow().read) {
            // Nothing to compare with yet (the world was never reached): the watch wakes
            // this resource again once the key was read.
            tracing::info!(resource = %key, "waiting for the world to be read");
            return Ok(false);
        }
        let stored = self.stored();
        match &self.params.value {
            None => {
                if stored.is_none() {
                    return Ok(true);
                }
                if apply {
                    self.write(None).await?;
                } else {
                    ctx.report(format!("{key}: would delete key `{}`", self.params.key));
                }
                Ok(false)
            }
            Some(value) => {
                if stored.as_ref() == Some(value) {
                    return Ok(true);
                }
                if let Some(stored) = &stored
                    && self.params.skiplessthan
                    && !ctx.refresh
                    && stored_is_greater(stored, value, self.params.skipcmpstyle)
                {
                    return Ok(true);
                }
                if !apply {
                    ctx.report(format!("{key}: would set `{}` to `{value}`", self.params.key));
                    return Ok(false);
                }
                self.write(Some(value)).await?;
                Ok(false)
            }
        }
    }

    crate::fingerprint_by_params!();

    fn refreshable(&self) -> bool {
        true
    }

    fn recv(&mut self, key: &str, value: &Payload) -> Result<bool, ResError> {
        self.raw.recv(key, value, &mut self.params, KvParams::decode)
    }
}

/// The `kv` kind: its params and send fields as the type checker sees them, and its constructor.
pub const KV: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("kv", KvParams::FIELDS, crate::built_on_host!(Kv)).receiving();

#[cfg(test)]
mod tests {
    use super::stored_is_greater;

    #[test]
    fn skiplessthan_compares_ints_or_strings() {
        assert!(stored_is_greater("10", "9", 0));
        assert!(!stored_is_greater("10", "9", 1));
        assert!(!stored_is_greater("x", "9", 0));
    }
}
