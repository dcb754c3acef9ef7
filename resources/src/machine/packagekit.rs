//! PackageKit over D-Bus (zbus) as a [`PackageManager`]: the backend of machines that are
//! not Debian's (dnf, zypper, pacman behind PackageKit), chosen at start when the system
//! bus has PackageKit ([`PackageKit::available`]). One `Resolve` answers for every package
//! of a group; installs are one `InstallPackages` and removals one `RemovePackages`. The
//! watch follows PackageKit's `UpdatesChanged` and `TransactionListChanged` signals (a
//! change made through PackageKit by anyone) and, where it exists, dpkg's status file (a
//! change made by `apt` or `dpkg` directly, which PackageKit does not signal).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use engine::ResError;
use futures::StreamExt as _;
use futures::future::BoxFuture;
use zbus::{Connection, OwnedObjectPath};

use super::packages::{PackageManager, PkgStatus, Transaction};

/// PackageKit's filter bits (`1 << PK_FILTER_ENUM_*`).
mod filter {
    pub const INSTALLED: u64 = 1 << 2;
    pub const NOT_INSTALLED: u64 = 1 << 3;
    pub const FREE: u64 = 1 << 8;
    pub const SUPPORTED: u64 = 1 << 12;
    pub const NEWEST: u64 = 1 << 16;
    pub const ARCH: u64 = 1 << 18;
}

/// PackageKit's transaction flag bits (`1 << PK_TRANSACTION_FLAG_ENUM_*`).
mod flag {
    pub const ONLY_TRUSTED: u64 = 1 << 1;
    pub const ALLOW_DOWNGRADE: u64 = 1 << 6;
}

/// `PK_INFO_ENUM_INSTALLED`: a `Package` signal about an installed package.
const INFO_INSTALLED: u32 = 1;

/// How long a query may take; a change may take much longer (downloads).
const QUERY_TIMEOUT: Duration = Duration::from_secs(120);
const CHANGE_TIMEOUT: Duration = Duration::from_secs(3600);

#[zbus::proxy(
    interface = "org.freedesktop.PackageKit",
    default_service = "org.freedesktop.PackageKit",
    default_path = "/org/freedesktop/PackageKit"
)]
trait Daemon {
    fn create_transaction(&self) -> zbus::Result<OwnedObjectPath>;
    #[zbus(property)]
    fn backend_name(&self) -> zbus::Result<String>;
    #[zbus(signal)]
    fn updates_changed(&self) -> zbus::Result<()>;
    #[zbus(signal)]
    fn transaction_list_changed(&self, transactions: Vec<String>) -> zbus::Result<()>;
}

#[zbus::proxy(interface = "org.freedesktop.PackageKit.Transaction", default_service = "org.freedesktop.PackageKit")]
trait Tx {
    fn resolve(&self, filter: u64, packages: &[&str]) -> zbus::Result<()>;
    fn get_details(&self, package_ids: &[&str]) -> zbus::Result<()>;
    fn install_packages(&self, flags: u64, package_ids: &[&str]) -> zbus::Result<()>;
    fn install_files(&self, flags: u64, full_paths: &[&str]) -> zbus::Result<()>;
    fn remove_packages(&self, flags: u64, package_ids: &[&str], allow_deps: bool, autoremove: bool)
    -> zbus::Result<()>;
    #[zbus(signal)]
    fn package(&self, info: u32, package_id: String, summary: String) -> zbus::Result<()>;
    #[zbus(signal)]
    fn details(&self, data: std::collections::HashMap<String, zbus::OwnedVariant>) -> zbus::Result<()>;
    #[zbus(signal)]
    fn error_code(&self, code: u32, details: String) -> zbus::Result<()>;
    #[zbus(signal)]
    fn finished(&self, exit: u32, runtime: u32) -> zbus::Result<()>;
}

/// A package as PackageKit names it: `name;version;arch;data`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackageId {
    pub id: String,
    pub name: String,
    pub version: String,
    pub installed: bool,
}

impl PackageId {
    fn parse(info: u32, id: &str) -> Option<PackageId> {
        let mut parts = id.split(';');
        let (name, version) = (parts.next()?, parts.next()?);
        let data = id.rsplit(';').next().unwrap_or("");
        // `installed` info, or a data field saying so (`installed:…`, `auto:local`).
        let installed = info == INFO_INSTALLED || data.starts_with("installed") || data.ends_with(":local");
        Some(PackageId { id: id.to_string(), name: name.to_string(), version: version.to_string(), installed })
    }
}

/// What one transaction said.
#[derive(Debug, Default)]
struct Said {
    packages: Vec<PackageId>,
    details: Vec<BTreeMap<String, String>>,
}

/// PackageKit on a system bus.
pub struct PackageKit {
    /// The bus address; `None`: the environment's, else the usual system bus.
    address: Option<String>,
    /// dpkg's status file, watched too when it exists.
    dpkg_status: PathBuf,
}

impl PackageKit {
    /// PackageKit on the bus at `address` (`unix:path=…`), or the system bus.
    pub fn at(address: Option<String>) -> PackageKit {
        PackageKit { address, dpkg_status: PathBuf::from("/var/lib/dpkg/status") }
    }

    /// Whether PackageKit answers on the bus (started by bus activation if need be), and
    /// which of its backends it runs.
    pub async fn available(&self) -> Option<String> {
        let conn = self.connect().await.ok()?;
        let daemon = DaemonProxy::new(&conn).await.ok()?;
        tokio::time::timeout(Duration::from_secs(5), daemon.backend_name()).await.ok()?.ok()
    }

    async fn connect(&self) -> Result<Connection, ResError> {
        let address = self.address.clone().unwrap_or_else(|| {
            std::env::var("DBUS_SYSTEM_BUS_ADDRESS").unwrap_or_else(|_| "unix:path=/run/dbus/system_bus_socket".into())
        });
        zbus::connection::Builder::address(address.as_str())
            .method_timeout(QUERY_TIMEOUT)
            .build()
            .await
            .map_err(|e| ResError::transient(format!("PackageKit: no system bus at {address} ({e})")))
    }

    /// Runs one transaction: `call` starts it on a fresh transaction object; its signals
    /// are collected until `Finished`. An `ErrorCode` is the error.
    async fn transaction<F>(&self, what: &str, within: Duration, call: F) -> Result<Said, ResError>
    where
        F: for<'a> FnOnce(&'a TxProxy<'static>) -> BoxFuture<'a, zbus::Result<()>>,
    {
        let fail = |e: zbus::Error| ResError::transient(format!("PackageKit: {what}: {e}"));
        let conn = self.connect().await?;
        let daemon = DaemonProxy::new(&conn).await.map_err(fail)?;
        let path = daemon.create_transaction().await.map_err(fail)?;
        let tx = TxProxy::builder(&conn)
            .path(path)
            .cache_properties(zbus::proxy::CacheProperties::No)
            .build()
            .await
            .map_err(fail)?;
        let mut packages = tx.receive_package().await.map_err(fail)?;
        let mut details = tx.receive_details().await.map_err(fail)?;
        let mut errors = tx.receive_error_code().await.map_err(fail)?;
        let mut finished = tx.receive_finished().await.map_err(fail)?;
        call(&tx).await.map_err(|e| ResError::new(format!("PackageKit: {what}: {e}")))?;
        let mut said = Said::default();
        let mut error: Option<String> = None;
        let take = |said: &mut Said, error: &mut Option<String>, signal: Signal| match signal {
            Signal::Package(p) => {
                if let Ok(a) = p.args()
                    && let Some(id) = PackageId::parse(a.info, &a.package_id)
                {
                    said.packages.push(id);
                }
            }
            Signal::Details(d) => {
                if let Ok(a) = d.args() {
                    said.details.push(a.data.iter().map(|(k, v)| (k.clone(), shown(v))).collect());
                }
            }
            Signal::Error(e) => {
                if let Ok(a) = e.args() {
                    error.get_or_insert(a.details.clone());
                }
            }
        };
        let collect = async {
            loop {
                // Biased, `Finished` last: what came before it is taken first.
                tokio::select! {
                    biased;
                    Some(p) = packages.next() => take(&mut said, &mut error, Signal::Package(p)),
                    Some(d) = details.next() => take(&mut said, &mut error, Signal::Details(d)),
                    Some(e) = errors.next() => take(&mut said, &mut error, Signal::Error(e)),
                    _ = finished.next() => break,
                }
            }
        };
        tokio::time::timeout(within, collect)
            .await
            .map_err(|_| ResError::transient(format!("PackageKit: {what}: no answer within {} s", within.as_secs())))?;
        // Signals queued before `Finished` may reach their streams after it.
        loop {
            let next = futures::select_biased! {
                p = packages.next() => p.map(Signal::Package),
                d = details.next() => d.map(Signal::Details),
                e = errors.next() => e.map(Signal::Error),
                default => None,
            };
            match next {
                Some(signal) => take(&mut said, &mut error, signal),
                None => break,
            }
        }
        match error {
            Some(e) => Err(ResError::new(format!("PackageKit: {what}: {e}"))),
            None => Ok(said),
        }
    }

    /// Every package PackageKit knows by these names, with `filter`.
    async fn resolve(&self, names: &[&str], filter: u64) -> Result<Vec<PackageId>, ResError> {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let said = self
            .transaction("resolve", QUERY_TIMEOUT, move |tx| {
                Box::pin(async move {
                    let names: Vec<&str> = names.iter().map(String::as_str).collect();
                    tx.resolve(filter, &names).await
                })
            })
            .await?;
        Ok(said.packages)
    }

    /// PackageKit's details of a package (`summary`, `size`, `license`, …), as text.
    pub async fn details(&self, id: &str) -> Result<BTreeMap<String, String>, ResError> {
        let id = id.to_string();
        let said = self
            .transaction("get details", QUERY_TIMEOUT, move |tx| Box::pin(async move { tx.get_details(&[&id]).await }))
            .await?;
        Ok(said.details.into_iter().next().unwrap_or_default())
    }

    /// Installs a package file (`.deb`, `.rpm`) through PackageKit (not a repository).
    pub async fn install_file(&self, path: &std::path::Path) -> Result<(), ResError> {
        let path = path.display().to_string();
        self.transaction("install a file", CHANGE_TIMEOUT, move |tx| {
            Box::pin(async move { tx.install_files(0, &[&path]).await })
        })
        .await
        .map(drop)
    }

    /// The ids of the installed packages named.
    pub async fn installed_ids(&self, names: &[&str]) -> Result<Vec<PackageId>, ResError> {
        Ok(self.resolve(names, filter::INSTALLED | filter::ARCH).await?.into_iter().filter(|p| p.installed).collect())
    }
}

/// A details value as text.
fn shown(v: &zbus::OwnedVariant) -> String {
    use zbus::Variant;
    match &**v {
        Variant::Str(s) => s.to_string(),
        Variant::U64(n) => n.to_string(),
        Variant::U32(n) => n.to_string(),
        other => format!("{other:?}"),
    }
}

/// A transaction's signal, as [`PackageKit::transaction`] collects them.
enum Signal {
    Package(Package),
    Details(Details),
    Error(ErrorCode),
}

#[async_trait]
impl PackageManager for PackageKit {
    fn name(&self) -> &'static str {
        "PackageKit"
    }

    async fn query(&self, names: &[&str], candidates: bool) -> Result<BTreeMap<String, PkgStatus>, ResError> {
        let filter = if candidates { filter::ARCH | filter::NEWEST } else { filter::ARCH | filter::INSTALLED };
        let found = self.resolve(names, filter).await?;
        let mut out: BTreeMap<String, PkgStatus> = BTreeMap::new();
        for name in names {
            let mine: Vec<&PackageId> = found.iter().filter(|p| p.name == *name).collect();
            let installed = mine.iter().find(|p| p.installed).map(|p| p.version.clone());
            let candidate = if candidates {
                // With the `newest` filter PackageKit lists one per name and arch, the last
                // the newest; only the installed one listed: it is the newest there is.
                let available = mine.iter().rev().find(|p| !p.installed).map(|p| p.version.clone());
                available.or_else(|| installed.clone())
            } else {
                None
            };
            out.insert(name.to_string(), PkgStatus { installed, candidate });
        }
        Ok(out)
    }

    async fn apply(&self, tx: &Transaction) -> Result<(), ResError> {
        let mut flags = 0;
        if !tx.allow_untrusted {
            flags |= flag::ONLY_TRUSTED;
        }
        if tx.allow_downgrade {
            flags |= flag::ALLOW_DOWNGRADE;
        }
        if !tx.install.is_empty() {
            let mut filter = filter::ARCH | filter::NOT_INSTALLED;
            if !tx.allow_nonfree {
                filter |= filter::FREE;
            }
            if !tx.allow_unsupported {
                filter |= filter::SUPPORTED;
            }
            let names: Vec<&str> = tx.install.iter().map(|(n, _)| n.as_str()).collect();
            let found = self.resolve(&names, filter).await?;
            let mut ids = Vec::with_capacity(names.len());
            for (name, version) in &tx.install {
                let mine: Vec<&PackageId> = found.iter().filter(|p| p.name == *name).collect();
                let pick = match version {
                    Some(v) => mine.iter().find(|p| p.version == *v).copied(),
                    None => mine.last().copied(),
                };
                let Some(p) = pick else {
                    let what = version.as_ref().map_or_else(|| name.clone(), |v| format!("{name}={v}"));
                    return Err(ResError::new(format!(
                        "PackageKit has no package {what} to install (free and supported only, unless allownonfree or allowunsupported)"
                    )));
                };
                ids.push(p.id.clone());
            }
            self.transaction("install", CHANGE_TIMEOUT, move |t| {
                Box::pin(async move {
                    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                    t.install_packages(flags, &ids).await
                })
            })
            .await?;
        }
        if !tx.remove.is_empty() {
            let names: Vec<&str> = tx.remove.iter().map(String::as_str).collect();
            let ids: Vec<String> = self.installed_ids(&names).await?.into_iter().map(|p| p.id).collect();
            if !ids.is_empty() {
                self.transaction("remove", CHANGE_TIMEOUT, move |t| {
                    Box::pin(async move {
                        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                        t.remove_packages(flags, &ids, true, false).await
                    })
                })
                .await?;
            }
        }
        Ok(())
    }

    fn watch(&self, ctx: engine::WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let address = self.address.clone();
        let dpkg = self.dpkg_status.clone();
        Box::pin(async move {
            let pk = PackageKit { address, dpkg_status: dpkg.clone() };
            let conn = pk.connect().await?;
            let fail = |e: zbus::Error| ResError::transient(format!("PackageKit: watch: {e}"));
            let daemon = DaemonProxy::new(&conn).await.map_err(fail)?;
            let mut updates = daemon.receive_updates_changed().await.map_err(fail)?;
            let mut list = daemon.receive_transaction_list_changed().await.map_err(fail)?;
            let files = if dpkg.exists() { vec![dpkg] } else { Vec::new() };
            let mut dpkg_watch = crate::util::watch::watch_loop(files, false, ctx.clone());
            ctx.event();
            loop {
                // A stream that ends means the bus went away: the engine watches again.
                let signal = tokio::select! {
                    s = updates.next() => s.map(drop),
                    // A transaction that ended (the list got shorter) may have changed packages.
                    s = list.next() => s.map(drop),
                    done = &mut dpkg_watch => return done,
                    _ = ctx.cancelled() => return Ok(()),
                };
                match signal {
                    Some(()) => ctx.event(),
                    None => return Err(ResError::transient("PackageKit: the bus closed")),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_ids_read_name_version_and_whether_installed() {
        let p = PackageId::parse(1, "bash;5.2.15-2+b8;amd64;installed:debian-bookworm-main").unwrap();
        assert_eq!((p.name.as_str(), p.version.as_str(), p.installed), ("bash", "5.2.15-2+b8", true));
        let p = PackageId::parse(2, "hello;2.10-3;amd64;debian-bookworm-main").unwrap();
        assert!(!p.installed);
        let p = PackageId::parse(2, "tend-test-tiny;1.0;all;manual:local").unwrap();
        assert!(p.installed, "a local package is installed");
        assert_eq!(PackageId::parse(1, "nonsense"), None);
    }
}
