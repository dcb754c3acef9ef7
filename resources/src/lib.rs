//! One module per resource kind (file, exec, print, ...), implementing the engine's
//! resource contract, plus the kinds' declarations for the type checker ([`declare`]) and
//! the automatic edges between them ([`autoedges`]).

pub mod autoedge;
pub mod schema;

pub use autoedge::{AutoRes, autoedges, file_path};
pub use schema::declare;
