//! Autogrouping's generic vertex: several resources that run as one ([`Group`]), for kinds
//! that group without a way of their own to apply many at once (a `print`, an `http:server`
//! and its routes). The first resource is the group's own (its key is the vertex's); each
//! member is checked and applied in turn, reported under its own name, and reached by
//! send/recv through its qualified field names ([`member_field`]).

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use futures::future::BoxFuture;

use crate::key::{Payload, ResError, ResKey};
use crate::res::{ApplyCtx, InitCtx, Resource, WatchCtx};

/// The name a group gives field `field` of its member `member` (send/recv into and out of
/// a grouped resource): `kind[name].field`. The group's own fields keep their names.
pub fn member_field(member: &ResKey, field: &str) -> String {
    format!("{member}.{field}")
}

/// One resource of a group, with its key.
struct Part {
    key: ResKey,
    res: Box<dyn Resource>,
    /// `kind[name].`: the prefix of this member's fields as the group names them; empty for
    /// the group's own resource.
    prefix: String,
}

/// Resources applied as one vertex: the group's own first, then its members.
pub struct Group {
    parts: Vec<Part>,
}

impl Group {
    /// A group of `own` (the vertex's resource, under the vertex's key) and `members`.
    pub fn new(own: (ResKey, Box<dyn Resource>), members: Vec<(ResKey, Box<dyn Resource>)>) -> Group {
        let mut parts = Vec::with_capacity(members.len() + 1);
        parts.push(Part { key: own.0, res: own.1, prefix: String::new() });
        for (key, res) in members {
            let prefix = member_field(&key, "");
            parts.push(Part { key, res, prefix });
        }
        Group { parts }
    }

    /// The part a group-level field names and the field as that part names it.
    fn route<'a>(&self, field: &'a str) -> (usize, &'a str) {
        self.parts
            .iter()
            .enumerate()
            .skip(1)
            .find_map(|(i, p)| field.strip_prefix(p.prefix.as_str()).map(|f| (i, f)))
            .unwrap_or((0, field))
    }
}

#[async_trait]
impl Resource for Group {
    fn validate(&self) -> Result<(), ResError> {
        for p in &self.parts {
            p.res.validate().map_err(|e| named(&p.key, e))?;
        }
        Ok(())
    }

    async fn init(&mut self, ctx: &InitCtx) -> Result<(), ResError> {
        for p in &mut self.parts {
            let own = InitCtx { key: p.key.clone(), ..ctx.clone() };
            p.res.init(&own).await.map_err(|e| named(&p.key, e))?;
        }
        Ok(())
    }

    /// Every part's watch at once, all reporting to the group's worker.
    fn watch(&self, ctx: WatchCtx) -> BoxFuture<'static, Result<(), ResError>> {
        let mut kept = Vec::new();
        let mut watches = Vec::new();
        for p in &self.parts {
            match p.res.subscribe(&ctx) {
                Some(Ok(sub)) => kept.push(sub),
                Some(Err(e)) => return Box::pin(std::future::ready(Err(named(&p.key, e)))),
                None => {
                    let key = p.key.clone();
                    let watch = p.res.watch(ctx.clone());
                    watches.push(async move { watch.await.map_err(|e| named(&key, e)) });
                }
            }
        }
        Box::pin(async move {
            // The members' registrations stay for as long as the group's watch runs.
            let _kept = kept;
            // A subscription reports no startup event of its own inside a group.
            ctx.event();
            futures::future::try_join_all(watches).await?;
            ctx.cancelled().await;
            Ok(())
        })
    }

    fn watch_passive(&self) -> bool {
        self.parts.iter().all(|p| p.res.watch_passive())
    }

    /// Each part in turn, each failure named by its part; the parts after a failing one
    /// still run (they are independent: grouping never joins resources an edge orders).
    async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
        let mut all_ok = true;
        let mut errors = Vec::new();
        let mut transient = true;
        let mut received: Vec<BTreeSet<String>> = vec![BTreeSet::new(); self.parts.len()];
        for f in &ctx.recv_changed {
            let (i, own) = self.route(f);
            received[i].insert(own.to_string());
        }
        for (i, (p, received)) in self.parts.iter_mut().zip(received).enumerate() {
            let mut own = ctx.for_member(p.res.refreshable(), received);
            let outcome = p.res.check_apply(&mut own, apply).await;
            let ok = match outcome {
                Ok(ok) => ok,
                Err(e) => {
                    transient &= e.is_transient();
                    errors.push(format!("{}: {}", p.key, e.message));
                    true
                }
            };
            all_ok &= ok;
            ctx.part(i == 0, &p.key, !ok, own.reports);
        }
        match errors.len() {
            0 => Ok(all_ok),
            _ if transient => Err(ResError::transient(errors.join("; "))),
            _ => Err(ResError::new(errors.join("; "))),
        }
    }

    async fn cleanup(&mut self) -> Result<(), ResError> {
        let mut first = None;
        for p in &mut self.parts {
            if let Err(e) = p.res.cleanup().await {
                first.get_or_insert(named(&p.key, e));
            }
        }
        first.map_or(Ok(()), Err)
    }

    fn fingerprint(&self) -> String {
        let mut out = String::new();
        for p in &self.parts {
            let print = p.res.fingerprint();
            use std::fmt::Write as _;
            let _infallible = write!(out, "{}:{}\u{0}{}:{print};", p.key.to_string().len(), p.key, print.len());
        }
        out
    }

    fn refreshable(&self) -> bool {
        self.parts.iter().any(|p| p.res.refreshable())
    }

    fn sends(&self) -> Option<BTreeMap<String, Payload>> {
        let mut out = BTreeMap::new();
        for p in &self.parts {
            for (field, value) in p.res.sends().into_iter().flatten() {
                out.insert(format!("{}{field}", p.prefix), value);
            }
        }
        (!out.is_empty()).then_some(out)
    }

    fn received_fields(&mut self, fields: &[&str]) {
        let mut by_part: Vec<Vec<&str>> = vec![Vec::new(); self.parts.len()];
        for f in fields {
            let (i, own) = self.route(f);
            by_part[i].push(own);
        }
        for (p, fields) in self.parts.iter_mut().zip(by_part) {
            p.res.received_fields(&fields);
        }
    }

    fn recv(&mut self, key: &str, value: &Payload) -> Result<bool, ResError> {
        let (i, own) = self.route(key);
        let p = &mut self.parts[i];
        p.res.recv(own, value).map_err(|e| named(&p.key, e))
    }
}

/// `e`, its message naming the part it came from.
fn named(key: &ResKey, e: ResError) -> ResError {
    ResError { message: format!("{key}: {}", e.message), ..e }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A resource that is wrong until applied, fails when told, and receives `msg`.
    struct Part1 {
        applied: bool,
        fail: bool,
        msg: String,
        runs: Arc<AtomicUsize>,
    }

    #[async_trait]
    impl Resource for Part1 {
        async fn check_apply(&mut self, ctx: &mut ApplyCtx, apply: bool) -> Result<bool, ResError> {
            self.runs.fetch_add(1, Ordering::SeqCst);
            if self.fail {
                return Err(ResError::new("broken"));
            }
            if self.applied {
                return Ok(true);
            }
            ctx.report(format!("set {}", self.msg));
            self.applied = apply;
            Ok(false)
        }
        fn fingerprint(&self) -> String {
            self.msg.clone()
        }
        fn sends(&self) -> Option<BTreeMap<String, Payload>> {
            Some(BTreeMap::from([("msg".to_string(), Arc::new(self.msg.clone()) as Payload)]))
        }
        fn recv(&mut self, key: &str, value: &Payload) -> Result<bool, ResError> {
            assert_eq!(key, "msg");
            let v = value.downcast_ref::<String>().unwrap().clone();
            let changed = v != self.msg;
            self.msg = v;
            Ok(changed)
        }
    }

    fn part(msg: &str, fail: bool, runs: &Arc<AtomicUsize>) -> Box<dyn Resource> {
        Box::new(Part1 { applied: false, fail, msg: msg.into(), runs: runs.clone() })
    }

    #[tokio::test]
    async fn members_are_applied_and_reported_under_their_names() {
        let runs = Arc::new(AtomicUsize::new(0));
        let (a, b) = (ResKey::new("print", "a"), ResKey::new("print", "b"));
        let mut g = Group::new((a.clone(), part("one", false, &runs)), vec![(b.clone(), part("two", false, &runs))]);
        let mut ctx = ApplyCtx::detached();
        assert!(!g.check_apply(&mut ctx, true).await.unwrap());
        assert_eq!(ctx.reports, ["set one"]);
        assert_eq!(ctx.own_changed, Some(true));
        assert_eq!(ctx.members.len(), 1);
        assert_eq!(ctx.members[0].key, b);
        assert!(ctx.members[0].changed);
        assert_eq!(ctx.members[0].reports, ["set two"]);
        let mut again = ApplyCtx::detached();
        assert!(g.check_apply(&mut again, true).await.unwrap(), "both applied");
        assert_eq!(runs.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn a_failing_member_is_named_and_the_others_still_run() {
        let runs = Arc::new(AtomicUsize::new(0));
        let (a, b, c) = (ResKey::new("pkg", "a"), ResKey::new("pkg", "b"), ResKey::new("pkg", "c"));
        let mut g = Group::new(
            (a, part("one", false, &runs)),
            vec![(b, part("two", true, &runs)), (c.clone(), part("three", false, &runs))],
        );
        let mut ctx = ApplyCtx::detached();
        let err = g.check_apply(&mut ctx, true).await.unwrap_err();
        assert_eq!(err.message, "pkg[b]: broken");
        assert_eq!(runs.load(Ordering::SeqCst), 3);
        assert!(ctx.members.iter().any(|m| m.key == c && m.changed));
    }

    #[tokio::test]
    async fn send_and_recv_reach_a_member_by_its_qualified_field() {
        let runs = Arc::new(AtomicUsize::new(0));
        let (a, b) = (ResKey::new("print", "a"), ResKey::new("print", "b"));
        let mut g = Group::new((a, part("one", false, &runs)), vec![(b.clone(), part("two", false, &runs))]);
        let value: Payload = Arc::new("hello".to_string());
        assert!(g.recv(&member_field(&b, "msg"), &value).unwrap());
        assert!(!g.recv(&member_field(&b, "msg"), &value).unwrap(), "the same value again changes nothing");
        let sends = g.sends().unwrap();
        assert_eq!(sends["msg"].downcast_ref::<String>().unwrap(), "one");
        assert_eq!(sends["print[b].msg"].downcast_ref::<String>().unwrap(), "hello");
        assert!(g.fingerprint().contains("hello"), "a member's received value is in the group's fingerprint");
    }
}
