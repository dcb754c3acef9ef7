//! A private system bus (`dbus-daemon` in a temporary directory, open to every user) with
//! `polkitd` on it, and the daemons a test starts there, stopped by PID (in reverse
//! order) when dropped: what the PackageKit and fwupd tests run against.

use std::process::{Child, Command};
use std::time::{Duration, Instant};

pub const POLKITD: &str = "/usr/lib/polkit-1/polkitd";
pub const DBUS_DAEMON: &str = "/usr/bin/dbus-daemon";

/// The bus and the daemons on it.
pub struct PrivateBus {
    pub dir: tempfile::TempDir,
    /// The bus's address, for `DBUS_SYSTEM_BUS_ADDRESS` or a client.
    pub address: String,
    children: Vec<Child>,
}

impl Drop for PrivateBus {
    fn drop(&mut self) {
        for child in self.children.iter_mut().rev() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl PrivateBus {
    /// Starts the bus and polkitd; returns once the bus listens. Logs go to `dir`.
    pub fn start() -> Result<PrivateBus, String> {
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
        let mut bus = PrivateBus { dir, address, children: Vec::new() };
        let child = Command::new(DBUS_DAEMON)
            .args(["--nofork", "--config-file", &conf.display().to_string()])
            .stderr(bus.log("dbus.log")?)
            .spawn()
            .map_err(|e| format!("dbus-daemon: {e}"))?;
        bus.children.push(child);
        let until = Instant::now() + Duration::from_secs(10);
        while !socket.exists() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        bus.spawn(&[POLKITD, "--no-debug"], &[], "polkitd.log")?;
        Ok(bus)
    }

    fn log(&self, name: &str) -> Result<std::fs::File, String> {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join(name))
            .map_err(|e| e.to_string())
    }

    /// Starts `argv` on this bus with `env`, its output in `log` under the directory.
    pub fn spawn(&mut self, argv: &[&str], env: &[(&str, String)], log: &str) -> Result<(), String> {
        let child = Command::new(argv[0])
            .args(&argv[1..])
            .env("DBUS_SYSTEM_BUS_ADDRESS", &self.address)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdout(self.log(log)?)
            .stderr(self.log(log)?)
            .spawn()
            .map_err(|e| format!("{}: {e}", argv[0]))?;
        self.children.push(child);
        Ok(())
    }

    /// The text of a log under the directory.
    pub fn read_log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
    }
}
