//! `augeas`: sets values in a configuration file through an augeas lens, as mgmt's: each
//! of `sets` names a node under the file's tree (`path`, relative to `/files/FILE`) and
//! the `value` it must hold. The file is parsed with `lens` (`Hosts.lns`, …), or with the
//! lens augeas's own autoload table gives that path when `lens` is empty (mgmt requires
//! both). Only changed files are written, by augeas (a new file renamed into place). The
//! file is watched, so an edit by hand is repaired at once. A file that does not parse with
//! its lens, a path that matches several nodes and a save the lens refuses are errors that
//! say so; values of a file others may not read are never printed.

use lang::params::ParamMap;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;

use crate::contract::autoedge::{Edges, Index, str_param};
use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::util::augeas::{Augeas, NO_LOAD, NO_MODL_AUTOLOAD};
use crate::util::watch::watch_loop;

/// One value to hold: `path` under the file's tree, and its `value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AugeasSet {
    pub path: String,
    pub value: String,
}

crate::fingerprint_fields!(AugeasSet { path, value });

crate::params! {
    /// `augeas`'s params.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct AugeasParams {
        pub file: String,
        pub lens: String,
        pub sets: Vec<AugeasSet> as "[]struct{path str; value str}" => |p, f| {
            Ok(p.list_struct(f)?.iter().map(|s| AugeasSet { path: s.str("path"), value: s.str("value") }).collect())
        },
    }
}

pub struct AugeasRes {
    raw: Raw,
    params: AugeasParams,
}

impl AugeasRes {
    pub fn build(name: &str, values: &ParamMap) -> Result<AugeasRes, BuildError> {
        let (raw, params) = Raw::decoded("augeas", name, values, AugeasParams::decode)?;
        Ok(AugeasRes { raw, params })
    }
}

/// The name the load settings of a lens given by `lens` go under.
const LOAD_ENTRY: &str = "/augeas/load/Tend";

/// One value that differs: where, what it holds (`None`: no node), what it must hold.
#[derive(Debug)]
struct Change {
    path: String,
    was: Option<String>,
    want: String,
}

/// The tree path of `set` under `file`.
fn tree_path(file: &str, set: &str) -> String {
    format!("/files{}/{}", file.trim_end_matches('/'), set.trim_start_matches('/'))
}

/// Why augeas failed on `file`, from its error tree (load and save errors land there, not
/// in the handle's error).
fn file_error(aug: &Augeas, file: &str) -> Option<String> {
    let base = format!("/augeas/files{file}/error");
    let kind = aug.get(&base).ok().flatten()?;
    let field = |f: &str| aug.get(&format!("{base}/{f}")).ok().flatten();
    let mut text = field("message").unwrap_or_else(|| kind.clone());
    if let (Some(line), Some(col)) = (field("line"), field("char")) {
        text = format!("line {line}, character {col}: {text}");
    }
    if let Some(lens) = field("lens") {
        text = format!("{text} (lens {lens})");
    }
    Some(format!("{kind}: {text}"))
}

/// Reads `file` with `lens` and compares (and with `apply`, sets and saves) every set.
fn converge(file: &str, lens: &str, sets: &[AugeasSet], apply: bool) -> Result<Vec<Change>, String> {
    // libaugeas reads what it is given: a FIFO or a device would block it or worse.
    if let Ok(meta) = std::fs::metadata(file)
        && !meta.is_file()
    {
        return Err(format!("{file} is not a regular file"));
    }
    let mut aug = if lens.is_empty() {
        let mut aug = Augeas::open("/", NO_LOAD)?;
        aug.load_file(file)?;
        aug
    } else {
        let mut aug = Augeas::open("/", NO_MODL_AUTOLOAD)?;
        aug.set(&format!("{LOAD_ENTRY}/lens"), lens)?;
        aug.set(&format!("{LOAD_ENTRY}/incl"), file)?;
        aug.load()?;
        if let Some(e) = aug.get(&format!("{LOAD_ENTRY}/error"))? {
            return Err(format!("the lens {lens} could not be loaded: {e}"));
        }
        aug
    };
    if let Some(e) = file_error(&aug, file) {
        let with = if lens.is_empty() { String::new() } else { format!(" with {lens}") };
        return Err(format!("{file} does not parse{with}: {e}"));
    }
    let mut changes = Vec::new();
    for set in sets {
        let path = tree_path(file, &set.path);
        let was = aug.get(&path)?;
        if was.as_deref().unwrap_or("") == set.value {
            continue;
        }
        if apply {
            aug.set(&path, &set.value)?;
        }
        changes.push(Change { path, was, want: set.value.clone() });
    }
    if apply && !changes.is_empty() {
        let saved = aug.save();
        if let Some(e) = file_error(&aug, file) {
            return Err(format!("the lens refused to write {file}: {e}"));
        }
        saved?;
        if !std::path::Path::new(file).exists() {
            return Err(format!("{file} is missing after the save"));
        }
    }
    Ok(changes)
}

#[async_trait]
impl Resource for AugeasRes {
    fn validate(&self) -> Result<(), ResError> {
        let p = &self.params;
        if !p.file.starts_with('/') {
            return Err(self.raw.invalid(Some("file"), format!("{:?} is not an absolute path", p.file)));
        }
        if !p.lens.is_empty() && !p.lens.ends_with(".lns") {
            return Err(self.raw.invalid(Some("lens"), format!("{:?} is not a lens name (Name.lns)", p.lens)));
        }
        if let Some(s) = p.sets.iter().find(|s| s.path.trim_matches('/').is_empty()) {
            let m = format!("a set with the value {:?} names no path", s.value);
            return Err(self.raw.invalid(Some("sets"), m));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        watch_loop(vec![self.params.file.clone().into()], false, ctx)
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let key = format!("augeas[{}]", self.raw.name);
        let p = self.params.clone();
        let job = move || converge(&p.file, &p.lens, &p.sets, apply);
        let changes = tokio::task::spawn_blocking(job)
            .await
            .map_err(|e| ResError::new(format!("{key}: {e}")))?
            .map_err(|e| ResError::new(format!("{key}: {e}")))?;
        if changes.is_empty() {
            return Ok(true);
        }
        let secret = !lang::secret::shown() && lang::secret::file_content_is_secret(&self.params.file, "");
        let show = |v: &str| if secret { lang::secret::summary(v.as_bytes()) } else { format!("{v:?}") };
        for c in &changes {
            let was = c.was.as_deref().map_or_else(|| "no node".to_string(), show);
            let verb = if apply { "set" } else { "would set" };
            ctx.report(format!("{verb} {} to {} (was {was})", c.path, show(&c.want)));
        }
        Ok(false)
    }

    crate::fingerprint_by_params!();
}

fn requires(index: &Index<'_>, idx: usize, _name: &str, params: &ParamMap, edges: &mut Edges) {
    if let Some(file) = str_param(params, "file").filter(|f| f.starts_with('/')) {
        edges.extend(index.file(file).map(|f| (f, idx)));
    }
}

/// The `augeas` kind: its params as the type checker sees them, and its constructor.
pub const AUGEAS: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("augeas", AugeasParams::FIELDS, |_host, name, params| {
        Ok(Box::new(AugeasRes::build(name, params)?))
    })
    .autoedges(crate::contract::autoedge::Rules { provides: None, requires: Some(requires), reads: &["file"] });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_path_is_joined_under_the_files_tree() {
        assert_eq!(tree_path("/etc/hosts", "1/ipaddr"), "/files/etc/hosts/1/ipaddr");
        assert_eq!(tree_path("/etc/hosts", "/1/alias[2]"), "/files/etc/hosts/1/alias[2]");
    }
}
