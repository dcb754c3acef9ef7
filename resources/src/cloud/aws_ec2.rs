//! `aws:ec2`: an EC2 instance, named by its `Name` tag (`_mgmt-` and the resource's name,
//! as mgmt tags it, so instances mgmt made are found), through [`super::aws`].
//!
//! As in mgmt: `state` is `running`, `stopped` or `terminated`; a missing instance is made
//! (`imageid`, `type`, `userdata`) when it should run, and counts as stopped or
//! terminated otherwise; each change waits (asking every 2 s, at most 400 s, mgmt's
//! waiters) until the instance is there. The instance's id and addresses are sent
//! (`instanceid`, `privateipv4`, `publicipv4`). The watch asks EC2 every [`POLL`] and raises
//! an event only when the instance changed: mgmt's SNS watch (`watchendpoint`,
//! `watchlistenaddr`) is not offered; those params are accepted and a warning says so.
//! EC2 is reached at `$AWS_ENDPOINT_URL` when set (a test's moto server).

use lang::params::ParamMap;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use engine::{ApplyCtx, Payload, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use lang::value::Value;

use super::aws::{Ec2, Ec2Api, Instance};
use crate::contract::common::{Raw, sends};
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::machine::Machine;

/// How often the watch asks EC2 about the instance.
pub const POLL: Duration = Duration::from_secs(15);
const WAIT_EVERY: Duration = Duration::from_secs(2);
const WAIT_AT_MOST: Duration = Duration::from_secs(400);

/// The regions mgmt accepts.
pub const REGIONS: &[&str] = &[
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-south-1",
    "ap-southeast-1",
    "ap-southeast-2",
    "ca-central-1",
    "cn-north-1",
    "eu-central-1",
    "eu-west-1",
    "eu-west-2",
    "sa-east-1",
    "us-east-1",
    "us-east-2",
    "us-gov-west-1",
    "us-west-1",
    "us-west-2",
];

crate::params! {
    /// `aws:ec2`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct AwsEc2Params {
        pub state: String,
        pub region: String,
        /// The instance type (`t2.micro`).
        pub instance_type("type"): String,
        pub imageid: String,
        pub watchendpoint: String,
        pub watchlistenaddr: String,
        pub erroronmalformedpost: bool,
        pub userdata: String,
    }
}

pub struct AwsEc2 {
    raw: Raw,
    params: AwsEc2Params,
    endpoint: Option<String>,
    credentials: Option<std::path::PathBuf>,
    /// The instance as last seen, for the sends.
    seen: Mutex<Option<Instance>>,
}

impl AwsEc2 {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<AwsEc2, BuildError> {
        let (raw, params) = Raw::decoded("aws:ec2", name, values, AwsEc2Params::decode)?;
        let (endpoint, credentials) = (host.clouds.aws.clone(), host.clouds.aws_credentials.clone());
        Ok(AwsEc2 { raw, params, endpoint, credentials, seen: Mutex::default() })
    }

    fn key(&self) -> String {
        format!("aws:ec2[{}]", self.raw.name)
    }

    /// The `Name` tag of the instance.
    fn tag(&self) -> String {
        format!("_mgmt-{}", self.raw.name)
    }

    fn api(&self) -> Result<Arc<dyn Ec2Api>, String> {
        Ok(Arc::new(Ec2::new(&self.params.region, self.endpoint.as_deref(), self.credentials.clone())?))
    }

    /// The instance of this name that is not gone, if any (the newest when several).
    async fn current(api: &dyn Ec2Api, tag: &str) -> Result<Option<Instance>, String> {
        let all = api.by_name(tag).await?;
        Ok(all.into_iter().rfind(|i| i.state != "terminated"))
    }

    async fn wait_for(&self, api: &dyn Ec2Api, id: &str, want: &str) -> Result<Instance, String> {
        let until = tokio::time::Instant::now() + WAIT_AT_MOST;
        loop {
            let now = api.by_id(id).await?;
            match now {
                Some(i) if i.state == want => return Ok(i),
                _ if tokio::time::Instant::now() >= until => {
                    let state = now.map_or("gone".to_string(), |i| i.state);
                    return Err(format!("instance {id} is still {state} after {WAIT_AT_MOST:?}, waiting for {want}"));
                }
                _ => tokio::time::sleep(WAIT_EVERY).await,
            }
        }
    }

    async fn converge(&self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, String> {
        let key = self.key();
        let p = &self.params;
        let api = self.api()?;
        let api = api.as_ref();
        let mut instance = Self::current(api, &self.tag()).await?;
        // On its way somewhere: wait for it to settle before judging.
        if let Some(i) = &instance
            && matches!(i.state.as_str(), "pending" | "stopping" | "shutting-down")
        {
            let settled = match i.state.as_str() {
                "pending" => "running",
                "stopping" => "stopped",
                _ => "terminated",
            };
            instance = Some(self.wait_for(api, &i.id, settled).await?).filter(|i| i.state != "terminated");
        }
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = instance.clone();
        let state = p.state.as_str();
        let done = match &instance {
            Some(i) => i.state == state,
            None => state != "running",
        };
        if done {
            return Ok(true);
        }
        if !apply {
            let what = if instance.is_none() { "create".to_string() } else { format!("make {state}") };
            ctx.report(format!("{key}: would {what} the instance"));
            return Ok(false);
        }
        let id = match &instance {
            None => {
                let id = api.run(&self.tag(), &p.imageid, &p.instance_type, &p.userdata).await?;
                tracing::info!(resource = %key, instance = %id, "created");
                id
            }
            Some(i) => {
                let action = match state {
                    "running" => "StartInstances",
                    "stopped" => "StopInstances",
                    _ => "TerminateInstances",
                };
                api.act(action, &i.id).await?;
                i.id.clone()
            }
        };
        let reached = self.wait_for(api, &id, state).await?;
        tracing::info!(resource = %key, instance = %id, "{state}");
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(reached).filter(|i| i.state != "terminated");
        Ok(false)
    }
}

#[async_trait]
impl Resource for AwsEc2 {
    fn validate(&self) -> Result<(), ResError> {
        let p = &self.params;
        let err = |field: &str, message: String| self.raw.invalid(Some(field), message);
        if !matches!(p.state.as_str(), "running" | "stopped" | "terminated") {
            return Err(err("state", format!("`{}` is not `running`, `stopped` or `terminated`", p.state)));
        }
        if !REGIONS.contains(&p.region.as_str()) {
            return Err(err("region", format!("`{}` is not an AWS region ({})", p.region, REGIONS.join(", "))));
        }
        if p.instance_type.is_empty() {
            return Err(err("type", "must name an instance type (`t2.micro`)".into()));
        }
        if p.state == "running" && !p.imageid.starts_with("ami-") {
            return Err(err("imageid", format!("`{}` is not an AMI id (`ami-...`)", p.imageid)));
        }
        if p.watchendpoint.is_empty() != p.watchlistenaddr.is_empty() {
            return Err(err("watchendpoint", "is set with `watchlistenaddr`, or neither is".into()));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        if !self.params.watchendpoint.is_empty() {
            tracing::warn!(resource = %self.key(), "the SNS watch (watchendpoint) is not offered: EC2 is polled instead");
        }
        let tag = self.tag();
        match self.api() {
            Ok(api) => crate::util::poll::watch_by_polling(ctx, POLL, move || {
                let (api, tag) = (api.clone(), tag.clone());
                async move { AwsEc2::current(api.as_ref(), &tag).await }
            }),
            Err(_) => crate::util::poll::startup_only(ctx),
        }
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let key = self.key();
        self.converge(ctx, apply).await.map_err(|e| ResError::transient(format!("{key}: {e}")))
    }

    fn sends(&self) -> Option<BTreeMap<String, Payload>> {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner()).clone().unwrap_or_default();
        Some(sends(vec![
            ("instanceid", Value::str(seen.id)),
            ("privateipv4", Value::str(seen.private_ip)),
            ("publicipv4", Value::str(seen.public_ip)),
        ]))
    }

    crate::fingerprint_by_params!();
}

/// The `aws:ec2` kind: its params and sends as the type checker sees them, and its constructor.
pub const AWS_EC2: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("aws:ec2", AwsEc2Params::FIELDS, crate::built_on_host!(AwsEc2)).sending(&[
        ("instanceid", "str"),
        ("privateipv4", "str"),
        ("publicipv4", "str"),
    ]);
