//! `fwattr` over a directory laid out as the kernel lays out
//! `/sys/class/firmware-attributes` (Documentation/ABI/testing/sysfs-class-firmware-attributes):
//! no daemon stands behind that interface, so its files are the real thing to test against.

use crate::support;

use std::path::Path;

use engine::{ApplyCtx, Graph, Meta, ResKey};
use lang::value::Value;
use resources::{Machine, build_with};
use support::{WAIT, check, engine, eventually, params, s};

/// Lays out one attribute of `driver` with the given files (`type`, `current_value`...).
fn attribute(root: &Path, driver: &str, key: &str, files: &[(&str, &str)]) {
    let dir = root.join("sys/class/firmware-attributes").join(driver).join("attributes").join(key);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), format!("{text}\n")).unwrap();
    }
}

fn current(root: &Path, driver: &str, key: &str) -> String {
    let path =
        root.join("sys/class/firmware-attributes").join(driver).join("attributes").join(key).join("current_value");
    std::fs::read_to_string(path).unwrap()
}

fn pending_reboot(root: &Path, driver: &str, on: bool) {
    let path = root.join("sys/class/firmware-attributes").join(driver).join("attributes/pending_reboot");
    std::fs::write(path, if on { "1\n" } else { "0\n" }).unwrap();
}

fn lenovo(root: &Path) {
    attribute(
        root,
        "thinklmi",
        "SecureBoot",
        &[("type", "enumeration"), ("current_value", "Disable"), ("possible_values", "Disable;Enable")],
    );
    attribute(
        root,
        "thinklmi",
        "BootTimeExtension",
        &[
            ("type", "integer"),
            ("current_value", "0"),
            ("min_value", "0"),
            ("max_value", "10"),
            ("scalar_increment", "2"),
        ],
    );
    attribute(root, "thinklmi", "AssetTag", &[("type", "string"), ("current_value", "none"), ("max_length", "8")]);
    pending_reboot(root, "thinklmi", false);
}

#[tokio::test]
async fn values_are_checked_against_the_attribute_and_written_in_the_firmware_spelling() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    lenovo(root);
    let host = Machine::sandbox(root);
    let build = |name: &str, pairs: &[(&str, Value)]| build_with(&host, "fwattr", name, &params(pairs)).unwrap();

    // The one driver is chosen; `Enabled` is this firmware's `Enable`.
    let mut secure = build("SecureBoot", &[("value", s("Enabled"))]);
    let (ok, reports) = check(secure.as_mut(), false).await.unwrap();
    assert!(!ok && reports[0].contains("`Disable` to `Enable`"), "{reports:?}");
    assert_eq!(current(root, "thinklmi", "SecureBoot"), "Disable\n", "noop writes nothing");
    support::converge(secure.as_mut()).await;
    assert_eq!(current(root, "thinklmi", "SecureBoot"), "Enable\n");

    // `strict` takes the value only as spelt.
    let mut strict = build("SecureBoot", &[("value", s("Enabled")), ("strict", Value::Bool(true))]);
    let err = check(strict.as_mut(), true).await.unwrap_err();
    assert!(err.contains("`Enabled` is not one of Disable, Enable"), "{err}");

    // Integers: bounds and increments; `key` names the attribute when the name does not.
    let mut ext = build("boot delay", &[("key", s("BootTimeExtension")), ("value", s("6"))]);
    support::converge(ext.as_mut()).await;
    assert_eq!(current(root, "thinklmi", "BootTimeExtension"), "6\n");
    for (value, why) in [("11", "above the maximum 10"), ("3", "multiple of 2"), ("x", "not an integer")] {
        let mut bad = build("BootTimeExtension", &[("value", s(value))]);
        let err = check(bad.as_mut(), true).await.unwrap_err();
        assert!(err.contains(why), "{value}: {err}");
    }
    assert_eq!(current(root, "thinklmi", "BootTimeExtension"), "6\n", "a refused value is never written");

    // Strings: lengths; `check => false` writes what it is given.
    let mut long = build("AssetTag", &[("value", s("far-too-long"))]);
    assert!(check(long.as_mut(), true).await.unwrap_err().contains("longer than 8"));
    let mut unchecked = build("AssetTag", &[("value", s("far-too-long")), ("check", Value::Bool(false))]);
    support::converge(unchecked.as_mut()).await;
    assert_eq!(current(root, "thinklmi", "AssetTag"), "far-too-long\n");

    // A missing attribute is an error naming it, or nothing at all with `skip`.
    let mut missing = build("WakeOnLan", &[("value", s("Enable"))]);
    let err = check(missing.as_mut(), true).await.unwrap_err();
    assert!(err.contains("driver `thinklmi` has no attribute `WakeOnLan`"), "{err}");
    let mut skipped = build("WakeOnLan", &[("value", s("Enable")), ("skip", Value::Bool(true))]);
    assert_eq!(check(skipped.as_mut(), true).await.unwrap(), (true, vec![]));

    // Two drivers: the choice must be made.
    attribute(root, "dell-wmi-sysman", "SecureBoot", &[("type", "enumeration"), ("current_value", "Disabled")]);
    let mut ambiguous = build("SecureBoot", &[("value", s("Enable"))]);
    let err = check(ambiguous.as_mut(), true).await.unwrap_err();
    assert!(err.contains("set it") && err.contains("dell-wmi-sysman, thinklmi"), "{err}");
    let mut wrong = build("SecureBoot", &[("value", s("Enable")), ("driver", s("asus"))]);
    assert!(check(wrong.as_mut(), true).await.unwrap_err().contains("no driver `asus`"));
}

#[tokio::test]
async fn bad_names_are_refused_before_any_path_is_built() {
    let dir = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(dir.path());
    for (pairs, field) in [
        (vec![("key", s("../../../etc/passwd")), ("value", s("x"))], "key"),
        (vec![("driver", s("..")), ("value", s("x"))], "driver"),
        (vec![("value", s("two\nlines"))], "value"),
    ] {
        let res = build_with(&host, "fwattr", "SecureBoot", &params(&pairs)).unwrap();
        let err = res.validate().unwrap_err();
        assert!(err.message.contains(&format!("field `{field}`")), "{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_is_repaired_and_a_change_waiting_for_a_reboot_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    lenovo(&root);
    let host = Machine::sandbox(&root);
    let engine = engine(&root.join("state"));
    let mut g = Graph::new();
    let res = build_with(&host, "fwattr", "SecureBoot", &params(&[("value", s("Enable"))])).unwrap();
    g.add_vertex(ResKey::new("fwattr", "SecureBoot"), Meta::default(), res);
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(current(&root, "thinklmi", "SecureBoot"), "Enable\n");

    // Someone sets it back: the watch sees it and the value is written again.
    std::fs::write(
        root.join("sys/class/firmware-attributes/thinklmi/attributes/SecureBoot/current_value"),
        "Disable\n",
    )
    .unwrap();
    assert!(eventually(|| current(&root, "thinklmi", "SecureBoot") == "Enable\n").await, "drift repaired");

    // The firmware keeps the old value until a reboot and says so: what the agent wrote
    // stands, it is not written again (the test's own "Disable" stays).
    pending_reboot(&root, "thinklmi", true);
    std::fs::write(
        root.join("sys/class/firmware-attributes/thinklmi/attributes/SecureBoot/current_value"),
        "Disable\n",
    )
    .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(current(&root, "thinklmi", "SecureBoot"), "Disable\n", "a pending change is not rewritten");
    assert!(engine.wait_converged(WAIT).await);

    // After the reboot the firmware no longer has it pending: a value still off is drift.
    pending_reboot(&root, "thinklmi", false);
    assert!(eventually(|| current(&root, "thinklmi", "SecureBoot") == "Enable\n").await, "repaired after the reboot");

    let mut probe = build_with(&host, "fwattr", "SecureBoot", &params(&[("value", s("Enable"))])).unwrap();
    assert!(probe.check_apply(&mut ApplyCtx::detached(), false).await.unwrap());
    engine.shutdown(WAIT).await;
}
