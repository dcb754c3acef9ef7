//! Metaparameters (engine.md 2.13): the per-resource knobs the engine runs by, their
//! defaults and validation.

/// The metaparameters the engine acts on, converted from the program's (`lang`'s
/// `resgraph::Meta`, decoded once there): those only the interpreter and the bridge read
/// (`realize`, `export`, `autoedge`, `autogroup`, `tags`) stay there. Durations are in
/// milliseconds, `poll` in seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    /// Run check-apply with `apply = false`.
    pub noop: bool,
    /// Retries after a failure; -1 = forever. Watch budget per worker, check-apply budget
    /// per kind+name (kept across swaps).
    pub retry: i16,
    /// Refill the check-apply budget after each success (not compared on swap).
    pub retryreset: bool,
    /// Wait between retries (ms).
    pub delay: u64,
    /// Deadline for each check-apply (ms); 0 = none.
    pub timeout: u64,
    /// > 0: poll every N seconds instead of watching; < 0: one startup event only.
    pub poll: i32,
    /// Watch events per second (token bucket); infinite = unlimited.
    pub limit: f64,
    /// Token bucket size; must be > 0 with a finite limit.
    pub burst: u32,
    /// Reset the retry budget when this kind+name is replaced.
    pub reset: bool,
    /// Semaphores held during check-apply: `name` or `name:N`.
    pub sema: Vec<String>,
    /// Restart a failed worker on the next graph swap.
    pub rewatch: bool,
    /// Allow names starting with `$`.
    pub dollar: bool,
    /// Keep in the graph but never watch or check-apply.
    pub hidden: bool,
    /// Undo this resource when it leaves the graph ([`crate::Resource::reversal`]);
    /// pending reversals are kept under the state dir when the engine can revive them
    /// ([`crate::EngineConfig::revive`]), so they survive a restart.
    pub reverse: bool,
}

impl Default for Meta {
    fn default() -> Meta {
        Meta {
            noop: false,
            retry: 0,
            retryreset: false,
            delay: 0,
            timeout: 0,
            poll: 0,
            limit: f64::INFINITY,
            burst: 0,
            reset: false,
            sema: Vec::new(),
            rewatch: false,
            dollar: false,
            hidden: false,
            reverse: false,
        }
    }
}

/// Why a set of metaparameters is invalid.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MetaError {
    #[error("meta: permanently limited (limit {limit}, burst 0): set Meta:burst above 0")]
    PermanentlyLimited { limit: String },
    #[error("meta: semaphore id `{0}` is invalid (expected `name` or `name:N` with N > 0)")]
    BadSema(String),
    #[error("meta: limit must not be negative or NaN")]
    BadLimit,
}

impl Meta {
    pub fn validate(&self) -> Result<(), MetaError> {
        if self.limit.is_nan() || self.limit < 0.0 {
            return Err(MetaError::BadLimit);
        }
        if self.limit.is_finite() && self.burst == 0 {
            return Err(MetaError::PermanentlyLimited { limit: self.limit.to_string() });
        }
        for id in &self.sema {
            parse_sema(id)?;
        }
        Ok(())
    }

    /// Equality for graph swaps: everything but `retryreset` (as mgmt).
    pub fn same_for_swap(&self, other: &Meta) -> bool {
        Meta { retryreset: other.retryreset, ..self.clone() } == *other
    }
}

/// Splits a semaphore id into name and capacity: `foo` → (`foo`, 1), `foo:3` → (`foo`, 3).
pub fn parse_sema(id: &str) -> Result<(String, usize), MetaError> {
    let bad = || MetaError::BadSema(id.to_string());
    if id.is_empty() || id.parse::<i64>().is_ok() {
        return Err(bad());
    }
    match id.rsplit_once(':') {
        Some((name, n)) => {
            let n: usize = n.parse().map_err(|_| bad())?;
            if n == 0 || name.is_empty() {
                return Err(bad());
            }
            Ok((id.to_string(), n))
        }
        None => Ok((id.to_string(), 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finite_limit_needs_a_burst() {
        let meta = Meta { limit: 2.0, ..Meta::default() };
        assert!(matches!(meta.validate(), Err(MetaError::PermanentlyLimited { .. })));
        assert!(Meta { burst: 1, ..meta }.validate().is_ok());
    }

    #[test]
    fn sema_ids() {
        assert_eq!(parse_sema("lock"), Ok(("lock".into(), 1)));
        assert_eq!(parse_sema("lock:3"), Ok(("lock:3".into(), 3)));
        for bad in ["", "42", "lock:0", ":3", "lock:x"] {
            assert!(parse_sema(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn retryreset_does_not_count_for_swaps() {
        let a = Meta::default();
        assert!(a.same_for_swap(&Meta { retryreset: true, ..Meta::default() }));
        assert!(!a.same_for_swap(&Meta { noop: true, ..Meta::default() }));
    }
}
