//! The kinds of machines and containers: `virt` (libvirt domains), `virt:network` and its
//! grouped hosts and ranges, `virt:builder`, `nspawn` and `docker:image`.

pub mod docker;
pub mod nspawn;
pub mod virt;
pub mod virt_builder;
pub mod virt_network;
