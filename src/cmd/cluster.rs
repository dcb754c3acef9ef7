//! `tend cluster grant` and `tend cluster revoke`: who may write what in the cluster, as
//! etcd's users and roles (`world::etcd::access`), a line per thing done; `tend cluster
//! size N`: the ideal size of a cluster tend forms itself. Exit status 1 when etcd
//! refused, 2 when it could not be asked.

use std::process::ExitCode;

use crate::cli::{Access, ClusterCommand};
use world::etcd::access::{self, Grant};

pub fn run(command: ClusterCommand) -> ExitCode {
    let rt = match super::one_shot_runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let (access, schedules, revoking) = match command {
        ClusterCommand::Grant { access, no_schedules } => (access, !no_schedules, false),
        ClusterCommand::Revoke { access } => (access, false, true),
        ClusterCommand::Size { size, seeds, tls } => {
            let done = rt.block_on(world::etcd::member::set_size(&seeds, tls.tls().as_ref(), size));
            return finish(done.map(|()| {
                vec![format!("the cluster grows to {size} members (agents with --client-urls join while it has fewer)")]
            }));
        }
    };
    let Access { hosts, operators, seeds, tls } = access;
    let who = Grant { hosts, operators, schedules };
    let tls = tls.tls();
    let done = rt.block_on(async {
        if revoking {
            access::revoke(&seeds, tls.as_ref(), &who).await
        } else {
            access::grant(&seeds, tls.as_ref(), &who).await
        }
    });
    finish(done)
}

fn finish(done: Result<Vec<String>, world::WorldError>) -> ExitCode {
    match done {
        Ok(lines) => {
            for line in lines {
                crate::stdout::line(format_args!("{line}"));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            crate::stderr::line(format_args!("error: {e}"));
            let unreachable = matches!(e, world::WorldError::Unreachable { .. } | world::WorldError::TimedOut);
            ExitCode::from(if unreachable { 2 } else { 1 })
        }
    }
}
