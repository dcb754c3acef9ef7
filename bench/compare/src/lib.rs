//! The measurements behind ARCHITECTURE.md's "crates we do not use" section: a chumsky
//! prototype of mcl's grammar ([`mcl_chumsky`]), a counting allocator for memory figures
//! ([`alloc`]) and the small timing helpers both binaries share.

pub mod alloc;
pub mod mcl_chumsky;

use std::time::{Duration, Instant};

/// The median of `runs` timings of `f` (after one warm-up run).
pub fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    f();
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// Milliseconds with two decimals.
pub fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}
