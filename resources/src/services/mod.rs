//! The kinds that run things: `svc` (on systemd, [`systemd`]), `exec`, and `remote` (this
//! binary on another host, over SSH).

pub mod exec;
pub mod remote;
pub mod svc;
pub mod systemd;
