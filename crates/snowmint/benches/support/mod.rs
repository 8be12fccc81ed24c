//! Timing helpers the generator benches share (this crate's, and
//! snowmint-etcd's, which includes this file by path): an uncontended
//! `next_id` must be timed within one millisecond's 4096 IDs, or the bench
//! would measure the format's limit instead of the call.

use std::time::{Duration, Instant};

use snowmint::{Clock, SystemClock};

/// Calls per timed chunk of an uncontended measurement (< 4096).
pub const CHUNK: u64 = 1_000;

/// Spins until the wall clock enters a new millisecond.
pub fn fresh_millisecond(clock: &SystemClock) {
    let now = clock.now_ms();
    while clock.now_ms() == now {
        std::hint::spin_loop();
    }
}

/// Times `iters` calls of `f`, in chunks that each start at a fresh
/// millisecond.
pub fn chunked(iters: u64, clock: &SystemClock, mut f: impl FnMut()) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(CHUNK);
        fresh_millisecond(clock);
        let start = Instant::now();
        for _ in 0..n {
            f();
        }
        total += start.elapsed();
        left -= n;
    }
    total
}
