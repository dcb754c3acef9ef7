//! The world: what the hosts running one program share (mgmt's `World`). Functions read it
//! (`world.getval`, `world.kvlookup`, `world.schedule`, collected exports) and resources
//! write it (`kv`, `schedule`, exports, deploys) through one contract, [`World`]; the
//! binary picks the backend with [`connect`]: the [`LocalWorld`] under the state directory
//! (one host), or an etcd cluster (`--seeds`, the `etcd` feature). Values are strings; what
//! they mean is the caller's.
//!
//! Reading is following: [`World::follow`] gives a watch channel holding the topic's
//! current [`View`], replaced on every change. A view says whether it is known to be
//! current: while the backend cannot reach its store, followers keep the last view,
//! marked stale, and get a fresh one once the store is back.
//!
//! Writing never fails because the store is away: a write the backend cannot make now is
//! [`Written::Queued`] and made when the store is back (the backend re-asserts what this
//! host owns, and its followers see a fresh view, so resources check again).
//!
//! This crate depends on no other crate of the workspace: the engine knows no world, and
//! the language, functions and resources see only this contract.

mod api;
mod atomic;
pub mod bundle;
mod connect;
mod detached;
mod digest;
mod error;
mod escape;
#[cfg(feature = "etcd")]
pub mod etcd;
mod export;
pub mod local;
pub mod pki;
mod recorded;
mod schedule;
pub mod signing;
mod tls;
mod topic;
pub mod watch;

pub use api::{Health, World, Written};
pub use bundle::{Bundle, Deploy, Parent};
pub use connect::{Config, Endpoints, connect, valid_hostname};
pub use detached::Detached;
pub use error::WorldError;
pub use escape::{escape, unescape};
pub use export::{Export, export_entry, parse_export_entry, reaches};
pub use local::LocalWorld;
pub use recorded::{Recorded, Seen};
pub use schedule::{Candidacy, choose};
pub use tls::{Tls, check_seeds};
pub use topic::{Follow, Topic, View};
