//! The `world` package: what the hosts of a fleet share, read through the host's
//! `world::World` (the local store under the state directory, or etcd with
//! `--seeds`). `world.getval`, `world.kvlookup`, `world.schedule` and
//! `world/collect.res` each follow a topic
//! of the world and emit a value per change; a topic never read yet (etcd not reached)
//! emits nothing, a stale one keeps its last value.

use super::streams::Emitter;
use super::{strukt, typed};
use crate::registry::Registry;
use crate::streaming;
use lang::value::Value;
use std::collections::BTreeMap;
use world::Topic;

pub fn register(r: &mut Registry) {
    typed(r, "world.getval", getval::DEF);
    typed(r, "world.kvlookup", kvlookup::DEF);
    typed(r, "world.schedule", schedule::DEF);
    typed(r, "world/collect.res", res::DEF);
}

streaming! {
    /// a key of the kv store
    fn getval(em, key: String) -> "struct{value str; exists bool}" {
        follow_world(em, Topic::Val(key.clone()), move |entries| match entries.get(&key) {
            Some(v) => strukt([("value", Value::str(v.clone())), ("exists", Value::Bool(true))]),
            None => strukt([("value", Value::str("")), ("exists", Value::Bool(false))]),
        })
        .await
    }
}

streaming! {
    /// host name -> value of a mapped kv key
    fn kvlookup(em, namespace: String) -> "map{str: str}" {
        follow_world(em, Topic::Map(namespace), |entries| {
            Value::map(entries.iter().map(|(h, v)| (Value::str(h.clone()), Value::str(v.clone()))).collect())
        })
        .await
    }
}

streaming! {
    /// the host names chosen for a namespace
    fn schedule(em, namespace: String) -> "[]str" {
        follow_world(em, Topic::Schedule(namespace), |entries| {
            Value::list(entries.keys().map(|h| Value::str(h.clone())).collect())
        })
        .await
    }
}

streaming! {
    /// the exported resources of a kind that this host can collect, by name and host
    fn res(em, kind: String) -> "[]struct{name str; host str}" {
        follow_world(em, Topic::Exports, move |entries| {
            let mut found: Vec<(String, String)> = entries
                .keys()
                .filter_map(|entry| world::parse_export_entry(entry))
                .filter(|(k, ..)| *k == kind)
                .map(|(_, host, name)| (name, host))
                .collect();
            found.sort();
            Value::list(
                found
                    .into_iter()
                    .map(|(name, host)| strukt([("name", Value::str(name)), ("host", Value::str(host))]))
                    .collect(),
            )
        })
        .await
    }
}

/// Emits `value(entries)` of `topic`'s view now and after each change of the entries.
/// A view that was never read (the store not reached yet) is not a value: nothing is
/// emitted until the store answers. A stale view keeps the last value.
async fn follow_world(em: Emitter, topic: Topic, value: impl Fn(&BTreeMap<String, String>) -> Value) {
    let mut follow = em.host().world.follow(&topic);
    let mut last: Option<BTreeMap<String, String>> = None;
    loop {
        let entries = {
            let view = follow.borrow_and_update();
            view.read.then(|| view.entries.clone())
        };
        if let Some(entries) = entries
            && last.as_ref() != Some(&entries)
        {
            if !em.send(Ok(value(&entries))).await {
                return;
            }
            last = Some(entries);
        }
        if follow.changed().await.is_err() {
            // The world stopped: the value stays the last one.
            std::future::pending::<()>().await;
        }
    }
}
