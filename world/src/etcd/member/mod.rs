//! A cluster tend forms itself (`tend run --client-urls URL --server-urls URL`): the agent
//! runs the real `etcd` binary as a supervised child ([`process`]) and manages the
//! membership through etcd's own cluster API. The first agent (no `--seeds`) bootstraps a
//! one-member cluster; the others join while the cluster is below its ideal size (stored
//! under [`keys::cluster_size`], so every agent agrees), one at a time; the agent whose
//! member leads removes a member dead for longer than the grace period, never when that
//! would lose quorum; an agent that stops cleanly leaves ([`Membership::leave`]).
//!
//! Membership changes need etcd's root user once its authentication is on: a fleet that
//! forms itself runs on TLS with client certificates, not on per-host roles.

mod process;
mod quorum;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use etcd_client::{Client, Compare, CompareOp, PutOptions, Txn, TxnOp};
use tokio::sync::{Mutex, watch};
use tokio_util::sync::CancellationToken;

use super::keys;
use super::session::{Refused, dial_to};
use crate::{Endpoints, Tls, WorldError};

/// The size a cluster grows to unless told otherwise (as mgmt's).
pub const DEFAULT_IDEAL: u16 = 5;
/// Seconds a member may be unreachable before it is removed, by default and at most.
pub const DEFAULT_GRACE: u64 = 20;
pub const MAX_GRACE: u64 = 60;

/// How often the membership is looked at.
const TICK: Duration = Duration::from_secs(1);
/// The bound on one question to one member (its status).
const PROBE: Duration = Duration::from_secs(1);
/// How long a member started by this agent may take to serve.
const READY: Duration = Duration::from_secs(60);
/// The lease (seconds) on the joining key: a joiner that dies lets the next one in.
const JOIN_TTL: i64 = 30;
/// How long a clean stop keeps asking etcd to remove this member (it refuses while the
/// cluster is not yet healthy after a join or restart).
const LEAVE_TRIES: Duration = Duration::from_secs(15);

/// What an agent that may run a member is given.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The member's name: the host name.
    pub name: String,
    /// Where the member serves clients (`--client-urls`) and its peers (`--server-urls`).
    pub client_urls: Vec<String>,
    pub server_urls: Vec<String>,
    /// Client URLs of the cluster to join; none: bootstrap a new one.
    pub seeds: Vec<String>,
    /// `--ideal-cluster-size`: stored by the first member; the stored value wins.
    pub ideal: Option<u16>,
    /// `--member-grace`.
    pub grace: Duration,
    /// The `etcd` binary.
    pub binary: PathBuf,
    /// The member's directory (its data, and the endpoints last seen) under `--prefix`.
    pub dir: PathBuf,
    /// The PKI of clients and peers alike (`https://` URLs): the CA, and this host's
    /// certificate, which serves the member and authenticates the agent.
    pub tls: Option<Tls>,
}

/// What the agent knows of the membership (for metrics and its status).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberState {
    /// This agent runs a member of the cluster.
    pub member: bool,
    /// Members in the cluster, and how many answered (known to the leader's agent only).
    pub members: usize,
    pub healthy: Option<usize>,
    /// This agent's member leads.
    pub leader: bool,
    pub ideal: usize,
    /// Why a dead member was left in.
    pub note: Option<String>,
}

/// An agent's part in the membership, from [`Membership::start`] to [`Membership::leave`].
pub struct Membership {
    shared: Arc<Shared>,
    task: Option<tokio::task::JoinHandle<()>>,
}

struct Shared {
    cfg: ServerConfig,
    /// The started members' client URLs: given to the world's session.
    endpoints: Endpoints,
    supervisor: Mutex<Option<process::Supervisor>>,
    /// Whether a member runs (what `supervisor` holds, readable without waiting).
    running: AtomicBool,
    stop: CancellationToken,
    state: watch::Sender<MemberState>,
}

impl ServerConfig {
    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The file the endpoints last seen are kept in: a restarted agent given no seeds
    /// finds its cluster again through them.
    fn remembered(&self) -> PathBuf {
        self.dir.join("endpoints")
    }

    fn check(&self) -> Result<(), WorldError> {
        if self.client_urls.is_empty() || self.server_urls.is_empty() {
            return Err(WorldError::Config(
                "--client-urls and --server-urls go together: a member serves clients and its peers".into(),
            ));
        }
        for (flag, urls) in [("--client-urls", &self.client_urls), ("--server-urls", &self.server_urls)] {
            crate::tls::check_seeds(urls, self.tls.as_ref())
                .map_err(|e| WorldError::Config(e.to_string().replace("--seeds", flag)))?;
            if let Some(bad) = urls.iter().find(|u| u.contains("://0.0.0.0") || u.contains("://[::]")) {
                return Err(WorldError::Config(format!(
                    "{flag} {bad}: other members and agents dial this URL, so it must name an address they reach, \
                     not a wildcard"
                )));
            }
        }
        if let Some(tls) = &self.tls
            && tls.identity.is_none()
        {
            return Err(WorldError::Config(
                "a member over TLS needs --cert and --key: the certificate serves its clients and peers (issue it \
                 with `tend pki issue DIR HOST --ip ADDR`)"
                    .into(),
            ));
        }
        if self.grace.as_secs() > MAX_GRACE {
            return Err(WorldError::Config(format!("--member-grace is at most {MAX_GRACE} s")));
        }
        Ok(())
    }

    /// etcd's command line for this member: a new cluster (`existing` false) or one to
    /// join, with `initial` its `--initial-cluster`.
    fn args(&self, existing: bool, initial: &str) -> Vec<OsString> {
        let mut args: Vec<OsString> = Vec::new();
        let mut push = |flag: &str, value: &str| {
            args.push(flag.into());
            args.push(value.into());
        };
        push("--name", &self.name);
        push("--data-dir", &self.data().to_string_lossy());
        push("--listen-client-urls", &self.client_urls.join(","));
        push("--advertise-client-urls", &self.client_urls.join(","));
        push("--listen-peer-urls", &self.server_urls.join(","));
        push("--initial-advertise-peer-urls", &self.server_urls.join(","));
        push("--initial-cluster", initial);
        push("--initial-cluster-state", if existing { "existing" } else { "new" });
        push("--initial-cluster-token", "tend");
        push("--logger", "zap");
        push("--log-outputs", "stderr");
        if let Some(tls) = &self.tls {
            let ca = tls.ca.to_string_lossy().into_owned();
            if let Some((cert, key)) = &tls.identity {
                let (cert, key) = (cert.to_string_lossy().into_owned(), key.to_string_lossy().into_owned());
                push("--cert-file", &cert);
                push("--key-file", &key);
                push("--peer-cert-file", &cert);
                push("--peer-key-file", &key);
            }
            push("--trusted-ca-file", &ca);
            push("--peer-trusted-ca-file", &ca);
            args.push("--client-cert-auth".into());
            args.push("--peer-client-cert-auth".into());
        }
        args
    }

    /// `name=peer` for each of this member's peer URLs.
    fn initial_self(&self) -> String {
        self.server_urls.iter().map(|u| format!("{}={u}", self.name)).collect::<Vec<_>>().join(",")
    }

    fn is_mine(&self, member: &etcd_client::Member) -> bool {
        member.peer_urls().iter().any(|u| self.server_urls.contains(u))
    }
}

impl Membership {
    /// Starts this agent's part: the member on its data if it has some (and the cluster
    /// still counts it), else a new cluster without seeds, else a join when the cluster is
    /// below its ideal size (else the agent is a client, and joins when a place frees).
    /// Then watches the membership until [`Membership::leave`].
    pub async fn start(cfg: ServerConfig) -> Result<Membership, WorldError> {
        cfg.check()?;
        std::fs::create_dir_all(&cfg.dir)
            .map_err(|e| WorldError::Io { path: cfg.dir.clone(), reason: e.to_string() })?;
        let shared = Arc::new(Shared {
            endpoints: Endpoints::default(),
            supervisor: Mutex::new(None),
            running: AtomicBool::new(false),
            stop: CancellationToken::new(),
            state: watch::channel(MemberState::default()).0,
            cfg,
        });
        shared.begin().await?;
        let task = tokio::spawn(shared.clone().keep());
        Ok(Membership { shared, task: Some(task) })
    }

    /// The URLs the agent's world session dials: its own member's first.
    pub fn seeds(&self) -> Vec<String> {
        let mut seeds = self.shared.known();
        // Its own member first, when it runs one.
        seeds.sort_by_key(|u| !self.shared.cfg.client_urls.contains(u));
        seeds
    }

    /// The members' client URLs, kept current: for the world's session.
    pub fn endpoints(&self) -> Endpoints {
        self.shared.endpoints.clone()
    }

    pub fn state(&self) -> watch::Receiver<MemberState> {
        self.shared.state.subscribe()
    }

    /// A clean stop: removes this member from the cluster when that keeps quorum (the
    /// last member stays, with its data), then stops it.
    pub async fn leave(mut self) {
        self.shared.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        let Some(supervisor) = self.shared.supervisor.lock().await.take() else { return };
        let removed = self.shared.remove_self().await;
        supervisor.stop().await;
        if removed {
            let _ = std::fs::remove_dir_all(self.shared.cfg.data());
        }
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        self.shared.stop.cancel();
    }
}

/// The client URLs in `path` (one per line); none when it is missing.
fn remembered(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path).map(|s| s.lines().map(str::to_string).collect()).unwrap_or_default()
}

/// One request bounded in time, its error in words.
async fn ask<T>(request: impl Future<Output = Result<T, etcd_client::Error>>) -> Result<T, String> {
    match tokio::time::timeout(super::REQUEST, request).await {
        Ok(Ok(t)) => Ok(t),
        Ok(Err(e)) => Err(crate::tls::chain(&e)),
        Err(_) => Err("no answer".into()),
    }
}

fn refusal(r: Refused) -> String {
    match r {
        Refused::Down(e) => e,
        Refused::Duplicate(e) => e,
        Refused::Lasting(_) => "refused (TLS or authentication)".into(),
    }
}

impl Shared {
    async fn dial(&self, urls: &[String], leader: bool) -> Result<Client, String> {
        dial_to(urls, self.cfg.tls.as_ref(), leader).await.map_err(refusal)
    }

    /// Every URL this agent knows the cluster by, its own member's only while it runs
    /// (a client dialing a URL where nothing listens may fail to connect at all).
    fn known(&self) -> Vec<String> {
        let running = self.running.load(Ordering::SeqCst);
        let mut urls: Vec<String> = Vec::new();
        let learnt = self.endpoints.get().into_iter().chain(self.cfg.seeds.iter().cloned());
        for url in learnt.chain(remembered(&self.cfg.remembered())).chain(self.cfg.client_urls.iter().cloned()) {
            let own = self.cfg.client_urls.contains(&url);
            if !urls.contains(&url) && (running || !own) {
                urls.push(url);
            }
        }
        urls
    }

    async fn begin(&self) -> Result<(), WorldError> {
        let cfg = &self.cfg;
        let has_data = cfg.data().join("member").is_dir();
        let others: Vec<String> = self.known().into_iter().filter(|u| !cfg.client_urls.contains(u)).collect();
        if has_data && !others.is_empty() {
            // A member removed while this agent was away never starts on that data again.
            if let Ok(mut client) = self.dial(&others, true).await
                && let Ok(list) = ask(client.member_list()).await
                && !list.members().iter().any(|m| cfg.is_mine(m))
            {
                tracing::warn!(
                    member = %cfg.name,
                    "this member was removed from the cluster while the agent was away: joining it anew"
                );
                let _ = std::fs::remove_dir_all(cfg.data());
                return self.try_join().await.map(drop);
            }
        }
        if has_data {
            tracing::info!(member = %cfg.name, "starting the member on its data");
            self.run_member(true, &cfg.initial_self()).await?;
            return Ok(());
        }
        if others.is_empty() {
            tracing::info!(member = %cfg.name, "bootstrapping a new cluster");
            self.run_member(false, &cfg.initial_self()).await?;
            let mut client = self.dial(&cfg.client_urls, true).await.map_err(WorldError::Etcd)?;
            let ideal = cfg.ideal.unwrap_or(DEFAULT_IDEAL).to_string();
            let key = keys::cluster_size();
            let store = Txn::new()
                .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
                .and_then([TxnOp::put(key.as_str(), ideal, None)]);
            ask(client.txn(store)).await.map_err(WorldError::Etcd)?;
            return Ok(());
        }
        self.try_join().await.map(drop)
    }

    /// Starts the member (`existing`: joining a cluster that has it as a member) and waits
    /// until it serves.
    async fn run_member(&self, existing: bool, initial: &str) -> Result<(), WorldError> {
        let cfg = &self.cfg;
        let supervisor = process::start(cfg.binary.clone(), cfg.args(existing, initial), cfg.name.clone())?;
        *self.supervisor.lock().await = Some(supervisor);
        self.running.store(true, Ordering::SeqCst);
        let began = Instant::now();
        loop {
            if let Ok(mut client) = self.dial(&cfg.client_urls, false).await
                && ask(client.status()).await.is_ok()
            {
                tracing::info!(member = %cfg.name, ms = began.elapsed().as_millis() as u64, "the member serves");
                return Ok(());
            }
            if began.elapsed() > READY {
                return Err(WorldError::Etcd(format!(
                    "the etcd member started for {} does not answer at {} after {} s (its errors are in the log)",
                    cfg.name,
                    cfg.client_urls.join(","),
                    READY.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Adds this agent as a member when the cluster is below its ideal size and nobody
    /// else is joining. `Ok(false)`: it stays a client (for now).
    async fn try_join(&self) -> Result<bool, WorldError> {
        let cfg = &self.cfg;
        let Ok(mut client) = self.dial(&self.known(), true).await else { return Ok(false) };
        let Ok(lease) = ask(client.lease_grant(JOIN_TTL, None)).await else { return Ok(false) };
        let key = keys::cluster_joining();
        let take = Txn::new()
            .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(key.as_str(), cfg.name.as_str(), Some(PutOptions::new().with_lease(lease.id())))]);
        let held = matches!(ask(client.txn(take)).await, Ok(t) if t.succeeded());
        let joined = if held { self.join_holding(&mut client).await } else { Ok(false) };
        if held {
            let _ = ask(client.delete(key.as_str(), None)).await;
        }
        let _ = ask(client.lease_revoke(lease.id())).await;
        joined
    }

    async fn join_holding(&self, client: &mut Client) -> Result<bool, WorldError> {
        let cfg = &self.cfg;
        let Ok(list) = ask(client.member_list()).await else { return Ok(false) };
        let ideal = ideal_size(client, cfg.ideal).await;
        let mut members: Vec<etcd_client::Member> = list.members().to_vec();
        if !members.iter().any(|m| cfg.is_mine(m)) {
            let unstarted = members.iter().filter(|m| m.name().is_empty()).count();
            if !quorum::should_join(members.len(), unstarted, ideal) {
                return Ok(false);
            }
            match ask(client.member_add(cfg.server_urls.clone(), None)).await {
                Ok(added) => members = added.member_list().to_vec(),
                Err(e) => {
                    tracing::info!(member = %cfg.name, "etcd did not add this member ({e}); trying again later");
                    return Ok(false);
                }
            }
            tracing::info!(member = %cfg.name, members = members.len(), "added as a member");
        }
        // Every member by name and peer URLs; this one (maybe not started yet) by ours.
        let initial: Vec<String> = members
            .iter()
            .flat_map(|m| {
                let name = if cfg.is_mine(m) { cfg.name.clone() } else { m.name().to_string() };
                m.peer_urls().iter().map(move |u| format!("{name}={u}")).collect::<Vec<_>>()
            })
            .collect();
        self.run_member(true, &initial.join(",")).await?;
        Ok(true)
    }

    /// Asks the cluster to remove this member, if that keeps quorum; true once removed.
    async fn remove_self(&self) -> bool {
        let cfg = &self.cfg;
        let began = Instant::now();
        let mut said = String::new();
        while began.elapsed() < LEAVE_TRIES {
            match self.try_leave().await {
                Leave::Done => {
                    tracing::info!(member = %cfg.name, "left the cluster");
                    return true;
                }
                Leave::Last => {
                    tracing::info!(
                        member = %cfg.name,
                        "the last member stays in the cluster with its data: a restart serves it again"
                    );
                    return false;
                }
                Leave::Again(why) => {
                    if why != said {
                        tracing::info!(member = %cfg.name, "leaving the cluster: {why}; trying again");
                        said = why;
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        tracing::warn!(
            member = %cfg.name,
            "stopping without leaving the cluster ({said}): the others remove this member after their grace period"
        );
        false
    }

    async fn try_leave(&self) -> Leave {
        let cfg = &self.cfg;
        let others: Vec<String> = self.endpoints.get().into_iter().filter(|u| !cfg.client_urls.contains(u)).collect();
        let urls: Vec<String> = others.iter().chain(&cfg.client_urls).cloned().collect();
        let mut client = match self.dial(&urls, true).await {
            Ok(c) => c,
            Err(e) => return Leave::Again(e),
        };
        let list = match ask(client.member_list()).await {
            Ok(l) => l,
            Err(e) => return Leave::Again(e),
        };
        let Some(me) = list.members().iter().find(|m| cfg.is_mine(m)) else { return Leave::Done };
        let others: Vec<&etcd_client::Member> = list.members().iter().filter(|m| m.id() != me.id()).collect();
        if others.is_empty() {
            return Leave::Last;
        }
        let answers = futures::future::join_all(others.iter().map(|m| self.healthy(m))).await;
        let healthy = answers.into_iter().filter(|up| *up).count();
        if !quorum::may_remove(list.members().len(), healthy) {
            return Leave::Again(format!(
                "leaving would lose quorum: {healthy} of the {} other members answer",
                others.len()
            ));
        }
        match ask(client.member_remove(me.id())).await {
            Ok(_) => Leave::Done,
            Err(e) => Leave::Again(format!("etcd refused: {e}")),
        }
    }

    /// Whether member `m` serves (started and answering its status).
    async fn healthy(&self, m: &etcd_client::Member) -> bool {
        !m.name().is_empty() && status_of(m.client_urls(), self.cfg.tls.as_ref()).await.is_some()
    }

    /// Watches the membership until stopped: keeps the endpoints current, joins when a
    /// place frees, and, as the leader's agent, removes members dead past the grace.
    async fn keep(self: Arc<Self>) {
        let mut client: Option<Client> = None;
        let mut dead_since: HashMap<u64, Instant> = HashMap::new();
        // The note last published (`None`: none yet, so the first round clears an old one).
        let mut told: Option<Option<String>> = None;
        loop {
            tokio::select! {
                _ = self.stop.cancelled() => return,
                _ = tokio::time::sleep(TICK) => {}
            }
            self.after_removal().await;
            if client.is_none() {
                client = self.dial(&self.known(), true).await.ok();
            }
            let Some(c) = client.as_mut() else { continue };
            let Ok(list) = ask(c.member_list()).await else {
                client = None;
                continue;
            };
            let members: Vec<etcd_client::Member> = list.members().to_vec();
            self.remember(&members);
            let ideal = ideal_size(c, self.cfg.ideal).await;
            let running = self.supervisor.lock().await.is_some();
            let mine = members.iter().find(|m| self.cfg.is_mine(m)).map(etcd_client::Member::id);
            let mut state = MemberState { member: running, members: members.len(), ideal, ..MemberState::default() };
            if let (true, Some(me)) = (running, mine) {
                state.leader = self.leads(me).await;
                if state.leader {
                    let (healthy, note) = self.reap(c, &members, me, &mut dead_since).await;
                    state.healthy = Some(healthy);
                    if told.as_ref() != Some(&note) {
                        self.publish_note(c, note.as_deref()).await;
                        told = Some(note.clone());
                    }
                    state.note = note;
                }
            } else if !running {
                let unstarted = members.iter().filter(|m| m.name().is_empty()).count();
                if quorum::should_join(members.len(), unstarted, ideal) {
                    match self.try_join().await {
                        Ok(true) => tracing::info!(member = %self.cfg.name, "promoted: this agent now runs a member"),
                        Ok(false) => {}
                        Err(e) => tracing::warn!(member = %self.cfg.name, "joining the cluster failed: {e}"),
                    }
                }
            }
            self.state.send_if_modified(|s| {
                let changed = *s != state;
                *s = state;
                changed
            });
        }
    }

    /// After etcd said this member was removed: its data goes, and the agent is a client
    /// until it joins again.
    async fn after_removal(&self) {
        let mut supervisor = self.supervisor.lock().await;
        let removed = supervisor.as_ref().is_some_and(|s| s.ended().borrow().is_some());
        if removed && let Some(s) = supervisor.take() {
            self.running.store(false, Ordering::SeqCst);
            s.stop().await;
            let _ = std::fs::remove_dir_all(self.cfg.data());
            tracing::warn!(member = %self.cfg.name, "the cluster removed this member: a client now, joining again when a place frees");
        }
    }

    /// Keeps the started members' client URLs for the session and for a restart.
    fn remember(&self, members: &[etcd_client::Member]) {
        let urls: Vec<String> = members.iter().flat_map(|m| m.client_urls().iter().cloned()).collect();
        if urls.is_empty() || urls == self.endpoints.get() {
            return;
        }
        self.endpoints.set(urls.clone());
        let _ = crate::atomic::replace_file(&self.cfg.remembered(), (urls.join("\n") + "\n").as_bytes());
    }

    /// Whether member `me` (this agent's) is the leader, as it says itself.
    async fn leads(&self, me: u64) -> bool {
        status_of(&self.cfg.client_urls, self.cfg.tls.as_ref()).await.is_some_and(|s| s.leader() == me)
    }

    /// The leader's agent's round: probes every other member, removes one unreachable
    /// past the grace when that keeps quorum, says why when it does not. Returns how many
    /// members answer, and the note.
    async fn reap(
        &self,
        client: &mut Client,
        members: &[etcd_client::Member],
        me: u64,
        dead_since: &mut HashMap<u64, Instant>,
    ) -> (usize, Option<String>) {
        let others: Vec<&etcd_client::Member> = members.iter().filter(|m| m.id() != me).collect();
        let answers = futures::future::join_all(others.iter().map(|m| self.healthy(m))).await;
        let mut healthy = 1;
        let mut dead = Vec::new();
        for (m, up) in others.into_iter().zip(answers) {
            if up {
                healthy += 1;
                dead_since.remove(&m.id());
            } else {
                let since = *dead_since.entry(m.id()).or_insert_with(Instant::now);
                dead.push((m, since));
            }
        }
        dead_since.retain(|id, _| members.iter().any(|m| m.id() == *id));
        // A member added but not started yet is being joined while its agent holds the
        // joining key: not dead.
        let joining = match ask(client.get(keys::cluster_joining(), None)).await {
            Ok(r) => !r.kvs().is_empty(),
            Err(_) => true,
        };
        let mut note = None;
        for (m, since) in dead {
            if since.elapsed() < self.cfg.grace || (joining && m.name().is_empty()) {
                continue;
            }
            let name = if m.name().is_empty() { format!("{:x} (never started)", m.id()) } else { m.name().to_string() };
            let down = since.elapsed().as_secs();
            if !quorum::may_remove(members.len(), healthy) {
                let why = format!(
                    "member {name} unreachable for {down} s is not removed: {healthy} of {} members answer, and \
                     removing it would leave no quorum",
                    members.len()
                );
                tracing::warn!("{why}");
                note = Some(why);
                continue;
            }
            match ask(client.member_remove(m.id())).await {
                Ok(_) => {
                    tracing::warn!(member = %name, down_s = down, "removed a member unreachable past the grace period");
                    dead_since.remove(&m.id());
                    // One change per round: the next sees the new membership.
                    break;
                }
                Err(e) => tracing::info!(member = %name, "etcd did not remove the member yet ({e}); trying again"),
            }
        }
        (healthy, note)
    }

    async fn publish_note(&self, client: &mut Client, note: Option<&str>) {
        let key = keys::cluster_note();
        let _ = match note {
            Some(text) => ask(client.put(key.as_str(), text, None)).await.map(drop),
            None => ask(client.delete(key.as_str(), None)).await.map(drop),
        };
    }
}

/// What one attempt to leave came to.
enum Leave {
    Done,
    /// This is the only member: it stays.
    Last,
    /// Not now, for this reason.
    Again(String),
}

/// What the member serving at `urls` says of itself; `None` when it does not answer
/// within [`PROBE`].
async fn status_of(urls: &[String], tls: Option<&Tls>) -> Option<etcd_client::StatusResponse> {
    if urls.is_empty() {
        return None;
    }
    let probe = async { dial_to(urls, tls, false).await.ok()?.status().await.ok() };
    tokio::time::timeout(PROBE, probe).await.ok().flatten()
}

/// The value at `key`; `None` when there is none or etcd does not answer.
async fn read(client: &mut Client, key: String) -> Option<String> {
    let resp = ask(client.get(key, None)).await.ok()?;
    resp.kvs().first().and_then(|kv| kv.value_str().ok()).map(str::to_string)
}

/// The ideal size stored in the cluster.
async fn stored_size(client: &mut Client) -> Option<usize> {
    read(client, keys::cluster_size()).await?.trim().parse().ok()
}

/// The ideal size stored in the cluster, else `given`, else the default.
async fn ideal_size(client: &mut Client, given: Option<u16>) -> usize {
    stored_size(client).await.unwrap_or(usize::from(given.unwrap_or(DEFAULT_IDEAL)))
}

/// `tend cluster size N`: stores the ideal size every agent follows.
pub async fn set_size(seeds: &[String], tls: Option<&Tls>, size: u16) -> Result<(), WorldError> {
    crate::tls::check_seeds(seeds, tls)?;
    let mut client = dial_to(seeds, tls, true).await.map_err(|r| WorldError::Etcd(refusal(r)))?;
    ask(client.put(keys::cluster_size(), size.to_string(), None)).await.map_err(WorldError::Etcd)?;
    Ok(())
}

/// One member as `tend status` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberView {
    pub name: String,
    pub id: u64,
    pub client_urls: Vec<String>,
    pub peer_urls: Vec<String>,
    pub leader: bool,
    pub healthy: bool,
}

/// The members, the ideal size and the leader's agent's note, for `tend status`.
#[derive(Clone, Debug, Default)]
pub struct Survey {
    pub members: Vec<MemberView>,
    pub ideal: Option<usize>,
    pub note: Option<String>,
}

/// Asks the cluster at `seeds` about its members, each member about itself.
pub async fn survey(seeds: &[String], tls: Option<&Tls>) -> Result<Survey, WorldError> {
    let mut client = dial_to(seeds, tls, false).await.map_err(|r| WorldError::Etcd(refusal(r)))?;
    let list = ask(client.member_list()).await.map_err(WorldError::Etcd)?;
    let statuses = futures::future::join_all(list.members().iter().map(|m| status_of(m.client_urls(), tls))).await;
    let members = list
        .members()
        .iter()
        .zip(statuses)
        .map(|(m, status)| MemberView {
            name: m.name().to_string(),
            id: m.id(),
            client_urls: m.client_urls().to_vec(),
            peer_urls: m.peer_urls().to_vec(),
            leader: status.as_ref().is_some_and(|s| s.leader() == m.id()),
            healthy: status.is_some(),
        })
        .collect();
    let ideal = stored_size(&mut client).await;
    let note = read(&mut client, keys::cluster_note()).await;
    Ok(Survey { members, ideal, note })
}
