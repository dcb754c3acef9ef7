//! Flapping: a resource whose watch keeps finding it changed, and whose check-apply keeps
//! repairing it, is being fought over by another writer (a second agent, a cron job, a
//! package's postinst). Repairing it 700 times a second helps nobody: the worker counts
//! the repairs its watch's events lead to, and past [`REPAIRS`] within [`WINDOW`] says so
//! once and backs off (each repair waits longer, up to [`MAX_BACKOFF`]) until the
//! resource stays right for a whole window.

use std::time::Duration;

use tokio::time::Instant;

/// Repairs within [`WINDOW`] that make a resource flapping.
pub const REPAIRS: u32 = 10;
/// The window repairs are counted in; a resource that stays right (or is repaired fewer
/// than [`REPAIRS`] times) for a whole window is no longer flapping.
pub const WINDOW: Duration = Duration::from_secs(10);
/// The first wait before a flapping resource's next repair, doubled at each new run of
/// [`REPAIRS`] repairs up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// One worker's count, kept only while its resource is being repaired after events.
#[derive(Debug)]
pub(crate) struct Flap {
    since: Instant,
    repairs: u32,
    /// The wait before each repair; zero until the resource is found flapping.
    pub(crate) backoff: Duration,
}

/// What a repair means for the resource.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Nothing to say.
    Calm,
    /// It just started flapping: say so (once), with how many repairs within how long.
    Started { repairs: u32, within: Duration },
}

impl Flap {
    pub(crate) fn new(now: Instant) -> Flap {
        Flap { since: now, repairs: 0, backoff: Duration::ZERO }
    }

    /// Whether the count is stale: no run of [`REPAIRS`] filled the window that ended
    /// before `now`, so the resource is calm again and the count can go.
    pub(crate) fn expired(&self, now: Instant) -> bool {
        now.duration_since(self.since) > WINDOW && self.repairs < REPAIRS
    }

    /// Counts a repair made after an event at `now`.
    pub(crate) fn repaired(&mut self, now: Instant) -> Verdict {
        if now.duration_since(self.since) > WINDOW {
            self.since = now;
            self.repairs = 0;
        }
        self.repairs += 1;
        if self.repairs < REPAIRS {
            return Verdict::Calm;
        }
        let within = now.duration_since(self.since);
        let first = self.backoff.is_zero();
        self.backoff = if first { FIRST_BACKOFF } else { (self.backoff * 2).min(MAX_BACKOFF) };
        self.since = now;
        self.repairs = 0;
        if first { Verdict::Started { repairs: REPAIRS, within } } else { Verdict::Calm }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_repairs_in_a_window_start_flapping_once_and_back_off_more_each_time() {
        let start = Instant::now();
        let mut flap = Flap::new(start);
        let at = |ms: u64| start + Duration::from_millis(ms);
        for i in 0..REPAIRS - 1 {
            assert_eq!(flap.repaired(at(u64::from(i) * 10)), Verdict::Calm);
        }
        assert!(matches!(flap.repaired(at(100)), Verdict::Started { repairs: REPAIRS, .. }));
        assert_eq!(flap.backoff, FIRST_BACKOFF);
        for i in 0..REPAIRS {
            assert_eq!(flap.repaired(at(200 + u64::from(i))), Verdict::Calm, "said once");
        }
        assert_eq!(flap.backoff, FIRST_BACKOFF * 2);
        assert!(!flap.expired(at(300)));
        // A few repairs spread over more than a window: calm again.
        flap.repaired(at(300));
        assert!(flap.expired(at(300) + WINDOW + Duration::from_millis(1)));
    }

    #[test]
    fn repairs_spread_over_windows_are_calm() {
        let start = Instant::now();
        let mut flap = Flap::new(start);
        for i in 0..100u32 {
            let now = start + WINDOW.mul_f64(f64::from(i) / 5.0) + Duration::from_millis(1);
            assert_eq!(flap.repaired(now), Verdict::Calm);
        }
        assert!(flap.backoff.is_zero());
    }
}
