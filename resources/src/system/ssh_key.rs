//! `ssh:authorized_key`: one key line in an `authorized_keys` file, present (appended when
//! missing) or absent (every equivalent line removed).
//!
//! The line comes from `content` (a whole line), from `type` + `key` (+ `comment`,
//! `options`), or else from the resource name. It is checked like sshd would read it (the
//! key must decode to a well-formed public key of a known type; when `type` is given it
//! must match the key) and written in a normal form: `[OPTIONS ]TYPE BASE64[ COMMENT]`.
//! Existing lines count as the same key when they normalize to the same text.
//!
//! The file is `file` if set, else `~USER/.ssh/authorized_keys` for `user`, else the
//! running user's; `~` paths are resolved through the host's accounts and every path lives
//! under the host root. With `mkdir` (default true) a missing `.ssh/` directory is created
//! (0700) when its parent exists; a missing file is created (0600). What this resource
//! creates is given to `user` when one is named.

use lang::params::ParamMap;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;

use async_trait::async_trait;
use base64::Engine as _;
use engine::{ApplyCtx, IoAt, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;

use crate::contract::autoedge::{Edges, Index, str_param};
use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::contract::typed::Presence;
use crate::machine::Machine;
use crate::util::fs::{atomic_write, lchown, unified_diff};
use crate::util::watch::watch_loop;

crate::params! {
    /// `ssh:authorized_key`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct SshKeyParams {
        pub state: Presence,
        pub file: String,
        pub user: String,
        pub content: String,
        pub options: Vec<String>,
        pub key_type("type"): String,
        pub key: String,
        pub comment: String,
        pub mkdir: bool = true,
    }
}

pub struct SshAuthorizedKey {
    raw: Raw,
    params: SshKeyParams,
    host: Machine,
}

/// What locating the file needs, owned so the watch future can do it too.
#[derive(Clone)]
struct Locator {
    host: Machine,
    /// `file`, or the default for `user`.
    spec: String,
}

impl Locator {
    /// The file under the host root. `~` and `~user` expand to home directories.
    async fn path(&self) -> Result<PathBuf, ResError> {
        let Some(rest) = self.spec.strip_prefix('~') else { return Ok(self.host.path(&self.spec)) };
        let (user, tail) = rest.split_once('/').unwrap_or((rest, ""));
        let home = if user.is_empty() {
            std::env::var("HOME").map_err(|_| ResError::new("HOME is not set, cannot expand `~`"))?
        } else {
            self.host
                .accounts
                .user(user)
                .await?
                .map(|u| u.home)
                .ok_or_else(|| ResError::new(format!("user `{user}` does not exist")))?
        };
        Ok(self.host.path(&format!("{}/{tail}", home.trim_end_matches('/'))))
    }
}

impl SshAuthorizedKey {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<SshAuthorizedKey, BuildError> {
        let (raw, params) = Raw::decoded("ssh:authorized_key", name, values, SshKeyParams::decode)?;
        Ok(SshAuthorizedKey { raw, params, host: host.clone() })
    }

    fn error(&self, field: &str, message: impl Into<String>) -> ResError {
        self.raw.invalid(Some(field), message)
    }

    /// The normalized line this resource manages.
    fn line(&self) -> Result<String, ResError> {
        let p = &self.params;
        if !p.content.is_empty() {
            return normalize_line(&p.content, None).map_err(|m| self.error("content", m));
        }
        if !p.key_type.is_empty() {
            let mut line = format!("{} {}", p.key_type, p.key);
            if !p.options.is_empty() {
                line = format!("{} {line}", p.options.join(","));
            }
            if !p.comment.is_empty() {
                line = format!("{line} {}", p.comment);
            }
            return normalize_line(&line, Some(&p.key_type)).map_err(|m| self.error("key", m));
        }
        normalize_line(&self.raw.name, None).map_err(|m| {
            self.error("content", format!("no content, type or key given, and the name is no key line: {m}"))
        })
    }

    fn locator(&self) -> Locator {
        let spec = if !self.params.file.is_empty() {
            self.params.file.clone()
        } else if !self.params.user.is_empty() {
            format!("~{}/.ssh/authorized_keys", self.params.user)
        } else {
            "~/.ssh/authorized_keys".to_string()
        };
        Locator { host: self.host.clone(), spec }
    }

    /// The uid and gid of `user`, when one is named.
    async fn owner(&self) -> Result<Option<(u32, u32)>, ResError> {
        if self.params.user.is_empty() {
            return Ok(None);
        }
        let info = self.host.accounts.user(&self.params.user).await?;
        let info = info.ok_or_else(|| ResError::new(format!("user `{}` does not exist", self.params.user)))?;
        Ok(Some((info.uid, info.gid)))
    }
}

#[async_trait]
impl Resource for SshAuthorizedKey {
    fn validate(&self) -> Result<(), ResError> {
        let p = &self.params;
        if p.state == Presence::Unset {
            return Err(self.error("state", "must be `exists` or `absent`"));
        }
        if !p.user.is_empty() && !valid_user_name(&p.user) {
            return Err(self.error("user", format!("`{}` is not a valid user name", p.user)));
        }
        if !p.file.is_empty() && !p.file.starts_with('/') && !p.file.starts_with('~') {
            return Err(self.error("file", "must be an absolute path or start with `~`"));
        }
        if p.file.starts_with('/') {
            crate::util::path::check(&p.file).map_err(|m| self.error("file", m))?;
        }
        if !p.content.is_empty() {
            for (field, set) in [
                ("options", !p.options.is_empty()),
                ("type", !p.key_type.is_empty()),
                ("key", !p.key.is_empty()),
                ("comment", !p.comment.is_empty()),
            ] {
                if set {
                    return Err(self.error(field, "cannot be combined with `content`"));
                }
            }
        }
        if p.key_type.is_empty() != p.key.is_empty() {
            let missing = if p.key.is_empty() { "key" } else { "type" };
            return Err(self.error(missing, "`type` and `key` must be given together"));
        }
        self.line().map(drop)
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let locator = self.locator();
        Box::pin(async move {
            match locator.path().await {
                Ok(path) => watch_loop(vec![path], false, ctx).await,
                // The user may not exist yet: watch the account files instead.
                Err(_) => watch_loop(locator.host.accounts.files(), false, ctx).await,
            }
        })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let key = format!("ssh:authorized_key[{}]", self.raw.name);
        let fail = |e: ResError| ResError::new(format!("{key}: {}", e.message));
        let want = self.line()?;
        let path = self.locator().path().await.map_err(fail)?;
        let present = self.params.state == Presence::Exists;
        let owner = if present { self.owner().await.map_err(fail)? } else { None };
        let mut ok = true;

        let dir = path.parent().map(PathBuf::from).unwrap_or_default();
        if present && self.params.mkdir && dir.file_name().is_some_and(|n| n == ".ssh") && !dir.exists() {
            let parent_exists = dir.parent().is_some_and(|p| p.is_dir());
            if parent_exists {
                ok = false;
                if !apply {
                    ctx.report(format!("{key}: would create {}", dir.display()));
                } else {
                    std::fs::DirBuilder::new()
                        .mode(0o700)
                        .create(&dir)
                        .map_err(|e| ResError::new(format!("{key}: cannot create {}: {e}", dir.display())))?;
                    if let Some((uid, gid)) = owner {
                        lchown(&dir, Some(uid), Some(gid)).at(&dir)?;
                    }
                }
            }
        }

        let (text, existed) = match std::fs::read_to_string(&path) {
            Ok(text) => (text, true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (String::new(), false),
            Err(e) => return Err(ResError::new(format!("{key}: cannot read {}: {e}", path.display()))),
        };
        let Some(new) = edit(&text, &want, present) else { return Ok(ok) };
        if !apply {
            ctx.report(unified_diff(&path.display().to_string(), &text, &new));
            return Ok(false);
        }
        atomic_write(&path, new.as_bytes(), if existed { None } else { Some(0o600) })
            .map_err(|e| ResError::new(format!("{key}: cannot write {}: {e}", path.display())))?;
        if !existed && let Some((uid, gid)) = owner {
            lchown(&path, Some(uid), Some(gid)).at(&path)?;
        }
        Ok(false)
    }

    crate::fingerprint_by_params!();
}

/// The new file text, or `None` when it is already right.
fn edit(text: &str, want: &str, present: bool) -> Option<String> {
    let same = |line: &str| line.trim() == want || normalize_line(line, None).is_ok_and(|n| n == want);
    let found = text.lines().any(same);
    if present {
        if found {
            return None;
        }
        return Some(crate::util::text::with_lines_added(text, [want]));
    }
    if !found {
        return None;
    }
    let kept: Vec<&str> = text.lines().filter(|l| !same(l)).collect();
    Some(crate::util::text::of_lines(&kept))
}

fn valid_user_name(name: &str) -> bool {
    name.len() <= 32
        && !name.starts_with('-')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c) || c == '$')
}

// ---------------------------------------------------------------------------------------
// authorized_keys lines

/// Key types sshd accepts in authorized_keys.
const KEY_TYPES: &[&str] = &[
    "ssh-ed25519",
    "ssh-rsa",
    "ssh-dss",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
];

/// Checks an authorized_keys line and returns its normal form
/// `[OPTIONS ]TYPE BASE64[ COMMENT]`, the type being the one inside the key. `expect_type`:
/// the type the key must have.
pub fn normalize_line(line: &str, expect_type: Option<&str>) -> Result<String, String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Err("an empty line or a comment is not a key".into());
    }
    let first = line.split_whitespace().next().unwrap_or_default();
    let (options, rest) = if KEY_TYPES.contains(&first) { (Vec::new(), line) } else { split_options(line)? };
    let (declared, rest) = token(rest);
    if !KEY_TYPES.contains(&declared) {
        return Err(format!("unknown key type `{declared}`"));
    }
    let (encoded, comment) = token(rest);
    if encoded.is_empty() {
        return Err("the key is missing".into());
    }
    let blob = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| format!("the key is not valid base64: {e}"))?;
    let actual = check_blob(&blob)?;
    if let Some(want) = expect_type
        && want != actual
    {
        return Err(format!("the key is a `{actual}` key, not `{want}`"));
    }
    let comment = comment.trim();
    let mut out = String::new();
    if !options.is_empty() {
        out.push_str(&options.join(","));
        out.push(' ');
    }
    out.push_str(&actual);
    out.push(' ');
    out.push_str(&base64::engine::general_purpose::STANDARD.encode(&blob));
    if !comment.is_empty() {
        out.push(' ');
        out.push_str(comment);
    }
    Ok(out)
}

/// The first whitespace-separated token of `s` and what follows it.
fn token(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    s.split_once(char::is_whitespace).unwrap_or((s, ""))
}

/// Splits the leading options field (commas separate options; double quotes protect
/// commas and spaces) from the rest of the line.
fn split_options(line: &str) -> Result<(Vec<String>, &str), String> {
    let mut options = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut chars = line.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if quoted => {
                current.push(c);
                if let Some((_, next)) = chars.next() {
                    current.push(next);
                }
            }
            '"' => {
                quoted = !quoted;
                current.push(c);
            }
            ',' if !quoted => {
                if current.is_empty() {
                    return Err("empty option".into());
                }
                options.push(std::mem::take(&mut current));
            }
            c if c.is_whitespace() && !quoted => {
                if current.is_empty() {
                    return Err("empty option".into());
                }
                options.push(current);
                return Ok((options, line[i..].trim_start()));
            }
            c => current.push(c),
        }
    }
    Err(if quoted { "unterminated quote in the options".into() } else { "the key type is missing".into() })
}

/// Reads one length-prefixed field of a key blob.
fn field<'a>(blob: &mut &'a [u8]) -> Result<&'a [u8], String> {
    let truncated = || "the key is truncated".to_string();
    let len_bytes: [u8; 4] = blob.get(..4).ok_or_else(truncated)?.try_into().map_err(|_| truncated())?;
    let len = u32::from_be_bytes(len_bytes) as usize;
    let value = blob.get(4..4 + len).ok_or_else(truncated)?;
    *blob = &blob[4 + len..];
    Ok(value)
}

/// Checks the structure of a public key blob and returns its type.
fn check_blob(mut blob: &[u8]) -> Result<String, String> {
    let kind = String::from_utf8(field(&mut blob)?.to_vec()).map_err(|_| "the key type is not text".to_string())?;
    let curve_of = |k: &str| k.rsplit('-').next().unwrap_or_default().trim_end_matches("@openssh.com").to_string();
    match kind.as_str() {
        "ssh-ed25519" | "sk-ssh-ed25519@openssh.com" => {
            if field(&mut blob)?.len() != 32 {
                return Err("an ed25519 key must be 32 bytes".into());
            }
            if kind.starts_with("sk-") {
                field(&mut blob)?;
            }
        }
        "ssh-rsa" => {
            field(&mut blob)?;
            if field(&mut blob)?.len() < 64 {
                return Err("the RSA modulus is too short".into());
            }
        }
        "ssh-dss" => {
            for _ in 0..4 {
                field(&mut blob)?;
            }
        }
        k if k.starts_with("ecdsa-sha2-") || k.starts_with("sk-ecdsa-sha2-") => {
            let curve = field(&mut blob)?;
            if curve != curve_of(k).as_bytes() {
                return Err(format!("the key's curve does not match `{k}`"));
            }
            field(&mut blob)?;
            if k.starts_with("sk-") {
                field(&mut blob)?;
            }
        }
        other => return Err(format!("unknown key type `{other}` inside the key")),
    }
    if !blob.is_empty() {
        return Err("unexpected data after the key".into());
    }
    Ok(kind)
}

/// A key comes after its `user` and the `file` it edits.
fn requires(index: &Index<'_>, idx: usize, _name: &str, params: &ParamMap, edges: &mut Edges) {
    if let Some(user) = str_param(params, "user").filter(|u| !u.is_empty()) {
        edges.extend(index.resource("user", user).map(|u| (u, idx)));
    }
    if let Some(file) = str_param(params, "file").filter(|f| f.starts_with('/')) {
        edges.extend(index.file(file).map(|f| (f, idx)));
    }
}

/// The `ssh:authorized_key` kind: its params and send fields as the type checker sees them, and its constructor.
pub const SSH_AUTHORIZED_KEY: crate::contract::kind::Kind = crate::contract::kind::Kind::new(
    "ssh:authorized_key",
    SshKeyParams::FIELDS,
    crate::built_on_host!(SshAuthorizedKey),
)
.autoedges(crate::contract::autoedge::Rules { provides: None, requires: Some(requires), reads: &["user", "file"] });

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIOLlHSZU/zoD54fGacCI1wAFEdRmoBYFKG1PMDhhJBFX";

    #[test]
    fn lines_normalize_with_options_and_comments() {
        let line = format!("  ssh-ed25519   {KEY}   root@computer  ");
        assert_eq!(normalize_line(&line, None).unwrap(), format!("ssh-ed25519 {KEY} root@computer"));
        let with_options = format!(r#"command="echo 'a, b'; exit",no-pty ssh-ed25519 {KEY} a comment"#);
        assert_eq!(
            normalize_line(&with_options, Some("ssh-ed25519")).unwrap(),
            format!(r#"command="echo 'a, b'; exit",no-pty ssh-ed25519 {KEY} a comment"#)
        );
        assert!(normalize_line(&format!("ssh-ed25519 {KEY}"), Some("ssh-rsa")).unwrap_err().contains("not `ssh-rsa`"));
    }

    #[test]
    fn bad_lines_are_refused() {
        for bad in [
            "".to_string(),
            "# comment".to_string(),
            "foo".to_string(),
            "ssh-ed25519".to_string(),
            "ssh-ed25519 !!!".to_string(),
            format!("ssh-ed25519 {}", &KEY[..40]),
            format!("no-pty,,x ssh-ed25519 {KEY}"),
            format!(r#"command="unterminated ssh-ed25519 {KEY}"#),
            format!("ssh-foo {KEY}"),
            // A valid blob with a byte too many.
            format!(
                "ssh-ed25519 {}",
                base64::engine::general_purpose::STANDARD.encode({
                    let mut b = base64::engine::general_purpose::STANDARD.decode(KEY).unwrap();
                    b.push(0);
                    b
                })
            ),
        ] {
            assert!(normalize_line(&bad, None).is_err(), "{bad}");
        }
    }

    #[test]
    fn edits_append_once_and_remove_equivalent_lines() {
        let want = format!("ssh-ed25519 {KEY} me");
        assert_eq!(edit("", &want, true), Some(format!("{want}\n")));
        assert_eq!(edit("other\n", &want, true), Some(format!("other\n{want}\n")));
        assert_eq!(edit(&format!("x\n  ssh-ed25519   {KEY}  me \n"), &want, true), None, "equivalent spacing");
        assert_eq!(edit(&format!("a\n{want}\nb\n{want}\n"), &want, false), Some("a\nb\n".into()));
        assert_eq!(edit("a\n", &want, false), None);
    }

    #[test]
    fn user_names() {
        assert!(valid_user_name("alice"));
        assert!(valid_user_name("svc-web_1"));
        assert!(!valid_user_name("-x"));
        assert!(!valid_user_name("a b"));
        assert!(!valid_user_name("a/b"));
    }
}
