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

/// A failure reported by a resource (validation, init, watch, check-apply, cleanup).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ResError {
    pub message: String,
}

impl ResError {
    pub fn new(message: impl Into<String>) -> ResError {
        ResError { message: message.into() }
    }
}

impl From<std::io::Error> for ResError {
    fn from(e: std::io::Error) -> ResError {
        ResError::new(e.to_string())
    }
}

/// A value carried along an edge: the sender's `send` field into the receiver's `recv`
/// param.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SendRecv {
    pub send: String,
    pub recv: String,
}
