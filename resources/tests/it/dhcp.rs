//! `dhcp:server`, `dhcp:host` and `dhcp:range` through the engine, answering a real DHCP
//! client: busybox's `udhcpc` in a network namespace joined to this one by a veth pair,
//! with a script of the test's own that only writes down what it was given (the host's
//! resolv.conf and addresses are never touched). A range hands out a lease with the
//! server's options, a host entry pins an address (and a boot file) to the client's MAC,
//! and a changed range applies without restarting anything. Needs root, `ip netns` and
//! busybox; skipped without them unless `TEND_REQUIRE_DHCP=1`.

use crate::support;

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;

use engine::{Graph, Meta, ResKey};
use lang::value::Value;
use resources::{Machine, build_with};
use support::{engine, eventually, params, s, strs};

fn ip(args: &[&str]) -> bool {
    Command::new("ip").args(args).output().is_ok_and(|o| o.status.success())
}

/// A namespace holding the client end of a veth pair; the server end stays here.
struct Net {
    ns: String,
    host_if: String,
    client_if: String,
}

impl Drop for Net {
    fn drop(&mut self) {
        ip(&["link", "del", &self.host_if]);
        ip(&["netns", "del", &self.ns]);
    }
}

const CLIENT_MAC: &str = "02:00:5e:10:00:42";

#[allow(clippy::print_stderr, reason = "a skipped test says why")]
fn setup() -> Option<Net> {
    let id = std::process::id() % 100_000;
    let net = Net { ns: format!("tend-dhcp-{id}"), host_if: format!("tdh{id}"), client_if: format!("tdc{id}") };
    let busybox = Command::new("busybox").arg("true").status().is_ok_and(|s| s.success());
    let ready = busybox
        && ip(&["netns", "add", &net.ns])
        && ip(&["link", "add", &net.host_if, "type", "veth", "peer", "name", &net.client_if])
        && ip(&["link", "set", &net.client_if, "netns", &net.ns])
        && ip(&["addr", "add", "10.77.0.1/24", "dev", &net.host_if])
        && ip(&["link", "set", &net.host_if, "up"])
        && ip(&["-n", &net.ns, "link", "set", &net.client_if, "address", CLIENT_MAC])
        && ip(&["-n", &net.ns, "link", "set", &net.client_if, "up"]);
    if ready {
        return Some(net);
    }
    let why = "needs root, `ip netns` and busybox (udhcpc)";
    assert!(std::env::var("TEND_REQUIRE_DHCP").as_deref() != Ok("1"), "TEND_REQUIRE_DHCP=1 but this {why}");
    eprintln!("skipped: {why}");
    None
}

/// The script udhcpc runs: on `bound`, the lease's variables go to `$TEND_LEASE_OUT`.
const SCRIPT: &str = "#!/bin/sh\n[ \"$1\" = bound ] || exit 0\nfor v in ip subnet router dns serverid lease bootfile boot_file tftp siaddr; do eval \"echo $v=\\$$v\"; done > \"$TEND_LEASE_OUT\"\n";

/// One run of the client: the lease it obtained, by variable.
fn lease(ns: &str, client_if: &str, dir: &Path) -> Option<BTreeMap<String, String>> {
    let script = dir.join("lease.sh");
    std::fs::write(&script, SCRIPT).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = dir.join("lease.out");
    let _ = std::fs::remove_file(&out);
    let status = Command::new("ip")
        .args(["netns", "exec", ns, "busybox", "udhcpc", "-i", client_if, "-f", "-q", "-n", "-t", "5", "-T", "1"])
        .args(["-O", "bootfile", "-s"])
        .arg(&script)
        .env("TEND_LEASE_OUT", &out)
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&out).ok()?;
    assert!(status.status.success(), "udhcpc: {}", String::from_utf8_lossy(&status.stderr));
    Some(text.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

fn in_range(lease: &BTreeMap<String, String>, lo: u8, hi: u8) -> bool {
    lease.get("ip").and_then(|ip| ip.parse::<Ipv4Addr>().ok()).is_some_and(|ip| {
        let o = ip.octets();
        o[..3] == [10, 77, 0] && (lo..=hi).contains(&o[3])
    })
}

fn graph(host: &Machine, net: &Net, range: &[(&str, Value)], pin: bool) -> Graph {
    let mut g = Graph::new();
    let server = params(&[
        ("address", s(":67")),
        ("interface", s(&net.host_if)),
        ("leasetime", s("1h")),
        ("dns", strs(&["10.77.0.53"])),
        ("routers", strs(&["10.77.0.1"])),
        ("nbp", s("tftp://10.77.0.1/boot/default.efi")),
    ]);
    g.add_vertex(
        ResKey::new("dhcp:server", "lan"),
        Meta::default(),
        build_with(host, "dhcp:server", "lan", &server).unwrap(),
    );
    let mut range_params = params(range);
    range_params.insert("server".into(), s("lan"));
    g.add_vertex(
        ResKey::new("dhcp:range", "pool"),
        Meta::default(),
        build_with(host, "dhcp:range", "pool", &range_params).unwrap(),
    );
    if pin {
        let p = params(&[
            ("server", s("lan")),
            ("mac", s(CLIENT_MAC)),
            ("ip", s("10.77.0.42/24")),
            ("nbp_path", s("pxelinux.0")),
        ]);
        g.add_vertex(
            ResKey::new("dhcp:host", "client"),
            Meta::default(),
            build_with(host, "dhcp:host", "client", &p).unwrap(),
        );
    }
    g
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_client_gets_its_lease_its_pinned_address_and_a_changed_range() {
    let Some(net) = setup() else { return };
    let dir = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(dir.path().join("host"));
    let engine = engine(&dir.path().join("state"));

    // A range: a lease inside it, with the server's options.
    let first = [("from", s("10.77.0.100/24")), ("to", s("10.77.0.150/24"))];
    engine.apply(graph(&host, &net, &first, false)).await.unwrap();
    assert!(eventually(|| host.dhcp.bound("lan").is_some()).await, "the server listens");
    let got = run_client(&net, dir.path()).await.expect("a lease from the range");
    assert!(in_range(&got, 100, 150), "{got:?}");
    assert_eq!(got.get("subnet").map(String::as_str), Some("255.255.255.0"), "{got:?}");
    assert_eq!(got.get("router").map(String::as_str), Some("10.77.0.1"));
    assert_eq!(got.get("dns").map(|d| d.trim()), Some("10.77.0.53"));
    assert_eq!(got.get("serverid").map(String::as_str), Some("10.77.0.1"), "found from the interface");
    assert_eq!(got.get("lease").map(String::as_str), Some("3600"));
    assert_eq!(got.get("bootfile").map(String::as_str), Some("/boot/default.efi"), "the server's nbp (option 67)");
    assert_eq!(got.get("boot_file").map(String::as_str), Some("/boot/default.efi"), "and in the BOOTP header");
    assert_eq!(got.get("siaddr").map(String::as_str), Some("10.77.0.1"), "the boot server in the header: {got:?}");

    // A host entry pins the client's MAC to its address, with its own boot file.
    engine.apply(graph(&host, &net, &first, true)).await.unwrap();
    let got = run_client(&net, dir.path()).await.expect("a lease for the pinned host");
    assert_eq!(got.get("ip").map(String::as_str), Some("10.77.0.42"), "{got:?}");
    assert_eq!(got.get("bootfile").map(String::as_str), Some("pxelinux.0"), "the host's own path: {got:?}");

    // The range changes (and the pin goes): the next lease comes from the new range, the
    // server never restarted.
    let second = [
        ("from", s("10.77.0.200")),
        ("to", s("10.77.0.210")),
        ("mask", s("255.255.255.0")),
        ("skip", strs(&["10.77.0.200"])),
    ];
    engine.apply(graph(&host, &net, &second, false)).await.unwrap();
    let got = run_client(&net, dir.path()).await.expect("a lease from the changed range");
    assert!(in_range(&got, 201, 201), "the lowest address of the new range not skipped: {got:?}");

    // A range that still holds the client's lease keeps it there.
    let third = [("network", s("10.77.0.0/24"))];
    engine.apply(graph(&host, &net, &third, false)).await.unwrap();
    let got = run_client(&net, dir.path()).await.expect("a lease from the widened range");
    assert!(in_range(&got, 201, 201), "the lease held is kept: {got:?}");
    engine.shutdown(support::WAIT).await;

    // A server whose interface does not exist says so.
    let bad = params(&[("address", s(":67")), ("interface", s("nosuch0"))]);
    let mut res = build_with(&host, "dhcp:server", "bad", &bad).unwrap();
    let err = support::check(res.as_mut(), true).await.unwrap_err();
    assert!(err.contains("there is no interface nosuch0"), "{err}");
}

async fn run_client(net: &Net, dir: &Path) -> Option<BTreeMap<String, String>> {
    let (ns, client_if, dir) = (net.ns.clone(), net.client_if.clone(), dir.to_path_buf());
    tokio::task::spawn_blocking(move || lease(&ns, &client_if, &dir)).await.unwrap()
}

#[tokio::test]
async fn bad_dhcp_params_are_rejected_with_the_param_named() {
    let dir = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(dir.path());
    for (kind, pairs, field) in [
        ("dhcp:server", vec![("address", s(":67"))], "interface"),
        ("dhcp:server", vec![("address", s("67")), ("interface", s("eth0"))], "address"),
        (
            "dhcp:server",
            vec![("address", s(":67")), ("interface", s("eth0")), ("leasetime", s("10 minutes"))],
            "leasetime",
        ),
        ("dhcp:server", vec![("address", s(":67")), ("interface", s("eth0")), ("dns", strs(&["dns.example"]))], "dns"),
        ("dhcp:server", vec![("address", s(":67")), ("interface", s("eth0")), ("nbp", s("http://x/y"))], "nbp"),
        ("dhcp:host", vec![("mac", s("02:00:00:00:00:AA")), ("ip", s("10.0.0.2/24"))], "mac"),
        ("dhcp:host", vec![("mac", s("02:00:00:00:00:aa")), ("ip", s("10.0.0.2"))], "ip"),
        ("dhcp:range", vec![("from", s("10.0.0.2"))], "from"),
        ("dhcp:range", vec![("network", s("10.0.0.0/24")), ("mask", s("/24"))], "mask"),
        ("dhcp:range", vec![("network", s("10.0.0.0/24")), ("skip", strs(&["ten"]))], "skip"),
    ] {
        let res = build_with(&host, kind, "x", &params(&pairs)).unwrap();
        let err = res.validate().expect_err(kind);
        assert!(err.message.contains(field), "{kind} {field}: {err}");
    }
}
