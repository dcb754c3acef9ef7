//! Which package manager `pkg` drives on this machine, chosen once, at the first use (a
//! program without `pkg` never touches D-Bus for it): PackageKit where it answers on the
//! system bus, as mgmt does, else dpkg/apt. `TEND_PACKAGE_BACKEND=apt` or `=packagekit`
//! decides instead.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use engine::ResError;
use futures::future::BoxFuture;
use tokio::sync::OnceCell;

use super::packagekit::PackageKit;
use super::packages::{Apt, PackageManager, PkgStatus, Transaction};

/// The machine's package manager, chosen at its first use.
#[derive(Default)]
pub struct Chosen {
    backend: Arc<OnceCell<Arc<dyn PackageManager>>>,
}

/// What `TEND_PACKAGE_BACKEND` asks for, if anything.
fn asked() -> Option<String> {
    std::env::var("TEND_PACKAGE_BACKEND").ok().map(|s| s.to_ascii_lowercase()).filter(|s| !s.is_empty())
}

async fn choose() -> Arc<dyn PackageManager> {
    match asked().as_deref() {
        Some("apt") => return Arc::new(Apt::default()),
        Some("packagekit") => return Arc::new(PackageKit::at(None)),
        Some(other) => {
            tracing::warn!(
                asked = other,
                "TEND_PACKAGE_BACKEND is neither `apt` nor `packagekit`; choosing by what the machine has"
            );
        }
        None => {}
    }
    let pk = PackageKit::at(None);
    match pk.available().await {
        Some(backend) => {
            tracing::info!(backend, "packages go through PackageKit");
            Arc::new(pk)
        }
        None => {
            tracing::info!("PackageKit does not answer on the system bus; packages go through dpkg and apt");
            Arc::new(Apt::default())
        }
    }
}

impl Chosen {
    async fn get(&self) -> &Arc<dyn PackageManager> {
        self.backend.get_or_init(choose).await
    }
}

#[async_trait]
impl PackageManager for Chosen {
    fn name(&self) -> &'static str {
        self.backend.get().map_or("the package manager", |b| b.name())
    }

    async fn query(&self, names: &[&str], candidates: bool) -> Result<BTreeMap<String, PkgStatus>, ResError> {
        self.get().await.query(names, candidates).await
    }

    async fn apply(&self, tx: &Transaction) -> Result<(), ResError> {
        self.get().await.apply(tx).await
    }

    fn cannot_honour(&self) -> &'static [&'static str] {
        self.backend.get().map_or(&[], |b| b.cannot_honour())
    }

    fn watch(&self, ctx: engine::WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let backend = self.backend.clone();
        Box::pin(async move { backend.get_or_init(choose).await.clone().watch(ctx).await })
    }
}
