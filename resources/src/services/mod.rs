//! The kinds that run things: `svc` (on systemd, [`systemd`]) and `exec`.

pub mod exec;
pub mod svc;
pub mod systemd;
