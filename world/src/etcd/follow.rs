//! Followers and their views: each followed topic is read at a revision, then watched from
//! the next one (again after compaction or a new session); its view goes stale while the
//! session is lost, is kept on disk (at most once a second) for a run that starts while
//! etcd is away, and shows this host's own writes at once without hiding a later write of
//! another host.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use etcd_client::{EventType, GetOptions, WatchOptions};
use tokio::sync::watch;

use super::session::quote;
use super::{Inner, MAX_BACKOFF, MIN_BACKOFF, REQUEST, Session, keys, lock};
use crate::{Follow, Topic, View};

/// Follows `topic` through `inner`: the view its followers already share, or a new one
/// (without a session, the last view this host's state directory remembers, stale: the
/// program runs on the last known values).
pub(super) fn follow(inner: &Arc<Inner>, topic: &Topic) -> Follow {
    let mut followed = lock(&inner.followed);
    if let Some(tx) = followed.get(topic) {
        return tx.subscribe();
    }
    let first = match inner.current() {
        Some(_) => None,
        None => inner.cached_view(topic),
    };
    let (tx, rx) = watch::channel(Arc::new(first.unwrap_or_else(View::unknown)));
    if tokio::runtime::Handle::try_current().is_ok() {
        followed.insert(topic.clone(), tx.clone());
        tokio::spawn(follow_topic(inner.clone(), topic.clone(), tx));
    }
    rx
}

/// Whether an entry of `topic` read at `key` counts: it is one of the topic's (a
/// namespace's followers read every namespace's range), and, for an export, bound to a
/// session. An export is written by its host bound to the host's session, so it lives only
/// as long as that session: one bound to no lease was written by hand (or forged) and is
/// never collected.
fn admitted(topic: &Topic, key: &str, lease: i64) -> bool {
    if !keys::belongs(topic, key) {
        return false;
    }
    if matches!(topic, Topic::Exports) && lease == 0 {
        tracing::warn!(key = %quote(key), "an export bound to no host's session is ignored");
        return false;
    }
    true
}

/// How one pass of following a topic ended.
enum Pass {
    Unfollowed,
    /// Read the topic again now (compaction, a new session).
    Again,
    Lost(String),
}

/// Follows `topic` for as long as anyone does: read, watch from the next revision, and
/// again after every loss.
async fn follow_topic(inner: Arc<Inner>, topic: Topic, tx: watch::Sender<Arc<View>>) {
    let mut sessions = inner.session.subscribe();
    let mut backoff = MIN_BACKOFF;
    loop {
        let Some(session) = wait_session(&inner, &mut sessions, Some((&topic, &tx))).await else { return };
        match follow_pass(&inner, &topic, &tx, session, &mut sessions).await {
            Pass::Unfollowed => return,
            Pass::Again => backoff = MIN_BACKOFF,
            Pass::Lost(e) => {
                tracing::debug!(topic = %topic, error = %e, "following again");
                tx.send_if_modified(|v| {
                    let was = v.stale;
                    if !was {
                        *v = Arc::new(v.to_stale());
                    }
                    !was
                });
                if !inner.pause(backoff).await {
                    return;
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// Waits for a live session; `None` once the agent stops or, for a `follower` (a topic and
/// its views), once nobody follows it any more.
pub(super) async fn wait_session(
    inner: &Inner,
    sessions: &mut watch::Receiver<Option<Session>>,
    follower: Option<(&Topic, &watch::Sender<Arc<View>>)>,
) -> Option<Session> {
    loop {
        if let Some(s) = sessions.borrow_and_update().clone() {
            return Some(s);
        }
        let closed = async {
            match follower {
                Some((_, tx)) => tx.closed().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            changed = sessions.changed() => if changed.is_err() { return None },
            _ = closed => if let Some((topic, tx)) = follower && unfollowed(inner, topic, tx) { return None },
            _ = inner.stop.cancelled() => return None,
        }
    }
}

/// Whether nobody follows `topic` any more (then it is forgotten).
fn unfollowed(inner: &Inner, topic: &Topic, tx: &watch::Sender<Arc<View>>) -> bool {
    let mut followed = lock(&inner.followed);
    if tx.receiver_count() == 0 {
        followed.remove(topic);
        return true;
    }
    false
}

async fn follow_pass(
    inner: &Inner,
    topic: &Topic,
    tx: &watch::Sender<Arc<View>>,
    session: Session,
    sessions: &mut watch::Receiver<Option<Session>>,
) -> Pass {
    let (key, prefix) = keys::range(topic);
    let mut client = session.client.clone();
    let get = if prefix { Some(GetOptions::new().with_prefix()) } else { None };
    let resp = match tokio::time::timeout(REQUEST, client.get(key.as_str(), get)).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return Pass::Lost(e.to_string()),
        Err(_) => return Pass::Lost("read timed out".into()),
    };
    let mut revision = resp.header().map_or(0, |h| h.revision());
    let mut raw = BTreeMap::new();
    for kv in resp.kvs() {
        if let (Ok(k), Ok(v)) = (kv.key_str(), kv.value_str())
            && admitted(topic, k, kv.lease())
        {
            raw.insert(k.to_string(), v.to_string());
        }
    }
    let view = View::fresh(inner.entries(topic, &raw), revision);
    inner.remember_view(topic, &view);
    let mut keeper = Keeper::new(view.entries.clone());
    tx.send_replace(Arc::new(view));
    let mut options = WatchOptions::new().with_start_revision(revision + 1).with_progress_notify();
    if prefix {
        options = options.with_prefix();
    }
    let mut stream = match tokio::time::timeout(REQUEST, client.watch(key.as_str(), Some(options))).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Pass::Lost(e.to_string()),
        Err(_) => return Pass::Lost("watch timed out".into()),
    };
    let pass = loop {
        tokio::select! {
            msg = stream.message() => {
                let resp = match msg {
                    Ok(Some(resp)) => resp,
                    Ok(None) => break Pass::Lost("the watch ended".into()),
                    Err(e) => break Pass::Lost(e.to_string()),
                };
                if resp.canceled() {
                    if resp.compact_revision() > 0 {
                        break Pass::Again;
                    }
                    break Pass::Lost(format!("the watch was cancelled: {}", resp.cancel_reason()));
                }
                for ev in resp.events() {
                    inner.events.fetch_add(1, Ordering::Relaxed);
                    let Some(kv) = ev.kv() else { continue };
                    let Ok(key) = kv.key_str() else { continue };
                    match ev.event_type() {
                        EventType::Put if admitted(topic, key, kv.lease()) => {
                            raw.insert(key.to_string(), kv.value_str().unwrap_or("").to_string())
                        }
                        EventType::Put | EventType::Delete => raw.remove(key),
                    };
                }
                if let Some(h) = resp.header() {
                    revision = revision.max(h.revision());
                }
                let entries = inner.entries(topic, &raw);
                keeper.offer(inner, topic, &entries, revision);
                tx.send_if_modified(|view| {
                    // Also a view this host changed by its own write must come back to
                    // what the store holds.
                    let differs = view.stale || view.entries != entries;
                    if differs {
                        *view = Arc::new(View::fresh(entries, revision));
                    }
                    differs
                });
            }
            changed = sessions.changed() => {
                if changed.is_err() {
                    break Pass::Unfollowed;
                }
                let now = sessions.borrow_and_update().as_ref().map(|s| s.epoch);
                match now {
                    None => break Pass::Lost("the session was lost".into()),
                    Some(epoch) if epoch != session.epoch => break Pass::Again,
                    Some(_) => {}
                }
            }
            _ = tx.closed() => if unfollowed(inner, topic, tx) { break Pass::Unfollowed },
            _ = inner.stop.cancelled() => break Pass::Unfollowed,
            _ = tokio::time::sleep_until(keeper.due()), if keeper.pending.is_some() => keeper.flush(inner, topic),
        }
    };
    keeper.flush(inner, topic);
    pass
}

/// Keeps a topic's view on disk as it changes, at most once per [`KEEP_EVERY`]: a view
/// that changes with every one of a thousand hosts' writes is not rewritten a thousand
/// times (the last one is kept when the period ends, or when following stops).
struct Keeper {
    /// The entries last kept (or first read).
    kept: BTreeMap<String, String>,
    /// A view to keep when the period ends.
    pending: Option<View>,
    last: tokio::time::Instant,
}

/// How often, at most, a followed topic's view is written to disk.
const KEEP_EVERY: Duration = Duration::from_secs(1);

impl Keeper {
    fn new(kept: BTreeMap<String, String>) -> Keeper {
        Keeper { kept, pending: None, last: tokio::time::Instant::now() }
    }

    /// The store's entries now: kept if they differ from the kept ones (a view this
    /// host's own write already showed still has to be kept), now or when the period ends.
    fn offer(&mut self, inner: &Inner, topic: &Topic, entries: &BTreeMap<String, String>, revision: i64) {
        if *entries == self.kept {
            self.pending = None;
            return;
        }
        self.pending = Some(View::fresh(entries.clone(), revision));
        if self.last.elapsed() >= KEEP_EVERY {
            self.flush(inner, topic);
        }
    }

    fn due(&self) -> tokio::time::Instant {
        self.last + KEEP_EVERY
    }

    fn flush(&mut self, inner: &Inner, topic: &Topic) {
        if let Some(view) = self.pending.take() {
            inner.remember_view(topic, &view);
            self.kept = view.entries;
            self.last = tokio::time::Instant::now();
        }
    }
}

impl Inner {
    /// `topic`'s view entries from the etcd keys and values of its range.
    fn entries(&self, topic: &Topic, raw: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        keys::entries(topic, &self.cfg.hostname, raw)
    }

    /// Where the last fresh view of `topic` is kept (under the state directory).
    fn cache_path(&self, topic: &Topic) -> PathBuf {
        let host = crate::escape(&self.cfg.hostname);
        self.cfg.state_dir.join("world").join("views").join(host).join(keys::cache_name(topic))
    }

    /// Keeps a fresh view of `topic`, for a later run that starts while etcd is away
    /// (and for `tend why --seeds` then). Observers keep nothing.
    fn remember_view(&self, topic: &Topic, view: &View) {
        if self.cfg.observer {
            return;
        }
        let path = self.cache_path(topic);
        let saved = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| crate::atomic::replace_file(&path, encode_view(view).as_bytes()));
        if let Err(e) = saved {
            tracing::debug!(path = %path.display(), error = %e, "cannot keep the world's view");
        }
    }

    /// The view of `topic` a previous run kept, stale.
    fn cached_view(&self, topic: &Topic) -> Option<View> {
        decode_view(&std::fs::read_to_string(self.cache_path(topic)).ok()?)
    }

    /// A write this host made at `revision`, shown to its followers at once unless their
    /// view is already newer (a later write by another host must not be hidden).
    pub(super) fn saw_write(&self, topic: &Topic, name: &str, value: Option<&str>, revision: i64) {
        let Some(tx) = lock(&self.followed).get(topic).cloned() else { return };
        tx.send_if_modified(|view| match with_write(view, name, value, Some(revision)) {
            Some(next) => {
                *view = Arc::new(next);
                true
            }
            None => false,
        });
    }

    /// This host's own entry `name` of `topic`, written while the store is away, in the
    /// topic's stale view (its revision and staleness stay as they are).
    pub(super) fn saw_own_while_away(&self, topic: &Topic, name: &str, value: Option<&str>) {
        let Some(tx) = lock(&self.followed).get(topic).cloned() else { return };
        tx.send_if_modified(|view| match with_write(view, name, value, None) {
            Some(next) => {
                *view = Arc::new(next);
                true
            }
            None => false,
        });
    }
}

/// `view` with entry `name` set to `value` (deleted with `None`), or `None` when that
/// changes nothing or must not be shown. A write the store made at `revision` shows only
/// in a view read before it; one made while the store is away (`revision` `None`) only in
/// a stale view, which keeps its revision.
fn with_write(view: &View, name: &str, value: Option<&str>, revision: Option<i64>) -> Option<View> {
    let shown = match revision {
        Some(revision) => view.revision < revision,
        None => view.stale,
    };
    if !view.read || !shown || view.entries.get(name).map(String::as_str) == value {
        return None;
    }
    let mut next = view.clone();
    if let Some(revision) = revision {
        next.revision = revision;
    }
    match value {
        Some(v) => next.entries.insert(name.to_string(), v.to_string()),
        None => next.entries.remove(name),
    };
    Some(next)
}

/// A view as kept on disk (JSON: revision, when it was confirmed, entries).
fn encode_view(view: &View) -> String {
    let confirmed = view.confirmed.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    serde_json::json!({"revision": view.revision, "confirmed": confirmed, "entries": view.entries}).to_string()
}

/// The inverse of [`encode_view`], stale; `None` for anything else.
fn decode_view(text: &str) -> Option<View> {
    let record: serde_json::Value = serde_json::from_str(text).ok()?;
    let entries =
        record["entries"].as_object()?.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect();
    let confirmed = SystemTime::UNIX_EPOCH + Duration::from_secs_f64(record["confirmed"].as_f64()?.max(0.0));
    Some(View { entries, revision: record["revision"].as_i64()?, stale: true, read: true, confirmed })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(pairs: &[(&str, &str)], revision: i64) -> View {
        View::fresh(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(), revision)
    }

    /// Issue 45, defect 7: an export bound to no session (written by hand) is not collected;
    /// other topics' entries are read as they are.
    #[test]
    fn exports_bound_to_no_session_are_ignored() {
        assert!(!admitted(&Topic::Exports, "/_tend/exports/ghost/%2a/file/x", 0));
        assert!(admitted(&Topic::Exports, "/_tend/exports/h1/%2a/file/x", 0x42));
        assert!(admitted(&Topic::Deploys, "/_tend/deploy/latest", 0));
    }

    /// The revision bookkeeping: a host's own write shows at once, but never over a view
    /// that already saw a later revision (another host's later write stays visible).
    #[test]
    fn an_own_write_shows_unless_the_view_is_newer() {
        let seen = view(&[("h1", "a")], 10);
        let next = with_write(&seen, "h1", Some("b"), Some(11)).unwrap();
        assert_eq!((next.entries["h1"].as_str(), next.revision), ("b", 11));
        assert_eq!(with_write(&seen, "h1", Some("b"), Some(10)), None, "the view is as new");
        assert_eq!(with_write(&seen, "h1", Some("a"), Some(12)), None, "nothing changes");
        let gone = with_write(&seen, "h1", None, Some(12)).unwrap();
        assert!(gone.entries.is_empty());
        assert_eq!(with_write(&View::unknown(), "h1", Some("b"), Some(11)), None, "never read: wait for a read");
        // While the store is away, only a stale view shows it, at its own revision.
        assert_eq!(with_write(&seen, "h1", Some("b"), None), None);
        let away = with_write(&seen.to_stale(), "h1", Some("b"), None).unwrap();
        assert_eq!((away.revision, away.stale), (10, true));
    }

    #[test]
    fn a_kept_view_comes_back_stale() {
        let kept = view(&[("k", "v"), ("h/2", "x")], 42);
        let back = decode_view(&encode_view(&kept)).unwrap();
        assert_eq!((back.entries, back.revision, back.stale, back.read), (kept.entries, 42, true, true));
        let drift = back.confirmed.duration_since(kept.confirmed).unwrap_or_else(|e| e.duration());
        assert!(drift < Duration::from_millis(1), "{drift:?}");
        assert_eq!(decode_view("not json"), None);
        assert_eq!(decode_view("{\"entries\": {}}"), None);
    }
}
