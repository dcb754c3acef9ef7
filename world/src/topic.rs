//! What a reader follows in the world ([`Topic`]) and what it sees ([`View`]): the current
//! entries, replaced on every change, marked stale while the store cannot be reached.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use tokio::sync::watch;

/// What a reader follows.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Topic {
    /// One plain key (`world.getval`): the view holds it under its own name, or nothing.
    Val(String),
    /// A mapped namespace (`world.kvlookup`): host name -> that host's value.
    Map(String),
    /// The live candidates of a schedule namespace: host name -> its [`crate::Candidacy`], rendered.
    Candidates(String),
    /// The hosts a schedule namespace chose (`world.schedule`): host name -> "".
    Schedule(String),
    /// Every resource exported to this host or to every host, by any host (this one
    /// included): [`crate::export_entry`]`(kind, from, name)` -> its record.
    Exports,
    /// The latest deploy: `"latest"` -> its id (nothing before the first deploy).
    Deploys,
    /// What each live agent says of itself: host name -> its status record.
    Statuses,
}

impl std::fmt::Display for Topic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Topic::Val(k) => write!(f, "key `{k}`"),
            Topic::Map(ns) => write!(f, "namespace `{ns}`"),
            Topic::Candidates(ns) => write!(f, "the candidates of schedule `{ns}`"),
            Topic::Schedule(ns) => write!(f, "schedule `{ns}`"),
            Topic::Exports => write!(f, "the exported resources"),
            Topic::Deploys => write!(f, "the latest deploy"),
            Topic::Statuses => write!(f, "the agents' statuses"),
        }
    }
}

/// A topic as last seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    pub entries: BTreeMap<String, String>,
    /// The store's revision the entries were read at (0 for the local store).
    pub revision: i64,
    /// Set while the store cannot be reached: the entries are the last ones seen.
    pub stale: bool,
    /// False until the store was read once: the entries are not known yet (a writer that
    /// compares with the stored value waits for a view that was read).
    pub read: bool,
    /// When the entries were last known to be current.
    pub confirmed: SystemTime,
}

impl View {
    /// A fresh view of `entries` at `revision`.
    pub fn fresh(entries: BTreeMap<String, String>, revision: i64) -> View {
        View { entries, revision, stale: false, read: true, confirmed: SystemTime::now() }
    }

    /// Nothing known yet: the view before the store was ever read.
    pub fn unknown() -> View {
        View { entries: BTreeMap::new(), revision: 0, stale: true, read: false, confirmed: SystemTime::UNIX_EPOCH }
    }

    /// The same entries, marked stale (`confirmed` keeps when they were last current).
    pub fn to_stale(&self) -> View {
        View { stale: true, ..self.clone() }
    }

    /// How the view reads in a report: `current (revision 42, seen 1.2 s ago)`, or stale,
    /// or never read.
    pub fn describe(&self) -> String {
        let ago = |t: SystemTime| t.elapsed().map(|d| d.as_secs_f64()).unwrap_or(0.0);
        if !self.read {
            return "never read: the store was not reached".into();
        }
        let revision = if self.revision > 0 { format!("revision {}, ", self.revision) } else { String::new() };
        if self.stale {
            format!("STALE ({revision}last known current {:.1} s ago; the store is unreachable)", ago(self.confirmed))
        } else {
            format!("current ({revision}seen {:.1} s ago)", ago(self.confirmed))
        }
    }
}

/// A followed topic: the current view, replaced on every change.
pub type Follow = watch::Receiver<Arc<View>>;
