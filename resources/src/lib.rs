//! The resource kinds (file, exec, print, ...), each implementing the engine's resource
//! contract, grouped by domain (`files`, `system`, `services`, `network`,
//! `virtualization`, `http`, `cluster`, `basics`); apart from them, the kind contract
//! ([`contract`]: the kinds' declarations for the type checker, [`declare`], the
//! automatic edges, [`autoedges`], and the bridge from the interpreter's resource graph to
//! the engine, [`contract::graph`]), the machine they change ([`machine`]) and what they
//! share ([`util`]). [`build`] is the constructor the interpreter uses.
//!
//! Building decodes and type-checks params (unknown fields rejected, naming the field,
//! Go integer widths enforced); semantic checks happen in `Resource::validate`, which the
//! engine skips for hidden resources. Kinds that touch the host beyond plain files (svc,
//! pkg, user, group, mount, cron, hostname, sysctl, ssh:authorized_key, schedule, net, gsettings,
//! firewalld, virt*, nspawn, docker:image) go through
//! [`machine::Machine`], which tests replace with a temporary root and in-memory fakes.
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
//! `Meta:reverse` works for `file` (regular files; the pending reversal is kept on disk,
//! [`revive`] builds it again after a restart) and `net` (in memory). Autogrouping is
//! [`contract::group`] with each kind's hook (`pkg`: one transaction; the `http:server`
//! routes; `print`, `noop` and `test` as mgmt's); the http and tftp servers still find their
//! sub-resources through [`util::registry`], and `virt:network` groups its hosts and ranges
//! its own way.

pub mod basics;
pub mod cloud;
pub mod cluster;
pub mod contract;
pub mod files;
pub mod firmware;
pub mod http;
pub mod machine;
pub mod network;
pub mod services;
pub mod system;
pub mod util;
pub mod virtualization;

use lang::params::ParamMap;

use engine::Resource;

pub use contract::autoedge::{AutoRes, autoedges, file_path};
pub use contract::common::{payload, value_of};
pub use contract::kind::declare;
pub use contract::params::BuildError;
pub use machine::Machine;

/// Every resource kind, in the order the catalog declares them. A new kind is one module
/// that defines its [`kind::Kind`] and one line here.
pub const KINDS: &[&contract::kind::Kind] = &[
    &files::file::FILE,
    &services::exec::EXEC,
    &basics::print::PRINT,
    &basics::test_res::TEST,
    &basics::noop::NOOP,
    &basics::value::VALUE,
    &basics::msg::MSG,
    &basics::timer::TIMER,
    &cluster::kv::KV,
    &system::hostname::HOSTNAME,
    &system::account::USER,
    &system::account::GROUP,
    &files::line::LINE,
    &system::sysctl::SYSCTL,
    &system::cron::CRON,
    &system::mount::MOUNT,
    &system::pkg::PKG,
    &services::svc::SVC,
    &virtualization::virt::VIRT,
    &virtualization::virt_network::VIRT_NETWORK,
    &virtualization::virt_network::VIRT_NETWORK_HOST,
    &virtualization::virt_network::VIRT_NETWORK_RANGE,
    &virtualization::virt_builder::VIRT_BUILDER,
    &virtualization::nspawn::NSPAWN,
    &virtualization::docker::DOCKER_IMAGE,
    &virtualization::docker_container::DOCKER_CONTAINER,
    &network::net::NET,
    &system::gsettings::GSETTINGS,
    &network::firewalld::FIREWALLD,
    &cluster::consul::CONSUL_KV,
    &system::password::PASSWORD,
    &files::json_edit::JSON_EDIT,
    &files::archive::GZIP,
    &files::archive::TAR,
    &files::deploy_tar::DEPLOY_TAR,
    &files::augeas::AUGEAS,
    &network::dhcp::DHCP_SERVER,
    &network::dhcp::DHCP_HOST,
    &network::dhcp::DHCP_RANGE,
    &services::remote::REMOTE,
    &system::ssh_key::SSH_AUTHORIZED_KEY,
    &cluster::schedule::SCHEDULE,
    &system::password::EXIT,
    &basics::noop::PANIC,
    &http::server::HTTP_SERVER,
    &http::client::HTTP_CLIENT,
    &http::file::HTTP_SERVER_FILE,
    &http::flag::HTTP_SERVER_FLAG,
    &http::proxy::HTTP_SERVER_PROXY,
    &http::ui::HTTP_SERVER_UI,
    &http::ui::HTTP_SERVER_UI_INPUT,
    &network::tftp::TFTP_SERVER,
    &network::tftp::TFTP_FILE,
    &firmware::fwattr::FWATTR,
    &firmware::bmc::BMC_POWER,
    &firmware::bmc_firmware::BMC_FIRMWARE,
    &cloud::hetzner::HETZNER_VM,
    &cloud::aws_ec2::AWS_EC2,
    &firmware::fwupd::FWUPD_DEVICE,
    &firmware::fwupd::FWUPD_REMOTE,
    &firmware::fwupd::FWUPD_SYSTEM,
];

/// Builds a resource of `kind` against a fresh real host (its own value store and server
/// registries: resources that must meet are built with one shared [`Machine`] through
/// [`build_with`]).
pub fn build(kind: &str, name: &str, params: &ParamMap) -> Result<Box<dyn Resource>, BuildError> {
    build_with(&Machine::system(), kind, name, params)
}

/// Builds a resource of `kind`; host-touching kinds use `host`'s backends and root.
/// Builds a pending reversal again from the record its resource gave
/// ([`engine::Resource::record`]: its params), after a restart.
pub fn revive(host: &Machine, key: &engine::ResKey, record: &str) -> Result<Box<dyn Resource>, engine::ResError> {
    let params = lang::exported::params_from_record(record)
        .map_err(|e| engine::ResError::new(format!("{key}: its pending reversal cannot be read: {e}")))?;
    build_with(host, &key.kind, &key.name, &params).map_err(|e| engine::ResError::new(e.to_string()))
}

pub fn build_with(host: &Machine, kind: &str, name: &str, params: &ParamMap) -> Result<Box<dyn Resource>, BuildError> {
    contract::params::Params::new(kind, name, params)?;
    match contract::kind::find(kind) {
        Some(k) => (k.build)(host, name, params),
        None => Err(BuildError {
            kind: kind.to_string(),
            name: name.to_string(),
            field: None,
            message: format!("no resource kind `{kind}` available"),
        }),
    }
}
