//! Running `tend run` as a service: Prometheus metrics over HTTP (`--metrics`) and
//! systemd readiness notifications. Self-contained (std, tokio and the engine's public
//! API), so the main loop wires them in with a few calls and the tests compile the files
//! directly.

pub mod metrics;
pub mod notify;
pub mod timing;
