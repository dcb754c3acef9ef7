//! The host as the system-level kinds see it: a root prefix for system paths and small
//! traits for the init system, the package manager, accounts, mounts and the transient
//! hostname, each with a real backend (command-line tools) and an in-memory fake, so tests
//! run against a temporary root without touching the machine. One backend per file:
//! `services`, `packages`, `accounts`, `mounts`, `hostname`; this file holds the [`Machine`].
//!
//! The network (`net`), settings (`gsettings`) and firewall (`firewalld`) backends live in
//! their kinds' modules; `Machine` only holds them.
//! The virtualization and container kinds keep their backend traits (real + fake) in their
//! own modules (`virt`, `virt_network`, `virt_builder`, `nspawn`, `docker`); `Machine` only
//! holds them.
//!
//! The real service backend is [`crate::services::systemd::Systemd`]: systemd over D-Bus (zbus), with
//! job results and change subscriptions, or the [`Systemctl`] backend here when no bus is
//! reachable. The real package backend is dpkg/apt.

use std::path::PathBuf;
use std::sync::Arc;

use engine::ResError;
use tokio_util::sync::CancellationToken;

use crate::util::command::{self, CmdOutput, CmdSpec};

mod accounts;
mod hostname;
mod mounts;
mod package_backend;
mod packagekit;
mod packages;
mod services;

#[cfg(any(test, feature = "fakes"))]
pub use accounts::FakeAccounts;
pub use accounts::{Accounts, ShadowTools, UserInfo, UserSpec};
#[cfg(any(test, feature = "fakes"))]
pub use hostname::FakeHostname;
pub use hostname::{HostnameSetter, Uname};
#[cfg(any(test, feature = "fakes"))]
pub use mounts::FakeMounts;
pub use mounts::{MountTools, Mounter};
pub use package_backend::Chosen;
pub use packagekit::{PackageId, PackageKit};
#[cfg(any(test, feature = "fakes"))]
pub use packages::FakePackages;
pub use packages::{Apt, PackageManager, PkgStatus, Transaction};
#[cfg(any(test, feature = "fakes"))]
pub use services::FakeServices;
pub use services::{ServiceManager, Systemctl, UnitChanges};

/// Everything a host-touching kind needs.
#[derive(Clone)]
pub struct Machine {
    /// Prefix for system paths (`/etc/fstab`, `/proc/sys`, unit directories): `/` on a real
    /// host, a temporary directory in tests.
    pub root: PathBuf,
    pub services: Arc<dyn ServiceManager>,
    pub packages: Arc<dyn PackageManager>,
    pub accounts: Arc<dyn Accounts>,
    pub mounts: Arc<dyn Mounter>,
    pub hostnames: Arc<dyn HostnameSetter>,
    pub net: Arc<dyn crate::network::net::NetLinks>,
    pub settings: Arc<dyn crate::system::gsettings::Settings>,
    pub firewall: Arc<dyn crate::network::firewalld::Firewall>,
    /// Routes, ui inputs and the proxy's upstream of the `http:server` family.
    pub http: Arc<crate::http::Hub>,
    /// Files of the `tftp:server`s.
    pub tftp: Arc<crate::network::tftp::TftpHub>,
    /// Hosts and ranges of the `dhcp:server`s.
    pub dhcp: Arc<crate::network::dhcp::DhcpHub>,
    /// What `value` resources (and `http:server:ui:input`'s `local://` store) keep; the
    /// binary hands the same store to the `value.get*` functions.
    pub values: Arc<crate::basics::value::ValueStore>,
    /// The directories `file` resources have swept of stale temporary files.
    pub temps: Arc<crate::util::fs::TempSweeps>,
    /// libvirt domains (`virt`).
    pub libvirt: Arc<dyn crate::virtualization::virt::Libvirt>,
    /// libvirt networks (`virt:network` and its grouped hosts and ranges).
    pub networks: Arc<dyn crate::virtualization::virt_network::Networks>,
    /// Disk image builds (`virt:builder`).
    pub builder: Arc<dyn crate::virtualization::virt_builder::ImageBuilder>,
    /// systemd-nspawn containers (`nspawn`).
    pub machines: Arc<dyn crate::virtualization::nspawn::Machines>,
    /// The docker daemon (`docker:image`).
    pub docker: Arc<dyn crate::virtualization::docker::Docker>,
    /// What the hosts of a fleet share (`kv`): the binary sets the local store or etcd.
    pub world: Arc<dyn world::World>,
    /// The docker daemon's containers (`docker:container`): `None` reaches the daemon
    /// `$DOCKER_HOST` names, at the resource's `apiversion`.
    pub containers: Option<Arc<dyn crate::virtualization::docker_container::Containers>>,
    /// The directory of the program being run (`deploy:tar` archives it): the binary sets
    /// it, and moves it on with each deploy.
    pub program: Arc<crate::files::deploy_tar::ProgramRoot>,
    /// Where the cloud kinds reach their APIs (`hetzner:vm`).
    pub clouds: Arc<crate::cloud::Endpoints>,
    /// The fwupd daemon (`fwupd:*`): on the system bus, or a test's private one.
    pub fwupd: Arc<crate::firmware::fwupd::Fwupd>,
}

impl Machine {
    /// The machine itself.
    pub fn system() -> Machine {
        Machine {
            root: PathBuf::from("/"),
            services: Arc::new(crate::services::systemd::Systemd::new()),
            packages: Arc::new(Chosen::default()),
            accounts: Arc::new(ShadowTools { root: PathBuf::from("/") }),
            mounts: Arc::new(MountTools),
            hostnames: Arc::new(Uname),
            net: Arc::new(crate::network::net::IpRoute2 { proc_root: PathBuf::from("/") }),
            settings: Arc::new(crate::system::gsettings::GsettingsCli),
            firewall: Arc::new(crate::network::firewalld::FirewallCmd { root: PathBuf::from("/") }),
            http: crate::http::Hub::with_upstream(Arc::new(crate::http::proxy::Curl)),
            tftp: crate::network::tftp::TftpHub::new(),
            dhcp: crate::network::dhcp::DhcpHub::new(),
            values: Arc::default(),
            temps: Arc::default(),
            libvirt: Arc::new(crate::virtualization::virt::Virsh),
            networks: Arc::new(crate::virtualization::virt_network::VirshNetworks),
            builder: Arc::new(crate::virtualization::virt_builder::VirtBuilder),
            machines: Arc::new(crate::virtualization::nspawn::Machinectl),
            docker: Arc::new(crate::virtualization::docker::DockerCli::default()),
            world: Arc::new(world::Detached::new("")),
            program: Arc::default(),
            containers: None,
            clouds: Arc::new(crate::cloud::Endpoints::from_env()),
            fwupd: crate::firmware::fwupd::Fwupd::at(None),
        }
    }

    /// A sandbox under `root` with in-memory fakes for every backend.
    #[cfg(any(test, feature = "fakes"))]
    pub fn sandbox(root: impl Into<PathBuf>) -> Machine {
        let root: PathBuf = root.into();
        Machine {
            world: Arc::new(crate::cluster::world::local(root.join("var/lib/tend"), "sandbox")),
            machines: Arc::new(crate::virtualization::nspawn::FakeMachines::new(&root)),
            root,
            services: Arc::new(FakeServices::default()),
            packages: Arc::new(FakePackages::default()),
            accounts: Arc::new(FakeAccounts::default()),
            mounts: Arc::new(FakeMounts::default()),
            hostnames: Arc::new(FakeHostname::default()),
            net: Arc::new(crate::network::net::FakeNet::default()),
            settings: Arc::new(crate::system::gsettings::FakeSettings::default()),
            firewall: Arc::new(crate::network::firewalld::FakeFirewall::default()),
            http: crate::http::Hub::with_upstream(Arc::new(crate::http::proxy::MemUpstream::default())),
            tftp: crate::network::tftp::TftpHub::new(),
            dhcp: crate::network::dhcp::DhcpHub::new(),
            values: Arc::default(),
            temps: Arc::default(),
            libvirt: Arc::new(crate::virtualization::virt::FakeLibvirt::default()),
            networks: Arc::new(crate::virtualization::virt_network::FakeNetworks::default()),
            builder: Arc::new(crate::virtualization::virt_builder::FakeBuilder::default()),
            docker: Arc::new(crate::virtualization::docker::FakeDocker::default()),
            program: Arc::default(),
            containers: None,
            clouds: Arc::default(),
            fwupd: crate::firmware::fwupd::Fwupd::at(None),
        }
    }

    /// `abs` (an absolute system path) under the root.
    pub fn path(&self, abs: &str) -> PathBuf {
        self.root.join(abs.trim_start_matches('/'))
    }
}

async fn run(argv: &[&str]) -> Result<CmdOutput, ResError> {
    let spec = CmdSpec {
        cmd: argv[0].to_string(),
        args: argv[1..].iter().map(|s| s.to_string()).collect(),
        ..CmdSpec::default()
    };
    command::run(&spec, &CancellationToken::new()).await
}

async fn run_ok(argv: &[&str]) -> Result<CmdOutput, ResError> {
    let out = run(argv).await?;
    if out.success() {
        Ok(out)
    } else {
        Err(ResError::new(format!("`{}` failed: {}", argv.join(" "), out.output.trim())))
    }
}
