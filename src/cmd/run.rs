//! `tend run PATH`: compile, run the dataflow, and hand every settled output to the engine
//! as a resource graph (applied by diff); optionally exit once converged, check only
//! (`--noop`), and reload the program when its source files change.

mod deploys;
mod events;
mod exports;

pub use exports::remote_of;
mod patch;
mod report;
mod status;

pub use status::{fleet_converged, now as status_now};
mod watch_code;

use crate::cli::{RunArgs, RunFormat};
use crate::compile::{self, Report};
use crate::loader::ProgramPath;
use crate::observe::{metrics, notify, ready, timing};
use engine::{Engine, EngineConfig, ResKey};
use funcs::registry::Registry;
use funcs::runtime::Dataflow;
use lang::catalog::Catalog;
use lang::diag::Diagnostic;
use lang::incremental::Outline;
use lang::span::SourceMap;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// How long an orderly shutdown waits for workers before aborting them.
const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(10);

/// Threads of the runtime the resources' workers run on (the main one keeps its two for
/// watches, servers and the program's dataflow).
const APPLY_THREADS: usize = 2;

/// Fetches of one deploy that fail, with etcd answering, before it is skipped.
const FETCH_TRIES: u32 = 5;

/// How long a graph stays converged before the memory its making freed goes back to the OS.
const RELEASE_QUIET: Duration = Duration::from_secs(1);

/// How often a run with a failed resource checks whether everything else has stopped.
const STALL_POLL: Duration = Duration::from_millis(50);

/// `tend run` (options: [`crate::cli::RunArgs`]).
pub fn run(opts: RunArgs) -> ExitCode {
    let metrics_addr = match opts.metrics.map(|a| metrics::check_addr(a, opts.metrics_allow_remote)).transpose() {
        Ok(a) => a,
        Err(e) => {
            crate::stderr::line(format_args!("error: {e}"));
            return ExitCode::from(2);
        }
    };
    if !opts.trust_deploys.is_empty() && opts.seeds.is_empty() && opts.client_urls.is_empty() {
        crate::stderr::line(format_args!(
            "error: --trust-deploys is for an agent of a cluster (--seeds, or --client-urls and --server-urls)"
        ));
        return ExitCode::from(2);
    }
    let trusted = match opts.trust_deploys.as_slice() {
        [] => None,
        keys => match world::signing::Trusted::load(keys) {
            Ok(trusted) => Some(trusted),
            Err(e) => {
                crate::stderr::line(format_args!("error: --trust-deploys {e}"));
                return ExitCode::from(2);
            }
        },
    };
    // How long the graph must stay converged before the run ends (`None`: it never ends by
    // itself). --noop checks once and reports; it does not keep watching.
    let hold = opts.converged_timeout.or(opts.noop.then_some(0.0)).map(|s| Duration::from_secs_f64(s.max(0.0)));
    // A run that ends at its first converge: no live edit, no passive watch.
    let first_converge = hold == Some(Duration::ZERO);
    let (registry, mut catalog) = compile::catalog(opts.hostname.as_deref());
    // The run validates each resource as it builds the graph (before anything is touched):
    // validating constant ones while compiling too would be that work twice, a few percent
    // of a cold run at 100,000 files.
    catalog.clear_validator();
    let given = match &opts.path {
        Some(path) => {
            let program = match crate::loader::locate(path) {
                Ok(p) => p,
                Err(e) => {
                    crate::stderr::line(format_args!("error: {e}"));
                    return ExitCode::from(2);
                }
            };
            // Live edits (the code watcher) compile an edit of resources' params alone.
            let outlined = !opts.no_watch && !opts.noop && !first_converge;
            match load(&program, &catalog, outlined) {
                Ok(c) => {
                    if !opts.quiet {
                        print_warnings(&c.warnings, &c.sources);
                    }
                    Some((program, c))
                }
                Err((diags, sources)) => {
                    compile::report(&diags, &sources, Report::Human);
                    return ExitCode::from(1);
                }
            }
        }
        None => None,
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            crate::stderr::line(format_args!("error: cannot start the async runtime: {e}"));
            return ExitCode::from(2);
        }
    };
    // Resources' workers (and so their check-applies) run on a runtime of their own: a
    // check-apply blocked on a slow disk or an fsync holds one of its threads, never the
    // watches and servers, which stay on the main one.
    let apply_rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(APPLY_THREADS)
        .thread_name("tend-apply")
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            crate::stderr::line(format_args!("error: cannot start the async runtime: {e}"));
            return ExitCode::from(2);
        }
    };
    let state_dir = opts.prefix.clone().unwrap_or_else(crate::services::default_state_dir);
    // One agent per state directory; `--noop` changes nothing, so it may look beside one.
    let _agent_lock = if opts.noop {
        None
    } else {
        match crate::agent_lock::AgentLock::take(&state_dir) {
            Ok(lock) => Some(lock),
            Err(e) => {
                crate::stderr::line(format_args!("error: {e}"));
                return ExitCode::from(2);
            }
        }
    };
    let hostname = crate::services::world_hostname(opts.hostname.as_deref());
    // A member of a cluster tend forms itself: started (or joined) before the world.
    let membership = match member_config(&opts, &hostname, &state_dir) {
        None => None,
        Some(cfg) => match rt.block_on(world::etcd::member::Membership::start(cfg)) {
            Ok(m) => Some(m),
            Err(e) => {
                crate::stderr::line(format_args!("error: cannot form the cluster: {e}"));
                return ExitCode::from(2);
            }
        },
    };
    let seeds = membership.as_ref().map_or_else(|| opts.seeds.clone(), world::etcd::member::Membership::seeds);
    let config = world::Config {
        ttl: opts.world_ttl,
        endpoints: membership.as_ref().map(world::etcd::member::Membership::endpoints).unwrap_or_default(),
        ..crate::services::world_config(&seeds, opts.tls.tls(), Some(&hostname), &state_dir)
    };
    let world = match rt.block_on(world::connect(config)) {
        Ok(w) => w,
        Err(e) => {
            crate::stderr::line(format_args!("error: cannot join the cluster: {e}"));
            return ExitCode::from(2);
        }
    };
    // Following deploys, the program's root is where they are placed.
    let (program, start) = match given {
        Some((program, compiled)) => (program, Start::Program(compiled)),
        None => (ProgramPath::deployed(state_dir.join("deploys"), "/main.mcl".into()), Start::Deploys),
    };
    let watch = !opts.no_watch && !opts.noop && matches!(start, Start::Program(_));
    let services = crate::services::Services::system(&program.root, &state_dir, opts.hostname.clone(), world.clone());
    services.resources.program.set_entry(&program.entry);
    services.resources.program.keep_out(&state_dir);
    let config = EngineConfig {
        state_dir: state_dir.clone(),
        stop_timeout: SHUTDOWN_DEADLINE,
        apply_pool: Some(apply_rt.handle().clone()),
        // A run that ends at its first converge checks each file once, as a one-shot agent
        // does; following deploys, it waits for the fleet and keeps watching meanwhile.
        one_shot: first_converge && matches!(start, Start::Program(_)),
        // Pending reversals outlive the process (a noop run leaves them as they are).
        revive: (!opts.noop).then(|| {
            let host = services.resources.clone();
            engine::Revive(Arc::new(move |key: &engine::ResKey, record: &str| resources::revive(&host, key, record)))
        }),
    };
    let metrics = Arc::new(metrics::Metrics::new());
    metrics.watch_world(world.clone());
    if let Some(m) = &membership {
        metrics.watch_membership(m.state());
    }
    let mut runner = Runner {
        engine: Engine::new(config),
        grouped: 0,
        registry: Arc::new(registry),
        catalog,
        program,
        noop: opts.noop,
        host: services.resources,
        funcs_host: services.funcs,
        applied: false,
        metrics,
        metrics_addr,
        graph_dump: opts.graph_dump.clone(),
        swaps: 0,
        left_out: Vec::new(),
        state_dir,
        cluster: !seeds.is_empty(),
        facts: None,
        style: report::Style {
            show: !opts.quiet,
            color: crate::stderr::color(),
            progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
            keep_notes: opts.noop || opts.format == RunFormat::Json,
        },
        format: opts.format,
        detailed_exitcodes: opts.detailed_exitcodes,
        trusted,
    };
    let code = rt.block_on(async {
        let code = runner.main(start, hold, watch).await;
        // Leave the world: in a cluster, this host's claim and entries go at once.
        world.close().await;
        // Then the cluster, when this agent runs one of its members.
        if let Some(m) = membership {
            m.leave().await;
        }
        code
    });
    rt.shutdown_timeout(Duration::from_millis(500));
    apply_rt.shutdown_background();
    tracing::debug!("runtime stopped");
    // Every resource has stopped and cleaned up; what the runner still holds is memory
    // (the last graph, its nodes and sources), which the process exit frees at once.
    // Dropping it piece by piece costs tens of milliseconds at 10,000 resources.
    std::mem::forget(runner);
    code
}

/// What the agent's member is given, when it runs one (`--client-urls`).
fn member_config(
    opts: &RunArgs,
    hostname: &str,
    state_dir: &std::path::Path,
) -> Option<world::etcd::member::ServerConfig> {
    if opts.client_urls.is_empty() {
        return None;
    }
    Some(world::etcd::member::ServerConfig {
        name: hostname.to_string(),
        client_urls: opts.client_urls.clone(),
        server_urls: opts.server_urls.clone(),
        seeds: opts.seeds.clone(),
        ideal: opts.ideal_cluster_size,
        grace: Duration::from_secs(opts.member_grace),
        binary: opts.etcd_binary.clone(),
        dir: state_dir.join("etcd"),
        tls: opts.tls.tls(),
    })
}

/// A deploy started beside the running program, until its first output.
struct Candidate {
    id: u64,
    program: ProgramPath,
    sources: SourceMap,
    dataflow: Dataflow,
}

/// What a run starts from.
enum Start {
    /// The program given on the command line.
    Program(Compiled),
    /// The cluster's deploys: the latest one, then each new one.
    Deploys,
}

/// A compiled program: its function graph and the files it was read from.
pub struct Compiled {
    graph: Arc<lang::ir::FuncGraph>,
    sources: SourceMap,
    /// What `tend check` would warn about; shown when the code is loaded (not with `-q`).
    warnings: Vec<Diagnostic>,
    /// When asked for and the program allows it: what lets a later edit of resources'
    /// params compile alone (see `patch.rs`).
    outline: Option<Outline>,
}

/// Compiles the program, with its outline when `outlined`; on failure the diagnostics and
/// the sources they point into.
fn load(program: &ProgramPath, catalog: &Catalog, outlined: bool) -> Result<Compiled, (Vec<Diagnostic>, SourceMap)> {
    compile_with(program, &crate::loader::FsLoader::of(program), catalog, outlined)
}

/// Compiles the program read through `loader`.
fn compile_with(
    program: &ProgramPath,
    loader: &crate::loader::FsLoader,
    catalog: &Catalog,
    outlined: bool,
) -> Result<Compiled, (Vec<Diagnostic>, SourceMap)> {
    let compile = if outlined { lang::pipeline::compile_outlined } else { lang::pipeline::compile };
    let mut outcome = compile(&program.entry, loader, catalog);
    crate::loader::name_files(&mut outcome.sources, program);
    match outcome.graph {
        Some(g) if outcome.diagnostics.is_empty() => Ok(Compiled {
            graph: Arc::new(g),
            sources: outcome.sources,
            warnings: outcome.warnings.into_vec(),
            outline: outcome.outline,
        }),
        _ => Err((outcome.diagnostics.into_vec(), outcome.sources)),
    }
}

impl Stop {
    /// The exit status: 1 when the first graph failed or a resource failed, the asked
    /// code for an `exit` resource, else 0.
    fn exit_code(&self, no_failures: bool) -> ExitCode {
        match self {
            Stop::FirstFailed => ExitCode::from(1),
            Stop::Exit(code) => ExitCode::from((*code).clamp(0, 255) as u8),
            Stop::Signal | Stop::Converged if no_failures => ExitCode::SUCCESS,
            Stop::Signal | Stop::Converged => ExitCode::from(1),
        }
    }
}

/// Why the main loop ended.
enum Stop {
    Converged,
    Signal,
    /// The first output could not be run (diagnostics already printed).
    FirstFailed,
    Exit(i32),
}

struct Runner {
    engine: Engine,
    /// Resources of the running graph grouped into another's vertex (autogrouping): the
    /// summary counts resources, the engine vertices.
    grouped: usize,
    registry: Arc<Registry>,
    catalog: Catalog,
    program: ProgramPath,
    noop: bool,
    /// What resources are built against (backends, value store, server registries).
    host: resources::Machine,
    /// What the functions see: the program's root, the state directory, the same value store.
    funcs_host: funcs::api::Host,
    /// Whether a graph was ever accepted by the engine.
    applied: bool,
    metrics: Arc<metrics::Metrics>,
    metrics_addr: Option<SocketAddr>,
    graph_dump: Option<PathBuf>,
    /// Graphs accepted so far (numbers the `--graph-dump` files).
    swaps: u64,
    /// The collected resources the last graph left out (collect conflicts), reported once
    /// while they last.
    left_out: Vec<Diagnostic>,
    state_dir: PathBuf,
    /// Joined to an etcd cluster (`--seeds`): the agent publishes its status.
    cluster: bool,
    /// What the status reporter learns from the run loop (in a cluster).
    facts: Option<tokio::sync::watch::Sender<status::Facts>>,
    /// How changes and failures are shown as they happen.
    style: report::Style,
    /// The report at exit.
    format: RunFormat,
    /// `--detailed-exitcodes`.
    detailed_exitcodes: bool,
    /// `--trust-deploys`: given to the deploy follower when it starts.
    trusted: Option<world::signing::Trusted>,
}

impl Runner {
    async fn main(&mut self, start: Start, hold: Option<Duration>, watch: bool) -> ExitCode {
        let began = std::time::Instant::now();
        // Changes are followed by their own task, so a large graph does not wake this loop
        // once per resource; a failure is seen here through a counter.
        let reporter = report::Reporter::start(&self.engine, self.style);
        let failures_seen = self.engine.failures_seen();
        // Without an endpoint nobody reads the metrics: do not follow every engine event
        // (at 10,000 resources the extra subscriber is a measurable share of a run).
        let feed = self.metrics_addr.is_some().then(|| self.metrics.watch_engine(&self.engine));
        let server = match self.serve_metrics().await {
            Ok(server) => server,
            Err(code) => return code,
        };
        let announcer = notify::enabled().then(|| ready::announce(&self.engine));
        let signals = Signals::new()
            .and_then(|s| Ok((s, tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?)));
        let (mut signals, hup) = match signals {
            Ok(s) => s,
            Err(e) => {
                crate::stderr::line(format_args!("error: cannot install signal handlers: {e}"));
                return ExitCode::from(2);
            }
        };
        let mut deploys = matches!(start, Start::Deploys)
            .then(|| deploys::Deploys::new(self.host.world.clone(), &self.state_dir, self.trusted.take()));
        if self.cluster {
            let (tx, rx) = tokio::sync::watch::channel(status::Facts::default());
            status::report(self.host.world.clone(), self.engine.subscribe(), rx);
            self.facts = Some(tx);
        }
        // Following deploys, `--converged-timeout` waits for the whole fleet.
        let fleet = (deploys.is_some() && hold.is_some()).then(|| status::Fleet::follow(self.host.world.as_ref()));
        let compiled = match start {
            Start::Program(compiled) => compiled,
            Start::Deploys => {
                tracing::info!("following the cluster's deploys; waiting for one");
                let Some(d) = deploys.as_mut() else { return ExitCode::from(2) };
                // The deploy that ran here before a restart first: a newer one is then tried
                // as any new deploy, beside it, and replaces it only once it runs.
                let mut from_disk = d.last_ran();
                loop {
                    let id = match from_disk.take() {
                        Some(id) => id,
                        None => tokio::select! {
                            _ = signals.recv() => return ExitCode::SUCCESS,
                            id = d.next() => id,
                        },
                    };
                    if let Some((program, compiled)) = self.take_up(d, id).await {
                        self.funcs_host.root = program.root.clone();
                        self.program = program;
                        self.note(|f| f.deploy = Some(id));
                        d.ran(id);
                        break compiled;
                    }
                }
            }
        };
        let watcher = if watch { watch_code::CodeWatcher::new(&self.program.root, &compiled.sources) } else { None };
        let dataflow = Some(self.start(&compiled.graph));
        drop(compiled.graph);
        let mut lp = events::Loop {
            signals,
            hup,
            hold,
            deploys,
            fleet,
            watcher,
            sources: compiled.sources,
            pending: compiled.outline,
            outline: None,
            dataflow,
            candidate: None,
            replay: None,
            exports: exports::Exports::new(self.host.world.clone()),
            last_output: None,
            exit_rx: self.engine.exit_requested(),
            failures_seen,
            saw_failure: false,
            rejected: Vec::new(),
            stalled_since: None,
            tick: tokio::time::interval(STALL_POLL),
            resync: feed.is_some().then(|| tokio::time::interval(Duration::from_secs(5))),
            settled: self.engine.converged(),
            released: self.engine.generation(),
            keeps_running: hold != Some(Duration::ZERO),
            release: Box::pin(tokio::time::sleep(Duration::MAX / 4)),
            release_armed: false,
        };
        let stop = loop {
            let event = self.next_event(&mut lp).await;
            if let Some(stop) = self.handle(&mut lp, event).await {
                break stop;
            }
        };
        let mut tally = reporter.finish().await;
        tally.resources += self.grouped;
        let held_up = self.engine.held_up().await;
        tracing::debug!("stopping");
        if let Some(a) = announcer {
            a.abort();
        }
        if let Err(e) = notify::stopping() {
            tracing::warn!(error = %e, "cannot notify systemd");
        }
        let failures = self.engine.failures().await;
        let shutdown = async {
            if let Some(df) = lp.dataflow.take() {
                df.shutdown().await;
            }
            resources::util::watch::leave_watches_at_exit();
            let report = self.engine.shutdown_for_exit(SHUTDOWN_DEADLINE).await;
            if !report.stragglers.is_empty() {
                tracing::warn!(stragglers = report.stragglers.len(), "some resources did not stop in time");
            }
            self.host.temps.settled().await;
        };
        tokio::select! {
            _ = shutdown => {}
            _ = lp.signals.recv() => {
                crate::stderr::line(format_args!("second signal: exiting without waiting for resources to stop"));
                std::process::exit(130);
            }
        }
        tracing::debug!("engine and dataflow stopped");
        if let Some(s) = server {
            s.task.abort();
        }
        if let Some(f) = feed {
            f.abort();
        }
        self.report_end(&tally, &failures, &held_up, began.elapsed());
        if self.detailed_exitcodes && !matches!(stop, Stop::FirstFailed | Stop::Exit(_)) {
            let changed = if tally.changes == 0 { 0 } else { 2 };
            let failed = if failures.is_empty() { 0 } else { 4 };
            return ExitCode::from(changed | failed);
        }
        stop.exit_code(failures.is_empty())
    }

    /// What is said when the run ends: the report on stdout (under --noop, or as JSON),
    /// and on stderr what the failures held up and the summary (only failures with -q).
    fn report_end(
        &self,
        tally: &report::Tally,
        failures: &BTreeMap<ResKey, String>,
        held_up: &BTreeMap<ResKey, ResKey>,
        took: Duration,
    ) {
        match self.format {
            RunFormat::Json => {
                let report = report::json(tally, failures, held_up, self.noop, self.applied);
                crate::stdout::line(report);
            }
            RunFormat::Text if self.noop && self.applied => print_noop(&tally.changed, failures),
            RunFormat::Text => {}
        }
        // Failures were shown as they happened (with -q too), unless the run ended first.
        crate::stderr::print(report::unshown_failures(tally, failures, self.style.color));
        for (key, cause) in held_up {
            crate::stderr::line(format_args!("{key} not applied: it depends on {cause}, which failed"));
        }
        if self.applied && self.style.show {
            crate::stderr::line(report::summary(tally, failures.len(), self.noop, took));
        }
    }

    /// Some resource failed for good and every other one is idle, failed, or waiting (so
    /// blocked behind a failure): nothing more will happen without outside change.
    async fn stalled(&self) -> bool {
        use engine::WorkerState;
        let status = self.engine.status().await;
        status.values().any(|s| matches!(s, WorkerState::Failed { .. }))
            && status
                .values()
                .all(|s| matches!(s, WorkerState::Idle | WorkerState::Failed { .. } | WorkerState::Waiting))
    }

    /// The `/metrics` endpoint when `--metrics` asks for one; a bind failure is a usage
    /// error (exit 2).
    async fn serve_metrics(&self) -> Result<Option<metrics::Server>, ExitCode> {
        let Some(addr) = self.metrics_addr else { return Ok(None) };
        match metrics::serve(addr, self.metrics.clone()).await {
            Ok(s) => {
                tracing::info!(addr = %s.addr, "serving metrics at /metrics");
                Ok(Some(s))
            }
            Err(e) => {
                crate::stderr::line(format_args!("error: --metrics {addr}: {e}"));
                Err(ExitCode::from(2))
            }
        }
    }

    /// Recompiles the program after a change of its sources and, when it compiles,
    /// restarts the dataflow on it (the running graph is swapped once the new output
    /// settles). A save still in progress, or a change while the sources were read, drops
    /// the reading: the next settled change reads them again. Code that does not compile
    /// is reported and leaves the running program alone. The new program's outline when it
    /// runs (`Some`; the outline may be `None`), `None` when the old program runs on.
    async fn reload(
        &mut self,
        watcher: &mut Option<watch_code::CodeWatcher>,
        dataflow: &mut Option<Dataflow>,
        sources: &mut SourceMap,
    ) -> Option<Option<Outline>> {
        let loader = crate::loader::FsLoader::leased(&self.program);
        let loaded = compile_with(&self.program, &loader, &self.catalog, watcher.is_some());
        if loader.busy() {
            tracing::debug!("a source file was still open for writing; waiting for that save to end");
            return None;
        }
        if watcher.as_mut().is_some_and(|w| w.changed_meanwhile()) {
            tracing::debug!("the sources changed while they were read; waiting for that save to settle");
            return None;
        }
        match loaded {
            Ok(c) => {
                if self.style.show {
                    print_warnings(&c.warnings, &c.sources);
                }
                if let Some(df) = dataflow.take() {
                    df.shutdown().await;
                }
                if let Some(w) = watcher.as_mut() {
                    w.update(&self.program.root, &c.sources);
                }
                *sources = c.sources;
                *dataflow = Some(self.start(&c.graph));
                Some(c.outline)
            }
            Err((diags, srcs)) => {
                self.metrics.compile_error();
                print_diags(&diags, &srcs);
                if let Some(w) = watcher.as_mut() {
                    w.extend(&self.program.root, &srcs);
                }
                tell("the new code does not compile; the running program stays");
                drop((diags, srcs));
                // What compiling it took (a large file of garbage: hundreds of megabytes)
                // goes back to the OS now, not at the next convergence.
                crate::memory::release_freed();
                None
            }
        }
    }

    /// Tells the status reporter (in a cluster).
    fn note(&self, change: impl FnOnce(&mut status::Facts)) {
        if let Some(tx) = &self.facts {
            tx.send_modify(change);
        }
    }

    /// Fetches and compiles deploy `id`; `None` (after reporting why) when it cannot run
    /// here, and the program running goes on.
    async fn take_up(&mut self, deploys: &mut deploys::Deploys, id: u64) -> Option<(ProgramPath, Compiled)> {
        let program = match deploys.fetch(id).await {
            Ok(p) => p,
            Err(deploys::NotPlaced::Refused(why)) => {
                deploys.skip(id);
                tracing::error!(deploy = id, "refused deploy {id}: {why}; it keeps running what it ran");
                self.note(|f| f.refused = Some((id, why.to_string())));
                return None;
            }
            Err(deploys::NotPlaced::Failed(e)) => {
                // An outage is waited out; a deploy that still cannot be fetched after a few
                // tries while etcd answers (a damaged one) is given up.
                if deploys.fetch_failed(id) >= FETCH_TRIES && self.host.world.health().connected {
                    deploys.skip(id);
                    tracing::error!(deploy = id, error = %e, "deploy {id} cannot be fetched; it is skipped");
                    self.note(|f| f.broken = Some((id, e)));
                } else {
                    tracing::error!(deploy = id, error = %e, "cannot fetch the deploy; trying again");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                return None;
            }
        };
        match load(&program, &self.catalog, false) {
            Ok(compiled) => {
                tracing::info!(deploy = id, "deploy {id} compiles here; starting it");
                Some((program, compiled))
            }
            Err((diags, sources)) => {
                deploys.skip(id);
                let why = diags.first().map(|d| d.one_line(&sources)).unwrap_or_default();
                self.note(|f| f.broken = Some((id, why)));
                self.metrics.compile_error();
                print_diags(&diags, &sources);
                tracing::error!(
                    deploy = id,
                    errors = diags.len(),
                    "deploy {id} does not compile on this host; it keeps running what it ran"
                );
                None
            }
        }
    }

    fn start(&self, graph: &Arc<lang::ir::FuncGraph>) -> Dataflow {
        Dataflow::start(graph.clone(), self.registry.clone(), self.funcs_host.clone())
    }

    /// Interprets one output and swaps it in; false (after reporting) when it was rejected.
    /// Each intermediate form is dropped as soon as the next exists (the output is shared with
    /// the dataflow, not copied), so a large graph is not held in memory three times over
    /// during a swap.
    /// What it exports is published once the graph is accepted (never under `--noop`).
    async fn apply(
        &mut self,
        output: Arc<lang::output::Output>,
        sources: &mut SourceMap,
        last: bool,
        exports: &mut exports::Exports,
    ) -> bool {
        tracing::debug!("output settled; interpreting");
        let records = (!self.noop).then(|| lang::exported::exports(&output));
        let interpreted = match Arc::try_unwrap(output) {
            // The dataflow let go of it (its last output): moved into the graph.
            Ok(owned) => compile::interpreted_owned(owned, &self.catalog, &exports.remote()),
            // Still held by the dataflow (or kept for other hosts' exports): read from, and
            // letting go of it here only counts down its references.
            Err(shared) => compile::interpreted_with(&shared, &self.catalog, &exports.remote()),
        };
        tracing::debug!("interpreted; building resources");
        let graph = match interpreted {
            Ok((g, left_out)) => {
                self.report_left_out(left_out, sources);
                g
            }
            Err(diags) => {
                self.metrics.swap_rejected();
                print_diags(&diags, sources);
                if self.applied {
                    tell("the new resource graph is invalid; the running graph stays");
                }
                return false;
            }
        };
        let dot = self.graph_dump.as_ref().map(|_| super::graph::to_dot(&graph));
        let grouped: usize = graph.members.values().map(Vec::len).sum();
        let mut candidate = match resources::contract::graph::to_engine(&self.host, graph, self.noop) {
            Ok(g) => g,
            Err(diags) => {
                self.metrics.swap_rejected();
                print_diags(&diags.into_vec(), sources);
                if self.applied {
                    tell("the new resource graph cannot be built; the running graph stays");
                }
                return false;
            }
        };
        if last && !sources.is_empty() {
            tracing::debug!("the program's last output is built; letting its sources go");
            *sources = SourceMap::new();
        }
        tracing::debug!("built; swapping");
        if self.metrics_addr.is_some() {
            timing::time_check_applies(&mut candidate, &self.metrics);
        }
        match self.engine.apply(candidate).await {
            Ok(_) => {
                self.applied = true;
                self.swaps += 1;
                self.grouped = grouped;
                match records {
                    Some(Ok(records)) => exports.publish(records),
                    Some(Err(e)) => tracing::error!(error = %e, "this host's exports are not published"),
                    None => {}
                }
                if let (Some(dir), Some(dot)) = (&self.graph_dump, dot) {
                    dump_graph(dir, self.swaps, &dot);
                }
                true
            }
            Err(e) => {
                self.metrics.swap_rejected();
                crate::stderr::line(format_args!("error: the new resource graph was rejected: {e}"));
                if self.applied {
                    tell("the running graph stays");
                }
                false
            }
        }
    }
}

impl Runner {
    /// Reports the collected resources a graph left out, when they differ from the last
    /// ones reported.
    fn report_left_out(&mut self, left_out: Vec<Diagnostic>, sources: &SourceMap) {
        if left_out == self.left_out {
            return;
        }
        if !left_out.is_empty() {
            print_diags(&left_out, sources);
            tell("the rest of the graph applies");
        } else {
            tracing::info!("the collect conflicts are resolved");
        }
        self.left_out = left_out;
    }
}

/// `--graph-dump`: the accepted graph as `DIR/graph-N.dot` (a failure is only logged).
fn dump_graph(dir: &std::path::Path, n: u64, dot: &str) {
    let path = dir.join(format!("graph-{n}.dot"));
    let result = std::fs::create_dir_all(dir).and_then(|_| std::fs::write(&path, dot));
    if let Err(e) = result {
        tracing::warn!(path = %path.display(), error = %e, "cannot write the graph dump");
    }
}

fn print_diags(diags: &[Diagnostic], sources: &SourceMap) {
    crate::stderr::print(lang::render::render_all(diags, sources, crate::stderr::color()));
    for d in diags {
        tracing::debug!(stage = d.stage.code(), message = %d.one_line(sources), "program error");
    }
}

/// Warnings of code that compiles: rendered as `tend check` shows them, never stopping it.
fn print_warnings(warnings: &[Diagnostic], sources: &SourceMap) {
    if !warnings.is_empty() {
        crate::stderr::print(lang::render::render_all(warnings, sources, crate::stderr::color()));
    }
}

/// A line for the person running tend about what the run does next.
fn tell(text: &str) {
    tracing::info!("{text}");
    crate::stderr::line(format_args!("note: {text}"));
}

/// `--noop`: what would change, per resource in key order. "Nothing would change" only
/// when every resource could be checked.
fn print_noop(reports: &BTreeMap<ResKey, Vec<String>>, failures: &BTreeMap<ResKey, String>) {
    if reports.is_empty() && failures.is_empty() {
        crate::stdout::line(format_args!("noop: nothing would change"));
        return;
    }
    for (key, notes) in reports {
        if notes.is_empty() {
            crate::stdout::line(format_args!("{key}: would change"));
        }
        for note in notes {
            crate::stdout::line(format_args!("{note}"));
        }
    }
    for (key, err) in failures {
        crate::stdout::line(format_args!("{key}: could not be checked: {err}"));
    }
    match failures.len() {
        0 => crate::stdout::line(format_args!("noop: {} resource(s) would change", reports.len())),
        n => crate::stdout::line(format_args!(
            "noop: {} resource(s) would change; {n} could not be checked, so more may",
            reports.len()
        )),
    }
}

/// SIGINT/SIGTERM: stop.
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals { int: signal(SignalKind::interrupt())?, term: signal(SignalKind::terminate())? })
    }

    async fn recv(&mut self) {
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
    }
}
