//! The kind contract: what a kind declares (`kind`: its params' types, builder, autoedge
//! rules; `params`, `typed`, `text`), what every kind shares (`common`: raw params kept for
//! send/recv, payload conversion), the automatic edges (`autoedge`), and the bridge from
//! the interpreter's graph to the engine's (`graph`), and autogrouping (`group`).

pub mod autoedge;
pub mod common;
pub mod graph;
pub mod group;
pub mod kind;
pub mod params;
pub mod text;
pub mod typed;
