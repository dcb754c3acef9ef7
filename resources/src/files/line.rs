//! `line`: makes sure a (possibly multi-line) block of text is present in a file (appended
//! at the end when missing) or absent (every occurrence removed). Lines are compared
//! exactly, or with surrounding whitespace ignored when `trim` is set.

use lang::params::ParamMap;
use std::path::PathBuf;

use async_trait::async_trait;
use engine::{ApplyCtx, IoAt, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;

use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::contract::typed::Presence;
use crate::util::fs::{atomic_write, unified_diff};
use crate::util::watch::watch_loop;

crate::params! {
    /// `line`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct LineParams {
        pub file: String,
        pub state: Presence,
        pub content: String,
        pub trim: bool,
    }
}

pub struct Line {
    raw: Raw,
    params: LineParams,
}

impl Line {
    pub fn build(name: &str, values: &ParamMap) -> Result<Line, BuildError> {
        let (raw, params) = Raw::decoded("line", name, values, LineParams::decode)?;
        Ok(Line { raw, params })
    }

    /// `~user/` paths expand to that user's home directory.
    fn path(&self) -> Result<PathBuf, ResError> {
        let file = &self.params.file;
        if let Some(rest) = file.strip_prefix('~') {
            let (user, tail) = rest.split_once('/').unwrap_or((rest, ""));
            let home = if user.is_empty() {
                std::env::var("HOME").map(PathBuf::from).map_err(|_| ResError::new("line: HOME is not set"))?
            } else {
                nix::unistd::User::from_name(user)
                    .ok()
                    .flatten()
                    .map(|u| u.dir)
                    .ok_or_else(|| ResError::new(format!("line: user `{user}` does not exist")))?
            };
            return Ok(home.join(tail));
        }
        Ok(PathBuf::from(file))
    }
}

/// The new text, or `None` when it is already right.
fn edit(text: &str, block: &[&str], present: bool, trim: bool) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let eq = |a: &str, b: &str| if trim { a.trim() == b.trim() } else { a == b };
    let matches_at =
        |i: usize| i + block.len() <= lines.len() && block.iter().enumerate().all(|(j, b)| eq(lines[i + j], b));
    let found = (0..lines.len()).any(matches_at);
    if present {
        if found {
            return None;
        }
        return Some(crate::util::text::with_lines_added(text, block.iter().copied()));
    }
    if !found {
        return None;
    }
    let mut kept = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if matches_at(i) {
            i += block.len();
        } else {
            kept.push(lines[i]);
            i += 1;
        }
    }
    Some(crate::util::text::of_lines(&kept))
}

#[async_trait]
impl Resource for Line {
    fn validate(&self) -> Result<(), ResError> {
        let err = |field: &str, message: &str| self.raw.invalid(Some(field), message);
        if !self.params.file.starts_with('/') && !self.params.file.starts_with('~') {
            return Err(err("file", "must be an absolute path or start with `~user/`"));
        }
        if self.params.file.starts_with('/') {
            crate::util::path::check(&self.params.file).map_err(|m| err("file", &m))?;
        }
        if self.params.state == Presence::Unset {
            return Err(err("state", "must be `exists` or `absent`"));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        watch_loop(self.path().into_iter().collect(), false, ctx)
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let block: Vec<&str> = self.params.content.lines().collect();
        if block.is_empty() {
            return Ok(true);
        }
        let path = self.path()?;
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && self.params.state == Presence::Absent => {
                return Ok(true);
            }
            Err(e) => return Err(ResError::new(format!("line[{}]: {}: {e}", self.raw.name, path.display()))),
        };
        let Some(new) = edit(&text, &block, self.params.state == Presence::Exists, self.params.trim) else {
            return Ok(true);
        };
        if !apply {
            ctx.report(unified_diff(&path.display().to_string(), &text, &new));
            return Ok(false);
        }
        atomic_write(&path, new.as_bytes(), None).at(&path)?;
        Ok(false)
    }

    crate::fingerprint_by_params!();
}

/// The `line` kind: its params and send fields as the type checker sees them, and its constructor.
pub const LINE: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("line", LineParams::FIELDS, |_host, name, params| {
        Ok(Box::new(Line::build(name, params)?))
    });

#[cfg(test)]
mod tests {
    use super::edit;

    #[test]
    fn appends_and_removes_blocks() {
        assert_eq!(edit("a\nb\n", &["c"], true, false).as_deref(), Some("a\nb\nc\n"));
        assert_eq!(edit("a\nb", &["c"], true, false).as_deref(), Some("a\nb\nc\n"));
        assert_eq!(edit("a\nb\n", &["b"], true, false), None);
        assert_eq!(edit("a\n  b \n", &["b"], true, true), None);
        assert_eq!(edit("x\na\nb\ny\na\nb\n", &["a", "b"], false, false).as_deref(), Some("x\ny\n"));
        assert_eq!(edit("x\n", &["a"], false, false), None);
    }
}
