//! The `file` kind on real files in temporary directories.

use crate::support;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use engine::{Graph, Meta, ResKey, Resource};
use lang::value::Value;
use resources::files::file::File;
use support::{WAIT, check, converge, engine, eventually, params, s, strs};

fn file(name: &str, pairs: &[(&str, Value)]) -> File {
    File::build(name, &params(pairs)).expect("builds")
}

#[tokio::test]
async fn creates_a_file_with_content_and_mode_then_finds_it_right() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("conf");
    let p = path.to_str().unwrap();
    let mut f = file(p, &[("state", s("exists")), ("content", s("hello\n")), ("mode", s("0640"))]);
    converge(&mut f).await;
    assert_eq!(fs::read_to_string(&path).unwrap(), "hello\n");
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o640);
}

#[tokio::test]
async fn noop_reports_a_unified_diff_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("conf");
    fs::write(&path, "a\nb\n").unwrap();
    let mut f = file(path.to_str().unwrap(), &[("content", s("a\nc\n"))]);
    let (ok, reports) = check(&mut f, false).await.unwrap();
    assert!(!ok);
    assert_eq!(fs::read_to_string(&path).unwrap(), "a\nb\n");
    let diff = reports.join("\n");
    assert!(diff.contains("-b") && diff.contains("+c") && diff.contains("@@"), "{diff}");
}

#[tokio::test]
async fn noop_says_a_missing_file_would_be_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new");
    let mut f = file(path.to_str().unwrap(), &[("content", s("a\n")), ("state", s("exists"))]);
    let (ok, reports) = check(&mut f, false).await.unwrap();
    assert!(!ok);
    assert!(!path.exists());
    let text = reports.join("\n");
    assert!(text.contains("would be created (2 bytes)") && !text.contains("would change content"), "{text}");
    assert!(text.contains("+a"), "{text}");
}

#[tokio::test]
async fn a_missing_file_is_not_created_without_state_exists() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nope");
    let mut f = file(path.to_str().unwrap(), &[("content", s("x"))]);
    let err = check(&mut f, true).await.unwrap_err();
    assert!(err.contains("does not exist"), "{err}");
    assert!(!path.exists());
}

#[tokio::test]
async fn absent_removes_files_and_only_empty_directories_without_recurse() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gone");
    fs::write(&path, "x").unwrap();
    converge(&mut file(path.to_str().unwrap(), &[("state", s("absent"))])).await;
    assert!(!path.exists());

    let sub = dir.path().join("sub");
    fs::create_dir(&sub).unwrap();
    fs::write(sub.join("inner"), "x").unwrap();
    let name = format!("{}/", sub.display());
    let err = check(&mut file(&name, &[("state", s("absent"))]), true).await.unwrap_err();
    assert!(err.contains("recurse"), "{err}");
    converge(&mut file(&name, &[("state", s("absent")), ("recurse", Value::Bool(true))])).await;
    assert!(!sub.exists());
}

#[tokio::test]
async fn directories_are_created_recursively_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let deep = dir.path().join("a/b/c");
    let name = format!("{}/", deep.display());
    let err = check(&mut file(&name, &[("state", s("exists"))]), true).await.unwrap_err();
    assert!(err.contains("cannot create the directory"), "{err}");
    converge(&mut file(&name, &[("state", s("exists")), ("recurse", Value::Bool(true))])).await;
    assert!(deep.is_dir());
}

#[tokio::test]
async fn fragments_concatenate_files_and_directory_entries_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let frags = dir.path().join("frags");
    fs::create_dir(&frags).unwrap();
    fs::write(frags.join("2-b"), "b\n").unwrap();
    fs::write(frags.join("1-a"), "a\n").unwrap();
    let head = dir.path().join("head");
    fs::write(&head, "head\n").unwrap();
    let out = dir.path().join("out");
    let fragments = strs(&[head.to_str().unwrap(), &format!("{}/", frags.display())]);
    converge(&mut file(out.to_str().unwrap(), &[("state", s("exists")), ("fragments", fragments)])).await;
    assert_eq!(fs::read_to_string(&out).unwrap(), "head\na\nb\n");
}

#[tokio::test]
async fn a_copied_file_gets_the_source_mode() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::write(&src, "#!/bin/sh\n").unwrap();
    fs::set_permissions(&src, fs::Permissions::from_mode(0o750)).unwrap();
    let dst = dir.path().join("dst");
    converge(&mut file(dst.to_str().unwrap(), &[("state", s("exists")), ("source", s(src.to_str().unwrap()))])).await;
    assert_eq!(fs::read_to_string(&dst).unwrap(), "#!/bin/sh\n");
    assert_eq!(fs::metadata(&dst).unwrap().mode() & 0o777, 0o750);
}

#[tokio::test]
async fn a_source_directory_is_synced_and_purged() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(src.join("nested")).unwrap();
    fs::write(src.join("one"), "1").unwrap();
    fs::write(src.join("nested/two"), "2").unwrap();
    let dst = dir.path().join("dst");
    fs::create_dir(&dst).unwrap();
    fs::write(dst.join("stale"), "x").unwrap();
    let name = format!("{}/", dst.display());
    let pairs = [
        ("state", s("exists")),
        ("source", s(src.to_str().unwrap())),
        ("recurse", Value::Bool(true)),
        ("purge", Value::Bool(true)),
    ];
    converge(&mut file(&name, &pairs)).await;
    assert_eq!(fs::read_to_string(dst.join("nested/two")).unwrap(), "2");
    assert!(!dst.join("stale").exists());
}

#[tokio::test]
async fn symlinks_are_managed_and_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target");
    fs::write(&target, "precious").unwrap();
    let link = dir.path().join("link");
    let link_name = link.to_str().unwrap();
    let pairs = [("state", s("exists")), ("symlink", Value::Bool(true)), ("source", s(target.to_str().unwrap()))];
    converge(&mut file(link_name, &pairs)).await;
    assert_eq!(fs::read_link(&link).unwrap(), target);

    // Managing content at a symlink refuses to write through it (or over it) without force.
    let err = check(&mut file(link_name, &[("content", s("overwritten"))]), true).await.unwrap_err();
    assert!(err.contains("force"), "{err}");
    assert_eq!(fs::read_to_string(&target).unwrap(), "precious");
    converge(&mut file(link_name, &[("content", s("own")), ("force", Value::Bool(true))])).await;
    assert!(fs::symlink_metadata(&link).unwrap().is_file());
    assert_eq!(fs::read_to_string(&target).unwrap(), "precious");
}

#[tokio::test]
async fn validation_names_the_problem() {
    let both = file("/tmp/x", &[("content", s("a")), ("source", s("/etc/hostname"))]);
    assert!(both.validate().unwrap_err().message.contains("only one of content, source and fragments"));
    let relative = file("relative", &[]);
    assert!(relative.validate().unwrap_err().message.contains("must be absolute"));
    let purge = file("/tmp/d/", &[("purge", Value::Bool(true))]);
    assert!(purge.validate().unwrap_err().message.contains("purge needs recurse"));
    let mode = file("/tmp/x", &[("mode", s("u+x"))]);
    assert!(mode.validate().is_err());
    let unknown = File::build("/tmp/x", &params(&[("contents", s("a"))])).err().expect("unknown field");
    assert_eq!(unknown.field.as_deref(), Some("contents"));
    let wrong_type = File::build("/tmp/x", &params(&[("content", Value::Int(3))])).err().expect("wrong type");
    assert_eq!(wrong_type.field.as_deref(), Some("content"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_repairs_drift_noticed_by_the_watch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("watched");
    let name = path.to_str().unwrap().to_string();
    let engine = engine(&dir.path().join("state"));
    let mut g = Graph::new();
    let res = resources::build("file", &name, &params(&[("state", s("exists")), ("content", s("wanted\n"))])).unwrap();
    g.add_vertex(ResKey::new("file", &name), Meta::default(), res);
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(fs::read_to_string(&path).unwrap(), "wanted\n");
    fs::write(&path, "tampered\n").unwrap();
    assert!(eventually(|| fs::read_to_string(&path).is_ok_and(|c| c == "wanted\n")).await, "drift repaired");
    fs::remove_file(&path).unwrap();
    assert!(eventually(|| fs::read_to_string(&path).is_ok_and(|c| c == "wanted\n")).await, "deletion repaired");
    engine.shutdown(WAIT).await;
}

#[tokio::test]
async fn purge_spares_paths_other_resources_manage() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir(&src).unwrap();
    fs::write(src.join("one"), "1").unwrap();
    let dst = dir.path().join("dst");
    fs::create_dir(&dst).unwrap();
    fs::write(dst.join("managed"), "by someone else").unwrap();
    fs::write(dst.join("stray"), "x").unwrap();
    let name = format!("{}/", dst.display());
    let pairs = [
        ("state", s("exists")),
        ("source", s(src.to_str().unwrap())),
        ("recurse", Value::Bool(true)),
        ("purge", Value::Bool(true)),
    ];
    converge(&mut file(&name, &pairs).spare([dst.join("managed")])).await;
    assert!(dst.join("managed").exists());
    assert!(!dst.join("stray").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meta_reverse_restores_the_file_when_it_leaves_the_graph() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir.path().join("state"));
    let existing = dir.path().join("existing");
    fs::write(&existing, "original\n").unwrap();
    fs::set_permissions(&existing, fs::Permissions::from_mode(0o600)).unwrap();
    let created = dir.path().join("created");
    let reverse = Meta { reverse: true, ..Meta::default() };
    let mut g = Graph::new();
    for path in [&existing, &created] {
        let name = path.to_str().unwrap();
        let res =
            resources::build("file", name, &params(&[("state", s("exists")), ("content", s("managed\n"))])).unwrap();
        g.add_vertex(ResKey::new("file", name), reverse.clone(), res);
    }
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(fs::read_to_string(&existing).unwrap(), "managed\n");
    assert_eq!(fs::read_to_string(&created).unwrap(), "managed\n");

    engine.apply(Graph::new()).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(fs::read_to_string(&existing).unwrap(), "original\n");
    assert_eq!(fs::metadata(&existing).unwrap().mode() & 0o777, 0o600);
    assert!(!created.exists(), "a file that did not exist is removed again");
    engine.apply(Graph::new()).await.unwrap();
    assert!(engine.keys().await.is_empty());

    let d = format!("{}/", dir.path().join("d").display());
    let mut g = Graph::new();
    let res = resources::build("file", &d, &params(&[("state", s("exists"))])).unwrap();
    g.add_vertex(ResKey::new("file", &d), reverse, res);
    let err = engine.apply(g).await.unwrap_err();
    assert!(err.to_string().contains("cannot reverse a directory"), "{err}");
    engine.shutdown(WAIT).await;
}

/// The check after a converge skips reading an untouched file, but any change made in
/// place since (same size, same inode), a chmod or a replacement is still seen.
#[tokio::test]
async fn in_place_edits_of_a_converged_file_are_still_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("conf");
    let mut f = file(path.to_str().unwrap(), &[("state", s("exists")), ("content", s("right\n")), ("mode", s("0644"))]);
    converge(&mut f).await;
    assert!(check(&mut f, true).await.unwrap().0, "converged");

    // Same length, same inode: only the change time tells.
    std::io::Write::write_all(&mut fs::OpenOptions::new().write(true).open(&path).unwrap(), b"wrong\n").unwrap();
    assert!(!check(&mut f, true).await.unwrap().0, "an in-place edit is found");
    assert_eq!(fs::read_to_string(&path).unwrap(), "right\n");

    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    assert!(!check(&mut f, true).await.unwrap().0, "a chmod is found");
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o644);

    fs::remove_file(&path).unwrap();
    fs::write(&path, "right\n").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    assert!(check(&mut f, true).await.unwrap().0, "a replacement with the right state is right");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_converge_checks_each_file_once_and_still_sees_outside_writes() {
    // The resource's own write wakes its watch; the watch must recognise it (the file
    // still carries the stamp the check left) instead of running a second check-apply.
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir.path().join("state"));
    let mut events = engine.subscribe();
    let mut g = Graph::new();
    let names: Vec<String> = (0..20).map(|i| dir.path().join(format!("f{i}")).display().to_string()).collect();
    for name in &names {
        let res = resources::build("file", name, &params(&[("state", s("exists")), ("content", s("v\n"))])).unwrap();
        g.add_vertex(ResKey::new("file", name), Meta::default(), res);
    }
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    // Let any late watch event through before counting.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let mut applied = 0;
    while let Ok(ev) = events.try_recv() {
        if matches!(ev, engine::EngineEvent::Applied { .. }) {
            applied += 1;
        }
    }
    // Without the filter every file runs twice (40). A write whose event overtakes the
    // stamp being recorded still costs a second (cheap) check, so allow a few of those.
    assert!(
        applied >= names.len() && applied < names.len() * 3 / 2,
        "{applied} check-applies for {} files",
        names.len()
    );
    // No new file is left behind under a temporary name.
    let stray: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".tend-"))
        .collect();
    assert!(stray.is_empty(), "temporary files left behind: {stray:?}");
    // An outside write keeps the same size but changes the stamp: still repaired.
    fs::write(&names[3], "w\n").unwrap();
    assert!(eventually(|| fs::read_to_string(&names[3]).is_ok_and(|c| c == "v\n")).await, "drift repaired");
    engine.shutdown(WAIT).await;
}

#[test]
fn the_fingerprint_changes_with_every_param_and_only_then() {
    let base: Vec<(&str, Value)> =
        vec![("path", s("/srv/a")), ("state", s("exists")), ("content", s("x")), ("mode", s("0644"))];
    let fp = |pairs: &[(&str, Value)]| file("/srv/a", pairs).fingerprint();
    assert_eq!(fp(&base), fp(&base));
    let variants: Vec<Vec<(&str, Value)>> = vec![
        vec![("path", s("/srv/b"))],
        vec![("state", s("absent"))],
        vec![("content", s("y"))],
        // Lengths keep neighbouring fields apart: "x" + "0644" is not "x0" + "644".
        vec![("content", s("x0")), ("mode", s("644"))],
        vec![("mode", s("0600"))],
        vec![("owner", s("root"))],
        vec![("group", s("root"))],
        vec![("recurse", Value::Bool(true))],
        vec![("force", Value::Bool(true))],
        vec![("purge", Value::Bool(true))],
        vec![("fragments", strs(&["/srv/f1"]))],
    ];
    for changes in variants {
        let mut pairs = base.clone();
        for (k, v) in &changes {
            pairs.retain(|(key, _)| key != k);
            pairs.push((k, v.clone()));
        }
        assert_ne!(fp(&base), fp(&pairs), "{changes:?} left the fingerprint alone");
    }
}

#[test]
fn received_values_are_laid_over_the_params_the_file_keeps() {
    use resources::payload;
    let pairs = [
        ("dirname", s("/srv/app/")),
        ("basename", s("app.conf")),
        ("state", s("exists")),
        ("content", s("one\n")),
        ("fragments", strs(&["/srv/f1"])),
        ("force", Value::Bool(true)),
    ];
    let mut f = file("conf", &pairs);
    let built = f.fingerprint();
    assert!(f.recv("mode", &payload(s("0600"))).unwrap(), "a new mode is a change");
    assert_eq!(f.params().path.as_str(), "/srv/app/app.conf", "the path resolves as it did");
    assert_eq!(f.params().content.as_deref(), Some("one\n"), "the content is kept");
    assert_eq!(*f.params().fragments, ["/srv/f1"]);
    assert!(f.params().force);
    assert_eq!(f.params().state, resources::contract::typed::Presence::Exists);
    assert!(!f.recv("mode", &payload(s("0600"))).unwrap(), "the same value again is no change");
    assert!(f.recv("content", &payload(s("two\n"))).unwrap());
    assert_eq!(f.params().mode.as_str(), "0600", "an earlier received value is kept");
    assert!(f.recv("basename", &payload(s("other.conf"))).unwrap());
    assert_eq!(f.params().path.as_str(), "/srv/app/other.conf");
    assert!(f.recv("mode", &payload(Value::Int(1))).is_err(), "a value of the wrong type is refused");
    assert_eq!(f.params().mode.as_str(), "0600", "and changes nothing");
    let rebuilt = file("conf", &pairs);
    assert_eq!(rebuilt.fingerprint(), built);
}

#[test]
fn a_file_named_by_its_path_keeps_one_string_for_both() {
    use std::sync::Arc;
    let name: Arc<str> = Arc::from("/srv/app.conf");
    let f = File::build_named(name.clone(), &params(&[("content", s("x"))])).unwrap();
    assert!(Arc::ptr_eq(f.params().path.shared().unwrap(), &name), "the path is the name's string");
    let other = File::build_named(name, &params(&[("path", s("/srv/other.conf"))])).unwrap();
    assert_eq!(other.params().path.as_str(), "/srv/other.conf");
}

/// `selinux` sets the `security.selinux` attribute (stored by ext4 and tmpfs even without
/// SELinux in the kernel), a change behind the engine's back is repaired through the watch,
/// and `""` removes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_selinux_context_is_set_repaired_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("labelled");
    let probe = dir.path().join("probe");
    fs::write(&probe, "").unwrap();
    if let Err(e) = xattr::set(&probe, "security.selinux", b"x") {
        eprintln!("skipped: this file system keeps no security.* attributes here ({e})");
        return;
    }
    let context =
        |p: &std::path::Path| xattr::get(p, "security.selinux").unwrap().map(|v| String::from_utf8(v).unwrap());
    let name = path.to_str().unwrap().to_string();
    let want = "system_u:object_r:bin_t:s0";
    let pairs = [("state", s("exists")), ("content", s("x\n")), ("selinux", s(want))];

    let (ok, reports) = check(&mut file(&name, &pairs), false).await.unwrap();
    assert!(!ok && !path.exists(), "noop changes nothing: {reports:?}");

    let engine = engine(&dir.path().join("state"));
    let mut g = Graph::new();
    g.add_vertex(
        ResKey::new("file", &name),
        Meta::default(),
        resources::build("file", &name, &params(&pairs)).unwrap(),
    );
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(WAIT).await);
    assert_eq!(context(&path).as_deref(), Some(want));
    xattr::set(&path, "security.selinux", b"system_u:object_r:tmp_t:s0").unwrap();
    assert!(eventually(|| context(&path).as_deref() == Some(want)).await, "a changed context is repaired");
    xattr::remove(&path, "security.selinux").unwrap();
    assert!(eventually(|| context(&path).as_deref() == Some(want)).await, "a removed context is restored");
    engine.shutdown(WAIT).await;

    let mut f = file(&name, &[("state", s("exists")), ("selinux", s(""))]);
    converge(&mut f).await;
    assert_eq!(context(&path), None, "\"\" removes the context");
    let absent = file(&name, &[("state", s("absent")), ("selinux", s(want))]);
    assert!(absent.validate().unwrap_err().message.contains("no SELinux context"));
}
