//! `gsettings`: one GNOME (dconf) setting. The name is `"SCHEMA KEY"` unless `schema` and
//! `key` are given; `type` (`bool`, `str`, `int` or `custom`, a GVariant text such as
//! `[('xkb', 'us')]`) says how `value` is written. Runs `gsettings get`/`set` through the
//! [`Settings`] backend, as `user`/`group` when given (with that user's session bus under
//! `/run/user/UID`), and watches with `gsettings monitor`.

use lang::params::ParamMap;
use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use lang::value::Value;

use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::machine::Machine;
use crate::util::command::{self, CmdSpec};

/// Who runs the `gsettings` commands: the agent itself, or another user (uid, gid).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunAs {
    pub uid: Option<u32>,
    pub gid: Option<u32>,
}

/// A settings store addressed by schema and key; values are GVariant text.
#[async_trait]
pub trait Settings: Send + Sync {
    /// The current value as `gsettings get` prints it (trimmed).
    async fn get(&self, who: &RunAs, schema: &str, key: &str) -> Result<String, ResError>;
    async fn set(&self, who: &RunAs, schema: &str, key: &str, value: &str) -> Result<(), ResError>;
    /// One item per change of the key, until dropped.
    fn monitor(
        &self,
        who: &RunAs,
        schema: &str,
        key: &str,
    ) -> Result<BoxStream<'static, Result<(), ResError>>, ResError>;
}

// ---------------------------------------------------------------------------------------
// Pure helpers

/// The argv of a `gsettings` call.
pub fn gsettings_argv(op: &str, schema: &str, key: &str, value: Option<&str>) -> Vec<String> {
    let mut argv: Vec<String> = ["gsettings", op, schema, key].iter().map(|s| s.to_string()).collect();
    argv.extend(value.map(str::to_string));
    argv
}

/// The environment for running as `uid`: its session bus and runtime directory. `None`
/// (inherit ours) when running as ourselves.
pub fn session_env(who: &RunAs) -> Option<BTreeMap<String, String>> {
    let uid = who.uid?;
    let mut env = BTreeMap::from([
        ("DBUS_SESSION_BUS_ADDRESS".to_string(), format!("unix:path=/run/user/{uid}/bus")),
        ("XDG_RUNTIME_DIR".to_string(), format!("/run/user/{uid}")),
        ("PATH".to_string(), std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())),
    ]);
    if let Ok(Some(user)) = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        env.insert("HOME".into(), user.dir.display().to_string());
    }
    Some(env)
}

/// A GVariant string literal for `text` (what `gsettings set` parses as that string).
pub fn quote(text: &str) -> String {
    let q = if text.contains('\'') && !text.contains('"') { '"' } else { '\'' };
    let mut out = String::from(q);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

/// The string inside a GVariant string literal as `gsettings get` prints it.
pub fn unquote(text: &str) -> Option<String> {
    let text = text.trim();
    let q = text.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let inner = text.strip_prefix(q)?.strip_suffix(q)?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next()? {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            other => out.push(other),
        }
    }
    Some(out)
}

/// The GVariant text to set for `value` of kind `ty`.
pub fn value_text(ty: &str, value: Option<&Value>) -> Result<String, String> {
    match (ty, value) {
        ("bool", Some(Value::Bool(b))) => Ok(b.to_string()),
        ("int", Some(Value::Int(i))) => Ok(i.to_string()),
        ("str", Some(Value::Str(s))) => Ok(quote(s)),
        ("custom", Some(Value::Str(s))) => Ok(s.to_string()),
        ("bool" | "int" | "str" | "custom", Some(other)) => {
            let want = if ty == "custom" { "str" } else { ty };
            Err(format!("type `{ty}` needs a {want} value, found {other}"))
        }
        ("bool" | "int" | "str" | "custom", None) => Err("is required".into()),
        _ => Err(format!("`{ty}` is not one of `bool`, `str`, `int`, `custom`")),
    }
}

/// Whether `current` (as `gsettings get` prints it) already holds `wanted`
/// (as [`value_text`] renders it).
pub fn is_current(ty: &str, wanted: &str, current: &str) -> bool {
    let current = current.trim();
    match ty {
        "str" => unquote(current).zip(unquote(wanted)).is_some_and(|(a, b)| a == b),
        // Non-`i` integers print with a type prefix: `uint32 5`.
        "int" => current.rsplit(' ').next() == Some(wanted),
        _ => current == wanted,
    }
}

// ---------------------------------------------------------------------------------------
// Real backend

/// The `gsettings` command-line tool.
pub struct GsettingsCli;

fn spec(who: &RunAs, argv: Vec<String>) -> CmdSpec {
    CmdSpec {
        cmd: argv[0].clone(),
        args: argv[1..].to_vec(),
        cwd: "/".into(),
        env: session_env(who),
        uid: who.uid,
        gid: who.gid,
        ..CmdSpec::default()
    }
}

#[async_trait]
impl Settings for GsettingsCli {
    async fn get(&self, who: &RunAs, schema: &str, key: &str) -> Result<String, ResError> {
        let argv = gsettings_argv("get", schema, key, None);
        let out = command::run(&spec(who, argv.clone()), &Default::default()).await?;
        if !out.success() {
            return Err(ResError::new(format!("`{}` failed: {}", argv.join(" "), out.output.trim())));
        }
        Ok(out.stdout.trim().to_string())
    }
    async fn set(&self, who: &RunAs, schema: &str, key: &str, value: &str) -> Result<(), ResError> {
        let argv = gsettings_argv("set", schema, key, Some(value));
        let out = command::run(&spec(who, argv.clone()), &Default::default()).await?;
        if !out.success() {
            return Err(ResError::new(format!("`{}` failed: {}", argv.join(" "), out.output.trim())));
        }
        Ok(())
    }
    fn monitor(
        &self,
        who: &RunAs,
        schema: &str,
        key: &str,
    ) -> Result<BoxStream<'static, Result<(), ResError>>, ResError> {
        // Every line is a change; the process goes with the stream.
        let lines = crate::util::events::lines_of(&spec(who, gsettings_argv("monitor", schema, key, None)))?;
        Ok(futures::TryStreamExt::map_ok(lines, |_| ()).boxed())
    }
}

// ---------------------------------------------------------------------------------------
// Fake backend

/// In-memory settings: `schema key` -> GVariant text. Keys must be added with
/// [`FakeSettings::define`] (like schemas must be installed).
#[cfg(any(test, feature = "fakes"))]
#[derive(Default)]
pub struct FakeSettings(crate::util::fake::Fake<BTreeMap<String, String>>);

#[cfg(any(test, feature = "fakes"))]
impl FakeSettings {
    /// Defines (or changes, as another program would) a key.
    pub fn define(&self, schema: &str, key: &str, value: &str) {
        self.0.state().insert(format!("{schema} {key}"), value.into());
        self.0.changed();
    }
    pub fn value(&self, schema: &str, key: &str) -> Option<String> {
        self.0.state().get(&format!("{schema} {key}")).cloned()
    }
    pub fn calls(&self) -> Vec<String> {
        self.0.calls()
    }
}

#[async_trait]
#[cfg(any(test, feature = "fakes"))]
impl Settings for FakeSettings {
    async fn get(&self, _: &RunAs, schema: &str, key: &str) -> Result<String, ResError> {
        self.value(schema, key).ok_or_else(|| ResError::new(format!("No such schema/key “{schema} {key}”")))
    }
    async fn set(&self, who: &RunAs, schema: &str, key: &str, value: &str) -> Result<(), ResError> {
        self.0.record(format!("{who:?} set {schema} {key} {value}"));
        self.get(who, schema, key).await?;
        self.define(schema, key, value);
        Ok(())
    }
    fn monitor(&self, _: &RunAs, _: &str, _: &str) -> Result<BoxStream<'static, Result<(), ResError>>, ResError> {
        Ok(self.0.monitor())
    }
}

// ---------------------------------------------------------------------------------------
// The resource

crate::params! {
    /// `gsettings`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct GsettingsParams {
        pub schema: String,
        pub key: String,
        /// `bool`, `str`, `int` or `custom` (checked with the value, in validation).
        pub ty("type"): String,
        pub value: Option<Value>,
        pub user: String,
        pub group: String,
    }
}

pub struct Gsettings {
    raw: Raw,
    params: GsettingsParams,
    settings: Arc<dyn Settings>,
}

impl Gsettings {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<Gsettings, BuildError> {
        let (raw, params) = Raw::decoded("gsettings", name, values, GsettingsParams::decode)?;
        Ok(Gsettings { raw, params, settings: host.settings.clone() })
    }

    /// (schema, key): the params, or the name split at its one space when both are unset.
    pub fn schema_key(&self) -> Result<(String, String), ResError> {
        let p = &self.params;
        let (mut schema, mut key) = (p.schema.clone(), p.key.clone());
        if schema.is_empty()
            && key.is_empty()
            && let Some((s, k)) = self.raw.name.split_once(' ')
            && !k.contains(' ')
        {
            (schema, key) = (s.to_string(), k.to_string());
        }
        if schema.is_empty() {
            return Err(self.invalid("schema", "is empty (set it, or name the resource \"SCHEMA KEY\")"));
        }
        if key.is_empty() {
            return Err(self.invalid("key", "is empty (set it, or name the resource \"SCHEMA KEY\")"));
        }
        Ok((schema, key))
    }

    fn value_text(&self) -> Result<String, ResError> {
        let field = if matches!(self.params.ty.as_str(), "bool" | "int" | "str" | "custom") { "value" } else { "type" };
        value_text(&self.params.ty, self.params.value.as_ref()).map_err(|m| self.invalid(field, &m))
    }

    /// Resolves `user`/`group` (names or numeric ids) now: the user may be created by
    /// another resource of the same graph.
    fn run_as(&self) -> Result<RunAs, ResError> {
        use nix::unistd::{Group, User};
        let p = &self.params;
        let uid = match p.user.as_str() {
            "" => None,
            u => Some(match u.parse::<u32>() {
                Ok(n) => n,
                Err(_) => User::from_name(u)
                    .ok()
                    .flatten()
                    .ok_or_else(|| ResError::new(format!("{}: user `{u}` does not exist", self.key_text())))?
                    .uid
                    .as_raw(),
            }),
        };
        let gid = match p.group.as_str() {
            "" => None,
            g => Some(match g.parse::<u32>() {
                Ok(n) => n,
                Err(_) => Group::from_name(g)
                    .ok()
                    .flatten()
                    .ok_or_else(|| ResError::new(format!("{}: group `{g}` does not exist", self.key_text())))?
                    .gid
                    .as_raw(),
            }),
        };
        Ok(RunAs { uid, gid })
    }

    fn key_text(&self) -> String {
        format!("gsettings[{}]", self.raw.name)
    }

    fn invalid(&self, field: &str, message: &str) -> ResError {
        self.raw.invalid(Some(field), message)
    }
}

#[async_trait]
impl Resource for Gsettings {
    fn validate(&self) -> Result<(), ResError> {
        self.schema_key()?;
        self.value_text()?;
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let started = self.schema_key().and_then(|(schema, key)| {
            let who = self.run_as()?;
            self.settings.monitor(&who, &schema, &key)
        });
        Box::pin(async move {
            let mut monitor = started?;
            ctx.event();
            loop {
                tokio::select! {
                    item = monitor.next() => match item {
                        Some(Ok(())) => ctx.event(),
                        Some(Err(e)) => return Err(e),
                        None => return Err(ResError::new("the settings monitor stopped")),
                    },
                    _ = ctx.cancelled() => return Ok(()),
                }
            }
        })
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let (schema, key) = self.schema_key()?;
        let wanted = self.value_text()?;
        let who = self.run_as()?;
        let current = self.settings.get(&who, &schema, &key).await?;
        if is_current(&self.params.ty, &wanted, &current) {
            return Ok(true);
        }
        if apply {
            self.settings.set(&who, &schema, &key, &wanted).await?;
        } else {
            ctx.report(format!("{}: would set {schema} {key} from {current} to {wanted}", self.key_text()));
        }
        Ok(false)
    }

    crate::fingerprint_by_params!();
}

/// The `gsettings` kind: its params and send fields as the type checker sees them, and its constructor.
pub const GSETTINGS: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("gsettings", GsettingsParams::FIELDS, crate::built_on_host!(Gsettings));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_render_as_gvariant_text() {
        assert_eq!(value_text("bool", Some(&Value::Bool(true))).unwrap(), "true");
        assert_eq!(value_text("int", Some(&Value::Int(-3))).unwrap(), "-3");
        assert_eq!(value_text("str", Some(&Value::str("it's"))).unwrap(), "\"it's\"");
        assert_eq!(value_text("str", Some(&Value::str("a'b\"c"))).unwrap(), r#"'a\'b"c'"#);
        assert_eq!(value_text("custom", Some(&Value::str("[('xkb', 'us')]"))).unwrap(), "[('xkb', 'us')]");
        assert!(value_text("bool", Some(&Value::str("true"))).unwrap_err().contains("needs a bool"));
        assert!(value_text("float", Some(&Value::Float(1.0))).unwrap_err().contains("not one of"));
        assert!(value_text("str", None).unwrap_err().contains("required"));
    }

    #[test]
    fn gsettings_output_is_compared_by_meaning() {
        // Sample `gsettings get` outputs.
        assert!(is_current("bool", "true", "true\n"));
        assert!(!is_current("bool", "true", "false\n"));
        assert!(is_current("int", "5", "uint32 5\n"));
        assert!(is_current("str", &quote("it's"), "\"it's\"\n"));
        assert!(is_current("str", &quote("Adwaita"), "'Adwaita'\n"));
        assert!(!is_current("str", &quote("Adwaita"), "'Adwaita-dark'\n"));
        assert!(is_current("custom", "[('xkb', 'us')]", "[('xkb', 'us')]\n"));
        assert_eq!(unquote(r"'a\'b\\c\n'").as_deref(), Some("a'b\\c\n"));
        assert_eq!(unquote("@as []"), None);
    }

    #[test]
    fn command_lines_and_session_environment() {
        assert_eq!(
            gsettings_argv("set", "org.gnome.desktop.interface", "clock-show-seconds", Some("true")).join(" "),
            "gsettings set org.gnome.desktop.interface clock-show-seconds true"
        );
        assert_eq!(session_env(&RunAs::default()), None);
        let env = session_env(&RunAs { uid: Some(1000), gid: None }).unwrap();
        assert_eq!(env["DBUS_SESSION_BUS_ADDRESS"], "unix:path=/run/user/1000/bus");
        assert_eq!(env["XDG_RUNTIME_DIR"], "/run/user/1000");
    }

    #[test]
    fn schema_and_key_come_from_the_name_or_the_params() {
        let host = Machine::sandbox("/nonexistent");
        let build = |name: &str, pairs: &[(&str, Value)]| {
            let values = pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
            Gsettings::build(&host, name, &values).unwrap()
        };
        let typed = [("type", Value::str("bool")), ("value", Value::Bool(true))];
        let named = build("org.gnome.desktop.interface clock-show-seconds", &typed);
        assert_eq!(named.schema_key().unwrap(), ("org.gnome.desktop.interface".into(), "clock-show-seconds".into()));
        assert!(named.validate().is_ok());
        let err = build("just-one-word", &typed).validate().unwrap_err();
        assert!(err.message.contains("gsettings[just-one-word]: field `schema`"), "{err}");
        let err = build("a b", &[("type", Value::str("bool")), ("value", Value::Int(1))]).validate().unwrap_err();
        assert!(err.message.contains("field `value`"), "{err}");
        let err = build("a b", &[("type", Value::str("list")), ("value", Value::Int(1))]).validate().unwrap_err();
        assert!(err.message.contains("field `type`"), "{err}");
    }
}
