//! One module per resource kind (file, exec, print, ...), implementing the engine's
//! resource contract, plus the kinds' declarations for the type checker ([`declare`]), the
//! automatic edges between them ([`autoedges`]), the constructor the interpreter uses
//! ([`build`]) and the glue from the interpreter's resource graph to the engine
//! ([`graph::check`], [`graph::add_autoedges`], [`graph::to_engine`]).
//!
//! Building decodes and type-checks params (unknown fields rejected, naming the field,
//! Go integer widths enforced); semantic checks happen in `Resource::validate`, which the
//! engine skips for hidden resources. Kinds that touch the host beyond plain files (svc,
//! pkg, user, group, mount, cron, hostname, sysctl, ssh:authorized_key, schedule, net, gsettings,
//! firewalld, virt*, nspawn, docker:image) go through
//! [`host::Machine`], which tests replace with a temporary root and in-memory fakes.
//!
//! Kinds: `file`, `exec`, `print`, `test`, `noop`, `value`, `msg`, `timer`, `kv` (local
//! store), `line`, `sysctl`, `hostname` (files + sethostname, not hostnamed), `user` and
//! `group` (shadow tools), `cron` (systemd timer units), `mount` (fstab + mount/umount),
//! `pkg` (dpkg/apt), `svc` (systemd over D-Bus, or systemctl), `net` (iproute2 +
//! networkd file), `gsettings` (the gsettings tool), `firewalld` (firewall-cmd),
//! `consul:kv` (Consul's HTTP API), `virt` (libvirt domains via virsh), `virt:network` with
//! `virt:network:host` / `virt:network:range` grouped into it (virsh net-*), `virt:builder`
//! (virt-builder), `nspawn` (machinectl), `docker:image` (docker CLI), `password`,
//! `json:edit`, `gzip` and `tar`, `ssh:authorized_key`, `schedule` (candidacy in the local
//! world store), the `http:server` family (`http:server`, `:file`, `:flag`, `:proxy` through
//! curl, `:ui`, `:ui:input`; hyper on tokio), `tftp:server` / `tftp:file`, `exit`, `_panic`.
//! `Meta:reverse` works for `file` (regular files; the reversal is kept in memory) and
//! `net`. Not implemented: autogrouping in general (the http and tftp servers find their
//! sub-resources through [`util::registry`]; `virt:network` groups its hosts and ranges),
//! exports, `file`'s `selinux`, the `dhcp:*` kinds.

pub mod account;
pub mod archive;
pub mod autoedge;
pub mod common;
pub mod consul;
pub mod cron;
pub mod docker;
pub mod exec;
pub mod file;
pub mod firewalld;
pub mod graph;
pub mod gsettings;
pub mod hostname;
pub mod http;
pub mod json_edit;
pub mod kind;
pub mod kv;
pub mod line;
pub mod machine;
pub mod mount;
pub mod msg;
pub mod net;
pub mod noop;
pub mod nspawn;
pub mod params;
pub mod password;
pub mod pkg;
pub mod print;
pub mod schedule;
pub mod ssh_key;
pub mod svc;
pub mod sysctl;
pub mod systemd;
pub mod test_res;
pub mod text;
pub mod tftp;
pub mod timer;
pub mod typed;
pub mod util;
pub mod value;
pub mod virt;
pub mod virt_builder;
pub mod virt_network;
pub mod world;

use lang::params::ParamMap;

use engine::Resource;

pub use autoedge::{AutoRes, autoedges, file_path};
pub use common::{payload, value_of};
pub use kind::declare;
pub use machine::Machine;
pub use params::BuildError;

/// Every resource kind, in the order the catalog declares them. A new kind is one module
/// that defines its [`kind::Kind`] and one line here.
pub const KINDS: &[&kind::Kind] = &[
    &file::FILE,
    &exec::EXEC,
    &print::PRINT,
    &test_res::TEST,
    &noop::NOOP,
    &value::VALUE,
    &msg::MSG,
    &timer::TIMER,
    &kv::KV,
    &hostname::HOSTNAME,
    &account::USER,
    &account::GROUP,
    &line::LINE,
    &sysctl::SYSCTL,
    &cron::CRON,
    &mount::MOUNT,
    &pkg::PKG,
    &svc::SVC,
    &virt::VIRT,
    &virt_network::VIRT_NETWORK,
    &virt_network::VIRT_NETWORK_HOST,
    &virt_network::VIRT_NETWORK_RANGE,
    &virt_builder::VIRT_BUILDER,
    &nspawn::NSPAWN,
    &docker::DOCKER_IMAGE,
    &net::NET,
    &gsettings::GSETTINGS,
    &firewalld::FIREWALLD,
    &consul::CONSUL_KV,
    &password::PASSWORD,
    &json_edit::JSON_EDIT,
    &archive::GZIP,
    &archive::TAR,
    &ssh_key::SSH_AUTHORIZED_KEY,
    &schedule::SCHEDULE,
    &password::EXIT,
    &noop::PANIC,
    &http::server::HTTP_SERVER,
    &http::file::HTTP_SERVER_FILE,
    &http::flag::HTTP_SERVER_FLAG,
    &http::proxy::HTTP_SERVER_PROXY,
    &http::ui::HTTP_SERVER_UI,
    &http::ui::HTTP_SERVER_UI_INPUT,
    &tftp::TFTP_SERVER,
    &tftp::TFTP_FILE,
];

/// Builds a resource of `kind` against a fresh real host (its own value store and server
/// registries: resources that must meet are built with one shared [`Machine`] through
/// [`build_with`]).
pub fn build(kind: &str, name: &str, params: &ParamMap) -> Result<Box<dyn Resource>, BuildError> {
    build_with(&Machine::system(), kind, name, params)
}

/// Builds a resource of `kind`; host-touching kinds use `host`'s backends and root.
pub fn build_with(host: &Machine, kind: &str, name: &str, params: &ParamMap) -> Result<Box<dyn Resource>, BuildError> {
    params::Params::new(kind, name, params)?;
    match kind::find(kind) {
        Some(k) => (k.build)(host, name, params),
        None => Err(BuildError {
            kind: kind.to_string(),
            name: name.to_string(),
            field: None,
            message: format!("no resource kind `{kind}` available"),
        }),
    }
}
