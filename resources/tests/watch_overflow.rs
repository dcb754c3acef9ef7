//! The watch hub after the kernel dropped events (its queue overflowed): every subscription
//! is woken, even one whose target nothing touched. A binary of its own: the hub is
//! process-wide, and the spurious wake-ups would disturb tests that expect none.

use std::sync::Mutex;
use std::sync::mpsc;
use std::time::Duration;

use resources::util::watch::{FileWatch, Target};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_event_wakes_every_subscription() {
    let dir = tempfile::tempdir().unwrap();
    let queued: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(16_384);
    // A call that holds the watcher's thread (calls run on it) until the sender goes.
    let (hold, held) = mpsc::channel::<()>();
    let held = Mutex::new(held);
    let (called_tx, called) = mpsc::channel();
    let _blocker = FileWatch::calling(vec![Target::Path(dir.path().join("block"))], false, move |_, _| {
        let _ = called_tx.send(());
        let _ = held.lock().unwrap().recv_timeout(Duration::from_secs(30));
    })
    .unwrap();
    let mut untouched = FileWatch::new(vec![dir.path().join("untouched")], false).unwrap();
    std::fs::write(dir.path().join("block"), "x").unwrap();
    called.recv_timeout(Duration::from_secs(5)).expect("the watcher calls");

    // Two events a file (made, closed after writing): more than the kernel queues while the
    // watcher is held.
    for i in 0..queued {
        std::fs::write(dir.path().join(format!("f{i}")), "").unwrap();
    }
    drop(hold);
    tokio::time::timeout(Duration::from_secs(5), untouched.changed())
        .await
        .expect("the subscription is told of the loss")
        .expect("watching");
}
