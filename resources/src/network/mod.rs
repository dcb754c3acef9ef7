//! The kinds of the network: `net` (links and addresses), `firewalld`, and the
//! `tftp:server` and `dhcp:server` families.

pub mod dhcp;
pub mod firewalld;
pub mod net;
pub mod tftp;
