//! How fast a cluster forms itself (issue 48): real `tend run` agents with `--client-urls`
//! and `--server-urls` on loopback, each running its own `etcd` member. Per round it
//! measures the time from the third agent's start to a three-member healthy cluster (the
//! first two already members), and from `kill -9` of a member's agent to a healthy
//! three-member cluster again (a fourth, client agent promoted) with `--member-grace G`.
//! The baseline, in the same run: three `etcd` processes started by hand with a static
//! `--initial-cluster`, from their start to all three healthy.
//!
//! Usage: `cargo bench --bench cluster_form -- [ROUNDS [GRACE]]` (default 5 rounds, grace
//! 5 s). Needs `etcd`. Health is read as users read it: `tend status --format json`.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use testkit::etcd::{Etcd, free_port};

const TEND: &str = env!("CARGO_BIN_EXE_tend");

struct Agent {
    child: Child,
    client: String,
}

impl Agent {
    fn start(dir: &Path, name: &str, seeds: Option<&str>, grace: u64) -> Agent {
        let home = dir.join(name);
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("main.mcl"), "print \"p\" { msg => \"up\", }\n").unwrap();
        let client = format!("http://127.0.0.1:{}", free_port());
        let peer = format!("http://127.0.0.1:{}", free_port());
        let mut command = Command::new(TEND);
        command
            .args(["--hostname", name, "-q", "run"])
            .arg(home.join("main.mcl"))
            .arg("--prefix")
            .arg(home.join("state"))
            .args(["--client-urls", &client, "--server-urls", &peer, "--ideal-cluster-size", "3"])
            .args(["--member-grace", &grace.to_string()]);
        if let Some(seeds) = seeds {
            command.args(["--seeds", seeds]);
        }
        let child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        Agent { child, client }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(self.child.id().to_string()).stderr(Stdio::null()).status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline && self.child.try_wait().ok().flatten().is_none() {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Healthy members, as `tend status` reports them.
fn healthy(seeds: &str) -> usize {
    let Ok(out) = Command::new(TEND).args(["status", "--seeds", seeds, "--format", "json"]).output() else {
        return 0;
    };
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let members = doc["members"].as_array().cloned().unwrap_or_default();
    if members.iter().all(|m| m["healthy"] == true) { members.len() } else { 0 }
}

fn wait_for(seeds: &str, n: usize) -> Duration {
    let began = Instant::now();
    while healthy(seeds) != n {
        assert!(began.elapsed() < Duration::from_secs(120), "no {n} healthy members at {seeds}");
        std::thread::sleep(Duration::from_millis(50));
    }
    began.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let rounds = args.first().copied().unwrap_or(5) as usize;
    let grace = args.get(1).copied().unwrap_or(5);
    if !testkit::etcd::available() {
        eprintln!("cluster_form: no etcd installed; skipped");
        return;
    }
    let (mut formed, mut replaced, mut by_hand) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let dir = tempfile::tempdir().unwrap();
        let a = Agent::start(dir.path(), "a", None, grace);
        let seeds = a.client.clone();
        wait_for(&seeds, 1);
        let _b = Agent::start(dir.path(), "b", Some(&seeds), grace);
        wait_for(&seeds, 2);
        let began = Instant::now();
        let mut c = Agent::start(dir.path(), "c", Some(&seeds), grace);
        wait_for(&seeds, 3);
        formed.push(began.elapsed());
        let _d = Agent::start(dir.path(), "d", Some(&seeds), grace);
        std::thread::sleep(Duration::from_secs(2));
        let _ = c.child.kill();
        let _ = c.child.wait();
        let killed = Instant::now();
        // The dead member first shows as unreachable, then the promoted one makes three.
        while healthy(&seeds) == 3 {
            std::thread::sleep(Duration::from_millis(50));
        }
        wait_for(&seeds, 3);
        replaced.push(killed.elapsed());
        let began = Instant::now();
        let members = Etcd::cluster(3).unwrap();
        by_hand.push(began.elapsed());
        drop(members);
        eprintln!(
            "round {round}: formed {:?}, replaced {:?}, by hand {:?}",
            formed[round], replaced[round], by_hand[round]
        );
    }
    let (f, r, h) = (median(formed), median(replaced), median(by_hand));
    println!("third agent's start to three healthy members, median of {rounds}: {:.2} s", f.as_secs_f64());
    println!(
        "kill -9 of a member's agent to three healthy members again (grace {grace} s), median: {:.2} s (grace + {:.2} s)",
        r.as_secs_f64(),
        r.as_secs_f64() - grace as f64
    );
    println!(
        "baseline: three etcd processes started by hand, static cluster, to healthy, median: {:.2} s (ratio {:.2})",
        h.as_secs_f64(),
        f.as_secs_f64() / h.as_secs_f64()
    );
}
