//! The `tend` command line: glue over the `lang`, `funcs`, `engine` and `resources` crates.

mod cli;
mod cmd;
mod compile;
mod loader;
mod observe;
mod stderr;

use clap::Parser;
use cli::{Cli, Command, LogFormat};
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose, cli.log_format);
    match cli.command {
        Command::Check { path, format } => cmd::check::run(&path, format),
        Command::Graph { path, format, timeout } => cmd::graph::run(&path, format, timeout),
        Command::Why { path, resource, format, timeout } => cmd::why::run(&path, &resource, format, timeout),
        Command::Run { path, converged_timeout, noop, prefix, no_watch, metrics, metrics_allow_remote, graph_dump } => {
            cmd::run::run(cmd::run::Options {
                path,
                converged_timeout,
                noop,
                prefix,
                watch: !no_watch,
                metrics,
                metrics_allow_remote,
                graph_dump,
            })
        }
    }
}

fn init_logging(verbose: u8, format: LogFormat) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("TEND_LOG").unwrap_or_else(|_| level.into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(|| stderr::LogWriter);
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
}
