//! The kinds of the network: `net` (links and addresses), `firewalld`, and the
//! `tftp:server` family.

pub mod firewalld;
pub mod net;
pub mod tftp;
