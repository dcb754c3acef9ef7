//! Mounting as `mount` sees it: [`Mounter`], `mount`/`umount`, and an in-memory fake.

#[cfg(any(test, feature = "fakes"))]
use std::collections::BTreeSet;
#[cfg(any(test, feature = "fakes"))]
use std::sync::Mutex;

use async_trait::async_trait;
use engine::{IoAt, ResError};

use super::run_ok;

#[async_trait]
pub trait Mounter: Send + Sync {
    async fn is_mounted(&self, point: &str) -> Result<bool, ResError>;
    /// Mounts `point` as described by the fstab entry.
    async fn mount(&self, point: &str) -> Result<(), ResError>;
    async fn unmount(&self, point: &str) -> Result<(), ResError>;
}

/// `mount`/`umount` and `/proc/self/mounts`.
pub struct MountTools;

#[async_trait]
impl Mounter for MountTools {
    async fn is_mounted(&self, point: &str) -> Result<bool, ResError> {
        let mounts = std::fs::read_to_string("/proc/self/mounts").at("/proc/self/mounts")?;
        let point = point.trim_end_matches('/');
        Ok(mounts.lines().any(|l| l.split_whitespace().nth(1) == Some(if point.is_empty() { "/" } else { point })))
    }
    async fn mount(&self, point: &str) -> Result<(), ResError> {
        run_ok(&["mount", point]).await.map(drop)
    }
    async fn unmount(&self, point: &str) -> Result<(), ResError> {
        run_ok(&["umount", point]).await.map(drop)
    }
}

#[derive(Default)]
#[cfg(any(test, feature = "fakes"))]
pub struct FakeMounts {
    pub mounted: Mutex<BTreeSet<String>>,
}

#[async_trait]
#[cfg(any(test, feature = "fakes"))]
impl Mounter for FakeMounts {
    async fn is_mounted(&self, point: &str) -> Result<bool, ResError> {
        Ok(self.mounted.lock().unwrap_or_else(|e| e.into_inner()).contains(point))
    }
    async fn mount(&self, point: &str) -> Result<(), ResError> {
        self.mounted.lock().unwrap_or_else(|e| e.into_inner()).insert(point.into());
        Ok(())
    }
    async fn unmount(&self, point: &str) -> Result<(), ResError> {
        self.mounted.lock().unwrap_or_else(|e| e.into_inner()).remove(point);
        Ok(())
    }
}
