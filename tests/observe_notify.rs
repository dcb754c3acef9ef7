//! sd_notify over a real unix datagram socket, path and abstract.

#![allow(unsafe_code)] // std::env::set_var, in a binary with one test

use tend::observe::notify;

use std::os::unix::net::UnixDatagram;
use std::time::Duration;

fn recv(sock: &UnixDatagram) -> String {
    let mut buf = [0u8; 512];
    let n = sock.recv(&mut buf).expect("a datagram");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// One test touches the environment, so nothing races on `NOTIFY_SOCKET`.
#[test]
fn notifications_reach_the_socket() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("notify.sock");
    let sock = UnixDatagram::bind(&path).expect("bind");
    sock.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");

    // SAFETY: this binary's only test that reads or writes the environment.
    unsafe { std::env::remove_var(notify::NOTIFY_SOCKET) };
    assert!(!notify::ready().expect("no-op"));

    // SAFETY: as above.
    unsafe { std::env::set_var(notify::NOTIFY_SOCKET, &path) };
    assert!(notify::ready().expect("sent"));
    assert_eq!(recv(&sock), "READY=1");
    assert!(notify::status("converged\n3 resources").expect("sent"));
    assert_eq!(recv(&sock), "STATUS=converged 3 resources");
    assert!(notify::stopping().expect("sent"));
    assert_eq!(recv(&sock), "STOPPING=1");

    #[cfg(target_os = "linux")]
    {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("tend-test-{}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).expect("name");
        let abs = UnixDatagram::bind_addr(&addr).expect("bind abstract");
        abs.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        // SAFETY: as above.
        unsafe { std::env::set_var(notify::NOTIFY_SOCKET, format!("@{name}")) };
        assert!(notify::ready().expect("sent"));
        assert_eq!(recv(&abs), "READY=1");
    }

    // SAFETY: as above.
    unsafe { std::env::set_var(notify::NOTIFY_SOCKET, "relative/path") };
    assert!(notify::ready().is_err());
    // SAFETY: as above.
    unsafe { std::env::set_var(notify::NOTIFY_SOCKET, dir.path().join("missing.sock")) };
    assert!(notify::ready().is_err(), "a missing socket is an error the caller can log");
    // SAFETY: as above.
    unsafe { std::env::remove_var(notify::NOTIFY_SOCKET) };
}
