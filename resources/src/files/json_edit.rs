//! `json:edit`: converges a list of small jq-style edits (`.a.b = VALUE`,
//! `.["key with spaces"].c = VALUE`, `del(.a.b)`) on one JSON document whose root is an
//! object. The store is the resource name unless `store` is set: an absolute path or a
//! `file://` URI names a local file (which must exist), an `etcd:///KEY` URI names a plain
//! key of the world (the local store, or etcd with `--seeds`; the key `kv` writes and
//! `world.getval` reads; a missing key is `{}`).
//!
//! The document is kept as written: object keys stay in their order, numbers keep their
//! exact text (no float rounding of big integers), and only the edited entries change. It
//! is rewritten (atomically, tab-indented, keeping mode and owner) only when an edit
//! changes it. Assignments create missing intermediate objects; deleting a missing entry is
//! already converged; walking through a non-object is an error. The store is watched; a
//! document that does not parse is re-read a few times first (it may be mid-rewrite).

use lang::params::ParamMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use engine::{ApplyCtx, InitCtx, IoAt, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use world::{Follow, Topic, World};

use crate::contract::autoedge::{Edges, Index, str_param};
use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::machine::Machine;
use crate::util::fs::{atomic_write, unified_diff};
use crate::util::watch::watch_loop;

/// How often, and how far apart, an unparsable document is read again before failing.
const REREADS: u32 = 3;
const REREAD_DELAY: std::time::Duration = std::time::Duration::from_millis(100);

crate::params! {
    /// `json:edit`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct JsonEditParams {
        /// `file:/abs/path` or `world:key`.
        pub store: String,
        pub edits: Vec<String>,
    }
}

/// Where the document lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Store {
    /// A local file (absolute path).
    File(PathBuf),
    /// A plain key of the local world store.
    World(String),
}

/// Parses a store handle: `/abs/path`, `file:///abs/path` or `etcd:///key`.
pub fn parse_store(handle: &str) -> Result<Store, String> {
    if handle.is_empty() {
        return Err("the store is empty".into());
    }
    if handle.starts_with('/') {
        crate::util::path::check(handle)?;
        return Ok(Store::File(PathBuf::from(handle)));
    }
    let Some((scheme, rest)) = handle.split_once("://") else {
        return Err(format!("`{handle}` is neither an absolute path nor a file:// or etcd:// URI"));
    };
    if rest.contains(['?', '#']) {
        return Err("store URIs take no query or fragment".into());
    }
    match scheme {
        "file" => match rest.strip_prefix('/') {
            Some(_) => Ok(Store::File(PathBuf::from(rest))),
            None if rest.is_empty() => Err("the file store path is empty".into()),
            None => Err(format!("file store URIs name no host and need an absolute path, got `{handle}`")),
        },
        "etcd" => match rest.strip_prefix('/') {
            Some("") => Err("the etcd store key is empty".into()),
            Some(key) => Ok(Store::World(key.to_string())),
            None => Err(format!("etcd store URIs name no host: use `etcd:///KEY`, got `{handle}`")),
        },
        other => Err(format!("unknown store scheme `{other}` (expected file or etcd)")),
    }
}

pub struct JsonEdit {
    raw: Raw,
    params: JsonEditParams,
    world: Arc<dyn World>,
    /// The file holding the document, known after init; for a world store, the key
    /// followed from init on.
    path: Option<PathBuf>,
    view: Option<Follow>,
}

impl JsonEdit {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<JsonEdit, BuildError> {
        let (raw, params) = Raw::decoded("json:edit", name, values, JsonEditParams::decode)?;
        Ok(JsonEdit { raw, params, world: host.world.clone(), path: None, view: None })
    }

    /// The document's text now: the file's (read again a few times while it does not
    /// parse: another program may be rewriting it in place), or the world key's (`{}`
    /// when unset; `None` before the world was read).
    async fn current(&self, key: &str) -> Result<Option<(String, Json)>, ResError> {
        if let Some(view) = &self.view {
            let view = view.borrow().clone();
            if !view.read {
                return Ok(None);
            }
            let text = view.entries.values().next().cloned().unwrap_or_else(|| "{}".to_string());
            let doc = parse_document(&text).map_err(|m| ResError::new(format!("{key}: {}: {m}", self.handle())))?;
            return Ok(Some((text, doc)));
        }
        let path = self.path.clone().ok_or_else(|| ResError::new(format!("{key}: check-apply before init")))?;
        let mut attempt = 0;
        loop {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| ResError::new(format!("{key}: cannot read {}: {e}", path.display())))?;
            match parse_document(&text) {
                Ok(doc) => return Ok(Some((text, doc))),
                Err(_) if attempt < REREADS => {
                    attempt += 1;
                    tokio::time::sleep(REREAD_DELAY).await;
                }
                Err(m) => return Err(ResError::new(format!("{key}: {}: {m}", path.display()))),
            }
        }
    }

    fn handle(&self) -> &str {
        if self.params.store.is_empty() { &self.raw.name } else { &self.params.store }
    }

    fn error(&self, field: &str, message: String) -> ResError {
        self.raw.invalid(Some(field), message)
    }

    fn edits(&self) -> Result<Vec<Edit>, ResError> {
        if self.params.edits.is_empty() {
            return Err(self.error("edits", "must list at least one edit".into()));
        }
        self.params
            .edits
            .iter()
            .enumerate()
            .map(|(i, e)| parse_edit(e).map_err(|m| self.error("edits", format!("edit #{i} `{e}`: {m}"))))
            .collect()
    }

    fn store(&self) -> Result<Store, ResError> {
        parse_store(self.handle()).map_err(|m| self.error("store", m))
    }
}

#[async_trait]
impl Resource for JsonEdit {
    fn validate(&self) -> Result<(), ResError> {
        self.store()?;
        self.edits()?;
        Ok(())
    }

    async fn init(&mut self, _ctx: &InitCtx) -> Result<(), ResError> {
        match self.store()? {
            Store::File(path) => self.path = Some(path),
            Store::World(key) => self.view = Some(self.world.follow(&Topic::Val(key))),
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        match &self.view {
            Some(view) => {
                crate::cluster::world::watch_view(Some(view.clone()), ctx, format!("json:edit[{}]", self.raw.name))
            }
            None => watch_loop(self.path.clone().into_iter().collect(), false, ctx),
        }
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let key = format!("json:edit[{}]", self.raw.name);
        let Some((text, before)) = self.current(&key).await? else {
            tracing::info!(resource = %key, "waiting for the world to be read");
            return Ok(false);
        };
        let mut after = before.clone();
        for (i, edit) in self.edits()?.iter().enumerate() {
            edit.apply(&mut after).map_err(|m| ResError::new(format!("{key}: edit #{i}: {m}")))?;
        }
        if after == before {
            return Ok(true);
        }
        let mut out = String::new();
        after.write_pretty(&mut out, 0);
        out.push('\n');
        if !apply {
            let label = self.path.as_ref().map_or_else(|| self.handle().to_string(), |p| p.display().to_string());
            ctx.report(unified_diff(&label, &text, &out));
            return Ok(false);
        }
        match self.store()? {
            Store::World(world_key) => {
                let written = self.world.set(&world_key, Some(&out)).await;
                crate::cluster::world::note_queued(
                    written.map_err(|e| ResError::transient(format!("{key}: {e}")))?,
                    &key,
                );
            }
            Store::File(path) => {
                if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
                    return Err(ResError::new(format!("{key}: {} is not a regular file", path.display())));
                }
                atomic_write(&path, out.as_bytes(), None).at(&path)?;
            }
        }
        Ok(false)
    }

    crate::fingerprint_by_params!();
}

// ---------------------------------------------------------------------------------------
// Edits

/// One parsed edit: set `path` to a value, or delete it.
#[derive(Clone, Debug, PartialEq)]
pub struct Edit {
    pub path: Vec<String>,
    /// `None`: delete.
    pub value: Option<Json>,
}

impl Edit {
    /// Applies the edit to a document whose root is an object.
    pub fn apply(&self, root: &mut Json) -> Result<(), String> {
        let (leaf, parents) = self.path.split_last().ok_or("empty path")?;
        let mut node = root;
        for key in parents {
            let Json::Obj(entries) = node else { return Err("the document root is not a JSON object".into()) };
            let pos = match entries.iter().position(|(k, _)| k == key) {
                Some(pos) => pos,
                None if self.value.is_none() => return Ok(()),
                None => {
                    entries.push((key.clone(), Json::Obj(Vec::new())));
                    entries.len() - 1
                }
            };
            node = &mut entries[pos].1;
            if !matches!(node, Json::Obj(_)) {
                return Err(format!("`{key}` is not a JSON object"));
            }
        }
        let Json::Obj(entries) = node else { return Err("the document root is not a JSON object".into()) };
        let pos = entries.iter().position(|(k, _)| k == leaf);
        match (&self.value, pos) {
            (Some(v), Some(pos)) => entries[pos].1 = v.clone(),
            (Some(v), None) => entries.push((leaf.clone(), v.clone())),
            (None, Some(pos)) => {
                entries.remove(pos);
            }
            (None, None) => {}
        }
        Ok(())
    }
}

/// Parses `PATH = JSON` or `del(PATH)`. A path is `.` followed by segments: identifiers
/// (`[A-Za-z_][A-Za-z0-9_]*`) separated by `.`, or bracketed JSON strings (`["any key"]`),
/// which may follow a segment directly or after a `.`.
pub fn parse_edit(text: &str) -> Result<Edit, String> {
    let mut cur = Cursor { s: text.trim().as_bytes(), pos: 0 };
    if cur.s.starts_with(b"del") {
        cur.pos = 3;
        cur.space();
        cur.expect(b'(', "expected `(` after `del`")?;
        cur.space();
        let path = cur.path()?;
        cur.space();
        cur.expect(b')', "expected `)` after the path")?;
        cur.space();
        if !cur.done() {
            return Err("unexpected text after `del(...)`".into());
        }
        return Ok(Edit { path, value: None });
    }
    let path = cur.path()?;
    cur.space();
    cur.expect(b'=', "expected `=` after the path")?;
    cur.space();
    if cur.done() {
        return Err("missing the JSON value after `=`".into());
    }
    let value = cur.value(0)?;
    cur.space();
    if !cur.done() {
        return Err("unexpected text after the JSON value".into());
    }
    Ok(Edit { path, value: Some(value) })
}

// ---------------------------------------------------------------------------------------
// A JSON document that keeps key order and number text

/// A JSON value. Objects keep their entries in document order; numbers keep their text.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

/// Nesting deeper than this is refused rather than risking the stack.
const MAX_DEPTH: usize = 500;

/// Parses a whole document: exactly one JSON object, surrounded by whitespace only.
pub fn parse_document(text: &str) -> Result<Json, String> {
    let mut cur = Cursor { s: text.as_bytes(), pos: 0 };
    cur.space();
    if cur.peek() != Some(b'{') {
        return Err("the document is not a JSON object".into());
    }
    let doc = cur.value(0)?;
    cur.space();
    if !cur.done() {
        return Err(format!("unexpected data after the document at byte {}", cur.pos));
    }
    Ok(doc)
}

impl Json {
    /// Tab-indented rendering (`{}` and `[]` when empty), starting at `depth` tabs.
    pub fn write_pretty(&self, out: &mut String, depth: usize) {
        let indent = |out: &mut String, n: usize| out.extend(std::iter::repeat_n('\t', n));
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Num(n) => out.push_str(n),
            Json::Str(s) => write_string(out, s),
            Json::Arr(items) if items.is_empty() => out.push_str("[]"),
            Json::Obj(entries) if entries.is_empty() => out.push_str("{}"),
            Json::Arr(items) => {
                out.push_str("[\n");
                for (i, item) in items.iter().enumerate() {
                    indent(out, depth + 1);
                    item.write_pretty(out, depth + 1);
                    out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
                }
                indent(out, depth);
                out.push(']');
            }
            Json::Obj(entries) => {
                out.push_str("{\n");
                for (i, (k, v)) in entries.iter().enumerate() {
                    indent(out, depth + 1);
                    write_string(out, k);
                    out.push_str(": ");
                    v.write_pretty(out, depth + 1);
                    out.push_str(if i + 1 < entries.len() { ",\n" } else { "\n" });
                }
                indent(out, depth);
                out.push('}');
            }
        }
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A byte cursor over an edit or a document.
struct Cursor<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }
    fn done(&self) -> bool {
        self.pos >= self.s.len()
    }
    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }
    fn expect(&mut self, b: u8, message: &str) -> Result<(), String> {
        if self.peek() == Some(b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(message.to_string())
        }
    }
    fn eat(&mut self, word: &str) -> bool {
        if self.s[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    /// An edit path (see [`parse_edit`]).
    fn path(&mut self) -> Result<Vec<String>, String> {
        self.expect(b'.', "a path starts with `.`")?;
        let mut keys = Vec::new();
        loop {
            self.space();
            let key = if self.peek() == Some(b'[') { self.bracket_key()? } else { self.identifier()? };
            keys.push(key);
            self.space();
            match self.peek() {
                Some(b'.') => self.pos += 1,
                Some(b'[') => {}
                _ => return Ok(keys),
            }
        }
    }

    fn identifier(&mut self) -> Result<String, String> {
        let start = self.pos;
        if !matches!(self.peek(), Some(b) if b == b'_' || b.is_ascii_alphabetic()) {
            return Err(format!("expected a key name or `[\"key\"]` at byte {start}"));
        }
        while matches!(self.peek(), Some(b) if b == b'_' || b.is_ascii_alphanumeric()) {
            self.pos += 1;
        }
        Ok(String::from_utf8_lossy(&self.s[start..self.pos]).into_owned())
    }

    fn bracket_key(&mut self) -> Result<String, String> {
        self.expect(b'[', "expected `[`")?;
        self.space();
        if self.peek() != Some(b'"') {
            return Err("a bracketed key must be a JSON string".into());
        }
        let key = self.string()?;
        if key.is_empty() {
            return Err("a key must not be empty".into());
        }
        self.space();
        self.expect(b']', "expected `]` after the bracketed key")?;
        Ok(key)
    }

    /// One JSON value (leading whitespace allowed).
    fn value(&mut self, depth: usize) -> Result<Json, String> {
        if depth > MAX_DEPTH {
            return Err(format!("nesting deeper than {MAX_DEPTH} levels"));
        }
        self.space();
        match self.peek() {
            None => Err("unexpected end of JSON".into()),
            Some(b'{') => {
                self.pos += 1;
                let mut entries: Vec<(String, Json)> = Vec::new();
                self.space();
                if self.peek() == Some(b'}') {
                    self.pos += 1;
                    return Ok(Json::Obj(entries));
                }
                loop {
                    self.space();
                    if self.peek() != Some(b'"') {
                        return Err(format!("expected an object key at byte {}", self.pos));
                    }
                    let key = self.string()?;
                    self.space();
                    self.expect(b':', "expected `:` after an object key")?;
                    let v = self.value(depth + 1)?;
                    // A repeated key: the last value wins, at the first position.
                    match entries.iter_mut().find(|(k, _)| *k == key) {
                        Some(entry) => entry.1 = v,
                        None => entries.push((key, v)),
                    }
                    self.space();
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b'}') => {
                            self.pos += 1;
                            return Ok(Json::Obj(entries));
                        }
                        _ => return Err(format!("expected `,` or `}}` at byte {}", self.pos)),
                    }
                }
            }
            Some(b'[') => {
                self.pos += 1;
                let mut items = Vec::new();
                self.space();
                if self.peek() == Some(b']') {
                    self.pos += 1;
                    return Ok(Json::Arr(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.space();
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b']') => {
                            self.pos += 1;
                            return Ok(Json::Arr(items));
                        }
                        _ => return Err(format!("expected `,` or `]` at byte {}", self.pos)),
                    }
                }
            }
            Some(b'"') => self.string().map(Json::Str),
            Some(b'-' | b'0'..=b'9') => self.number().map(Json::Num),
            Some(_) if self.eat("true") => Ok(Json::Bool(true)),
            Some(_) if self.eat("false") => Ok(Json::Bool(false)),
            Some(_) if self.eat("null") => Ok(Json::Null),
            Some(_) => Err(format!("unexpected character at byte {}", self.pos)),
        }
    }

    /// A number in JSON's grammar, returned as written.
    fn number(&mut self) -> Result<String, String> {
        let start = self.pos;
        let digits = |c: &mut Self| {
            let from = c.pos;
            while matches!(c.peek(), Some(b'0'..=b'9')) {
                c.pos += 1;
            }
            c.pos - from
        };
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                digits(self);
            }
            _ => return Err(format!("invalid number at byte {start}")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if digits(self) == 0 {
                return Err(format!("invalid number at byte {start}"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if digits(self) == 0 {
                return Err(format!("invalid number at byte {start}"));
            }
        }
        Ok(String::from_utf8_lossy(&self.s[start..self.pos]).into_owned())
    }

    /// A JSON string starting at the opening quote.
    fn string(&mut self) -> Result<String, String> {
        let start = self.pos;
        self.pos += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(b) = self.peek() else { return Err(format!("unterminated string at byte {start}")) };
            self.pos += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let Some(e) = self.peek() else { return Err(format!("unterminated string at byte {start}")) };
                    self.pos += 1;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return Err(format!("invalid escape `\\{}` at byte {}", e as char, self.pos - 2)),
                    };
                    let mut buf = [0; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                b if b < 0x20 => return Err(format!("control character in string at byte {}", self.pos - 1)),
                b => out.push(b),
            }
        }
        String::from_utf8(out).map_err(|_| format!("invalid UTF-8 in string at byte {start}"))
    }

    /// The `XXXX` of `\uXXXX` (and a following low surrogate escape when needed).
    fn unicode_escape(&mut self) -> Result<char, String> {
        let hex4 = |c: &mut Self| -> Result<u32, String> {
            let digits = c.s.get(c.pos..c.pos + 4).ok_or("truncated \\u escape")?;
            let text = std::str::from_utf8(digits).map_err(|_| "invalid \\u escape")?;
            let v = u32::from_str_radix(text, 16).map_err(|_| format!("invalid \\u escape `{text}`"))?;
            c.pos += 4;
            Ok(v)
        };
        let hi = hex4(self)?;
        if (0xD800..0xDC00).contains(&hi) {
            if self.eat("\\u") {
                let lo = hex4(self)?;
                if (0xDC00..0xE000).contains(&lo) {
                    return Ok(char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)).unwrap_or('\u{fffd}'));
                }
            }
            return Ok('\u{fffd}');
        }
        Ok(char::from_u32(hi).unwrap_or('\u{fffd}'))
    }
}

/// A `json:edit` of a file store comes after that `file`.
fn requires(index: &Index<'_>, idx: usize, name: &str, params: &ParamMap, edges: &mut Edges) {
    let store = str_param(params, "store").filter(|s| !s.is_empty()).unwrap_or(name);
    let path = store.strip_prefix("file://").unwrap_or(store);
    if path.starts_with('/') {
        edges.extend(index.file(path).map(|f| (f, idx)));
    }
}

/// The `json:edit` kind: its params and send fields as the type checker sees them, and its constructor.
pub const JSON_EDIT: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("json:edit", JsonEditParams::FIELDS, crate::built_on_host!(JsonEdit))
        .autoedges(crate::contract::autoedge::Rules { provides: None, requires: Some(requires), reads: &["store"] });

#[cfg(test)]
mod tests {
    use super::*;

    fn pretty(j: &Json) -> String {
        let mut s = String::new();
        j.write_pretty(&mut s, 0);
        s
    }

    #[test]
    fn stores_parse_like_paths_and_uris() {
        assert_eq!(parse_store("/etc/x.json"), Ok(Store::File("/etc/x.json".into())));
        assert_eq!(parse_store("file:///etc/x.json"), Ok(Store::File("/etc/x.json".into())));
        assert_eq!(parse_store("etcd:///magic/hosts"), Ok(Store::World("magic/hosts".into())));
        for bad in ["", "relative.json", "file://host/x", "etcd:///", "etcd://h/k", "http:///x", "file:///x?y"] {
            assert!(parse_store(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn edits_parse_dots_brackets_values_and_deletes() {
        let e = parse_edit(r#".["service.example.com"].settings.labels.region = "ca""#).unwrap();
        assert_eq!(e.path, ["service.example.com", "settings", "labels", "region"]);
        assert_eq!(e.value, Some(Json::Str("ca".into())));
        let e = parse_edit(r#".["a"].b.["production/blue"]["x"] = {"k": [1, null]}"#).unwrap();
        assert_eq!(e.path, ["a", "b", "production/blue", "x"]);
        let e = parse_edit(r#".["team \"blue\""].status = "ready""#).unwrap();
        assert_eq!(e.path, ["team \"blue\"", "status"]);
        let e = parse_edit(".release.build_id = 9007199254740993").unwrap();
        assert_eq!(e.value, Some(Json::Num("9007199254740993".into())));
        let e = parse_edit("  del( .labels.legacy )  ").unwrap();
        assert_eq!((e.path.as_slice(), e.value), (&["labels".to_string(), "legacy".to_string()][..], None));
        for bad in [
            "a = 1",
            ". = 1",
            ".a",
            ".a =",
            ".a = 1 2",
            ".1a = 1",
            r#".[""] = 1"#,
            ".[1] = 1",
            "del(.a",
            "del(.a) x",
            ".a = tru",
        ] {
            assert!(parse_edit(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn documents_keep_order_numbers_and_escapes() {
        let doc =
            parse_document(r#" {"z":1.50,"a":[],"m":{},"s":"q\"\u00e9\ud83d\ude00\n","n":null,"b":false} "#).unwrap();
        assert_eq!(
            pretty(&doc),
            "{\n\t\"z\": 1.50,\n\t\"a\": [],\n\t\"m\": {},\n\t\"s\": \"q\\\"é😀\\n\",\n\t\"n\": null,\n\t\"b\": false\n}"
        );
        assert_eq!(parse_document(&pretty(&doc)).unwrap(), doc, "the rendering parses back");
        for bad in ["[1]", "{", "{} {}", r#"{"a":01}"#, r#"{"a":1.}"#, "{\"a\":\"\u{1}\"}", r#"{"a" 1}"#, "{'a':1}"] {
            assert!(parse_document(bad).is_err(), "{bad}");
        }
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(MAX_DEPTH + 5), "]".repeat(MAX_DEPTH + 5));
        assert!(parse_document(&deep).is_err());
    }

    #[test]
    fn edits_apply_in_place_create_parents_and_refuse_non_objects() {
        let mut doc = parse_document(r#"{"a":{"x":1,"y":2},"b":3}"#).unwrap();
        parse_edit(".a.x = 10").unwrap().apply(&mut doc).unwrap();
        parse_edit(".c.d.e = true").unwrap().apply(&mut doc).unwrap();
        parse_edit("del(.a.y)").unwrap().apply(&mut doc).unwrap();
        parse_edit("del(.missing.deep)").unwrap().apply(&mut doc).unwrap();
        assert_eq!(doc, parse_document(r#"{"a":{"x":10},"b":3,"c":{"d":{"e":true}}}"#).unwrap());
        let err = parse_edit(".b.c = 1").unwrap().apply(&mut doc).unwrap_err();
        assert!(err.contains("`b` is not a JSON object"), "{err}");
        let before = doc.clone();
        parse_edit(".a.x = 10").unwrap().apply(&mut doc).unwrap();
        assert_eq!(doc, before, "an edit that already holds changes nothing");
    }
}
