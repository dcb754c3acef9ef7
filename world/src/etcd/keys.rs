//! Where everything lives in etcd (the table in the module above): the key of each record,
//! the range each topic reads, and how a range's keys and values become a topic's entries.
//! Pure functions of names: the layout is tested here without a cluster.

use std::collections::BTreeMap;

use crate::{Topic, escape, unescape};

/// Every key tend writes lives under this prefix.
pub const PREFIX: &str = "/_tend/";

/// A host's claim on its name.
pub(super) fn host_key(host: &str) -> String {
    format!("{PREFIX}hosts/{}", escape(host))
}

/// A plain key.
pub(super) fn val_key(key: &str) -> String {
    format!("{PREFIX}kv/{key}")
}

/// The entries of namespace `ns`, one per host.
pub(super) fn map_prefix(ns: &str) -> String {
    format!("{PREFIX}map/{}/", escape(ns))
}

/// Everything the schedules keep: candidacies, results and the leader's election.
pub(super) fn schedule_root() -> String {
    format!("{PREFIX}schedule/")
}

/// Every namespace's candidacies.
pub(super) fn candidates_root() -> String {
    format!("{PREFIX}schedule/cand/")
}

/// Every namespace's result.
pub(super) fn results_root() -> String {
    format!("{PREFIX}schedule/result/")
}

/// The candidacies of namespace `ns`, one per host.
pub(super) fn cand_prefix(ns: &str) -> String {
    format!("{}{}/", candidates_root(), escape(ns))
}

/// The hosts namespace `ns` chose.
pub(super) fn result_key(ns: &str) -> String {
    format!("{}{}", results_root(), escape(ns))
}

/// Where the agents that choose the schedules campaign.
pub(super) fn election() -> String {
    format!("{PREFIX}schedule/leader")
}

/// What host `host` says of itself.
pub(super) fn status_key(host: &str) -> String {
    format!("{PREFIX}status/{}", escape(host))
}

/// Every export, by addressee.
pub(super) fn exported_prefix() -> String {
    format!("{PREFIX}exported/")
}

/// The key of resource `kind[name]` that host `from` exports to `to` (a host or `*`).
pub(super) fn export_key(to: &str, kind: &str, from: &str, name: &str) -> String {
    format!("{}{}/{}/{}/{}", exported_prefix(), escape(to), escape(kind), escape(from), escape(name))
}

/// The id of the latest deploy.
pub(super) fn latest_key() -> String {
    format!("{PREFIX}deploy/latest")
}

/// Every deploy's record.
pub(super) fn deploys_prefix() -> String {
    format!("{PREFIX}deploy/id/")
}

/// The key of deploy `id` (zero-padded, so keys sort by id).
pub(super) fn deploy_key(id: u64) -> String {
    format!("{}{id:020}", deploys_prefix())
}

/// Every deployed file.
pub(super) fn blobs_prefix() -> String {
    format!("{PREFIX}deploy/blob/")
}

/// The key of the deployed file whose content hashes to `hash`.
pub(super) fn blob_key(hash: &str) -> String {
    format!("{}{hash}", blobs_prefix())
}

/// The range a topic reads: the key or prefix, and whether it is a prefix.
pub(super) fn range(topic: &Topic) -> (String, bool) {
    match topic {
        Topic::Val(k) => (val_key(k), false),
        Topic::Map(ns) => (map_prefix(ns), true),
        Topic::Candidates(ns) => (cand_prefix(ns), true),
        Topic::Schedule(ns) => (result_key(ns), false),
        Topic::Exports => (exported_prefix(), true),
        Topic::Deploys => (latest_key(), false),
        Topic::Statuses => (format!("{PREFIX}status/"), true),
    }
}

/// `topic`'s view entries, as host `me` sees them, from the etcd keys and values of its
/// range (exports: only those addressed to `me` or to every host).
pub(super) fn entries(topic: &Topic, me: &str, raw: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let (key, _) = range(topic);
    match topic {
        Topic::Exports => {
            let (me, all) = (escape(me), escape("*"));
            raw.iter()
                .filter_map(|(k, v)| {
                    let (to, rest) = k.strip_prefix(&key)?.split_once('/')?;
                    (to == me || to == all).then(|| (rest.to_string(), v.clone()))
                })
                .collect()
        }
        Topic::Val(k) => raw.get(&key).map(|v| (k.clone(), v.clone())).into_iter().collect(),
        Topic::Deploys => raw.get(&key).map(|v| ("latest".to_string(), v.clone())).into_iter().collect(),
        Topic::Schedule(_) => {
            raw.get(&key).map(|v| hosts(v).map(|h| (h.to_string(), String::new())).collect()).unwrap_or_default()
        }
        Topic::Map(_) | Topic::Candidates(_) | Topic::Statuses => {
            raw.iter().filter_map(|(k, v)| Some((unescape(k.strip_prefix(&key)?), v.clone()))).collect()
        }
    }
}

/// The hosts of a schedule's result (`h1,h2`).
pub(super) fn hosts(result: &str) -> impl Iterator<Item = &str> {
    result.split(',').filter(|h| !h.is_empty())
}

/// The file name under which a topic's last fresh view is kept.
pub(super) fn cache_name(topic: &Topic) -> String {
    match topic {
        Topic::Val(k) => format!("val-{}", escape(k)),
        Topic::Map(ns) => format!("map-{}", escape(ns)),
        Topic::Candidates(ns) => format!("cand-{}", escape(ns)),
        Topic::Schedule(ns) => format!("sched-{}", escape(ns)),
        Topic::Exports => "exports".to_string(),
        Topic::Deploys => "deploys".to_string(),
        Topic::Statuses => "statuses".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    /// The layout is what the cluster's other agents (and older tend) read: it must not move.
    #[test]
    fn keys_are_where_the_layout_says() {
        assert_eq!(host_key("h/1"), "/_tend/hosts/h%2f1");
        assert_eq!(val_key("a"), "/_tend/kv/a");
        assert_eq!(map_prefix("n s"), "/_tend/map/n%20s/");
        assert_eq!(cand_prefix("ns"), "/_tend/schedule/cand/ns/");
        assert_eq!(result_key("ns"), "/_tend/schedule/result/ns");
        assert_eq!(election(), "/_tend/schedule/leader");
        assert_eq!(status_key("h1"), "/_tend/status/h1");
        assert_eq!(export_key("*", "file", "h1", "/etc/motd"), "/_tend/exported/%2a/file/h1/%2fetc%2fmotd");
        assert_eq!(deploy_key(42), "/_tend/deploy/id/00000000000000000042");
        assert!(deploy_key(9) < deploy_key(10), "deploy keys sort by id");
        assert_eq!(blob_key("ab"), "/_tend/deploy/blob/ab");
        for topic in [Topic::Val("k".into()), Topic::Schedule("n".into()), Topic::Deploys] {
            assert!(!range(&topic).1, "{topic} reads one key");
        }
        for topic in [Topic::Map("n".into()), Topic::Candidates("n".into()), Topic::Exports, Topic::Statuses] {
            assert!(range(&topic).1, "{topic} reads a prefix");
        }
    }

    #[test]
    fn a_host_sees_the_exports_addressed_to_it_or_to_all() {
        let store = raw(&[
            (&export_key("h2", "file", "h1", "/a"), "A"),
            (&export_key("*", "file", "h1", "/b"), "B"),
            (&export_key("h3", "file", "h1", "/c"), "C"),
        ]);
        let seen = entries(&Topic::Exports, "h2", &store);
        assert_eq!(seen, raw(&[("file/h1/%2fa", "A"), ("file/h1/%2fb", "B")]));
        assert_eq!(crate::parse_export_entry("file/h1/%2fa"), Some(("file".into(), "h1".into(), "/a".into())));
    }

    #[test]
    fn ranges_become_entries_by_name() {
        let store = raw(&[(&result_key("ns"), "h1,,h2"), (&val_key("k"), "v"), (&latest_key(), "7")]);
        assert_eq!(entries(&Topic::Schedule("ns".into()), "h1", &store), raw(&[("h1", ""), ("h2", "")]));
        assert_eq!(entries(&Topic::Val("k".into()), "h1", &store), raw(&[("k", "v")]));
        assert_eq!(entries(&Topic::Deploys, "h1", &store), raw(&[("latest", "7")]));
        let map = raw(&[(&format!("{}h%2f1", map_prefix("ns")), "x"), ("/_tend/map/other/h2", "y")]);
        assert_eq!(entries(&Topic::Map("ns".into()), "h1", &map), raw(&[("h/1", "x")]));
        assert_eq!(entries(&Topic::Val("gone".into()), "h1", &store), BTreeMap::new());
    }
}
