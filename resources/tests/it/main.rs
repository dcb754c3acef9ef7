//! The integration tests of `resources`, one binary (each file a module): one link, not one per file.

mod e2e_support;
mod support;

mod augeas;
mod autogroup;
mod aws;
mod bmc;
mod bmc_firmware;
mod dhcp;
mod docker;
mod e2e;
mod engine_corpus;
mod exec;
mod file;
mod file_kinds;
mod file_tree;
mod fwattr;
mod fwupd;
mod hetzner;
mod http;
mod http_client;
mod kinds;
mod net_kinds;
mod packagekit;
mod scale;
mod schedule;
mod sendrecv;
mod svc_dbus;
mod virt_kinds;
