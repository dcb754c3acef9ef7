//! `schedule` end to end with `world.schedule` on the local world: the resource writes
//! this host's candidacy into the store under the state directory and the function (a
//! real stream from the core registry) reports the chosen hosts as it changes.

use crate::support;

use std::fs;
use std::path::Path;
use std::time::Duration;

use engine::{Graph, InitCtx, Meta, ResKey, Resource};
use funcs::api::{FuncImpl, FuncResult, StreamCtx};
use lang::types::Type;
use lang::value::Value;
use resources::build_with;
use resources::machine::Machine;
use support::{WAIT, check, converge, engine, eventually, params, s};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use world::LocalWorld;

/// A running `world.schedule(namespace)`.
struct Chosen {
    _inputs: watch::Sender<Option<Vec<Value>>>,
    out: mpsc::Receiver<FuncResult>,
    cancel: CancellationToken,
}

impl Chosen {
    fn start(state: &Path, namespace: &str) -> Chosen {
        let registry = funcs::registry::Registry::core();
        let FuncImpl::Stream(f) = registry.get("world.schedule").expect("registered").imp else { panic!("a stream") };
        let (inputs, irx) = watch::channel(Some(vec![Value::str(namespace)]));
        let (otx, out) = mpsc::channel(16);
        let cancel = CancellationToken::new();
        let ctx = StreamCtx {
            arg_types: vec![Type::Str],
            ret_type: Type::List(Box::new(Type::Str)),
            host: funcs::api::Host { world: world(state), ..funcs::api::Host::new("", state) },
            inputs: irx,
            out: otx,
            cancel: cancel.clone(),
        };
        tokio::spawn(f(ctx));
        Chosen { _inputs: inputs, out, cancel }
    }

    /// The next value the function emits.
    async fn next(&mut self) -> Vec<String> {
        let got = tokio::time::timeout(Duration::from_secs(20), self.out.recv()).await.expect("a value in time");
        let value = got.expect("stream running").expect("no error");
        value.as_list().expect("a list").iter().map(|v| v.as_str().expect("str").to_string()).collect()
    }
}

impl Drop for Chosen {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

fn init_ctx(state: &Path, name: &str) -> InitCtx {
    InitCtx { key: ResKey::new("schedule", name), var_dir: Some(state.join("var")), state_dir: state.to_path_buf() }
}

fn me() -> String {
    nix::unistd::gethostname().unwrap().to_string_lossy().into_owned()
}

/// Writes a record the way the resource does (atomically), so readers never see half.
fn put(path: &Path, text: &str) {
    let tmp = path.with_file_name(".tmp-record");
    fs::write(&tmp, text).unwrap();
    fs::rename(&tmp, path).unwrap();
}

fn record_path(state: &Path, ns: &str, host: &str) -> std::path::PathBuf {
    state.join("schedule").join(ns).join(host)
}

/// The local world under `state`, as this machine.
fn world(state: &Path) -> std::sync::Arc<dyn world::World> {
    std::sync::Arc::new(LocalWorld::new(state, me()))
}

fn read_schedule(state: &Path, ns: &str) -> Value {
    Value::list(world::local::read_schedule(state, ns).into_iter().map(Value::str).collect())
}

/// A `schedule` resource built and initialised on `world` (one agent's resources share one).
async fn schedule(
    world: &std::sync::Arc<dyn world::World>,
    state: &Path,
    ns: &str,
    pairs: &[(&str, Value)],
) -> Box<dyn Resource> {
    let host = Machine { world: world.clone(), ..Machine::system() };
    let mut res = build_with(&host, "schedule", ns, &params(pairs)).unwrap();
    res.validate().unwrap();
    res.init(&init_ctx(state, ns)).await.unwrap();
    res
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn candidacy_max_withdraw_ttl_and_persist_reach_world_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();

    // Volunteering makes this host the chosen one; withdrawing takes it out again.
    let mut chosen = Chosen::start(state, "xsched");
    // The resources share this agent's world, as in `tend run`: each sees the others'
    // writes at once (another world over the same files sees them through its watch).
    let agent = world(state);
    assert_eq!(chosen.next().await, Vec::<String>::new());
    let opts = [("strategy", s("rr")), ("max", Value::Int(2)), ("persist", Value::Bool(false)), ("ttl", Value::Int(0))];
    let mut res = schedule(&agent, state, "xsched", &opts).await;
    let (ok, reports) = check(res.as_mut(), false).await.unwrap();
    assert!(!ok && reports[0].contains("would volunteer"), "{reports:?}");
    converge(res.as_mut()).await;
    assert_eq!(chosen.next().await, vec![me()]);

    // `max` bounds the choice: another (live) candidate fits under max 2...
    let other = record_path(state, "xsched", "0-other");
    put(&other, "strategy=rr\nmax=2\npersist=true\nttl=0\nowner=x\n");
    let mut both = vec!["0-other".to_string(), me()];
    both.sort();
    assert_eq!(chosen.next().await, both);
    // ...but not when it asks for a single host; an expired candidate does not count.
    put(&other, "strategy=rr\nmax=1\npersist=true\nttl=0\nowner=x\n");
    assert_eq!(chosen.next().await, vec!["0-other".to_string()]);
    put(&other, "strategy=rr\nmax=1\npersist=false\nttl=0\nowner=x\nexpires=1\n");
    assert_eq!(chosen.next().await, vec![me()]);
    fs::remove_file(&other).unwrap();

    let mut withdraw = schedule(&agent, state, "xsched", &[("withdraw", Value::Bool(true))]).await;
    converge(withdraw.as_mut()).await;
    assert_eq!(chosen.next().await, Vec::<String>::new());
    // The replaced instance's cleanup must not touch the record it no longer owns.
    converge(res.as_mut()).await;
    assert_eq!(chosen.next().await, vec![me()]);
    let mut again = schedule(&agent, state, "xsched", &opts).await;
    assert!(!check(again.as_mut(), true).await.unwrap().0, "the new instance takes the record over");
    res.cleanup().await.unwrap();
    assert!(record_path(state, "xsched", &me()).exists(), "cleanup of a superseded instance leaves the record");
    // Without ttl or persist, stopping the resource ends the candidacy at once.
    again.cleanup().await.unwrap();
    assert_eq!(chosen.next().await, Vec::<String>::new());

    // With a ttl the candidacy outlives the resource by that long; persist keeps it.
    let mut ttl = schedule(&agent, state, "ns1", &[("ttl", Value::Int(30))]).await;
    converge(ttl.as_mut()).await;
    ttl.cleanup().await.unwrap();
    let text = fs::read_to_string(record_path(state, "ns1", &me())).unwrap();
    let expires: u64 = text.lines().find_map(|l| l.strip_prefix("expires=")).unwrap().parse().unwrap();
    let now = world::local::now();
    assert!((now + 25..=now + 31).contains(&expires), "{text}");
    assert_eq!(read_schedule(state, "ns1"), Value::list(vec![Value::str(me())]));
    let mut persist = schedule(&agent, state, "ns2", &[("persist", Value::Bool(true))]).await;
    converge(persist.as_mut()).await;
    persist.cleanup().await.unwrap();
    let text = fs::read_to_string(record_path(state, "ns2", &me())).unwrap();
    assert!(!text.contains("expires="), "{text}");
    assert_eq!(read_schedule(state, "ns2"), Value::list(vec![Value::str(me())]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_candidacy_is_renewed_and_restored() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let engine = engine(&state);
    let mut g = Graph::new();
    let host = Machine { world: world(&state), ..Machine::system() };
    let res = build_with(&host, "schedule", "renewed", &params(&[("ttl", Value::Int(1))])).unwrap();
    g.add_vertex(ResKey::new("schedule", "renewed"), Meta::default(), res);
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    let path = record_path(&state, "renewed", &me());
    let expires = || {
        fs::read_to_string(&path)
            .ok()
            .and_then(|t| t.lines().find_map(|l| l.strip_prefix("expires=")?.parse::<u64>().ok()))
    };
    let first = expires().expect("a lease");
    assert!(eventually(|| expires().is_some_and(|e| e > first)).await, "the lease is renewed while running");
    fs::remove_file(&path).unwrap();
    assert!(eventually(|| path.exists()).await, "a removed candidacy is restored");
    engine.apply(Graph::new()).await.unwrap();
    assert!(path.exists(), "with a ttl, the candidacy outlives the resource...");
    let none = Value::list(vec![]);
    assert!(eventually(|| read_schedule(&state, "renewed") == none).await, "...until it expires");
    engine.shutdown(WAIT).await;
}

#[tokio::test]
async fn bad_schedule_params_are_named() {
    let host = Machine::system();
    let cases: [(&[(&str, Value)], &str); 4] = [
        (&[("strategy", s("fifo"))], "field `strategy`: `fifo` is not one of `rr` or `alpha`"),
        (&[("max", Value::Int(-1))], "field `max`"),
        (&[("withdraw", Value::Bool(true)), ("max", Value::Int(2))], "field `max`: cannot be combined with `withdraw`"),
        (&[("namespace", s(""))], "field `namespace`"),
    ];
    for (pairs, expected) in cases {
        // A value outside a closed set fails at build; the rest in validation.
        let err = match build_with(&host, "schedule", "ns", &params(pairs)) {
            Ok(res) => res.validate().unwrap_err().message,
            Err(e) => e.to_string(),
        };
        assert!(err.starts_with("schedule[ns]: ") && err.contains(expected), "{err} lacks {expected}");
    }
}

/// `persist` with a `ttl` (mgmt's `schedule-persist.mcl` example): the candidacy outlives
/// the resource by the ttl, then expires, as `ttl` alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persist_with_a_ttl_lingers_for_the_ttl() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let engine = engine(&state);
    let host = Machine { world: world(&state), ..Machine::system() };
    let pairs = [("persist", Value::Bool(true)), ("ttl", Value::Int(1))];
    let res = build_with(&host, "schedule", "ns3", &params(&pairs)).unwrap();
    res.validate().unwrap();
    let mut g = Graph::new();
    g.add_vertex(ResKey::new("schedule", "ns3"), Meta::default(), res);
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(read_schedule(&state, "ns3"), Value::list(vec![Value::str(me())]));
    engine.apply(Graph::new()).await.unwrap();
    assert!(record_path(&state, "ns3", &me()).exists(), "the candidacy outlives the resource...");
    assert!(eventually(|| read_schedule(&state, "ns3") == Value::list(vec![])).await, "...until its ttl runs out");
    engine.shutdown(WAIT).await;
}
