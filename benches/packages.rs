//! `pkg`'s check of 200 installed packages on each backend: one query for all (what a
//! group of `pkg` resources asks) against one query per package (what 200 ungrouped ones
//! ask). dpkg/apt on this machine, and a real `packagekitd` (apt backend) on a private bus.
//! `cargo bench --bench packages -- ROUNDS` (default 5); medians.

#![allow(clippy::print_stdout, reason = "a bench binary reports on stdout")]

use std::time::{Duration, Instant};

use resources::machine::{Apt, PackageKit, PackageManager};

/// 200 installed packages of this machine, by name.
fn installed(n: usize) -> Vec<String> {
    let out = std::process::Command::new("dpkg-query").args(["-W", "-f", "${Package}\n"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().take(n).map(str::to_string).collect()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn one_query(pm: &dyn PackageManager, names: &[&str]) -> Duration {
    let t = Instant::now();
    let found = pm.query(names, false).await.expect("query");
    assert!(found.values().filter(|s| s.installed.is_some()).count() >= names.len() * 9 / 10);
    t.elapsed()
}

async fn per_package(pm: &dyn PackageManager, names: &[&str]) -> Duration {
    let t = Instant::now();
    for n in names {
        pm.query(&[n], false).await.expect("query");
    }
    t.elapsed()
}

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5);
    let names = installed(200);
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let apt = Apt::default();
        let mut one = Vec::new();
        let mut each = Vec::new();
        for _ in 0..rounds {
            one.push(one_query(&apt, &names).await);
            each.push(per_package(&apt, &names).await);
        }
        let (one, each) = (median(one), median(each));
        println!("apt, {} packages: one query {:.1} ms, one per package {:.1} ms (ratio {:.1})", names.len(),
            one.as_secs_f64() * 1e3, each.as_secs_f64() * 1e3, each.as_secs_f64() / one.as_secs_f64());

        let daemons = match testkit::packagekit::start() {
            Ok(d) => d,
            Err(why) => {
                println!("PackageKit: skipped ({why})");
                return;
            }
        };
        let pk = PackageKit::at(Some(daemons.address.clone()));
        while pk.available().await.is_none() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // A resolve per package costs a transaction each (about a second on the apt
        // backend): 20 of them, scaled to 200, against the one resolve of all 200.
        let few = &names[..20];
        let mut one = Vec::new();
        let mut each = Vec::new();
        for _ in 0..rounds {
            one.push(one_query(&pk, &names).await);
            each.push(per_package(&pk, few).await);
        }
        let (one, each20) = (median(one), median(each));
        let each = each20 * 10;
        println!("PackageKit, {} packages: one resolve {:.0} ms, one per package {:.0} ms (20 measured: {:.0} ms; ratio {:.0})",
            names.len(), one.as_secs_f64() * 1e3, each.as_secs_f64() * 1e3, each20.as_secs_f64() * 1e3,
            each.as_secs_f64() / one.as_secs_f64());
    });
}
