//! `aws:ec2` against moto's server (`moto_server` from the tests' Python environment), the
//! EC2 Query API with Signature Version 4 as AWS serves it (moto accepts any key), reset
//! before the test (`POST /moto-api/reset`). The endpoint and the credentials file come
//! from the `Machine`.

use crate::support;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use engine::{ApplyCtx, Graph, Meta, ResKey};
use hyper::Method;
use resources::cloud::aws::{Ec2, Ec2Api};
use resources::util::http_client::{Url, send};
use resources::{Machine, build_with};
use support::{Killed, check, engine, free_port, params, pyenv_program, s};

const SECRET_KEY: &str = "aws-S3cret-key-never-printed";

async fn start_moto(dir: &std::path::Path) -> Option<(Killed, String)> {
    let moto = pyenv_program("moto_server")?;
    let port = free_port();
    let log = std::fs::File::create(dir.join("moto.log")).unwrap();
    let child = Command::new(moto)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("moto_server starts");
    let child = Killed(child);
    let endpoint = format!("http://127.0.0.1:{port}/");
    let reset = Url::parse(&format!("{endpoint}moto-api/reset")).unwrap();
    for _ in 0..200 {
        if send(&reset, &Method::POST, &[], &Bytes::new()).await.is_ok_and(|r| r.status == 200) {
            return Some((child, endpoint));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("moto_server answers: {}", std::fs::read_to_string(dir.join("moto.log")).unwrap_or_default());
}

/// An AMI moto offers.
const AMI: &str = "ami-12c6146b";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_is_made_stopped_started_and_terminated_and_drift_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let Some((_moto, endpoint)) = start_moto(dir.path()).await else { return };
    // The key in a shared credentials file, as an operator keeps it.
    let creds = dir.path().join("credentials");
    std::fs::write(&creds, format!("[default]\naws_access_key_id = AKIDTEND\naws_secret_access_key = {SECRET_KEY}\n"))
        .unwrap();
    let clouds = resources::cloud::Endpoints {
        aws: Some(endpoint.clone()),
        aws_credentials: Some(creds.clone()),
        ..Default::default()
    };
    let host = Machine { clouds: Arc::new(clouds), ..Machine::sandbox(dir.path()) };
    let ec2 = Ec2::new("us-east-1", Some(&endpoint), Some(creds.clone())).unwrap();
    let base = [("region", s("us-east-1")), ("type", s("t2.micro")), ("imageid", s(AMI))];
    let with = |state: &str| {
        let mut pairs = base.to_vec();
        pairs.push(("state", s(state)));
        build_with(&host, "aws:ec2", "web", &params(&pairs)).unwrap()
    };
    let state = || async { ec2.by_name("_mgmt-web").await.unwrap().into_iter().map(|i| i.state).collect::<Vec<_>>() };

    // Noop, then created and running; its id and address are sent.
    let mut running = with("running");
    running.validate().unwrap();
    let (ok, reports) = check(running.as_mut(), false).await.unwrap();
    assert!(!ok && reports == ["aws:ec2[web]: would create the instance"], "{reports:?}");
    assert!(state().await.is_empty());
    support::converge(running.as_mut()).await;
    assert_eq!(state().await, ["running"]);
    let sent = running.sends().unwrap();
    let id = resources::value_of(&sent["instanceid"]).unwrap().as_str().unwrap().to_string();
    assert!(id.starts_with("i-"), "{id}");
    assert!(!resources::value_of(&sent["privateipv4"]).unwrap().as_str().unwrap().is_empty());

    // Stopped, and started again by the engine when stopped behind its back.
    support::converge(with("stopped").as_mut()).await;
    assert_eq!(state().await, ["stopped"]);
    let engine = engine(&dir.path().join("engine"));
    let mut g = Graph::new();
    g.add_vertex(ResKey::new("aws:ec2", "web"), Meta { poll: 1, ..Meta::default() }, with("running"));
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(Duration::from_secs(30)).await);
    assert_eq!(state().await, ["running"]);
    ec2.act("StopInstances", &id).await.unwrap();
    let mut repaired = false;
    for _ in 0..150 {
        if state().await == ["running"] {
            repaired = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(repaired, "a stopped instance is started again: {:?}", state().await);
    engine.shutdown(Duration::from_secs(5)).await;

    // Terminated; then nothing is left to stop.
    support::converge(with("terminated").as_mut()).await;
    assert_eq!(state().await, ["terminated"]);
    assert_eq!(check(with("stopped").as_mut(), true).await.unwrap(), (true, vec![]));

    // EC2 unreachable, or no key: clear errors, never the secret key.
    let away = resources::cloud::Endpoints {
        aws: Some(format!("http://127.0.0.1:{}/", free_port())),
        aws_credentials: Some(creds.clone()),
        ..Default::default()
    };
    let mut pairs = base.to_vec();
    pairs.push(("state", s("running")));
    let away = Machine { clouds: Arc::new(away), ..host.clone() };
    let mut gone = build_with(&away, "aws:ec2", "other", &params(&pairs)).unwrap();
    let err = gone.check_apply(&mut ApplyCtx::detached(), true).await.unwrap_err().message;
    assert!(err.contains("cannot reach EC2 at http://127.0.0.1:") && !err.contains(SECRET_KEY), "{err}");
    let keyless = resources::cloud::Endpoints {
        aws: Some(endpoint.clone()),
        aws_credentials: Some(dir.path().join("no-such-file")),
        ..Default::default()
    };
    let keyless = Machine { clouds: Arc::new(keyless), ..host.clone() };
    let mut nokey = build_with(&keyless, "aws:ec2", "other", &params(&pairs)).unwrap();
    let err = nokey.check_apply(&mut ApplyCtx::detached(), true).await.unwrap_err().message;
    assert!(err.contains("no-such-file") && err.contains("No such file"), "{err}");
}

#[tokio::test]
async fn bad_params_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(dir.path());
    let ok = [("region", s("us-east-1")), ("type", s("t2.micro")), ("imageid", s(AMI)), ("state", s("running"))];
    for (field, value) in [
        ("state", s("paused")),
        ("region", s("mars-1")),
        ("type", s("")),
        ("imageid", s("debian")),
        ("watchendpoint", s("http://me:8080")),
    ] {
        let mut pairs = ok.to_vec();
        pairs.retain(|(k, _)| *k != field);
        pairs.push((field, value.clone()));
        let res = build_with(&host, "aws:ec2", "web", &params(&pairs)).unwrap();
        let err = res.validate().unwrap_err().message;
        assert!(err.contains(&format!("field `{field}`")), "{field} {value:?}: {err}");
    }
}
