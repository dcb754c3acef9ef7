//! `user` and `group`: local accounts through the host's [`Accounts`] backend (the shadow
//! tools on a real host). Both watch the account files.

use lang::params::ParamMap;
use std::sync::Arc;

use async_trait::async_trait;
use engine::{ApplyCtx, ResError, Resource, WatchCtx};
use futures::future::BoxFuture;
use lang::value::Value;

use crate::contract::autoedge::{Edges, Index, list_param, str_param};
use crate::contract::common::Raw;
use crate::contract::params::BuildError;
use crate::contract::typed::Fingerprint as _;
use crate::contract::typed::Presence;
use crate::machine::{Accounts, Machine, UserSpec};
use crate::util::watch::watch_loop;

crate::params! {
    /// `user`'s params; unset options leave the account's value alone.
    #[derive(Clone, Debug, PartialEq)]
    pub struct UserParams {
        pub state: Presence,
        pub uid: Option<u32>,
        pub gid: Option<u32>,
        pub group: Option<String>,
        pub groups: Option<Vec<String>>,
        pub homedir: Option<String>,
        pub shell: Option<String>,
        pub allowduplicateuid: bool,
    }
}

pub struct User {
    raw: Raw,
    params: UserParams,
    accounts: Arc<dyn Accounts>,
}

impl User {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<User, BuildError> {
        let (raw, params) = Raw::decoded("user", name, values, UserParams::decode)?;
        Ok(User { raw, params, accounts: host.accounts.clone() })
    }

    fn err(&self, field: &str, message: &str) -> ResError {
        self.raw.invalid(Some(field), message)
    }

    /// What differs between the account and the params (everything, for a missing user).
    async fn wanted(&self) -> Result<Option<UserSpec>, ResError> {
        let p = &self.params;
        let primary = p.group.clone().or_else(|| p.gid.map(|g| g.to_string()));
        let Some(info) = self.accounts.user(&self.raw.name).await? else {
            return Ok(Some(UserSpec {
                uid: p.uid,
                group: primary,
                groups: p.groups.clone(),
                home: p.homedir.clone(),
                shell: p.shell.clone(),
                allow_duplicate_uid: p.allowduplicateuid,
            }));
        };
        let mut spec = UserSpec { allow_duplicate_uid: p.allowduplicateuid, ..UserSpec::default() };
        spec.uid = p.uid.filter(|u| *u != info.uid);
        if let Some(g) = &primary {
            let gid = match g.parse::<u32>() {
                Ok(n) => Some(n),
                Err(_) => self.accounts.group(g).await?,
            };
            if gid != Some(info.gid) {
                spec.group = Some(g.clone());
            }
        }
        if let Some(groups) = &p.groups
            && groups.iter().cloned().collect::<std::collections::BTreeSet<_>>() != info.groups
        {
            spec.groups = Some(groups.clone());
        }
        spec.home = p.homedir.clone().filter(|h| h.trim_end_matches('/') != info.home.trim_end_matches('/'));
        spec.shell = p.shell.clone().filter(|s| *s != info.shell);
        let unchanged = UserSpec { allow_duplicate_uid: p.allowduplicateuid, ..UserSpec::default() };
        Ok((spec != unchanged).then_some(spec))
    }
}

#[async_trait]
impl Resource for User {
    fn validate(&self) -> Result<(), ResError> {
        let p = &self.params;
        if p.state == Presence::Unset {
            return Err(self.err("state", "must be `exists` or `absent`"));
        }
        if p.gid.is_some() && p.group.is_some() {
            return Err(self.err("group", "cannot be combined with gid"));
        }
        if let (Some(groups), Some(primary)) = (&p.groups, &p.group)
            && groups.contains(primary)
        {
            return Err(self.err("groups", "must not repeat the primary group"));
        }
        if p.homedir.as_ref().is_some_and(|h| !h.starts_with('/') || !h.ends_with('/')) {
            return Err(self.err("homedir", "must be an absolute path ending in `/`"));
        }
        if let Some(home) = &p.homedir {
            crate::util::path::check(home).map_err(|m| self.err("homedir", &m))?;
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        watch_loop(self.accounts.files(), false, ctx)
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let name = self.raw.name.clone();
        let exists = self.accounts.user(&name).await?.is_some();
        if self.params.state == Presence::Absent {
            if !exists {
                return Ok(true);
            }
            if apply {
                self.accounts.delete_user(&name).await?;
            } else {
                ctx.report(format!("user[{name}]: would delete the user"));
            }
            return Ok(false);
        }
        let Some(spec) = self.wanted().await? else { return Ok(true) };
        if !apply {
            ctx.report(format!("user[{name}]: would {} the user: {spec:?}", if exists { "modify" } else { "add" }));
            return Ok(false);
        }
        if exists {
            self.accounts.modify_user(&name, &spec).await?;
        } else {
            self.accounts.add_user(&name, &spec).await?;
        }
        Ok(false)
    }

    crate::fingerprint_by_params!();
}

crate::params! {
    /// `group`'s params.
    #[derive(Clone, Debug, PartialEq)]
    pub struct GroupParams {
        pub state: Presence,
        pub gid: Option<u32>,
    }
}

pub struct Group {
    raw: Raw,
    params: GroupParams,
    accounts: Arc<dyn Accounts>,
}

impl Group {
    pub fn build(host: &Machine, name: &str, values: &ParamMap) -> Result<Group, BuildError> {
        let (raw, params) = Raw::decoded("group", name, values, GroupParams::decode)?;
        Ok(Group { raw, params, accounts: host.accounts.clone() })
    }
}

#[async_trait]
impl Resource for Group {
    fn validate(&self) -> Result<(), ResError> {
        if self.params.state == Presence::Unset {
            return Err(self.raw.invalid(Some("state"), "must be `exists` or `absent`"));
        }
        Ok(())
    }

    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        watch_loop(self.accounts.files(), false, ctx)
    }

    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let name = self.raw.name.clone();
        let current = self.accounts.group(&name).await?;
        let (ok, action) = match (self.params.state, current, self.params.gid) {
            (Presence::Absent, None, _) => (true, ""),
            (Presence::Absent, Some(_), _) => (false, "delete"),
            (_, None, _) => (false, "add"),
            (_, Some(have), Some(want)) if have != want => (false, "modify"),
            _ => (true, ""),
        };
        if ok {
            return Ok(true);
        }
        if !apply {
            ctx.report(format!("group[{name}]: would {action} the group"));
            return Ok(false);
        }
        match action {
            "delete" => self.accounts.delete_group(&name).await?,
            "add" => self.accounts.add_group(&name, self.params.gid).await?,
            _ => self.accounts.modify_group(&name, self.params.gid.unwrap_or_default()).await?,
        }
        Ok(false)
    }

    crate::fingerprint_by_params!();
}

/// A `user` comes after the groups it names (by `gid`, `group` or `groups`), or before
/// them when it is to be absent (it must go before its groups can).
fn user_requires(index: &Index<'_>, idx: usize, _name: &str, params: &ParamMap, edges: &mut Edges) {
    let absent = str_param(params, "state") == Some("absent");
    let mut groups = Vec::new();
    if let Some(gid) = params.get("gid").and_then(Value::as_int)
        && let Some(g) = index.group_by_gid(gid)
    {
        groups.push(g);
    }
    let names = str_param(params, "group").into_iter().chain(list_param(params, "groups"));
    groups.extend(names.filter_map(|group| index.resource("group", group)));
    for g in groups {
        edges.push(if absent { (idx, g) } else { (g, idx) });
    }
}

/// A `group` provides its gid.
fn group_provides(index: &mut Index<'_>, idx: usize, _name: &str, params: &ParamMap) {
    if let Some(gid) = params.get("gid").and_then(Value::as_int) {
        index.add_group_gid(gid, idx);
    }
}

/// The `user` kind: its params and send fields as the type checker sees them, and its constructor.
pub const USER: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("user", UserParams::FIELDS, crate::built_on_host!(User)).autoedges(
        crate::contract::autoedge::Rules {
            provides: None,
            requires: Some(user_requires),
            reads: &["state", "gid", "group", "groups"],
        },
    );

/// The `group` kind: its params and send fields as the type checker sees them, and its constructor.
pub const GROUP: crate::contract::kind::Kind =
    crate::contract::kind::Kind::new("group", GroupParams::FIELDS, crate::built_on_host!(Group)).autoedges(
        crate::contract::autoedge::Rules { provides: Some(group_provides), requires: None, reads: &["gid"] },
    );
