//! The function API: how a built-in is implemented and registered.
//!
//! A built-in is either *pure* (a plain Rust fn from argument values to a value; also
//! used for impure-but-not-streaming functions, which are re-run when inputs change) or
//! *streaming* (owns a task, emits values over time, stops on cancellation).

use futures::future::BoxFuture;
use lang::catalog::FuncDecl;
use lang::types::Type;
use lang::value::{Closure, Value};
use std::path::PathBuf;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

/// A function failure. Catchable errors flow to the nearest `<|>`; fatal ones stop the
/// dataflow with an errStream error.
#[derive(Clone, Debug, PartialEq)]
pub enum FuncError {
    Catchable(String),
    Fatal(String),
}

impl FuncError {
    pub fn catchable(msg: impl Into<String>) -> FuncError {
        FuncError::Catchable(msg.into())
    }
    pub fn fatal(msg: impl Into<String>) -> FuncError {
        FuncError::Fatal(msg.into())
    }
    pub fn message(&self) -> &str {
        match self {
            FuncError::Catchable(m) | FuncError::Fatal(m) => m,
        }
    }
}

pub type FuncResult = Result<Value, FuncError>;

/// Calls function values (lambdas) on behalf of higher-order built-ins (`iter.map`, ...).
/// Implemented by the runtime. Not `Sync`: the runtime is single-threaded, and a caller
/// must not leave the thread it was handed to.
pub trait Caller {
    fn call(&self, f: &Closure, args: Vec<Value>) -> FuncResult;
}

/// Facts about the running program that some built-ins need.
#[derive(Clone, Debug, Default)]
pub struct Host {
    /// The program's root directory on disk (the directory of its entry file or
    /// `metadata.yaml`): `deploy.*` paths are relative to it.
    pub root: PathBuf,
    /// Process arguments, for `os.args`.
    pub args: Vec<String>,
}

/// Everything a pure call sees besides its argument values.
pub struct CallCtx<'a> {
    /// The concrete types of the arguments at this call site (after unification).
    pub arg_types: &'a [Type],
    /// The concrete result type at this call site (`math.fortytwo`, `decode_json`).
    pub ret_type: &'a Type,
    pub caller: &'a dyn Caller,
    pub host: &'a Host,
}

/// A pure (or impure, non-streaming) built-in.
pub type PureFn = fn(&CallCtx<'_>, &[Value]) -> FuncResult;

/// Starts one instance of a streaming built-in for one call site.
///
/// `inputs` holds the latest argument values (`None` until every argument has a value;
/// functions without arguments see `Some(vec![])` at once). Each `Ok` sent on `out` is a
/// new value of the call; an `Err` is an error value (fatal errors end the stream). The
/// task must return promptly once `cancel` fires.
pub type StreamFn = fn(StreamCtx) -> BoxFuture<'static, ()>;

pub struct StreamCtx {
    pub arg_types: Vec<Type>,
    pub ret_type: Type,
    pub host: Host,
    pub inputs: watch::Receiver<Option<Vec<Value>>>,
    pub out: mpsc::Sender<FuncResult>,
    pub cancel: CancellationToken,
}

#[derive(Clone, Copy, Debug)]
pub enum FuncImpl {
    Pure(PureFn),
    Stream(StreamFn),
}

/// A registered built-in: what the type checker needs plus the implementation.
#[derive(Clone, Debug)]
pub struct Builtin {
    pub decl: FuncDecl,
    pub imp: FuncImpl,
}
