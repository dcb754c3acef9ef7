//! `Meta:reverse` across restarts: the pending reversals kept on disk ([`Undo`]), each as
//! the record its resource gives ([`crate::Resource::record`]) and built again after a
//! restart by the binary ([`Revive`]); and the wrapper a reversal runs in ([`Reverting`]),
//! which lets go of its record once it has applied, so a reversal is made at most once
//! (after a crash between the two, at worst once more: it puts back the same state).
//!
//! The file, `<state>/engine/reversals.json`, is written whole (a temporary file, synced,
//! renamed over it, the directory synced) at each change, and readable only by its owner:
//! a reversal may hold a file's old content.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::future::BoxFuture;

use crate::key::{Payload, ResError, ResKey};
use crate::res::{ApplyCtx, InitCtx, Resource, Subscription, WatchCtx};

/// What builds a reversal again: its key and record in, the resource out.
pub type ReviveFn = dyn Fn(&ResKey, &str) -> Result<Box<dyn Resource>, ResError> + Send + Sync;

/// Builds a reversal again from its key and record (the binary knows the kinds).
#[derive(Clone)]
pub struct Revive(pub Arc<ReviveFn>);

impl std::fmt::Debug for Revive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Revive(..)")
    }
}

/// One pending reversal on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    kind: String,
    name: String,
    record: String,
}

/// The file's text for `entries`: an object by key of `{kind, name, record}`.
fn to_json(entries: &BTreeMap<String, Entry>) -> serde_json::Value {
    let by_key = entries
        .iter()
        .map(|(k, e)| (k.clone(), serde_json::json!({ "kind": e.kind, "name": e.name, "record": e.record })));
    serde_json::Value::Object(by_key.collect())
}

/// The entries of the file's text, or why it cannot be read.
fn from_json(bytes: &[u8]) -> Result<BTreeMap<String, Entry>, String> {
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let object = value.as_object().ok_or("not an object")?;
    let field = |e: &serde_json::Value, f: &str| {
        e.get(f).and_then(|v| v.as_str()).map(str::to_string).ok_or_else(|| format!("an entry without `{f}`"))
    };
    object
        .iter()
        .map(|(k, e)| {
            Ok((k.clone(), Entry { kind: field(e, "kind")?, name: field(e, "name")?, record: field(e, "record")? }))
        })
        .collect()
}

/// The pending reversals on disk, by key.
pub(crate) struct Undo {
    /// `None` when the file could not be read: it is then never written.
    path: Option<PathBuf>,
    entries: Mutex<BTreeMap<String, Entry>>,
}

impl Undo {
    /// The file under `state_dir`, and what it holds (nothing when absent). A file that
    /// cannot be read is said, kept (never overwritten while unread), and treated as empty.
    pub(crate) fn open(state_dir: &Path) -> (Arc<Undo>, Vec<(ResKey, String)>) {
        let path = state_dir.join("engine").join("reversals.json");
        let (entries, readable) = match std::fs::read(&path) {
            Ok(bytes) => match from_json(&bytes) {
                Ok(entries) => (entries, true),
                Err(e) => {
                    tracing::warn!(file = %path.display(), error = %e, "the pending reversals cannot be read; they are kept as they are and not applied");
                    (BTreeMap::new(), false)
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (BTreeMap::new(), true),
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "the pending reversals cannot be read; they are not applied");
                (BTreeMap::new(), false)
            }
        };
        let found = entries.values().map(|e| (ResKey::new(&e.kind, &e.name), e.record.clone())).collect();
        let path = readable.then_some(path);
        (Arc::new(Undo { path, entries: Mutex::new(entries) }), found)
    }

    /// Keeps `key`'s reversal (`record`) until it applied.
    pub(crate) fn remember(&self, key: &ResKey, record: String) {
        let entry = Entry { kind: key.kind.to_string(), name: key.name.to_string(), record };
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.get(&key.to_string()) != Some(&entry) {
            entries.insert(key.to_string(), entry);
            self.write(&entries);
        }
    }

    /// Lets go of `key`'s reversal (it applied).
    pub(crate) fn forget(&self, key: &ResKey) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.remove(&key.to_string()).is_some() {
            self.write(&entries);
        }
    }

    fn write(&self, entries: &BTreeMap<String, Entry>) {
        let Some(path) = &self.path else { return };
        if let Err(e) = write_whole(path, entries) {
            tracing::warn!(file = %path.display(), error = %e, "the pending reversals could not be saved; a restart would lose them");
        }
    }
}

fn write_whole(path: &Path, entries: &BTreeMap<String, Entry>) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(".reversals.json.tmp");
    let bytes = serde_json::to_vec_pretty(&to_json(entries)).map_err(std::io::Error::other)?;
    let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&tmp)?;
    f.write_all(&bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()
}

/// A reversal running in the graph: once it applied, its record is let go.
pub(crate) struct Reverting {
    pub(crate) inner: Box<dyn Resource>,
    pub(crate) undo: Option<Arc<Undo>>,
    pub(crate) key: ResKey,
}

#[async_trait]
impl Resource for Reverting {
    fn validate(&self) -> Result<(), ResError> {
        self.inner.validate()
    }
    async fn init(&mut self, ctx: &InitCtx) -> Result<(), ResError> {
        self.inner.init(ctx).await
    }
    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        self.inner.watch(ctx)
    }
    fn watch_passive(&self) -> bool {
        self.inner.watch_passive()
    }
    fn subscribe(&self, ctx: &WatchCtx) -> Option<Result<Box<dyn Subscription>, ResError>> {
        self.inner.subscribe(ctx)
    }
    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let outcome = self.inner.check_apply(ctx, apply).await;
        if apply
            && outcome.is_ok()
            && let Some(undo) = self.undo.take()
        {
            undo.forget(&self.key);
        }
        outcome
    }
    async fn cleanup(&mut self) -> Result<(), ResError> {
        self.inner.cleanup().await
    }
    fn fingerprint(&self) -> String {
        self.inner.fingerprint()
    }
    fn refreshable(&self) -> bool {
        self.inner.refreshable()
    }
    fn sends(&self) -> Option<BTreeMap<String, Payload>> {
        self.inner.sends()
    }
    fn recv(&mut self, key: &str, value: &Payload) -> Result<bool, ResError> {
        self.inner.recv(key, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_reversals_survive_a_reopen_and_are_let_go_once_applied() {
        let dir = tempfile::tempdir().unwrap();
        let (undo, found) = Undo::open(dir.path());
        assert!(found.is_empty());
        let key = ResKey::new("file", "/etc/motd");
        undo.remember(&key, "{\"state\":\"absent\"}".into());
        let file = dir.path().join("engine/reversals.json");
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        let (again, found) = Undo::open(dir.path());
        assert_eq!(found, [(key.clone(), "{\"state\":\"absent\"}".to_string())]);
        again.forget(&key);
        assert!(Undo::open(dir.path()).1.is_empty());
    }

    #[test]
    fn an_unreadable_file_is_kept_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("engine/reversals.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "not json").unwrap();
        let (undo, found) = Undo::open(dir.path());
        assert!(found.is_empty());
        undo.remember(&ResKey::new("file", "/x"), "{}".into());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "not json", "never overwritten while unread");
    }
}
