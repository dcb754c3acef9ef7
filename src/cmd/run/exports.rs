//! Exported resources in `tend run`: what the applied graph exports is published to the
//! world (off the main loop, the latest set winning), and what other hosts export is
//! followed, for a program that collects, and decoded for interpretation.

use lang::exported::ExportRecord;
use lang::interpret::Remote;
use lang::span::Span;
use std::collections::BTreeSet;
use std::sync::Arc;
use tokio::sync::watch;
use world::{Export, Follow, Topic, View, World, parse_export_entry};

pub struct Exports {
    world: Arc<dyn World>,
    /// The set to publish; the publisher task writes the latest one.
    publish: watch::Sender<Option<Vec<Export>>>,
    /// Other hosts' exports, followed while the program collects.
    follow: Option<Follow>,
    /// Records that could not be decoded (each is logged once).
    unreadable: BTreeSet<String>,
}

impl Exports {
    /// Must be called inside the runtime (it starts the publisher).
    pub fn new(world: Arc<dyn World>) -> Exports {
        let (publish, mut latest) = watch::channel::<Option<Vec<Export>>>(None);
        let to = world.clone();
        tokio::spawn(async move {
            while latest.changed().await.is_ok() {
                let Some(set) = latest.borrow_and_update().clone() else { continue };
                match to.export(&set).await {
                    Ok(written) => tracing::debug!(exports = set.len(), ?written, "exports published"),
                    Err(e) => tracing::error!(error = %e, "cannot publish this host's exports"),
                }
            }
        });
        Exports { world, publish, follow: None, unreadable: BTreeSet::new() }
    }

    /// Publishes `records` as everything this host exports (nothing when unchanged).
    pub fn publish(&self, records: Vec<ExportRecord>) {
        let set: Vec<Export> =
            records.into_iter().map(|r| Export { kind: r.kind, name: r.name, to: r.to, record: r.record }).collect();
        self.publish.send_if_modified(|have| {
            let changed = have.as_ref() != Some(&set);
            if changed {
                *have = Some(set);
            }
            changed
        });
    }

    /// Follows other hosts' exports while `wanted` (the program collects), else stops.
    pub fn want(&mut self, wanted: bool) {
        match (wanted, self.follow.is_some()) {
            (true, false) => self.follow = Some(self.world.follow(&Topic::Exports)),
            (false, true) => self.follow = None,
            _ => {}
        }
    }

    /// Whether what others export is known (always, when not followed): a collecting
    /// program's graph waits for it, as a function waits for its world value.
    pub fn known(&self) -> bool {
        self.follow.as_ref().is_none_or(|f| f.borrow().read)
    }

    /// Whether the followed exports are stale (the store is away).
    pub fn stale(&self) -> bool {
        self.follow.as_ref().is_some_and(|f| f.borrow().stale)
    }

    /// What other hosts export to this one now, decoded.
    pub fn remote(&mut self) -> Remote {
        let me = self.world.hostname().to_string();
        let Some(follow) = self.follow.as_mut() else { return Remote { me, exports: Vec::new() } };
        let view = follow.borrow_and_update().clone();
        let (remote, unreadable) = remote_of(&view, &me);
        for (what, e) in unreadable {
            if self.unreadable.insert(what.clone()) {
                tracing::warn!(export = %what, error = %e, "cannot read an export; it is ignored");
            }
        }
        remote
    }

    /// Resolves when what other hosts export changed; never when not followed.
    pub async fn changed(&mut self) {
        let alive = match self.follow.as_mut() {
            Some(f) => f.changed().await.is_ok(),
            None => false,
        };
        if !alive {
            std::future::pending::<()>().await;
        }
    }
}

/// What other hosts export to host `me`, decoded from a [`Topic::Exports`] view. Records
/// that cannot be decoded are returned apart, as `(entry, why)`.
pub fn remote_of(view: &View, me: &str) -> (Remote, Vec<(String, String)>) {
    let mut exports = Vec::with_capacity(view.entries.len());
    let mut unreadable = Vec::new();
    for (entry, record) in &view.entries {
        let Some((kind, from, name)) = parse_export_entry(entry) else { continue };
        if from == me {
            continue;
        }
        match lang::exported::decode(&kind, &name, &from, record, Span::default()) {
            Ok(decl) => exports.push(decl),
            Err(e) => unreadable.push((format!("{kind}[{name}] from {from}"), e)),
        }
    }
    (Remote { me: me.to_string(), exports }, unreadable)
}
