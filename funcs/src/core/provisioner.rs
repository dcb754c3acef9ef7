//! The `embedded/provisioner/cli` package: the command line of `tend provisioner` as
//! functions (`cli_mac()`, `cli_dns()`, …), which the embedded provisioner module passes
//! on, so its program reads `provisioner.cli_mac()` as mgmt's does. Outside
//! `tend provisioner` they give the command line's defaults.

use super::{pure, str_list};
use crate::api::{CallCtx, FuncResult};
use crate::registry::Registry;
use lang::value::Value;
use std::sync::OnceLock;

/// The package the functions are in.
pub const PACKAGE: &str = "embedded/provisioner/cli";

/// What `tend provisioner`'s command line chose, after its defaults and checks.
#[derive(Clone, Debug)]
pub struct Settings {
    pub interface: String,
    pub network: String,
    pub router: String,
    pub dns: Vec<String>,
    pub prefix: String,
    pub firewalld: bool,
    /// Where the iPXE images are fetched from (empty: not served).
    pub ipxe_iso: String,
    pub ipxe_efi_x86_64: String,
    /// A directory with pxelinux.0 and its modules (empty: install syslinux).
    pub syslinux_root: String,
    /// A directory with shim.efi, shimx64.efi and grubx64.efi (empty: take them out of
    /// the release's packages).
    pub uefi_root: String,
    pub distro: String,
    pub version: String,
    pub arch: String,
    pub flavour: String,
    pub mirror: String,
    pub rsync: String,
    pub mac: String,
    pub ip: String,
    pub bios: bool,
    /// A salted `openssl passwd -6` hash, never the password itself.
    pub password: String,
    pub part: String,
    pub luks: bool,
    pub packages: Vec<String>,
    pub handoff_exec: String,
    pub handoff_code: String,
    pub handoff_module_path: String,
    pub handoff_hostname: String,
    pub bmc_uri: String,
    pub bmc_password_file: String,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            interface: String::new(),
            network: "192.168.42.0/24".into(),
            router: "192.168.42.1/24".into(),
            dns: vec!["8.8.8.8".into(), "1.1.1.1".into()],
            prefix: String::new(),
            firewalld: true,
            ipxe_iso: "https://boot.ipxe.org/ipxe.iso".into(),
            ipxe_efi_x86_64: "https://boot.ipxe.org/x86_64-efi/ipxe.efi".into(),
            syslinux_root: String::new(),
            uefi_root: String::new(),
            distro: "fedora".into(),
            version: String::new(),
            arch: "x86_64".into(),
            flavour: "Workstation".into(),
            mirror: String::new(),
            rsync: String::new(),
            mac: String::new(),
            ip: "192.168.42.13/24".into(),
            bios: false,
            password: String::new(),
            part: String::new(),
            luks: true,
            packages: Vec::new(),
            handoff_exec: String::new(),
            handoff_code: String::new(),
            handoff_module_path: String::new(),
            handoff_hostname: String::new(),
            bmc_uri: String::new(),
            bmc_password_file: String::new(),
        }
    }
}

static CHOSEN: OnceLock<Settings> = OnceLock::new();

/// Sets what the functions give, once, before the program is compiled.
pub fn choose(settings: Settings) {
    let _ = CHOSEN.set(settings);
}

fn chosen() -> &'static Settings {
    static DEFAULT: OnceLock<Settings> = OnceLock::new();
    CHOSEN.get().unwrap_or_else(|| DEFAULT.get_or_init(Settings::default))
}

/// One function per setting: its name, type, flag and value.
macro_rules! settings {
    ($($field:ident: $ty:literal, $flag:literal => |$s:ident| $value:expr;)*) => {
        pub fn register(r: &mut Registry) {
            $(
                pure(
                    r,
                    concat!("embedded/provisioner/cli.cli_", stringify!($field)),
                    concat!("func() ", $ty),
                    $field,
                    concat!("`tend provisioner ", $flag, "`"),
                );
            )*
        }
        $(
            fn $field(_: &CallCtx<'_>, _: &[Value]) -> FuncResult {
                let $s = chosen();
                Ok($value)
            }
        )*
    };
}

settings! {
    interface: "str", "--interface" => |s| Value::str(&s.interface);
    network: "str", "--network" => |s| Value::str(&s.network);
    router: "str", "--router" => |s| Value::str(&s.router);
    dns: "[]str", "--dns" => |s| str_list(&s.dns);
    prefix: "str", "--prefix" => |s| Value::str(&s.prefix);
    firewalld: "bool", "--firewalld" => |s| Value::Bool(s.firewalld);
    ipxe_iso: "str", "--ipxe-iso" => |s| Value::str(&s.ipxe_iso);
    ipxe_efi_x86_64: "str", "--ipxe-efi" => |s| Value::str(&s.ipxe_efi_x86_64);
    syslinux_root: "str", "--syslinux-dir" => |s| Value::str(&s.syslinux_root);
    uefi_root: "str", "--uefi-dir" => |s| Value::str(&s.uefi_root);
    distro: "str", "--distro" => |s| Value::str(&s.distro);
    version: "str", "--dversion" => |s| Value::str(&s.version);
    arch: "str", "--arch" => |s| Value::str(&s.arch);
    flavour: "str", "--flavour" => |s| Value::str(&s.flavour);
    mirror: "str", "--mirror" => |s| Value::str(&s.mirror);
    rsync: "str", "--rsync" => |s| Value::str(&s.rsync);
    mac: "str", "--mac" => |s| Value::str(&s.mac);
    ip: "str", "--ip" => |s| Value::str(&s.ip);
    bios: "bool", "--bios" => |s| Value::Bool(s.bios);
    password: "str", "--password (the salted hash)" => |s| Value::str(&s.password);
    part: "str", "--part" => |s| Value::str(&s.part);
    luks: "bool", "--luks" => |s| Value::Bool(s.luks);
    packages: "[]str", "--packages" => |s| str_list(&s.packages);
    handoff_exec: "str", "--handoff-exec" => |s| Value::str(&s.handoff_exec);
    handoff_code: "str", "--handoff-code" => |s| Value::str(&s.handoff_code);
    handoff_module_path: "str", "--handoff-module-path" => |s| Value::str(&s.handoff_module_path);
    handoff_hostname: "str", "--handoff-hostname" => |s| Value::str(&s.handoff_hostname);
    bmc_uri: "str", "--bmc-uri" => |s| Value::str(&s.bmc_uri);
    bmc_password_file: "str", "--bmc-password-file" => |s| Value::str(&s.bmc_password_file);
}
