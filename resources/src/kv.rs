//! `kv`: a key/value pair in the local store under `<state_dir>/kv/` (one file per key;
//! per host under `<key>/<hostname>` when `mapped`). An unset `value` deletes the key;
//! `skiplessthan` keeps a stored value that compares greater (as integers, or as strings
//! with `skipcmpstyle => 1`) unless a notification forces the write. The cluster-wide store
//! of mgmt needs a world backend; this is the single-host equivalent.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

use async_trait::async_trait;
use engine::{ApplyCtx, InitCtx, IoAt, Payload, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use lang::value::Value;

use crate::common::{Raw, store_name};
use crate::params::BuildError;
use crate::typed::Fingerprint as _;
use crate::util::fs::atomic_write;
use crate::util::watch::FileWatch;

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
    /// The file holding this key, known after init.
    path: Option<PathBuf>,
}

impl Kv {
    pub fn build(name: &str, values: &BTreeMap<String, Value>) -> Result<Kv, BuildError> {
        let raw = Raw::new("kv", name, values);
        let params = raw.decode(KvParams::decode)?;
        Ok(Kv { raw, params, path: None })
    }

    fn path_in(&self, state_dir: &std::path::Path) -> PathBuf {
        if self.params.mapped {
            let host = nix::unistd::gethostname().map(|h| h.to_string_lossy().into_owned()).unwrap_or_default();
            state_dir.join("kv").join(store_name(&self.params.key)).join(store_name(&host))
        } else {
            key_path(state_dir, &self.params.key)
        }
    }
}

/// The file holding the plain (unmapped) key `key` of the store under `state_dir`; other
/// kinds that read or write the store (e.g. `http:server:ui:input`) use the same file.
pub(crate) fn key_path(state_dir: &std::path::Path, key: &str) -> PathBuf {
    state_dir.join("kv").join(store_name(key)).join("value")
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

    async fn init(&mut self, ctx: &InitCtx) -> Result<(), ResError> {
        self.path = Some(self.path_in(&ctx.state_dir));
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let path = self.path.clone();
        Box::pin(async move {
            let path = path.ok_or_else(|| ResError::new("kv: watch before init"))?;
            let mut watch = FileWatch::new(vec![path], false)?;
            ctx.event();
            loop {
                tokio::select! {
                    changed = watch.changed() => { changed?; ctx.event(); }
                    _ = ctx.cancelled() => return Ok(()),
                }
            }
        })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let path = self.path.clone().ok_or_else(|| ResError::new("kv: check-apply before init"))?;
        let stored = fs::read_to_string(&path).ok();
        let key = format!("kv[{}]", self.raw.name);
        match &self.params.value {
            None => {
                if stored.is_none() {
                    return Ok(true);
                }
                if apply {
                    fs::remove_file(&path).at(&path)?;
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
                if let Some(dir) = path.parent() {
                    fs::create_dir_all(dir).at(dir)?;
                }
                atomic_write(&path, value.as_bytes(), None).at(&path)?;
                Ok(false)
            }
        }
    }

    fn fingerprint(&self) -> String {
        self.params.fingerprint()
    }

    fn refreshable(&self) -> bool {
        true
    }

    fn recv(&mut self, key: &str, value: &Payload) -> Result<bool, ResError> {
        self.raw.recv(key, value, &mut self.params, KvParams::decode)
    }
}

/// The `kv` kind: its params and send fields as the type checker sees them, and its constructor.
pub const KV: crate::kind::Kind = crate::kind::Kind {
    name: "kv",
    params: KvParams::FIELDS,
    sends: &[],
    can_recv: true,
    autoedges: crate::autoedge::Rules::NONE,
    build: |_host, name, params| Ok(Box::new(Kv::build(name, params)?)),
};

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
