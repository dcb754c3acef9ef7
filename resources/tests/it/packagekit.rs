//! The PackageKit backend against a real `packagekitd` (Debian's, on its apt backend) and
//! `polkitd` on a private system bus this test starts with `dbus-daemon`: a query of
//! installed packages agrees with dpkg, details of one, a tiny local package installed and
//! then removed by a `pkg` resource, and the watch seeing it put back behind the agent's
//! back (it is removed again). Skips with a message where the daemons are absent, unless
//! `TEND_REQUIRE_PACKAGEKIT` is set (CI).
//!
//! The tiny package is really installed into this machine's dpkg database, and removed
//! again before the test ends (also when it fails).

#![allow(clippy::print_stdout)] // a test that cannot run here says why it skipped

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use lang::resgraph::{Meta, ResGraph, ResVertex};
use lang::span::Span;
use lang::value::Value;
use resources::machine::{Apt, Machine, PackageKit, PackageManager};

use crate::support::{engine, eventually_within};

const TINY: &str = "tend-test-tiny";

/// The daemons; the tiny package is removed when dropped.
struct Daemons(testkit::packagekit::PackageKitd);

impl Drop for Daemons {
    fn drop(&mut self) {
        let _ = Command::new("dpkg").args(["-r", TINY]).stdout(Stdio::null()).stderr(Stdio::null()).status();
    }
}

/// Starts the daemons, or says why it cannot (a failure when `TEND_REQUIRE_PACKAGEKIT`).
async fn start() -> Option<Daemons> {
    let why = match (nix::unistd::Uid::effective().is_root(), Path::new("/usr/bin/dpkg-deb").exists()) {
        (false, _) => Some("it installs a package: root only".to_string()),
        (_, false) => Some("dpkg-deb is not installed".to_string()),
        _ => testkit::packagekit::missing(),
    };
    if let Some(why) = why {
        assert!(std::env::var_os("TEND_REQUIRE_PACKAGEKIT").is_none(), "TEND_REQUIRE_PACKAGEKIT is set but {why}");
        println!("skipped: {why}");
        return None;
    }
    let daemons = Daemons(testkit::packagekit::start().expect("the daemons start"));
    let pk = PackageKit::at(Some(daemons.0.address.clone()));
    let mut answered = None;
    for _ in 0..100 {
        answered = pk.available().await;
        if answered.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(answered.as_deref(), Some("apt"), "packagekitd answered on the private bus");
    Some(daemons)
}

/// A `.deb` of an empty package `name` at `version`, built in `dir`.
fn tiny_deb(dir: &Path, version: &str) -> PathBuf {
    let root = dir.join(format!("tiny-{version}"));
    std::fs::create_dir_all(root.join("DEBIAN")).unwrap();
    std::fs::write(
        root.join("DEBIAN/control"),
        format!(
            "Package: {TINY}\nVersion: {version}\nArchitecture: all\nMaintainer: tend <tend@localhost>\nDescription: an empty package for tend's tests\n"
        ),
    )
    .unwrap();
    let deb = dir.join(format!("{TINY}_{version}_all.deb"));
    let built = Command::new("dpkg-deb").args(["--build", root.to_str().unwrap(), deb.to_str().unwrap()]).output();
    assert!(built.unwrap().status.success());
    deb
}

fn pkg(name: &str, state: &str) -> ResVertex {
    ResVertex {
        kind: "pkg".into(),
        name: name.into(),
        params: [("state".to_string(), Value::str(state))].into_iter().collect(),
        param_spans: Box::default(),
        meta: Arc::new(Meta::default()),
        collected: false,
        span: Span::default(),
    }
}

fn dpkg_has(name: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f", "${Status}", name])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).ends_with(" installed"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packagekit_queries_installs_removes_and_watches() {
    let Some(daemons) = start().await else { return };
    let pk = Arc::new(PackageKit::at(Some(daemons.0.address.clone())));

    // One query answers for several packages, as dpkg does.
    let names = ["bash", "coreutils", "no-such-package-tend"];
    let by_pk = pk.query(&names, false).await.expect("resolves");
    let by_dpkg = Apt::default().query(&names, false).await.expect("dpkg answers");
    assert!(by_pk["bash"].installed.is_some(), "{by_pk:?}");
    assert_eq!(by_pk["bash"].installed, by_dpkg["bash"].installed, "PackageKit and dpkg agree");
    assert_eq!(by_pk["coreutils"].installed, by_dpkg["coreutils"].installed);
    assert_eq!(by_pk["no-such-package-tend"].installed, None);
    let bash = pk.installed_ids(&["bash"]).await.unwrap();
    let details = pk.details(&bash[0].id).await.expect("details");
    assert!(details.get("summary").is_some_and(|s| !s.is_empty()), "{details:?}");
    // A tiny local package, installed through PackageKit.
    let deb = tiny_deb(daemons.0.dir.path(), "1.0");
    pk.install_file(&deb).await.expect("installs a local package");
    assert!(dpkg_has(TINY));
    assert_eq!(pk.query(&[TINY], false).await.unwrap()[TINY].installed.as_deref(), Some("1.0"));

    // A `pkg` resource removes it through PackageKit, and keeps it removed: put back behind
    // the agent's back (a PackageKit transaction), the watch sees it and it goes again.
    let state = tempfile::tempdir().unwrap();
    let host = Machine { packages: pk.clone(), ..Machine::sandbox(state.path()) };
    let graph = ResGraph { vertices: vec![pkg(TINY, "uninstalled")], ..Default::default() };
    let engine = engine(&state.path().join("engine"));
    engine.apply(resources::contract::graph::to_engine(&host, graph, false).expect("builds")).await.expect("valid");
    assert!(engine.wait_converged(Duration::from_secs(180)).await, "{:?}", engine.status().await);
    assert!(engine.failures().await.is_empty(), "{:?}", engine.failures().await);
    assert!(!dpkg_has(TINY), "removed through PackageKit");
    pk.install_file(&deb).await.expect("installs it again, behind the agent's back");
    assert!(
        eventually_within(Duration::from_secs(120), || !dpkg_has(TINY)).await,
        "the watch saw it and the agent removed it again"
    );
    engine.shutdown(Duration::from_secs(5)).await;
}
