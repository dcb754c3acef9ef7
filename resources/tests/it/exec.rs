//! The `exec` kind with real processes.

use crate::support;

use std::fs;

use engine::{ApplyCtx, Graph, InitCtx, Meta, ResKey, Resource};
use lang::value::Value;
use resources::services::exec::Exec;
use resources::value_of;
use support::{WAIT, check, engine, params, s, strs};

fn exec(name: &str, pairs: &[(&str, Value)]) -> Exec {
    let e = Exec::build(name, &params(pairs)).expect("builds");
    e.validate().expect("valid");
    e
}

fn sent(res: &dyn Resource, key: &str) -> Value {
    let sends = res.sends().expect("sends");
    value_of(&sends[key]).expect("a value").clone()
}

#[tokio::test]
async fn runs_and_sends_its_output() {
    let mut e = exec("hello", &[("cmd", s("echo hello; echo oops >&2; exit 0")), ("shell", s("/bin/sh"))]);
    let (ok, _) = check(&mut e, true).await.unwrap();
    assert!(!ok, "running the command is a change");
    assert_eq!(sent(&e, "stdout"), Value::str("hello\n"));
    assert_eq!(sent(&e, "stderr"), Value::str("oops\n"));
    assert_eq!(sent(&e, "exitcode"), Value::Int(0));
}

#[tokio::test]
async fn no_shell_unless_asked() {
    let mut e = exec("literal", &[("cmd", s("/bin/echo $HOME"))]);
    check(&mut e, true).await.unwrap();
    assert_eq!(sent(&e, "stdout"), Value::str("$HOME\n"));
    let mut args = exec("args", &[("cmd", s("/bin/echo")), ("args", strs(&["a b", "c"]))]);
    check(&mut args, true).await.unwrap();
    assert_eq!(sent(&args, "stdout"), Value::str("a b c\n"));
}

#[tokio::test]
async fn a_failing_command_is_an_error_with_its_status() {
    let mut e = exec("fail", &[("cmd", s("echo broken >&2; exit 7")), ("shell", s("/bin/sh"))]);
    let err = check(&mut e, true).await.unwrap_err();
    assert!(err.contains("exit status 7") && err.contains("broken"), "{err}");
}

#[tokio::test]
async fn guards_skip_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let touch = format!("touch {}", marker.display());
    let creates = [("cmd", s(&touch)), ("creates", s(marker.to_str().unwrap()))];
    let mut e = exec("creates", &creates);
    assert!(!check(&mut e, true).await.unwrap().0);
    assert!(marker.exists());
    assert!(check(&mut e, true).await.unwrap().0, "creates now exists");

    let out = dir.path().join("out");
    let write = format!("echo ran >> {}", out.display());
    let mut skipped = exec("ifcmd", &[("cmd", s(&write)), ("shell", s("/bin/sh")), ("ifcmd", s("false"))]);
    assert!(check(&mut skipped, true).await.unwrap().0);
    let mut nif = exec("nifcmd", &[("cmd", s(&write)), ("shell", s("/bin/sh")), ("nifcmd", s("true"))]);
    assert!(check(&mut nif, true).await.unwrap().0);
    let mut equals = exec(
        "ifequals",
        &[("cmd", s(&write)), ("shell", s("/bin/sh")), ("ifcmd", s("echo same")), ("ifequals", s("same\n"))],
    );
    assert!(check(&mut equals, true).await.unwrap().0);
    assert!(!out.exists(), "no guarded command ran");
    let mut runs = exec("runs", &[("cmd", s(&write)), ("shell", s("/bin/sh")), ("ifcmd", s("true"))]);
    assert!(!check(&mut runs, true).await.unwrap().0);
    assert_eq!(fs::read_to_string(&out).unwrap(), "ran\n");
}

#[tokio::test]
async fn noop_reports_without_running() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let mut e = exec("noop", &[("cmd", s(&format!("touch {}", marker.display())))]);
    let (ok, reports) = check(&mut e, false).await.unwrap();
    assert!(!ok);
    assert!(reports[0].contains("would run"), "{reports:?}");
    assert!(!marker.exists());
}

#[tokio::test]
async fn environment_and_cwd_are_exactly_what_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let env = Value::map([(Value::str("GREETING"), Value::str("hi"))].into_iter().collect());
    let mut e = exec("env", &[("cmd", s("/usr/bin/env")), ("env", env)]);
    check(&mut e, true).await.unwrap();
    assert_eq!(sent(&e, "stdout"), Value::str("GREETING=hi\n"));
    let mut pwd = exec("pwd", &[("cmd", s("/bin/pwd")), ("cwd", s(dir.path().to_str().unwrap()))]);
    check(&mut pwd, true).await.unwrap();
    let printed = sent(&pwd, "stdout");
    assert_eq!(printed.as_str().map(str::trim), dir.path().canonicalize().unwrap().to_str());
}

#[tokio::test]
async fn output_survives_a_restart_through_the_var_dir() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = InitCtx {
        key: ResKey::new("exec", "persist"),
        var_dir: Some(dir.path().join("var")),
        state_dir: dir.path().to_path_buf(),
    };
    let mut first = exec("persist", &[("cmd", s("/bin/echo saved"))]);
    first.init(&ctx).await.unwrap();
    first.check_apply(&mut ApplyCtx::detached(), true).await.unwrap();
    let mut second = exec("persist", &[("cmd", s("/bin/echo saved"))]);
    second.init(&ctx).await.unwrap();
    assert_eq!(sent(&second, "stdout"), Value::str("saved\n"));
}

#[tokio::test]
async fn validation_names_the_field() {
    let both = Exec::build("x", &params(&[("cmd", s("ls")), ("args", strs(&["a"])), ("shell", s("/bin/sh"))])).unwrap();
    assert!(both.validate().unwrap_err().message.contains("field `args`"));
    let sig = Exec::build("x", &params(&[("sig", s("SIGNOPE"))])).unwrap();
    assert!(sig.validate().unwrap_err().message.contains("field `sig`"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_output_flows_into_a_file_through_send_recv() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out");
    let name = path.to_str().unwrap().to_string();
    let engine = engine(&dir.path().join("state"));
    let mut g = Graph::new();
    let e = resources::build("exec", "producer", &params(&[("cmd", s("/bin/echo produced"))])).unwrap();
    let f = resources::build("file", &name, &params(&[("state", s("exists")), ("content", s(""))])).unwrap();
    g.add_vertex(ResKey::new("exec", "producer"), Meta::default(), e);
    g.add_vertex(ResKey::new("file", &name), Meta::default(), f);
    g.add_sendrecv(ResKey::new("exec", "producer"), "stdout", ResKey::new("file", &name), "content");
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(fs::read_to_string(&path).unwrap(), "produced\n");
    engine.shutdown(WAIT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchcmd_lines_trigger_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("count");
    let engine = engine(&dir.path().join("state"));
    let mut g = Graph::new();
    let pairs = [
        ("cmd", s(&format!("echo run >> {}", out.display()))),
        ("shell", s("/bin/sh")),
        ("watchcmd", s("for i in 1 2 3; do sleep 0.5; echo tick; done; sleep 30")),
        ("watchshell", s("/bin/sh")),
    ];
    g.add_vertex(
        ResKey::new("exec", "watched"),
        Meta::default(),
        resources::build("exec", "watched", &params(&pairs)).unwrap(),
    );
    engine.apply(g).await.unwrap();
    // The startup event plus the ticks; events that arrive while a run is pending collapse
    // into it, so only require that the ticks caused runs beyond the first.
    assert!(support::eventually(|| fs::read_to_string(&out).is_ok_and(|c| c.lines().count() >= 2)).await);
    let report = engine.shutdown(WAIT).await;
    assert!(report.stragglers.is_empty(), "the watch command was stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_interrupts_a_long_running_command() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir.path().join("state"));
    let mut g = Graph::new();
    let res = resources::build("exec", "long", &params(&[("cmd", s("sleep 60"))])).unwrap();
    g.add_vertex(ResKey::new("exec", "long"), Meta::default(), res);
    engine.apply(g).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    // The orderly pause waits half the deadline for the command, then it is interrupted.
    let started = std::time::Instant::now();
    let report = engine.shutdown(std::time::Duration::from_secs(2)).await;
    assert!(report.stragglers.is_empty());
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "took {:?}", started.elapsed());
}

#[tokio::test]
async fn mtimes_force_a_run_and_donecmd_follows_a_successful_one() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("input");
    fs::write(&input, "v1").unwrap();
    let done = dir.path().join("done");
    let pairs = [
        ("cmd", s("true")),
        ("creates", s(input.to_str().unwrap())),
        ("mtimes", strs(&[input.to_str().unwrap()])),
        ("donecmd", s(&format!("touch {}", done.display()))),
    ];
    let ctx = InitCtx {
        key: ResKey::new("exec", "m"),
        var_dir: Some(dir.path().join("var")),
        state_dir: dir.path().to_path_buf(),
    };
    let mut e = exec("m", &pairs);
    e.init(&ctx).await.unwrap();
    assert!(!check(&mut e, true).await.unwrap().0, "never ran: mtimes overrides the creates guard");
    assert!(done.exists());
    assert!(check(&mut e, true).await.unwrap().0, "nothing changed since the last run");
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    fs::write(&input, "v2").unwrap();
    assert!(!check(&mut e, true).await.unwrap().0, "the input changed");
    let failing_done = [("cmd", s("true")), ("donecmd", s("false"))];
    let err = check(&mut exec("d", &failing_done), true).await.unwrap_err();
    assert!(err.contains("donecmd"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orderly_shutdown_lets_a_running_command_finish() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("finished");
    let engine = engine(&dir.path().join("state"));
    let mut g = Graph::new();
    let cmd = format!("sleep 0.5; touch {}", marker.display());
    let res = resources::build("exec", "slow", &params(&[("cmd", s(&cmd)), ("shell", s("/bin/sh"))])).unwrap();
    g.add_vertex(ResKey::new("exec", "slow"), Meta::default(), res);
    engine.apply(g).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    let report = engine.shutdown(std::time::Duration::from_secs(5)).await;
    assert!(report.stragglers.is_empty());
    assert!(marker.exists(), "the command ran to completion before the stop");
}

/// Issue 44, defect 3: 4,096 random bytes on stdout were sent as 7,479 bytes of
/// replacement characters. A stream another resource receives that is not UTF-8 text is
/// an error naming the resource, and nothing is kept to be sent.
#[tokio::test]
async fn binary_output_that_is_received_is_an_error_never_replaced() {
    let cmd = "head -c 4096 /dev/urandom; printf '\\377'";
    let mut e = exec("bin", &[("cmd", s(cmd)), ("shell", s("/bin/sh"))]);
    e.received_fields(&["stdout"]);
    let err = check(&mut e, true).await.unwrap_err();
    assert!(err.contains("exec[bin]") && err.contains("not UTF-8 text") && err.contains("stdout"), "{err}");
    assert!(e.sends().is_some_and(|s| value_of(&s["stdout"]).unwrap() == &Value::str("")), "nothing of it is sent");

    // Nobody reads it: the command's run stands, its output kept for reports only.
    let mut quiet = exec("bin", &[("cmd", s(cmd)), ("shell", s("/bin/sh"))]);
    quiet.received_fields(&["exitcode"]);
    assert!(!check(&mut quiet, true).await.unwrap().0);
}

/// Issue 44, defect 9: a 100 MB output was held whole (645 MB of RSS) and saved whole
/// (a 209 MB state file). What nothing receives is kept as its last 64 KiB, and saved so.
#[tokio::test]
async fn an_output_nothing_receives_is_kept_as_a_bounded_tail() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = InitCtx {
        key: ResKey::new("exec", "big"),
        var_dir: Some(dir.path().join("var")),
        state_dir: dir.path().into(),
    };
    let cmd = "head -c 20000000 /dev/zero | tr '\\0' x; echo; echo the end";
    let mut e = exec("big", &[("cmd", s(cmd)), ("shell", s("/bin/sh"))]);
    e.init(&ctx).await.unwrap();
    e.received_fields(&[]);
    assert!(!check(&mut e, true).await.unwrap().0);
    let stdout = sent(&e, "stdout");
    let text = stdout.as_str().unwrap();
    assert!(text.len() <= resources::util::command::TAIL + 64, "{} bytes kept", text.len());
    assert!(
        text.starts_with("[") && text.contains("bytes before this]") && text.ends_with("the end\n"),
        "{}",
        &text[..80]
    );
    let saved = fs::metadata(dir.path().join("var/last-run")).unwrap().len();
    assert!(saved < 4 * resources::util::command::TAIL as u64, "{saved} bytes saved");

    // Received, the same output is kept and sent whole.
    let mut whole = exec("big", &[("cmd", s(cmd)), ("shell", s("/bin/sh"))]);
    whole.received_fields(&["stdout"]);
    assert!(!check(&mut whole, true).await.unwrap().0);
    assert_eq!(sent(&whole, "stdout").as_str().unwrap().len(), 20_000_000 + 1 + 8);
}
