//! The `world` package: what the hosts of a fleet share, read through the host's
//! `engine::world::World` (the local store under the state directory, or etcd with
//! `--seeds`). `world.getval` and `world.kvlookup` follow a topic of the world and emit
//! a value per change. `world.schedule` still reads the local store's schedule
//! candidacies under `<state dir>/schedule/<ns>/` (one `key=value` record per host,
//! written by the `schedule` resource; the election is: live candidates in name order,
//! up to `max`), re-read within the 5 s safety re-read of [`follow`].

use super::follow::follow;
use super::streams::Emitter;
use super::{strukt, typed};
use crate::api::Watched;
use crate::registry::Registry;
use crate::streaming;
use engine::world::{Topic, escape, unescape};
use lang::value::Value;
use std::collections::BTreeMap;
use std::path::Path;

pub fn register(r: &mut Registry) {
    typed(r, "world.getval", getval::DEF);
    typed(r, "world.kvlookup", kvlookup::DEF);
    typed(r, "world.schedule", schedule::DEF);
}

/// The hosts chosen for a namespace under `root`: the live candidates (records whose
/// `expires=` time, if any, is still ahead), in name order, at most the smallest `max=`
/// any of them asks for (1 when unset).
pub fn read_schedule(root: &Path, namespace: &str) -> Value {
    let dir = root.join("schedule").join(escape(namespace));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let mut limit = i64::MAX;
    let mut hosts: Vec<String> = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(entry.path()) else { continue };
        let field = |key: &str| text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix('='));
        if field("expires").and_then(|t| t.trim().parse::<u64>().ok()).is_some_and(|at| at <= now) {
            continue;
        }
        let max = field("max").and_then(|m| m.trim().parse::<i64>().ok()).filter(|m| *m > 0).unwrap_or(1);
        limit = limit.min(max);
        hosts.push(unescape(&name));
    }
    hosts.sort();
    hosts.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    Value::list(hosts.into_iter().map(Value::str).collect())
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
        follow_keyed(em, "schedule", namespace, read_schedule).await
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

/// `world.schedule`'s loop (the schedule is not in the world trait yet): its `str` argument
/// names a directory under `STATE/SUBDIR/`, which is watched; `read(state, arg)` gives the
/// value after each change.
async fn follow_keyed(em: Emitter, subdir: &'static str, key: String, read: fn(&Path, &str) -> Value) {
    let root = em.host().state_dir.clone();
    let dir = root.join(subdir).join(escape(&key));
    follow(dir, Watched::Entries, em, move |_| Ok(read(&root, &key))).await
}
