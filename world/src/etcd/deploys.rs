//! Deploys: a deploy writes its files' blobs (content-addressed, each once), then in one
//! transaction its record and `latest`, on the condition that `latest` is still the id it
//! read (and, for bundles small enough, that its blobs are still there); collection keeps
//! the newest deploys and the blobs they name, and stops when a deploy lands meanwhile.

use std::collections::{BTreeMap, BTreeSet};

use etcd_client::{Client, Compare, CompareOp, GetOptions, Txn, TxnOp};

use super::exports::EXPORT_BATCH;
use super::{Inner, REQUEST, keys};
use crate::digest::sha256_hex;
use crate::signing::{Signature, Signer};
use crate::{Bundle, Deploy, Parent, WorldError};

/// Bundles of at most this many files have their files' presence checked as they land.
const BLOB_CHECKS: usize = 100;

/// How many times a deploy reads `latest` again after another deploy landed first.
const ATTEMPTS: usize = 20;

/// Stores `bundle` as the deploy after `parent`; its id.
pub(super) async fn deploy(
    inner: &Inner,
    bundle: &Bundle,
    parent: Parent,
    signer: Option<&Signer>,
) -> Result<u64, WorldError> {
    let mut client = inner.client_now()?;
    let mut record = Record {
        parent: 0,
        by: inner.cfg.hostname.clone(),
        entry: bundle.entry.clone(),
        files: BTreeMap::new(),
        signature: None,
    };
    for (path, bytes) in &bundle.files {
        let hash = sha256_hex(bytes);
        put_blob(&mut client, &hash, bytes).await?;
        record.files.insert(path.clone(), hash);
    }
    let latest_key = keys::latest_key();
    for _ in 0..ATTEMPTS {
        let resp = ask(client.get(latest_key.as_str(), None)).await?;
        let latest: u64 =
            resp.kvs().first().and_then(|kv| kv.value_str().ok()).and_then(|v| v.parse().ok()).unwrap_or(0);
        if let Parent::Exactly(want) = parent
            && want != latest
        {
            return Err(WorldError::StaleParent { want, latest });
        }
        let id = latest + 1;
        record.parent = latest;
        record.signature = signer.map(|s| s.sign(id, latest, bundle));
        let unchanged = if latest == 0 {
            Compare::version(latest_key.as_str(), CompareOp::Equal, 0)
        } else {
            Compare::value(latest_key.as_str(), CompareOp::Equal, latest.to_string())
        };
        // The files must still be there (a collection running beside this deploy may
        // have taken a file no deploy named yet): checked for bundles that fit in one
        // transaction's compares, and put back when missing.
        let mut conditions = vec![unchanged];
        if record.files.len() <= BLOB_CHECKS {
            conditions
                .extend(record.files.values().map(|h| Compare::version(keys::blob_key(h), CompareOp::Greater, 0)));
        }
        let txn = Txn::new().when(conditions).and_then([
            TxnOp::put(keys::deploy_key(id), record.encode(id), None),
            TxnOp::put(latest_key.as_str(), id.to_string(), None),
        ]);
        let resp = ask(client.txn(txn)).await?;
        if resp.succeeded() {
            return Ok(id);
        }
        // Another deploy landed between the read and the write, or a file went.
        for (path, bytes) in &bundle.files {
            let Some(hash) = record.files.get(path) else { continue };
            put_blob(&mut client, hash, bytes).await?;
        }
    }
    Err(WorldError::Contended)
}

/// Removes every deploy but the `keep` latest, and the blobs no kept deploy names.
pub(super) async fn collect(inner: &Inner, keep: u64) -> Result<(usize, usize), WorldError> {
    let mut client = inner.client_now()?;
    // Every delete holds only while no deploy landed since this read: a deploy landing
    // meanwhile may name a file that no record named when it was read.
    let latest_key = keys::latest_key();
    let resp = ask(client.get(latest_key.as_str(), None)).await?;
    let Some(latest) = resp.kvs().first().map(|kv| kv.value().to_vec()) else { return Ok((0, 0)) };
    let unchanged = || Compare::value(latest_key.as_str(), CompareOp::Equal, latest.clone());
    let ids_prefix = keys::deploys_prefix();
    let resp = ask(client.get(ids_prefix.as_str(), Some(GetOptions::new().with_prefix()))).await?;
    let mut records: Vec<(u64, Vec<String>)> = Vec::new();
    for kv in resp.kvs() {
        let Some(id) = kv.key_str().ok().and_then(|k| k.strip_prefix(&ids_prefix)).and_then(|n| n.parse().ok()) else {
            continue;
        };
        records.push((id, Record::hashes(kv.value())));
    }
    records.sort_by_key(|(id, _)| std::cmp::Reverse(*id));
    let kept = usize::try_from(keep.max(1)).unwrap_or(usize::MAX);
    let mut doomed: Vec<String> = records.iter().skip(kept).map(|(id, _)| keys::deploy_key(*id)).collect();
    let deploys_gone = doomed.len();
    let named: BTreeSet<&String> = records.iter().take(kept).flat_map(|(_, h)| h).collect();
    let blobs_prefix = keys::blobs_prefix();
    let resp = ask(client.get(blobs_prefix.as_str(), Some(GetOptions::new().with_prefix().with_keys_only()))).await?;
    let mut blobs_gone = 0;
    for kv in resp.kvs() {
        let Ok(key) = kv.key_str() else { continue };
        if key.strip_prefix(&blobs_prefix).is_some_and(|h| !named.contains(&h.to_string())) {
            doomed.push(key.to_string());
            blobs_gone += 1;
        }
    }
    for batch in doomed.chunks(EXPORT_BATCH) {
        let ops: Vec<TxnOp> = batch.iter().map(|k| TxnOp::delete(k.as_str(), None)).collect();
        let txn = Txn::new().when([unchanged()]).and_then(ops);
        let resp = ask(client.txn(txn)).await?;
        if !resp.succeeded() {
            // A deploy landed: it collects after itself.
            return Ok((0, 0));
        }
    }
    Ok((deploys_gone, blobs_gone))
}

/// Deploy `id` with its files, each checked against its hash; `None` when there is none.
pub(super) async fn fetch(inner: &Inner, id: u64) -> Result<Option<Deploy>, WorldError> {
    let mut client = inner.client_now()?;
    let resp = ask(client.get(keys::deploy_key(id), None)).await?;
    let Some(kv) = resp.kvs().first() else { return Ok(None) };
    let bad = |why: String| WorldError::Damaged { id, why };
    let record = Record::decode(kv.value()).map_err(bad)?;
    let mut files = BTreeMap::new();
    for (path, hash) in &record.files {
        let resp = ask(client.get(keys::blob_key(hash), None)).await?;
        let bytes =
            resp.kvs().first().map(|kv| kv.value().to_vec()).ok_or_else(|| bad(format!("`{path}` is missing")))?;
        if sha256_hex(&bytes) != *hash {
            return Err(bad(format!("`{path}` does not match its hash")));
        }
        files.insert(path.clone(), bytes);
    }
    let bundle = Bundle { entry: record.entry, files };
    Ok(Some(Deploy { id, parent: record.parent, by: record.by, bundle, signature: record.signature }))
}

/// A deploy's record as stored (JSON): the id it followed, who made it, its entry, its
/// files by deploy path with their contents' hashes, and its signature if it has one.
#[derive(Debug, PartialEq)]
struct Record {
    parent: u64,
    by: String,
    entry: String,
    files: BTreeMap<String, String>,
    signature: Option<Signature>,
}

impl Record {
    fn encode(&self, id: u64) -> String {
        serde_json::json!({
            "id": id,
            "parent": self.parent,
            "by": self.by,
            "entry": self.entry,
            "files": self.files,
            "signature": self.signature.as_ref().map(|s| serde_json::json!({"key": s.key, "sig": s.sig})),
        })
        .to_string()
    }

    /// The record in `bytes`, or why it is damaged.
    fn decode(bytes: &[u8]) -> Result<Record, String> {
        let record: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let text = |field: &str| record[field].as_str().map(str::to_string).ok_or_else(|| format!("no `{field}`"));
        let mut files = BTreeMap::new();
        for (path, hash) in record["files"].as_object().ok_or("no `files`")? {
            let hash = hash.as_str().ok_or("a file's hash is not a string")?;
            files.insert(path.clone(), hash.to_string());
        }
        let signature = match &record["signature"] {
            serde_json::Value::Null => None,
            s => Some(Signature {
                key: s["key"].as_str().ok_or("a signature without its key")?.to_string(),
                sig: s["sig"].as_str().ok_or("a signature without its value")?.to_string(),
            }),
        };
        let parent = record["parent"].as_u64().unwrap_or(0);
        Ok(Record { parent, by: text("by")?, entry: text("entry")?, files, signature })
    }

    /// The hashes a stored record names (none when it cannot be read: its blobs are not
    /// kept for it).
    fn hashes(bytes: &[u8]) -> Vec<String> {
        let record: serde_json::Value = serde_json::from_slice(bytes).unwrap_or_default();
        record["files"]
            .as_object()
            .map(|f| f.values().filter_map(|h| h.as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    }
}

/// Stores a deployed file unless it is there already.
async fn put_blob(client: &mut Client, hash: &str, bytes: &[u8]) -> Result<(), WorldError> {
    let key = keys::blob_key(hash);
    let put = Txn::new().when([Compare::version(key.as_str(), CompareOp::Greater, 0)]).or_else([TxnOp::put(
        key.as_str(),
        bytes,
        None,
    )]);
    ask(client.txn(put)).await.map(|_| ())
}

/// One request that cannot wait for an outage to end: bounded by [`REQUEST`], its failure
/// told as a [`WorldError`].
async fn ask<T>(request: impl std::future::Future<Output = Result<T, etcd_client::Error>>) -> Result<T, WorldError> {
    match tokio::time::timeout(REQUEST, request).await {
        Ok(Err(etcd_client::Error::GRpcStatus(s))) if s.code() == tonic::Code::PermissionDenied => {
            Err(WorldError::Refused {
                what: "the deploy".into(),
                reason: format!(
                    "{} (with authentication on, deploying takes an operator's certificate, \
                     `tend cluster grant --operator NAME`, or root's)",
                    s.message()
                ),
            })
        }
        Ok(r) => r.map_err(|e| WorldError::Etcd(e.to_string())),
        Err(_) => Err(WorldError::TimedOut),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_and_a_damaged_one_says_why() {
        let files = BTreeMap::from([("/main.mcl".to_string(), sha256_hex(b"x"))]);
        let record = Record { parent: 6, by: "h1".into(), entry: "/main.mcl".into(), files, signature: None };
        let stored = record.encode(7);
        assert_eq!(Record::decode(stored.as_bytes()), Ok(record));
        let signature = Some(Signature { key: "00ff".into(), sig: "ab".repeat(64) });
        let signed = Record { signature, ..Record::decode(stored.as_bytes()).unwrap() };
        assert_eq!(Record::decode(signed.encode(7).as_bytes()), Ok(signed));
        let half = b"{\"by\":\"h1\",\"entry\":\"/m\",\"files\":{},\"signature\":{\"key\":\"00\"}}";
        assert_eq!(Record::decode(half), Err("a signature without its value".into()));
        assert_eq!(Record::hashes(stored.as_bytes()), vec![sha256_hex(b"x")]);
        assert_eq!(Record::decode(b"{\"by\":\"h1\",\"files\":{}}"), Err("no `entry`".into()));
        assert_eq!(Record::decode(b"{\"by\":\"h1\",\"entry\":\"/m\"}"), Err("no `files`".into()));
        let bad_hash = b"{\"by\":\"h1\",\"entry\":\"/m\",\"files\":{\"/m\":1}}";
        assert_eq!(Record::decode(bad_hash), Err("a file's hash is not a string".into()));
        assert!(Record::decode(b"garbage").is_err());
        assert!(Record::hashes(b"garbage").is_empty());
    }

    #[test]
    fn files_are_named_by_their_content() {
        assert_eq!(sha256_hex(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
}
