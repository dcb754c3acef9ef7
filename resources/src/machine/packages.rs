//! The package manager as `pkg` sees it: [`PackageManager`], a query of many packages at
//! once and one transaction for many changes; dpkg/apt ([`Apt`]), PackageKit
//! (`packagekit.rs`), and an in-memory fake that counts what it is asked.

use std::collections::BTreeMap;
use std::path::PathBuf;
#[cfg(any(test, feature = "fakes"))]
use std::sync::Mutex;

use async_trait::async_trait;
use engine::ResError;
use futures::future::BoxFuture;

use super::{run, run_ok};

/// What the machine has of one package.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PkgStatus {
    /// The installed version, if installed.
    pub installed: Option<String>,
    /// The version an install would pick, if the package is known (asked only when a
    /// `newest` needs it).
    pub candidate: Option<String>,
}

/// One transaction: every change `pkg` resources ask for at once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Transaction {
    /// Packages to install or upgrade, each with the exact version asked for, if any.
    pub install: Vec<(String, Option<String>)>,
    pub remove: Vec<String>,
    pub allow_downgrade: bool,
    /// Install packages that cannot be authenticated (unsigned, or from an untrusted
    /// source).
    pub allow_untrusted: bool,
    /// Install packages that are not free software (only PackageKit can tell).
    pub allow_nonfree: bool,
    /// Install packages the distribution does not support (only PackageKit can tell).
    pub allow_unsupported: bool,
}

impl Transaction {
    pub fn is_empty(&self) -> bool {
        self.install.is_empty() && self.remove.is_empty()
    }
}

#[async_trait]
pub trait PackageManager: Send + Sync {
    /// The backend's name, for messages (`apt`, `PackageKit`).
    fn name(&self) -> &'static str;

    /// What the machine has of each of `names`, in one query; the candidate version only
    /// when `candidates`. A package the system does not know is absent from the map or
    /// has neither version.
    async fn query(&self, names: &[&str], candidates: bool) -> Result<BTreeMap<String, PkgStatus>, ResError>;

    /// Makes every change of `tx` in one transaction.
    async fn apply(&self, tx: &Transaction) -> Result<(), ResError>;

    /// Which `allow*` flags this backend cannot honour (`allownonfree` …), for the kind to
    /// say so; the others it honours.
    fn cannot_honour(&self) -> &'static [&'static str] {
        &[]
    }

    /// A watch that fires when the installed packages may have changed (dpkg's status
    /// file, PackageKit's `Changed` signal): an event once listening, then one per change.
    fn watch(&self, ctx: engine::WatchCtx) -> BoxFuture<'static, Result<(), ResError>>;
}

/// dpkg for queries, apt-get for changes; watched through dpkg's status file.
pub struct Apt {
    /// dpkg's status file, rewritten on every change of the installed packages.
    pub status: PathBuf,
}

impl Default for Apt {
    fn default() -> Apt {
        Apt { status: PathBuf::from("/var/lib/dpkg/status") }
    }
}

/// The installed versions in `dpkg-query -W -f '${Package}\t${Status}\t${Version}\n'`'s
/// output.
fn parse_dpkg_query(out: &str) -> BTreeMap<String, Option<String>> {
    out.lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            let (name, status, version) = (f.next()?, f.next()?, f.next()?);
            let name = name.split(':').next().unwrap_or(name);
            Some((name.to_string(), status.ends_with(" installed").then(|| version.trim().to_string())))
        })
        .collect()
}

/// The candidate version of each package in `apt-cache policy A B …`'s output: a block per
/// package, `NAME:` then indented lines, one of them `Candidate: VERSION` (`(none)`: none).
fn parse_policy(out: &str) -> BTreeMap<String, Option<String>> {
    let mut found = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in out.lines() {
        if !line.starts_with(' ') && line.ends_with(':') {
            let name = line.trim_end_matches(':');
            current = Some(name.split(':').next().unwrap_or(name).to_string());
        } else if let (Some(name), Some(v)) = (&current, line.trim().strip_prefix("Candidate:")) {
            let v = v.trim();
            found.insert(name.clone(), (v != "(none)").then(|| v.to_string()));
        }
    }
    found
}

/// `apt-get install`'s arguments for `tx`: one command for every change (`NAME-` removes).
fn apt_argv(tx: &Transaction) -> Vec<String> {
    let mut argv: Vec<String> = ["apt-get", "install", "-y", "-q"].map(String::from).to_vec();
    if tx.allow_downgrade {
        argv.push("--allow-downgrades".into());
    }
    if tx.allow_untrusted {
        argv.push("--allow-unauthenticated".into());
    }
    argv.extend(tx.install.iter().map(|(n, v)| v.as_ref().map_or_else(|| n.clone(), |v| format!("{n}={v}"))));
    argv.extend(tx.remove.iter().map(|n| format!("{n}-")));
    argv
}

#[async_trait]
impl PackageManager for Apt {
    fn name(&self) -> &'static str {
        "apt"
    }

    async fn query(&self, names: &[&str], candidates: bool) -> Result<BTreeMap<String, PkgStatus>, ResError> {
        let mut argv = vec!["dpkg-query", "-W", "-f", "${Package}\t${Status}\t${Version}\n"];
        argv.extend(names);
        // dpkg-query fails for a name it never saw, after listing the others.
        let out = run(&argv).await?;
        let mut found: BTreeMap<String, PkgStatus> = parse_dpkg_query(&out.stdout)
            .into_iter()
            .map(|(n, installed)| (n, PkgStatus { installed, candidate: None }))
            .collect();
        if candidates {
            let mut argv = vec!["apt-cache", "policy"];
            argv.extend(names);
            for (name, candidate) in parse_policy(&run(&argv).await?.stdout) {
                found.entry(name).or_default().candidate = candidate;
            }
        }
        Ok(found)
    }

    async fn apply(&self, tx: &Transaction) -> Result<(), ResError> {
        let argv = apt_argv(tx);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        run_ok(&argv).await.map(drop)
    }

    fn cannot_honour(&self) -> &'static [&'static str] {
        &["allownonfree", "allowunsupported"]
    }

    fn watch(&self, ctx: engine::WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        crate::util::watch::watch_loop(vec![self.status.clone()], false, ctx)
    }
}

/// An in-memory package manager: `available` maps names to the candidate version. It
/// counts queries and transactions, and touches `status` (when set) on every change, as
/// dpkg rewrites its status file.
#[derive(Default)]
#[cfg(any(test, feature = "fakes"))]
pub struct FakePackages {
    pub available: Mutex<BTreeMap<String, String>>,
    pub installed: Mutex<BTreeMap<String, String>>,
    pub queries: std::sync::atomic::AtomicUsize,
    pub transactions: std::sync::atomic::AtomicUsize,
    /// Packages whose install fails (as a package with a broken maintainer script).
    pub broken: Mutex<std::collections::BTreeSet<String>>,
    pub status: Mutex<Option<PathBuf>>,
}

#[cfg(any(test, feature = "fakes"))]
impl FakePackages {
    pub fn offer(&self, name: &str, version: &str) {
        self.available.lock().unwrap_or_else(|e| e.into_inner()).insert(name.into(), version.into());
    }
    pub fn installed_version(&self, name: &str) -> Option<String> {
        self.installed.lock().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
    }
    /// Removes `name` behind tend's back (as `apt-get remove` by hand would).
    pub fn remove_by_hand(&self, name: &str) {
        self.installed.lock().unwrap_or_else(|e| e.into_inner()).remove(name);
        self.touch();
    }
    fn touch(&self) {
        if let Some(path) = self.status.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            let count = self.installed.lock().unwrap_or_else(|e| e.into_inner()).len();
            let _ignored = std::fs::write(path, format!("{count} installed\n"));
        }
    }
}

#[async_trait]
#[cfg(any(test, feature = "fakes"))]
impl PackageManager for FakePackages {
    fn name(&self) -> &'static str {
        "fake"
    }

    async fn query(&self, names: &[&str], candidates: bool) -> Result<BTreeMap<String, PkgStatus>, ResError> {
        self.queries.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let available = self.available.lock().unwrap_or_else(|e| e.into_inner());
        Ok(names
            .iter()
            .map(|n| {
                let candidate = candidates.then(|| available.get(*n).cloned()).flatten();
                (n.to_string(), PkgStatus { installed: self.installed_version(n), candidate })
            })
            .collect())
    }

    async fn apply(&self, tx: &Transaction) -> Result<(), ResError> {
        self.transactions.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let available = self.available.lock().unwrap_or_else(|e| e.into_inner()).clone();
        // All or nothing, as apt's one transaction.
        let broken = self.broken.lock().unwrap_or_else(|e| e.into_inner()).clone();
        for (name, _) in &tx.install {
            if !available.contains_key(name) {
                return Err(ResError::new(format!("E: Unable to locate package {name}")));
            }
            if broken.contains(name) {
                return Err(ResError::new(format!("E: Sub-process /usr/bin/dpkg returned an error code (1) ({name})")));
            }
        }
        {
            let mut installed = self.installed.lock().unwrap_or_else(|e| e.into_inner());
            for (name, version) in &tx.install {
                let version = version.clone().unwrap_or_else(|| available[name].clone());
                installed.insert(name.clone(), version);
            }
            for name in &tx.remove {
                installed.remove(name);
            }
        }
        self.touch();
        Ok(())
    }

    fn watch(&self, ctx: engine::WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let status = self.status.lock().unwrap_or_else(|e| e.into_inner()).clone();
        crate::util::watch::watch_loop(status.into_iter().collect(), false, ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dpkg_query_and_policy_output_read_per_package() {
        let q = "bash\tinstall ok installed\t5.2.15-2+b7\nvim\tdeinstall ok config-files\t2:9.0\nlibc6:amd64\tinstall ok installed\t2.36\n";
        let got = parse_dpkg_query(q);
        assert_eq!(got["bash"].as_deref(), Some("5.2.15-2+b7"));
        assert_eq!(got["vim"], None, "config files only is not installed");
        assert_eq!(got["libc6"].as_deref(), Some("2.36"), "the architecture is not part of the name");
        let p = "bash:\n  Installed: 5.2\n  Candidate: 5.3\n  Version table:\n *** 5.2 500\nnosuch:\n  Installed: (none)\n  Candidate: (none)\n";
        let got = parse_policy(p);
        assert_eq!(got["bash"].as_deref(), Some("5.3"));
        assert_eq!(got["nosuch"], None);
    }

    #[test]
    fn one_apt_command_installs_and_removes_everything() {
        let tx = Transaction {
            install: vec![("a".into(), None), ("b".into(), Some("1.2".into()))],
            remove: vec!["c".into()],
            allow_untrusted: true,
            ..Default::default()
        };
        assert_eq!(apt_argv(&tx), ["apt-get", "install", "-y", "-q", "--allow-unauthenticated", "a", "b=1.2", "c-"]);
    }
}
