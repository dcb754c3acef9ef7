//! `password`: generates a random password of `length` characters (default 64) and sends
//! it as `password`. With `saved`, the cleartext is kept in the var dir (mode 0600) and
//! survives restarts; otherwise a new one is generated per instance. A notification
//! regenerates it. With `check_recovery`, an unusable saved value is replaced instead of
//! being an error.

use lang::params::ParamMap;
use std::collections::BTreeMap;
use std::path::PathBuf;

use async_trait::async_trait;
use engine::{ApplyCtx, InitCtx, IoAt, Payload, ResError, Resource};
use lang::value::Value;
use rand::Rng;

use crate::contract::common::{Raw, sends};
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::util::fs::atomic_write;

const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

crate::params! {
    /// `password`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct PasswordParams {
        pub length: u16 = 64,
        pub saved: bool,
        pub check_recovery: bool,
    }
}

crate::params! {
    /// `exit`'s params.
    pub struct ExitParams {
        /// The exit code asked for, 0..=125.
        pub code: i64 => |p, f| Ok(p.opt_int_in(f, 0, 125, "exit code (0..125)")?.unwrap_or(0)),
    }
}

pub struct Password {
    raw: Raw,
    params: PasswordParams,
    current: Option<String>,
    file: Option<PathBuf>,
}

impl Password {
    pub fn build(name: &str, values: &ParamMap) -> Result<Password, BuildError> {
        let (raw, params) = Raw::decoded("password", name, values, PasswordParams::decode)?;
        Ok(Password { raw, params, current: None, file: None })
    }

    fn usable(&self, text: &str) -> bool {
        text.len() == usize::from(self.params.length) && text.bytes().all(|b| ALPHABET.contains(&b))
    }
}

fn generate(length: usize) -> String {
    let mut rng = rand::rng();
    (0..length).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
}

#[async_trait]
impl Resource for Password {
    fn validate(&self) -> Result<(), ResError> {
        if self.params.length == 0 {
            return Err(ResError::new(format!("password[{}]: field `length`: must be at least 1", self.raw.name)));
        }
        Ok(())
    }

    async fn init(&mut self, ctx: &InitCtx) -> Result<(), ResError> {
        if self.params.saved {
            let file = ctx.var_dir().join("password");
            if let Ok(text) = std::fs::read_to_string(&file) {
                if self.usable(&text) {
                    self.current = Some(text);
                } else if !self.params.check_recovery {
                    return Err(ResError::new(format!(
                        "password[{}]: the saved password is unusable (set check_recovery to regenerate it)",
                        self.raw.name
                    )));
                }
            }
            self.file = Some(file);
        }
        Ok(())
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        if self.current.is_some() && !ctx.refresh {
            return Ok(true);
        }
        if !apply {
            ctx.report(format!("password[{}]: would generate a password", self.raw.name));
            return Ok(false);
        }
        let fresh = generate(usize::from(self.params.length));
        if let Some(file) = &self.file {
            if let Some(dir) = file.parent() {
                std::fs::create_dir_all(dir).at(dir)?;
            }
            atomic_write(file, fresh.as_bytes(), Some(0o600)).at(file)?;
        }
        self.current = Some(fresh);
        Ok(false)
    }

    crate::fingerprint_by_params!();

    fn refreshable(&self) -> bool {
        true
    }

    fn sends(&self) -> Option<BTreeMap<String, Payload>> {
        self.current.clone().map(|p| sends(vec![("password", Value::str(p))]))
    }
}

/// `exit`: in apply mode, asks the program running the engine to shut down with `code`
/// (0..=125). Useful to end one-shot programs.
pub struct Exit {
    name: String,
    code: i32,
    requested: bool,
}

impl Exit {
    pub fn build(name: &str, values: &ParamMap) -> Result<Exit, BuildError> {
        let raw = Raw::new("exit", name, values);
        let code = raw.decode(ExitParams::decode)?.code as i32;
        Ok(Exit { name: name.to_string(), code, requested: false })
    }
}

#[async_trait]
impl Resource for Exit {
    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        if self.requested {
            return Ok(true);
        }
        if !apply {
            ctx.report(format!("exit[{}]: would exit with code {}", self.name, self.code));
            return Ok(false);
        }
        ctx.request_exit(self.code);
        self.requested = true;
        Ok(false)
    }

    fn fingerprint(&self) -> String {
        self.code.to_string()
    }
}

/// The `password` kind: its params and send fields as the type checker sees them, and its constructor.
pub const PASSWORD: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("password", PasswordParams::FIELDS, |_host, name, params| {
        Ok(Box::new(Password::build(name, params)?))
    })
    .sending(&[("password", "str")]);

/// The `exit` kind: its params and send fields as the type checker sees them, and its constructor.
pub const EXIT: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("exit", ExitParams::FIELDS, |_host, name, params| {
        Ok(Box::new(Exit::build(name, params)?))
    });
