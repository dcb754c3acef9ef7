//! The fwupd kinds against a real `fwupd` daemon (Debian's, with `fwupd-tests`) on a
//! private system bus with `polkitd` (`testkit::fwupd`): its fake webcam is flashed from
//! the test remote's archives, the remote is disabled and enabled, and what the test does
//! behind the agent's back is repaired. Skipped when fwupd cannot run here unless
//! `TEND_REQUIRE_FWUPD=1` (as in CI).

use std::sync::Arc;
use std::time::Duration;

use engine::{Graph, Meta, ResKey};
use lang::value::Value;
use resources::firmware::fwupd::Fwupd;
use resources::{Machine, build_with};
use testkit::fwupd::WEBCAM;

use crate::support::{check, engine, params, s, strs};

/// Starts the daemon and waits until it lists the webcam, or says why it cannot.
#[allow(clippy::print_stdout, reason = "a test that cannot run here says why it skipped")]
async fn start() -> Option<(testkit::bus::PrivateBus, Arc<Fwupd>)> {
    if let Some(why) = testkit::fwupd::unavailable() {
        println!("skipped: {why}");
        return None;
    }
    let bus = testkit::fwupd::start().expect("the daemons start");
    let fwupd = Fwupd::at(Some(bus.address.clone()));
    for _ in 0..150 {
        if fwupd.device(WEBCAM).await.is_ok() {
            return Some((bus, fwupd));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("fwupd lists its test webcam:\n{}", bus.read_log("fwupd.log"));
}

async fn webcam(fwupd: &Fwupd) -> String {
    fwupd.device(WEBCAM).await.unwrap().version
}

async fn tests_remote_enabled(fwupd: &Fwupd) -> bool {
    fwupd.remotes().await.unwrap().iter().any(|r| r.id == "fwupd-tests" && r.enabled)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webcam_is_flashed_and_the_remote_kept_as_asked() {
    let Some((bus, fwupd)) = start().await else { return };
    let dir = tempfile::tempdir().unwrap();
    let host = Machine { fwupd: fwupd.clone(), ..Machine::sandbox(dir.path()) };
    assert_eq!(webcam(&fwupd).await, "1.2.2");

    // The remote: disabled, then held enabled against a change behind the agent's back.
    let mut off =
        build_with(&host, "fwupd:remote", "fwupd-tests", &params(&[("enabled", Value::Bool(false))])).unwrap();
    crate::support::converge(off.as_mut()).await;
    assert!(!tests_remote_enabled(&fwupd).await);
    let engine = engine(&dir.path().join("engine"));
    let mut g = Graph::new();
    let on = build_with(&host, "fwupd:remote", "fwupd-tests", &params(&[("enabled", Value::Bool(true))])).unwrap();
    g.add_vertex(ResKey::new("fwupd:remote", "fwupd-tests"), Meta::default(), on);
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(Duration::from_secs(20)).await);
    assert!(tests_remote_enabled(&fwupd).await);
    fwupd.modify_remote("fwupd-tests", "Enabled", "false").await.unwrap();
    let mut back = false;
    for _ in 0..100 {
        if tests_remote_enabled(&fwupd).await {
            back = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(back, "the daemon's Changed signal brings the remote back");
    engine.shutdown(Duration::from_secs(5)).await;

    // The system at its newest: noop says what, then the webcam gets 1.2.4; excluded, it
    // would be left alone.
    let mut newest = build_with(&host, "fwupd:system", "update", &params(&[("state", s("newest"))])).unwrap();
    newest.validate().unwrap();
    let (ok, reports) = check(newest.as_mut(), false).await.unwrap();
    assert!(!ok && reports.iter().any(|r| r.contains("1.2.2 -> 1.2.4")), "{reports:?}");
    crate::support::converge(newest.as_mut()).await;
    assert_eq!(webcam(&fwupd).await, "1.2.4");

    // One device at an exact version: a downgrade needs leave.
    let mut older = build_with(&host, "fwupd:device", WEBCAM, &params(&[("version", s("1.2.3"))])).unwrap();
    let err = check(older.as_mut(), true).await.unwrap_err();
    assert!(err.contains("downgrade") && err.contains("allow_downgrade"), "{err}");
    let pairs = [("version", s("1.2.3")), ("allow_downgrade", Value::Bool(true))];
    crate::support::converge(build_with(&host, "fwupd:device", WEBCAM, &params(&pairs)).unwrap().as_mut()).await;
    assert_eq!(webcam(&fwupd).await, "1.2.3");
    let mut excluded =
        build_with(&host, "fwupd:system", "update", &params(&[("state", s("newest")), ("exclude", strs(&[WEBCAM]))]))
            .unwrap();
    assert_eq!(check(excluded.as_mut(), true).await.unwrap(), (true, vec![]), "an excluded device is left alone");
    assert_eq!(webcam(&fwupd).await, "1.2.3");

    // A version no remote offers: the error lists what there is.
    let mut unknown = build_with(&host, "fwupd:device", WEBCAM, &params(&[("version", s("9.9.9"))])).unwrap();
    let err = check(unknown.as_mut(), true).await.unwrap_err();
    assert!(err.contains("no release 9.9.9") && err.contains("1.2.4"), "{err}");
    drop(bus);

    // The daemon gone: a clear error, not a crash.
    let err = check(unknown.as_mut(), true).await.unwrap_err();
    assert!(err.contains("fwupd"), "{err}");
}

#[tokio::test]
async fn bad_params_are_refused_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(dir.path());
    for (kind, pairs, field) in [
        ("fwupd:device", vec![], "version"),
        ("fwupd:remote", vec![("refresh_age", s("1 day"))], "refresh_age"),
        ("fwupd:remote", vec![("refresh_age", s("24h")), ("enabled", Value::Bool(false))], "refresh_age"),
        ("fwupd:system", vec![("state", s("latest"))], "state"),
        ("fwupd:system", vec![("state", s("newest")), ("exclude", strs(&[""]))], "exclude"),
    ] {
        let res = build_with(&host, kind, "x", &params(&pairs)).unwrap();
        let err = res.validate().unwrap_err().message;
        assert!(err.contains(&format!("field `{field}`")), "{kind} {pairs:?}: {err}");
    }
    let nothing = build_with(&host, "fwupd:remote", "lvfs", &params(&[])).unwrap();
    assert!(nothing.validate().unwrap_err().message.contains("nothing to manage"));
}
