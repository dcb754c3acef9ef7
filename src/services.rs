//! The services a run shares between its functions and its resources, built once here and
//! handed to both through their contexts (`funcs::api::Host`, `resources::Machine`): the state
//! directory, the value store that `value` resources write and `value.get*` read, the
//! server registries, the file watcher. What stays process-wide is listed in ARCHITECTURE.md.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lang::value::Value;
use resources::basics::value::ValueStore;
use world::World;

/// The two halves of one run's context.
pub struct Services {
    pub funcs: funcs::api::Host,
    pub resources: resources::Machine,
}

impl Services {
    /// The real host for the program rooted at `root`, keeping state under `state_dir`,
    /// sharing `world` with the other hosts (or keeping it to itself: the local store).
    pub fn system(root: &Path, state_dir: &Path, hostname: Option<String>, world: Arc<dyn World>) -> Services {
        let mut resources = resources::Machine::system();
        resources.world = world.clone();
        resources.program.set(root);
        let mut funcs = functions_only(root, state_dir, hostname);
        funcs.values = Arc::new(SharedValues(resources.values.clone()));
        funcs.watcher = resources::cluster::world::hub();
        funcs.world = world;
        funcs.firmware = Arc::new(crate::firmware::FwupdDaemon::new(resources.fwupd.clone()));
        Services { funcs, resources }
    }
}

/// What the functions see when no resource runs (`tend graph`, `tend why`): the same
/// root, arguments, state directory and local world store, and a value store of their own.
pub fn functions_only(root: &Path, state_dir: &Path, hostname: Option<String>) -> funcs::api::Host {
    let mut funcs = funcs::api::Host::new(root, state_dir);
    funcs.args = std::env::args().collect();
    funcs.world = Arc::new(resources::cluster::world::local(state_dir, world_hostname(hostname.as_deref())));
    funcs.hostname = hostname;
    funcs.firmware = Arc::new(crate::firmware::FwupdDaemon::new(resources::firmware::fwupd::Fwupd::at(None)));
    funcs
}

/// What `world::connect` needs to reach the world of host `hostname` (`--hostname`, else
/// the machine's): the cluster at `seeds` (over `tls` for `https://` seeds), or with none
/// the local store under `state_dir`, followed through the process's inotify hub.
pub fn world_config(
    seeds: &[String],
    tls: Option<world::Tls>,
    hostname: Option<&str>,
    state_dir: &Path,
) -> world::Config {
    world::Config {
        watcher: Some(resources::cluster::world::hub()),
        tls,
        ..world::Config::new(seeds.to_vec(), world_hostname(hostname), state_dir)
    }
}

/// This host's name in the world: `--hostname`, else the machine's.
pub fn world_hostname(given: Option<&str>) -> String {
    match given {
        Some(h) => h.to_string(),
        None => funcs::core::sys::machine_hostname(),
    }
}

/// The resources' value store, as the functions read it.
struct SharedValues(Arc<ValueStore>);

impl funcs::api::ValueSource for SharedValues {
    fn get(&self, key: &str) -> Option<Value> {
        self.0.get(key)
    }

    fn get_in(&self, namespace: &str, key: &str) -> Option<Value> {
        self.0.get_in(namespace, key)
    }

    fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.0.changes()
    }
}

/// The state directory when `--prefix` is not given: `/var/lib/tend` for root, else
/// `$XDG_CACHE_HOME/tend`, else `~/.cache/tend`.
pub fn default_state_dir() -> PathBuf {
    if is_root() {
        return PathBuf::from("/var/lib/tend");
    }
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(x).join("tend");
    }
    if let Some(h) = std::env::var_os("HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(h).join(".cache/tend");
    }
    std::env::temp_dir().join("tend")
}

fn is_root() -> bool {
    // The effective uid, read from /proc to avoid a libc dependency in the app.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("Uid:").and_then(|r| r.split_whitespace().nth(1).map(str::to_string)))
        })
        .is_some_and(|uid| uid == "0")
}
