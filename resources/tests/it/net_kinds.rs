//! `net`, `gsettings` and `firewalld` against their in-memory backends, and `consul:kv`
//! against a small fake Consul HTTP server on loopback.

use crate::support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use engine::{InitCtx, ResKey};
use lang::value::Value;
use resources::machine::Machine;
use resources::network::firewalld::{FakeFirewall, Layer};
use resources::network::net::{FakeLink, FakeNet, unit_path};
use resources::system::gsettings::FakeSettings;
use resources::{build, build_with};
use support::{check, converge, params, s, strs};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn init_ctx(dir: &std::path::Path, kind: &str, name: &str) -> InitCtx {
    InitCtx { key: ResKey::new(kind, name), var_dir: Some(dir.join("var")), state_dir: dir.to_path_buf() }
}

fn net_host(root: &std::path::Path) -> (Arc<FakeNet>, Machine) {
    let net = Arc::new(FakeNet::default());
    net.add(
        "meth0",
        FakeLink { addrs: ["fe80::1/64".to_string(), "10.9.9.9/8".to_string()].into(), ..FakeLink::default() },
    );
    let host = Machine { net: net.clone(), ..Machine::sandbox(root) };
    (net, host)
}

#[tokio::test]
async fn net_brings_the_link_up_with_exact_addresses_gateway_and_forwarding() {
    let root = tempfile::tempdir().unwrap();
    let (net, host) = net_host(root.path());
    let values = params(&[
        ("state", s("up")),
        ("addrs", strs(&["192.168.42.1/24"])),
        ("gateway", s("192.168.42.254")),
        ("ip_forward", Value::Bool(true)),
    ]);
    let mut res = build_with(&host, "net", "meth0", &values).unwrap();
    let (ok, reports) = check(res.as_mut(), false).await.unwrap();
    assert!(!ok && reports.len() == 6, "noop reports every step: {reports:?}");
    assert_eq!(net.get("meth0").unwrap().addrs.len(), 2, "noop changes nothing");
    converge(res.as_mut()).await;
    let link = net.get("meth0").unwrap();
    assert!(link.up && link.forwarding);
    assert_eq!(link.addrs, ["192.168.42.1/24".to_string(), "fe80::1/64".to_string()].into(), "link-local kept");
    assert_eq!(link.gateways, ["192.168.42.254"]);
    let unit = std::fs::read_to_string(unit_path(root.path(), "meth0")).unwrap();
    assert!(unit.contains("Name=meth0") && unit.contains("Address=192.168.42.1/24") && unit.contains("IPForward=yes"));

    // Drift is repaired.
    net.tamper("meth0", |l| {
        l.addrs.insert("172.16.0.1/12".into());
        l.gateways.push("172.16.0.254".into());
    });
    assert!(!check(res.as_mut(), true).await.unwrap().0);
    let link = net.get("meth0").unwrap();
    assert!(!link.addrs.contains("172.16.0.1/12") && link.gateways == ["192.168.42.254"]);

    // Down: the link goes down and the networkd file goes away.
    let mut down = build_with(&host, "net", "meth0", &params(&[("state", s("down"))])).unwrap();
    converge(down.as_mut()).await;
    assert!(!net.get("meth0").unwrap().up);
    assert!(!unit_path(root.path(), "meth0").exists());

    let mut missing = build_with(&host, "net", "nope0", &params(&[("state", s("up"))])).unwrap();
    assert!(check(missing.as_mut(), true).await.unwrap_err().contains("no network interface named `nope0`"));
}

#[tokio::test]
async fn net_reversal_restores_what_init_found() {
    let root = tempfile::tempdir().unwrap();
    let (net, host) = net_host(root.path());
    let mut res =
        build_with(&host, "net", "meth0", &params(&[("state", s("up")), ("addrs", strs(&["192.168.42.1/24"]))]))
            .unwrap();
    res.init(&init_ctx(root.path(), "net", "meth0")).await.unwrap();
    let mut reverse = res.reversal().unwrap().expect("net is reversible");
    converge(res.as_mut()).await;
    assert!(unit_path(root.path(), "meth0").exists());
    converge(reverse.as_mut()).await;
    let link = net.get("meth0").unwrap();
    assert!(!link.up, "back down");
    assert!(!unit_path(root.path(), "meth0").exists(), "the file that was not there is gone again");
}

#[tokio::test]
async fn net_watch_notices_a_link_taken_down_behind_its_back() {
    let root = tempfile::tempdir().unwrap();
    let (net, host) = net_host(root.path());
    let engine = support::engine(&root.path().join("state"));
    let mut g = engine::Graph::new();
    let res = build_with(&host, "net", "meth0", &params(&[("state", s("up"))])).unwrap();
    g.add_vertex(ResKey::new("net", "meth0"), engine::Meta::default(), res);
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(support::WAIT).await);
    assert!(net.get("meth0").unwrap().up);
    net.tamper("meth0", |l| l.up = false);
    assert!(support::eventually(|| net.get("meth0").unwrap().up).await, "{:?}", net.calls());
    engine.shutdown(support::WAIT).await;
}

#[tokio::test]
async fn gsettings_sets_values_of_each_type_and_repairs_drift() {
    let root = tempfile::tempdir().unwrap();
    let settings = Arc::new(FakeSettings::default());
    settings.define("org.gnome.desktop.interface", "clock-show-seconds", "false");
    settings.define("org.gnome.desktop.input-sources", "sources", "@a(ss) []");
    settings.define("org.gnome.desktop.interface", "gtk-theme", "'Adwaita'");
    let host = Machine { settings: settings.clone(), ..Machine::sandbox(root.path()) };

    let mut clock = build_with(
        &host,
        "gsettings",
        "org.gnome.desktop.interface clock-show-seconds",
        &params(&[("type", s("bool")), ("value", Value::Bool(true))]),
    )
    .unwrap();
    let (ok, reports) = check(clock.as_mut(), false).await.unwrap();
    assert!(!ok && reports[0].contains("from false to true"), "{reports:?}");
    converge(clock.as_mut()).await;
    assert_eq!(settings.value("org.gnome.desktop.interface", "clock-show-seconds").as_deref(), Some("true"));

    let sources = "[('xkb', 'ca+eng'), ('xkb', 'us')]";
    let mut custom = build_with(
        &host,
        "gsettings",
        "anything",
        &params(&[
            ("schema", s("org.gnome.desktop.input-sources")),
            ("key", s("sources")),
            ("type", s("custom")),
            ("value", s(sources)),
        ]),
    )
    .unwrap();
    converge(custom.as_mut()).await;
    assert_eq!(settings.value("org.gnome.desktop.input-sources", "sources").as_deref(), Some(sources));

    let mut theme = build_with(
        &host,
        "gsettings",
        "org.gnome.desktop.interface gtk-theme",
        &params(&[("type", s("str")), ("value", s("it's dark"))]),
    )
    .unwrap();
    converge(theme.as_mut()).await;
    assert_eq!(settings.value("org.gnome.desktop.interface", "gtk-theme").as_deref(), Some("\"it's dark\""));

    settings.define("org.gnome.desktop.interface", "clock-show-seconds", "false");
    assert!(!check(clock.as_mut(), true).await.unwrap().0, "drift is repaired");

    let mut unknown =
        build_with(&host, "gsettings", "no.such key", &params(&[("type", s("int")), ("value", Value::Int(1))]))
            .unwrap();
    assert!(check(unknown.as_mut(), true).await.unwrap_err().contains("No such schema/key"));
    let mut nobody = build_with(
        &host,
        "gsettings",
        "org.gnome.desktop.interface gtk-theme",
        &params(&[("type", s("str")), ("value", s("x")), ("user", s("no-such-user-here"))]),
    )
    .unwrap();
    assert!(check(nobody.as_mut(), true).await.unwrap_err().contains("user `no-such-user-here` does not exist"));
}

#[tokio::test]
async fn gsettings_watch_follows_the_monitor() {
    let root = tempfile::tempdir().unwrap();
    let settings = Arc::new(FakeSettings::default());
    settings.define("org.gnome.desktop.interface", "clock-show-seconds", "false");
    let host = Machine { settings: settings.clone(), ..Machine::sandbox(root.path()) };
    let engine = support::engine(&root.path().join("state"));
    let mut g = engine::Graph::new();
    let name = "org.gnome.desktop.interface clock-show-seconds";
    let res =
        build_with(&host, "gsettings", name, &params(&[("type", s("bool")), ("value", Value::Bool(true))])).unwrap();
    g.add_vertex(ResKey::new("gsettings", name), engine::Meta::default(), res);
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(support::WAIT).await);
    settings.define("org.gnome.desktop.interface", "clock-show-seconds", "false");
    let value = || settings.value("org.gnome.desktop.interface", "clock-show-seconds");
    assert!(support::eventually(|| settings.calls().len() == 2 && value().as_deref() == Some("true")).await);
    engine.shutdown(support::WAIT).await;
}

#[tokio::test]
async fn firewalld_opens_and_closes_in_runtime_and_permanent_config() {
    let root = tempfile::tempdir().unwrap();
    let fw = Arc::new(FakeFirewall::default());
    let host = Machine { firewall: fw.clone(), ..Machine::sandbox(root.path()) };
    let open = params(&[("services", strs(&["dhcp", "tftp"])), ("ports", strs(&["4280/tcp"]))]);
    let mut res = build_with(&host, "firewalld", "misc", &open).unwrap();
    let (ok, reports) = check(res.as_mut(), false).await.unwrap();
    assert!(!ok && reports.len() == 6, "{reports:?}");
    assert!(fw.calls().is_empty());
    converge(res.as_mut()).await;
    for layer in [Layer::Runtime, Layer::Permanent] {
        let z = fw.state("public", layer);
        assert!(z.services.contains("dhcp") && z.services.contains("tftp") && z.ports.contains("4280/tcp"));
    }

    // A port inside an open range counts as open.
    let mut ranged = build_with(&host, "firewalld", "r", &params(&[("ports", strs(&["9050/udp"]))])).unwrap();
    fw.tamper("public", Layer::Runtime, |z| {
        z.ports.insert("9000-9100/udp".into());
    });
    fw.tamper("public", Layer::Permanent, |z| {
        z.ports.insert("9000-9100/udp".into());
    });
    assert!(check(ranged.as_mut(), true).await.unwrap().0);

    let mut absent = build_with(
        &host,
        "firewalld",
        "misc",
        &params(&[
            ("services", strs(&["dhcp", "tftp"])),
            ("ports", strs(&["4280/tcp"])),
            ("state", s("absent")),
            ("zone", s("public")),
        ]),
    )
    .unwrap();
    converge(absent.as_mut()).await;
    let z = fw.state("public", Layer::Permanent);
    assert!(z.services.is_empty() && z.ports == ["9000-9100/udp".to_string()].into());
}

// ---------------------------------------------------------------------------------------
// A fake Consul: just enough of /v1/kv for the resource, over real HTTP on loopback.

#[derive(Default)]
struct Store {
    values: BTreeMap<String, String>,
    index: u64,
    tokens: Vec<String>,
}

struct FakeConsul {
    addr: String,
    store: Arc<Mutex<Store>>,
    changed: tokio::sync::watch::Sender<u64>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeConsul {
    async fn start() -> FakeConsul {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let store = Arc::new(Mutex::new(Store { index: 1, ..Store::default() }));
        let changed = tokio::sync::watch::Sender::new(1);
        let (st, ch) = (store.clone(), changed.clone());
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(serve(conn, st.clone(), ch.clone()));
            }
        });
        FakeConsul { addr, store, changed, task }
    }

    fn set(&self, key: &str, value: &str) {
        let index = {
            let mut store = self.store.lock().unwrap();
            store.values.insert(key.into(), value.into());
            store.index += 1;
            store.index
        };
        self.changed.send_replace(index);
    }

    fn get(&self, key: &str) -> Option<String> {
        self.store.lock().unwrap().values.get(key).cloned()
    }
}

impl Drop for FakeConsul {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut conn: tokio::net::TcpStream, store: Arc<Mutex<Store>>, changed: tokio::sync::watch::Sender<u64>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match conn.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.lines();
    let mut first = lines.next().unwrap_or_default().split(' ');
    let (method, target) = (first.next().unwrap_or_default().to_string(), first.next().unwrap_or_default().to_string());
    let mut length = 0;
    for line in lines {
        let (name, value) = line.split_once(':').unwrap_or_default();
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().unwrap_or(0),
            "x-consul-token" => store.lock().unwrap().tokens.push(value.trim().to_string()),
            _ => {}
        }
    }
    while buf.len() < head_end + length {
        match conn.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let body = String::from_utf8_lossy(&buf[head_end..head_end + length]).to_string();
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let key = path.strip_prefix("/v1/kv/").unwrap_or_default().to_string();
    let (status, reply) = match method.as_str() {
        "PUT" => {
            let index = {
                let mut s = store.lock().unwrap();
                s.values.insert(key, body);
                s.index += 1;
                s.index
            };
            changed.send_replace(index);
            (200, "true".to_string())
        }
        "GET" => {
            let wait_for =
                query.split('&').find_map(|kv| kv.strip_prefix("index=")).and_then(|i| i.parse::<u64>().ok());
            if let Some(seen) = wait_for {
                let mut rx = changed.subscribe();
                let _ = tokio::time::timeout(Duration::from_secs(5), rx.wait_for(|i| *i > seen)).await;
            }
            match store.lock().unwrap().values.get(&key) {
                Some(v) if query.split('&').any(|kv| kv == "raw") => (200, v.clone()),
                Some(v) => (200, format!("[{{\"Key\":\"{key}\",\"Value\":\"(base64 of {} bytes)\"}}]", v.len())),
                None => (404, String::new()),
            }
        }
        _ => (405, String::new()),
    };
    let index = store.lock().unwrap().index;
    let response = format!(
        "HTTP/1.1 {status} X\r\nX-Consul-Index: {index}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
        reply.len()
    );
    let _ = conn.write_all(response.as_bytes()).await;
    let _ = conn.shutdown().await;
}

#[tokio::test]
async fn consul_kv_writes_the_key_over_http() {
    let consul = FakeConsul::start().await;
    let values =
        params(&[("key", s("mgmt/love")), ("value", s("YES")), ("address", s(&consul.addr)), ("token", s("sekrit"))]);
    let mut res = build("consul:kv", "love", &values).unwrap();
    let (ok, reports) = check(res.as_mut(), false).await.unwrap();
    assert!(!ok && reports[0].contains("would set `mgmt/love` to `YES`"), "{reports:?}");
    assert_eq!(consul.get("mgmt/love"), None);
    converge(res.as_mut()).await;
    assert_eq!(consul.get("mgmt/love").as_deref(), Some("YES"));
    assert!(consul.store.lock().unwrap().tokens.iter().all(|t| t == "sekrit"));

    consul.set("mgmt/love", "NO");
    assert!(!check(res.as_mut(), true).await.unwrap().0, "drift is repaired");
    assert_eq!(consul.get("mgmt/love").as_deref(), Some("YES"));

    let url = format!("http://{}/from/the/name", consul.addr);
    let mut named = build("consul:kv", &url, &params(&[("value", s("v"))])).unwrap();
    converge(named.as_mut()).await;
    assert_eq!(consul.get("from/the/name").as_deref(), Some("v"));

    let mut nowhere = build("consul:kv", "k", &params(&[("address", s("127.0.0.1:1")), ("value", s("v"))])).unwrap();
    let mut ctx = engine::ApplyCtx::detached();
    let err = nowhere.check_apply(&mut ctx, true).await.unwrap_err();
    assert!(err.message.contains("consul GET http://127.0.0.1:1/v1/kv/k?raw"), "{err}");
    assert!(err.is_transient(), "an unreachable server may come back: {err:?}");
}

#[tokio::test]
async fn consul_kv_watch_uses_blocking_queries() {
    let consul = FakeConsul::start().await;
    let root = tempfile::tempdir().unwrap();
    let engine = support::engine(root.path());
    let mut g = engine::Graph::new();
    let values = params(&[("key", s("mgmt/time")), ("value", s("now")), ("address", s(&consul.addr))]);
    g.add_vertex(ResKey::new("consul:kv", "t"), engine::Meta::default(), build("consul:kv", "t", &values).unwrap());
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(support::WAIT).await);
    assert_eq!(consul.get("mgmt/time").as_deref(), Some("now"));
    consul.set("mgmt/time", "later");
    assert!(
        support::eventually(|| consul.get("mgmt/time").as_deref() == Some("now")).await,
        "rewritten after the change"
    );
    engine.shutdown(support::WAIT).await;
}

fn have(tool: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(tool).is_file()))
        || std::path::Path::new("/usr/sbin").join(tool).is_file()
}

#[tokio::test]
async fn the_real_ip_and_gsettings_backends_answer_read_only_queries() {
    use resources::network::net::{IpRoute2, NetLinks};
    use resources::system::gsettings::{GsettingsCli, RunAs, Settings};
    if have("ip") {
        let ip = IpRoute2 { proc_root: "/".into() };
        let lo = ip.link("lo").await.unwrap().expect("every host has lo");
        assert!(lo.up && lo.addrs.contains(&"127.0.0.1/8".to_string()), "{lo:?}");
        assert_eq!(ip.link("nosuch0").await.unwrap(), None);
        assert!(ip.default_gateways("lo").await.unwrap().is_empty());
    } else {
        eprintln!("skipped the ip part: no `ip` command");
    }
    let schema = "org.gnome.desktop.interface";
    let listed = tokio::process::Command::new("gsettings").args(["list-keys", schema]).output().await;
    if listed.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).lines().any(|k| k == "clock-show-seconds")) {
        let got = GsettingsCli.get(&RunAs::default(), schema, "clock-show-seconds").await.unwrap();
        assert!(got == "true" || got == "false", "{got}");
        let err = GsettingsCli.get(&RunAs::default(), schema, "no-such-key").await.unwrap_err();
        assert!(err.message.contains("gsettings get org.gnome.desktop.interface no-such-key"), "{err}");
    } else {
        eprintln!("skipped the gsettings part: no gsettings or no GNOME schemas");
    }
}
