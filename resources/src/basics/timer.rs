//! `timer`: an event every `interval` seconds; check-apply is OK unless a notification
//! arrived, which restarts the ticker.

use lang::params::ParamMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use tokio::sync::Notify;

use crate::contract::common::Raw;
use crate::contract::params::BuildError;

crate::params! {
    /// `timer`'s params.
    pub struct TimerParams {
        /// Seconds between ticks.
        pub interval: u32,
    }
}

pub struct Timer {
    interval: u64,
    /// Told by check-apply to restart the ticker (on refresh); the watch listens.
    reset: Arc<Notify>,
    raw: Raw,
}

impl Timer {
    pub fn build(name: &str, values: &ParamMap) -> Result<Timer, BuildError> {
        let raw = Raw::new("timer", name, values);
        let interval = u64::from(raw.decode(TimerParams::decode)?.interval);
        Ok(Timer { interval, reset: Arc::new(Notify::new()), raw })
    }
}

#[async_trait]
impl Resource for Timer {
    fn validate(&self) -> Result<(), ResError> {
        if self.interval == 0 {
            return Err(ResError::new(format!(
                "timer[{}]: field `interval`: must be at least 1 second",
                self.raw.name
            )));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let every = Duration::from_secs(self.interval);
        let reset = self.reset.clone();
        Box::pin(async move {
            ctx.event();
            let mut next = tokio::time::Instant::now() + every;
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(next) => { ctx.event(); next += every; }
                    _ = reset.notified() => next = tokio::time::Instant::now() + every,
                    _ = ctx.cancelled() => return Ok(()),
                }
            }
        })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        if !ctx.refresh {
            return Ok(true);
        }
        if apply {
            self.reset.notify_one();
        }
        Ok(false)
    }

    fn fingerprint(&self) -> String {
        self.interval.to_string()
    }

    fn refreshable(&self) -> bool {
        true
    }
}

/// The `timer` kind: its params and send fields as the type checker sees them, and its constructor.
pub const TIMER: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("timer", TimerParams::FIELDS, |_host, name, params| {
        Ok(Box::new(Timer::build(name, params)?))
    });
