//! `value`: holds a value of any type, keeps it in the host's value store under the
//! resource name (so the program can read it back, e.g. through `value.get`), and sends it
//! as `any`. A received value overrides the param for the life of the instance.
//!
//! The store is in memory ([`ValueStore`], one per [`crate::Machine`], shared by the binary
//! with the `value.get*` functions) and mirrored as text under `<state_dir>/value/<name>`
//! for people looking at the host.

use lang::params::ParamMap;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use engine::{ApplyCtx, InitCtx, Payload, ResError, Resource};
use lang::value::Value;
use tokio::sync::watch;

use crate::contract::common::{Raw, sends};
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::util::fs::atomic_write;

/// The store the `value` resources write and `value.get*` read. Other kinds publish
/// what functions read back under a namespace of their own (`http:client`'s responses for
/// `net/http.response`), apart from the `value` resources' names.
pub struct ValueStore {
    values: Mutex<BTreeMap<String, Value>>,
    published: Mutex<BTreeMap<(String, String), Value>>,
    /// Bumped on every change, for readers that want to react (e.g. a `value.get` func).
    version: watch::Sender<u64>,
}

impl Default for ValueStore {
    fn default() -> ValueStore {
        ValueStore {
            values: Mutex::new(BTreeMap::new()),
            published: Mutex::new(BTreeMap::new()),
            version: watch::Sender::new(0),
        }
    }
}

impl ValueStore {
    pub fn get(&self, name: &str) -> Option<Value> {
        self.values.lock().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
    }

    /// What a kind published under `key` in its namespace.
    pub fn get_in(&self, namespace: &str, key: &str) -> Option<Value> {
        let published = self.published.lock().unwrap_or_else(|e| e.into_inner());
        published.get(&(namespace.to_string(), key.to_string())).cloned()
    }

    /// Publishes `value` under `key` in `namespace`; whether that changed anything.
    pub fn set_in(&self, namespace: &str, key: &str, value: Value) -> bool {
        let mut published = self.published.lock().unwrap_or_else(|e| e.into_inner());
        let slot = (namespace.to_string(), key.to_string());
        if published.get(&slot) == Some(&value) {
            return false;
        }
        published.insert(slot, value);
        self.version.send_modify(|v| *v += 1);
        true
    }

    /// Subscribe to change notifications.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// Stores `value` under `name`; whether that changed anything.
    pub fn set(&self, name: &str, value: Value) -> bool {
        let mut values = self.values.lock().unwrap_or_else(|e| e.into_inner());
        if values.get(name) == Some(&value) {
            return false;
        }
        values.insert(name.to_string(), value);
        self.version.send_modify(|v| *v += 1);
        true
    }
}

crate::params! {
    /// `value`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct ValueParams {
        pub any: Option<Value>,
    }
}

pub struct ValueRes {
    raw: Raw,
    params: ValueParams,
    store: Arc<ValueStore>,
    mirror: Option<PathBuf>,
}

impl ValueRes {
    pub fn build(store: Arc<ValueStore>, name: &str, values: &ParamMap) -> Result<ValueRes, BuildError> {
        let (raw, params) = Raw::decoded("value", name, values, ValueParams::decode)?;
        Ok(ValueRes { raw, params, store, mirror: None })
    }
}

#[async_trait]
impl Resource for ValueRes {
    async fn init(&mut self, ctx: &InitCtx) -> Result<(), ResError> {
        self.mirror = Some(ctx.state_dir.join("value"));
        Ok(())
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let Some(value) = self.params.any.clone() else { return Ok(true) };
        let name = &self.raw.name;
        if self.store.get(name).as_ref() == Some(&value) {
            return Ok(true);
        }
        if !apply {
            ctx.report(format!("value[{name}]: would store {value}"));
            return Ok(false);
        }
        self.store.set(name, value.clone());
        if let Some(dir) = &self.mirror {
            let safe: String =
                name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
            let written = std::fs::create_dir_all(dir)
                .and_then(|()| atomic_write(&dir.join(safe), value.to_string().as_bytes(), None));
            if let Err(e) = written {
                tracing::warn!(resource = %format!("value[{name}]"), error = %e, "cannot mirror the value to disk");
            }
        }
        Ok(false)
    }

    crate::fingerprint_by_params!();

    fn sends(&self) -> Option<BTreeMap<String, Payload>> {
        self.params.any.clone().map(|v| sends(vec![("any", v)]))
    }

    fn recv(&mut self, key: &str, value: &Payload) -> Result<bool, ResError> {
        self.raw.recv(key, value, &mut self.params, ValueParams::decode)
    }
}

/// The `value` kind: its params and send fields as the type checker sees them, and its constructor.
pub const VALUE: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("value", ValueParams::FIELDS, |host, name, params| {
        Ok(Box::new(ValueRes::build(host.values.clone(), name, params)?))
    })
    .sending(&[("any", "variant")])
    .receiving();
