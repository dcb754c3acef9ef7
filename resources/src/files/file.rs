//! `file`: manages a file, a directory (path ends in `/`) or a symlink: existence, content
//! (literal, copied from a source, or concatenated fragments), owner, group and mode.
//!
//! Sub-checks run in order: state, type, content/source/fragments, symlink, owner/group,
//! mode, SELinux context; the first failure aborts. Without `state => "exists"` a missing path is an error
//! when anything else is managed (no implicit create, as in mgmt). Writes are atomic
//! (`util::fs::atomic_write`); a symlink at the path is never followed, and is replaced only
//! with `force`. `selinux` sets the `security.selinux` extended attribute (of the path itself,
//! never a symlink's target), as mgmt does; `""` removes it.
//!
//! A regular file with literal content, the bulk of most programs, is first checked on a
//! short path (`quick`): open, fstat and read when it is right, the atomic create when it
//! is missing. Whatever else it finds goes through the full sub-checks.

use lang::params::ParamMap;
use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use engine::{ApplyCtx, InitCtx, IoAt, Payload, ResError, Resource, Subscription, WatchCtx};
use lang::value::Value;

use crate::contract::autoedge::{Edges, Index, ancestors, file_path, list_param};
use crate::contract::common::{res_error, value_of};
use crate::contract::params::{BuildError, Params};
use crate::contract::text::Text;
use crate::contract::typed::Presence;
use crate::util::fs::{
    TEMP_PREFIX, TempSweeps, atomic_write, lchown, lookup_gid, lookup_uid, parse_mode, unified_diff,
};
use crate::util::path;
use crate::util::watch::{FileWatch, Spelt, Target, spelt_path};

mod quick;
use quick::Quick;

crate::params! {
    /// The params, as the user sees them.
    #[derive(Clone, Debug, PartialEq)]
    pub struct FileParams {
        /// Absolute path (from `path`, `dirname`, `basename` or the name); a trailing `/`
        /// means a directory.
        pub path: Text => resolved_path,
        /// Replaces the directory part of the path (ends in `/`).
        pub dirname: Text,
        /// Replaces the last component of the path.
        pub basename: Text,
        /// Unset: never create or delete.
        pub state: Presence,
        pub content: Option<Arc<str>>,
        pub source: Text,
        pub fragments: Box<[String]>,
        pub owner: Text,
        pub group: Text,
        pub mode: Text,
        pub recurse: bool,
        pub force: bool,
        pub purge: bool,
        pub symlink: bool,
        pub selinux: Option<Arc<str>>,
    }
}

impl FileParams {
    /// Values that decode back to these params: every field that is set, the resolved
    /// `path` beside the `dirname` and `basename` it came from (resolving it again gives
    /// the same path). The strings are shared, not copied.
    fn values(&self) -> ParamMap {
        let mut values = ParamMap::new();
        let mut put = |field: &str, value: Value| values.insert(field.to_string(), value);
        for (field, text) in [
            ("path", &self.path),
            ("dirname", &self.dirname),
            ("basename", &self.basename),
            ("source", &self.source),
            ("owner", &self.owner),
            ("group", &self.group),
            ("mode", &self.mode),
        ] {
            if let Some(text) = text.shared() {
                put(field, Value::Str(text.clone()));
            }
        }
        if self.state != Presence::Unset {
            put("state", Value::str(self.state.as_str()));
        }
        for (field, text) in [("content", &self.content), ("selinux", &self.selinux)] {
            if let Some(text) = text {
                put(field, Value::Str(text.clone()));
            }
        }
        if !self.fragments.is_empty() {
            put("fragments", Value::List(Arc::new(self.fragments.iter().map(Value::str).collect())));
        }
        for (field, flag) in
            [("recurse", self.recurse), ("force", self.force), ("purge", self.purge), ("symlink", self.symlink)]
        {
            if flag {
                put(field, Value::Bool(true));
            }
        }
        values
    }
}

/// The path `path`, `dirname` and `basename` (or the name) make together.
fn resolved_path(p: &Params<'_>, _field: &str) -> Result<Text, BuildError> {
    let mut values = ParamMap::new();
    for field in ["path", "dirname", "basename"] {
        if let Some(text) = p.opt_str(field)? {
            values.insert(field.to_string(), Value::str(text));
        }
    }
    Ok(Text::from(file_path(p.name, &values).into_owned()))
}

pub struct File {
    /// The only copy of the params a running file keeps: a received value is laid over
    /// their values ([`FileParams::values`]), not over the raw values it was built from,
    /// which the graph lets go.
    params: FileParams,
    /// The file as the last successful check-apply proved it right (see
    /// [`File::full_check`]), for a file whose whole state comes from its params (literal
    /// content). A later check that finds the same inode with the same change time, size,
    /// mode and owner knows nothing touched it and skips reading it: this is what the check
    /// after the resource's own write (woken by its own watch) finds. Shared with the
    /// watch, which drops a wake-up when the file still carries this stamp: the event was
    /// the resource's own write (or a no-op touch of nothing it manages), and checking
    /// again would find it right.
    verified: Arc<Verified>,
    /// Where init sweeps the file's directory of temporary files a crashed run left.
    sweeps: Option<Arc<TempSweeps>>,
    /// What few files have; `None` for a file named by its path that spares nothing.
    rare: Option<Box<Rare>>,
}

// Every managed file has one: mimalloc's 192-byte class.
const _: () = assert!(std::mem::size_of::<File>() <= 192);

#[derive(Default)]
struct Rare {
    /// The resource's name when it is not its path (the params set `path`, `dirname` or
    /// `basename`). A file named by its path keeps that one string, shared with the
    /// graph's key and with the watch.
    name: Option<Arc<str>>,
    /// Paths managed by other `file` resources of the graph; `purge` leaves them alone.
    spared: Box<[PathBuf]>,
}

/// What identifies one version of a file: any write, chmod, chown or replacement changes it
/// (the kernel sets ctime on every one of them, and users cannot set ctime).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mode: u32,
    uid: u32,
    gid: u32,
    ctime: (i64, i64),
    mtime: (i64, i64),
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        fs::symlink_metadata(path).ok().filter(|m| m.is_file()).map(|m| Stamp::from_meta(&m))
    }

    fn from_meta(m: &fs::Metadata) -> Stamp {
        Stamp {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mode: m.mode(),
            uid: m.uid(),
            gid: m.gid(),
            ctime: (m.ctime(), m.ctime_nsec()),
            mtime: (m.mtime(), m.mtime_nsec()),
        }
    }

    /// The stamp as one word, never 0. Two stamps that differ give the same word with a
    /// chance of one in 2^64 (the hash is SipHash, keyed alike in every process).
    fn word(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::hash::DefaultHasher::new();
        self.hash(&mut hasher);
        hasher.finish().max(1)
    }
}

/// A file's verified [`Stamp`] as a word, 0 for none: shared by a running `file` and its
/// watch, in 8 bytes instead of a locked stamp's 80 (a daemon holds one per file).
#[derive(Default)]
struct Verified(AtomicU64);

impl Verified {
    fn set(&self, stamp: Option<Stamp>) {
        self.0.store(stamp.map_or(0, |s| s.word()), Ordering::Release);
    }

    /// Whether a stamp is kept and the file at `path` still carries it.
    fn holds(&self, path: &Path) -> bool {
        let word = self.0.load(Ordering::Acquire);
        word != 0 && Stamp::of(path).is_some_and(|s| s.word() == word)
    }
}

impl FileParams {
    fn is_dir(&self) -> bool {
        self.path.ends_with('/')
    }

    /// Whether the file's whole desired state is in the params (a regular file with literal
    /// content), so an unchanged [`Stamp`] proves it is still right.
    fn stamp_covers_state(&self) -> bool {
        self.state == Presence::Exists
            && !self.is_dir()
            && self.content.is_some()
            && self.source.is_empty()
            && self.fragments.is_empty()
            && !self.symlink
            && self.selinux.is_none()
    }

    /// Why the paths are refused (each must be absolute and in normal form, see
    /// `util::path`); `path_field` as for [`FileParams::validate`].
    fn check_paths(&self, path_field: Option<&'static str>) -> Result<(), (Option<&'static str>, String)> {
        path::check(&self.path).map_err(|m| (path_field, m))?;
        if !self.source.is_empty() && !self.symlink {
            path::check(&self.source).map_err(|m| (Some("source"), m))?;
        }
        for frag in &self.fragments {
            path::check(frag).map_err(|m| (Some("fragments"), m))?;
        }
        Ok(())
    }

    /// Why the params are refused, with the field at fault when one is; `path_field` is
    /// `None` when the path is the resource's name.
    fn validate(&self, path_field: Option<&'static str>) -> Result<(), (Option<&'static str>, String)> {
        let whole = |message: &str| Err((None, message.to_string()));
        self.check_paths(path_field)?;
        let sources = [self.content.is_some(), !self.source.is_empty(), !self.fragments.is_empty()];
        if sources.iter().filter(|s| **s).count() > 1 {
            return whole("only one of content, source and fragments may be set");
        }
        if self.state == Presence::Absent && (self.content.is_some() || !self.fragments.is_empty()) {
            return whole("an absent file cannot have content");
        }
        if self.is_dir() && (self.content.is_some() || !self.fragments.is_empty() || self.symlink) {
            return whole("a directory (path ending in `/`) cannot have content, fragments or be a symlink");
        }
        if self.purge && !self.recurse {
            return Err((Some("purge"), "purge needs recurse".into()));
        }
        if self.recurse && !self.is_dir() && !self.source.is_empty() {
            return Err((Some("recurse"), "recurse only applies to directories (end the path with `/`)".into()));
        }
        if self.symlink && self.source.is_empty() {
            return Err((Some("symlink"), "a symlink needs a source (its target)".into()));
        }
        for frag in &self.fragments {
            if frag.trim_end_matches('/') == self.path.trim_end_matches('/') {
                return Err((Some("fragments"), format!("fragment `{frag}` is the file itself")));
            }
            if frag.ends_with('/') && self.path.starts_with(frag.as_str()) {
                return Err((
                    Some("fragments"),
                    format!("the file is inside its fragment directory `{frag}`: its content would include itself"),
                ));
            }
        }
        if !self.mode.is_empty() {
            parse_mode(&self.mode, 0).map_err(|m| (Some("mode"), m))?;
        }
        if self.selinux.is_some() && self.state == Presence::Absent {
            return Err((Some("selinux"), "an absent file has no SELinux context (drop selinux or the state)".into()));
        }
        Ok(())
    }
}

impl File {
    pub fn build(name: &str, values: &ParamMap) -> Result<File, BuildError> {
        File::build_named(Arc::from(name), values)
    }

    /// [`File::build`], keeping `name` as it is shared (the graph's key holds it), also as
    /// the path when the path is the name, as it mostly is: one string, not three.
    pub fn build_named(name: Arc<str>, values: &ParamMap) -> Result<File, BuildError> {
        let mut params = FileParams::decode(&Params::new("file", &name, values)?)?;
        let rare = if *params.path == *name {
            params.path = Text::from(name);
            None
        } else {
            Some(Box::new(Rare { name: Some(name), spared: Box::default() }))
        };
        Ok(File { params, verified: Arc::default(), sweeps: None, rare })
    }

    /// The resource's name, for messages.
    fn name(&self) -> &str {
        self.rare.as_ref().and_then(|r| r.name.as_deref()).unwrap_or(&self.params.path)
    }

    fn spared(&self) -> &[PathBuf] {
        self.rare.as_ref().map_or(&[], |r| &r.spared)
    }

    /// Has init sweep the file's directory (once per directory and `sweeps`) of the
    /// temporary files of writers that died.
    pub fn sweeping(mut self, sweeps: Arc<TempSweeps>) -> File {
        self.sweeps = Some(sweeps);
        self
    }

    /// Tells a purging directory which paths other resources manage (mgmt spares them).
    pub fn spare(mut self, paths: impl IntoIterator<Item = PathBuf>) -> File {
        let mut spared: Vec<PathBuf> = paths.into_iter().collect();
        spared.sort();
        self.rare.get_or_insert_default().spared = spared.into_boxed_slice();
        self
    }

    pub fn params(&self) -> &FileParams {
        &self.params
    }
}

/// What is at the path right now (never following a symlink there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    Missing,
    File,
    Dir,
    Symlink,
}

fn found(path: &Path) -> io::Result<Found> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Ok(Found::Symlink),
        Ok(m) if m.is_dir() => Ok(Found::Dir),
        Ok(_) => Ok(Found::File),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Found::Missing),
        Err(e) => Err(e),
    }
}

/// Applies one sub-check's outcome: `ok` stays true only if nothing was wrong.
struct Run<'a> {
    ctx: &'a mut ApplyCtx,
    apply: bool,
    ok: bool,
    path: &'a str,
    spared: &'a [PathBuf],
}

impl Run<'_> {
    /// Something is wrong: in noop mode reports what `would` be done, in apply mode what
    /// `did` (the caller then does it).
    fn wrong(&mut self, would: String, did: String) {
        self.ok = false;
        if self.apply {
            self.ctx.report(did);
        } else {
            self.ctx.report(format!("file[{}]: would {would}", self.path));
        }
    }
}

#[async_trait]
impl Resource for File {
    fn validate(&self) -> Result<(), ResError> {
        // A file named otherwise has its path from its params.
        let path_field = self.rare.as_ref().is_some_and(|r| r.name.is_some()).then_some("path");
        self.params.validate(path_field).map_err(|(field, m)| res_error(self.raw_error(field, m)))
    }

    async fn init(&mut self, _ctx: &InitCtx) -> Result<(), ResError> {
        if let Some(sweeps) = &self.sweeps {
            sweeps.sweep_dir_of(Path::new(self.params.path.trim_end_matches('/')));
        }
        Ok(())
    }

    /// A file's watch only tells the engine about changes.
    fn watch_passive(&self) -> bool {
        true
    }

    /// The process's one inotify hub calls the node on each change: no task, no future.
    /// Only a file whose whole state the stamp proves can tell its own writes apart (the
    /// call sees that the file is still as this resource last verified it).
    fn subscribe(&self, ctx: &WatchCtx) -> Option<Result<Box<dyn Subscription>, ResError>> {
        let p = &self.params;
        // The path's string is the name's: the hub shares it instead of keeping a copy.
        let path = p.path.shared().map_or_else(|| Target::Path(PathBuf::from(&*p.path)), |s| Target::Shared(s.clone()));
        let mut targets = vec![path];
        if !p.source.is_empty() && p.source.starts_with('/') {
            targets.push(Target::Path(PathBuf::from(&p.source)));
        }
        targets.extend(p.fragments.iter().map(|f| Target::Path(PathBuf::from(f))));
        let own = (targets.len() == 1 && p.stamp_covers_state()).then(|| self.verified.clone());
        let ctx = ctx.clone();
        let call = move |targets: &[Spelt], moved: bool| {
            // A moved watch is an event even when the file looks as verified: the engine's
            // refresh that follows is what moves the watch down to the file's new parent.
            let unchanged = !moved && own.as_ref().is_some_and(|verified| verified.holds(spelt_path(&targets[0])));
            if !unchanged {
                ctx.event();
            }
        };
        Some(FileWatch::calling(targets, p.recurse, call).map(|w| Box::new(w) as Box<dyn Subscription>))
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let p = &self.params;
        let cacheable = apply && p.stamp_covers_state();
        if cacheable && self.verified.holds(Path::new(&p.path)) {
            return Ok(true);
        }
        self.verified.set(None);
        if cacheable && p.owner.is_empty() && p.group.is_empty() {
            let desired = p.content.as_deref().unwrap_or_default().as_bytes();
            let (right, stamp) = match quick::check(Path::new(&p.path), desired, &p.mode) {
                Quick::Right(stamp) => (true, Some(stamp)),
                Quick::Created(stamp) => {
                    ctx.report(format!("created ({} bytes)", desired.len()));
                    (false, stamp)
                }
                Quick::Other => return self.full_check(ctx, apply, cacheable),
            };
            self.verified.set(stamp);
            return Ok(right);
        }
        self.full_check(ctx, apply, cacheable)
    }

    /// Every param, length-prefixed (unambiguous, and much cheaper than a `Debug` dump,
    /// which escapes every character: at 10,000 files this was a sixth of a swap).
    fn fingerprint(&self) -> String {
        use crate::contract::typed::{fingerprint_str, push_decimal};
        // Destructured, so a new param cannot be left out of the fingerprint.
        let FileParams {
            path,
            dirname: _,
            basename: _,
            state,
            content,
            source,
            fragments,
            owner,
            group,
            mode,
            recurse,
            force,
            purge,
            symlink,
            selinux,
        } = &self.params;
        let mut out = String::with_capacity(96 + path.len() + content.as_ref().map_or(0, |c| c.len()));
        let field = |out: &mut String, text: Option<&str>| match text {
            Some(text) => fingerprint_str(text, out),
            None => out.push('-'),
        };
        // A count as a field of its own: its digits, prefixed by how many there are.
        let count = |out: &mut String, n: usize| {
            push_decimal(out, u64::from(n.checked_ilog10().map_or(1, |log| log + 1)));
            out.push(':');
            push_decimal(out, n as u64);
        };
        for text in [path, state.as_str(), source, owner, group, mode] {
            field(&mut out, Some(text));
        }
        field(&mut out, content.as_deref());
        field(&mut out, selinux.as_deref());
        count(&mut out, fragments.len());
        for fragment in fragments {
            field(&mut out, Some(fragment));
        }
        count(&mut out, self.spared().len());
        for spared in self.spared() {
            field(&mut out, Some(&spared.to_string_lossy()));
        }
        for flag in [recurse, force, purge, symlink] {
            out.push(if *flag { 'y' } else { 'n' });
        }
        out
    }

    /// The file as it is now: absent, or a regular file with its content, mode and
    /// owner. Directories and source-copied files are refused, as in mgmt.
    fn reversal(&self) -> Result<Option<Box<dyn Resource>>, ResError> {
        let p = &self.params;
        let refuse = |why: &str| Err(ResError::new(format!("file[{}]: cannot reverse {why}", self.name())));
        if p.is_dir() {
            return refuse("a directory");
        }
        if !p.source.is_empty() {
            return refuse("a file copied from a source");
        }
        let path = Path::new(&p.path);
        let mut values = ParamMap::from([("path".to_string(), Value::str(&p.path))]);
        match fs::symlink_metadata(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                values.insert("state".into(), Value::str("absent"));
            }
            Err(e) => return Err(ResError::new(format!("file[{}]: {e}", self.name()))),
            Ok(m) if !m.is_file() => return refuse("something that is not a regular file"),
            Ok(m) => {
                let content = fs::read(path).at(path)?;
                let Ok(content) = String::from_utf8(content) else { return refuse("binary content") };
                values.insert("state".into(), Value::str("exists"));
                values.insert("content".into(), Value::str(content));
                values.insert("mode".into(), Value::str(format!("{:04o}", m.mode() & 0o7777)));
                values.insert("owner".into(), Value::str(m.uid().to_string()));
                values.insert("group".into(), Value::str(m.gid().to_string()));
                values.insert("force".into(), Value::Bool(true));
            }
        }
        let reverse = File::build(self.name(), &values).map_err(|e| ResError::new(e.to_string()))?;
        Ok(Some(Box::new(reverse)))
    }

    /// Its params, which [`crate::revive`] builds a `file` from again: a reversal's
    /// record on disk (readable by root only: it may hold the file's old content).
    fn record(&self) -> Option<String> {
        lang::exported::params_to_record(&self.params.values()).ok()
    }

    fn recv(&mut self, key: &str, value: &Payload) -> Result<bool, ResError> {
        self.verified.set(None);
        let mut values = self.params.values();
        values.insert(key.to_string(), value_of(value)?.clone());
        let new =
            FileParams::decode(&Params::new("file", self.name(), &values).map_err(res_error)?).map_err(res_error)?;
        // A received path is held to what validation asks of a written one (normal form),
        // before anything is touched.
        new.check_paths(Some("path")).map_err(|(field, m)| res_error(self.raw_error(field, m)))?;
        let changed = new != self.params;
        if new.path != self.params.path && self.rare.as_ref().is_none_or(|r| r.name.is_none()) {
            // The name was the path, which changes: it keeps its own string from now on.
            self.rare.get_or_insert_default().name = Some(Arc::from(self.name()));
        }
        self.params = new;
        Ok(changed)
    }
}

impl File {
    /// Every sub-check in order (see the module docs). When `cacheable` and the file was
    /// found right, records its stamp as taken before the checks read it: a write that
    /// lands during or after them changes the stamp, so it is never taken for verified. A
    /// check that changed the file records none (a stamp taken after its write could be
    /// that of someone else's write landing just after it); the watch's event for its own
    /// write brings the check that records one.
    fn full_check(&mut self, ctx: &mut ApplyCtx, apply: bool, cacheable: bool) -> Result<bool, ResError> {
        let p = &self.params;
        let before = if cacheable { Stamp::of(Path::new(&p.path)) } else { None };
        let mut run = Run { ctx, apply, ok: true, path: &p.path, spared: self.spared() };
        check(p, &mut run).map_err(|e| ResError { message: format!("file[{}]: {}", p.path, e.message), ..e })?;
        if run.ok {
            self.verified.set(before);
        }
        Ok(run.ok)
    }

    fn raw_error(&self, field: Option<&str>, message: String) -> BuildError {
        BuildError { kind: "file".into(), name: self.name().to_string(), field: field.map(str::to_string), message }
    }
}

/// An io failure while `doing` something to the file: the caller prefixes the resource,
/// which names the path, and the error's kind says whether a retry can help.
fn failed(doing: impl std::fmt::Display, e: &io::Error) -> ResError {
    ResError { message: format!("{doing}: {e}"), retry: engine::retry_of(e) }
}

/// The sub-checks in order; errors name what failed, and the caller prefixes the resource.
fn check(p: &FileParams, run: &mut Run<'_>) -> Result<(), ResError> {
    let path = Path::new(p.path.trim_end_matches('/'));
    let path = if path.as_os_str().is_empty() { Path::new("/") } else { path };
    let now = found(path).at(path)?;
    let managed = p.content.is_some()
        || !p.source.is_empty()
        || !p.fragments.is_empty()
        || !p.owner.is_empty()
        || !p.group.is_empty()
        || !p.mode.is_empty()
        || p.selinux.is_some();

    match p.state {
        Presence::Absent => return remove(p, path, now, run),
        Presence::Unset if now == Found::Missing => {
            return if managed {
                Err(ResError::new("does not exist (set state => \"exists\" to create it)"))
            } else {
                Ok(())
            };
        }
        _ => {}
    }

    // Type: the right kind of thing at the path, converting only with force.
    let want = if p.symlink {
        Found::Symlink
    } else if p.is_dir() {
        Found::Dir
    } else {
        Found::File
    };
    let mut now = now;
    if now != Found::Missing && now != want {
        if !p.force {
            return Err(ResError::new(
                format!("is a {now:?} but should be a {want:?} (set force => true to replace it)").to_lowercase(),
            ));
        }
        run.wrong(
            format!("replace the {now:?} with a {want:?}").to_lowercase(),
            format!("replaced the {now:?} with a {want:?}").to_lowercase(),
        );
        if run.apply {
            remove_any(path, now).map_err(|e| failed("cannot remove", &e))?;
        }
        now = Found::Missing;
    }

    if now == Found::Missing {
        match want {
            Found::Dir => {
                run.wrong("create the directory".into(), "created (directory)".into());
                if run.apply {
                    let made = if p.recurse { fs::create_dir_all(path) } else { fs::create_dir(path) };
                    made.map_err(|e| failed("cannot create the directory", &e))?;
                }
            }
            Found::File if desired_content(p)?.is_none() => {
                run.wrong("create an empty file".into(), "created (empty)".into());
                if run.apply {
                    atomic_write(path, b"", new_mode(p)?).map_err(|e| failed("cannot create", &e))?;
                }
            }
            _ => {}
        }
    }

    if let Some(desired) = desired_content(p)? {
        content(p, path, &desired, run)?;
    }
    if p.is_dir() && !p.source.is_empty() {
        sync_tree(Path::new(&p.source), path, p, run)?;
    }
    if p.symlink {
        symlink(p, path, run)?;
    }
    if !run.apply && found(path).at(path)? == Found::Missing {
        return Ok(()); // Nothing more to compare against in noop mode.
    }
    ownership(p, path, run)?;
    mode(p, path, run)?;
    selinux(p, path, run)
}

/// The extended attribute holding a path's SELinux context.
const SELINUX_XATTR: &str = "security.selinux";

/// The SELinux context: `selinux => ""` removes it. Without SELinux in the kernel the
/// attribute is still stored where the file system keeps `security.*` attributes; a file
/// system that keeps none is an error that says so.
fn selinux(p: &FileParams, path: &Path, run: &mut Run<'_>) -> Result<(), ResError> {
    let Some(want) = p.selinux.as_deref() else { return Ok(()) };
    let unsupported = |e: &io::Error| e.raw_os_error() == Some(nix::libc::EOPNOTSUPP);
    let current = match xattr::get(path, SELINUX_XATTR) {
        Ok(v) => v.map(|b| String::from_utf8_lossy(&b).trim_end_matches('\0').to_string()),
        Err(e) if unsupported(&e) => None,
        Err(e) => return Err(failed("cannot read the SELinux context", &e)),
    };
    if current.as_deref().unwrap_or_default() == want {
        return Ok(());
    }
    match want {
        "" => run.wrong("remove the SELinux context".into(), "SELinux context removed".into()),
        _ => run.wrong(format!("set the SELinux context to {want}"), format!("SELinux context {want}")),
    }
    if !run.apply {
        return Ok(());
    }
    let done = if want.is_empty() {
        xattr::remove(path, SELINUX_XATTR)
    } else {
        xattr::set(path, SELINUX_XATTR, want.as_bytes())
    };
    match done {
        Err(e) if unsupported(&e) => {
            Err(ResError::new("setting an SELinux context is not supported on this file system"))
        }
        Err(e) => Err(failed("cannot set the SELinux context", &e)),
        Ok(()) => Ok(()),
    }
}

fn remove(p: &FileParams, path: &Path, now: Found, run: &mut Run<'_>) -> Result<(), ResError> {
    if now == Found::Missing {
        return Ok(());
    }
    run.wrong("remove it".into(), "removed".into());
    if !run.apply {
        return Ok(());
    }
    if now == Found::Dir && !p.recurse {
        return fs::remove_dir(path)
            .map_err(|e| failed("cannot remove the directory (set recurse to remove its contents)", &e));
    }
    remove_any(path, now).map_err(|e| failed("cannot remove", &e))
}

fn remove_any(path: &Path, now: Found) -> io::Result<()> {
    match now {
        Found::Dir => fs::remove_dir_all(path),
        Found::Missing => Ok(()),
        Found::File | Found::Symlink => fs::remove_file(path),
    }
}

/// The bytes the file must hold, if its content is managed: literal content, a file
/// source, or the concatenated fragments.
fn desired_content(p: &FileParams) -> Result<Option<Vec<u8>>, ResError> {
    if let Some(c) = &p.content {
        return Ok(Some(c.as_bytes().to_vec()));
    }
    if !p.fragments.is_empty() {
        let mut out = Vec::new();
        for frag in &p.fragments {
            if frag.ends_with('/') {
                let mut entries: Vec<PathBuf> = fs::read_dir(frag)
                    .map_err(|e| failed(format!("fragment directory `{frag}`"), &e))?
                    .filter_map(|e| e.ok())
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                    .map(|e| e.path())
                    .collect();
                entries.sort();
                for entry in entries {
                    out.extend(fs::read(&entry).map_err(|e| failed(format!("fragment `{}`", entry.display()), &e))?);
                }
            } else {
                out.extend(fs::read(frag).map_err(|e| failed(format!("fragment `{frag}`"), &e))?);
            }
        }
        return Ok(Some(out));
    }
    if !p.source.is_empty() && !p.symlink && !p.is_dir() {
        return fs::read(&p.source).map(Some).map_err(|e| failed(format!("source `{}`", p.source), &e));
    }
    Ok(None)
}

/// Mode for a file created here: the `mode` param, else the source's mode, else 0644.
fn new_mode(p: &FileParams) -> Result<Option<u32>, ResError> {
    if !p.mode.is_empty() {
        return parse_mode(&p.mode, 0o644).map(Some).map_err(ResError::new);
    }
    if !p.source.is_empty() && !p.symlink {
        return Ok(fs::metadata(&p.source).ok().map(|m| m.mode() & 0o7777));
    }
    Ok(None)
}

fn content(p: &FileParams, path: &Path, desired: &[u8], run: &mut Run<'_>) -> Result<(), ResError> {
    // open + read, without the size query `fs::read` makes: the desired length is the
    // right capacity whenever the file is already correct (the common case).
    let read = fs::File::open(path).and_then(|mut f| {
        let mut buf = Vec::with_capacity(desired.len() + 1);
        io::Read::read_to_end(&mut f, &mut buf).map(|_| buf)
    });
    let (current, exists) = match read {
        Ok(c) => (c, true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => (Vec::new(), false),
        Err(e) => return Err(failed("cannot read", &e)),
    };
    if exists && current == desired {
        return Ok(());
    }
    run.ok = false;
    if !run.apply {
        let diff = if !lang::secret::shown() && lang::secret::file_content_is_secret(&p.path, &p.mode) {
            // Others may not read it: its content is never printed, only its size and digest.
            let was = if exists { lang::secret::summary(&current) } else { "nothing".to_string() };
            format!("{was} -> {}", lang::secret::summary(desired))
        } else {
            unified_diff(&p.path, &String::from_utf8_lossy(&current), &String::from_utf8_lossy(desired))
        };
        // An empty file created has no diff to show.
        let diff = if diff.trim().is_empty() { String::new() } else { format!(":\n{diff}") };
        if exists {
            run.ctx.report(format!("file[{}]: would change content{diff}", p.path));
        } else {
            run.ctx.report(format!("file[{}]: would be created ({} bytes){diff}", p.path, desired.len()));
        }
        return Ok(());
    }
    let mode = if exists { None } else { new_mode(p)? };
    atomic_write(path, desired, mode).map_err(|e| failed("cannot write", &e))?;
    let size = desired.len();
    run.ctx.report(if exists { format!("content changed ({size} bytes)") } else { format!("created ({size} bytes)") });
    Ok(())
}

fn symlink(p: &FileParams, path: &Path, run: &mut Run<'_>) -> Result<(), ResError> {
    let target = fs::read_link(path).ok();
    if target.as_deref() == Some(Path::new(&p.source)) {
        return Ok(());
    }
    run.wrong(format!("point the symlink at `{}`", p.source), format!("symlink -> {}", p.source));
    if run.apply {
        if target.is_some() {
            fs::remove_file(path).map_err(|e| failed("cannot replace the symlink", &e))?;
        }
        std::os::unix::fs::symlink(&p.source, path).map_err(|e| failed("cannot create the symlink", &e))?;
    }
    Ok(())
}

/// rsync-like copy of a source tree into `dest`, comparing each entry as it is, never
/// through a symlink: a symlink in the source is copied as a symlink (its target as
/// written, as `cp -a` does), and one in the target tree is compared, replaced (only with
/// `force`, like any change of an entry's type) or purged as a link, never followed, so
/// nothing outside `dest` is read, written or removed. `purge` deletes the entries the
/// source does not have.
fn sync_tree(source: &Path, dest: &Path, p: &FileParams, run: &mut Run<'_>) -> Result<(), ResError> {
    let src_meta = fs::metadata(source).map_err(|e| failed(format!("source `{}`", source.display()), &e))?;
    if !src_meta.is_dir() {
        return Err(ResError::new(format!("source `{}` is not a directory", source.display())));
    }
    sync_dir(source, dest, p, run)
}

/// One directory of [`sync_tree`]: `dest` is made a directory (with `force` when something
/// else is there), then each source entry is synced into it.
fn sync_dir(source: &Path, dest: &Path, p: &FileParams, run: &mut Run<'_>) -> Result<(), ResError> {
    let now = found(dest).at(dest)?;
    if now != Found::Dir {
        if !replace(dest, now, "a directory", p, run)? {
            return Ok(());
        }
        run.wrong(format!("create the directory {}", dest.display()), format!("created {}", dest.display()));
        if !run.apply {
            return Ok(());
        }
        fs::create_dir(dest).map_err(|e| failed(format!("cannot create {}", dest.display()), &e))?;
    }
    let mut names = std::collections::HashSet::new();
    for entry in fs::read_dir(source).at(source)? {
        let entry = entry.at(source)?;
        let (from, to) = (entry.path(), dest.join(entry.file_name()));
        names.insert(entry.file_name());
        let kind = entry.file_type().at(&from)?;
        if kind.is_dir() {
            sync_dir(&from, &to, p, run)?;
        } else if kind.is_file() {
            sync_file(&from, &to, p, run)?;
        } else if kind.is_symlink() {
            sync_link(&from, &to, p, run)?;
        } else {
            // A FIFO, socket or device has no content to copy.
            run.ctx.report(format!("file[{}]: skipped {} (not a file, directory or symlink)", p.path, from.display()));
        }
    }
    if p.purge && found(dest).at(dest)? == Found::Dir {
        for entry in fs::read_dir(dest).at(dest)? {
            let entry = entry.at(dest)?;
            // Temp files of atomic writes in flight (another resource writing a spared file
            // in this directory) are not strays.
            let in_flight = entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX);
            let spared =
                in_flight || run.spared.iter().any(|p| p.as_path() == entry.path() || p.starts_with(entry.path()));
            if !names.contains(&entry.file_name()) && !spared {
                run.wrong(format!("purge {}", entry.path().display()), format!("purged {}", entry.path().display()));
                if run.apply {
                    // `found` never follows a link: a purged symlink is the link alone.
                    let kind = found(&entry.path()).at(entry.path())?;
                    remove_any(&entry.path(), kind).at(entry.path())?;
                }
            }
        }
    }
    Ok(())
}

/// Clears the way for an entry of another type at `to` (`now` is there): with `force`,
/// removes what is there (a symlink as a link); without, fails. Whether the caller goes on
/// to make its entry (always, unless a noop run had something to remove).
fn replace(to: &Path, now: Found, want: &str, p: &FileParams, run: &mut Run<'_>) -> Result<bool, ResError> {
    if now == Found::Missing {
        return Ok(true);
    }
    let what = match now {
        Found::File => "a file",
        Found::Dir => "a directory",
        _ => "a symlink",
    };
    if !p.force {
        return Err(ResError::new(format!(
            "{} is {what} but should be {want} (set force => true to replace it)",
            to.display()
        )));
    }
    run.wrong(
        format!("replace {what} at {} with {want}", to.display()),
        format!("replaced {what} at {} with {want}", to.display()),
    );
    if run.apply {
        remove_any(to, now).map_err(|e| failed(format!("cannot remove {}", to.display()), &e))?;
    }
    Ok(run.apply)
}

fn sync_file(from: &Path, to: &Path, p: &FileParams, run: &mut Run<'_>) -> Result<(), ResError> {
    let data = fs::read(from).at(from)?;
    let now = found(to).at(to)?;
    if now == Found::File && fs::read(to).is_ok_and(|cur| cur == data) {
        return Ok(());
    }
    if now != Found::File && !replace(to, now, "a file", p, run)? {
        return Ok(());
    }
    run.wrong(format!("copy {} to {}", from.display(), to.display()), format!("copied {}", to.display()));
    if run.apply {
        let mode = fs::symlink_metadata(from).map(|m| m.mode() & 0o7777).ok();
        atomic_write(to, &data, mode).at(to)?;
    }
    Ok(())
}

fn sync_link(from: &Path, to: &Path, p: &FileParams, run: &mut Run<'_>) -> Result<(), ResError> {
    let target = fs::read_link(from).at(from)?;
    let now = found(to).at(to)?;
    if now == Found::Symlink && fs::read_link(to).ok().as_deref() == Some(target.as_path()) {
        return Ok(());
    }
    // A link pointing elsewhere is changed without force: only its target (a string) is lost.
    if now != Found::Symlink && !replace(to, now, "a symlink", p, run)? {
        return Ok(());
    }
    run.wrong(
        format!("point {} at {}", to.display(), target.display()),
        format!("symlink {} -> {}", to.display(), target.display()),
    );
    if run.apply {
        if now == Found::Symlink {
            fs::remove_file(to).map_err(|e| failed(format!("cannot replace {}", to.display()), &e))?;
        }
        std::os::unix::fs::symlink(&target, to).map_err(|e| failed(format!("cannot create {}", to.display()), &e))?;
    }
    Ok(())
}

fn ownership(p: &FileParams, path: &Path, run: &mut Run<'_>) -> Result<(), ResError> {
    if p.owner.is_empty() && p.group.is_empty() {
        return Ok(());
    }
    let meta = fs::symlink_metadata(path).at(path)?;
    let uid = if p.owner.is_empty() { None } else { Some(lookup_uid(&p.owner).map_err(ResError::new)?) };
    let gid = if p.group.is_empty() { None } else { Some(lookup_gid(&p.group).map_err(ResError::new)?) };
    let wrong_uid = uid.filter(|u| *u != meta.uid());
    let wrong_gid = gid.filter(|g| *g != meta.gid());
    if wrong_uid.is_none() && wrong_gid.is_none() {
        return Ok(());
    }
    run.wrong(format!("change ownership to {}:{}", p.owner, p.group), format!("owner {}:{}", p.owner, p.group));
    if run.apply {
        lchown(path, wrong_uid, wrong_gid).map_err(|e| failed("cannot change ownership", &e))?;
    }
    Ok(())
}

fn mode(p: &FileParams, path: &Path, run: &mut Run<'_>) -> Result<(), ResError> {
    if p.mode.is_empty() || p.symlink {
        return Ok(());
    }
    let meta = fs::symlink_metadata(path).at(path)?;
    let current = meta.mode() & 0o7777;
    let desired = parse_mode(&p.mode, current).map_err(ResError::new)?;
    if current == desired {
        return Ok(());
    }
    run.wrong(
        format!("change mode from {current:04o} to {desired:04o}"),
        format!("mode {current:04o} -> {desired:04o}"),
    );
    if run.apply {
        fs::set_permissions(path, fs::Permissions::from_mode(desired)).map_err(|e| failed("cannot set mode", &e))?;
    }
    Ok(())
}

/// A `file` provides its path.
fn provides<'a>(index: &mut Index<'a>, idx: usize, name: &'a str, params: &'a ParamMap) {
    index.add_file(file_path(name, params), idx);
}

/// A `file` comes after its nearest managed ancestor directory (which comes after its own,
/// in turn) and after every managed fragment source.
fn requires(index: &Index<'_>, idx: usize, name: &str, params: &ParamMap, edges: &mut Edges) {
    let path = index.path_of(idx).map_or_else(|| file_path(name, params), std::borrow::Cow::Borrowed);
    if let Some(dir) = ancestors(&path).find_map(|dir| index.file(dir)) {
        edges.push((dir, idx));
    }
    for frag in list_param(params, "fragments") {
        if let Some(src) = index.file(frag) {
            edges.push((src, idx));
        }
    }
}

/// The `file` kind: its params and send fields as the type checker sees them, and its constructor.
pub const FILE: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("file", FileParams::FIELDS, |host, name, params| {
        Ok(Box::new(File::build(name, params)?.sweeping(host.temps.clone())))
    })
    .receiving()
    .autoedges(crate::contract::autoedge::Rules {
        provides: Some(provides),
        requires: Some(requires),
        reads: &["path", "dirname", "basename", "fragments"],
    })
    .in_graph(crate::contract::kind::InGraph {
        claims: Some(crate::contract::autoedge::file_path),
        purges: Some(|params| matches!(params.get("purge"), Some(lang::value::Value::Bool(true)))),
        ..crate::contract::kind::InGraph::NONE
    });

#[cfg(test)]
mod tests {
    use super::*;
    use lang::value::Value;

    fn file(path: &Path, content: &str) -> File {
        let params: lang::params::ParamMap = [("state", "exists"), ("content", content)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), Value::str(v)))
            .collect();
        File::build(path.to_str().unwrap(), &params).expect("builds")
    }

    async fn check(f: &mut File) -> bool {
        f.check_apply(&mut ApplyCtx::detached(), true).await.expect("checks")
    }

    /// A file named by its path keeps one string for both; one named otherwise keeps its
    /// name apart, and so does one whose path a received value changes.
    #[test]
    fn a_file_keeps_a_name_of_its_own_only_when_it_is_not_its_path() {
        let by_path = file(Path::new("/srv/a.conf"), "x");
        assert!(by_path.rare.is_none());
        assert_eq!(by_path.name(), "/srv/a.conf");

        let values = [("path".to_string(), Value::str("/srv/b.conf"))].into_iter().collect();
        let named = File::build("b", &values).expect("builds");
        assert_eq!((named.name(), &*named.params.path), ("b", "/srv/b.conf"));
        assert_eq!(named.raw_error(None, "bad".into()).name, "b");

        let mut moved = by_path;
        let to: Payload = Arc::new(Value::str("/srv/c.conf"));
        assert!(moved.recv("path", &to).expect("receives"));
        assert_eq!((moved.name(), &*moved.params.path), ("/srv/a.conf", "/srv/c.conf"));
    }

    /// As mgmt's: a file may not be inside a fragment directory of its own (its content
    /// would include itself, and grow at every run).
    #[test]
    fn a_file_inside_its_fragment_directory_is_refused() {
        let frags = |list: &[&str]| -> lang::params::ParamMap {
            [("fragments".to_string(), Value::List(Arc::new(list.iter().map(|f| Value::str(*f)).collect())))]
                .into_iter()
                .collect()
        };
        let inside = File::build("/tmp/frags/all", &frags(&["/tmp/frags/"])).expect("builds");
        let err = inside.validate().unwrap_err();
        assert!(err.message.contains("inside its fragment directory `/tmp/frags/`"), "{}", err.message);
        let beside = File::build("/tmp/all", &frags(&["/tmp/frags/", "/tmp/frags2/x"])).expect("builds");
        assert!(beside.validate().is_ok());
    }

    /// The kept stamp's word (0: none).
    fn verified(f: &File) -> u64 {
        f.verified.0.load(Ordering::Acquire)
    }

    fn word(path: &Path) -> u64 {
        Stamp::of(path).expect("a file").word()
    }

    /// The stamp lets the watch drop events and the next check skip the read, so it must
    /// describe a state the check saw right. One taken after the check's own write could
    /// be that of a write landing just after it (the daemon test's drift did, under load),
    /// which would then go unrepaired for good.
    #[tokio::test]
    async fn a_stamp_is_only_kept_for_a_file_the_check_found_right() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conf");
        std::fs::write(&path, "old, longer").unwrap();
        let mut f = file(&path, "new");

        assert!(!check(&mut f).await, "the content was changed");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(verified(&f), 0, "no stamp after a write of its own");

        assert!(check(&mut f).await, "found right");
        assert_eq!(verified(&f), word(&path), "the file as it was found right");

        // Drift written while no stamp is kept is seen and repaired.
        std::fs::write(&path, "drift").unwrap();
        assert!(!check(&mut f).await, "the drift was repaired");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
    }

    /// A file the short path creates is stamped from its own open file, so a write landing
    /// right after the creation still differs from the stamp.
    #[tokio::test]
    async fn a_created_file_is_stamped_as_it_was_made() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fresh");
        let mut f = file(&path, "made");
        assert!(!check(&mut f).await, "created");
        let made = verified(&f);
        assert_eq!(made, word(&path), "O_TMPFILE works in the test's directory: a stamp from the open file");
        std::fs::write(&path, "gone").unwrap();
        assert_ne!(made, word(&path), "a later write of the same size changes the stamp");
        assert!(!check(&mut f).await, "the later write was repaired");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "made");
    }
}
