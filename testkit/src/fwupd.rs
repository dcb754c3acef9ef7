//! A real `fwupd` daemon on a private system bus (with `polkitd`), its configuration and
//! state in the bus's temporary directory, with `TestDevices` on: its test plugin offers a
//! fake webcam (`08d460be0f1f9f128413f816022a6439e0078018`, at 1.2.2), and the
//! `fwupd-tests` package's remote lists its releases 1.2.3 and 1.2.4, whose archives it
//! ships. What the fwupd kinds' tests run against.

use std::path::Path;

use crate::bus::PrivateBus;

pub const FWUPD: &str = "/usr/libexec/fwupd/fwupd";
/// The remote `fwupd-tests` installs (loaded only with `TestDevices`).
pub const TESTS_REMOTE: &str = "/usr/share/fwupd/remotes.d/fwupd-tests.conf";
/// The fake webcam's device id.
pub const WEBCAM: &str = "08d460be0f1f9f128413f816022a6439e0078018";

/// What this machine lacks to run it, if anything.
pub fn missing() -> Option<String> {
    let tools = [FWUPD, TESTS_REMOTE, crate::bus::POLKITD, crate::bus::DBUS_DAEMON];
    tools
        .iter()
        .find(|t| !Path::new(t).exists())
        .map(|t| format!("{t} is not installed (fwupd, fwupd-tests, polkitd, dbus)"))
}

/// Why a test of fwupd cannot run here (not root, or something missing), after checking
/// that it is allowed not to: `TEND_REQUIRE_FWUPD` (as CI sets it) makes that a failure.
pub fn unavailable() -> Option<String> {
    let why = match nix::unistd::Uid::effective().is_root() {
        false => Some("fwupd runs as root".to_string()),
        true => missing(),
    };
    if let Some(why) = &why {
        assert!(std::env::var_os("TEND_REQUIRE_FWUPD").is_none(), "TEND_REQUIRE_FWUPD is set but {why}");
    }
    why
}

/// Starts the bus, polkitd and fwupd; returns once the bus listens (the caller waits for
/// fwupd to answer). fwupd's log is `fwupd.log` in the directory.
pub fn start() -> Result<PrivateBus, String> {
    start_with(false)
}

/// [`start`], with the test plugin's devices needing a reboot after an update
/// (`needs_reboot`): the firmware is then deployed, not applied, and the daemon says so.
pub fn start_with(needs_reboot: bool) -> Result<PrivateBus, String> {
    if let Some(why) = missing() {
        return Err(why);
    }
    let mut bus = PrivateBus::start()?;
    let root = bus.dir.path().to_path_buf();
    for d in ["etc/fwupd/remotes.d", "var", "run", "lock"] {
        std::fs::create_dir_all(root.join(d)).map_err(|e| e.to_string())?;
    }
    let mut conf = "[fwupd]\nTestDevices=true\nOnlyTrusted=false\n".to_string();
    if needs_reboot {
        conf.push_str("[test]\nNeedsReboot=true\n");
    }
    std::fs::write(root.join("etc/fwupd/fwupd.conf"), conf).map_err(|e| e.to_string())?;
    let at = |d: &str| root.join(d).display().to_string();
    let env = [
        ("FWUPD_SYSCONFDIR", at("etc")),
        ("FWUPD_LOCALSTATEDIR", at("var")),
        ("FWUPD_RUNDIR", at("run")),
        ("FWUPD_LOCKDIR", at("lock")),
    ];
    bus.spawn(&[FWUPD, "--verbose"], &env, "fwupd.log")?;
    Ok(bus)
}
