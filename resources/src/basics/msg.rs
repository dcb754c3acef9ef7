//! `msg`: logs `body` once per instance at `priority` (and again on every notification),
//! with structured `fields`. `journal` and `syslog` are accepted; output goes through the
//! process log (`tracing`), not to journald directly.

use lang::params::ParamMap;
use std::collections::BTreeMap;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource};

use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;

crate::choice! {
    /// A journal priority (syslog severity); required.
    #[derive(Default)]
    pub enum Priority {
        #[default]
        Unset = "",
        Emerg = "Emerg",
        Alert = "Alert",
        Crit = "Crit",
        Err = "Err",
        Warning = "Warning",
        Notice = "Notice",
        Info = "Info",
        Debug = "Debug",
    }
}
crate::choice_default_when_absent!(Priority);

crate::params! {
    /// `msg`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct MsgParams {
        pub body: String,
        pub priority: Priority,
        pub fields: BTreeMap<String, String>,
        pub journal: bool,
        pub syslog: bool,
    }
}

pub struct Msg {
    raw: Raw,
    params: MsgParams,
    logged: bool,
}

impl Msg {
    pub fn build(name: &str, values: &ParamMap) -> Result<Msg, BuildError> {
        let (raw, params) = Raw::decoded("msg", name, values, MsgParams::decode)?;
        Ok(Msg { raw, params, logged: false })
    }

    fn error(&self, field: &str, message: String) -> ResError {
        self.raw.invalid(Some(field), message)
    }
}

#[async_trait]
impl Resource for Msg {
    fn validate(&self) -> Result<(), ResError> {
        if self.params.priority == Priority::Unset {
            let allowed = crate::contract::typed::one_of(&Priority::ALL[1..]);
            return Err(self.error("priority", format!("must be set to {allowed}")));
        }
        for key in self.params.fields.keys() {
            if key.is_empty() || key.starts_with('_') || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(
                    self.error("fields", format!("invalid field name `{key}` (use [A-Za-z0-9_], no leading `_`)"))
                );
            }
        }
        Ok(())
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        if self.logged && !ctx.refresh {
            return Ok(true);
        }
        let key = format!("msg[{}]", self.raw.name);
        if !apply {
            ctx.report(format!("{key}: would log: {}", self.params.body));
            return Ok(false);
        }
        let fields = format!("{:?}", self.params.fields);
        let body = &self.params.body;
        match self.params.priority {
            Priority::Emerg | Priority::Alert | Priority::Crit | Priority::Err => {
                tracing::error!(target: "msg", resource = %key, fields, "{body}")
            }
            Priority::Warning => tracing::warn!(target: "msg", resource = %key, fields, "{body}"),
            Priority::Debug => tracing::debug!(target: "msg", resource = %key, fields, "{body}"),
            Priority::Notice | Priority::Info | Priority::Unset => {
                tracing::info!(target: "msg", resource = %key, fields, "{body}")
            }
        }
        self.logged = true;
        Ok(false)
    }

    crate::fingerprint_by_params!();

    fn refreshable(&self) -> bool {
        true
    }
}

/// The `msg` kind: its params and send fields as the type checker sees them, and its constructor.
pub const MSG: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("msg", MsgParams::FIELDS, |_host, name, params| {
        Ok(Box::new(Msg::build(name, params)?))
    });
