//! The clocks `nextval` reads: the wall clock as it is, and the *reach*, how
//! far a forced lead lets IDs run ahead of it.
//!
//! IDs follow the wall clock. The shared state word (`mint.rs`) keeps them
//! increasing when the wall clock is behind the last issued unit (a step back
//! while running, or a start below the durable mark): IDs then stay in the
//! last unit and only move on when its sequence is used up. How far they may
//! move on is the larger of
//!
//! - the wall clock plus the core's borrowing bound
//!   ([`snowmint::DEFAULT_MAX_BORROW_MS`], 3 s), the lead of our own making;
//! - the reach: a clock in shared memory that is raised to the wall clock
//!   about once a second by every minting backend and to the floor at a start,
//!   and that otherwise runs at **half** the monotonic clock's pace.
//!
//! So a lead forced from outside is never kept as a fixed offset: while the
//! server mints fewer IDs than a unit holds, the IDs stand still and the lead
//! shrinks second for second as the wall clock advances; at the format's cap
//! the IDs move at the reach's pace, half the wall clock's, and the lead still
//! shrinks by at least half a second per second. Once the wall clock has
//! passed the IDs, they follow it again.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use rustix::time::{ClockId, clock_gettime};

use crate::error::Refusal;

const NANOS_PER_MS: u64 = 1_000_000;

/// How far past an ID's time a mark is raised (the core's reserve window).
pub const WINDOW_MS: u64 = snowmint::DEFAULT_RESERVE_WINDOW_MS;

/// How far ahead of the wall clock IDs may run by our own making (the core's
/// borrowing bound).
pub const BORROW_MS: u64 = snowmint::DEFAULT_MAX_BORROW_MS;

/// How often a backend raises the reach to the wall clock.
const TRACK_EVERY_NS: u64 = 1_000_000_000;

thread_local! {
    /// Monotonic ns at which this backend raises the reach next.
    static NEXT_TRACK_NS: Cell<u64> = const { Cell::new(0) };
}

/// Monotonic nanoseconds (since boot, system-wide: the same in every process
/// of the machine).
pub fn monotonic_ns() -> u64 {
    let t = clock_gettime(ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// The clock a leased identity's fence is published on (`lease.rs`):
/// `CLOCK_BOOTTIME` in nanoseconds, system-wide like the monotonic clock,
/// but counting time the machine spent suspended, as the lease crate's
/// fence clock does (a lease runs on during a suspend).
pub fn fence_ns() -> u64 {
    let t = clock_gettime(ClockId::Boottime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// The wall clock in Unix ms, or why it cannot be read.
pub fn wall_ms() -> Result<u64, Refusal> {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .map_err(|_| Refusal::Limit("the system clock reads a time before 1970".to_owned()))
}

/// The reach, in shared memory: `origin + monotonic / 2` (ns), only raised.
#[derive(Default)]
#[repr(transparent)]
pub struct Reach {
    origin_ns: AtomicU64,
}

impl Reach {
    /// The reach now, in Unix ms.
    pub fn now_ms(&self) -> u64 {
        let origin = self.origin_ns.load(Ordering::Acquire);
        origin.saturating_add(monotonic_ns() / 2) / NANOS_PER_MS
    }

    /// Raises the reach to at least `ms` (Unix) now.
    pub fn raise_to(&self, ms: u64) {
        let origin = ms
            .saturating_mul(NANOS_PER_MS)
            .saturating_sub(monotonic_ns() / 2);
        self.origin_ns.fetch_max(origin, Ordering::AcqRel);
    }

    /// Raises the reach to `wall_ms` if this backend has not done so for a
    /// second (so that a step back of the wall clock while running leaves
    /// the reach where the wall clock was).
    pub fn track(&self, wall_ms: u64) {
        let mono = monotonic_ns();
        if mono >= NEXT_TRACK_NS.get() {
            NEXT_TRACK_NS.set(mono + TRACK_EVERY_NS);
            self.raise_to(wall_ms);
        }
    }
}
