//! What counts as a secret, and how one is shown: the content of a file whose mode (the
//! one it has, or the one declared) denies others read, and every param that holds a
//! credential ([`SECRET_PARAMS`]). A
//! secret is shown as its size and a digest, never as text, in noop diffs, reports, `graph`
//! and `why`, unless the operator asks with `--show-secrets` ([`show`]).

use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicBool, Ordering};

use sha2::{Digest, Sha256};

use crate::value::Value;

static SHOWN: AtomicBool = AtomicBool::new(false);

/// `--show-secrets`: secrets are printed as they are from now on.
pub fn show(shown: bool) {
    SHOWN.store(shown, Ordering::Relaxed);
}

/// Whether secrets are printed as they are.
pub fn shown() -> bool {
    SHOWN.load(Ordering::Relaxed)
}

/// `text` as a secret is shown: its size and the start of its SHA-256.
pub fn summary(text: &[u8]) -> String {
    let digest = Sha256::digest(text);
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("<secret: {} bytes, sha256 {hex}…; --show-secrets prints it>", text.len())
}

/// Whether a mode (octal text, `0600`) denies others read. Symbolic or unparsable modes
/// count as not secret here (the kind refuses a bad one).
fn mode_denies_others(mode: &str) -> bool {
    u32::from_str_radix(mode.trim(), 8).is_ok_and(|m| m & 0o004 == 0)
}

/// Whether the file at `path` exists with a mode that denies others read.
pub fn file_is_private(path: &str) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o004 == 0)
}

/// The params that hold a credential, whatever their kind: `password` (`password`,
/// `bmc:*`, `user`), `apitoken` (`hetzner:vm`), `token` (`consul:kv`).
pub const SECRET_PARAMS: &[&str] = &["password", "apitoken", "token"];

/// Whether param `name` of a `kind` resource named `res_name` with `params` holds a secret
/// (see the module's documentation).
pub fn is_secret<'v>(kind: &str, res_name: &str, params: impl Fn(&str) -> Option<&'v Value>, name: &str) -> bool {
    if SECRET_PARAMS.contains(&name) {
        return true;
    }
    if kind != "file" || !matches!(name, "content" | "fragments") {
        return false;
    }
    let declared = matches!(params("mode"), Some(Value::Str(m)) if mode_denies_others(m));
    let path = match params("path") {
        Some(Value::Str(p)) if !p.is_empty() => p.to_string(),
        _ => res_name.to_string(),
    };
    declared || file_is_private(&path)
}

/// Replaces, in every string of `json`, each of `secrets` (texts of four bytes or more) by
/// its [`summary`]: what a secret value passed through on its way is hidden too.
pub fn scrub(json: &mut serde_json::Value, secrets: &[String]) {
    match json {
        serde_json::Value::String(text) => {
            for secret in secrets.iter().filter(|s| s.len() >= 4) {
                if text.contains(secret.as_str()) {
                    *text = text.replace(secret.as_str(), &summary(secret.as_bytes()));
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|i| scrub(i, secrets)),
        serde_json::Value::Object(map) => map.values_mut().for_each(|v| scrub(v, secrets)),
        _ => {}
    }
}

/// Whether a file's content is secret, from its declared mode and the file on disk.
pub fn file_content_is_secret(path: &str, declared_mode: &str) -> bool {
    mode_denies_others(declared_mode) || file_is_private(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_that_deny_others_read_make_file_content_secret() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "x").unwrap();
        let p = path.display().to_string();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(!file_content_is_secret(&p, ""));
        assert!(file_content_is_secret(&p, "0600"));
        assert!(!file_content_is_secret(&p, "u=rw,go=r"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert!(file_content_is_secret(&p, ""), "the file on disk is private");
        assert!(summary(b"hunter2").starts_with("<secret: 7 bytes, sha256 "));
        assert!(!summary(b"hunter2").contains("hunter2"));
    }
}
