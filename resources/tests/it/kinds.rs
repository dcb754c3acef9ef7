//! The smaller kinds, each on a temporary directory or a sandboxed host with fake
//! backends.

use crate::support;

use std::fs;
use std::sync::Arc;

use engine::{ApplyCtx, InitCtx, ResKey};
use lang::value::Value;
use resources::machine::{FakeAccounts, FakePackages, FakeServices, Machine};
use resources::{build, build_with, payload, value_of};
use support::{check, converge, params, s, strs};
use world::LocalWorld;

fn init_ctx(dir: &std::path::Path, kind: &str, name: &str) -> InitCtx {
    InitCtx { key: ResKey::new(kind, name), var_dir: Some(dir.join("var")), state_dir: dir.to_path_buf() }
}

#[tokio::test]
async fn print_prints_when_the_message_changes_or_on_refresh_only() {
    let mut p = build("print", "p", &params(&[("msg", s("hello"))])).unwrap();
    converge(p.as_mut()).await;
    assert!(p.recv("msg", &payload(Value::str("changed"))).unwrap());
    assert!(!check(p.as_mut(), true).await.unwrap().0, "a new message prints again");

    let mut only = build("print", "r", &params(&[("msg", s("x")), ("refresh_only", Value::Bool(true))])).unwrap();
    assert!(check(only.as_mut(), true).await.unwrap().0, "nothing to print without a notification");
    let mut ctx = ApplyCtx::detached();
    ctx.refresh = true;
    assert!(!only.check_apply(&mut ctx, true).await.unwrap());
}

#[tokio::test]
async fn test_kind_validates_sends_and_expects_receives() {
    let bad = build("test", "t", &params(&[("validateerror", s("boom"))])).unwrap();
    assert!(bad.validate().unwrap_err().message.contains("the validate error param was set to: boom"));
    let narrow = build("test", "t", &params(&[("int8", Value::Int(200))])).err().expect("out of range");
    assert_eq!(narrow.field.as_deref(), Some("int8"));

    let sender = build("test", "s", &params(&[("sendvalue", s("this is hello"))])).unwrap();
    let sends = sender.sends().unwrap();
    assert_eq!(value_of(&sends["hello"]).unwrap(), &Value::str("this is hello"));
    assert_eq!(value_of(&sends["answer"]).unwrap(), &Value::Int(42));

    let mut receiver = build("test", "r", &params(&[("expectrecv", strs(&["anotherstr"]))])).unwrap();
    assert!(check(receiver.as_mut(), true).await.unwrap_err().contains("expected to receive on: anotherstr"));
    assert!(receiver.recv("anotherstr", &payload(Value::str("x"))).unwrap());
    assert!(receiver.recv("anotherstr", &payload(Value::Int(1))).is_err(), "wrong type refused");
    assert!(check(receiver.as_mut(), true).await.unwrap().0);

    let a = build("test", "c", &params(&[("comparefail", Value::Bool(true))])).unwrap();
    let b = build("test", "c", &params(&[("comparefail", Value::Bool(true))])).unwrap();
    assert_ne!(a.fingerprint(), b.fingerprint());
}

#[tokio::test]
async fn noop_and_panic_are_always_right() {
    let mut n = build("noop", "n", &params(&[("comment", s("junction"))])).unwrap();
    assert!(check(n.as_mut(), true).await.unwrap().0);
    let mut p = build("_panic", "p", &params(&[])).unwrap();
    assert!(check(p.as_mut(), true).await.unwrap().0);
}

#[tokio::test]
async fn value_stores_and_sends_its_value() {
    let dir = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(dir.path());
    let mut v = build_with(&host, "value", "kinds-test-value", &params(&[("any", Value::Int(42))])).unwrap();
    v.init(&init_ctx(dir.path(), "value", "kinds-test-value")).await.unwrap();
    converge(v.as_mut()).await;
    assert_eq!(host.values.get("kinds-test-value"), Some(Value::Int(42)));
    assert_eq!(value_of(&v.sends().unwrap()["any"]).unwrap(), &Value::Int(42));
    assert!(v.recv("any", &payload(Value::str("now a string"))).unwrap());
    converge(v.as_mut()).await;
    assert_eq!(host.values.get("kinds-test-value"), Some(Value::str("now a string")));
    assert_eq!(fs::read_to_string(dir.path().join("value/kinds-test-value")).unwrap(), "\"now a string\"");
}

#[tokio::test]
async fn msg_needs_a_priority_and_logs_once() {
    let bad = build("msg", "m", &params(&[("body", s("hi"))])).unwrap();
    assert!(bad.validate().unwrap_err().message.contains("field `priority`"));
    let mut m = build("msg", "m", &params(&[("body", s("hi")), ("priority", s("Info"))])).unwrap();
    converge(m.as_mut()).await;
}

#[tokio::test]
async fn timer_is_quiet_until_refreshed() {
    let mut t = build("timer", "t", &params(&[("interval", Value::Int(60))])).unwrap();
    t.validate().unwrap();
    assert!(check(t.as_mut(), true).await.unwrap().0);
    let mut ctx = ApplyCtx::detached();
    ctx.refresh = true;
    assert!(!t.check_apply(&mut ctx, true).await.unwrap());
    assert!(build("timer", "z", &params(&[])).unwrap().validate().is_err());
}

#[tokio::test]
async fn kv_stores_keys_and_respects_skiplessthan() {
    let dir = tempfile::tempdir().unwrap();
    let host = Machine { world: Arc::new(LocalWorld::new(dir.path(), "h1")), ..Machine::sandbox(dir.path()) };
    let kv = |values: &[(&str, Value)]| build_with(&host, "kv", "k", &params(values)).unwrap();
    let mut set = kv(&[("value", s("10"))]);
    set.init(&init_ctx(dir.path(), "kv", "k")).await.unwrap();
    converge(set.as_mut()).await;
    assert_eq!(fs::read_to_string(dir.path().join("kv/k/value")).unwrap(), "10");
    let mut lower = kv(&[("value", s("9")), ("skiplessthan", Value::Bool(true))]);
    lower.init(&init_ctx(dir.path(), "kv", "k")).await.unwrap();
    assert!(check(lower.as_mut(), true).await.unwrap().0, "the stored 10 is kept");
    let mut mine = kv(&[("value", s("up")), ("mapped", Value::Bool(true))]);
    mine.init(&init_ctx(dir.path(), "kv", "k")).await.unwrap();
    converge(mine.as_mut()).await;
    assert_eq!(fs::read_to_string(dir.path().join("kv/k/h1")).unwrap(), "up", "a mapped entry is this host's");
    let mut delete = kv(&[]);
    delete.init(&init_ctx(dir.path(), "kv", "k")).await.unwrap();
    converge(delete.as_mut()).await;
    assert!(!dir.path().join("kv/k/value").exists());
}

#[tokio::test]
async fn line_appends_and_removes_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hosts");
    fs::write(&path, "127.0.0.1 localhost\n").unwrap();
    let file = s(path.to_str().unwrap());
    let mut add =
        build("line", "l", &params(&[("file", file.clone()), ("state", s("exists")), ("content", s("10.0.0.1 db"))]))
            .unwrap();
    converge(add.as_mut()).await;
    assert_eq!(fs::read_to_string(&path).unwrap(), "127.0.0.1 localhost\n10.0.0.1 db\n");
    let mut del =
        build("line", "l", &params(&[("file", file), ("state", s("absent")), ("content", s("127.0.0.1 localhost"))]))
            .unwrap();
    converge(del.as_mut()).await;
    assert_eq!(fs::read_to_string(&path).unwrap(), "10.0.0.1 db\n");
}

#[tokio::test]
async fn sysctl_writes_runtime_and_persistent_values_under_the_root() {
    let root = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(root.path());
    fs::create_dir_all(root.path().join("proc/sys/net/ipv4")).unwrap();
    fs::write(root.path().join("proc/sys/net/ipv4/ip_forward"), "0\n").unwrap();
    let mut s1 = build_with(&host, "sysctl", "net.ipv4.ip_forward", &params(&[("value", s("1"))])).unwrap();
    converge(s1.as_mut()).await;
    assert_eq!(fs::read_to_string(root.path().join("proc/sys/net/ipv4/ip_forward")).unwrap(), "1\n");
    let conf = root.path().join("etc/sysctl.d/99-net.ipv4.ip_forward.conf");
    assert_eq!(fs::read_to_string(conf).unwrap(), "net.ipv4.ip_forward = 1\n");
    let bad = build_with(&host, "sysctl", "a/b", &params(&[("value", s("1"))])).unwrap();
    assert!(bad.validate().is_err());
}

#[tokio::test]
async fn an_io_failure_names_its_path() {
    let root = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(root.path());
    fs::create_dir_all(root.path().join("proc/sys/vm")).unwrap();
    fs::write(root.path().join("proc/sys/vm/swappiness"), "60\n").unwrap();
    // `/etc/sysctl.d` is a regular file, so the persistent file cannot be written under it.
    fs::create_dir_all(root.path().join("etc")).unwrap();
    fs::write(root.path().join("etc/sysctl.d"), "").unwrap();
    let mut res = build_with(&host, "sysctl", "vm.swappiness", &params(&[("value", s("10"))])).unwrap();
    let err = check(res.as_mut(), true).await.unwrap_err();
    let dir = root.path().join("etc/sysctl.d");
    assert!(err.starts_with(&format!("{}: ", dir.display())), "{err}");
    assert!(err.contains("File exists"), "{err}");
}

#[tokio::test]
async fn hostname_sets_static_pretty_and_transient_names() {
    let root = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(root.path());
    fs::create_dir_all(root.path().join("etc")).unwrap();
    let mut h =
        build_with(&host, "hostname", "h", &params(&[("hostname", s("box1")), ("pretty_hostname", s("Box One"))]))
            .unwrap();
    converge(h.as_mut()).await;
    assert_eq!(fs::read_to_string(root.path().join("etc/hostname")).unwrap(), "box1\n");
    assert!(fs::read_to_string(root.path().join("etc/machine-info")).unwrap().contains("PRETTY_HOSTNAME=\"Box One\""));
    assert_eq!(host.hostnames.transient().unwrap(), "box1");
    assert!(build_with(&host, "hostname", "h", &params(&[])).unwrap().validate().is_err());
}

#[tokio::test]
async fn users_and_groups_through_the_accounts_backend() {
    let root = tempfile::tempdir().unwrap();
    let accounts = Arc::new(FakeAccounts::default());
    let host = Machine { accounts: accounts.clone(), ..Machine::sandbox(root.path()) };
    let mut group =
        build_with(&host, "group", "staff", &params(&[("state", s("exists")), ("gid", Value::Int(500))])).unwrap();
    converge(group.as_mut()).await;
    let pairs = [("state", s("exists")), ("group", s("staff")), ("shell", s("/bin/bash")), ("uid", Value::Int(1500))];
    let mut user = build_with(&host, "user", "alice", &params(&pairs)).unwrap();
    converge(user.as_mut()).await;
    let info = accounts.users.lock().unwrap()["alice"].clone();
    assert_eq!((info.uid, info.gid, info.shell.as_str()), (1500, 500, "/bin/bash"));
    let changed = [("state", s("exists")), ("group", s("staff")), ("shell", s("/bin/zsh")), ("uid", Value::Int(1500))];
    converge(build_with(&host, "user", "alice", &params(&changed)).unwrap().as_mut()).await;
    assert_eq!(accounts.users.lock().unwrap()["alice"].shell, "/bin/zsh");
    converge(build_with(&host, "user", "alice", &params(&[("state", s("absent"))])).unwrap().as_mut()).await;
    assert!(accounts.users.lock().unwrap().is_empty());
    let both =
        build_with(&host, "user", "bob", &params(&[("state", s("exists")), ("gid", Value::Int(1)), ("group", s("x"))]))
            .unwrap();
    assert!(both.validate().unwrap_err().message.contains("field `group`"));
}

#[tokio::test]
async fn svc_starts_enables_and_reloads_on_refresh() {
    let root = tempfile::tempdir().unwrap();
    let services = Arc::new(FakeServices::default());
    let host = Machine { services: services.clone(), ..Machine::sandbox(root.path()) };
    let mut missing = build_with(&host, "svc", "nope", &params(&[("state", s("running"))])).unwrap();
    assert!(check(missing.as_mut(), true).await.unwrap_err().contains("does not exist"));
    services.add("web.service");
    let mut svc =
        build_with(&host, "svc", "web", &params(&[("state", s("running")), ("startup", s("enabled"))])).unwrap();
    let (ok, reports) = check(svc.as_mut(), false).await.unwrap();
    assert!(!ok && reports.len() == 2 && !services.active("web.service"), "noop: {reports:?}");
    converge(svc.as_mut()).await;
    assert!(services.active("web.service") && services.enabled("web.service"));
    let mut ctx = ApplyCtx::detached();
    ctx.refresh = true;
    assert!(!svc.check_apply(&mut ctx, true).await.unwrap());
    assert_eq!(services.calls().last().map(String::as_str), Some("reload-or-try-restart web.service"));
}

#[tokio::test]
async fn cron_writes_a_timer_unit_and_starts_it() {
    let root = tempfile::tempdir().unwrap();
    let services = Arc::new(FakeServices::default());
    let host = Machine { services: services.clone(), ..Machine::sandbox(root.path()) };
    services.add("backup.timer");
    let pairs = [("trigger", s("OnCalendar")), ("time", s("daily")), ("persistent", Value::Bool(true))];
    let mut cron = build_with(&host, "cron", "backup", &params(&pairs)).unwrap();
    converge(cron.as_mut()).await;
    let unit = fs::read_to_string(root.path().join("etc/systemd/system/backup.timer")).unwrap();
    assert!(
        unit.contains("OnCalendar=daily") && unit.contains("Unit=backup.service") && unit.contains("Persistent=true"),
        "{unit}"
    );
    assert!(services.active("backup.timer") && services.enabled("backup.timer"));
    assert!(services.calls().contains(&"daemon-reload ".to_string()));
    let mut gone = build_with(&host, "cron", "backup", &params(&[("state", s("absent"))])).unwrap();
    converge(gone.as_mut()).await;
    assert!(!root.path().join("etc/systemd/system/backup.timer").exists());
}

#[tokio::test]
async fn mount_keeps_the_fstab_entry_and_the_live_mount() {
    let root = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(root.path());
    fs::create_dir_all(root.path().join("etc")).unwrap();
    fs::write(root.path().join("etc/fstab"), "# static\n/dev/sda1\t/\text4\tdefaults\t0 1\n").unwrap();
    let pairs = [("state", s("exists")), ("device", s("/dev/sdb1")), ("type", s("ext4"))];
    let mut m = build_with(&host, "mount", "/data", &params(&pairs)).unwrap();
    m.validate().unwrap();
    converge(m.as_mut()).await;
    let fstab = fs::read_to_string(root.path().join("etc/fstab")).unwrap();
    assert_eq!(fstab, "# static\n/dev/sda1\t/\text4\tdefaults\t0 1\n/dev/sdb1\t/data\text4\tdefaults\t0 0\n");
    assert!(host.mounts.is_mounted("/data").await.unwrap());
    converge(build_with(&host, "mount", "/data", &params(&[("state", s("absent"))])).unwrap().as_mut()).await;
    assert_eq!(
        fs::read_to_string(root.path().join("etc/fstab")).unwrap(),
        "# static\n/dev/sda1\t/\text4\tdefaults\t0 1\n"
    );
}

#[test]
fn a_mount_type_is_one_the_kernel_has_or_would_load() {
    let root = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(root.path());
    let valid = |fstype: &str| {
        let pairs = [("state", s("exists")), ("device", s("/dev/sr0")), ("type", s(fstype))];
        build_with(&host, "mount", "/media/cdrom", &params(&pairs)).unwrap().validate().map_err(|e| e.message)
    };
    fs::create_dir_all(root.path().join("proc/sys/kernel")).unwrap();
    fs::write(root.path().join("proc/filesystems"), "nodev\tproc\n\text4\n").unwrap();
    // Nothing says which modules the kernel has: the mount itself will tell.
    valid("iso9660").unwrap();
    fs::write(root.path().join("proc/sys/kernel/osrelease"), "6.1.0-test\n").unwrap();
    fs::create_dir_all(root.path().join("lib/modules/6.1.0-test")).unwrap();
    fs::write(
        root.path().join("lib/modules/6.1.0-test/modules.alias"),
        "alias fs-iso9660 isofs\nalias fs-vfat vfat\nalias char-major-10-229 fuse\n",
    )
    .unwrap();
    valid("ext4").unwrap();
    // Not loaded until the first CD is mounted, but its module is there.
    valid("iso9660").unwrap();
    let err = valid("fuse").unwrap_err();
    assert!(err.contains("field `type`: `fuse` is not listed in /proc/filesystems, and no kernel module"), "{err}");
}

#[tokio::test]
async fn pkg_installs_pins_and_removes() {
    let root = tempfile::tempdir().unwrap();
    let packages = Arc::new(FakePackages::default());
    let host = Machine { packages: packages.clone(), ..Machine::sandbox(root.path()) };
    packages.offer("hello", "2.10");
    converge(build_with(&host, "pkg", "hello", &params(&[])).unwrap().as_mut()).await;
    assert_eq!(packages.installed_version("hello").as_deref(), Some("2.10"));
    converge(build_with(&host, "pkg", "hello", &params(&[("state", s("2.9"))])).unwrap().as_mut()).await;
    assert_eq!(packages.installed_version("hello").as_deref(), Some("2.9"));
    converge(build_with(&host, "pkg", "hello", &params(&[("state", s("newest"))])).unwrap().as_mut()).await;
    assert_eq!(packages.installed_version("hello").as_deref(), Some("2.10"));
    converge(build_with(&host, "pkg", "hello", &params(&[("state", s("uninstalled"))])).unwrap().as_mut()).await;
    assert_eq!(packages.installed_version("hello"), None);
    let latest = build_with(&host, "pkg", "hello", &params(&[("state", s("latest"))])).unwrap();
    assert!(latest.validate().unwrap_err().message.contains("did you mean `newest`"));
    let mut unknown = build_with(&host, "pkg", "nosuch", &params(&[])).unwrap();
    assert!(check(unknown.as_mut(), true).await.is_err());
}

#[tokio::test]
async fn every_declared_kind_can_be_built() {
    let root = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(root.path());
    for decl in resources::contract::kind::decls() {
        assert!(build_with(&host, &decl.kind, "/x", &params(&[])).is_ok(), "{}", decl.kind);
    }
}

#[tokio::test]
async fn password_is_generated_saved_and_regenerated_on_refresh() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = build("password", "db", &params(&[("length", Value::Int(16)), ("saved", Value::Bool(true))])).unwrap();
    p.init(&init_ctx(dir.path(), "password", "db")).await.unwrap();
    converge(p.as_mut()).await;
    let first = value_of(&p.sends().unwrap()["password"]).unwrap().clone();
    assert_eq!(first.as_str().map(str::len), Some(16));
    let mut again =
        build("password", "db", &params(&[("length", Value::Int(16)), ("saved", Value::Bool(true))])).unwrap();
    again.init(&init_ctx(dir.path(), "password", "db")).await.unwrap();
    assert!(check(again.as_mut(), true).await.unwrap().0, "the saved password is reused");
    assert_eq!(value_of(&again.sends().unwrap()["password"]).unwrap(), &first);
    let mut ctx = ApplyCtx::detached();
    ctx.refresh = true;
    assert!(!again.check_apply(&mut ctx, true).await.unwrap());
    assert_ne!(value_of(&again.sends().unwrap()["password"]).unwrap(), &first);
}

#[tokio::test]
async fn exit_asks_the_engine_to_stop_with_its_code() {
    let dir = tempfile::tempdir().unwrap();
    let engine = support::engine(dir.path());
    let mut exit = engine.exit_requested();
    let mut g = engine::Graph::new();
    let res = build("exit", "bye", &params(&[("code", Value::Int(42))])).unwrap();
    g.add_vertex(ResKey::new("exit", "bye"), engine::Meta::default(), res);
    engine.apply(g).await.unwrap();
    let code = tokio::time::timeout(support::WAIT, exit.wait_for(Option::is_some)).await.unwrap().unwrap();
    assert_eq!(*code, Some(42));
    assert!(build("exit", "x", &params(&[("code", Value::Int(200))])).is_err());
}

#[tokio::test(start_paused = true)]
async fn svc_notices_a_unit_stopped_behind_its_back() {
    let root = tempfile::tempdir().unwrap();
    let services = Arc::new(FakeServices::default());
    let host = Machine { services: services.clone(), ..Machine::sandbox(root.path()) };
    services.add("web.service");
    let engine = support::engine(&root.path().join("state"));
    let mut g = engine::Graph::new();
    let res = build_with(&host, "svc", "web", &params(&[("state", s("running"))])).unwrap();
    g.add_vertex(ResKey::new("svc", "web"), engine::Meta::default(), res);
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(support::WAIT).await);
    assert!(services.active("web.service"));
    use resources::machine::ServiceManager;
    services.stop("web.service", false).await.unwrap();
    tokio::time::sleep(resources::services::svc::STATE_POLL * 3).await;
    assert!(engine.wait_converged(support::WAIT).await);
    assert!(
        services.active("web.service"),
        "restarted after the poll noticed: {:?} {:?}",
        engine.status().await,
        services.calls()
    );
    engine.shutdown(support::WAIT).await;
}

#[tokio::test]
async fn the_shadow_tools_backend_edits_account_files_under_a_root() {
    let root = tempfile::tempdir().unwrap();
    let is_root = nix::unistd::Uid::effective().is_root();
    if !is_root || !std::path::Path::new("/usr/sbin/useradd").exists() {
        println!("skipped: needs root and the shadow tools (useradd --root)");
        return;
    }
    let etc = root.path().join("etc");
    fs::create_dir_all(&etc).unwrap();
    fs::write(etc.join("passwd"), "root:x:0:0:root:/root:/bin/sh\n").unwrap();
    fs::write(etc.join("group"), "root:x:0:\n").unwrap();
    fs::write(etc.join("shadow"), "root:*:19000:0:99999:7:::\n").unwrap();
    fs::write(etc.join("gshadow"), "root:*::\n").unwrap();
    let accounts = Arc::new(resources::machine::ShadowTools { root: root.path().to_path_buf() });
    let host = Machine { accounts, ..Machine::sandbox(root.path()) };
    let mut group =
        build_with(&host, "group", "staff", &params(&[("state", s("exists")), ("gid", Value::Int(500))])).unwrap();
    converge(group.as_mut()).await;
    let user_params = |shell: &str| {
        params(&[("state", s("exists")), ("uid", Value::Int(1500)), ("group", s("staff")), ("shell", s(shell))])
    };
    converge(build_with(&host, "user", "alice", &user_params("/bin/sh")).unwrap().as_mut()).await;
    let passwd = fs::read_to_string(etc.join("passwd")).unwrap();
    assert!(passwd.contains("alice:x:1500:500:"), "{passwd}");
    converge(build_with(&host, "user", "alice", &user_params("/bin/bash")).unwrap().as_mut()).await;
    assert!(fs::read_to_string(etc.join("passwd")).unwrap().contains(":/bin/bash"));
    converge(build_with(&host, "user", "alice", &params(&[("state", s("absent"))])).unwrap().as_mut()).await;
    assert!(!fs::read_to_string(etc.join("passwd")).unwrap().contains("alice"));
}

#[tokio::test]
async fn the_real_package_and_mount_backends_answer_read_only_queries() {
    use resources::machine::{Apt, MountTools, Mounter, PackageManager};
    if std::path::Path::new("/usr/bin/dpkg-query").exists() {
        let found = Apt::default().query(&["bash", "no-such-package-tend", "coreutils"], true).await.unwrap();
        let bash = &found["bash"];
        assert!(bash.installed.as_ref().is_some_and(|v| !v.is_empty()), "bash is installed on a Debian host");
        assert!(found["coreutils"].installed.is_some(), "one query answers for every package: {found:?}");
        assert!(found.get("no-such-package-tend").is_none_or(|s| s.installed.is_none()), "{found:?}");
    } else {
        println!("skipped the dpkg part: no dpkg-query");
    }
    assert!(MountTools.is_mounted("/").await.unwrap());
    assert!(!MountTools.is_mounted("/no/such/mount/point").await.unwrap());
}
