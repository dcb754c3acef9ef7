//! Check-apply durations for the metrics: a transparent [`Resource`] wrapper that times
//! every `check_apply` and records it with its outcome. The engine's events carry no
//! durations, so this is where `tend_check_apply_duration_seconds` comes from.
//!
//! The wrapper delegates every method (fingerprints included, so graph swaps keep or
//! replace exactly the same vertices as without it); the only difference the engine can
//! observe is an `Instant::now()` pair around each check-apply.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use engine::{ApplyCtx, Graph, InitCtx, Payload, ResError, Resource, Subscription, Vertex, WatchCtx};

use super::metrics::{ApplyResult, Metrics};

/// Wraps every resource of `graph` so its check-applies are timed into `metrics`. Call it
/// on each candidate before `Engine::apply`.
pub fn time_check_applies(graph: &mut Graph, metrics: &Arc<Metrics>) {
    graph.vertices = std::mem::take(&mut graph.vertices)
        .into_iter()
        .map(|Vertex { key, meta, res }| {
            let res = timed(key.kind.clone(), res, metrics.clone());
            Vertex { key, meta, res }
        })
        .collect();
}

fn timed(kind: Arc<str>, inner: Box<dyn Resource>, metrics: Arc<Metrics>) -> Box<dyn Resource> {
    Box::new(Timed { kind, inner, metrics })
}

/// One wrapped resource.
pub struct Timed {
    kind: Arc<str>,
    inner: Box<dyn Resource>,
    metrics: Arc<Metrics>,
}

#[async_trait]
impl Resource for Timed {
    fn validate(&self) -> Result<(), ResError> {
        self.inner.validate()
    }

    async fn init(&mut self, ctx: &InitCtx) -> Result<(), ResError> {
        self.inner.init(ctx).await
    }

    fn watch(&self, ctx: WatchCtx) -> Pin<Box<dyn Future<Output = Result<(), ResError>> + Send + 'static>> {
        self.inner.watch(ctx)
    }

    fn watch_passive(&self) -> bool {
        self.inner.watch_passive()
    }

    fn subscribe(&self, ctx: &WatchCtx) -> Option<Result<Box<dyn Subscription>, ResError>> {
        self.inner.subscribe(ctx)
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let started = Instant::now();
        let outcome = self.inner.check_apply(ctx, apply).await;
        let result = match outcome {
            Ok(true) => ApplyResult::Ok,
            Ok(false) => ApplyResult::Changed,
            Err(_) => ApplyResult::Error,
        };
        self.metrics.observe_check_apply(&self.kind, result, started.elapsed());
        outcome
    }

    async fn cleanup(&mut self) -> Result<(), ResError> {
        self.inner.cleanup().await
    }

    fn fingerprint(&self) -> String {
        self.inner.fingerprint()
    }

    fn reversal(&self) -> Result<Option<Box<dyn Resource>>, ResError> {
        Ok(self.inner.reversal()?.map(|r| timed(self.kind.clone(), r, self.metrics.clone())))
    }

    fn refreshable(&self) -> bool {
        self.inner.refreshable()
    }

    fn sends(&self) -> Option<BTreeMap<String, Payload>> {
        self.inner.sends()
    }

    fn recv(&mut self, key: &str, value: &Payload) -> Result<bool, ResError> {
        self.inner.recv(key, value)
    }
}
