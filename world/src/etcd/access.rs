//! Who may write what (`tend cluster grant` and `revoke`): etcd's own users and roles, one
//! user per host named as its certificate's CN (no password: etcd takes the user from the
//! client certificate), confined by a role to the host's own ranges ([`keys::host_ranges`]),
//! and operators who may deploy and read. Granting turns etcd's authentication on (after
//! making its `root` user, whose certificate does the granting); revoking deletes the user,
//! its role, and everything the host wrote, at once.
//!
//! | who | reads | writes |
//! |---|---|---|
//! | host `h` (role `tend-host-h`) | all of `/_tend/` | its own ranges; plain keys `/_tend/kv/` (shared by design); with schedules, the election and the results |
//! | operator (role `tend-operator`) | all of `/_tend/` | deploys, `/_tend/deploy/` |
//! | `root` | everything | everything |

use etcd_client::{Client, DeleteOptions, Permission, RoleRevokePermissionOptions, UserAddOptions};
use futures::StreamExt;

use super::REQUEST;
use super::keys::{self, PREFIX, Range};
use super::session::{Lasting, Refused, dial, old_layout};
use super::write::refused;
use crate::{Tls, WorldError};

/// The role every operator shares.
pub const OPERATOR_ROLE: &str = "tend-operator";

/// The role of host `host`.
pub fn host_role(host: &str) -> String {
    format!("tend-host-{host}")
}

/// Whom to grant (or revoke).
#[derive(Clone, Debug, Default)]
pub struct Grant {
    pub hosts: Vec<String>,
    pub operators: Vec<String>,
    /// Whether the hosts may choose the schedules (campaign and write the results).
    pub schedules: bool,
}

/// What the hosts of a role may write besides their own ranges.
fn shared_writes(schedules: bool) -> Vec<(Range, bool)> {
    let under = |key: String| Range { key, prefix: true };
    vec![
        (under(keys::vals_root()), true),
        (under(format!("{}/", keys::election())), schedules),
        (under(keys::results_root()), schedules),
    ]
}

fn permission(range: &Range) -> Permission {
    let p = Permission::read_write(range.key.as_str());
    if range.prefix { p.with_prefix() } else { p }
}

/// Whether `e` says the thing already is as asked (an existing user or role, a missing one
/// to delete, a permission not granted to revoke).
fn already(e: &etcd_client::Error) -> bool {
    let text = e.to_string();
    ["already exists", "not found", "not granted"].iter().any(|s| text.contains(s))
}

/// One request, bounded in time; an answer that says it is already done counts as done.
async fn ask<T>(what: &str, request: impl Future<Output = Result<T, etcd_client::Error>>) -> Result<(), WorldError> {
    match tokio::time::timeout(REQUEST, request).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) if already(&e) => Ok(()),
        Ok(Err(e)) => Err(refused(what.to_string(), &e)),
        Err(_) => Err(WorldError::TimedOut),
    }
}

/// A client of the cluster as etcd's `root` user: the certificate must name `root` (CN).
async fn as_root(seeds: &[String], tls: Option<&Tls>) -> Result<Client, WorldError> {
    crate::tls::check_seeds(seeds, tls)?;
    let cert = tls.and_then(|t| t.identity.as_ref()).map(|(cert, _)| cert);
    let Some(cert) = cert else {
        return Err(WorldError::Config(
            "granting needs etcd's root user: give --cacert, and --cert and --key of a certificate whose CN is `root` \
             (`tend pki issue DIR root`)"
                .into(),
        ));
    };
    let pem = std::fs::read_to_string(cert)
        .map_err(|e| WorldError::Config(format!("--cert {}: cannot read it: {e}", cert.display())))?;
    match crate::pki::common_name(&pem) {
        Some(cn) if cn == "root" => {}
        other => {
            return Err(WorldError::Config(format!(
                "--cert {}: its CN is {}, not `root`: etcd takes the user from the CN, and only `root` may grant \
                 (`tend pki issue DIR root`)",
                cert.display(),
                other.map_or("missing".to_string(), |cn| format!("`{cn}`"))
            )));
        }
    }
    dial(seeds, tls).await.map_err(|refusal| match refusal {
        Refused::Lasting(Lasting::Tls(problem)) => WorldError::Tls(problem.describe(tls, seeds)),
        Refused::Lasting(Lasting::Files(e)) => e,
        Refused::Lasting(Lasting::Denied(reason)) => WorldError::Refused { what: "the root user".into(), reason },
        Refused::Duplicate(_) | Refused::Down(_) => WorldError::Unreachable { seeds: seeds.join(",") },
    })
}

fn check_names(who: &Grant) -> Result<(), WorldError> {
    for name in who.hosts.iter().chain(&who.operators) {
        if !crate::valid_hostname(name) || name == "root" {
            return Err(WorldError::Config(format!(
                "`{name}` cannot be granted: a host or operator name is letters, digits, `.`, `_` and `-`, and not `root`"
            )));
        }
    }
    if who.hosts.is_empty() && who.operators.is_empty() {
        return Err(WorldError::Config("name at least one HOST or --operator NAME".into()));
    }
    Ok(())
}

/// Gives each host of `who` a user confined to its own keys and each operator one that may
/// deploy and read, then turns etcd's authentication on (a no-op when it is). Returns one
/// line per thing done, for the operator, and a warning if agents of tend's old key layout
/// are about (they would be refused once confined).
pub async fn grant(seeds: &[String], tls: Option<&Tls>, who: &Grant) -> Result<Vec<String>, WorldError> {
    check_names(who)?;
    let mut client = as_root(seeds, tls).await?;
    let mut said = Vec::new();
    if let Some(key) = old_layout(&mut client).await {
        said.push(format!(
            "warning: etcd holds `{key}`, a key of an older tend's layout: those agents are refused once confined; \
             upgrade tend on every host"
        ));
    }
    // The root user and role first: etcd refuses to turn authentication on without them.
    ask("the root role", client.role_add("root")).await?;
    ask("the root user", client.user_add("root", "", Some(UserAddOptions::new().with_no_pwd()))).await?;
    ask("the root user's role", client.user_grant_role("root", "root")).await?;
    // Hosts a few at a time: each is a dozen requests, and etcd commits concurrent ones
    // together (a thousand hosts one after the other took minutes).
    let granted: Vec<Result<String, WorldError>> = futures::stream::iter(&who.hosts)
        .map(|host| grant_host(client.clone(), host, who.schedules))
        .buffered(HOSTS_AT_ONCE)
        .collect()
        .await;
    for line in granted {
        said.push(line?);
    }
    if !who.operators.is_empty() {
        ask("the operators' role", client.role_add(OPERATOR_ROLE)).await?;
        let read = Permission::read(PREFIX).with_prefix();
        ask("the operators' role", client.role_grant_permission(OPERATOR_ROLE, read)).await?;
        let deploy = Permission::read_write(keys::deploy_root()).with_prefix();
        ask("the operators' role", client.role_grant_permission(OPERATOR_ROLE, deploy)).await?;
    }
    for name in &who.operators {
        ask(&format!("user `{name}`"), client.user_add(name.as_str(), "", Some(UserAddOptions::new().with_no_pwd())))
            .await?;
        ask(&format!("user `{name}`"), client.user_grant_role(name.as_str(), OPERATOR_ROLE)).await?;
        said.push(format!("operator {name}: may deploy and read (role {OPERATOR_ROLE})"));
    }
    ask("turning authentication on", client.auth_enable()).await?;
    said.push("etcd's authentication is on: every client is the user its certificate's CN names".into());
    Ok(said)
}

/// How many hosts `grant` asks etcd about at once.
const HOSTS_AT_ONCE: usize = 32;

/// Gives `host` its user and its role (see [`grant`]); the line that says so.
async fn grant_host(mut client: Client, host: &str, schedules: bool) -> Result<String, WorldError> {
    let role = host_role(host);
    let what = format!("role `{role}`");
    ask(&what, client.role_add(role.as_str())).await?;
    ask(&what, client.role_grant_permission(role.as_str(), Permission::read(PREFIX).with_prefix())).await?;
    for range in keys::host_ranges(host) {
        ask(&what, client.role_grant_permission(role.as_str(), permission(&range))).await?;
    }
    for (range, granted) in shared_writes(schedules) {
        if granted {
            ask(&what, client.role_grant_permission(role.as_str(), permission(&range))).await?;
        } else {
            let options = RoleRevokePermissionOptions::new().with_prefix();
            ask(&what, client.role_revoke_permission(role.as_str(), range.key.as_str(), Some(options))).await?;
        }
    }
    let what = format!("user `{host}`");
    ask(&what, client.user_add(host, "", Some(UserAddOptions::new().with_no_pwd()))).await?;
    ask(&what, client.user_grant_role(host, role.as_str())).await?;
    let schedules = if schedules { "may choose the schedules" } else { "does not choose the schedules" };
    Ok(format!("host {host}: writes only its own keys (role {role}); {schedules}"))
}

/// Takes every right of each host and operator of `who` at once (their users and, for a
/// host, its role), and deletes everything each host wrote (its claim, status, map
/// entries, candidacies and exports): nothing a revoked host said is collected any more.
pub async fn revoke(seeds: &[String], tls: Option<&Tls>, who: &Grant) -> Result<Vec<String>, WorldError> {
    check_names(who)?;
    let mut client = as_root(seeds, tls).await?;
    let mut said = Vec::new();
    // etcd turns authentication on only once its root user exists: without one it is off,
    // and taking a user away stops nobody.
    if let Ok(Err(e)) = tokio::time::timeout(REQUEST, client.user_get("root")).await
        && e.to_string().contains("not found")
    {
        said.push(
            "warning: etcd's authentication is off (nothing was ever granted): every certificate may still write \
             everything; `tend cluster grant` the hosts that stay to confine them"
                .to_string(),
        );
    }
    for host in &who.hosts {
        ask(&format!("user `{host}`"), client.user_delete(host.as_str())).await?;
        ask(&format!("role `{}`", host_role(host)), client.role_delete(host_role(host))).await?;
        let mut deleted = 0;
        for range in keys::host_ranges(host) {
            let options = if range.prefix { Some(DeleteOptions::new().with_prefix()) } else { None };
            match tokio::time::timeout(REQUEST, client.delete(range.key.as_str(), options)).await {
                Ok(Ok(resp)) => deleted += resp.deleted(),
                Ok(Err(e)) => return Err(refused(format!("the deletion of `{}`", range.key), &e)),
                Err(_) => return Err(WorldError::TimedOut),
            }
        }
        said.push(format!("host {host}: revoked; {deleted} of its keys deleted"));
    }
    for name in &who.operators {
        ask(&format!("user `{name}`"), client.user_delete(name.as_str())).await?;
        said.push(format!("operator {name}: revoked"));
    }
    Ok(said)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_schedules_right_changes_with_the_flag() {
        let with = shared_writes(true);
        let without = shared_writes(false);
        assert_eq!(with.iter().filter(|(_, g)| *g).count(), 3);
        assert_eq!(without.iter().filter(|(_, g)| *g).map(|(r, _)| r.key.as_str()).collect::<Vec<_>>(), ["/_tend/kv/"]);
        assert_eq!(with[1].0.key, "/_tend/schedule/leader/");
    }

    #[test]
    fn names_are_checked_before_anything_is_asked() {
        let who = |hosts: &[&str]| Grant { hosts: hosts.iter().map(|h| h.to_string()).collect(), ..Grant::default() };
        assert!(check_names(&who(&["h1", "web-2.example"])).is_ok());
        for bad in ["root", "a/b", "", "h 1"] {
            assert!(check_names(&who(&[bad])).is_err(), "{bad:?}");
        }
        assert!(check_names(&who(&[])).is_err());
    }
}
