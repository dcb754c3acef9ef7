//! The names and plain data every layer of the engine shares: resource keys, the values
//! moving along send/recv edges, resource errors. It depends on nothing else in the
//! crate; the modules stand on each other in one direction:
//! `key` <- `event` <- `converger` <- `node` <- `res` <- `graph` <- `worker` <- `swap` <- `lib`.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// A value moving along a send/recv edge. The engine never looks inside; senders and
/// receivers agree on the concrete type (the `resources` crate uses `lang::value::Value`).
pub type Payload = Arc<dyn Any + Send + Sync>;

/// The identity of a resource: kind and name, printed `kind[name]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResKey {
    pub kind: std::sync::Arc<str>,
    pub name: std::sync::Arc<str>,
}

impl ResKey {
    /// Both parts are shared, so the many copies of a key (graph, events, links, metrics)
    /// cost a reference count each, not two strings.
    pub fn new(kind: impl AsRef<str>, name: impl AsRef<str>) -> ResKey {
        ResKey { kind: kind.as_ref().into(), name: name.as_ref().into() }
    }
}

impl fmt::Display for ResKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]", self.kind, self.name)
    }
}

/// A failure reported by a resource (validation, init, watch, check-apply, cleanup): what
/// went wrong, for people, and whether trying again can help, for the engine and the
/// cluster (a world that is briefly unreachable is not a program that is wrong).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ResError {
    pub message: String,
    pub retry: Retry,
}

/// Whether trying the same thing again can succeed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// Until the program or the machine changes, it fails the same way (a bad param, a
    /// missing unit, permission denied).
    Permanent,
    /// It may work later without any change (a timeout, a busy device, a refused or
    /// dropped connection, an outage of the store).
    Transient,
}

impl ResError {
    /// A failure that trying again will not mend.
    pub fn new(message: impl Into<String>) -> ResError {
        ResError { message: message.into(), retry: Retry::Permanent }
    }

    /// A failure that may pass by itself.
    pub fn transient(message: impl Into<String>) -> ResError {
        ResError { message: message.into(), retry: Retry::Transient }
    }

    /// An io failure on `path`: the message names the path, and the error's kind says
    /// whether it may pass.
    pub fn io(path: impl AsRef<std::path::Path>, e: &std::io::Error) -> ResError {
        let message = format!("{}: {e}", path.as_ref().display());
        ResError { message, retry: retry_of(e) }
    }

    pub fn is_transient(&self) -> bool {
        self.retry == Retry::Transient
    }
}

/// Whether an io error may pass by itself.
pub fn retry_of(e: &std::io::Error) -> Retry {
    use std::io::ErrorKind::*;
    match e.kind() {
        Interrupted | WouldBlock | TimedOut | ConnectionRefused | ConnectionReset | ConnectionAborted
        | NotConnected | BrokenPipe | AddrInUse | ResourceBusy | StorageFull | QuotaExceeded | NetworkDown
        | NetworkUnreachable | HostUnreachable | ExecutableFileBusy | Deadlock => Retry::Transient,
        _ => Retry::Permanent,
    }
}

/// Names the path of an io failure: `fs::read(&p).at(&p)?`.
pub trait IoAt<T> {
    fn at(self, path: impl AsRef<std::path::Path>) -> Result<T, ResError>;
}

impl<T> IoAt<T> for std::io::Result<T> {
    fn at(self, path: impl AsRef<std::path::Path>) -> Result<T, ResError> {
        self.map_err(|e| ResError::io(path, &e))
    }
}

/// A value carried along an edge: the sender's `send` field into the receiver's `recv`
/// param.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SendRecv {
    pub send: String,
    pub recv: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Error, ErrorKind};

    #[test]
    fn io_errors_name_their_path_and_say_whether_they_may_pass() {
        let err = Err::<(), _>(Error::from(ErrorKind::NotFound)).at("/etc/x").unwrap_err();
        assert!(err.message.starts_with("/etc/x: "), "{err}");
        assert_eq!(err.retry, Retry::Permanent);
        let err = Err::<(), _>(Error::from(ErrorKind::TimedOut)).at("/mnt/nfs/x").unwrap_err();
        assert!(err.is_transient());
        assert_eq!(retry_of(&Error::from(ErrorKind::PermissionDenied)), Retry::Permanent);
        assert_eq!(retry_of(&Error::from(ErrorKind::ConnectionRefused)), Retry::Transient);
        assert!(!ResError::new("bad param").is_transient());
        assert!(ResError::transient("store unreachable").is_transient());
    }
}
