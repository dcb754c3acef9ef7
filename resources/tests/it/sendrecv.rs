//! Values moving between real resources through the engine, as in mgmt's engine corpus
//! (`value-resource0`, `sendrecv-simple3`, `send-recv-1`).

use crate::support;

use engine::{EngineEvent, Graph, Meta, ResKey};
use lang::value::Value;
use resources::Machine;
use support::{WAIT, engine, params, s};

fn add(host: &Machine, g: &mut Graph, kind: &str, name: &str, pairs: &[(&str, Value)]) {
    let res = resources::build_with(host, kind, name, &params(pairs)).expect("builds");
    g.add_vertex(ResKey::new(kind, name), Meta::default(), res);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_chain_reaches_a_test_resource() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    let mut events = engine.subscribe();
    let host = Machine::sandbox(dir.path());
    let mut g = Graph::new();
    add(&host, &mut g, "value", "sr-hello1", &[("any", s("wow"))]);
    add(&host, &mut g, "value", "sr-hello2", &[("any", s("whatever"))]);
    add(&host, &mut g, "test", "sr-test", &[("expectrecv", Value::list(vec![Value::str("anotherstr")]))]);
    g.add_sendrecv(ResKey::new("value", "sr-hello1"), "any", ResKey::new("value", "sr-hello2"), "any");
    g.add_sendrecv(ResKey::new("value", "sr-hello2"), "any", ResKey::new("test", "sr-test"), "anotherstr");
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert!(engine.failures().await.is_empty(), "{:?}", engine.failures().await);
    assert_eq!(host.values.get("sr-hello2"), Some(Value::str("wow")));
    let mut test_applied = false;
    while let Ok(ev) = events.try_recv() {
        if let EngineEvent::Applied { key, .. } = ev {
            test_applied |= key == ResKey::new("test", "sr-test");
        }
    }
    assert!(test_applied);
    engine.shutdown(WAIT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_of_the_wrong_type_fails_only_the_receiver() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    let host = Machine::sandbox(dir.path());
    let mut g = Graph::new();
    add(&host, &mut g, "test", "sr-send", &[("sendvalue", s("hello"))]);
    add(&host, &mut g, "value", "sr-int", &[("any", s("NOPE"))]);
    add(&host, &mut g, "print", "sr-print", &[]);
    add(&host, &mut g, "noop", "sr-bystander", &[]);
    g.add_sendrecv(ResKey::new("test", "sr-send"), "answer", ResKey::new("value", "sr-int"), "any");
    g.add_sendrecv(ResKey::new("value", "sr-int"), "any", ResKey::new("print", "sr-print"), "msg");
    engine.apply(g).await.unwrap();
    assert!(support::eventually(|| host.values.get("sr-int") == Some(Value::Int(42))).await);
    let failures = support::eventually_async(|| engine.failures()).await;
    assert_eq!(failures.keys().cloned().collect::<Vec<_>>(), [ResKey::new("print", "sr-print")]);
    assert!(failures.values().all(|e| e.contains("expected a value of type str, found 42")), "{failures:?}");
    engine.shutdown(WAIT).await;
}
