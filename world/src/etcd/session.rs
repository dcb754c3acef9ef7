//! The agent's session: connecting with backoff, a lease of `ttl` seconds, the claim of the
//! host name bound to it (a forged or leftover claim taken over, a live agent's refused),
//! the re-assertion of what this host owns, and the keep-alive (or, for an observer, a
//! periodic read) until the session lapses.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use etcd_client::{Client, Compare, CompareOp, ConnectOptions, GetOptions, PutOptions, Txn, TxnOp, TxnOpResponse};
use tokio::sync::oneshot;

use super::keys::{self, PREFIX};
use super::write::put_if_changed;
use super::{Inner, MAX_BACKOFF, MIN_BACKOFF, REQUEST, Session, lock};
use crate::WorldError;
use crate::tls::{Tls, TlsProblem, chain};

/// Why a session could not be made.
pub(super) enum Refused {
    /// Another agent holds this host name.
    Duplicate(String),
    /// A cause that will not pass by itself: not an outage, said in words, and a starting
    /// command stops on it.
    Lasting(Lasting),
    /// The cluster cannot be reached (or answered an error): try again.
    Down(String),
}

/// What a [`Refused::Lasting`] is.
pub(super) enum Lasting {
    /// TLS failed: a wrong CA, a certificate refused.
    Tls(TlsProblem),
    /// The TLS files cannot be read (the error says which).
    Files(WorldError),
    /// etcd's authentication is on and refuses this host (no user of its name, or a role
    /// that does not cover its keys): etcd's words.
    Denied(String),
}

impl Lasting {
    fn error(self, inner: &Inner) -> WorldError {
        match self {
            Lasting::Tls(problem) => WorldError::Tls(problem.describe(inner.cfg.tls.as_ref(), &inner.cfg.seeds)),
            Lasting::Files(e) => e,
            Lasting::Denied(reason) => {
                let host = &inner.cfg.hostname;
                let cn = inner
                    .cfg
                    .tls
                    .as_ref()
                    .and_then(|t| t.identity.as_ref())
                    .and_then(|(cert, _)| crate::pki::common_name(&std::fs::read_to_string(cert).ok()?));
                let hint = match &inner.cfg.tls {
                    Some(_) if !inner.cfg.observer && cn.as_ref().is_some_and(|cn| cn != host) => format!(
                        "{reason} (with authentication on, etcd takes the user from the client certificate's CN, \
                         and --cert is issued to `{}`, not to `{host}`)",
                        cn.unwrap_or_default()
                    ),
                    Some(tls) if tls.identity.is_some() => format!(
                        "{reason} (with authentication on, etcd takes the user from the client certificate's CN; \
                         `tend cluster grant {host}` gives a host its user, and the certificate must be issued to `{host}`)"
                    ),
                    _ => format!(
                        "{reason} (etcd's authentication is on: connect with a certificate it grants, --cert and --key)"
                    ),
                };
                let who = if inner.cfg.observer { "this client".to_string() } else { format!("host `{host}`") };
                WorldError::Refused { what: who, reason: hint }
            }
        }
    }
}

impl From<etcd_client::Error> for Refused {
    fn from(e: etcd_client::Error) -> Refused {
        if let etcd_client::Error::GRpcStatus(status) = &e
            && matches!(status.code(), tonic::Code::PermissionDenied | tonic::Code::Unauthenticated)
        {
            return Refused::Lasting(Lasting::Denied(status.message().to_string()));
        }
        let text = chain(&e);
        match TlsProblem::of(&text) {
            Some(problem) => Refused::Lasting(Lasting::Tls(problem)),
            None => {
                tracing::debug!(error = %text, "etcd request failed");
                Refused::Down(e.to_string())
            }
        }
    }
}

impl From<tokio::time::error::Elapsed> for Refused {
    fn from(_: tokio::time::error::Elapsed) -> Refused {
        Refused::Down("request timed out".into())
    }
}

/// The task that keeps the session (see the module's documentation).
pub(super) async fn keep_session(inner: Arc<Inner>, first: oneshot::Sender<Result<(), WorldError>>) {
    let mut first = Some(first);
    let mut backoff = MIN_BACKOFF;
    let mut lease: Option<i64> = None;
    let mut epoch = 0;
    let mut duplicate_told = false;
    let mut old_told = false;
    // The last TLS or file problem logged (each is logged once, not once per retry).
    let mut told: Option<String> = None;
    while !inner.stop.is_cancelled() {
        let why = match establish(&inner, lease).await {
            Ok((client, id)) => {
                lease = Some(id);
                epoch += 1;
                backoff = MIN_BACKOFF;
                duplicate_told = false;
                told = None;
                inner.went(true, "");
                inner.session.send_replace(Some(Session { client: client.clone(), lease: id, epoch }));
                // Told only now: whoever waits for the first session finds it live.
                if let Some(f) = first.take() {
                    let _ = f.send(Ok(()));
                }
                if !old_told
                    && !inner.cfg.observer
                    && let Some(key) = old_layout(&mut client.clone()).await
                {
                    tracing::warn!(
                        "etcd holds `{}`, written by an agent of an older tend: the two key layouts do not see each \
                         other's map entries, candidacies or exports. Upgrade tend on every host of the cluster; \
                         the old layout's keys go with the old agents' sessions",
                        quote(&key)
                    );
                    old_told = true;
                }
                let end = if inner.cfg.observer {
                    keep_checking(&inner, client).await
                } else {
                    keep_alive(&inner, client, id).await
                };
                inner.session.send_replace(None);
                match end {
                    Lapse::Stopped => return,
                    Lapse::Expired => {
                        lease = None;
                        "the session's lease expired".to_string()
                    }
                    Lapse::Lost(e) => e,
                }
            }
            Err(Refused::Duplicate(msg)) => {
                if let Some(f) = first.take() {
                    let _ = f.send(Err(WorldError::NameTaken(msg)));
                    return;
                }
                if !duplicate_told {
                    tracing::error!("{msg}; this agent stays off the world until the name is free");
                    duplicate_told = true;
                }
                backoff = MAX_BACKOFF;
                "the host name is taken".to_string()
            }
            Err(Refused::Lasting(lasting)) => {
                let error = lasting.error(&inner);
                let line = error.to_string();
                if let Some(f) = first.take() {
                    let _ = f.send(Err(error));
                    return;
                }
                if told.as_ref() != Some(&line) {
                    tracing::error!("{line}; converging locally and trying again");
                    told = Some(line.clone());
                }
                backoff = MAX_BACKOFF;
                line
            }
            Err(Refused::Down(e)) => e,
        };
        inner.went(false, &why);
        if !inner.pause(backoff).await {
            return;
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Connects, gets a lease (the old one if it is still alive), claims the host name and
/// re-asserts what this host owns.
async fn establish(inner: &Inner, lease: Option<i64>) -> Result<(Client, i64), Refused> {
    let identity = inner.cfg.tls.as_ref().is_some_and(|t| t.identity.is_some());
    establish_session(inner, lease).await.map_err(|refusal| match refusal {
        Refused::Lasting(Lasting::Tls(problem)) if problem.needs_identity() && !identity => {
            Refused::Down("the connection was closed".into())
        }
        other => other,
    })
}

async fn establish_session(inner: &Inner, lease: Option<i64>) -> Result<(Client, i64), Refused> {
    let mut client = dial(&inner.cfg.dial_urls(), inner.cfg.tls.as_ref()).await?;
    if inner.cfg.observer {
        // A linearizable read proves the cluster has a quorum.
        tokio::time::timeout(REQUEST, client.get(PREFIX, Some(GetOptions::new().with_keys_only().with_limit(1))))
            .await??;
        return Ok((client, 0));
    }
    let sent = Instant::now();
    let alive = match lease {
        Some(id) => {
            let ttl = tokio::time::timeout(REQUEST, client.lease_time_to_live(id, None)).await??.ttl();
            (ttl > 0).then_some((id, ttl))
        }
        None => None,
    };
    let (id, ttl) = match alive {
        Some(alive) => alive,
        None => (tokio::time::timeout(REQUEST, client.lease_grant(inner.cfg.ttl, None)).await??.id(), inner.cfg.ttl),
    };
    inner.renewed(sent, ttl);
    claim(inner, &mut client, id).await?;
    let owned: Vec<(String, (String, bool))> = lock(&inner.owned).iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    for (key, (value, leased)) in owned {
        tokio::time::timeout(REQUEST, put_if_changed(&mut client, &key, Some(&value), leased.then_some(id))).await??;
    }
    let disowned: Vec<String> = lock(&inner.disowned).iter().cloned().collect();
    for key in disowned {
        tokio::time::timeout(REQUEST, put_if_changed(&mut client, &key, None, None)).await??;
        lock(&inner.disowned).remove(&key);
    }
    Ok((client, id))
}

/// A key of tend's old layout ([`keys::OLD_LAYOUT`]) if etcd holds any: an agent of an
/// older tend is (or was lately) in the cluster.
pub(super) async fn old_layout(client: &mut Client) -> Option<String> {
    let gets = keys::OLD_LAYOUT
        .map(|dir| TxnOp::get(dir, Some(GetOptions::new().with_prefix().with_keys_only().with_limit(1))));
    let resp = tokio::time::timeout(REQUEST, client.txn(Txn::new().and_then(gets))).await.ok()?.ok()?;
    resp.op_responses().into_iter().find_map(|op| match op {
        TxnOpResponse::Get(get) => get.kvs().first().and_then(|kv| kv.key_str().ok()).map(str::to_string),
        _ => None,
    })
}

/// A client of the cluster at `seeds` (over TLS with `tls`), its files read now: renewed
/// certificates are picked up at the next connection, without a restart.
pub(super) async fn dial(seeds: &[String], tls: Option<&Tls>) -> Result<Client, Refused> {
    dial_to(seeds, tls, true).await
}

/// [`dial`], where `leader` says whether requests need the cluster to have a leader (a
/// member's own status does not).
pub(super) async fn dial_to(seeds: &[String], tls: Option<&Tls>, leader: bool) -> Result<Client, Refused> {
    let mut options = ConnectOptions::new()
        .with_connect_timeout(REQUEST)
        .with_keep_alive(Duration::from_secs(2), Duration::from_secs(2))
        .with_keep_alive_while_idle(true)
        .with_require_leader(leader);
    if let Some(tls) = tls {
        let files = tls.read().map_err(|e| Refused::Lasting(Lasting::Files(e)))?;
        let mut config = etcd_client::TlsOptions::new().ca_certificate(etcd_client::Certificate::from_pem(files.ca));
        if let Some((cert, key)) = files.identity {
            config = config.identity(etcd_client::Identity::from_pem(cert, key));
        }
        options = options.with_tls(config);
    }
    let live = match seeds {
        [_] => seeds.to_vec(),
        _ => vec![answering(seeds, &options).await?],
    };
    Ok(tokio::time::timeout(REQUEST, Client::connect(live, Some(options))).await??)
}

/// The bound on one member's answer when choosing among several.
const PROBE: Duration = Duration::from_secs(2);

/// Of several client URLs, the first to answer whose member has a leader (else the first
/// that answers at all). The client is then made with that URL alone: gRPC's balancer
/// counts a URL where nothing listens as ready and fails the requests it sends there, so
/// one dead seed among three would otherwise keep an agent out. When that member goes,
/// the session lapses and the next dial picks another. None answering: the first error.
async fn answering(seeds: &[String], options: &ConnectOptions) -> Result<String, Refused> {
    use futures::StreamExt;
    let probe = options.clone().with_require_leader(false);
    let mut asked: futures::stream::FuturesUnordered<_> = seeds
        .iter()
        .map(|seed| {
            let probe = probe.clone();
            async move {
                let ask = async {
                    let mut client = Client::connect([seed.as_str()], Some(probe)).await?;
                    client.status().await
                };
                (seed, tokio::time::timeout(PROBE, ask).await)
            }
        })
        .collect();
    let mut leaderless = None;
    let mut first_error = None;
    while let Some((seed, answer)) = asked.next().await {
        match answer {
            Ok(Ok(status)) if status.leader() != 0 => return Ok(seed.clone()),
            Ok(Ok(_)) => {
                leaderless.get_or_insert_with(|| seed.clone());
            }
            Ok(Err(e)) => {
                first_error.get_or_insert(Refused::from(e));
            }
            Err(_) => {
                first_error.get_or_insert(Refused::Down(format!("{seed} does not answer")));
            }
        }
    }
    leaderless.ok_or_else(|| first_error.unwrap_or_else(|| Refused::Down("no seed answers".into())))
}

/// Where the agent remembers its session's lease.
fn lease_file(inner: &Inner) -> PathBuf {
    inner.cfg.state_dir.join("world").join(format!("etcd-lease-{}", crate::escape(&inner.cfg.hostname)))
}

/// Claims `/_tend/hosts/<host>` for lease `id`.
async fn claim(inner: &Inner, client: &mut Client, id: i64) -> Result<(), Refused> {
    let key = keys::host_key(&inner.cfg.hostname);
    let me = format!("{id:x}");
    let before = std::fs::read_to_string(lease_file(inner)).ok().map(|s| s.trim().to_string());
    for _ in 0..3 {
        let txn = Txn::new()
            .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(key.as_str(), me.as_str(), Some(PutOptions::new().with_lease(id)))])
            .or_else([TxnOp::get(key.as_str(), None)]);
        let resp = tokio::time::timeout(REQUEST, client.txn(txn)).await??;
        let holder = match resp.op_responses().into_iter().next() {
            _ if resp.succeeded() => None,
            Some(TxnOpResponse::Get(get)) => get
                .kvs()
                .first()
                .map(|kv| (String::from_utf8_lossy(kv.value()).into_owned(), kv.lease(), kv.mod_revision())),
            _ => None,
        };
        let Some((held_by, held_lease, revision)) = holder else {
            if resp.succeeded() {
                remember(inner, &me);
                return Ok(());
            }
            continue;
        };
        if held_by == me {
            remember(inner, &me);
            return Ok(());
        }
        if !genuine_claim(&held_by, held_lease) {
            // Not an agent's claim (every agent writes its own live lease's id, bound to
            // it): garbage or a forgery. Taken over, if it is still what was read.
            tracing::warn!(
                key = %key,
                value = %quote(&held_by),
                "the host-name claim holds something no agent wrote; taking it over"
            );
            let txn = Txn::new()
                .when([Compare::mod_revision(key.as_str(), CompareOp::Equal, revision)])
                .and_then([TxnOp::delete(key.as_str(), None)]);
            tokio::time::timeout(REQUEST, client.txn(txn)).await??;
            continue;
        }
        if before.as_deref() == Some(held_by.as_str()) {
            // This agent's previous run (killed before it could leave): drop its session
            // and with it everything it owned.
            tracing::info!(lease = %held_by, "removing what this host's previous run left in etcd");
            tokio::time::timeout(REQUEST, client.lease_revoke(held_lease)).await??;
            continue;
        }
        let held_by = quote(&held_by);
        return Err(Refused::Duplicate(format!(
            "host name `{}` is already claimed in etcd by another running agent (session {held_by}); \
             give each agent its own --hostname, or wait for a dead agent's claim to lapse (up to {} s)",
            inner.cfg.hostname, inner.cfg.ttl
        )));
    }
    Err(Refused::Down("the host-name claim kept changing".into()))
}

/// Whether a claim's value is what an agent writes: the id, in hex, of the live lease the
/// key is bound to (a key bound to a lease exists only while the lease lives).
fn genuine_claim(value: &str, lease: i64) -> bool {
    lease != 0 && i64::from_str_radix(value, 16).is_ok_and(|id| id == lease)
}

/// At most 32 characters of a value read from etcd, for a message: a forged key may hold
/// megabytes.
pub(super) fn quote(value: &str) -> String {
    match value.char_indices().nth(32) {
        Some((at, _)) => format!("{}… ({} bytes)", &value[..at], value.len()),
        None => value.to_string(),
    }
}

fn remember(inner: &Inner, lease: &str) {
    let path = lease_file(inner);
    let saved = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| crate::atomic::replace_file(&path, lease.as_bytes()));
    if let Err(e) = saved {
        tracing::warn!(path = %path.display(), error = %e, "cannot record the etcd session");
    }
}

/// How a session ended.
enum Lapse {
    Stopped,
    Expired,
    Lost(String),
}

/// Keeps lease `id` alive (three renewals per TTL) until that fails.
async fn keep_alive(inner: &Inner, mut client: Client, id: i64) -> Lapse {
    let (mut keeper, mut stream) = match tokio::time::timeout(REQUEST, client.lease_keep_alive(id)).await {
        Ok(Ok(pair)) => pair,
        Ok(Err(e)) => return Lapse::Lost(e.to_string()),
        Err(_) => return Lapse::Lost("keep-alive timed out".into()),
    };
    let period = inner.check_period();
    loop {
        if !inner.pause(period).await {
            return Lapse::Stopped;
        }
        let sent = Instant::now();
        if let Err(e) = keeper.keep_alive().await {
            return Lapse::Lost(e.to_string());
        }
        match tokio::time::timeout(period.min(REQUEST), stream.message()).await {
            Ok(Ok(Some(resp))) if resp.ttl() > 0 => {
                inner.latency_us.store(sent.elapsed().as_micros().max(1) as u64, Ordering::Relaxed);
                inner.renewed(sent, resp.ttl());
            }
            Ok(Ok(Some(_))) => return Lapse::Expired,
            Ok(Ok(None)) => return Lapse::Lost("the keep-alive stream ended".into()),
            Ok(Err(e)) => return Lapse::Lost(e.to_string()),
            Err(_) => return Lapse::Lost("keep-alive timed out".into()),
        }
    }
}

/// An observer's session: a linearizable read every third of the TTL, until one fails.
async fn keep_checking(inner: &Inner, mut client: Client) -> Lapse {
    let period = inner.check_period();
    loop {
        if !inner.pause(period).await {
            return Lapse::Stopped;
        }
        let sent = Instant::now();
        let read = client.get(PREFIX, Some(GetOptions::new().with_keys_only().with_limit(1)));
        match tokio::time::timeout(REQUEST, read).await {
            Ok(Ok(_)) => inner.latency_us.store(sent.elapsed().as_micros().max(1) as u64, Ordering::Relaxed),
            Ok(Err(e)) => return Lapse::Lost(e.to_string()),
            Err(_) => return Lapse::Lost("read timed out".into()),
        }
    }
}

impl Inner {
    /// Logs a change of the link (once per transition) and marks the views stale when it
    /// went down.
    fn went(&self, up: bool, why: &str) {
        let mut since = lock(&self.stale_since);
        match (up, since.is_some()) {
            (true, true) => {
                let down = since.and_then(|t| t.elapsed().ok()).unwrap_or_default();
                tracing::info!(host = %self.cfg.hostname, down_ms = down.as_millis() as u64, "joined etcd: the world is live");
                *since = None;
            }
            (false, false) => {
                tracing::warn!(error = %why, "lost etcd: the world's values are stale until it is back");
                *since = Some(SystemTime::now());
                drop(since);
                for tx in lock(&self.followed).values() {
                    tx.send_if_modified(|v| {
                        let was = v.stale;
                        if !was {
                            *v = Arc::new(v.to_stale());
                        }
                        !was
                    });
                }
            }
            _ => {}
        }
    }

    /// The lease was renewed (or granted) by a request sent at `sent`, for `ttl` seconds.
    fn renewed(&self, sent: Instant, ttl: i64) {
        *lock(&self.lease_deadline) = Some(sent + Duration::from_secs(ttl.max(0) as u64));
    }

    /// Waits `period`; false when the agent stops meanwhile.
    pub(super) async fn pause(&self, period: Duration) -> bool {
        tokio::select! {
            _ = tokio::time::sleep(period) => true,
            _ = self.stop.cancelled() => false,
        }
    }

    /// How often the session is renewed (or, for an observer, checked): three times a TTL.
    fn check_period(&self) -> Duration {
        Duration::from_millis((self.cfg.ttl.max(1) as u64) * 1000 / 3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 45, defect 7: only an agent's claim (its live lease's id, bound to that lease)
    /// holds a host name; garbage or a value not bound to its lease is taken over.
    #[test]
    fn a_claim_is_genuine_only_as_an_agent_writes_it() {
        assert!(genuine_claim("7ed6a223a7407608", 0x7ed6a223a7407608));
        assert!(!genuine_claim("7ed6a223a7407608", 0), "bound to no lease");
        assert!(!genuine_claim("7ed6a223a7407608", 0x1234), "bound to another lease");
        assert!(!genuine_claim("garbage", 0x1234));
        assert!(!genuine_claim("", 0));
    }

    /// Issue 45, defect 7: a message quotes at most a short prefix of a value.
    #[test]
    fn values_are_quoted_short() {
        assert_eq!(quote("short"), "short");
        let huge = "x".repeat(1_500_000);
        let quoted = quote(&huge);
        assert!(quoted.len() < 64, "{quoted}");
        assert!(quoted.ends_with("… (1500000 bytes)"), "{quoted}");
    }
}
