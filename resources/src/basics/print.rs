//! `print`: logs `msg` when it changed since the last print (or on every notification with
//! `refresh_only`, and only then). Printing counts as a change, so it notifies.

use lang::params::ParamMap;

use async_trait::async_trait;
use engine::{ApplyCtx, Payload, ResError, Resource};

use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;

crate::params! {
    /// `print`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct PrintParams {
        pub msg: String,
        pub refresh_only: bool,
    }
}

pub struct Print {
    raw: Raw,
    params: PrintParams,
    printed: Option<String>,
}

impl Print {
    pub fn build(name: &str, values: &ParamMap) -> Result<Print, BuildError> {
        let (raw, params) = Raw::decoded("print", name, values, PrintParams::decode)?;
        Ok(Print { raw, params, printed: None })
    }
}

#[async_trait]
impl Resource for Print {
    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let due = if self.params.refresh_only {
            ctx.refresh
        } else {
            ctx.refresh || self.printed.as_ref() != Some(&self.params.msg)
        };
        if !due {
            return Ok(true);
        }
        let key = format!("print[{}]", self.raw.name);
        if !apply {
            ctx.report(format!("{key}: would print: {}", self.params.msg));
            return Ok(false);
        }
        // `tend run` shows the message as written; the log has it for -vv.
        tracing::debug!(target: "print", resource = %key, "printed");
        ctx.report(self.params.msg.clone());
        self.printed = Some(self.params.msg.clone());
        Ok(false)
    }

    crate::fingerprint_by_params!();

    fn refreshable(&self) -> bool {
        true
    }

    fn recv(&mut self, key: &str, value: &Payload) -> Result<bool, ResError> {
        self.raw.recv(key, value, &mut self.params, PrintParams::decode)
    }
}

/// The `print` kind: its params and send fields as the type checker sees them, and its constructor.
pub const PRINT: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("print", PrintParams::FIELDS, |_host, name, params| {
        Ok(Box::new(Print::build(name, params)?))
    })
    .receiving()
    .in_graph(crate::contract::kind::InGraph {
        // Grouping saves nothing here: only when the program asks, and as mgmt's, never a
        // `print` that only prints on notification (its group would print on any).
        autogroup: Some(crate::contract::kind::AutoGroup {
            by_default: false,
            members: &[],
            notified_apart: false,
            fits: |group, member| {
                use crate::contract::group::bool_param;
                !bool_param(group, "refresh_only") && !bool_param(member, "refresh_only")
            },
            build: None,
        }),
        ..crate::contract::kind::InGraph::NONE
    });
