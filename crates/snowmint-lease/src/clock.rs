//! The clock the protocol reads: the fence on every mint, the session
//! before every request it sends. Injected ([`LeaseConfig::clock`](crate::LeaseConfig::clock)),
//! so a simulation runs the real fence and session on virtual time.

use std::fmt;
use std::time::Duration;

use rustix::time::{ClockId, clock_gettime};

/// A monotonic clock: time since an arbitrary origin, never going back.
pub trait LeaseClock: Send + Sync + fmt::Debug + 'static {
    /// Now, since this clock's origin.
    fn now(&self) -> Duration;
}

/// The kernel's coarse monotonic clock: the monotonic clock as of the last
/// timer tick (it lags by at most one tick, 1 to 10 ms) at a few
/// nanoseconds a read instead of some thirty: the fence reads it on every
/// mint. A fence read on it closes at most one tick late, which the margin
/// (at least 1 s, see [`fence_margin`](crate::fence_margin)) covers many
/// times over.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemLeaseClock;

impl LeaseClock for SystemLeaseClock {
    #[inline]
    fn now(&self) -> Duration {
        let t = clock_gettime(ClockId::MonotonicCoarse);
        Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
    }
}
