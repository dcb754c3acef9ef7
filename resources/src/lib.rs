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
//! [`host::Host`], which tests replace with a temporary root and in-memory fakes.
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
pub mod host;
pub mod hostname;
pub mod http;
pub mod json_edit;
pub mod kv;
pub mod line;
pub mod meta;
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
pub mod schema;
pub mod ssh_key;
pub mod svc;
pub mod sysctl;
pub mod systemd;
pub mod test_res;
pub mod tftp;
pub mod timer;
pub mod util;
pub mod value;
pub mod virt;
pub mod virt_builder;
pub mod virt_network;

use std::collections::BTreeMap;

use engine::Resource;
use lang::value::Value;

pub use autoedge::{AutoRes, autoedges, file_path};
pub use common::{payload, value_of};
pub use host::Host;
pub use meta::meta_from;
pub use params::BuildError;
pub use schema::declare;

/// Builds a resource of `kind` against a fresh real host (its own value store and server
/// registries: resources that must meet are built with one shared [`Host`] through
/// [`build_with`]).
pub fn build(kind: &str, name: &str, params: &BTreeMap<String, Value>) -> Result<Box<dyn Resource>, BuildError> {
    build_with(&Host::system(), kind, name, params)
}

/// Builds a resource of `kind`; host-touching kinds use `host`'s backends and root.
pub fn build_with(
    host: &Host,
    kind: &str,
    name: &str,
    params: &BTreeMap<String, Value>,
) -> Result<Box<dyn Resource>, BuildError> {
    params::Params::new(kind, name, params)?;
    Ok(match kind {
        "file" => Box::new(file::File::build(name, params)?.sweeping(host.temps.clone())),
        "exec" => Box::new(exec::Exec::build(name, params)?),
        "print" => Box::new(print::Print::build(name, params)?),
        "test" => Box::new(test_res::Test::build(name, params)?),
        "noop" => Box::new(noop::Noop::build(name, params)?),
        "value" => Box::new(value::ValueRes::build(host.values.clone(), name, params)?),
        "msg" => Box::new(msg::Msg::build(name, params)?),
        "timer" => Box::new(timer::Timer::build(name, params)?),
        "kv" => Box::new(kv::Kv::build(name, params)?),
        "password" => Box::new(password::Password::build(name, params)?),
        "json:edit" => Box::new(json_edit::JsonEdit::build(name, params)?),
        "gzip" => Box::new(archive::Gzip::build(name, params)?),
        "tar" => Box::new(archive::Tar::build(name, params)?),
        "exit" => Box::new(password::Exit::build(name, params)?),
        "consul:kv" => Box::new(consul::ConsulKv::build(name, params)?),
        "_panic" => Box::new(noop::Panic),
        other => return host.build(other, name, params),
    })
}

/// Builds an engine vertex: the resource plus its decoded metaparams.
pub fn build_vertex(
    host: &Host,
    kind: &str,
    name: &str,
    params: &BTreeMap<String, Value>,
    metas: &[(String, Value)],
) -> Result<engine::Vertex, BuildError> {
    let meta = meta_from(kind, name, metas)?;
    let res = build_with(host, kind, name, params)?;
    Ok(engine::Vertex { key: engine::ResKey::new(kind, name), meta, res })
}
