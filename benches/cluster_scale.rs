//! Scale by simulation: N hosts in one process against one real etcd, each a real
//! `EtcdWorld` (its own client connection, session lease and host-name claim) that holds a
//! map entry and 10 exports and follows one mapped namespace (a `world.kvlookup` watch);
//! ten of them also follow the exports (collectors). No engine, no dataflow: only the world.
//!
//! It prints, per N: the time to connect everyone and for every watcher to see every entry;
//! the time for one host's map entry change to reach every watcher (p50/p99 over trials,
//! and per delivery); the time for one host's export change to reach the ten collectors;
//! etcd's CPU time and resident memory; and this process's memory per simulated host.
//!
//! Usage: `cargo bench --bench cluster_scale -- [N …]` (default: 100 1000). Needs `etcd`.
//! With `TEND_BENCH_TLS=1`, etcd speaks TLS and requires client certificates (made by
//! `world::pki`), and every simulated host connects with one. With `TEND_BENCH_CONFINED=1`
//! as well, etcd's authentication is on and every simulated host has its own certificate and
//! is confined to its own keys (`tend cluster grant`, through `world::etcd::access`).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use testkit::etcd::{Etcd, EtcdTls};
use world::{Export, Follow, Topic, World};

const TRIALS: usize = 30;
const EXPORTS: usize = 10;
const COLLECTORS: usize = 10;

fn main() {
    let sizes: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![100, 1000] } else { sizes };
    let pki = tempfile::tempdir().unwrap();
    let tls = std::env::var_os("TEND_BENCH_TLS").map(|_| {
        world::pki::init(pki.path(), false).unwrap();
        let member = world::pki::Request {
            name: "etcd".into(),
            ips: vec!["127.0.0.1".parse().unwrap()],
            days: 1,
            ..Default::default()
        };
        world::pki::issue(pki.path(), &member, false).unwrap();
        let client = world::pki::Request { name: "sim".into(), days: 1, ..Default::default() };
        let [cert, key] = world::pki::issue(pki.path(), &client, false).unwrap();
        world::Tls { ca: pki.path().join("ca.crt"), identity: Some((cert, key)) }
    });
    for n in sizes {
        let etcd = match &tls {
            Some(_) => Etcd::start_tls(EtcdTls::of(pki.path())),
            None => Etcd::start(),
        };
        let Some(etcd) = etcd else {
            eprintln!("cluster_scale: no etcd installed; skipped");
            return;
        };
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let confined = std::env::var_os("TEND_BENCH_CONFINED").is_some() && tls.is_some();
        rt.block_on(simulate(&etcd, n, tls.clone(), confined.then(|| pki.path())));
        rt.shutdown_timeout(Duration::from_secs(2));
    }
}

/// Resident memory of process `pid` (KiB).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("VmRSS:")?.split_whitespace().next()?.parse().ok()).unwrap_or(0)
}

/// CPU time of process `pid` (user + system, seconds).
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(") ").map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = fields.get(11..13).map(|f| f.iter().filter_map(|v| v.parse::<f64>().ok()).sum()).unwrap_or(0.0);
    ticks / 100.0
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((p / 100.0) * (sorted.len() - 1) as f64).round() as usize]
}

fn exports(host: usize, version: usize) -> Vec<Export> {
    (0..EXPORTS)
        .map(|i| Export {
            kind: "file".into(),
            name: format!("/srv/sim/{host}/{i}"),
            to: vec!["*".into()],
            record: format!(
                "{{\"params\":[[\"content\",\"host {host} file {i} version {version}\"],[\"state\",\"exists\"]],\"metas\":[],\"classes\":[]}}"
            ),
        })
        .collect()
}

/// Waits until every follow's view satisfies `done`; returns when each one got there.
async fn all_see(follows: &mut [Follow], done: impl Fn(&world::View) -> bool + Copy) -> Vec<Duration> {
    let start = Instant::now();
    let waits = follows.iter_mut().map(|f| async move {
        let _ = tokio::time::timeout(Duration::from_secs(60), f.wait_for(|v| done(v))).await;
        start.elapsed()
    });
    futures::future::join_all(waits).await
}

/// Gives each of the `n` simulated hosts its own certificate in `pki` and confines it to its
/// own keys, as etcd's root; returns each host's TLS files.
async fn confine(etcd: &Etcd, n: usize, pki: &std::path::Path) -> Vec<world::Tls> {
    let issue = |name: String| {
        let request = world::pki::Request { name, days: 1, ..Default::default() };
        let [cert, key] = world::pki::issue(pki, &request, true).unwrap();
        world::Tls { ca: pki.join("ca.crt"), identity: Some((cert, key)) }
    };
    let root = issue("root".into());
    let hosts: Vec<String> = (0..n).map(|i| format!("sim{i:04}")).collect();
    let files: Vec<world::Tls> = hosts.iter().map(|h| issue(h.clone())).collect();
    let started = Instant::now();
    let who = world::etcd::access::Grant { hosts, operators: vec![], schedules: true };
    world::etcd::access::grant(&[etcd.url()], Some(&root), &who).await.expect("the hosts are granted");
    println!("granted {n} hosts their own keys in {:.2} s", started.elapsed().as_secs_f64());
    files
}

async fn simulate(etcd: &Etcd, n: usize, tls: Option<world::Tls>, confined: Option<&std::path::Path>) {
    let own_tls = match confined {
        Some(pki) => confine(etcd, n, pki).await,
        None => Vec::new(),
    };
    let pid = std::process::id();
    let etcd_pid = etcd.pid().unwrap_or(0);
    let state = tempfile::tempdir().unwrap();
    let rss_before = rss_kib(pid);
    let etcd_cpu_before = cpu_secs(etcd_pid);
    let started = Instant::now();
    let mut worlds: Vec<Arc<dyn World>> = Vec::with_capacity(n);
    for batch in (0..n).collect::<Vec<_>>().chunks(50) {
        let joins = batch.iter().map(|&i| {
            let cfg = world::Config {
                ttl: 60,
                tls: own_tls.get(i).cloned().or_else(|| tls.clone()),
                ..world::Config::new(vec![etcd.url()], format!("sim{i:04}"), state.path().join(format!("sim{i}")))
            };
            world::connect(cfg)
        });
        for w in futures::future::join_all(joins).await {
            worlds.push(w.expect("a simulated host joins"));
        }
    }
    for (i, w) in worlds.iter().enumerate() {
        w.set_mine("scale", Some("0")).await.unwrap();
        w.export(&exports(i, 0)).await.unwrap();
    }
    let mut maps: Vec<Follow> = worlds.iter().map(|w| w.follow(&Topic::Map("scale".into()))).collect();
    let mut collectors: Vec<Follow> = worlds.iter().take(COLLECTORS).map(|w| w.follow(&Topic::Exports)).collect();
    all_see(&mut maps, |v| v.entries.len() == n).await;
    all_see(&mut collectors, |v| v.entries.len() == n * EXPORTS).await;
    let joined = started.elapsed();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss_joined = rss_kib(pid);
    let etcd_cpu_joined = cpu_secs(etcd_pid);

    let mut reach_all = Vec::new();
    let mut deliveries = Vec::new();
    for t in 1..=TRIALS {
        let host = (t * 7919) % n;
        let name = format!("sim{host:04}");
        let value = format!("v{t}");
        let writer = worlds[host].clone();
        let write = value.clone();
        tokio::spawn(async move { writer.set_mine("scale", Some(&write)).await });
        let seen = all_see(&mut maps, |v| v.entries.get(&name) == Some(&value)).await;
        let ms: Vec<f64> = seen.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
        reach_all.push(ms.iter().cloned().fold(0.0, f64::max));
        deliveries.extend(ms);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut export_reach = Vec::new();
    for t in 1..=TRIALS {
        let host = (t * 104729) % n;
        let writer = worlds[host].clone();
        tokio::spawn(async move { writer.export(&exports(host, t)).await });
        let entry = world::export_entry("file", &format!("sim{host:04}"), &format!("/srv/sim/{host}/0"));
        let want = format!("version {t}\"");
        let seen = all_see(&mut collectors, |v| v.entries.get(&entry).is_some_and(|r| r.contains(&want))).await;
        export_reach.push(seen.iter().map(|d| d.as_secs_f64() * 1000.0).fold(0.0, f64::max));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let etcd_cpu_trials = cpu_secs(etcd_pid) - etcd_cpu_joined;
    reach_all.sort_by(f64::total_cmp);
    deliveries.sort_by(f64::total_cmp);
    export_reach.sort_by(f64::total_cmp);
    let over = match (&tls, confined) {
        (Some(_), Some(_)) => "mutual TLS, each host confined to its own keys",
        (Some(_), None) => "mutual TLS",
        (None, _) => "plaintext",
    };
    println!("== {n} simulated hosts ({EXPORTS} exports each, {COLLECTORS} collectors), {over}");
    println!(
        "joined and every watcher saw every entry in {:.2} s; etcd used {:.2} s CPU for it",
        joined.as_secs_f64(),
        etcd_cpu_joined - etcd_cpu_before
    );
    println!(
        "map entry change to every watcher ({TRIALS} trials): p50 {:.1} ms, p99 {:.1} ms; per delivery p50 {:.1} ms, p99 {:.1} ms",
        pct(&reach_all, 50.0),
        pct(&reach_all, 99.0),
        pct(&deliveries, 50.0),
        pct(&deliveries, 99.0)
    );
    println!(
        "export change to every collector ({TRIALS} trials): p50 {:.1} ms, p99 {:.1} ms",
        pct(&export_reach, 50.0),
        pct(&export_reach, 99.0)
    );
    println!(
        "etcd: {:.0} MiB resident, {:.2} s CPU over the {} trials",
        rss_kib(etcd_pid) as f64 / 1024.0,
        etcd_cpu_trials,
        2 * TRIALS
    );
    println!(
        "this process: {:.0} MiB for {n} hosts, {:.0} KiB per host",
        rss_joined as f64 / 1024.0,
        (rss_joined.saturating_sub(rss_before)) as f64 / n as f64
    );
    for w in &worlds {
        w.close().await;
    }
}
