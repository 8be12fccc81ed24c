//! One clock for the whole server: the wall clock made monotonic, in shared
//! memory.
//!
//! Like the core's `SystemClock`, a reading is an anchor plus the monotonic
//! clock (`CLOCK_MONOTONIC`, the same in every process of the machine), and
//! about once a second each backend compares it with the wall clock and
//! raises the anchor if the wall clock is ahead. The anchor lives in shared
//! memory, so every backend reads the same clock, and it is only raised:
//!
//! - when the wall clock steps back while the server runs, readings keep
//!   counting from where they were and stay ahead of the wall clock by the
//!   size of the step until it catches up;
//! - at start the anchor is no earlier than the durable mark, so after a
//!   restart with the clock set back the clock counts on from the mark at
//!   the monotonic clock's pace (IDs keep increasing and minting goes on,
//!   their times ahead of the wall clock until it catches up).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use rustix::time::{ClockId, clock_gettime};

use crate::error::Refusal;

const NANOS_PER_MS: u64 = 1_000_000;

/// How often a backend compares the clock with the wall clock.
const RECHECK_EVERY_NS: u64 = 1_000_000_000;

thread_local! {
    /// Monotonic ns at which this backend compares with the wall clock next.
    static NEXT_CHECK_NS: Cell<u64> = const { Cell::new(0) };
}

/// Monotonic nanoseconds (since boot, system-wide).
pub fn monotonic_ns() -> u64 {
    let t = clock_gettime(ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// The wall clock in Unix ns, or why it cannot be read.
fn wall_ns() -> Result<u64, Refusal> {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .map_err(|_| Refusal::Limit("the system clock reads a time before 1970".to_owned()))
}

/// The server's clock, in shared memory: its anchor, Unix ns at monotonic
/// 0, which is only raised.
#[derive(Default)]
#[repr(transparent)]
pub struct Clock {
    offset_ns: AtomicU64,
}

impl Clock {
    /// Anchors the clock at start: no earlier than the wall clock and the
    /// mark.
    pub fn anchor(&self, mark_ms: u64) {
        let mono = monotonic_ns();
        let start_ns = wall_ns()
            .unwrap_or(0)
            .max(mark_ms.saturating_mul(NANOS_PER_MS));
        self.offset_ns
            .store(start_ns.saturating_sub(mono), Ordering::SeqCst);
    }

    /// The server's clock in Unix ms; never goes back (invariant of the
    /// anchor).
    pub fn now_ms(&self) -> Result<u64, Refusal> {
        let mono = monotonic_ns();
        let mut offset = self.offset_ns.load(Ordering::Acquire);
        if mono >= NEXT_CHECK_NS.get() {
            NEXT_CHECK_NS.set(mono + RECHECK_EVERY_NS);
            let wall = wall_ns()?;
            if wall > offset + mono {
                let raised = wall - mono;
                offset = self
                    .offset_ns
                    .fetch_max(raised, Ordering::AcqRel)
                    .max(raised);
            }
        }
        Ok((offset + mono) / NANOS_PER_MS)
    }
}
