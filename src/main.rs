//! The `tend` executable: the allocator, logging and argument parsing; everything else is
//! in the `tend` library (`lib.rs`).

use clap::Parser;
use std::process::ExitCode;
use tend::cli::{Cli, Command, LogFormat, Observing};
use tend::compile::WorldUse;
use tend::{cmd, stderr};

/// mimalloc instead of glibc's malloc: a large graph is hundreds of thousands of small
/// allocations made and freed across threads, where glibc's arenas cost a measurable share
/// of a run (allocation, `malloc_consolidate`, page faults) and fragment the heap.
#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (the same number in its v2 and v3 headers).
const MI_OPTION_PURGE_DELAY: i32 = 15;

/// How long freed memory stays with the process before it goes back to the OS.
const PURGE_DELAY_MS: std::ffi::c_long = 10;

fn main() -> ExitCode {
    // Keep freed pages for a moment before returning them to the OS. A run goes through
    // phases that each build a large structure and free the previous one (syntax tree,
    // function graph, output, resources); reusing those pages instead of faulting in
    // fresh ones saves page faults within a phase, while a phase's leftovers go back
    // before the next phase peaks. Set to 50 ms when the phases' structures were larger
    // (peak RSS at 10,000 files 92.8 -> 72.2 MiB against 1,000 ms); once they shrank,
    // 10 ms (mimalloc's own default, pinned here) took the one-shot run's peak at 100,000
    // files from 260 to 238 MiB and at 10,000 from 50 to 45.5 MiB, at the same times
    // (0 ms costs 3-5% of a run). `MIMALLOC_PURGE_DELAY` in the environment still wins.
    if cfg!(not(feature = "system-alloc")) && std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: a setter of mimalloc's global options, called before any other thread runs.
        #[allow(unsafe_code)]
        unsafe {
            libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS)
        };
    }
    let cli = Cli::parse();
    init_logging(cli.verbose, cli.quiet, cli.log_format);
    lang::secret::show(cli.show_secrets);
    let timeout = std::time::Duration::try_from_secs_f64(cli.download_timeout)
        .map_err(|_| format!("--download-timeout {} is not a number of seconds", cli.download_timeout));
    match tend::modules::module_dir(cli.module_path.as_deref()).and_then(|dir| Ok((dir, timeout?))) {
        Ok((dir, timeout)) => {
            tend::modules::choose(tend::modules::Modules { dir: Some(dir), download: cli.download, timeout })
        }
        Err(e) => {
            tend::stderr::line(format_args!("error: {e}"));
            return ExitCode::from(2);
        }
    }
    let code = command(cli);
    tend::stdout::exit_code(code)
}

fn command(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Check { path, format, deny } => {
            cmd::check::run(&path, format, deny.is_some(), cli.verbose, cli.hostname)
        }
        Command::Functions { prefix, format } => cmd::functions::run(prefix.as_deref(), format, cli.hostname),
        Command::Fmt { paths, check } => cmd::fmt::run(&paths, check),
        Command::Lsp => tend::lsp::run(),
        Command::Graph { path, format, observing: Observing { timeout, seeds, prefix, tls } } => {
            cmd::graph::run(&path, format, timeout, cli.hostname, &WorldUse { seeds, prefix, tls: tls.tls() })
        }
        Command::Why { path, resource, format, observing: Observing { timeout, seeds, prefix, tls } } => {
            cmd::why::run(&path, &resource, format, timeout, cli.hostname, &WorldUse { seeds, prefix, tls: tls.tls() })
        }
        Command::Deploy { path, seeds, parent, force, keep, sign, tls } => {
            let target = cmd::deploy::Target { seeds, tls: tls.tls(), sign };
            cmd::deploy::run(&path, &target, parent, force, keep, cli.hostname)
        }
        Command::Status { seeds, format, tls } => cmd::status::run(&seeds, tls.tls(), format, cli.hostname),
        Command::Pki { command } => cmd::pki::run(command),
        Command::Cluster { command } => cmd::cluster::run(command),
        Command::Completions { shell } => {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut <Cli as clap::CommandFactory>::command(), "tend", &mut out);
            tend::stdout::print(String::from_utf8_lossy(&out));
            ExitCode::SUCCESS
        }
        Command::Manpage => {
            let mut out = Vec::new();
            match clap_mangen::Man::new(<Cli as clap::CommandFactory>::command()).render(&mut out) {
                Ok(()) => {
                    tend::stdout::print(String::from_utf8_lossy(&out));
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    stderr::line(format_args!("error: cannot render the manual page: {e}"));
                    ExitCode::from(2)
                }
            }
        }
        Command::Provisioner(args) => cmd::provisioner::run(*args, cli.verbose, cli.hostname, cli.quiet),
        Command::Run(args) => cmd::run::run(tend::cli::RunArgs { hostname: cli.hostname, quiet: cli.quiet, ..args }),
    }
}

fn init_logging(verbose: u8, quiet: bool, format: LogFormat) {
    let level = match verbose {
        0 if quiet => "error",
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("TEND_LOG").unwrap_or_else(|_| level.into());
    let builder =
        tracing_subscriber::fmt().with_env_filter(filter).with_ansi(stderr::color()).with_writer(|| stderr::LogWriter);
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
}
