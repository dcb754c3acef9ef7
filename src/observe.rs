//! Running `tend run` as a service: Prometheus metrics over HTTP (`--metrics`), check-apply
//! timing, and systemd readiness. Each file depends only on std, tokio and the engine's
//! public API (and `super::` siblings), so the main loop wires them in with a few calls and
//! the tests use them through the library. Operators' view: docs/operations.md.
//!
//! Wiring in `cmd::run` (each step is one or two lines):
//! - parse time: `metrics::check_addr(addr, allow_remote)` for `--metrics ADDR`
//!   (`--metrics-allow-remote`); an `Err` is a usage error (exit 2);
//! - once the engine exists: `Arc<metrics::Metrics>`, `metrics.watch_engine(&engine)`,
//!   `metrics::serve(addr, metrics.clone()).await` when `--metrics` was given, and
//!   `ready::announce(&engine)` (READY=1 after the first convergence, STATUS= lines);
//! - per candidate graph: `timing::time_check_applies(&mut graph, &metrics)` before
//!   `Engine::apply`; `metrics.swap_rejected()` when the candidate is refused (interpret,
//!   build or apply); `metrics.compile_error()` when a (re)compile fails;
//!   `metrics.dataflow_snapshot(ok)` and `metrics.dataflow_evaluations(df.evaluations())`
//!   per settled dataflow state;
//! - shutdown: abort the announcer, `notify::stopping()`, then after `Engine::shutdown`
//!   abort the server and the feed.

pub mod metrics;
pub mod notify;
pub mod ready;
pub mod timing;
