//! The `world` package on a single host: the cluster-wide key/value store of mgmt is the
//! local store the `kv` resource keeps under `<state dir>/kv/` (`<key>/value` for a plain
//! key, `<key>/<hostname>` for a mapped one; names escaped as `%xx` outside
//! `[A-Za-z0-9._-]`), and schedule candidacies live under `<state dir>/schedule/<ns>/`
//! (one `key=value` record per host, written by the `schedule` resource; this host is the
//! only one that writes here, so the election is: live candidates in name order, up to
//! `max`). Expired leases are noticed within the 5 s re-read of [`follow`].
//!
//! The state directory is the engine's, handed over in [`crate::api::Host::state_dir`].

use super::follow::follow;
use super::streams::Emitter;
use super::{strukt, typed};
use crate::api::Watched;
use crate::registry::Registry;
use crate::streaming;
use lang::value::Value;
use std::collections::BTreeMap;
use std::path::Path;

pub fn register(r: &mut Registry) {
    typed(r, "world.getval", getval::DEF);
    typed(r, "world.kvlookup", kvlookup::DEF);
    typed(r, "world.schedule", schedule::DEF);
}

/// The file-name form of a key: `%xx` for every byte outside `[A-Za-z0-9._-]`.
pub fn escape(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.".contains(&b) { (b as char).to_string() } else { format!("%{b:02x}") }
        })
        .collect()
}

/// The inverse of [`escape`] (invalid escapes are kept as they are).
pub fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Some(v) = s.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `struct{value; exists}` of a plain key under `root`.
pub fn read_val(root: &Path, key: &str) -> Value {
    let path = root.join("kv").join(escape(key)).join("value");
    match std::fs::read_to_string(path) {
        Ok(v) => strukt([("value", Value::str(v)), ("exists", Value::Bool(true))]),
        Err(_) => strukt([("value", Value::str("")), ("exists", Value::Bool(false))]),
    }
}

/// Host name -> value of a mapped key under `root`.
pub fn read_mapped(root: &Path, namespace: &str) -> Value {
    let dir = root.join("kv").join(escape(namespace));
    let mut m = BTreeMap::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name == "value" || name.starts_with('.') {
                continue;
            }
            if let Ok(v) = std::fs::read_to_string(e.path()) {
                m.insert(Value::str(unescape(&name)), Value::str(v));
            }
        }
    }
    Value::map(m)
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
        follow_keyed(em, "kv", key, read_val).await
    }
}

streaming! {
    /// host name -> value of a mapped kv key
    fn kvlookup(em, namespace: String) -> "map{str: str}" {
        follow_keyed(em, "kv", namespace, read_mapped).await
    }
}

streaming! {
    /// the host names chosen for a namespace
    fn schedule(em, namespace: String) -> "[]str" {
        follow_keyed(em, "schedule", namespace, read_schedule).await
    }
}

/// The shape every world function shares: its one `str` argument names a directory under
/// `STATE/SUBDIR/`, which is watched; `read(state, arg)` gives the value after each change.
async fn follow_keyed(em: Emitter, subdir: &'static str, key: String, read: fn(&Path, &str) -> Value) {
    let root = em.host().state_dir.clone();
    let dir = root.join(subdir).join(escape(&key));
    follow(dir, Watched::Entries, em, move |_| Ok(read(&root, &key))).await
}
