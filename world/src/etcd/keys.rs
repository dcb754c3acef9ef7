//! Where everything lives in etcd (the table in the module above): the key of each record,
//! the range each topic reads, the ranges each host writes (what `tend cluster grant`
//! confines it to), and how a range's keys and values become a topic's entries. Pure
//! functions of names: the layout is tested here without a cluster.
//!
//! Every key a host writes names the host as a whole path component right after its
//! topic's directory (`/_tend/maps/<host>/<ns>`, never `/_tend/maps/<ns>/<host>`), so that
//! etcd, which grants by key and prefix, can confine the host to five ranges of its own
//! while each topic stays one contiguous range that its followers watch.

use std::collections::BTreeMap;

use crate::{Topic, escape, unescape};

/// Every key tend writes lives under this prefix.
pub const PREFIX: &str = "/_tend/";

/// The directories only tend's first key layout wrote (before hosts were confined): an
/// agent that still writes there runs an older tend that neither sees nor is seen by this one.
pub const OLD_LAYOUT: [&str; 3] = ["/_tend/map/", "/_tend/schedule/cand/", "/_tend/exported/"];

/// A host's claim on its name.
pub fn host_key(host: &str) -> String {
    format!("{PREFIX}hosts/{}", escape(host))
}

/// A plain key.
pub(super) fn val_key(key: &str) -> String {
    format!("{PREFIX}kv/{key}")
}

/// Every plain key (shared by every host: no host owns one).
pub fn vals_root() -> String {
    format!("{PREFIX}kv/")
}

/// Every host's entries of every namespace.
pub(super) fn maps_root() -> String {
    format!("{PREFIX}maps/")
}

/// Host `host`'s entry of namespace `ns`.
pub(super) fn map_key(host: &str, ns: &str) -> String {
    format!("{}{}/{}", maps_root(), escape(host), escape(ns))
}

/// Everything the schedules keep: candidacies, results and the leader's election.
pub(super) fn schedule_root() -> String {
    format!("{PREFIX}schedule/")
}

/// Every host's candidacies.
pub(super) fn candidates_root() -> String {
    format!("{PREFIX}schedule/candidate/")
}

/// Host `host`'s candidacy in namespace `ns`.
pub(super) fn cand_key(host: &str, ns: &str) -> String {
    format!("{}{}/{}", candidates_root(), escape(host), escape(ns))
}

/// Every namespace's result.
pub fn results_root() -> String {
    format!("{PREFIX}schedule/result/")
}

/// The hosts namespace `ns` chose.
pub(super) fn result_key(ns: &str) -> String {
    format!("{}{}", results_root(), escape(ns))
}

/// Where the agents that choose the schedules campaign.
pub fn election() -> String {
    format!("{PREFIX}schedule/leader")
}

/// Every host's status.
pub(super) fn statuses_root() -> String {
    format!("{PREFIX}status/")
}

/// What host `host` says of itself.
pub fn status_key(host: &str) -> String {
    format!("{}{}", statuses_root(), escape(host))
}

/// Every export, by exporting host.
pub(super) fn exports_root() -> String {
    format!("{PREFIX}exports/")
}

/// The key of resource `kind[name]` that host `from` exports to `to` (a host or `*`).
pub(super) fn export_key(from: &str, to: &str, kind: &str, name: &str) -> String {
    format!("{}{}/{}/{}/{}", exports_root(), escape(from), escape(to), escape(kind), escape(name))
}

/// The cluster's membership, as the agents that run its members manage it: the ideal
/// size, who is joining, and why a removal was refused.
pub fn cluster_root() -> String {
    format!("{PREFIX}cluster/")
}

/// How many members the cluster grows to (`tend cluster size N`).
pub fn cluster_size() -> String {
    format!("{}size", cluster_root())
}

/// Held (with a lease) by the agent adding itself as a member: one joins at a time.
pub(super) fn cluster_joining() -> String {
    format!("{}joining", cluster_root())
}

/// Why the leader's agent left a dead member in (a removal that would lose quorum).
pub(super) fn cluster_note() -> String {
    format!("{}note", cluster_root())
}

/// Everything about deploys (written by those who deploy, read by every agent).
pub fn deploy_root() -> String {
    format!("{PREFIX}deploy/")
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

/// A range of keys: one key, or every key under a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    pub key: String,
    pub prefix: bool,
}

/// Every key host `host` writes (and nothing any other host writes): its claim, its
/// status, its map entries, its candidacies and its exports. A host's name holds no `/`,
/// so `/_tend/maps/h1/` is not a prefix of `h10`'s keys.
pub fn host_ranges(host: &str) -> Vec<Range> {
    let h = escape(host);
    let one = |key: String| Range { key, prefix: false };
    let under = |root: String| Range { key: format!("{root}{h}/"), prefix: true };
    vec![
        one(host_key(host)),
        one(status_key(host)),
        under(maps_root()),
        under(candidates_root()),
        under(exports_root()),
    ]
}

/// The range a topic reads: the key or prefix, and whether it is a prefix.
pub(super) fn range(topic: &Topic) -> (String, bool) {
    match topic {
        Topic::Val(k) => (val_key(k), false),
        Topic::Map(_) => (maps_root(), true),
        Topic::Candidates(_) => (candidates_root(), true),
        Topic::Schedule(ns) => (result_key(ns), false),
        Topic::Exports => (exports_root(), true),
        Topic::Deploys => (latest_key(), false),
        Topic::Statuses => (statuses_root(), true),
    }
}

/// Whether `key`, read in `topic`'s range, is one of `topic`'s (a namespace's followers
/// read the range of every namespace and keep their own).
pub(super) fn belongs(topic: &Topic, key: &str) -> bool {
    match topic {
        Topic::Map(ns) | Topic::Candidates(ns) => {
            let (root, _) = range(topic);
            key.strip_prefix(&root).and_then(|rest| rest.split_once('/')).is_some_and(|(_, n)| n == escape(ns))
        }
        _ => true,
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
                    let mut parts = k.strip_prefix(&key)?.splitn(4, '/');
                    let (from, to, kind, name) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
                    (to == me || to == all).then(|| (format!("{kind}/{from}/{name}"), v.clone()))
                })
                .collect()
        }
        Topic::Val(k) => raw.get(&key).map(|v| (k.clone(), v.clone())).into_iter().collect(),
        Topic::Deploys => raw.get(&key).map(|v| ("latest".to_string(), v.clone())).into_iter().collect(),
        Topic::Schedule(_) => {
            raw.get(&key).map(|v| hosts(v).map(|h| (h.to_string(), String::new())).collect()).unwrap_or_default()
        }
        Topic::Map(ns) | Topic::Candidates(ns) => {
            let ns = escape(ns);
            raw.iter()
                .filter_map(|(k, v)| {
                    let (host, n) = k.strip_prefix(&key)?.split_once('/')?;
                    (n == ns).then(|| (unescape(host), v.clone()))
                })
                .collect()
        }
        Topic::Statuses => raw.iter().filter_map(|(k, v)| Some((unescape(k.strip_prefix(&key)?), v.clone()))).collect(),
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

    /// The layout is what the cluster's other agents read and what `tend cluster grant`
    /// confines hosts to: it must not move.
    #[test]
    fn keys_are_where_the_layout_says() {
        assert_eq!(host_key("h/1"), "/_tend/hosts/h%2f1");
        assert_eq!(val_key("a"), "/_tend/kv/a");
        assert_eq!(map_key("h1", "n s"), "/_tend/maps/h1/n%20s");
        assert_eq!(cand_key("h1", "ns"), "/_tend/schedule/candidate/h1/ns");
        assert_eq!(result_key("ns"), "/_tend/schedule/result/ns");
        assert_eq!(election(), "/_tend/schedule/leader");
        assert_eq!(status_key("h1"), "/_tend/status/h1");
        assert_eq!(export_key("h1", "*", "file", "/etc/motd"), "/_tend/exports/h1/%2a/file/%2fetc%2fmotd");
        assert_eq!(deploy_key(42), "/_tend/deploy/id/00000000000000000042");
        assert!(deploy_key(9) < deploy_key(10), "deploy keys sort by id");
        assert_eq!(blob_key("ab"), "/_tend/deploy/blob/ab");
        for topic in [Topic::Val("k".into()), Topic::Schedule("n".into()), Topic::Deploys] {
            assert!(!range(&topic).1, "{topic} reads one key");
        }
        for topic in [Topic::Map("n".into()), Topic::Candidates("n".into()), Topic::Exports, Topic::Statuses] {
            assert!(range(&topic).1, "{topic} reads a prefix");
        }
        for old in OLD_LAYOUT {
            for topic in [Topic::Map("n".into()), Topic::Candidates("n".into()), Topic::Exports, Topic::Statuses] {
                assert!(!range(&topic).0.starts_with(old), "{topic} reads none of the old layout's {old}");
            }
        }
    }

    /// Every key a host writes is within its ranges, and none of another host's is, not
    /// even one whose name it prefixes.
    #[test]
    fn a_host_writes_only_within_its_own_ranges() {
        let within = |ranges: &[Range], key: &str| {
            ranges.iter().any(|r| if r.prefix { key.starts_with(&r.key) } else { key == r.key })
        };
        let writes = |h: &str| {
            vec![
                host_key(h),
                status_key(h),
                map_key(h, "ns"),
                cand_key(h, "ns"),
                export_key(h, "*", "file", "/x"),
                export_key(h, "h2", "file", "/x"),
            ]
        };
        let h1 = host_ranges("h1");
        for key in writes("h1") {
            assert!(within(&h1, &key), "h1 may write {key}");
        }
        for other in ["h10", "h", "h2"] {
            for key in writes(other) {
                assert!(!within(&h1, &key), "h1 may not write {key}");
            }
        }
        assert!(!within(&h1, &val_key("shared")) && !within(&h1, &result_key("ns")) && !within(&h1, &latest_key()));
    }

    #[test]
    fn a_host_sees_the_exports_addressed_to_it_or_to_all() {
        let store = raw(&[
            (&export_key("h1", "h2", "file", "/a"), "A"),
            (&export_key("h1", "*", "file", "/b"), "B"),
            (&export_key("h1", "h3", "file", "/c"), "C"),
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
        let map = raw(&[(&map_key("h/1", "ns"), "x"), (&map_key("h2", "other"), "y"), (&map_key("h3", "ns2"), "z")]);
        let ns = Topic::Map("ns".into());
        assert_eq!(entries(&ns, "h1", &map), raw(&[("h/1", "x")]));
        assert!(belongs(&ns, &map_key("h/1", "ns")) && !belongs(&ns, &map_key("h/1", "ns2")));
        assert!(belongs(&Topic::Exports, &export_key("h1", "*", "file", "/a")));
        assert_eq!(entries(&Topic::Val("gone".into()), "h1", &store), BTreeMap::new());
    }
}
