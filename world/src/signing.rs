//! Signed deploys: `tend deploy --sign KEY` signs a deploy's record (its id, the id it
//! follows, its entry and every file's SHA-256) with an Ed25519 key, and an agent started
//! with `--trust-deploys PUB[,PUB…]` runs only deploys that one of those keys signed and
//! never one older than a deploy it ran. The signature is over the record as the agent
//! rebuilds it from the files it fetched, so whoever owns etcd cannot change a byte of a
//! file, the entry or the id (a replay of an old deploy under a new id) unnoticed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::digest::{hex, sha256_hex, sha256_prefix, unhex};
use crate::{Bundle, Deploy};
use base64::Engine;
use ring::signature::{ED25519, Ed25519KeyPair, KeyPair, UnparsedPublicKey};

/// A deploy's signature as stored with its record: the signing key's id and the signature,
/// both hex.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    pub key: String,
    pub sig: String,
}

/// Why a key file could not be used (its path and the reason; never its content).
#[derive(Debug, thiserror::Error)]
#[error("{}: {reason}", path.display())]
pub struct KeyError {
    pub path: PathBuf,
    pub reason: String,
}

/// Why an agent refuses a deploy, in the words its status shows after "refused deploy N: ".
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("not signed by a trusted key: it carries no signature")]
    Unsigned,
    #[error("not signed by a trusted key: key {0} signed it, which this agent does not trust")]
    UnknownKey(String),
    #[error("its signature does not match its content: changed after it was signed")]
    Tampered,
    #[error("it is older than deploy {ran}, which ran here (no rollback by replay)")]
    Older { ran: u64 },
}

/// The key that signs deploys (`deploy.key`: a PKCS#8 PEM Ed25519 private key).
pub struct Signer {
    pair: Ed25519KeyPair,
    id: String,
}

impl Signer {
    pub fn load(path: &Path) -> Result<Signer, KeyError> {
        let bad = |reason: &str| KeyError { path: path.to_path_buf(), reason: reason.to_string() };
        let der = pem_block(path, "PRIVATE KEY")?;
        let pair = Ed25519KeyPair::from_pkcs8_maybe_unchecked(&der).map_err(|_| bad("not an Ed25519 private key"))?;
        let id = key_id(pair.public_key().as_ref());
        Ok(Signer { pair, id })
    }

    /// The signature of deploy `id`, following `parent`, of `bundle`.
    pub fn sign(&self, id: u64, parent: u64, bundle: &Bundle) -> Signature {
        let sig = self.pair.sign(&message(id, parent, &bundle.entry, &hashes(bundle)));
        Signature { key: self.id.clone(), sig: hex(sig.as_ref()) }
    }

    /// The id of the key (the first 8 bytes of its public key's SHA-256, hex).
    pub fn key_id(&self) -> &str {
        &self.id
    }
}

/// The public keys an agent trusts deploys from (`deploy.pub`: SPKI PEM).
#[derive(Clone, Debug)]
pub struct Trusted {
    keys: BTreeMap<String, Vec<u8>>,
}

impl Trusted {
    pub fn load(paths: &[PathBuf]) -> Result<Trusted, KeyError> {
        let mut keys = BTreeMap::new();
        for path in paths {
            let der = pem_block(path, "PUBLIC KEY")?;
            // An Ed25519 SubjectPublicKeyInfo: this fixed prefix, then the 32-byte key.
            const PREFIX: [u8; 12] = [0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00];
            let raw = der
                .strip_prefix(&PREFIX)
                .filter(|k| k.len() == 32)
                .ok_or_else(|| KeyError { path: path.clone(), reason: "not an Ed25519 public key".into() })?;
            keys.insert(key_id(raw), raw.to_vec());
        }
        Ok(Trusted { keys })
    }

    /// Whether this agent may run `deploy`, having run deploy `ran` (if any): the key id
    /// that signed it, or why not.
    pub fn check(&self, deploy: &Deploy, ran: Option<u64>) -> Result<String, Refusal> {
        if let Some(ran) = ran.filter(|&r| deploy.id < r) {
            return Err(Refusal::Older { ran });
        }
        let signature = deploy.signature.as_ref().ok_or(Refusal::Unsigned)?;
        let key = self.keys.get(&signature.key).ok_or_else(|| Refusal::UnknownKey(signature.key.clone()))?;
        let sig = unhex(&signature.sig).ok_or(Refusal::Tampered)?;
        let message = message(deploy.id, deploy.parent, &deploy.bundle.entry, &hashes(&deploy.bundle));
        UnparsedPublicKey::new(&ED25519, key).verify(&message, &sig).map_err(|_| Refusal::Tampered)?;
        Ok(signature.key.clone())
    }
}

/// What is signed: the id, the parent, the entry and every file's hash, as one JSON array
/// (a deploy path may hold any character, so no ad-hoc separator could be trusted).
fn message(id: u64, parent: u64, entry: &str, files: &BTreeMap<String, String>) -> Vec<u8> {
    let doc = serde_json::json!(["tend deploy v1", id, parent, entry, files.iter().collect::<Vec<_>>()]);
    doc.to_string().into_bytes()
}

/// Each file's SHA-256, hex, by deploy path: rebuilt from the bytes, never taken from a record.
fn hashes(bundle: &Bundle) -> BTreeMap<String, String> {
    bundle.files.iter().map(|(path, bytes)| (path.clone(), sha256_hex(bytes))).collect()
}

fn key_id(public_key: &[u8]) -> String {
    sha256_prefix(public_key, 8)
}

/// The DER bytes of the one `-----BEGIN {label}-----` block of the PEM file `path`.
fn pem_block(path: &Path, label: &str) -> Result<Vec<u8>, KeyError> {
    let bad = |reason: String| KeyError { path: path.to_path_buf(), reason };
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let body = text
        .split_once(&begin)
        .and_then(|(_, rest)| rest.split_once(&end))
        .map(|(body, _)| body.split_whitespace().collect::<String>())
        .ok_or_else(|| bad(format!("not a PEM {}", label.to_lowercase())))?;
    base64::engine::general_purpose::STANDARD.decode(body).map_err(|_| bad("damaged PEM".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(dir: &Path) -> (Signer, Trusted) {
        crate::pki::init(dir, false).unwrap();
        (Signer::load(&dir.join("deploy.key")).unwrap(), Trusted::load(&[dir.join("deploy.pub")]).unwrap())
    }

    fn deploy(id: u64, signer: Option<&Signer>) -> Deploy {
        let bundle = Bundle {
            entry: "/main.mcl".into(),
            files: BTreeMap::from([("/main.mcl".to_string(), b"print \"p\" {}\n".to_vec())]),
        };
        let signature = signer.map(|s| s.sign(id, id - 1, &bundle));
        Deploy { id, parent: id - 1, by: "ops".into(), bundle, signature }
    }

    #[test]
    fn a_signed_deploy_is_trusted_and_any_change_to_it_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let (signer, trusted) = pair(dir.path());
        let good = deploy(7, Some(&signer));
        assert_eq!(trusted.check(&good, Some(6)), Ok(signer.key_id().to_string()));
        assert_eq!(trusted.check(&deploy(7, None), None), Err(Refusal::Unsigned));
        let mut file = good.clone();
        file.bundle.files.insert("/main.mcl".into(), b"print \"q\" {}\n".to_vec());
        assert_eq!(trusted.check(&file, None), Err(Refusal::Tampered));
        let mut entry = good.clone();
        entry.bundle.entry = "/other.mcl".into();
        assert_eq!(trusted.check(&entry, None), Err(Refusal::Tampered));
        // The same signed record under a newer id: a replay.
        let mut renumbered = good.clone();
        renumbered.id = 9;
        assert_eq!(trusted.check(&renumbered, None), Err(Refusal::Tampered));
        assert_eq!(trusted.check(&good, Some(8)), Err(Refusal::Older { ran: 8 }));
        assert_eq!(
            Refusal::Unsigned.to_string(),
            "not signed by a trusted key: it carries no signature",
            "the words `tend status` shows"
        );
    }

    #[test]
    fn another_key_is_not_trusted_and_key_files_are_checked() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (_, trusted) = pair(a.path());
        let (other, _) = pair(b.path());
        let signed = deploy(3, Some(&other));
        assert_eq!(trusted.check(&signed, None), Err(Refusal::UnknownKey(other.key_id().to_string())));
        // A certificate or a private key given as a public key, and the reverse.
        let e = Trusted::load(&[a.path().join("ca.crt")]).unwrap_err().to_string();
        assert!(e.ends_with("not a PEM public key"), "{e}");
        let e = Signer::load(&a.path().join("ca.key")).err().unwrap().to_string();
        assert!(e.ends_with("not an Ed25519 private key"), "{e}");
        assert!(!e.contains("BEGIN"), "{e}");
    }
}
