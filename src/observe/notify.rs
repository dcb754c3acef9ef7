//! systemd readiness (`Type=notify`): the sd_notify protocol spoken directly. One datagram
//! of newline-separated `KEY=value` lines to the unix socket named by `NOTIFY_SOCKET` (a
//! path, or `@name` for a socket in the abstract namespace). Without `NOTIFY_SOCKET` (not
//! started by systemd) every call is a no-op that reports `Ok(false)`.

use std::io;
use std::os::unix::net::UnixDatagram;

/// The environment variable systemd sets for `Type=notify` services.
pub const NOTIFY_SOCKET: &str = "NOTIFY_SOCKET";

/// Start-up is complete: the first graph converged. systemd marks the unit active.
pub fn ready() -> io::Result<bool> {
    notify("READY=1")
}

/// Graceful shutdown has begun.
pub fn stopping() -> io::Result<bool> {
    notify("STOPPING=1")
}

/// A one-line status shown by `systemctl status` (newlines are replaced by spaces, since
/// the protocol is line-based).
pub fn status(msg: &str) -> io::Result<bool> {
    notify(&format!("STATUS={}", msg.replace('\n', " ")))
}

/// Whether a service manager listens (`NOTIFY_SOCKET` is set).
pub fn enabled() -> bool {
    std::env::var_os(NOTIFY_SOCKET).is_some_and(|s| !s.is_empty())
}

/// Sends `state` to the socket in `NOTIFY_SOCKET`; `Ok(false)` when it is unset or empty.
pub fn notify(state: &str) -> io::Result<bool> {
    match std::env::var_os(NOTIFY_SOCKET) {
        Some(socket) if !socket.is_empty() => {
            let socket = socket
                .into_string()
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NOTIFY_SOCKET is not valid UTF-8"))?;
            send_to(&socket, state).map(|()| true)
        }
        _ => Ok(false),
    }
}

/// Sends one notification datagram to `socket` (`/path` or `@abstract-name`).
pub fn send_to(socket: &str, state: &str) -> io::Result<()> {
    let sock = UnixDatagram::unbound()?;
    let sent = if let Some(name) = socket.strip_prefix('@') {
        send_abstract(&sock, name, state)?
    } else if socket.starts_with('/') {
        sock.send_to(state.as_bytes(), socket)?
    } else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("NOTIFY_SOCKET={socket}: expected an absolute path or an @abstract name"),
        ));
    };
    if sent != state.len() {
        return Err(io::Error::new(io::ErrorKind::WriteZero, "short write to NOTIFY_SOCKET"));
    }
    Ok(())
}

#[cfg(target_os = "linux")]
fn send_abstract(sock: &UnixDatagram, name: &str, state: &str) -> io::Result<usize> {
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
    sock.send_to_addr(state.as_bytes(), &addr)
}

#[cfg(not(target_os = "linux"))]
fn send_abstract(_sock: &UnixDatagram, name: &str, _state: &str) -> io::Result<usize> {
    Err(io::Error::new(io::ErrorKind::Unsupported, format!("abstract socket @{name} needs Linux")))
}
