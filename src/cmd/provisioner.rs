//! `tend provisioner`: the embedded provisioner module ([`lang::embedded`]) run as a
//! program whose config is this command line. The options are checked here, before
//! anything runs (addresses inside the network, a MAC that is one, a password hash of the
//! right form, handoff code that type-checks), then handed to the program through the
//! `provisioner.cli_*` functions ([`funcs::core::provisioner`]).

mod password;

use crate::cli::{CheckFormat, GraphFormat, ProvisionerArgs, RunArgs};
use crate::compile::WorldUse;
use funcs::core::provisioner::Settings;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub fn run(args: ProvisionerArgs, verbose: u8, hostname: Option<String>, quiet: bool) -> ExitCode {
    let settings = match settings(&args, hostname.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            crate::stderr::line(format_args!("error: provisioner: {e}"));
            return ExitCode::from(2);
        }
    };
    if !quiet {
        describe(&settings);
    }
    funcs::core::provisioner::choose(settings);
    // The program is ours and tiny; it lives as long as this command does.
    let dir = match tempfile::Builder::new().prefix("tend-provisioner-").tempdir() {
        Ok(d) => d,
        Err(e) => {
            crate::stderr::line(format_args!("error: provisioner: cannot make a directory for its program: {e}"));
            return ExitCode::from(2);
        }
    };
    let main = dir.path().join("main.mcl");
    if let Err(e) = std::fs::write(&main, lang::embedded::PROVISIONER_TOP) {
        crate::stderr::line(format_args!("error: provisioner: cannot write `{}`: {e}", main.display()));
        return ExitCode::from(2);
    }
    if args.check {
        return super::check::run(dir.path(), CheckFormat::Human, false, verbose, hostname);
    }
    if args.graph {
        let world = WorldUse { prefix: args.state_dir.clone(), ..WorldUse::default() };
        return super::graph::run(dir.path(), GraphFormat::Text, 10.0, hostname, &world);
    }
    let run = RunArgs {
        path: Some(dir.path().to_path_buf()),
        converged_timeout: args.converged_timeout,
        noop: args.noop,
        prefix: args.state_dir.clone(),
        // The program never changes under us; there is nothing to watch.
        no_watch: true,
        hostname,
        quiet,
        ..RunArgs::defaults()
    };
    super::run::run(run)
}

/// The command line's choices made whole and checked.
fn settings(args: &ProvisionerArgs, hostname: Option<&str>) -> Result<Settings, String> {
    if args.distro != "fedora" {
        return Err(format!("--distro {}: only fedora can be provisioned", args.distro));
    }
    let version = match args.version.as_deref() {
        Some(v) if !v.is_empty() && v.chars().all(|c| c.is_ascii_digit()) => v.to_string(),
        Some(v) => return Err(format!("--dversion {v:?} is not a Fedora version (a number, e.g. 42)")),
        None => return Err("give the Fedora version to install with --dversion (e.g. --dversion 42)".into()),
    };
    let mut flavour = args.flavour.chars();
    if !flavour.next().is_some_and(|c| c.is_ascii_uppercase()) || flavour.any(|c| c.is_ascii_uppercase()) {
        return Err(format!("--flavour {}: a flavour is written in title case (e.g. Workstation)", args.flavour));
    }

    let interface = match &args.interface {
        Some(i) if !i.is_empty() => i.clone(),
        _ => only_wired_interface()?,
    };
    if !args.network.is_empty() {
        let network = cidr("--network", &args.network)?;
        for (flag, value) in [("--router", &args.router), ("--ip", &args.ip)] {
            let (addr, _) = cidr(flag, value)?;
            if !contains(network, addr) {
                return Err(format!("{flag} {value} is not inside --network {}", args.network));
            }
        }
        if cidr("--router", &args.router)?.0 == cidr("--ip", &args.ip)?.0 {
            return Err(format!("--ip {} is this machine's own address (--router)", args.ip));
        }
    }
    let mac = match &args.mac {
        Some(m) => mac(m)?,
        None => String::new(),
    };
    let prefix = directory("--prefix", args.prefix.clone().map_or_else(default_prefix, Ok)?)?;

    let handoff_code = match &args.handoff_code {
        Some(p) => absolute("--handoff-code", p)?,
        None => String::new(),
    };
    let handoff_module_path = match &args.handoff_module_path {
        Some(p) => directory("--handoff-module-path", absolute("--handoff-module-path", p)?.into())?,
        None => String::new(),
    };
    if !handoff_code.is_empty() {
        type_checks(
            Path::new(&handoff_code),
            (!handoff_module_path.is_empty()).then_some(&handoff_module_path),
            hostname,
        )?;
    }
    if args.handoff_code.is_some() && args.handoff_exec.is_some() {
        return Err("give --handoff-code or --handoff-exec, not both".into());
    }

    let password = match (&args.password, &args.password_file) {
        (Some(hash), _) => password::checked_hash("--password", hash.trim())?,
        (None, Some(file)) => {
            let text = std::fs::read_to_string(file)
                .map_err(|e| format!("--password-file: cannot read `{}`: {e}", file.display()))?;
            password::checked_hash(&format!("--password-file `{}`", file.display()), text.trim())?
        }
        (None, None) => password::ask()?,
    };
    let syslinux_root = match &args.syslinux_dir {
        Some(p) => absolute("--syslinux-dir", p)?,
        None => String::new(),
    };
    let uefi_root = match &args.uefi_dir {
        Some(p) => absolute("--uefi-dir", p)?,
        None => String::new(),
    };
    let bmc_password_file = match &args.bmc_password_file {
        Some(p) => absolute("--bmc-password-file", p)?,
        None => String::new(),
    };

    Ok(Settings {
        interface,
        network: args.network.clone(),
        router: args.router.clone(),
        dns: args.dns.clone(),
        prefix,
        firewalld: args.firewalld,
        ipxe_iso: args.ipxe_iso.clone(),
        ipxe_efi_x86_64: args.ipxe_efi.clone(),
        syslinux_root,
        uefi_root,
        distro: args.distro.clone(),
        version,
        arch: args.arch.clone(),
        flavour: args.flavour.clone(),
        mirror: args.mirror.clone(),
        rsync: args.rsync.clone(),
        mac,
        ip: args.ip.clone(),
        bios: args.bios,
        password,
        part: args.part.clone(),
        luks: args.luks,
        packages: args.packages.clone(),
        handoff_exec: args.handoff_exec.clone().unwrap_or_default(),
        handoff_code,
        handoff_module_path,
        handoff_hostname: args.handoff_hostname.clone().unwrap_or_default(),
        bmc_uri: args.bmc_uri.clone().unwrap_or_default(),
        bmc_password_file,
    })
}

/// Says what will be served, as the operator needs to know before machines boot.
fn describe(s: &Settings) {
    let target = if s.mac.is_empty() { "any machine that boots from the network".to_string() } else { s.mac.clone() };
    crate::stderr::line(format_args!(
        "provisioner: {}{}-{} ({}) for {target} on {} (network {}), cache {}{}",
        s.distro,
        s.version,
        s.arch,
        s.flavour,
        s.interface,
        if s.network.is_empty() { "of the interface" } else { &s.network },
        s.prefix,
        if s.luks { ", LUKS" } else { "" },
    ));
}

/// The machine's one wired interface: the choice is the operator's when there are more.
fn only_wired_interface() -> Result<String, String> {
    let mut wired = funcs::core::net::wired_interfaces();
    match wired.len() {
        1 => Ok(wired.remove(0)),
        0 => Err("this machine has no wired interface: name one with --interface".into()),
        _ => Err(format!(
            "this machine has several wired interfaces ({}): choose one with --interface",
            wired.join(", ")
        )),
    }
}

/// An IPv4 `ADDR/LEN`.
fn cidr(flag: &str, text: &str) -> Result<(Ipv4Addr, u8), String> {
    let parsed = text.split_once('/').and_then(|(a, l)| Some((a.parse::<Ipv4Addr>().ok()?, l.parse::<u8>().ok()?)));
    match parsed {
        Some((addr, len)) if len <= 32 => Ok((addr, len)),
        _ => Err(format!("{flag} {text:?} is not an IPv4 address with its prefix length (e.g. 192.168.42.1/24)")),
    }
}

fn contains((net, len): (Ipv4Addr, u8), addr: Ipv4Addr) -> bool {
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len)) };
    u32::from(net) & mask == u32::from(addr) & mask
}

/// A MAC address as `aa:bb:cc:dd:ee:ff` (lower case; `-` separators accepted).
fn mac(text: &str) -> Result<String, String> {
    let parts: Vec<&str> = text.split([':', '-']).collect();
    let ok = parts.len() == 6 && parts.iter().all(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_hexdigit()));
    if !ok {
        return Err(format!("--mac {text:?} is not a MAC address (e.g. 52:54:00:12:34:56)"));
    }
    Ok(parts.join(":").to_ascii_lowercase())
}

/// `$XDG_CACHE_HOME/tend/provisioner/`, else `~/.cache/tend/provisioner/`.
fn default_prefix() -> Result<PathBuf, String> {
    let cache = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(home) => PathBuf::from(home).join(".cache"),
            None => return Err("neither XDG_CACHE_HOME nor HOME is set: give the cache directory with --prefix".into()),
        },
    };
    Ok(cache.join("tend").join("provisioner"))
}

/// `path` made absolute (`~/` is the home directory); it must exist.
fn absolute(flag: &str, path: &Path) -> Result<String, String> {
    let full =
        std::path::absolute(home_relative(flag, path)?).map_err(|e| format!("{flag} `{}`: {e}", path.display()))?;
    if let Err(e) = std::fs::metadata(&full) {
        return Err(format!("{flag} `{}`: {e}", full.display()));
    }
    let mut text = full.display().to_string();
    if full.is_dir() && !text.ends_with('/') {
        text.push('/');
    }
    Ok(text)
}

/// A directory path ending in `/`, absolute (`~/` expanded); it need not exist yet.
fn directory(flag: &str, path: PathBuf) -> Result<String, String> {
    let expanded = home_relative(flag, &path)?;
    let full = std::path::absolute(&expanded).map_err(|e| format!("{flag} `{}`: {e}", expanded.display()))?;
    let text = full.display().to_string();
    Ok(if text.ends_with('/') { text } else { format!("{text}/") })
}

/// `path` with a leading `~` replaced by the home directory.
fn home_relative(flag: &str, path: &Path) -> Result<PathBuf, String> {
    match path.strip_prefix("~") {
        Ok(rest) => match std::env::var_os("HOME") {
            Some(home) => Ok(PathBuf::from(home).join(rest)),
            None => Err(format!("{flag} `{}`: HOME is not set", path.display())),
        },
        Err(_) => Ok(path.to_path_buf()),
    }
}

/// Type-checks the code handed to the installed machine, with its module path, so a
/// mistake shows here and not on a machine just installed.
fn type_checks(code: &Path, module_path: Option<&str>, hostname: Option<&str>) -> Result<(), String> {
    let (_, catalog) = crate::compile::catalog(hostname);
    let mut program = crate::loader::locate(code).map_err(|e| format!("--handoff-code: {e}"))?;
    if let Some(dir) = module_path {
        program.modules.dir = Some(PathBuf::from(dir));
    }
    let outcome = crate::compile::compile_program(&program, &catalog);
    if outcome.diagnostics.is_empty() {
        return Ok(());
    }
    let diags = outcome.diagnostics.into_vec();
    crate::stderr::print(lang::render::render_all(&diags, &outcome.sources, crate::stderr::color()));
    Err(format!("--handoff-code `{}` does not type-check ({} error(s) above)", code.display(), diags.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_checked_against_the_network() {
        let net = cidr("--network", "192.168.42.0/24").unwrap();
        assert!(contains(net, "192.168.42.200".parse().unwrap()));
        assert!(!contains(net, "192.168.43.1".parse().unwrap()));
        assert!(contains(cidr("x", "10.0.0.0/0").unwrap(), "1.2.3.4".parse().unwrap()));
        assert!(cidr("--ip", "192.168.42.13").is_err());
        assert!(cidr("--ip", "192.168.42.13/33").is_err());
        assert!(cidr("--ip", "host/24").is_err());
    }

    #[test]
    fn a_mac_is_normalised_or_refused() {
        assert_eq!(mac("52-54-00-AB-cd-EF").unwrap(), "52:54:00:ab:cd:ef");
        assert!(mac("52:54:00:ab:cd").is_err());
        assert!(mac("52:54:00:ab:cd:eg").is_err());
        assert!(mac("").is_err());
    }

    #[test]
    fn directories_end_in_a_slash_and_are_absolute() {
        assert_eq!(directory("--prefix", PathBuf::from("/var/cache/p")).unwrap(), "/var/cache/p/");
        assert_eq!(directory("--prefix", PathBuf::from("/var/cache/p/")).unwrap(), "/var/cache/p/");
        assert!(directory("--prefix", PathBuf::from("rel")).unwrap().starts_with('/'));
    }
}
