//! The `sys/fwupd` package: `fwupd.reboot_needed()`, whether the firmware daemon has an
//! update deployed that waits for a reboot, followed through the daemon's signals (see
//! [`crate::api::FirmwareDaemon`]). A daemon that cannot be asked counts as no reboot
//! needed, as in mgmt: no daemon, no pending firmware.

use super::typed;
use crate::registry::Registry;
use crate::streaming;
use lang::value::Value;

pub fn register(r: &mut Registry) {
    typed(r, "sys/fwupd.reboot_needed", reboot_needed::DEF);
}

streaming! {
    /// whether a device has firmware deployed that waits for a reboot, updated as fwupd says
    fn reboot_needed(em) -> "bool" {
        let daemon = em.host().firmware.clone();
        let mut changes = daemon.changes();
        let mut last = None;
        loop {
            let needed = match daemon.reboot_needed().await {
                Ok(needed) => needed,
                Err(e) => {
                    tracing::debug!(error = %e, "fwupd.reboot_needed: the daemon cannot be asked");
                    false
                }
            };
            if last != Some(needed) {
                if !em.value(Value::Bool(needed)).await {
                    return;
                }
                last = Some(needed);
            }
            if changes.changed().await.is_err() {
                return;
            }
        }
    }
}
