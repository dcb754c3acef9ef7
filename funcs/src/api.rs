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
use std::sync::Arc;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

/// A function failure. Catchable errors flow to the nearest `<|>`; fatal ones stop the
/// dataflow with an errStream error.
#[derive(Clone, Debug, PartialEq)]
pub enum FuncError {
    Catchable(String),
    Fatal(String),
    /// Not a failure: a lambda called through [`Caller`] has no value yet (a stream in it
    /// has not produced). The runtime discards whatever the built-in made of it and runs
    /// the call again once the value comes.
    NotReady,
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
            FuncError::NotReady => "value not ready yet",
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

/// What built-ins see of the world around the program: facts about the running program
/// and the services it shares with the resources. The binary builds one and hands it to
/// the dataflow; tests build their own. No built-in reaches for process-wide state.
#[derive(Clone)]
pub struct Host {
    /// The program's root directory on disk (the directory of its entry file or
    /// `metadata.yaml`): `deploy.*` paths are relative to it.
    pub root: PathBuf,
    /// Process arguments, for `os.args`.
    pub args: Vec<String>,
    /// The engine's state directory (`--prefix`): the local world store the `world.*`
    /// functions read (`kv/`, `schedule/`) and `local.*`'s directories (`local/`).
    pub state_dir: PathBuf,
    /// What `value.get*` read: in `tend run`, the store the `value` resources write.
    pub values: Arc<dyn ValueSource>,
    /// The host name the program sees (`--hostname`), instead of the machine's.
    pub hostname: Option<String>,
    /// How the built-ins that follow files (`os.readfile`, the local world store) learn of
    /// changes: in `tend run`, the process's one inotify hub. [`Host::new`] has none, and
    /// those built-ins poll.
    pub watcher: Arc<dyn PathWatcher>,
    /// What the hosts of a fleet share (`world.getval`, `world.kvlookup`): in `tend run`
    /// the local store or etcd, the same one the `kv` resources write. [`Host::new`] has
    /// an empty one.
    pub world: Arc<dyn world::World>,
    /// The firmware daemon `sys/fwupd.reboot_needed()` asks: in `tend run` fwupd on the
    /// system bus. [`Host::new`] has none (no reboot is ever needed).
    pub firmware: Arc<dyn FirmwareDaemon>,
}

/// What the `sys/fwupd` functions ask of the firmware daemon.
pub trait FirmwareDaemon: Send + Sync {
    /// Whether a device has firmware deployed that waits for a reboot; an error when the
    /// daemon cannot be asked.
    fn reboot_needed(&self) -> BoxFuture<'static, Result<bool, String>>;
    /// A receiver that changes whenever the daemon announces a change (or, after an error,
    /// when it is worth asking again).
    fn changes(&self) -> watch::Receiver<u64>;
}

/// No firmware daemon: no reboot is needed, and nothing ever changes.
pub struct NoFirmware;

impl FirmwareDaemon for NoFirmware {
    fn reboot_needed(&self) -> BoxFuture<'static, Result<bool, String>> {
        Box::pin(async { Ok(false) })
    }

    fn changes(&self) -> watch::Receiver<u64> {
        // The sender is dropped: the receiver never sees a change.
        watch::channel(0).1
    }
}

impl Host {
    /// A host for a program rooted at `root`, with `state_dir` as its state and a fresh
    /// in-memory value store.
    pub fn new(root: impl Into<PathBuf>, state_dir: impl Into<PathBuf>) -> Host {
        Host {
            root: root.into(),
            args: Vec::new(),
            state_dir: state_dir.into(),
            values: Arc::new(crate::core::value::MemValues::default()),
            hostname: None,
            watcher: Arc::new(Polling),
            world: Arc::new(world::Detached::new("")),
            firmware: Arc::new(NoFirmware),
        }
    }
}

impl Default for Host {
    /// No root, a state directory under the temporary directory, an empty value store.
    fn default() -> Host {
        Host::new(PathBuf::new(), std::env::temp_dir().join("tend-state"))
    }
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("root", &self.root)
            .field("args", &self.args)
            .field("state_dir", &self.state_dir)
            .finish_non_exhaustive()
    }
}

/// Where `value.get*` read from.
pub trait ValueSource: Send + Sync {
    fn get(&self, key: &str) -> Option<Value>;
    /// What a resource kind published for the functions under its namespace (`http:client`
    /// for `net/http.response`); none by default.
    fn get_in(&self, _namespace: &str, _key: &str) -> Option<Value> {
        None
    }
    /// A receiver that changes whenever any stored value changes.
    fn changes(&self) -> watch::Receiver<u64>;
}

/// How built-ins watch paths (see [`Host::watcher`]): the contract the local world store
/// uses too, defined once in the lowest layer.
pub use world::watch::{PathChanges, PathWatcher, Polling, Watched};

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
