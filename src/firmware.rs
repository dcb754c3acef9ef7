//! The firmware daemon as the functions see it (`funcs::api::FirmwareDaemon`, read by
//! `sys/fwupd.reboot_needed()`): fwupd on the system bus through the resources' client,
//! its signals followed by one task started when a function first asks for changes.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use resources::firmware::fwupd::Fwupd;
use tokio::sync::watch;

/// fwupd, for the functions.
pub struct FwupdDaemon {
    fwupd: Arc<Fwupd>,
    changes: watch::Sender<u64>,
    follower: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl FwupdDaemon {
    pub fn new(fwupd: Arc<Fwupd>) -> FwupdDaemon {
        FwupdDaemon { fwupd, changes: watch::channel(0).0, follower: Mutex::new(None) }
    }
}

impl funcs::api::FirmwareDaemon for FwupdDaemon {
    fn reboot_needed(&self) -> Pin<Box<dyn Future<Output = Result<bool, String>> + Send + 'static>> {
        let fwupd = self.fwupd.clone();
        Box::pin(async move { fwupd.reboot_needed().await })
    }

    fn changes(&self) -> watch::Receiver<u64> {
        let receiver = self.changes.subscribe();
        let mut follower = self.follower.lock().unwrap_or_else(|e| e.into_inner());
        if follower.as_ref().is_none_or(|f| f.is_finished()) {
            *follower = Some(tokio::spawn(self.fwupd.clone().follow(self.changes.clone())));
        }
        receiver
    }
}
