//! The kinds that write what hosts share: `kv`, `schedule` and `consul:kv`, and what they
//! share of the world ([`world`]).

pub mod consul;
pub mod kv;
pub mod schedule;
pub mod world;
