//! Shared helpers for the runtime tests and benchmarks: a small hand-made registry
//! (pure, counting, higher-order and channel-driven streaming built-ins), a builder for
//! typed function graphs, and accessors for the output.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use funcs::api::{Builtin, CallCtx, FuncError, FuncImpl, FuncResult, StreamCtx};
use funcs::registry::Registry;
use funcs::runtime::Dataflow;
use futures::future::BoxFuture;
use lang::catalog::FuncDecl;
use lang::diag::Diagnostic;
use lang::ir::{FuncGraph, IrField, IrResource, IrStmt, NodeId, NodeKind, Op, ParamId};
use lang::output::Output;
use lang::span::{FileId, Span};
use lang::syntax::ast::BinOp;
use lang::types::Type;
use lang::value::Value;
use tokio::sync::watch;

// ---------------------------------------------------------------- global test state

fn counts() -> &'static Mutex<HashMap<String, u64>> {
    static C: OnceLock<Mutex<HashMap<String, u64>>> = OnceLock::new();
    C.get_or_init(Default::default)
}

/// How often `test.count` ran with this tag.
pub fn count(tag: &str) -> u64 {
    counts().lock().unwrap().get(tag).copied().unwrap_or(0)
}

fn bump(tag: &str, key: &str) {
    *counts().lock().unwrap().entry(format!("{tag}{key}")).or_default() += 1;
}

fn inputs() -> &'static Mutex<HashMap<String, watch::Sender<Option<Value>>>> {
    static I: OnceLock<Mutex<HashMap<String, watch::Sender<Option<Value>>>>> = OnceLock::new();
    I.get_or_init(Default::default)
}

fn input_sender(id: &str) -> watch::Sender<Option<Value>> {
    inputs().lock().unwrap().entry(id.to_string()).or_insert_with(|| watch::channel(None).0).clone()
}

/// Sets the value that every `test.input(id)` stream emits.
pub fn set(id: &str, v: Value) {
    input_sender(id).send_replace(Some(v));
}

fn lives() -> &'static Mutex<HashMap<String, i64>> {
    static L: OnceLock<Mutex<HashMap<String, i64>>> = OnceLock::new();
    L.get_or_init(Default::default)
}

/// How many `test.input(id)` tasks are running right now.
pub fn live(id: &str) -> i64 {
    lives().lock().unwrap().get(id).copied().unwrap_or(0)
}

fn log() -> &'static Mutex<HashMap<String, Vec<Vec<Value>>>> {
    static L: OnceLock<Mutex<HashMap<String, Vec<Vec<Value>>>>> = OnceLock::new();
    L.get_or_init(Default::default)
}

/// Every argument list `test.record(tag, ...)` was called with.
pub fn recorded(tag: &str) -> Vec<Vec<Value>> {
    log().lock().unwrap().get(tag).cloned().unwrap_or_default()
}

// ---------------------------------------------------------------- built-ins

fn decl(name: &str) -> FuncDecl {
    FuncDecl { name: name.into(), sigs: Vec::new(), infer: None, check: None, doc: "test built-in" }
}

fn pure(r: &mut Registry, name: &str, f: funcs::api::PureFn) {
    r.register(Builtin { decl: decl(name), imp: FuncImpl::Pure(f) });
}

fn stream(r: &mut Registry, name: &str, f: funcs::api::StreamFn) {
    r.register(Builtin { decl: decl(name), imp: FuncImpl::Stream(f) });
}

fn int_arg(args: &[Value], i: usize) -> Result<i64, FuncError> {
    args.get(i).and_then(Value::as_int).ok_or_else(|| FuncError::fatal("expected an int"))
}

/// `test.add1(x int) int`
fn add1(_: &CallCtx<'_>, args: &[Value]) -> FuncResult {
    Ok(Value::Int(int_arg(args, 0)?.wrapping_add(1)))
}

/// `test.mod2(x int) int`
fn mod2(_: &CallCtx<'_>, args: &[Value]) -> FuncResult {
    Ok(Value::Int(int_arg(args, 0)?.rem_euclid(2)))
}

/// `test.count(tag str, x ?1) ?1`: the identity, counting its runs per tag (and per
/// tag + value, as `tag=value`).
fn count_fn(_: &CallCtx<'_>, args: &[Value]) -> FuncResult {
    let tag = args[0].as_str().unwrap_or_default();
    bump(tag, "");
    bump(tag, &format!("={}", args[1]));
    Ok(args[1].clone())
}

/// `test.record(tag str, a ?1, b ?2) ?1`: logs its arguments, returns `a`.
fn record(_: &CallCtx<'_>, args: &[Value]) -> FuncResult {
    let tag = args[0].as_str().unwrap_or_default().to_string();
    log().lock().unwrap().entry(tag).or_default().push(args[1..].to_vec());
    Ok(args[1].clone())
}

/// `test.map(l []?1, f func(?1) ?2) []?2`, built on `Caller` like `iter.map`.
fn map(ctx: &CallCtx<'_>, args: &[Value]) -> FuncResult {
    let (Some(items), Some(Value::Func(f))) = (args[0].as_list(), args.get(1)) else {
        return Err(FuncError::fatal("test.map: bad arguments"));
    };
    let out = items.iter().map(|x| ctx.caller.call(f, vec![x.clone()])).collect::<Result<Vec<_>, _>>()?;
    Ok(Value::list(out))
}

/// `test.fail(msg str) ?1`: a catchable error.
fn fail(_: &CallCtx<'_>, args: &[Value]) -> FuncResult {
    Err(FuncError::catchable(args[0].as_str().unwrap_or_default()))
}

/// `test.fatal(msg str) ?1`: a fatal error.
fn fatal(_: &CallCtx<'_>, args: &[Value]) -> FuncResult {
    Err(FuncError::fatal(args[0].as_str().unwrap_or_default()))
}

/// `test.panic() ?1`: a buggy built-in.
fn panicking(_: &CallCtx<'_>, _: &[Value]) -> FuncResult {
    panic!("this built-in is broken")
}

/// `test.quit() ?1`: a stream that ends without producing anything.
fn quit_stream(_: StreamCtx) -> BoxFuture<'static, ()> {
    Box::pin(async {})
}

/// `test.input(id str) ?1`: emits the value set with [`set`] for `id`, now and on
/// every change.
fn input_stream(ctx: StreamCtx) -> BoxFuture<'static, ()> {
    Box::pin(async move {
        let StreamCtx { mut inputs, out, cancel, .. } = ctx;
        let id = loop {
            if let Some(args) = inputs.borrow_and_update().clone() {
                break args[0].as_str().unwrap_or_default().to_string();
            }
            tokio::select! {
                r = inputs.changed() => if r.is_err() { return },
                _ = cancel.cancelled() => return,
            }
        };
        *lives().lock().unwrap().entry(id.clone()).or_default() += 1;
        let mut rx = input_sender(&id).subscribe();
        loop {
            let v = rx.borrow_and_update().clone();
            if let Some(v) = v {
                tokio::select! {
                    r = out.send(Ok(v)) => if r.is_err() { break },
                    _ = cancel.cancelled() => break,
                }
            }
            tokio::select! {
                r = rx.changed() => if r.is_err() { break },
                _ = cancel.cancelled() => break,
            }
        }
        *lives().lock().unwrap().entry(id).or_default() -= 1;
    })
}

/// `test.echo(x ?1) ?1`: emits its argument whenever it changes.
fn echo_stream(ctx: StreamCtx) -> BoxFuture<'static, ()> {
    Box::pin(async move {
        let StreamCtx { mut inputs, out, cancel, .. } = ctx;
        loop {
            let args = inputs.borrow_and_update().clone();
            if let Some(args) = args
                && out.send(Ok(args[0].clone())).await.is_err()
            {
                return;
            }
            tokio::select! {
                r = inputs.changed() => if r.is_err() { return },
                _ = cancel.cancelled() => return,
            }
        }
    })
}

fn finished() -> &'static Mutex<Vec<String>> {
    static F: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    F.get_or_init(Default::default)
}

/// True once the `test.slowstop(id)` task has finished its (slow) cleanup.
pub fn slowstop_finished(id: &str) -> bool {
    finished().lock().unwrap().iter().any(|x| x == id)
}

/// `test.slowstop(id str) int`: emits 1, and takes 100 ms to clean up after
/// cancellation.
fn slowstop_stream(ctx: StreamCtx) -> BoxFuture<'static, ()> {
    Box::pin(async move {
        let StreamCtx { mut inputs, out, cancel, .. } = ctx;
        let _ = inputs.wait_for(Option::is_some).await;
        let id = inputs.borrow().as_ref().and_then(|a| a[0].as_str().map(str::to_string)).unwrap_or_default();
        let _ = out.send(Ok(Value::Int(1))).await;
        cancel.cancelled().await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        finished().lock().unwrap().push(id);
    })
}

/// Every test built-in.
pub fn registry() -> Arc<Registry> {
    let mut r = Registry::new();
    pure(&mut r, "test.add1", add1);
    pure(&mut r, "test.mod2", mod2);
    pure(&mut r, "test.count", count_fn);
    pure(&mut r, "test.record", record);
    pure(&mut r, "test.map", map);
    pure(&mut r, "test.fail", fail);
    pure(&mut r, "test.fatal", fatal);
    pure(&mut r, "test.panic", panicking);
    stream(&mut r, "test.input", input_stream);
    stream(&mut r, "test.echo", echo_stream);
    stream(&mut r, "test.quit", quit_stream);
    stream(&mut r, "test.slowstop", slowstop_stream);
    Arc::new(r)
}

// ---------------------------------------------------------------- graph building

/// Builds a typed function graph by hand. Every node gets its own one-byte span (at
/// its creation index) so tests can tell which node an error points at.
#[derive(Default)]
pub struct G {
    pub g: FuncGraph,
}

impl G {
    pub fn new() -> G {
        G::default()
    }

    pub fn span_of(id: NodeId) -> Span {
        Span::new(FileId(0), id.0 as usize, id.0 as usize + 1)
    }

    pub fn node(&mut self, kind: NodeKind, ty: Type) -> NodeId {
        let next = NodeId(self.g.nodes.len() as u32);
        let id = self.g.add(kind, G::span_of(next));
        self.g.types.set(id.0 as usize, Some(ty));
        id
    }

    pub fn int(&mut self, v: i64) -> NodeId {
        self.node(NodeKind::Const(Value::Int(v)), Type::Int)
    }

    pub fn str(&mut self, s: &str) -> NodeId {
        self.node(NodeKind::Const(Value::str(s)), Type::Str)
    }

    pub fn call(&mut self, func: &str, args: Vec<NodeId>, ty: Type) -> NodeId {
        self.node(NodeKind::Call { func: func.into(), args }, ty)
    }

    /// `test.input(id)`
    pub fn input(&mut self, id: &str, ty: Type) -> NodeId {
        let s = self.str(id);
        self.call("test.input", vec![s], ty)
    }

    /// `test.count(tag, x)`
    pub fn count(&mut self, tag: &str, x: NodeId, ty: Type) -> NodeId {
        let t = self.str(tag);
        self.call("test.count", vec![t, x], ty)
    }

    pub fn add1(&mut self, x: NodeId) -> NodeId {
        self.call("test.add1", vec![x], Type::Int)
    }

    pub fn bin(&mut self, op: BinOp, a: NodeId, b: NodeId, ty: Type) -> NodeId {
        self.node(NodeKind::Op { op: Op::Bin(op), args: vec![a, b] }, ty)
    }

    pub fn param(&mut self, name: &str, ty: Type) -> (ParamId, NodeId) {
        let p = self.g.add_param(name, Span::default());
        let n = self.node(NodeKind::Param(p), ty);
        (p, n)
    }

    /// `test "NAME" { v => value, }`
    pub fn output(&mut self, name: &str, value: NodeId) {
        let n = self.str(name);
        self.g.stmts.push(resource(n, value));
    }

    pub fn finish(self) -> Arc<FuncGraph> {
        Arc::new(self.g)
    }
}

/// A `test` resource statement named by node `name` with the field `v`.
pub fn resource(name: NodeId, value: NodeId) -> IrStmt {
    IrStmt::Resource(IrResource {
        kind: "test".into(),
        kind_span: Span::default(),
        name,
        fields: vec![IrField {
            origin: Default::default(),
            name: "v".into(),
            value,
            cond: None,
            span: Span::default(),
        }],
        edges: Vec::new(),
        metas: Vec::new(),
        collect: false,
        virtuality: Default::default(),
        classes: Vec::new(),
        span: Span::default(),
    })
}

// ---------------------------------------------------------------- running

/// The `v` field of resource `name` in an output.
pub fn v(out: &Output, name: &str) -> Option<Value> {
    out.resources.iter().find(|r| r.name == name)?.params.iter().find(|(n, ..)| n == "v").map(|(_, v, _)| v.clone())
}

/// Resource names of an output, in order.
pub fn names(out: &Output) -> Vec<String> {
    out.resources.iter().map(|r| r.name.clone()).collect()
}

pub const WAIT: Duration = Duration::from_secs(5);

/// The next snapshot, failing the test after [`WAIT`].
pub async fn next(df: &mut Dataflow) -> Result<Output, Diagnostic> {
    tokio::time::timeout(WAIT, df.next()).await.expect("no snapshot within 5 s").expect("dataflow ended")
}

/// Snapshots until one satisfies `pred`.
pub async fn until(df: &mut Dataflow, mut pred: impl FnMut(&Output) -> bool) -> Output {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let out = tokio::time::timeout_at(deadline, df.next())
            .await
            .expect("expected snapshot did not come within 5 s")
            .expect("dataflow ended")
            .expect("dataflow failed");
        if pred(&out) {
            return out;
        }
    }
}

/// Polls a condition (for effects on other tasks) for up to [`WAIT`].
pub async fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + WAIT;
    while tokio::time::Instant::now() < deadline {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cond()
}

pub fn list_ty(t: Type) -> Type {
    Type::list(t)
}

pub fn ints(xs: &[i64]) -> Value {
    Value::list(xs.iter().map(|x| Value::Int(*x)).collect())
}
