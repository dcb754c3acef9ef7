//! A real `packagekitd` (Debian's, on its apt backend) and `polkitd` on a private system
//! bus started with `dbus-daemon` in a temporary directory, stopped by PID when dropped:
//! what the PackageKit backend's tests and benchmark run against.

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

pub const PACKAGEKITD: &str = "/usr/libexec/packagekitd";
pub const POLKITD: &str = "/usr/lib/polkit-1/polkitd";

/// The bus and the two daemons on it.
pub struct PackageKitd {
    pub dir: tempfile::TempDir,
    /// The bus's address, for `DBUS_SYSTEM_BUS_ADDRESS` or a client.
    pub address: String,
    children: Vec<Child>,
}

impl Drop for PackageKitd {
    fn drop(&mut self) {
        for child in self.children.iter_mut().rev() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// What this machine lacks to run them, if anything.
pub fn missing() -> Option<String> {
    let tools = [PACKAGEKITD, POLKITD, "/usr/bin/dbus-daemon"];
    tools.iter().find(|t| !Path::new(t).exists()).map(|t| format!("{t} is not installed (packagekit, polkitd, dbus)"))
}

/// Starts the bus, then polkitd and packagekitd on it; returns once the bus listens (the
/// caller waits for PackageKit to answer). Their logs are in `dir`.
pub fn start() -> Result<PackageKitd, String> {
    if let Some(why) = missing() {
        return Err(why);
    }
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let socket = dir.path().join("system_bus");
    let conf = dir.path().join("bus.conf");
    let allow: String = ["method_call", "signal", "method_return", "error"]
        .iter()
        .map(|t| format!("    <allow send_type=\"{t}\"/>\n    <allow receive_type=\"{t}\"/>\n"))
        .collect();
    let config = format!(
        "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\" \
         \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n<busconfig>\n  <type>system</type>\n  \
         <listen>unix:path={}</listen>\n  <auth>EXTERNAL</auth>\n  <policy context=\"default\">\n    \
         <allow user=\"*\"/>\n    <allow own=\"*\"/>\n{allow}  </policy>\n</busconfig>\n",
        socket.display()
    );
    std::fs::write(&conf, config).map_err(|e| e.to_string())?;
    let address = format!("unix:path={}", socket.display());
    let log = |name: &str| std::fs::File::create(dir.path().join(name)).map_err(|e| e.to_string());
    let mut children = Vec::new();
    let bus = Command::new("dbus-daemon")
        .args(["--nofork", "--config-file", &conf.display().to_string()])
        .stderr(log("dbus.log")?)
        .spawn()
        .map_err(|e| format!("dbus-daemon: {e}"))?;
    children.push(bus);
    let until = Instant::now() + Duration::from_secs(10);
    while !socket.exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    for (argv, name) in [
        (vec![POLKITD, "--no-debug"], "polkitd.log"),
        // Without --verbose, which crashes its apt backend.
        (vec![PACKAGEKITD, "--backend=apt", "--disable-timer", "--keep-environment"], "packagekitd.log"),
    ] {
        let child = Command::new(argv[0])
            .args(&argv[1..])
            .env("DBUS_SYSTEM_BUS_ADDRESS", &address)
            .stdout(log(name)?)
            .stderr(log(name)?)
            .spawn()
            .map_err(|e| format!("{}: {e}", argv[0]))?;
        children.push(child);
    }
    Ok(PackageKitd { dir, address, children })
}
