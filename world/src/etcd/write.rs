//! Writes: idempotent transactions (an unchanged value makes no revision and no watch
//! event), queued while the session is down, refused only when etcd says no; and a key
//! left to linger on a lease of its own.

use etcd_client::{Client, Compare, CompareOp, PutOptions, Txn, TxnOp};

use super::{Inner, REQUEST, lock};
use crate::{Topic, WorldError, Written};

/// Puts `value` at `key` (bound to `lease`) unless it is there already; deletes it with
/// `None`. One transaction: an unchanged value makes no revision and no watch event.
/// Returns the store's revision after it.
pub(super) async fn put_if_changed(
    client: &mut Client,
    key: &str,
    value: Option<&str>,
    lease: Option<i64>,
) -> Result<i64, etcd_client::Error> {
    let txn = match value {
        Some(v) => {
            let mut same = vec![Compare::value(key, CompareOp::Equal, v)];
            let mut put = PutOptions::new();
            if let Some(id) = lease {
                same.push(Compare::lease(key, CompareOp::Equal, id));
                put = put.with_lease(id);
            }
            Txn::new().when(same).or_else([TxnOp::put(key, v, Some(put))])
        }
        None => Txn::new().when([Compare::version(key, CompareOp::Greater, 0)]).and_then([TxnOp::delete(key, None)]),
    };
    client.txn(txn).await.map(|r| r.header().map_or(0, |h| h.revision()))
}

/// Whether an error means the cluster is away (queue the write) rather than a refusal.
pub(super) fn is_outage(e: &etcd_client::Error) -> bool {
    use tonic::Code;
    match e {
        etcd_client::Error::GRpcStatus(s) => !matches!(
            s.code(),
            Code::InvalidArgument
                | Code::ResourceExhausted
                | Code::PermissionDenied
                | Code::Unauthenticated
                | Code::FailedPrecondition
                | Code::OutOfRange
        ),
        _ => true,
    }
}

impl Inner {
    /// Rebinds `key` (holding `value`) to a lease of its own that nobody renews: it goes
    /// `secs` seconds from now, whatever becomes of this agent.
    pub(super) async fn linger(&self, key: &str, value: &str, secs: u64) -> Result<Written, WorldError> {
        if self.cfg.observer {
            return Ok(Written::Done);
        }
        let Some(mut s) = self.current() else { return Ok(Written::Queued) };
        let ttl = i64::try_from(secs).unwrap_or(i64::MAX);
        let put = async {
            let id = s.client.lease_grant(ttl, None).await?.id();
            s.client.put(key, value, Some(PutOptions::new().with_lease(id))).await.map(|_| ())
        };
        match tokio::time::timeout(REQUEST, put).await {
            Ok(Ok(())) => Ok(Written::Done),
            Ok(Err(e)) if !is_outage(&e) => Err(refused(format!("the write of `{key}`"), &e)),
            _ => Ok(Written::Queued),
        }
    }

    /// Writes `key` (bound to the session when `lease`) and, once written, shows it to
    /// the followers of `shown` (a topic and an entry name). A delete that cannot be made
    /// now is remembered and made on the next session.
    pub(super) async fn write(
        &self,
        key: String,
        value: Option<&str>,
        lease: bool,
        shown: Option<(Topic, &str)>,
    ) -> Result<Written, WorldError> {
        if self.cfg.observer {
            return Err(WorldError::Observer(format!("`{key}` is")));
        }
        match value {
            Some(_) => lock(&self.disowned).remove(&key),
            None => lock(&self.disowned).insert(key.clone()),
        };
        let Some(mut s) = self.current() else {
            // This host's own entry is known here even while the store is away: its stale
            // view shows it (an agent started during an outage sees itself).
            if lease && let Some((topic, name)) = &shown {
                self.saw_own_while_away(topic, name, value);
            }
            return Ok(Written::Queued);
        };
        let lease = lease.then_some(s.lease);
        match tokio::time::timeout(REQUEST, put_if_changed(&mut s.client, &key, value, lease)).await {
            Ok(Ok(revision)) => {
                if value.is_none() {
                    lock(&self.disowned).remove(&key);
                }
                if let Some((topic, name)) = shown {
                    self.saw_write(&topic, name, value, revision);
                }
                Ok(Written::Done)
            }
            Ok(Err(e)) if !is_outage(&e) => Err(refused(format!("the write of `{key}`"), &e)),
            Ok(Err(e)) => {
                tracing::debug!(key, error = %e, "write queued");
                Ok(Written::Queued)
            }
            Err(_) => Ok(Written::Queued),
        }
    }
}

/// etcd's refusal of `what`.
pub(super) fn refused(what: String, e: &etcd_client::Error) -> WorldError {
    WorldError::Refused { what, reason: e.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write is queued through an outage and refused only when etcd says no for good.
    #[test]
    fn outages_are_told_from_refusals() {
        let status = |code| etcd_client::Error::GRpcStatus(tonic::Status::new(code, "x"));
        assert!(is_outage(&status(tonic::Code::Unavailable)));
        assert!(is_outage(&status(tonic::Code::DeadlineExceeded)));
        assert!(is_outage(&etcd_client::Error::InvalidArgs("no endpoint".into())));
        assert!(!is_outage(&status(tonic::Code::PermissionDenied)));
        assert!(!is_outage(&status(tonic::Code::InvalidArgument)));
        assert!(!is_outage(&status(tonic::Code::ResourceExhausted)));
        let told = refused("the write of `k`".into(), &status(tonic::Code::PermissionDenied)).to_string();
        assert!(told.starts_with("etcd refused the write of `k`: "), "{told}");
    }
}
