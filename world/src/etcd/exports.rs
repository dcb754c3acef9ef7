//! Exports: after each graph it applies, an agent replaces its whole set of exports, each
//! bound to its session (so a dead host's exports vanish with its lease), in batched
//! transactions (a graph's exports are one revision, one watch event).

use std::collections::BTreeMap;

use etcd_client::{PutOptions, Txn, TxnOp};

use super::write::{is_outage, refused};
use super::{Inner, REQUEST, keys, lock};
use crate::{Export, WorldError, Written};

/// Export writes per transaction (etcd allows 128 operations in one by default).
pub(super) const EXPORT_BATCH: usize = 100;

/// Replaces everything `inner`'s host exports by `exports`.
pub(super) async fn export(inner: &Inner, exports: &[Export]) -> Result<Written, WorldError> {
    let host = &inner.cfg.hostname;
    let wanted: BTreeMap<String, String> = exports
        .iter()
        .flat_map(|e| e.to.iter().map(move |to| (keys::export_key(host, to, &e.kind, &e.name), e.record.clone())))
        .collect();
    let writes = plan(&mut lock(&inner.owned), &wanted);
    if inner.cfg.observer {
        return Err(WorldError::Observer("exports are".into()));
    }
    for (key, value) in &writes {
        match value {
            Some(_) => lock(&inner.disowned).remove(key),
            None => lock(&inner.disowned).insert(key.clone()),
        };
    }
    let Some(mut s) = inner.current() else { return Ok(Written::Queued) };
    for batch in writes.chunks(EXPORT_BATCH) {
        let ops: Vec<TxnOp> = batch
            .iter()
            .map(|(key, value)| match value {
                Some(v) => TxnOp::put(key.as_str(), v.as_str(), Some(PutOptions::new().with_lease(s.lease))),
                None => TxnOp::delete(key.as_str(), None),
            })
            .collect();
        match tokio::time::timeout(REQUEST, s.client.txn(Txn::new().and_then(ops))).await {
            Ok(Ok(_)) => {
                let mut disowned = lock(&inner.disowned);
                for (key, _) in batch {
                    disowned.remove(key);
                }
            }
            Ok(Err(e)) if !is_outage(&e) => return Err(refused("the exports".into(), &e)),
            // Re-asserted (and the deletes made) on the next session.
            _ => return Ok(Written::Queued),
        }
    }
    Ok(Written::Done)
}

/// What to write so that the exports this host owns (in `owned`, among its other keys)
/// become `wanted`: the keys that are new or changed, and a delete for each one no longer
/// exported. `owned` is updated to match.
fn plan(
    owned: &mut BTreeMap<String, (String, bool)>,
    wanted: &BTreeMap<String, String>,
) -> Vec<(String, Option<String>)> {
    let prefix = keys::exports_root();
    let mut writes = Vec::new();
    let gone: Vec<String> =
        owned.keys().filter(|k| k.starts_with(&prefix) && !wanted.contains_key(*k)).cloned().collect();
    for key in gone {
        owned.remove(&key);
        writes.push((key, None));
    }
    for (key, record) in wanted {
        if owned.get(key).map(|(v, _)| v) != Some(record) {
            owned.insert(key.clone(), (record.clone(), true));
            writes.push((key.clone(), Some(record.clone())));
        }
    }
    writes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_changed_is_written_and_what_went_is_deleted() {
        let key = |name: &str| keys::export_key("h1", "*", "file", name);
        let wanted = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(n, r)| (key(n), r.to_string())).collect()
        };
        let mut owned = BTreeMap::new();
        owned.insert(keys::status_key("h1"), ("status".to_string(), true));
        let first = plan(&mut owned, &wanted(&[("/a", "A"), ("/b", "B")]));
        assert_eq!(first, vec![(key("/a"), Some("A".into())), (key("/b"), Some("B".into()))]);
        // Unchanged: nothing to write.
        assert_eq!(plan(&mut owned, &wanted(&[("/a", "A"), ("/b", "B")])), vec![]);
        // /a changes, /b goes; the host's other keys are not exports and stay.
        let next = plan(&mut owned, &wanted(&[("/a", "A2")]));
        assert_eq!(next, vec![(key("/b"), None), (key("/a"), Some("A2".into()))]);
        assert!(owned.contains_key(&keys::status_key("h1")));
        assert_eq!(owned.len(), 2);
    }
}
