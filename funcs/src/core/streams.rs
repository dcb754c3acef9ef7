//! Shared plumbing for streaming built-ins: wait for inputs, run one producer per input
//! set, restart it when the inputs change, stop on cancellation.

use crate::api::{FuncError, FuncResult, StreamCtx};
use futures::future::BoxFuture;
use lang::value::Value;
use std::future::Future;
use std::time::Duration;
use tokio::sync::mpsc;

/// Where a producer sends its values. `send` returns `false` once nobody listens any
/// more, and the producer should then return.
#[derive(Clone)]
pub struct Emitter {
    out: mpsc::Sender<FuncResult>,
    host: crate::api::Host,
    ret_type: lang::types::Type,
}

impl Emitter {
    pub async fn send(&self, r: FuncResult) -> bool {
        self.out.send(r).await.is_ok()
    }
    pub async fn value(&self, v: Value) -> bool {
        self.send(Ok(v)).await
    }
    pub fn host(&self) -> &crate::api::Host {
        &self.host
    }
    pub fn ret_type(&self) -> &lang::types::Type {
        &self.ret_type
    }
}

/// Runs `produce` for each distinct complete set of inputs. The producer's future is
/// dropped (which cancels it) when the inputs change or the stream is cancelled; when it
/// returns by itself the stream idles until the inputs change.
pub async fn per_input<F, Fut>(mut ctx: StreamCtx, mut produce: F)
where
    F: FnMut(Vec<Value>, Emitter) -> Fut,
    Fut: Future<Output = ()>,
{
    let emitter = Emitter { out: ctx.out.clone(), host: ctx.host.clone(), ret_type: ctx.ret_type.clone() };
    let mut inputs_open = true;
    loop {
        // Wait for a complete set of inputs.
        let args = loop {
            if let Some(a) = ctx.inputs.borrow_and_update().clone() {
                break a;
            }
            if !inputs_open {
                ctx.cancel.cancelled().await;
                return;
            }
            tokio::select! {
                _ = ctx.cancel.cancelled() => return,
                r = ctx.inputs.changed() => if r.is_err() { inputs_open = false },
            }
        };
        let run = produce(args.clone(), emitter.clone());
        tokio::pin!(run);
        let mut done = false;
        loop {
            if done && !inputs_open {
                ctx.cancel.cancelled().await;
                return;
            }
            tokio::select! {
                _ = ctx.cancel.cancelled() => return,
                _ = &mut run, if !done => done = true,
                r = ctx.inputs.changed(), if inputs_open => {
                    if r.is_err() {
                        inputs_open = false;
                        continue;
                    }
                    let same = ctx.inputs.borrow().as_ref() == Some(&args);
                    if !same {
                        break;
                    }
                }
            }
        }
    }
}

/// Boxes a stream body for [`crate::api::StreamFn`].
pub fn boxed<Fut: Future<Output = ()> + Send + 'static>(f: Fut) -> BoxFuture<'static, ()> {
    Box::pin(f)
}

/// A producer that recomputes `f` every `period` and emits only changes.
pub async fn poll<F>(em: Emitter, period: Duration, mut f: F)
where
    F: FnMut() -> FuncResult,
{
    let mut last: Option<FuncResult> = None;
    loop {
        let r = f();
        if last.as_ref() != Some(&r) {
            let fatal = matches!(r, Err(FuncError::Fatal(_)));
            if !em.send(r.clone()).await || fatal {
                return;
            }
            last = Some(r);
        }
        tokio::time::sleep(period).await;
    }
}
