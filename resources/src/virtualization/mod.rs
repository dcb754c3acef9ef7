//! The kinds of machines and containers: `virt` (libvirt domains), `virt:network` and its
//! grouped hosts and ranges, `virt:builder`, `nspawn`, `docker:image` and `docker:container`.

pub mod docker;
pub mod docker_container;
pub mod nspawn;
pub mod virt;
pub mod virt_builder;
pub mod virt_network;
