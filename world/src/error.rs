//! Why the world refused something ([`WorldError`]). An outage is not an error: a write the
//! store cannot take now is queued (`Written::Queued`), a read sees a stale view.

use std::path::PathBuf;

/// A request the world refused, by cause; its message is one line for an operator.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WorldError {
    /// No backend was given: `what` says what could not be done (`write key `k` to`).
    #[error("no world store to {0}")]
    NoStore(String),
    /// Deploys are kept by a cluster, and this world is one host's.
    #[error("deploys are kept by a cluster: give --seeds")]
    NeedsCluster,
    /// The configuration cannot join a cluster (a host name it cannot use, no endpoint).
    #[error("{0}")]
    Config(String),
    /// Another live agent holds this host name.
    #[error("{0}")]
    NameTaken(String),
    /// This agent only reads the cluster (`tend why --seeds`): `what` is not written.
    #[error("{0} not written: this agent only observes the cluster")]
    Observer(String),
    /// A TLS connection to etcd failed for a reason that will not pass by itself (a wrong
    /// CA, a certificate etcd refuses): the line says which.
    #[error("{0}")]
    Tls(String),
    /// No member of the cluster can be reached.
    #[error("etcd cannot be reached at {seeds}")]
    Unreachable { seeds: String },
    /// A request got no answer in time.
    #[error("etcd did not answer in time")]
    TimedOut,
    /// A request failed (the client's own words).
    #[error("etcd: {0}")]
    Etcd(String),
    /// etcd answered with an error: `what` was refused for `reason`.
    #[error("etcd refused {what}: {reason}")]
    Refused { what: String, reason: String },
    /// A deploy that must follow deploy `want` found `latest` there.
    #[error(
        "deploy refused: it must follow deploy {want}, but the latest is {latest} (someone deployed meanwhile); \
         look at what changed, then deploy again, or give --force"
    )]
    StaleParent { want: u64, latest: u64 },
    /// Other deploys kept landing first, try after try.
    #[error("other deploys kept landing first; try again")]
    Contended,
    /// A stored deploy cannot be read back whole.
    #[error("deploy {id} is damaged: {why}")]
    Damaged { id: u64, why: String },
    /// The local store's file `path` could not be written.
    #[error("{}: {reason}", path.display())]
    Io { path: PathBuf, reason: String },
}
