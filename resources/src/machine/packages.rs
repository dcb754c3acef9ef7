//! The package manager as `pkg` sees it: [`PackageManager`], dpkg/apt, and an in-memory fake.

#[cfg(any(test, feature = "fakes"))]
use std::collections::BTreeMap;
#[cfg(any(test, feature = "fakes"))]
use std::sync::Mutex;

use async_trait::async_trait;
use engine::ResError;

use super::{run, run_ok};

#[async_trait]
pub trait PackageManager: Send + Sync {
    /// The installed version, if installed.
    async fn installed(&self, name: &str) -> Result<Option<String>, ResError>;
    /// The version an install would pick, if the package is known.
    async fn candidate(&self, name: &str) -> Result<Option<String>, ResError>;
    async fn install(&self, name: &str, version: Option<&str>, allow_downgrade: bool) -> Result<(), ResError>;
    async fn remove(&self, name: &str) -> Result<(), ResError>;
}

/// dpkg for queries, apt-get for changes.
pub struct Apt;

#[async_trait]
impl PackageManager for Apt {
    async fn installed(&self, name: &str) -> Result<Option<String>, ResError> {
        let out = run(&["dpkg-query", "-W", "-f", "${Status}\t${Version}", name]).await?;
        if !out.success() {
            return Ok(None);
        }
        let (status, version) = out.stdout.split_once('\t').unwrap_or(("", ""));
        Ok(status.ends_with(" installed").then(|| version.trim().to_string()))
    }
    async fn candidate(&self, name: &str) -> Result<Option<String>, ResError> {
        let out = run(&["apt-cache", "policy", name]).await?;
        Ok(out
            .stdout
            .lines()
            .find_map(|l| l.trim().strip_prefix("Candidate:"))
            .map(|v| v.trim().to_string())
            .filter(|v| v != "(none)"))
    }
    async fn install(&self, name: &str, version: Option<&str>, allow_downgrade: bool) -> Result<(), ResError> {
        let target = version.map(|v| format!("{name}={v}")).unwrap_or_else(|| name.to_string());
        let mut argv = vec!["apt-get", "install", "-y", "-q"];
        if allow_downgrade {
            argv.push("--allow-downgrades");
        }
        argv.push(&target);
        run_ok(&argv).await.map(drop)
    }
    async fn remove(&self, name: &str) -> Result<(), ResError> {
        run_ok(&["apt-get", "remove", "-y", "-q", name]).await.map(drop)
    }
}

/// An in-memory package manager: `available` maps names to the candidate version.
#[derive(Default)]
#[cfg(any(test, feature = "fakes"))]
pub struct FakePackages {
    pub available: Mutex<BTreeMap<String, String>>,
    pub installed: Mutex<BTreeMap<String, String>>,
}

#[cfg(any(test, feature = "fakes"))]
impl FakePackages {
    pub fn offer(&self, name: &str, version: &str) {
        self.available.lock().unwrap_or_else(|e| e.into_inner()).insert(name.into(), version.into());
    }
    pub fn installed_version(&self, name: &str) -> Option<String> {
        self.installed.lock().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
    }
}

#[async_trait]
#[cfg(any(test, feature = "fakes"))]
impl PackageManager for FakePackages {
    async fn installed(&self, name: &str) -> Result<Option<String>, ResError> {
        Ok(self.installed_version(name))
    }
    async fn candidate(&self, name: &str) -> Result<Option<String>, ResError> {
        Ok(self.available.lock().unwrap_or_else(|e| e.into_inner()).get(name).cloned())
    }
    async fn install(&self, name: &str, version: Option<&str>, _: bool) -> Result<(), ResError> {
        let candidate =
            self.candidate(name).await?.ok_or_else(|| ResError::new(format!("unable to locate package {name}")))?;
        let version = version.unwrap_or(&candidate).to_string();
        self.installed.lock().unwrap_or_else(|e| e.into_inner()).insert(name.into(), version);
        Ok(())
    }
    async fn remove(&self, name: &str) -> Result<(), ResError> {
        self.installed.lock().unwrap_or_else(|e| e.into_inner()).remove(name);
        Ok(())
    }
}
