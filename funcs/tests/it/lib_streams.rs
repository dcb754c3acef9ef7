//! Streaming built-ins: values over time, errors that recover, restarts on input
//! changes and prompt cancellation.

use crate::common;
use common::*;
use funcs::api::{FuncError, FuncImpl, FuncResult, Host, StreamCtx};
use lang::types::Type;
use lang::value::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use world::{Health, Topic, View, World, WorldError, Written};

struct Running {
    inputs: watch::Sender<Option<Vec<Value>>>,
    out: mpsc::Receiver<FuncResult>,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

fn start(name: &str, inputs: Option<Vec<Value>>) -> Running {
    start_on(watching_host(), name, inputs)
}

/// [`start`] with the given host (its state directory, its value store).
fn start_on(host: Host, name: &str, inputs: Option<Vec<Value>>) -> Running {
    let b = registry().get(name).unwrap_or_else(|| panic!("{name} is not registered"));
    let FuncImpl::Stream(f) = b.imp else { panic!("{name} is not a stream") };
    let (itx, irx) = watch::channel(inputs);
    let (otx, orx) = mpsc::channel(16);
    let cancel = CancellationToken::new();
    let ctx =
        StreamCtx { arg_types: vec![], ret_type: Type::Variant, host, inputs: irx, out: otx, cancel: cancel.clone() };
    let task = tokio::spawn(f(ctx));
    Running { inputs: itx, out: orx, cancel, task }
}

impl Running {
    async fn next(&mut self) -> FuncResult {
        match tokio::time::timeout(Duration::from_secs(30), self.out.recv()).await {
            Ok(Some(r)) => r,
            Ok(None) => panic!("stream ended"),
            Err(_) => panic!("no value within 30 s"),
        }
    }
    async fn value(&mut self) -> Value {
        self.next().await.unwrap_or_else(|e| panic!("expected a value, got {e:?}"))
    }
    /// Stops the stream and checks it returns promptly.
    async fn stop(self) {
        self.cancel.cancel();
        tokio::time::timeout(Duration::from_secs(2), self.task).await.expect("stream did not stop on cancel").unwrap();
    }
    /// The next values until `want`: a file rewritten in place may be read between its
    /// truncation and its write, which shows as an empty value first.
    async fn value_until(&mut self, want: Value) {
        loop {
            match self.next().await {
                Ok(v) if v == want => return,
                Ok(v) if v == Value::str("") => {}
                other => panic!("expected {want}, got {other:?}"),
            }
        }
    }
    fn set(&self, args: Vec<Value>) {
        self.inputs.send_replace(Some(args));
    }
}

#[tokio::test(start_paused = true)]
async fn datetime_now_ticks_every_second() {
    let mut r = start("datetime.now", Some(vec![]));
    let t0 = r.value().await.as_int().unwrap();
    let before = tokio::time::Instant::now();
    let t1 = r.value().await.as_int().unwrap();
    let t2 = r.value().await.as_int().unwrap();
    assert_eq!((t1, t2), (t0 + 1, t0 + 2));
    assert_eq!(before.elapsed(), Duration::from_secs(2));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn str_now_and_weekday_fast_emit() {
    let mut r = start("datetime.str_now", Some(vec![]));
    let a = r.value().await;
    let b = r.value().await;
    assert_ne!(a, b);
    assert!(a.as_str().unwrap().contains(':'));
    r.stop().await;
    let mut w = start("datetime.weekday_fast", Some(vec![]));
    let day = w.value().await;
    assert!(
        ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"].contains(&day.as_str().unwrap())
    );
    w.stop().await;
}

#[tokio::test(start_paused = true)]
async fn history_delays_values() {
    let mut r = start("history", Some(vec![i(1), i(1000)]));
    assert_eq!(r.value().await, i(1));
    tokio::time::sleep(Duration::from_millis(100)).await;
    r.set(vec![i(2), i(1000)]);
    let t = tokio::time::Instant::now();
    assert_eq!(r.value().await, i(2));
    assert_eq!(t.elapsed(), Duration::from_millis(1000));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn history_with_zero_index_passes_through() {
    let mut r = start("history", Some(vec![s("a"), i(0)]));
    assert_eq!(r.value().await, s("a"));
    r.set(vec![s("b"), i(0)]);
    assert_eq!(r.value().await, s("b"));
    r.stop().await;
}

#[tokio::test]
async fn random1_new_value_when_length_changes() {
    let mut r = start("random1", Some(vec![i(12)]));
    let a = r.value().await;
    assert_eq!(a.as_str().unwrap().len(), 12);
    assert!(a.as_str().unwrap().chars().all(|c| c.is_ascii_alphanumeric()));
    r.set(vec![i(4)]);
    assert_eq!(r.value().await.as_str().unwrap().len(), 4);
    r.set(vec![i(-1)]);
    assert!(matches!(r.next().await, Err(FuncError::Catchable(_))));
    r.stop().await;
}

#[tokio::test]
async fn streams_wait_for_inputs() {
    let mut r = start("random1", None);
    assert!(tokio::time::timeout(Duration::from_millis(50), r.out.recv()).await.is_err());
    r.set(vec![i(3)]);
    assert_eq!(r.value().await.as_str().unwrap().len(), 3);
    r.stop().await;
}

#[tokio::test]
async fn os_readfile_follows_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("input");
    let mut r = start("os.readfile", Some(vec![s(path.to_str().unwrap())]));
    // Missing: a catchable error.
    assert!(matches!(r.next().await, Err(FuncError::Catchable(m)) if m.contains("input")));
    // Creation is seen within 100 ms.
    std::fs::write(&path, "hello").unwrap();
    let t = std::time::Instant::now();
    r.value_until(s("hello")).await;
    assert!(t.elapsed() < Duration::from_millis(100), "took {:?}", t.elapsed());
    // A rewrite.
    std::fs::write(&path, "world").unwrap();
    let t = std::time::Instant::now();
    r.value_until(s("world")).await;
    assert!(t.elapsed() < Duration::from_millis(100), "took {:?}", t.elapsed());
    // Rename away and back.
    let other = dir.path().join("other");
    std::fs::rename(&path, &other).unwrap();
    assert!(matches!(r.next().await, Err(FuncError::Catchable(_))));
    std::fs::write(&other, "again").unwrap();
    std::fs::rename(&other, &path).unwrap();
    r.value_until(s("again")).await;
    // A new path restarts the watch.
    let second = dir.path().join("second");
    std::fs::write(&second, "2nd").unwrap();
    r.set(vec![s(second.to_str().unwrap())]);
    r.value_until(s("2nd")).await;
    r.stop().await;
}

#[tokio::test]
async fn os_file_exists_follows_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let mut r = start("os.file_exists", Some(vec![s(path.to_str().unwrap())]));
    assert_eq!(r.value().await, b(false));
    std::fs::write(&path, "").unwrap();
    assert_eq!(r.value().await, b(true));
    std::fs::remove_file(&path).unwrap();
    assert_eq!(r.value().await, b(false));
    r.stop().await;
}

#[tokio::test]
async fn os_system_emits_each_line_and_is_killed_on_cancel() {
    let mut r = start("os.system", Some(vec![s("echo 0; echo 1")]));
    assert_eq!(r.value().await, s("0"));
    assert_eq!(r.value().await, s("1"));
    r.set(vec![s("echo changed")]);
    assert_eq!(r.value().await, s("changed"));
    r.stop().await;

    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let cmd = format!("echo start; sleep 1; touch {}", marker.display());
    let mut r = start("os.system", Some(vec![s(&cmd)]));
    assert_eq!(r.value().await, s("start"));
    r.stop().await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!marker.exists(), "the command kept running after cancellation");
}

#[tokio::test]
async fn sys_streams_emit_machine_facts() {
    let mut r = start("sys.load", Some(vec![]));
    let v = r.value().await;
    assert!(v.field("x1").and_then(Value::as_float).is_some() && v.field("x15").is_some());
    r.stop().await;
    let mut r = start("sys.uptime", Some(vec![]));
    assert!(r.value().await.as_int().unwrap() > 0);
    r.stop().await;
    let mut r = start("sys.cpu_count", Some(vec![]));
    assert!(r.value().await.as_int().unwrap() >= 1);
    r.stop().await;
    let mut r = start("sys.hostname", Some(vec![]));
    assert_eq!(r.value().await, s(&funcs::core::sys::machine_hostname()));
    r.stop().await;
    let mut r = start("os.user_exists", Some(vec![s("root")]));
    assert_eq!(r.value().await, b(true));
    r.set(vec![s("no-such-user-tend")]);
    assert_eq!(r.value().await, b(false));
    r.stop().await;
    let mut r = start("os.modinfo_loaded", Some(vec![s("surely_not_a_module")]));
    assert_eq!(r.value().await, b(false));
    r.stop().await;
    let mut r = start("net.macs", Some(vec![]));
    assert!(r.value().await.as_list().is_some());
    r.stop().await;
    let mut r = start("net.wired_interface", Some(vec![]));
    assert!(r.value().await.as_str().is_some());
    r.stop().await;
}

#[test]
fn machine_fact_parsers() {
    use funcs::core::sys::{count_cpu_list, parse_loadavg};
    assert_eq!(count_cpu_list("0-3,5\n"), Some(5));
    assert_eq!(count_cpu_list("0"), Some(1));
    assert_eq!(count_cpu_list("x"), None);
    assert_eq!(parse_loadavg("0.52 0.58 0.59 1/123 4567"), Some((0.52, 0.58, 0.59)));
    assert_eq!(parse_loadavg("bad"), None);
}

#[tokio::test(start_paused = true)]
async fn test_package_streams() {
    let mut r = start("test.forkvloop", Some(vec![]));
    assert_eq!(r.value().await, m(vec![(s("foo"), s("bar"))]));
    r.stop().await;
    let mut r = start("test.forloop", Some(vec![]));
    assert_eq!(r.value().await, strs(&["foo"]));
    let t = tokio::time::Instant::now();
    assert_eq!(r.value().await, strs(&["bar"]));
    assert_eq!(t.elapsed(), Duration::from_secs(5));
    r.stop().await;
    let mut r = start("test.fastcount", Some(vec![]));
    assert_eq!(r.value().await, i(0));
    assert_eq!(r.value().await, i(1));
    r.stop().await;
    let mut r = start("test.slow_string", Some(vec![]));
    let t = tokio::time::Instant::now();
    assert_eq!(r.value().await, s("slow"));
    assert_eq!(t.elapsed(), Duration::from_secs(5));
    r.stop().await;
    let mut r = start("example.flipflop", Some(vec![]));
    assert_eq!(r.value().await, b(false));
    assert_eq!(r.value().await, b(true));
    r.stop().await;
}

#[tokio::test]
async fn interface_cidr_of_loopback() {
    if std::process::Command::new("ip").arg("-V").output().is_err() {
        println!("skipping: the `ip` command is not available");
        return;
    }
    let mut r = start("net.interface_cidr", Some(vec![s("lo")]));
    assert_eq!(r.value().await, s("127.0.0.1/8"));
    r.set(vec![s("no-such-iface0")]);
    assert!(matches!(r.next().await, Err(FuncError::Catchable(_))));
    r.stop().await;
}

#[tokio::test]
async fn value_get_follows_the_store() {
    let values = std::sync::Arc::new(funcs::core::value::MemValues::default());
    let host = Host { values: values.clone(), ..Host::default() };
    let b_ = registry().get("value.get_str").unwrap();
    let FuncImpl::Stream(f) = b_.imp else { panic!() };
    let (itx, irx) = watch::channel(Some(vec![s("lib-test-key")]));
    let (otx, mut orx) = mpsc::channel(4);
    let cancel = CancellationToken::new();
    let ret = lang::types::parse_type("struct{value str; ready bool}").unwrap();
    let ctx =
        StreamCtx { arg_types: vec![Type::Str], ret_type: ret, host, inputs: irx, out: otx, cancel: cancel.clone() };
    let task = tokio::spawn(f(ctx));
    let next = async |rx: &mut mpsc::Receiver<FuncResult>| {
        tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.unwrap().unwrap()
    };
    assert_eq!(next(&mut orx).await.unwrap(), st(vec![("value", s("")), ("ready", b(false))]));
    values.set("lib-test-key", s("wow"));
    assert_eq!(next(&mut orx).await.unwrap(), st(vec![("value", s("wow")), ("ready", b(true))]));
    values.set("lib-test-key", i(42));
    assert!(matches!(next(&mut orx).await, Err(FuncError::Catchable(_))));
    drop(itx);
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(2), task).await.unwrap().unwrap();
}

#[tokio::test]
async fn os_readfile_waits_for_a_writer_to_finish() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("port");
    std::fs::write(&path, "8080").unwrap();
    let mut r = start("os.readfile", Some(vec![s(path.to_str().unwrap())]));
    r.value_until(s("8080")).await;
    // `echo 9090 > port`, slowed down: truncated, then written, then closed. The empty
    // file between is not a value of the fact.
    let mut writer = std::fs::File::create(&path).unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    writer.write_all(b"9090").unwrap();
    drop(writer);
    assert_eq!(r.next().await.unwrap(), s("9090"), "the half-written file was taken");
    // A writer that keeps the file open (a log) is still followed, after a short wait.
    let mut log = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    log.write_all(b"\nmore").unwrap();
    let t = std::time::Instant::now();
    assert_eq!(r.next().await.unwrap(), s("9090\nmore"));
    assert!(t.elapsed() < Duration::from_secs(2), "took {:?}", t.elapsed());
    drop(log);
    r.stop().await;
}

#[tokio::test]
async fn many_watched_files_share_one_watcher() {
    let dir = tempfile::tempdir().unwrap();
    let mut runs = Vec::new();
    // More than the default inotify instance limit (128).
    for n in 0..200 {
        let p = dir.path().join(format!("f{n}"));
        std::fs::write(&p, format!("v{n}")).unwrap();
        let mut r = start("os.readfile", Some(vec![s(p.to_str().unwrap())]));
        r.value_until(s(&format!("v{n}"))).await;
        runs.push(r);
    }
    std::fs::write(dir.path().join("f150"), "changed").unwrap();
    let t = std::time::Instant::now();
    runs[150].value_until(s("changed")).await;
    assert!(t.elapsed() < Duration::from_millis(100), "took {:?}", t.elapsed());
    for r in runs {
        r.stop().await;
    }
}

#[tokio::test]
async fn os_readfile_in_a_directory_created_later() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("later");
    let path = sub.join("f");
    let mut r = start("os.readfile", Some(vec![s(path.to_str().unwrap())]));
    assert!(matches!(r.next().await, Err(FuncError::Catchable(_))));
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(&path, "late").unwrap();
    r.value_until(s("late")).await;
    // Once watched, changes are quick again.
    tokio::time::sleep(Duration::from_millis(50)).await;
    std::fs::write(&path, "later").unwrap();
    let t = std::time::Instant::now();
    r.value_until(s("later")).await;
    assert!(t.elapsed() < Duration::from_millis(100), "took {:?}", t.elapsed());
    // Remove and recreate the directory.
    std::fs::remove_dir_all(&sub).unwrap();
    assert!(matches!(r.next().await, Err(FuncError::Catchable(_))));
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(&path, "again").unwrap();
    r.value_until(s("again")).await;
    r.stop().await;
}

/// A world held in memory: one view per topic, set by the test.
struct MemWorld(std::sync::Mutex<std::collections::BTreeMap<Topic, tokio::sync::watch::Sender<Arc<View>>>>);

impl MemWorld {
    fn sender(&self, topic: &Topic) -> tokio::sync::watch::Sender<Arc<View>> {
        let mut map = self.0.lock().unwrap();
        map.entry(topic.clone()).or_insert_with(|| tokio::sync::watch::Sender::new(Arc::new(View::unknown()))).clone()
    }

    fn show(&self, topic: &Topic, entries: &[(&str, &str)], stale: bool) {
        let entries = entries.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let view = View { stale, ..View::fresh(entries, 1) };
        self.sender(topic).send_replace(Arc::new(view));
    }
}

#[async_trait::async_trait]
impl World for MemWorld {
    fn hostname(&self) -> &str {
        "h1"
    }
    fn follow(&self, topic: &Topic) -> world::Follow {
        self.sender(topic).subscribe()
    }
    async fn get(&self, _key: &str) -> Option<String> {
        None
    }
    async fn set(&self, _key: &str, _value: Option<&str>) -> Result<Written, WorldError> {
        Ok(Written::Done)
    }
    async fn set_mine(&self, _ns: &str, _value: Option<&str>) -> Result<Written, WorldError> {
        Ok(Written::Done)
    }
    async fn volunteer(&self, _ns: &str, _terms: &world::Candidacy) -> Result<Written, WorldError> {
        Ok(Written::Done)
    }
    async fn withdraw(&self, _ns: &str, _owner: Option<&str>, _linger: u64) -> Result<Written, WorldError> {
        Ok(Written::Done)
    }
    async fn export(&self, _exports: &[world::Export]) -> Result<Written, WorldError> {
        Ok(Written::Done)
    }
    fn health(&self) -> Health {
        world::Detached::new("h1").health()
    }
}

#[tokio::test]
async fn world_functions_follow_the_world() {
    let world = Arc::new(MemWorld(Default::default()));
    let host = Host { world: world.clone(), ..Host::default() };
    let key = Topic::Val("key1".into());
    let mut g = start_on(host.clone(), "world.getval", Some(vec![s("key1")]));
    // Nothing is emitted before the store was read once.
    assert!(tokio::time::timeout(Duration::from_millis(100), g.value()).await.is_err());
    world.show(&key, &[], false);
    assert_eq!(g.value().await, st(vec![("value", s("")), ("exists", b(false))]));
    world.show(&key, &[("key1", "hello")], false);
    assert_eq!(g.value().await, st(vec![("value", s("hello")), ("exists", b(true))]));
    // A stale view with the same entries is not a new value.
    world.show(&key, &[("key1", "hello")], true);
    world.show(&key, &[("key1", "again")], false);
    assert_eq!(g.value().await, st(vec![("value", s("again")), ("exists", b(true))]));
    g.stop().await;
    let ns = Topic::Map("ns".into());
    let mut k = start_on(host.clone(), "world.kvlookup", Some(vec![s("ns")]));
    world.show(&ns, &[("h1", "one"), ("h 2", "two")], false);
    assert_eq!(k.value().await, m(vec![(s("h1"), s("one")), (s("h 2"), s("two"))]));
    k.stop().await;
    let chosen = Topic::Schedule("xsched".into());
    let mut sc = start_on(host.clone(), "world.schedule", Some(vec![s("xsched")]));
    world.show(&chosen, &[("h2", ""), ("h1", "")], false);
    assert_eq!(sc.value().await, strs(&["h1", "h2"]));
    sc.stop().await;
    let mut c = start_on(host.clone(), "world/collect.res", Some(vec![s("file")]));
    let (a, b2, other) = (
        world::export_entry("file", "h2", "/b"),
        world::export_entry("file", "h1", "/a"),
        world::export_entry("exec", "h1", "x"),
    );
    world.show(&Topic::Exports, &[(a.as_str(), "{}"), (b2.as_str(), "{}"), (other.as_str(), "{}")], false);
    let entry = |name: &str, host: &str| st(vec![("name", s(name)), ("host", s(host))]);
    assert_eq!(c.value().await, Value::list(vec![entry("/a", "h1"), entry("/b", "h2")]));
    c.stop().await;
}

#[tokio::test]
async fn a_host_without_a_watcher_polls() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("input");
    std::fs::write(&path, "one").unwrap();
    let mut r = start_on(Host::default(), "os.readfile", Some(vec![s(path.to_str().unwrap())]));
    r.value_until(s("one")).await;
    std::fs::write(&path, "two").unwrap();
    assert_eq!(r.value().await, s("two"));
    r.stop().await;
}
