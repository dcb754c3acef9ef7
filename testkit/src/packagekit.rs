//! A real `packagekitd` (Debian's, on its apt backend) and `polkitd` on a private system
//! bus started with `dbus-daemon` in a temporary directory, stopped by PID when dropped:
//! what the PackageKit backend's tests and benchmark run against.

use std::path::Path;

pub const PACKAGEKITD: &str = "/usr/libexec/packagekitd";
pub use crate::bus::POLKITD;

/// The bus and the two daemons on it.
pub type PackageKitd = crate::bus::PrivateBus;

/// What this machine lacks to run them, if anything.
pub fn missing() -> Option<String> {
    let tools = [PACKAGEKITD, POLKITD, crate::bus::DBUS_DAEMON];
    tools.iter().find(|t| !Path::new(t).exists()).map(|t| format!("{t} is not installed (packagekit, polkitd, dbus)"))
}

/// Starts the bus, then polkitd and packagekitd on it; returns once the bus listens (the
/// caller waits for PackageKit to answer). Their logs are in `dir`.
pub fn start() -> Result<PackageKitd, String> {
    if let Some(why) = missing() {
        return Err(why);
    }
    let mut bus = crate::bus::PrivateBus::start()?;
    // Without --verbose, which crashes its apt backend.
    bus.spawn(&[PACKAGEKITD, "--backend=apt", "--disable-timer", "--keep-environment"], &[], "packagekitd.log")?;
    Ok(bus)
}
