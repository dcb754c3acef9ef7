//! `tend pki init DIR`, `tend pki issue DIR NAME` and `tend pki revoke DIR NAME`: the small
//! PKI of `world::pki`, with
//! a line per file written (keys are never printed) and exit status 1 when nothing was.

use std::process::ExitCode;

use crate::cli::PkiCommand;

pub fn run(command: PkiCommand) -> ExitCode {
    let written = match command {
        PkiCommand::Init { dir, force } => world::pki::init(&dir, force),
        PkiCommand::Issue { dir, name, ips, dns, days, force } => {
            let request = world::pki::Request { name, ips, dns, days };
            world::pki::issue(&dir, &request, force).map(Vec::from)
        }
        PkiCommand::Revoke { dir, name } => world::pki::revoke(&dir, &name).map(|list| {
            crate::stdout::line(format_args!(
                "revoked {name}'s certificate: etcd refuses it once it reads {} (--client-crl-file)",
                list.display()
            ));
            vec![list]
        }),
    };
    match written {
        Ok(files) => {
            for file in files {
                crate::stdout::line(format_args!("wrote {}", file.display()));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            crate::stderr::line(format_args!("error: {e}"));
            ExitCode::from(1)
        }
    }
}
