//! `noop`: always in the right state; logs notifications. A junction vertex.

use lang::params::ParamMap;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource};

use crate::contract::common::Raw;
use crate::contract::params::BuildError;

crate::params! {
    /// `noop`'s params.
    pub struct NoopParams {
        /// Free text, for the reader of the program.
        pub comment: String,
    }
}

pub struct Noop {
    raw: Raw,
    comment: String,
}

impl Noop {
    pub fn build(name: &str, values: &ParamMap) -> Result<Noop, BuildError> {
        let raw = Raw::new("noop", name, values);
        let comment = raw.decode(NoopParams::decode)?.comment;
        Ok(Noop { raw, comment })
    }
}

#[async_trait]
impl Resource for Noop {
    async fn check_apply(&mut self, ctx: &mut ApplyCtx, _apply: bool) -> Result<bool, ResError> {
        if ctx.refresh {
            tracing::info!(resource = %format!("noop[{}]", self.raw.name), "received a notification");
        }
        Ok(true)
    }

    fn fingerprint(&self) -> String {
        crate::contract::typed::Fingerprint::fingerprint(&self.comment)
    }

    fn refreshable(&self) -> bool {
        true
    }
}

/// `_panic`: the inert resource a `panic(...)` statement produces; always in the right
/// state.
pub struct Panic;

#[async_trait]
impl Resource for Panic {
    async fn check_apply(&mut self, _ctx: &mut ApplyCtx, _apply: bool) -> Result<bool, ResError> {
        Ok(true)
    }

    fn fingerprint(&self) -> String {
        String::new()
    }
}

/// The `noop` kind: its params and send fields as the type checker sees them, and its constructor.
pub const NOOP: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("noop", NoopParams::FIELDS, |_host, name, params| {
        Ok(Box::new(Noop::build(name, params)?))
    })
    .in_graph(crate::contract::kind::InGraph {
        // Grouping saves nothing here: only when the program asks.
        autogroup: Some(crate::contract::kind::AutoGroup {
            by_default: false,
            members: &[],
            notified_apart: false,
            fits: |_, _| true,
            build: None,
        }),
        ..crate::contract::kind::InGraph::NONE
    });

/// The `_panic` kind: its params and send fields as the type checker sees them, and its constructor.
pub const PANIC: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("_panic", &[], |_host, _name, _params| Ok(Box::new(Panic)));
