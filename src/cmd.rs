//! One module per subcommand.

pub mod check;
pub mod cluster;
pub mod deploy;
pub mod fmt;
pub mod functions;
pub mod graph;
pub mod pki;
pub mod provisioner;
pub mod run;
pub mod status;
pub mod why;

/// A runtime for a one-shot command that talks to the cluster (`tend deploy`, `tend
/// status`); on failure the error is reported and the exit status returned.
pub(crate) fn one_shot_runtime() -> Result<tokio::runtime::Runtime, std::process::ExitCode> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| {
        crate::stderr::line(format_args!("error: cannot start the async runtime: {e}"));
        std::process::ExitCode::from(2)
    })
}
