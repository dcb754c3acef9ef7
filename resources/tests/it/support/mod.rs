//! Helpers for resource tests: param maps, direct check-apply calls, and running a graph
//! of real resources through the engine.

#![allow(dead_code)]

use lang::params::ParamMap;
use std::collections::BTreeMap;
use std::time::Duration;

use engine::{ApplyCtx, Engine, EngineConfig, Resource};
use lang::value::Value;

pub fn params(pairs: &[(&str, Value)]) -> ParamMap {
    pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

pub fn s(text: &str) -> Value {
    Value::str(text)
}

pub fn strs(items: &[&str]) -> Value {
    Value::list(items.iter().map(Value::str).collect())
}

/// One check-apply; returns (state was OK, reports).
pub async fn check(res: &mut dyn Resource, apply: bool) -> Result<(bool, Vec<String>), String> {
    let mut ctx = ApplyCtx::detached();
    let ok = res.check_apply(&mut ctx, apply).await.map_err(|e| e.message)?;
    Ok((ok, ctx.reports().to_vec()))
}

/// Validate + apply + confirm: the first apply-mode run changes something, the second
/// finds everything right.
pub async fn converge(res: &mut dyn Resource) {
    res.validate().expect("valid");
    let (ok, _) = check(res, true).await.expect("first apply");
    assert!(!ok, "the first run should have changed something");
    let (ok, _) = check(res, true).await.expect("second apply");
    assert!(ok, "the second run should find nothing to do");
}

pub fn engine(dir: &std::path::Path) -> Engine {
    Engine::new(EngineConfig {
        state_dir: dir.to_path_buf(),
        stop_timeout: Duration::from_secs(5),
        ..Default::default()
    })
}

pub const WAIT: Duration = Duration::from_secs(10);

/// Polls `cond` until true or the timeout.
pub async fn eventually(cond: impl FnMut() -> bool) -> bool {
    eventually_within(WAIT, cond).await
}

/// Polls `cond` every 20 ms until true or `within` has passed.
pub async fn eventually_within(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let until = std::time::Instant::now() + within;
    while std::time::Instant::now() < until {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// Polls an async probe until it returns a non-empty map (or the timeout), returning the
/// last value.
pub async fn eventually_async<K, V, F, Fut>(mut probe: F) -> BTreeMap<K, V>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = BTreeMap<K, V>>,
{
    let until = std::time::Instant::now() + WAIT;
    loop {
        let out = probe().await;
        if !out.is_empty() || std::time::Instant::now() >= until {
            return out;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A program of the tests' Python environment (`sushy-emulator`, `moto_server`), which
/// `.ci/deps` makes under the build directory: `$TEND_PYENV`, else
/// `$CARGO_TARGET_DIR/pyenv`, else `target/pyenv` of the workspace. `None` (after saying
/// why) when it is missing, unless `TEND_REQUIRE_PYENV=1` (as in CI) makes that a failure.
#[allow(clippy::print_stderr, reason = "a skipped test says why")]
pub fn pyenv_program(name: &str) -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("TEND_PYENV").map(std::path::PathBuf::from).unwrap_or_else(|| {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
        target.join("pyenv")
    });
    let program = dir.join("bin").join(name);
    if program.exists() {
        return Some(program);
    }
    let required = std::env::var("TEND_REQUIRE_PYENV").is_ok_and(|v| v == "1");
    assert!(!required, "TEND_REQUIRE_PYENV=1 but {} is missing (bash .ci/deps makes it)", program.display());
    eprintln!("skipped: {} is missing; `bash .ci/deps` makes the tests' Python environment", program.display());
    None
}

/// A free TCP port on 127.0.0.1 (free when asked; a server the test starts takes it).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A child process killed (by PID) and reaped when dropped.
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
