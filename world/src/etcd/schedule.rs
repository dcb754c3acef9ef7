//! The schedules' leader: every agent that volunteers, withdraws or reads a schedule
//! campaigns (etcd's election API, on its session's lease); the leader reads every
//! namespace's candidates and results at one revision, chooses ([`crate::choose`]), writes
//! what changed, and again after every change under the schedules' root. Its writes are
//! fenced by its election: each holds only while its leader key is the one it won with,
//! so a deposed leader cannot overwrite its successor's choice.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use etcd_client::{Client, Compare, CompareOp, GetOptions, Txn, TxnOp, WatchOptions};

use super::follow::wait_session;
use super::write::is_outage;
use super::{Inner, MAX_BACKOFF, REQUEST, keys};
use crate::{Candidacy, choose, unescape};

/// Without a session for longer than its lease could last, this host can no longer
/// confirm it is still chosen (the others may have chosen another in its place): it
/// drops itself from every schedule's view until etcd answers again, so two hosts never
/// both act on a `max => 1` role for longer than the lease.
pub(super) async fn relinquish(inner: Arc<Inner>) {
    let mut sessions = inner.session.subscribe();
    loop {
        // Until the session is lost.
        while sessions.borrow_and_update().is_some() {
            tokio::select! {
                changed = sessions.changed() => if changed.is_err() { return },
                _ = inner.stop.cancelled() => return,
            }
        }
        let deadline = *super::lock(&inner.lease_deadline);
        if let Some(deadline) = deadline {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline.into()) => {}
                changed = sessions.changed() => {
                    if changed.is_err() { return }
                    continue;
                }
                _ = inner.stop.cancelled() => return,
            }
        }
        if sessions.borrow().is_some() {
            continue;
        }
        let host = inner.cfg.hostname.as_str();
        let mut dropped = Vec::new();
        for (topic, tx) in super::lock(&inner.followed).iter() {
            let crate::Topic::Schedule(ns) = topic else { continue };
            let changed = tx.send_if_modified(|v| {
                if !v.stale || !v.entries.contains_key(host) {
                    return false;
                }
                let mut view = (**v).clone();
                view.entries.remove(host);
                *v = Arc::new(view);
                true
            });
            if changed {
                dropped.push(ns.clone());
            }
        }
        if !dropped.is_empty() {
            tracing::warn!(
                host,
                schedules = %dropped.join(","),
                "etcd has been away longer than this host's lease: it gives up its schedule roles until etcd answers"
            );
        }
        // Wait for the session to come back before watching for its loss again.
        tokio::select! {
            changed = sessions.changed() => if changed.is_err() { return },
            _ = inner.stop.cancelled() => return,
        }
    }
}

/// Campaigns for choosing the schedules, and chooses while it leads (see the module's
/// documentation); again after every lost session or deposition.
pub(super) async fn lead_schedules(inner: Arc<Inner>) {
    let mut sessions = inner.session.subscribe();
    let mut told = false;
    loop {
        let Some(session) = wait_session(&inner, &mut sessions, None).await else { return };
        let mut client = session.client.clone();
        let won = tokio::select! {
            won = client.campaign(keys::election(), inner.cfg.hostname.as_str(), session.lease) => won,
            _ = sessions.changed() => continue,
            _ = inner.stop.cancelled() => return,
        };
        let mut wait = MAX_BACKOFF;
        let leader = match won {
            Ok(resp) => resp.leader().map(|l| (l.key().to_vec(), l.rev())),
            Err(e) if !is_outage(&e) => {
                // Not entitled (`tend cluster grant --no-schedules`): others choose. Said
                // once; asked again now and then, in case the grant changes.
                if !told {
                    tracing::info!(host = %inner.cfg.hostname, error = %e, "not choosing the schedules: etcd refused this host's campaign");
                    told = true;
                }
                wait = MAX_BACKOFF * 10;
                None
            }
            Err(e) => {
                tracing::debug!(error = %e, "campaign failed");
                None
            }
        };
        let Some((key, rev)) = leader else {
            if !inner.pause(wait).await {
                return;
            }
            continue;
        };
        told = false;
        tracing::info!(host = %inner.cfg.hostname, "choosing the schedules (elected)");
        let why = tokio::select! {
            why = lead(&inner, &mut client, &key, rev) => why,
            _ = sessions.changed() => "the session changed".to_string(),
            _ = inner.stop.cancelled() => return,
        };
        tracing::info!(host = %inner.cfg.hostname, reason = %why, "no longer choosing the schedules");
    }
}

/// While this agent leads: choose every namespace now and after every change under the
/// schedules' root. Returns why it stopped.
async fn lead(inner: &Inner, client: &mut Client, leader_key: &[u8], leader_rev: i64) -> String {
    let root = keys::schedule_root();
    loop {
        let resp = match tokio::time::timeout(REQUEST, client.get(root.as_str(), Some(GetOptions::new().with_prefix())))
            .await
        {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return e.to_string(),
            Err(_) => return "read timed out".into(),
        };
        let revision = resp.header().map_or(0, |h| h.revision());
        let stored = resp.kvs().iter().filter_map(|kv| Some((kv.key_str().ok()?, kv.value_str().ok()?)));
        for (ns, now) in changes(stored) {
            let key = format!("{}{ns}", keys::results_root());
            let op = if now.is_empty() {
                TxnOp::delete(key.as_str(), None)
            } else {
                TxnOp::put(key.as_str(), now.join(","), None)
            };
            // Fenced: only while this agent's leader key is the one it won with.
            let txn =
                Txn::new().when([Compare::create_revision(leader_key, CompareOp::Equal, leader_rev)]).and_then([op]);
            match tokio::time::timeout(REQUEST, client.txn(txn)).await {
                Ok(Ok(r)) if r.succeeded() => {
                    tracing::info!(namespace = %unescape(&ns), hosts = %now.join(","), "schedule chosen");
                }
                Ok(Ok(_)) => return "deposed (the election moved on)".into(),
                Ok(Err(e)) => return e.to_string(),
                Err(_) => return "write timed out".into(),
            }
        }
        let options = WatchOptions::new().with_prefix().with_start_revision(revision + 1);
        let mut stream = match tokio::time::timeout(REQUEST, client.watch(root.as_str(), Some(options))).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return e.to_string(),
            Err(_) => return "watch timed out".into(),
        };
        // Any change (this leader's own results included: choosing again finds nothing
        // to write) means choosing again.
        match stream.message().await {
            Ok(Some(resp)) => {
                inner.events.fetch_add(resp.events().len() as u64, Ordering::Relaxed);
            }
            Ok(None) => return "the watch ended".into(),
            Err(e) => return e.to_string(),
        }
    }
}

/// The results to write, from every key and value under the schedules' root: for each
/// namespace (escaped) whose choice among its candidates differs from its stored result,
/// the hosts it chooses now (none: delete the result).
fn changes<'a>(stored: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<(String, Vec<String>)> {
    let (cands, results) = (keys::candidates_root(), keys::results_root());
    let mut candidates: BTreeMap<String, BTreeMap<String, Candidacy>> = BTreeMap::new();
    let mut chosen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (k, v) in stored {
        if let Some((host, ns)) = k.strip_prefix(&cands).and_then(|rest| rest.split_once('/'))
            && let Some(terms) = Candidacy::parse(v)
        {
            candidates.entry(ns.to_string()).or_default().insert(unescape(host), terms);
        } else if let Some(ns) = k.strip_prefix(&results) {
            chosen.insert(ns.to_string(), keys::hosts(v).map(str::to_string).collect());
        }
    }
    let namespaces: BTreeSet<&String> = candidates.keys().chain(chosen.keys()).collect();
    let mut out = Vec::new();
    for ns in namespaces {
        let before = chosen.get(ns).cloned().unwrap_or_default();
        let now = candidates.get(ns).map(|c| choose(c, &before)).unwrap_or_default();
        if now != before {
            out.push((ns.clone(), now));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(ns: &str, host: &str) -> String {
        keys::cand_key(host, ns)
    }

    #[test]
    fn only_namespaces_whose_choice_moved_are_written() {
        let terms = Candidacy { strategy: "rr".into(), max: 1, persist: false, ttl: 0, owner: "o".into() }.render();
        let stored = [
            (cand("web", "h2"), terms.clone()),
            (cand("web", "h1"), terms.clone()),
            (keys::result_key("web"), "h2".to_string()),
            (cand("db", "h1"), terms.clone()),
            (keys::result_key("gone"), "h3".to_string()),
            (keys::election() + "/lease", "h1".to_string()),
            (cand("bad", "h1"), "not terms".to_string()),
        ];
        let plan = changes(stored.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        // `web` keeps h2 (sticky round robin); `db` chooses h1; `gone` has no candidate
        // left: its result goes; the election and unreadable terms are not namespaces.
        assert_eq!(plan, vec![("db".to_string(), vec!["h1".to_string()]), ("gone".to_string(), vec![])]);
    }
}
