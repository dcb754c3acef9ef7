//! Command-line arguments.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(name = "tend", version, about = "A reactive configuration engine for mcl programs")]
pub struct Cli {
    /// More logging (-v info, -vv debug, -vvv trace). Logs go to stderr.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only errors: no line per change, no `print` messages, no summary.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Log format.
    #[arg(long, global = true, value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// The host name the program sees (`sys.hostname()`, node definitions) instead of the
    /// machine's.
    #[arg(long, global = true, value_name = "NAME")]
    pub hostname: Option<String>,
    /// Print secrets as they are: the content of files others may not read and the values of
    /// credential params, `password`, `apitoken` and `token` (otherwise shown as a size and a
    /// digest in diffs, reports, `graph` and `why`).
    #[arg(long, global = true)]
    pub show_secrets: bool,
    /// Where imports by URL (`import "git://host/repo/"`) are looked for last, after the
    /// `path:` of each module's metadata.yaml (default: `modules/` in the state directory).
    #[arg(long, global = true, value_name = "DIR", env = "MGMT_MODULE_PATH")]
    pub module_path: Option<PathBuf>,
    /// Clone a module imported by URL that the module path does not have (with git, at the
    /// ref the import names: `#v2` or `?ref=v2`) into the first place it was looked for.
    #[arg(long, global = true)]
    pub download: bool,
    /// Give up a download after this many seconds (a server that stalls holds it otherwise).
    #[arg(long, global = true, value_name = "SECS", default_value_t = 300.0)]
    pub download_timeout: f64,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Copy, Clone, Debug, ValueEnum, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Copy, Clone, Debug, ValueEnum, PartialEq, Eq)]
pub enum FunctionsFormat {
    /// One line each: name, signatures, first line of the doc.
    Text,
    /// One JSON document: `[{"name", "signatures", "doc"}]`.
    Json,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Parse, resolve, type-check and build the function graph of a program.
    Check {
        /// A .mcl file, or a directory holding main.mcl (or metadata.yaml).
        path: PathBuf,
        #[arg(long, value_enum, default_value = "human")]
        format: CheckFormat,
        /// `--deny warnings`: a warning (an unused bind or import) fails the check.
        #[arg(long, value_name = "warnings", value_parser = ["warnings"])]
        deny: Option<String>,
    },
    /// List the function library: each function's name, signatures and what it does (the
    /// functions a program may call after importing their package).
    Functions {
        /// Only the functions whose name starts with this (e.g. `golang/math.` or `net.`).
        prefix: Option<String>,
        #[arg(long, value_enum, default_value = "text")]
        format: FunctionsFormat,
    },
    /// Rewrite mcl files in mgmt's canonical layout (directories recursively; `-`: stdin to
    /// stdout); prints the files it changed.
    Fmt {
        /// Files or directories (default: the current directory), or `-`.
        paths: Vec<PathBuf>,
        /// Change nothing: list the files that are not formatted and exit 1 if there are any.
        #[arg(long)]
        check: bool,
    },
    /// A language server (LSP) over stdin and stdout, for editors: diagnostics as you type,
    /// hover, go to definition, references, completion, outline, formatting, highlighting.
    Lsp,
    /// Compile, run the dataflow until it settles, and print the resource graph.
    Graph {
        path: PathBuf,
        #[arg(long, value_enum, default_value = "text")]
        format: GraphFormat,
        #[command(flatten)]
        observing: Observing,
    },
    /// Explain how a resource's params were produced: source lines, values, provenance.
    Why {
        path: PathBuf,
        /// The resource, as KIND[NAME] (e.g. `file[/tmp/x]`).
        resource: String,
        #[arg(long, value_enum, default_value = "text")]
        format: WhyFormat,
        #[command(flatten)]
        observing: Observing,
    },
    /// Type-check a program and store it in the cluster as the next deploy: every agent
    /// following deploys (`tend run --seeds URL` without a PATH) runs it.
    Deploy {
        /// A .mcl file, or a directory holding main.mcl (or metadata.yaml): the whole
        /// directory is deployed.
        path: PathBuf,
        /// The etcd cluster's client URLs.
        #[arg(long, value_name = "URL[,URL…]", value_delimiter = ',', required = true)]
        seeds: Vec<String>,
        /// Only deploy right after deploy N (refused if another landed since).
        #[arg(long, value_name = "N")]
        parent: Option<u64>,
        /// Deploy after whatever is latest, even when --parent is stale.
        #[arg(long)]
        force: bool,
        /// Keep this many deploys (the latest ones) in the cluster; older ones and the
        /// files only they named are removed.
        #[arg(long, value_name = "K", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
        keep: u64,
        /// Sign the deploy with this Ed25519 private key (`tend pki init`'s deploy.key):
        /// agents started with --trust-deploys run only deploys signed by a key they trust.
        #[arg(long, value_name = "KEY")]
        sign: Option<PathBuf>,
        #[command(flatten)]
        tls: TlsArgs,
    },
    /// Show the fleet: which deploy each agent runs, whether it converged, what failed.
    Status {
        /// The etcd cluster's client URLs.
        #[arg(long, value_name = "URL[,URL…]", value_delimiter = ',', required = true)]
        seeds: Vec<String>,
        #[arg(long, value_enum, default_value = "text")]
        format: StatusFormat,
        #[command(flatten)]
        tls: TlsArgs,
    },
    /// The cluster's access: confine each host to its own keys, give operators the right
    /// to deploy, take either away (etcd's users and roles, as its root user).
    Cluster {
        #[command(subcommand)]
        command: ClusterCommand,
    },
    /// A small PKI for a fleet that has none: a CA, certificates for hosts, operators and
    /// etcd members, and the key pair that signs deploys. Any CA's PEM files work instead.
    Pki {
        #[command(subcommand)]
        command: PkiCommand,
    },
    /// Converge the machine to the program and keep it converged.
    Run(RunArgs),
    /// Make this machine a network-install server for Fedora (DHCP, TFTP, HTTP, kickstart)
    /// and install a machine that boots from the network: the embedded provisioner module
    /// (`import "embedded/provisioner"`) run with these options as its config.
    Provisioner(Box<ProvisionerArgs>),
    /// Print a shell completion script, generated from these options (e.g.
    /// `tend completions bash > /etc/bash_completion.d/tend`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), generated from these options (`tend manpage > tend.1`).
    Manpage,
}

/// `tend run`'s options, as parsed and as `cmd::run` reads them (one definition).
/// How `graph` and `why` run a program once, to look at it.
#[derive(Args, Debug, Clone)]
pub struct Observing {
    /// Give up when the dataflow has not settled after this many seconds.
    #[arg(long, default_value_t = 10.0)]
    pub timeout: f64,
    /// Read the world (and other hosts' exports) from this etcd cluster, as an observer:
    /// nothing is claimed or written (`why` says each world value's revision, age and
    /// staleness).
    #[arg(long, value_name = "URL[,URL…]", value_delimiter = ',')]
    pub seeds: Vec<String>,
    /// The state directory whose world to read (a `tend run --prefix`'s): the local
    /// store, or with --seeds the last values that agent saw, when etcd is unreachable.
    #[arg(long, value_name = "DIR")]
    pub prefix: Option<PathBuf>,
    #[command(flatten)]
    pub tls: TlsArgs,
}

/// TLS to etcd, with etcdctl's flag names: for `https://` seeds.
#[derive(Args, Debug, Clone, Default)]
pub struct TlsArgs {
    /// The CA certificate (PEM) that signed etcd's certificate: needed for https:// seeds.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// This client's certificate (PEM), for an etcd that asks for one; its CN is the etcd
    /// user it acts as.
    #[arg(long, value_name = "FILE", requires = "key", requires = "cacert")]
    pub cert: Option<PathBuf>,
    /// The private key (PEM) of --cert.
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
}

impl TlsArgs {
    /// The files as the world takes them; none without --cacert.
    pub fn tls(&self) -> Option<world::Tls> {
        let ca = self.cacert.clone()?;
        Some(world::Tls { ca, identity: self.cert.clone().zip(self.key.clone()) })
    }
}

/// Whom `tend cluster grant` and `revoke` act on, and as whom.
#[derive(Args, Debug, Clone)]
pub struct Access {
    /// Hosts (each the CN of its certificate and its --hostname).
    #[arg(value_name = "HOST")]
    pub hosts: Vec<String>,
    /// Operators (the CN of their certificates): may deploy and read, never act as a host.
    #[arg(long = "operator", value_name = "NAME")]
    pub operators: Vec<String>,
    /// The etcd cluster's client URLs.
    #[arg(long, value_name = "URL[,URL…]", value_delimiter = ',', required = true)]
    pub seeds: Vec<String>,
    /// --cert and --key must be of etcd's root user (a certificate whose CN is `root`).
    #[command(flatten)]
    pub tls: TlsArgs,
}

#[derive(Subcommand, Debug)]
pub enum ClusterCommand {
    /// Turn etcd's authentication on (if it is off) and give each HOST a user that may read
    /// what agents read but write only its own keys (its claim, status, map entries,
    /// candidacies and exports; plain kv keys are shared), and each --operator one that
    /// may deploy and read.
    Grant {
        #[command(flatten)]
        access: Access,
        /// Do not let these hosts choose the schedules (campaign and write the results):
        /// leave that to hosts granted without this flag.
        #[arg(long)]
        no_schedules: bool,
    },
    /// Take each HOST's and --operator's access away at once, and delete every key each
    /// HOST wrote (its exports are no longer collected).
    Revoke {
        #[command(flatten)]
        access: Access,
    },
    /// Set the number of members a cluster that tend forms (`tend run --client-urls`)
    /// grows to: agents join while it has fewer.
    Size {
        #[arg(value_parser = clap::value_parser!(u16).range(1..=99))]
        size: u16,
        /// The etcd cluster's client URLs.
        #[arg(long, value_name = "URL[,URL…]", value_delimiter = ',', required = true)]
        seeds: Vec<String>,
        #[command(flatten)]
        tls: TlsArgs,
    },
}

#[derive(Subcommand, Debug)]
pub enum PkiCommand {
    /// Make a CA (DIR/ca.crt, DIR/ca.key) and the deploy signing key pair (DIR/deploy.key,
    /// DIR/deploy.pub). Private keys are written 0600.
    Init {
        dir: PathBuf,
        /// Replace files that exist (otherwise nothing is written).
        #[arg(long)]
        force: bool,
    },
    /// Make DIR/NAME.crt and DIR/NAME.key, signed by the CA in DIR, for a host, an operator
    /// or an etcd member (CN = NAME; usable as a server and as a client certificate).
    Issue {
        dir: PathBuf,
        name: String,
        /// An IP address the certificate is valid for (repeatable): an etcd member's.
        #[arg(long = "ip", value_name = "ADDR")]
        ips: Vec<std::net::IpAddr>,
        /// A DNS name the certificate is valid for (repeatable).
        #[arg(long = "dns", value_name = "NAME")]
        dns: Vec<String>,
        /// Valid for this many days.
        #[arg(long, value_name = "DAYS", default_value_t = world::pki::DEFAULT_DAYS, value_parser = clap::value_parser!(i64).range(1..=36500))]
        days: i64,
        /// Replace files that exist (otherwise nothing is written).
        #[arg(long)]
        force: bool,
    },
    /// Revoke DIR/NAME.crt: add it to the CA's revocation list DIR/crl.pem (every earlier
    /// revocation kept), which etcd reads with --client-crl-file and then refuses it.
    Revoke { dir: PathBuf, name: String },
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// A .mcl file, or a directory holding main.mcl (or metadata.yaml). Without it (and
    /// in a cluster), the agent runs the cluster's deploys and follows each new one.
    #[arg(required_unless_present_any = ["seeds", "client_urls"])]
    pub path: Option<PathBuf>,
    /// Exit once the whole graph has stayed converged this many seconds (0: as soon
    /// as it converges). Exit status 1 when a resource failed.
    #[arg(long, value_name = "SECS")]
    pub converged_timeout: Option<f64>,
    /// Check only: print what would change (file content as a unified diff), change nothing.
    #[arg(long)]
    pub noop: bool,
    /// State directory (default: $XDG_CACHE_HOME/tend or ~/.cache/tend; /var/lib/tend for root).
    #[arg(long, value_name = "DIR")]
    pub prefix: Option<PathBuf>,
    /// Do not reload the program when its source files change (SIGHUP still reloads).
    #[arg(long)]
    pub no_watch: bool,
    /// Serve Prometheus text metrics at ADDR (e.g. 127.0.0.1:9233) under /metrics.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Write the resource graph as Graphviz to DIR/graph-N.dot after each swap.
    #[arg(long, value_name = "DIR")]
    pub graph_dump: Option<PathBuf>,
    /// Allow --metrics on a non-loopback address.
    #[arg(long, requires = "metrics")]
    pub metrics_allow_remote: bool,
    /// Join the etcd cluster at these client URLs (comma-separated, e.g.
    /// http://10.0.0.1:2379): the world (`kv`, `world.*`) is shared with every agent that
    /// joined it. Without it, the world is the local store under --prefix.
    #[arg(long, value_name = "URL[,URL…]", value_delimiter = ',')]
    pub seeds: Vec<String>,
    /// Serve clients of the cluster here, as a member tend runs (the real `etcd` binary,
    /// its data under --prefix): without --seeds this agent starts a new cluster; with
    /// them it joins while the cluster is below its ideal size, and is a client meanwhile.
    #[arg(long, value_name = "URL[,URL…]", value_delimiter = ',', requires = "server_urls")]
    pub client_urls: Vec<String>,
    /// Where this agent's member talks to the other members (its peer URLs).
    #[arg(long, value_name = "URL[,URL…]", value_delimiter = ',', requires = "client_urls")]
    pub server_urls: Vec<String>,
    /// How many members the cluster grows to (mgmt's default). The first member stores
    /// its value in the cluster and every agent follows the stored one; `tend cluster size
    /// N` changes it.
    #[arg(long, value_name = "N", requires = "client_urls", value_parser = clap::value_parser!(u16).range(1..=99))]
    pub ideal_cluster_size: Option<u16>,
    /// Never run a member: a client of the cluster at --seeds only.
    #[arg(long, conflicts_with_all = ["client_urls", "server_urls", "ideal_cluster_size"], requires = "seeds")]
    pub no_server: bool,
    /// Seconds a member may be unreachable before the leader's agent removes it from the
    /// cluster (never when that would lose quorum); a client agent is then promoted.
    #[arg(long, value_name = "SECS", default_value_t = world::etcd::member::DEFAULT_GRACE, requires = "client_urls", value_parser = clap::value_parser!(u64).range(1..=world::etcd::member::MAX_GRACE))]
    pub member_grace: u64,
    /// The etcd binary members run (Debian's etcd-server installs `etcd`).
    #[arg(long, value_name = "PATH", default_value = "etcd", requires = "client_urls")]
    pub etcd_binary: PathBuf,
    /// Seconds this agent's etcd session outlives it: a dead agent's entries and claim
    /// vanish after this long.
    #[arg(long, value_name = "SECS", default_value_t = 15, value_parser = clap::value_parser!(i64).range(2..=3600))]
    pub world_ttl: i64,
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Run only deploys signed by one of these Ed25519 public keys (`tend pki init`'s
    /// deploy.pub), and never one older than a deploy this agent ran: a deploy unsigned,
    /// signed by another key or changed after signing is refused, and the status says why.
    #[arg(long, value_name = "PUB[,PUB…]", value_delimiter = ',')]
    pub trust_deploys: Vec<PathBuf>,
    /// Exit status 0 when nothing changed, 2 when something changed (or under --noop
    /// would), 4 when a resource failed, 6 when both (as Puppet's).
    #[arg(long)]
    pub detailed_exitcodes: bool,
    /// The report at exit on stdout: `text` (under --noop, what would change), or `json`
    /// (what changed or would change, what failed, counts).
    #[arg(long, value_enum, default_value = "text")]
    pub format: RunFormat,
    /// `--hostname` (a global option, copied here by `main`).
    #[arg(skip)]
    pub hostname: Option<String>,
    /// `--quiet` (a global option, copied here by `main`).
    #[arg(skip)]
    pub quiet: bool,
}

/// `tend provisioner`'s options: mgmt's, plus how to run.
#[derive(Args, Debug, Clone)]
pub struct ProvisionerArgs {
    /// The wired interface to serve the install network on (default: the machine's only
    /// one; more than one must be chosen).
    #[arg(long, value_name = "IFACE")]
    pub interface: Option<String>,
    /// The install network (an empty string: no DHCP of ours; the interface keeps its address).
    #[arg(long, value_name = "CIDR", default_value = "192.168.42.0/24")]
    pub network: String,
    /// This machine's address on the install network, with its prefix length.
    #[arg(long, value_name = "CIDR", default_value = "192.168.42.1/24")]
    pub router: String,
    /// DNS servers handed out by DHCP (repeatable).
    #[arg(long, value_name = "ADDR", default_values = ["8.8.8.8", "1.1.1.1"])]
    pub dns: Vec<String>,
    /// The cache of boot images and packages (default: tend/provisioner/ in
    /// $XDG_CACHE_HOME, else ~/.cache): may be deleted at any time.
    #[arg(long, value_name = "DIR")]
    pub prefix: Option<PathBuf>,
    /// Open the ports the provisioner serves in firewalld.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub firewalld: bool,
    /// Where the iPXE ISO served at /ipxe.iso is fetched from (`''`: none is served).
    #[arg(long, value_name = "URL", default_value = "https://boot.ipxe.org/ipxe.iso")]
    pub ipxe_iso: String,
    /// Where the iPXE UEFI executable served at /ipxe.x86_64.efi is fetched from (`''`: none).
    #[arg(long, value_name = "URL", default_value = "https://boot.ipxe.org/x86_64-efi/ipxe.efi")]
    pub ipxe_efi: String,
    /// A directory holding pxelinux.0, ldlinux.c32, vesamenu.c32, libcom32.c32 and
    /// libutil.c32 (default: install Fedora's syslinux package and use its).
    #[arg(long, value_name = "DIR")]
    pub syslinux_dir: Option<PathBuf>,
    /// A directory holding shim.efi, shimx64.efi and grubx64.efi (default: take them out
    /// of the release's shim-x64 and grub2-efi-x64 packages, which needs dnf).
    #[arg(long, value_name = "DIR")]
    pub uefi_dir: Option<PathBuf>,
    /// The distribution to install (only `fedora`).
    #[arg(long, default_value = "fedora")]
    pub distro: String,
    /// The distribution's version, e.g. 42.
    #[arg(long = "dversion", value_name = "VERSION")]
    pub version: Option<String>,
    /// The architecture to install.
    #[arg(long, default_value = "x86_64", value_parser = ["x86_64", "aarch64"])]
    pub arch: String,
    /// The flavour (`Workstation`, `Server`, …; title case).
    #[arg(long, default_value = "Workstation")]
    pub flavour: String,
    /// The https mirror whose packages are proxied and cached (the Fedora redirector when
    /// not given). `--mirror ''`: serve only what the cache holds.
    #[arg(long, value_name = "URL", default_value = "https://download.fedoraproject.org/pub/fedora/linux/")]
    pub mirror: String,
    /// An rsync mirror (accepted for mgmt's command lines; tend only proxies --mirror).
    #[arg(long, value_name = "URL", default_value = "")]
    pub rsync: String,
    /// The MAC address of the machine to install (default: any machine that boots from
    /// the network).
    #[arg(long, value_name = "MAC")]
    pub mac: Option<String>,
    /// The address the machine gets, with its prefix length, inside --network.
    #[arg(long, value_name = "CIDR", default_value = "192.168.42.13/24")]
    pub ip: String,
    /// Boot the machine by BIOS (pxelinux) instead of UEFI (shim and grub).
    #[arg(long)]
    pub bios: bool,
    /// root's password on the machine as an `openssl passwd -6` hash (106 characters).
    /// Without it (and --password-file) tend asks for the password and hashes it.
    #[arg(long, value_name = "HASH", conflicts_with = "password_file")]
    pub password: Option<String>,
    /// A file holding root's password hash (as --password), so it is not on a command line.
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,
    /// Partitioning: `plain` (the default) or `btrfs`.
    #[arg(long, default_value = "", value_parser = ["", "plain", "btrfs"])]
    pub part: String,
    /// Encrypt the disk with LUKS and an empty passphrase (set one after the first boot).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub luks: bool,
    /// More packages to install (repeatable).
    #[arg(long, value_name = "PKG")]
    pub packages: Vec<String>,
    /// A command the installed machine runs once at its first boot (e.g. `tend run …`).
    #[arg(long, value_name = "CMD")]
    pub handoff_exec: Option<String>,
    /// A program (a .mcl file or a directory) the installed machine runs with tend as a
    /// service: it is type-checked now and sent with the install.
    #[arg(long, value_name = "PATH")]
    pub handoff_code: Option<PathBuf>,
    /// The module path sent with --handoff-code.
    #[arg(long, value_name = "DIR", requires = "handoff_code")]
    pub handoff_module_path: Option<PathBuf>,
    /// The installed machine's host name.
    #[arg(long, value_name = "NAME")]
    pub handoff_hostname: Option<String>,
    /// The machine's BMC (`gofishs://USER@HOST:PORT`): it is powered on to boot.
    #[arg(long, value_name = "URL")]
    pub bmc_uri: Option<String>,
    /// A file holding the BMC's password (otherwise it must be in --bmc-uri).
    #[arg(long, value_name = "FILE", requires = "bmc_uri")]
    pub bmc_password_file: Option<PathBuf>,
    /// Stop after type-checking the provisioner's program.
    #[arg(long, conflicts_with = "graph")]
    pub check: bool,
    /// Print the resource graph the provisioner would converge to, and stop.
    #[arg(long)]
    pub graph: bool,
    /// Check only: print what would change, change nothing.
    #[arg(long)]
    pub noop: bool,
    /// Exit once the graph has stayed converged this many seconds.
    #[arg(long, value_name = "SECS")]
    pub converged_timeout: Option<f64>,
    /// tend's state directory (as `tend run --prefix`).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

impl RunArgs {
    /// `tend run`'s options as when none is given, for commands that run a program of
    /// their own (its `path` is a placeholder to replace).
    pub fn defaults() -> RunArgs {
        #[derive(Parser)]
        struct Only {
            #[command(flatten)]
            run: RunArgs,
        }
        Only::parse_from(["tend", "-"]).run
    }
}

#[derive(Copy, Clone, Debug, ValueEnum, PartialEq, Eq, Default)]
pub enum RunFormat {
    #[default]
    Text,
    Json,
}

#[derive(Copy, Clone, Debug, ValueEnum, PartialEq, Eq)]
pub enum CheckFormat {
    Human,
    Json,
}

#[derive(Copy, Clone, Debug, ValueEnum, PartialEq, Eq)]
pub enum GraphFormat {
    Text,
    Json,
    Dot,
}

#[derive(Copy, Clone, Debug, ValueEnum, PartialEq, Eq)]
pub enum StatusFormat {
    Text,
    Json,
}

#[derive(Copy, Clone, Debug, ValueEnum, PartialEq, Eq)]
pub enum WhyFormat {
    Text,
    Json,
}
