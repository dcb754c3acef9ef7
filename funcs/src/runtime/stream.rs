//! Streaming built-ins: one task per instance (call site × environment), its input
//! channel, and the forwarding of its values into the engine's event queue.

use std::sync::mpsc;

use lang::types::Type;
use lang::value::Value;
use tokio::runtime::Handle;
use tokio::sync::{mpsc as tmpsc, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::api::{FuncResult, Host, StreamCtx, StreamFn};
use crate::runtime::key::same;

/// Index of an instance in the engine's arena.
pub(crate) type InstId = u32;

/// What wakes the evaluator thread.
pub(crate) enum Event {
    /// A stream instance produced a value. `generation` tells apart reuses of the same arena slot,
    /// so values from a cancelled stream that were already queued are dropped.
    Emit { inst: InstId, generation: u32, result: FuncResult },
    /// A stream task finished (it dropped its output channel) without being cancelled.
    Ended { inst: InstId, generation: u32 },
    /// `Dataflow::shutdown` (or drop) asked the engine to stop.
    Shutdown,
}

/// How many values a stream may queue before its `send` waits for the forwarder.
const STREAM_BUFFER: usize = 16;

/// Starts stream tasks. Owned by the engine; every task it spawns is tracked by
/// `tracker` (awaited by `Dataflow::shutdown`) and stops when `cancel` (the root of
/// all stream tokens) fires.
pub(crate) struct Spawner {
    pub handle: Handle,
    pub tracker: TaskTracker,
    pub cancel: CancellationToken,
    pub events: mpsc::Sender<Event>,
    pub host: Host,
}

/// A running stream instance, owned by its engine instance. Dropping it does not stop
/// the task; [`StreamInst::stop`] does (the engine calls it when the instance dies).
pub(crate) struct StreamInst {
    /// Latest argument values; the task watches it.
    inputs: watch::Sender<Option<Vec<Value>>>,
    /// What was last put into `inputs`, to send only changes.
    sent: Option<Vec<Value>>,
    /// The latest value the task produced (`None` until its first one).
    pub emitted: Option<FuncResult>,
    /// Child of the spawner's root token; cancelled when the instance leaves the graph.
    cancel: CancellationToken,
}

impl Spawner {
    /// Spawns the task of one stream instance and its forwarder.
    pub fn start(
        &self,
        f: StreamFn,
        inst: InstId,
        generation: u32,
        arg_types: Vec<Type>,
        ret_type: Type,
    ) -> StreamInst {
        let (inputs, inputs_rx) = watch::channel(None);
        let (out, mut out_rx) = tmpsc::channel(STREAM_BUFFER);
        let cancel = self.cancel.child_token();
        let ctx =
            StreamCtx { arg_types, ret_type, host: self.host.clone(), inputs: inputs_rx, out, cancel: cancel.clone() };
        self.tracker.spawn_on(f(ctx), &self.handle);
        let events = self.events.clone();
        let stop = cancel.clone();
        self.tracker.spawn_on(
            async move {
                loop {
                    tokio::select! {
                        biased;
                        _ = stop.cancelled() => break,
                        r = out_rx.recv() => match r {
                            Some(result) => {
                                if events.send(Event::Emit { inst, generation, result }).is_err() {
                                    break;
                                }
                            }
                            None => {
                                let _ = events.send(Event::Ended { inst, generation });
                                break;
                            }
                        },
                    }
                }
            },
            &self.handle,
        );
        StreamInst { inputs, sent: None, emitted: None, cancel }
    }
}

impl StreamInst {
    /// Hands new argument values to the task. Returns true when they differ from the
    /// last ones sent.
    pub fn set_inputs(&mut self, args: Vec<Value>) -> bool {
        if let Some(sent) = &self.sent
            && sent.len() == args.len()
            && sent.iter().zip(&args).all(|(a, b)| same(a, b))
        {
            return false;
        }
        self.sent = Some(args.clone());
        self.inputs.send_replace(Some(args));
        true
    }

    pub fn stop(&self) {
        self.cancel.cancel();
    }
}
