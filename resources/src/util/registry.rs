//! An in-process membership list standing in for mgmt's autogrouping: a parent resource
//! (an http or tftp server, an http ui) finds its children by name at use time, and each
//! child is listed for as long as it holds its [`Registration`].
//!
//! A child names the parent it wants (mgmt's `server` / `path` param) or none (`""`:
//! every parent of the registry sees it). Because parents look members up on every use,
//! the engine may start parents and children in any order.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// Members of type `T` (usually a trait object), each tagged with the parent it wants.
pub struct Registry<T: ?Sized> {
    members: Mutex<Vec<Member<T>>>,
    next: AtomicU64,
}

struct Member<T: ?Sized> {
    id: u64,
    parent: String,
    item: Arc<T>,
}

impl<T: ?Sized + Send + Sync + 'static> Registry<T> {
    pub fn new() -> Arc<Registry<T>> {
        Arc::new(Registry { members: Mutex::new(Vec::new()), next: AtomicU64::new(1) })
    }

    /// Lists `item` under `parent` (`""`: any parent) until the returned guard drops.
    pub fn register(self: &Arc<Self>, parent: &str, item: Arc<T>) -> Registration<T> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().push(Member { id, parent: parent.to_string(), item });
        Registration { registry: Arc::downgrade(self), id }
    }

    /// The watch of a member served on demand (a route, a TFTP file): listed under its
    /// server `parent` for as long as it runs; its one event says it is in place.
    pub fn listed_while_running(
        self: &Arc<Self>,
        parent: String,
        item: Arc<T>,
        ctx: engine::WatchCtx,
    ) -> futures::future::BoxFuture<'static, Result<(), engine::ResError>> {
        let registry = self.clone();
        Box::pin(async move {
            let _listed = registry.register(&parent, item);
            ctx.event();
            ctx.cancelled().await;
            Ok(())
        })
    }

    /// The members a parent called `name` serves, oldest first.
    pub fn members(&self, name: &str) -> Vec<Arc<T>> {
        self.lock().iter().filter(|m| m.parent.is_empty() || m.parent == name).map(|m| m.item.clone()).collect()
    }

    /// How many members are listed, whatever their parent.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Member<T>>> {
        self.members.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Keeps one member listed; dropping it removes the member.
pub struct Registration<T: ?Sized + Send + Sync + 'static> {
    registry: Weak<Registry<T>>,
    id: u64,
}

impl<T: ?Sized + Send + Sync + 'static> Drop for Registration<T> {
    fn drop(&mut self) {
        if let Some(registry) = self.registry.upgrade() {
            registry.lock().retain(|m| m.id != self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_follow_their_registrations_and_parents() {
        let reg: Arc<Registry<str>> = Registry::new();
        let any = reg.register("", Arc::from("any"));
        let mine = reg.register(":8080", Arc::from("mine"));
        let other = reg.register("other", Arc::from("other"));
        let names = |n: &str| reg.members(n).iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(names(":8080"), ["any", "mine"]);
        assert_eq!(names("other"), ["any", "other"]);
        drop(any);
        assert_eq!(names(":8080"), ["mine"]);
        drop((mine, other));
        assert!(reg.is_empty());
    }
}
