//! `tend status --seeds URL`: the fleet as its agents describe themselves — which deploy
//! each runs, whether it converged, what failed and why, whether its world is stale — and
//! etcd's members (each asked about itself), read as an observer (nothing is claimed or
//! written). `--format json` for machines.

use crate::cli::StatusFormat;
use serde_json::{Value, json};
use std::process::ExitCode;
use std::time::Duration;
use world::Topic;

pub fn run(seeds: &[String], tls: Option<world::Tls>, format: StatusFormat, hostname: Option<String>) -> ExitCode {
    let rt = match super::one_shot_runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let me = crate::services::world_hostname(hostname.as_deref());
    let state = crate::services::default_state_dir();
    let read = rt.block_on(async {
        let config = crate::services::world_config(seeds, tls.clone(), Some(&me), &state).observing();
        let world = world::connect(config).await.map_err(|e| e.to_string())?;
        let mut statuses = world.follow(&Topic::Statuses);
        let mut deploys = world.follow(&Topic::Deploys);
        let both = async {
            let _ = statuses.wait_for(|v| v.read && !v.stale).await;
            let _ = deploys.wait_for(|v| v.read && !v.stale).await;
        };
        if tokio::time::timeout(Duration::from_secs(5), both).await.is_err() {
            return Err(format!("etcd at {} does not answer", seeds.join(",")));
        }
        let latest: Option<u64> = deploys.borrow().entries.get("latest").and_then(|v| v.parse().ok());
        let agents: Vec<Value> =
            statuses.borrow().entries.values().map(|r| serde_json::from_str(r).unwrap_or(Value::Null)).collect();
        let survey = world::etcd::member::survey(seeds, tls.as_ref()).await.ok();
        Ok::<_, String>((latest, agents, survey))
    });
    let (latest, agents, survey) = match read {
        Ok(x) => x,
        Err(e) => {
            crate::stderr::line(format_args!("error: {e}"));
            return ExitCode::from(2);
        }
    };
    let records = agents.iter().enumerate().map(|(i, a)| (i.to_string(), a.to_string())).collect();
    let converged = latest.is_some_and(|l| crate::cmd::run::fleet_converged(&records, l));
    match format {
        StatusFormat::Json => {
            let mut doc = json!({"latest_deploy": latest, "fleet_converged": converged, "agents": agents});
            if let Some(s) = &survey {
                doc["members"] = s.members.iter().map(member_json).collect();
                doc["ideal_cluster_size"] = json!(s.ideal);
                doc["membership_note"] = json!(s.note);
            }
            crate::stdout::line(format_args!("{doc:#}"))
        }
        StatusFormat::Text => {
            let mut text = table(latest, &agents, converged);
            if let Some(s) = &survey {
                text.push_str(&members_table(s));
            }
            crate::stdout::print(format_args!("{text}"))
        }
    }
    ExitCode::SUCCESS
}

fn table(latest: Option<u64>, agents: &[Value], converged: bool) -> String {
    let mut out = match latest {
        Some(id) => format!("latest deploy: {id}\n"),
        None => "latest deploy: none\n".to_string(),
    };
    if agents.is_empty() {
        out.push_str("no agent is running\n");
        return out;
    }
    let now = crate::cmd::run::status_now();
    let rows: Vec<[String; 5]> = agents
        .iter()
        .map(|a| {
            let deploy = a["deploy"].as_u64().map_or("-".to_string(), |d| d.to_string());
            let failed = a["failed"].as_object().map(|f| f.len()).unwrap_or(0);
            let mut state = match (a["converged"].as_bool() == Some(true), failed) {
                (true, 0) => "converged".to_string(),
                (false, 0) => "converging".to_string(),
                (_, n) => {
                    let first = a["failed"].as_object().and_then(|f| f.iter().next());
                    let (key, why) =
                        first.map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string())).unwrap_or_default();
                    format!("{n} failed: {key}: {why}")
                }
            };
            if let Some(fought) = a["flapping"].as_array().filter(|f| !f.is_empty()) {
                let names: Vec<&str> = fought.iter().filter_map(Value::as_str).collect();
                state.push_str(&format!("; another writer keeps changing {}", names.join(", ")));
            }
            if let Some(r) = a["refused"].as_object() {
                state.push_str(&format!(
                    "; refused deploy {}: {}",
                    r.get("deploy").and_then(Value::as_u64).unwrap_or(0),
                    r.get("reason").and_then(Value::as_str).unwrap_or("")
                ));
            }
            if let Some(b) = a["broken"].as_object() {
                state.push_str(&format!(
                    "; deploy {} failed here: {}",
                    b.get("deploy").and_then(Value::as_u64).unwrap_or(0),
                    b.get("error").and_then(Value::as_str).unwrap_or("")
                ));
            }
            let world = if a["world_stale"].as_bool() == Some(true) { "stale" } else { "current" };
            let ago = a["changed"].as_f64().map_or("-".to_string(), |t| format!("{:.0} s ago", (now - t).max(0.0)));
            [a["host"].as_str().unwrap_or("?").to_string(), deploy, state, world.to_string(), ago]
        })
        .collect();
    let header = ["HOST", "DEPLOY", "STATE", "WORLD", "LAST CHANGE"];
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).chain([header[i].len()]).max().unwrap_or(0);
    let widths: Vec<usize> = (0..4).map(width).collect();
    let line = |cells: [&str; 5]| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i < 4 {
                l.push_str(&format!("{c:<w$}  ", w = widths[i]));
            } else {
                l.push_str(c);
            }
        }
        l.trim_end().to_string() + "\n"
    };
    out.push_str(&line(header));
    for r in &rows {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4]]));
    }
    out.push_str(if converged {
        "the fleet runs the latest deploy, converged\n"
    } else {
        "the fleet has not converged on the latest deploy\n"
    });
    out
}

fn member_json(m: &world::etcd::member::MemberView) -> Value {
    json!({
        "name": m.name,
        "id": format!("{:x}", m.id),
        "client_urls": m.client_urls,
        "peer_urls": m.peer_urls,
        "leader": m.leader,
        "healthy": m.healthy,
    })
}

/// etcd's members: name, client URLs, leader, healthy; the ideal size and why a dead
/// member was left in, when one was.
fn members_table(s: &world::etcd::member::Survey) -> String {
    let mut out = match s.ideal {
        Some(n) => format!("\netcd members: {} (grows to {n})\n", s.members.len()),
        None => format!("\netcd members: {}\n", s.members.len()),
    };
    let rows: Vec<[String; 3]> = s
        .members
        .iter()
        .map(|m| {
            let name = if m.name.is_empty() { format!("{:x} (not started)", m.id) } else { m.name.clone() };
            let state = match (m.healthy, m.leader) {
                (true, true) => "healthy, leader",
                (true, false) => "healthy",
                (false, _) => "unreachable",
            };
            [name, m.client_urls.join(","), state.to_string()]
        })
        .collect();
    let header = ["MEMBER", "CLIENT URLS", "STATE"];
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).chain([header[i].len()]).max().unwrap_or(0);
    let (w0, w1) = (width(0), width(1));
    out.push_str(&format!("{:<w0$}  {:<w1$}  {}\n", header[0], header[1], header[2]));
    for r in &rows {
        out.push_str(&format!("{:<w0$}  {:<w1$}  {}\n", r[0], r[1], r[2]));
    }
    if let Some(note) = &s.note {
        out.push_str(&format!("note: {note}\n"));
    }
    out
}
