//! The virtualization and container kinds (`virt`, `virt:network` with its hosts and
//! ranges, `virt:builder`, `nspawn`, `docker:image`) against their in-memory backends:
//! converging from each state, idempotence, noop reports, validation, and watches that
//! notice changes made behind the engine's back.

use crate::support;
use lang::params::ParamMap;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use engine::{ApplyCtx, InitCtx, ResKey, Resource};
use lang::value::Value;
use resources::build_with;
use resources::machine::{FakePackages, Machine};
use resources::virtualization::docker::FakeDocker;
use resources::virtualization::nspawn::FakeMachines;
use resources::virtualization::virt::{Conn, DomState, FakeLibvirt, Libvirt};
use resources::virtualization::virt_builder::FakeBuilder;
use resources::virtualization::virt_network::{DhcpHost, DhcpRange, FakeNetworks, MemberSpec, VirtNetwork};
use support::{check, converge, params, s, strs};

/// Some params of a test case.
type Fields<'a> = &'a [(&'a str, Value)];

/// Network params, grouped members, and the expected validation error.
type NetCase = (Vec<(&'static str, Value)>, Vec<MemberSpec>, &'static str);

fn int(n: i64) -> Value {
    Value::Int(n)
}

fn virt_host(root: &std::path::Path) -> (Machine, Arc<FakeLibvirt>) {
    let libvirt = Arc::new(FakeLibvirt::default());
    (Machine { libvirt: libvirt.clone(), ..Machine::sandbox(root) }, libvirt)
}

fn vm(state: &str, transient: bool, extra: &[(&str, Value)]) -> ParamMap {
    let mut p = params(&[
        ("uri", s("qemu:///session")),
        ("cpus", int(1)),
        ("maxcpus", int(4)),
        ("memory", int(524288)),
        ("state", s(state)),
        ("transient", Value::Bool(transient)),
    ]);
    p.extend(params(extra));
    p
}

async fn apply_once(res: &mut dyn Resource) -> Result<bool, String> {
    check(res, true).await.map(|(ok, _)| ok)
}

#[tokio::test]
async fn virt_creates_a_transient_domain_and_finds_it_right_afterwards() {
    let root = tempfile::tempdir().unwrap();
    let (host, libvirt) = virt_host(root.path());
    let mut res = build_with(&host, "virt", "mgmt3", &vm("running", true, &[])).unwrap();
    let (ok, reports) = check(res.as_mut(), false).await.unwrap();
    assert!(!ok && reports[0].contains("would create (transient)"), "{reports:?}");
    assert!(libvirt.domain("mgmt3").is_none(), "noop changes nothing");
    converge(res.as_mut()).await;
    let info = libvirt.domain("mgmt3").unwrap();
    assert_eq!((info.state, info.persistent, info.vcpus, info.max_vcpus), (DomState::Running, false, 1, 4));
    assert_eq!(libvirt.calls(), ["create mgmt3"]);
    let xml = libvirt.xml("mgmt3").unwrap();
    assert!(xml.contains("<memory unit='KiB'>524288</memory>") && xml.contains("<vcpu current='1'>4</vcpu>"));
}

#[tokio::test]
async fn virt_converges_a_persistent_domain_from_every_state() {
    let root = tempfile::tempdir().unwrap();
    let (host, libvirt) = virt_host(root.path());
    let conn = Conn::default();
    let mut running = build_with(&host, "virt", "vm", &vm("running", false, &[])).unwrap();
    converge(running.as_mut()).await;
    assert_eq!(libvirt.calls(), ["define vm", "start vm"]);
    assert!(libvirt.domain("vm").unwrap().persistent);

    libvirt.suspend(&conn, "vm").await.unwrap();
    assert!(!apply_once(running.as_mut()).await.unwrap());
    assert_eq!(libvirt.calls().last().unwrap(), "resume vm");
    libvirt.power_off_behind_our_back("vm");
    assert!(!apply_once(running.as_mut()).await.unwrap());
    assert_eq!(libvirt.calls().last().unwrap(), "start vm");

    let mut paused = build_with(&host, "virt", "vm", &vm("paused", false, &[])).unwrap();
    converge(paused.as_mut()).await;
    assert_eq!(libvirt.domain("vm").unwrap().state, DomState::Paused);
    libvirt.power_off_behind_our_back("vm");
    converge(paused.as_mut()).await;
    assert_eq!(libvirt.calls().last().unwrap(), "start vm --paused");

    let mut off = build_with(&host, "virt", "vm", &vm("shutoff", false, &[])).unwrap();
    converge(off.as_mut()).await;
    assert_eq!(libvirt.calls().last().unwrap(), "destroy vm");
    assert_eq!(libvirt.domain("vm").unwrap().state, DomState::ShutOff, "still defined");

    // Transient + shutoff means absent: undefine, and the inactive domain is gone.
    let mut absent = build_with(&host, "virt", "vm", &vm("shutoff", true, &[])).unwrap();
    converge(absent.as_mut()).await;
    assert!(libvirt.domain("vm").is_none());
    assert!(apply_once(absent.as_mut()).await.unwrap(), "absent stays absent");

    // A running transient domain becomes persistent from its own definition.
    let mut transient = build_with(&host, "virt", "vm", &vm("running", true, &[])).unwrap();
    converge(transient.as_mut()).await;
    converge(running.as_mut()).await;
    assert!(libvirt.domain("vm").unwrap().persistent);
    assert_eq!(libvirt.calls().last().unwrap(), "define vm");
}

#[tokio::test]
async fn virt_without_a_state_defines_but_leaves_the_run_state_alone() {
    let root = tempfile::tempdir().unwrap();
    let (host, libvirt) = virt_host(root.path());
    let mut res = build_with(&host, "virt", "vm", &vm("", false, &[])).unwrap();
    converge(res.as_mut()).await;
    assert_eq!(libvirt.calls(), ["define vm"]);
    assert_eq!(libvirt.domain("vm").unwrap().state, DomState::ShutOff);
    libvirt.start(&Conn::default(), "vm", true).await.unwrap();
    assert!(apply_once(res.as_mut()).await.unwrap(), "paused by someone else: fine");
}

#[tokio::test]
async fn virt_sets_cpus_and_memory_live_and_follows_the_restart_policy() {
    let root = tempfile::tempdir().unwrap();
    let (host, libvirt) = virt_host(root.path());
    converge(build_with(&host, "virt", "vm", &vm("running", false, &[])).unwrap().as_mut()).await;

    let mut more =
        build_with(&host, "virt", "vm", &vm("running", false, &[("cpus", int(3)), ("memory", int(262144))])).unwrap();
    let (_, reports) = check(more.as_mut(), false).await.unwrap();
    assert!(reports.iter().any(|r| r.contains("would set cpus from 1 to 3")), "{reports:?}");
    converge(more.as_mut()).await;
    let info = libvirt.domain("vm").unwrap();
    assert_eq!((info.vcpus, info.memory), (3, 262144));
    assert!(libvirt.calls().contains(&"setvcpus vm 3 --live --config".to_string()), "{:?}", libvirt.calls());

    // Eight vcpu slots need the guest off: refused by default...
    let slots = |policy: &str| vm("running", false, &[("maxcpus", int(8)), ("restartondiverge", s(policy))]);
    let mut strict = build_with(&host, "virt", "vm", &vm("running", false, &[("maxcpus", int(8))])).unwrap();
    let err = apply_once(strict.as_mut()).await.unwrap_err();
    assert!(err.contains("4 vcpu slots") && err.contains("restartondiverge"), "{err}");
    // ...left alone with `ignore`...
    let mut ignore = build_with(&host, "virt", "vm", &slots("ignore")).unwrap();
    assert!(apply_once(ignore.as_mut()).await.unwrap());
    assert_eq!(libvirt.domain("vm").unwrap().max_vcpus, 4);
    // ...and done with `ifneeded`: shut down, redefine, start.
    let mut restart = build_with(&host, "virt", "vm", &slots("ifneeded")).unwrap();
    converge(restart.as_mut()).await;
    let info = libvirt.domain("vm").unwrap();
    assert_eq!((info.state, info.max_vcpus, info.vcpus), (DomState::Running, 8, 1));
    let calls = libvirt.calls();
    let tail: Vec<&str> = calls.iter().rev().take(3).rev().map(String::as_str).collect();
    assert_eq!(tail, ["shutdown vm", "define vm", "start vm"]);

    // A shut-off domain is reshaped without any restart.
    let mut off = build_with(&host, "virt", "vm", &vm("shutoff", false, &[("maxcpus", int(2))])).unwrap();
    converge(off.as_mut()).await;
    assert_eq!(libvirt.domain("vm").unwrap().max_vcpus, 2);
}

#[tokio::test]
async fn virt_restarts_on_a_notification_only_when_asked() {
    let root = tempfile::tempdir().unwrap();
    let (host, libvirt) = virt_host(root.path());
    let mut plain = build_with(&host, "virt", "vm", &vm("running", true, &[])).unwrap();
    converge(plain.as_mut()).await;
    assert!(plain.refreshable());
    let mut ctx = ApplyCtx::detached();
    ctx.refresh = true;
    assert!(plain.check_apply(&mut ctx, true).await.unwrap(), "restartonrefresh is off");
    let mut restarting =
        build_with(&host, "virt", "vm", &vm("running", true, &[("restartonrefresh", Value::Bool(true))])).unwrap();
    let mut ctx = ApplyCtx::detached();
    ctx.refresh = true;
    assert!(!restarting.check_apply(&mut ctx, true).await.unwrap());
    // A transient domain vanishes when it powers off, so it is created again.
    assert_eq!(libvirt.calls(), ["create vm", "shutdown vm", "create vm"]);
    assert_eq!(libvirt.domain("vm").unwrap().state, DomState::Running);
}

#[tokio::test]
async fn virt_validation_names_the_field() {
    let root = tempfile::tempdir().unwrap();
    let (host, _) = virt_host(root.path());
    let cases: &[(&[(&str, Value)], &str)] = &[
        (&[("state", s("on"))], "field `state`: `on` is not one of `running`, `paused` or `shutoff`, or unset"),
        (&[("cpus", int(5))], "must not be greater than maxcpus (4)"),
        (&[("memory", int(0))], "field `memory`"),
        (&[("restartondiverge", s("sometimes"))], "field `restartondiverge`"),
        (&[("boot", strs(&["usb"]))], "`usb` is not one of"),
    ];
    for (extra, expected) in cases {
        // A value outside a closed set fails at build; the rest in validation.
        let err = match build_with(&host, "virt", "vm", &vm("running", false, extra)) {
            Ok(res) => res.validate().unwrap_err().message,
            Err(e) => e.to_string(),
        };
        assert!(err.starts_with("virt[vm]: ") && err.contains(expected), "{err}");
    }
    let err = build_with(&host, "virt", "vm", &vm("running", false, &[("cpus", int(-1))])).err().unwrap();
    assert!(err.to_string().contains("can't store negative int"), "{err}");
    let absent =
        build_with(&host, "virt", "vm", &params(&[("state", s("shutoff")), ("transient", Value::Bool(true))])).unwrap();
    assert!(absent.validate().is_ok(), "an absent domain needs no size");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn virt_watch_notices_a_domain_powered_off_behind_our_back() {
    let root = tempfile::tempdir().unwrap();
    let (host, libvirt) = virt_host(root.path());
    let engine = support::engine(&root.path().join("state"));
    let mut g = engine::Graph::new();
    g.add_vertex(
        ResKey::new("virt", "vm"),
        engine::Meta::default(),
        build_with(&host, "virt", "vm", &vm("running", false, &[])).unwrap(),
    );
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(support::WAIT).await);
    assert_eq!(libvirt.domain("vm").unwrap().state, DomState::Running);
    libvirt.power_off_behind_our_back("vm");
    assert!(
        support::eventually(|| libvirt.calls().iter().filter(|c| *c == "start vm").count() == 2).await,
        "{:?}",
        libvirt.calls()
    );
    assert!(engine.wait_converged(support::WAIT).await);
    assert_eq!(libvirt.domain("vm").unwrap().state, DomState::Running);
    engine.shutdown(support::WAIT).await;
}

// ---------------------------------------------------------------------------------------
// virt:network

fn net_params(extra: &[(&str, Value)]) -> ParamMap {
    let mut p = params(&[
        ("state", s("up")),
        ("device", s("mgmtbr0")),
        ("mac", s("52:54:00:bd:00:01")),
        ("ip", s("192.168.42.1/24")),
        ("startup", s("enabled")),
        ("purge_hosts", Value::Bool(true)),
        ("purge_ranges", Value::Bool(true)),
    ]);
    p.extend(params(extra));
    p
}

fn host_member(name: &str, mac: &str, ip: &str) -> MemberSpec {
    MemberSpec::decode("virt:network:host", name, &params(&[("mac", s(mac)), ("ip", s(ip))])).unwrap()
}

fn range_member(name: &str, start: &str, end: &str) -> MemberSpec {
    MemberSpec::decode("virt:network:range", name, &params(&[("start", s(start)), ("end", s(end))])).unwrap()
}

fn network(host: &Machine, extra: &[(&str, Value)], members: Vec<MemberSpec>) -> VirtNetwork {
    VirtNetwork::build(host, "mgmtnet", &net_params(extra)).unwrap().with_members(members)
}

fn members() -> Vec<MemberSpec> {
    vec![
        host_member("james", "52:54:00:00:00:69", "192.168.42.7/24"),
        range_member("main", "192.168.42.100", "192.168.42.200"),
    ]
}

#[tokio::test]
async fn a_network_is_defined_with_its_hosts_and_ranges_started_and_autostarted() {
    let root = tempfile::tempdir().unwrap();
    let nets = Arc::new(FakeNetworks::default());
    let host = Machine { networks: nets.clone(), ..Machine::sandbox(root.path()) };
    let mut res = network(&host, &[], members());
    let (ok, reports) = check(&mut res, false).await.unwrap();
    assert!(!ok && reports == ["virt:network[mgmtnet]: would define the network"], "{reports:?}");
    converge(&mut res).await;
    assert_eq!(nets.calls(), ["net-define mgmtnet", "net-start mgmtnet", "net-autostart mgmtnet true"]);
    let info = nets.info_of("mgmtnet").unwrap();
    assert!(info.active && info.persistent && info.autostart);
    for live in [false, true] {
        let def = nets.def("mgmtnet", live).unwrap();
        assert_eq!(
            (def.bridge.as_str(), def.mac.as_str(), def.forward_mode.as_str()),
            ("mgmtbr0", "52:54:00:bd:00:01", "nat")
        );
        assert_eq!((def.ips[0].address.as_str(), def.ips[0].netmask.as_str()), ("192.168.42.1", "255.255.255.0"));
        assert_eq!(
            def.ips[0].hosts,
            [DhcpHost { mac: "52:54:00:00:00:69".into(), name: "james".into(), ip: "192.168.42.7".into() }]
        );
        assert_eq!(def.ips[0].ranges, [DhcpRange { start: "192.168.42.100".into(), end: "192.168.42.200".into() }]);
    }
}

#[tokio::test]
async fn dhcp_entries_are_reconciled_in_both_views_without_a_restart() {
    let root = tempfile::tempdir().unwrap();
    let nets = Arc::new(FakeNetworks::default());
    let host = Machine { networks: nets.clone(), ..Machine::sandbox(root.path()) };
    converge(&mut network(&host, &[], members())).await;
    let before = nets.calls().len();

    // Drift: james loses his entry in the live network, a stranger appears in the config,
    // and the range is changed in both.
    nets.tamper("mgmtnet", true, |d| d.ips[0].hosts.clear());
    nets.tamper("mgmtnet", false, |d| {
        d.ips[0].hosts.push(DhcpHost { mac: "52:54:00:00:00:99".into(), name: "x".into(), ip: "192.168.42.9".into() })
    });
    for live in [false, true] {
        nets.tamper("mgmtnet", live, |d| d.ips[0].ranges[0].end = "192.168.42.150".into());
    }
    let mut res = network(&host, &[], members());
    converge(&mut res).await;
    let calls = nets.calls()[before..].to_vec();
    assert!(calls.iter().all(|c| c.starts_with("net-update")), "no restart: {calls:?}");
    assert!(
        calls
            .iter()
            .any(|c| c.contains("delete ip-dhcp-host <host mac='52:54:00:00:00:99'") && c.ends_with("--config"))
    );
    assert!(calls.iter().any(|c| c.contains("add-last ip-dhcp-host") && c.ends_with("--live")));
    for live in [false, true] {
        let def = nets.def("mgmtnet", live).unwrap();
        assert_eq!(def.ips[0].hosts.len(), 1, "live={live}");
        assert_eq!(def.ips[0].ranges, [DhcpRange { start: "192.168.42.100".into(), end: "192.168.42.200".into() }]);
    }

    // A changed host is modified in place; without purge an unknown host stays.
    let moved = vec![host_member("james", "52:54:00:00:00:69", "192.168.42.8/24")];
    let mut res = network(&host, &[("purge_hosts", Value::Bool(false)), ("purge_ranges", Value::Bool(false))], moved);
    nets.tamper("mgmtnet", false, |d| {
        d.ips[0].hosts.push(DhcpHost {
            mac: "52:54:00:00:00:98".into(),
            name: String::new(),
            ip: "192.168.42.98".into(),
        })
    });
    converge(&mut res).await;
    assert!(nets.calls().iter().any(|c| c.contains("modify ip-dhcp-host")));
    let config = nets.def("mgmtnet", false).unwrap();
    assert_eq!(config.ips[0].hosts.len(), 2);
    assert_eq!(config.ips[0].ranges.len(), 1, "the range is kept without purge_ranges");
}

#[tokio::test]
async fn base_drift_rewrites_the_definition_and_restarts_the_network() {
    let root = tempfile::tempdir().unwrap();
    let nets = Arc::new(FakeNetworks::default());
    let host = Machine { networks: nets.clone(), ..Machine::sandbox(root.path()) };
    converge(&mut network(&host, &[], members())).await;
    nets.tamper("mgmtnet", false, |d| d.bridge = "virbr9".into());
    let before = nets.calls().len();
    converge(&mut network(&host, &[], members())).await;
    assert_eq!(nets.calls()[before..], ["net-define mgmtnet", "net-destroy mgmtnet", "net-start mgmtnet"]);
    let live = nets.def("mgmtnet", true).unwrap();
    assert_eq!(live.bridge, "mgmtbr0");
    assert_eq!(live.ips[0].hosts.len(), 1, "the DHCP entries survive the rewrite");
}

#[tokio::test]
async fn transient_networks_are_created_and_torn_down() {
    let root = tempfile::tempdir().unwrap();
    let nets = Arc::new(FakeNetworks::default());
    let host = Machine { networks: nets.clone(), ..Machine::sandbox(root.path()) };
    let up = [("transient", Value::Bool(true)), ("startup", s(""))];
    converge(&mut network(&host, &up, members())).await;
    assert_eq!(nets.calls(), ["net-create mgmtnet"]);
    assert!(!nets.info_of("mgmtnet").unwrap().persistent);

    // Making it persistent defines what runs.
    converge(&mut network(&host, &[], members())).await;
    assert!(nets.info_of("mgmtnet").unwrap().persistent);

    let down = [("transient", Value::Bool(true)), ("startup", s("")), ("state", s("down"))];
    let mut gone = network(&host, &down, Vec::new());
    gone.validate().expect("teardown needs no addresses");
    converge(&mut gone).await;
    assert!(nets.info_of("mgmtnet").is_none());
    assert!(apply_once(&mut gone).await.unwrap());

    let mut stopped = network(&host, &[("state", s("down"))], members());
    converge(&mut stopped).await;
    let info = nets.info_of("mgmtnet").unwrap();
    assert!(info.persistent && !info.active);
}

#[tokio::test]
async fn network_validation_checks_the_grouped_members() {
    let root = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(root.path());
    let cases: Vec<NetCase> = vec![
        (vec![("mac", s("52:54:00:BD:00:01"))], vec![], "canonical format of: 52:54:00:bd:00:01"),
        (vec![("ip", s("192.168.42.1"))], vec![], "field `ip`"),
        (vec![("transient", Value::Bool(true))], vec![], "cannot start on boot"),
        (vec![("mode", s("route"))], vec![], "field `mode`"),
        (vec![("uuid", s("1234"))], vec![], "field `uuid`"),
        (vec![], vec![host_member("far", "52:54:00:00:00:01", "192.168.43.7/24")], "outside 192.168.42.0/24"),
        (vec![], vec![host_member("wide", "52:54:00:00:00:01", "192.168.42.7/16")], "prefix /16 differs"),
        (
            vec![],
            vec![
                host_member("a", "52:54:00:00:00:01", "192.168.42.7/24"),
                host_member("b", "52:54:00:00:00:01", "192.168.42.8/24"),
            ],
            "both reserve mac",
        ),
        (
            vec![],
            vec![
                host_member("a", "52:54:00:00:00:01", "192.168.42.150/24"),
                range_member("r", "192.168.42.100", "192.168.42.200"),
            ],
            "contains 192.168.42.150",
        ),
        (
            vec![],
            vec![
                range_member("r1", "192.168.42.100", "192.168.42.200"),
                range_member("r2", "192.168.42.150", "192.168.42.250"),
            ],
            "overlaps",
        ),
        (vec![], vec![range_member("r", "192.168.42.200", "192.168.42.100")], "must not be greater than the end"),
    ];
    for (extra, members, expected) in cases {
        let err = network(&host, &extra, members).validate().unwrap_err().message;
        assert!(err.starts_with("virt:network[mgmtnet]: ") && err.contains(expected), "{expected}: {err}");
    }
    assert!(network(&host, &[], members()).validate().is_ok());
}

#[test]
fn graph_building_groups_hosts_and_ranges_into_their_network() {
    use lang::resgraph::{Meta, ResGraph, ResVertex};
    use lang::span::Span;
    let vertex = |kind: &str, name: &str, p: ParamMap| ResVertex {
        kind: kind.into(),
        name: name.into(),
        params: p,
        param_spans: Box::default(),
        meta: Meta::shared_default(),
        collected: false,
        span: Span::default(),
    };
    let host = |ip: &str| params(&[("mac", s("52:54:00:00:00:69")), ("ip", s(ip))]);
    let graph = ResGraph {
        vertices: vec![
            vertex("virt:network", "mgmtnet", net_params(&[])),
            vertex("virt:network:host", "james", host("192.168.42.7/24")),
        ],
        edges: Vec::new(),
        ..Default::default()
    };
    assert!(resources::contract::graph::check(&graph).is_empty());
    // The network validates its members: a host outside the subnet fails at check time.
    let graph = ResGraph {
        vertices: vec![
            vertex("virt:network", "mgmtnet", net_params(&[])),
            vertex("virt:network:host", "james", host("10.0.0.7/24")),
        ],
        edges: Vec::new(),
        ..Default::default()
    };
    let diags = resources::contract::graph::check(&graph).into_vec();
    assert!(diags.len() == 1 && diags[0].message.contains("outside 192.168.42.0/24"), "{:?}", diags);
    // A host with no network to join is an error of its own.
    let graph = ResGraph {
        vertices: vec![vertex("virt:network:host", "james", host("192.168.42.7/24"))],
        edges: Vec::new(),
        ..Default::default()
    };
    let diags = resources::contract::graph::check(&graph).into_vec();
    assert!(diags.len() == 1 && diags[0].message.contains("no virt:network resource in the graph"), "{:?}", diags);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_watch_restarts_a_network_stopped_behind_our_back() {
    let root = tempfile::tempdir().unwrap();
    let nets = Arc::new(FakeNetworks::default());
    let host = Machine { networks: nets.clone(), ..Machine::sandbox(root.path()) };
    let engine = support::engine(&root.path().join("state"));
    let mut g = engine::Graph::new();
    g.add_vertex(
        ResKey::new("virt:network", "mgmtnet"),
        engine::Meta::default(),
        Box::new(network(&host, &[], members())),
    );
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(support::WAIT).await);
    nets.stop_behind_our_back("mgmtnet");
    assert!(support::eventually(|| nets.info_of("mgmtnet").is_some_and(|i| i.active)).await, "{:?}", nets.calls());
    engine.shutdown(support::WAIT).await;
}

// ---------------------------------------------------------------------------------------
// virt:builder

fn builder_host(root: &std::path::Path) -> (Machine, Arc<FakeBuilder>, Arc<FakePackages>) {
    let builder = Arc::new(FakeBuilder::default());
    let packages = Arc::new(FakePackages::default());
    (Machine { builder: builder.clone(), packages: packages.clone(), ..Machine::sandbox(root) }, builder, packages)
}

#[tokio::test]
async fn an_image_is_built_once_and_its_log_kept() {
    let root = tempfile::tempdir().unwrap();
    let (host, builder, _) = builder_host(root.path());
    builder.installed.store(true, Ordering::SeqCst);
    let output = root.path().join("vm.raw").display().to_string();
    let p = params(&[("os_version", s("fedora-40")), ("size", int(1 << 30)), ("packages", strs(&["screen"]))]);
    let mut res = build_with(&host, "virt:builder", &output, &p).unwrap();
    res.init(&InitCtx {
        key: ResKey::new("virt:builder", &output),
        var_dir: Some(root.path().join("var")),
        state_dir: root.path().into(),
    })
    .await
    .unwrap();
    let (ok, reports) = check(res.as_mut(), false).await.unwrap();
    assert!(!ok && reports[0].contains("would build"), "{reports:?}");
    converge(res.as_mut()).await;
    assert_eq!(std::fs::read_to_string(&output).unwrap(), "image");
    let runs = builder.runs();
    assert_eq!(runs.len(), 1, "idempotent: built once");
    assert_eq!(runs[0][..3], ["fedora-40".to_string(), "--output".to_string(), output.clone()]);
    let text = runs[0].join(" ");
    assert!(text.contains("--size 1073741824b --install screen") && text.contains("--copy-in "), "{text}");
    let logs: Vec<_> = std::fs::read_dir(root.path().join("var")).unwrap().collect();
    assert_eq!(logs.len(), 1);
}

#[tokio::test]
async fn a_failed_build_leaves_no_partial_image() {
    let root = tempfile::tempdir().unwrap();
    let (host, builder, packages) = builder_host(root.path());
    let output = root.path().join("vm.qcow2").display().to_string();
    let p = params(&[("os_version", s("debian-12")), ("format", s("qcow2"))]);
    let mut res = build_with(&host, "virt:builder", &output, &p).unwrap();

    // Tool missing: installed through the package manager first (unknown there: error).
    let err = apply_once(res.as_mut()).await.unwrap_err();
    assert!(err.contains("guestfs-tools"), "{err}");
    packages.offer("guestfs-tools", "1.48");
    builder.fail.store(true, Ordering::SeqCst);
    let err = apply_once(res.as_mut()).await.unwrap_err();
    assert!(err.contains("failed with exit status 1") && err.contains("disk full"), "{err}");
    assert_eq!(packages.installed_version("guestfs-tools").as_deref(), Some("1.48"));
    assert!(!std::path::Path::new(&output).exists(), "the partial image is deleted");

    let mut no_setup = build_with(
        &host,
        "virt:builder",
        &output,
        &params(&[("os_version", s("debian-12")), ("no_setup", Value::Bool(true))]),
    )
    .unwrap();
    let err = apply_once(no_setup.as_mut()).await.unwrap_err();
    assert!(err.contains("not installed and no_setup is set"), "{err}");
}

#[tokio::test]
async fn builder_validation_names_the_field() {
    let root = tempfile::tempdir().unwrap();
    let host = Machine::sandbox(root.path());
    let cases: &[(&str, Fields<'_>, &str)] = &[
        ("relative.raw", &[("os_version", s("fedora-40"))], "field `output`"),
        ("/i.raw", &[], "field `os_version`"),
        ("/i.raw", &[("os_version", s("fedora-40")), ("format", s("vmdk"))], "field `format`"),
        ("/i.raw", &[("os_version", s("fedora-40")), ("size", int(-1))], "field `size`"),
        ("/i.raw", &[("os_version", s("fedora-40")), ("packages", strs(&["a,b"]))], "field `packages`"),
        ("/i.raw", &[("os_version", s("fedora-40")), ("mkdir", strs(&["/opt/x"]))], "field `mkdir`"),
        ("/i.raw", &[("os_version", s("fedora-40")), ("seeds", strs(&["http://127.0.0.1:2379"]))], "field `seeds`"),
    ];
    for (name, p, expected) in cases {
        let err = build_with(&host, "virt:builder", name, &params(p)).unwrap().validate().unwrap_err().message;
        assert!(err.contains(expected), "{expected}: {err}");
    }
}

// ---------------------------------------------------------------------------------------
// nspawn

#[tokio::test]
async fn nspawn_starts_stops_and_reboots_on_refresh() {
    let root = tempfile::tempdir().unwrap();
    let machines = Arc::new(FakeMachines::new(root.path()));
    let host = Machine { machines: machines.clone(), ..Machine::sandbox(root.path()) };
    let mut running = build_with(&host, "nspawn", "stretch-nspawn-1", &params(&[])).unwrap();
    running.validate().unwrap();
    let err = apply_once(running.as_mut()).await.unwrap_err();
    assert!(err.contains("no machine nor image"), "{err}");
    machines.add_image("stretch-nspawn-1");
    let (_, reports) = check(running.as_mut(), false).await.unwrap();
    assert!(reports[0].contains("would start"), "{reports:?}");
    converge(running.as_mut()).await;
    assert!(machines.is_running("stretch-nspawn-1"));
    assert!(root.path().join("run/systemd/machines/stretch-nspawn-1").exists());

    let mut ctx = ApplyCtx::detached();
    ctx.refresh = true;
    assert!(!running.check_apply(&mut ctx, true).await.unwrap());
    assert_eq!(machines.calls().last().unwrap(), "reboot stretch-nspawn-1");

    let mut stopped = build_with(&host, "nspawn", "stretch-nspawn-1", &params(&[("state", s("stopped"))])).unwrap();
    converge(stopped.as_mut()).await;
    assert!(!machines.is_running("stretch-nspawn-1"));
    assert_eq!(machines.calls(), ["start stretch-nspawn-1", "reboot stretch-nspawn-1", "poweroff stretch-nspawn-1"]);

    let bad = build_with(&host, "nspawn", "a b", &params(&[("state", s("stopped"))])).unwrap();
    assert!(bad.validate().unwrap_err().message.contains("machine name"));
    let bad = build_with(&host, "nspawn", "ok", &params(&[("state", s("up"))])).err().unwrap();
    assert!(bad.to_string().contains("field `state`: `up` is not one of `running` or `stopped`"), "{bad}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nspawn_watch_restarts_a_container_that_exited() {
    let root = tempfile::tempdir().unwrap();
    let machines = Arc::new(FakeMachines::new(root.path()));
    machines.add_image("m1");
    let host = Machine { machines: machines.clone(), ..Machine::sandbox(root.path()) };
    let engine = support::engine(&root.path().join("state"));
    let mut g = engine::Graph::new();
    g.add_vertex(
        ResKey::new("nspawn", "m1"),
        engine::Meta::default(),
        build_with(&host, "nspawn", "m1", &params(&[])).unwrap(),
    );
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(support::WAIT).await);
    assert!(machines.is_running("m1"));
    machines.exit_behind_our_back("m1");
    assert!(
        support::eventually(|| machines.calls().len() == 2 && machines.is_running("m1")).await,
        "{:?}",
        machines.calls()
    );
    engine.shutdown(support::WAIT).await;
}

// ---------------------------------------------------------------------------------------
// docker:image

#[tokio::test]
async fn docker_images_are_pulled_and_removed() {
    let root = tempfile::tempdir().unwrap();
    let docker = Arc::new(FakeDocker::default());
    let host = Machine { docker: docker.clone(), ..Machine::sandbox(root.path()) };
    let mut missing = build_with(&host, "docker:image", "nosuch", &params(&[])).unwrap();
    assert!(apply_once(missing.as_mut()).await.unwrap_err().contains("manifest for nosuch:latest not found"));

    docker.offer("nginx:latest", "sha256:1");
    let mut nginx =
        build_with(&host, "docker:image", "nginx", &params(&[("state", s("exists")), ("apiversion", s("v1.41"))]))
            .unwrap();
    nginx.validate().unwrap();
    let (_, reports) = check(nginx.as_mut(), false).await.unwrap();
    assert_eq!(reports, ["docker:image[nginx]: would pull nginx:latest"]);
    converge(nginx.as_mut()).await;
    assert!(docker.has("nginx:latest"));
    let mut gone = build_with(&host, "docker:image", "nginx", &params(&[("state", s("absent"))])).unwrap();
    converge(gone.as_mut()).await;
    assert!(!docker.has("nginx:latest"));
    assert_eq!(docker.calls(), ["pull nosuch:latest", "pull nginx:latest v1.41", "rm nginx:latest"]);

    let bad = build_with(&host, "docker:image", "nginx", &params(&[("state", s("present"))])).err().unwrap();
    assert!(bad.to_string().contains("field `state`: `present` is not one of"), "{bad}");
    let bad = build_with(&host, "docker:image", "nginx", &params(&[("apiversion", s("1.41"))])).unwrap();
    assert!(bad.validate().unwrap_err().message.contains("field `apiversion`"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_watch_pulls_an_image_removed_behind_our_back() {
    let root = tempfile::tempdir().unwrap();
    let docker = Arc::new(FakeDocker::default());
    docker.offer("nginx:latest", "sha256:1");
    let host = Machine { docker: docker.clone(), ..Machine::sandbox(root.path()) };
    let engine = support::engine(&root.path().join("state"));
    let mut g = engine::Graph::new();
    g.add_vertex(
        ResKey::new("docker:image", "nginx"),
        engine::Meta::default(),
        build_with(&host, "docker:image", "nginx", &params(&[])).unwrap(),
    );
    engine.apply(g).await.unwrap();
    assert!(engine.wait_converged(support::WAIT).await);
    assert!(docker.has("nginx:latest"));
    docker.remove_behind_our_back("nginx:latest");
    assert!(support::eventually(|| docker.has("nginx:latest")).await, "{:?}", docker.calls());
    assert_eq!(docker.calls(), ["pull nginx:latest", "pull nginx:latest"]);
    engine.shutdown(support::WAIT).await;
}

// ---------------------------------------------------------------------------------------
// Event sources

/// A resource whose watch follows an event source that ends after one line.
struct Flaky {
    opens: Arc<std::sync::atomic::AtomicUsize>,
    checks: Arc<std::sync::atomic::AtomicUsize>,
}

#[async_trait::async_trait]
impl Resource for Flaky {
    fn watch(&self, ctx: engine::WatchCtx) -> futures::future::BoxFuture<'static, Result<(), engine::ResError>> {
        use futures::StreamExt;
        let opens = self.opens.clone();
        let open = move || {
            opens.fetch_add(1, Ordering::SeqCst);
            Ok(futures::stream::iter(vec![Ok("noise".to_string()), Ok("hit".to_string())]).boxed())
        };
        let delay = std::time::Duration::from_millis(20);
        Box::pin(resources::util::events::follow_with_delay(ctx, open, |line| line == "hit", delay))
    }
    async fn check_apply(&mut self, _: &mut ApplyCtx, _: bool) -> Result<bool, engine::ResError> {
        self.checks.fetch_add(1, Ordering::SeqCst);
        Ok(true)
    }
    fn fingerprint(&self) -> String {
        String::new()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_event_source_is_reopened_with_an_event() {
    let root = tempfile::tempdir().unwrap();
    let opens = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let checks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let engine = support::engine(&root.path().join("state"));
    let mut g = engine::Graph::new();
    g.add_vertex(
        ResKey::new("test", "flaky"),
        engine::Meta::default(),
        Box::new(Flaky { opens: opens.clone(), checks: checks.clone() }),
    );
    engine.apply(g).await.unwrap();
    assert!(support::eventually(|| opens.load(Ordering::SeqCst) >= 3 && checks.load(Ordering::SeqCst) >= 3).await);
    assert!(engine.failures().await.is_empty(), "the watch never failed");
    engine.shutdown(support::WAIT).await;
}
