//! The deadline after which a leased identity must not issue.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::time::{ClockId, clock_gettime};

/// Nanoseconds on the kernel's coarse monotonic clock.
///
/// The coarse clock is the monotonic clock as of the last timer tick (it
/// lags by at most one tick, 1 to 10 ms) and costs a few nanoseconds to
/// read instead of some thirty: the fence is checked on every mint. A fence
/// read on it closes at most one tick late, which the margin (at least 1 s,
/// see [`fence_margin`](crate::fence_margin)) covers many times over.
fn coarse_ns() -> u64 {
    let t = clock_gettime(ClockId::MonotonicCoarse);
    (t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64)
}

/// `at` on the coarse clock. `Instant` is the fine monotonic clock, of the
/// same origin; the conversion is anchored at "now" on both, read coarse
/// first, so a converted deadline is never later than `at` (plus the read's
/// own few nanoseconds).
fn coarse_of(at: Instant) -> u64 {
    let coarse = coarse_ns();
    let now = Instant::now();
    let ahead = at.saturating_duration_since(now);
    let behind = now.saturating_duration_since(at);
    let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    coarse
        .saturating_add(ns(ahead))
        .saturating_sub(ns(behind))
        // Leave 0 for "expired by hand" and MAX for "never".
        .clamp(1, u64::MAX - 1)
}

/// The process's first coarse reading, to report remaining time from.
fn origin() -> u64 {
    static ORIGIN: OnceLock<u64> = OnceLock::new();
    *ORIGIN.get_or_init(coarse_ns)
}

/// A deadline on the monotonic clock after which a generator must not issue.
///
/// One `AtomicU64`, checked on every mint without a lock. A lease session
/// sets it to the moment the lease could have expired on the server, less a
/// margin, and [`extend`](Fence::extend)s it on each keep-alive etcd answers.
///
/// ```
/// use std::time::{Duration, Instant};
/// use snowmint_etcd::Fence;
///
/// let fence = Fence::until(Instant::now() + Duration::from_secs(10));
/// assert!(fence.is_open());
/// fence.expire();
/// assert!(!fence.is_open());
/// fence.extend(Instant::now() + Duration::from_secs(10));
/// assert!(!fence.is_open(), "an expired fence stays expired");
/// assert!(Fence::never().is_open());
/// ```
#[derive(Debug)]
pub struct Fence {
    /// Nanoseconds on the coarse monotonic clock; 0 = expired by hand,
    /// `u64::MAX` = never expires.
    deadline_ns: AtomicU64,
}

impl Fence {
    const EXPIRED: u64 = 0;
    const NEVER: u64 = u64::MAX;

    /// A fence that never closes (an identity nobody else can hold).
    pub fn never() -> Fence {
        Fence {
            deadline_ns: AtomicU64::new(Self::NEVER),
        }
    }

    /// A fence open until `deadline`.
    pub fn until(deadline: Instant) -> Fence {
        let _ = origin();
        Fence {
            deadline_ns: AtomicU64::new(coarse_of(deadline)),
        }
    }

    /// Moves the deadline forward to `deadline` (never backward). A fence that
    /// was [`expire`](Fence::expire)d stays expired: make a new one.
    pub fn extend(&self, deadline: Instant) {
        let new = coarse_of(deadline);
        let _ = self
            .deadline_ns
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |old| {
                (old != Self::EXPIRED && old != Self::NEVER && new > old).then_some(new)
            });
    }

    /// Closes the fence now, for good.
    pub fn expire(&self) {
        self.deadline_ns.store(Self::EXPIRED, Ordering::Release);
    }

    /// Whether minting is still allowed: one atomic load and, for a
    /// deadline, one read of the coarse clock.
    #[inline]
    pub fn is_open(&self) -> bool {
        match self.deadline_ns.load(Ordering::Acquire) {
            Self::NEVER => true,
            Self::EXPIRED => false,
            deadline => coarse_ns() < deadline,
        }
    }

    /// Whether [`expire`](Fence::expire) was called: one atomic load, no
    /// clock (a cheap look before a claim; [`is_open`](Fence::is_open)
    /// decides).
    #[inline]
    pub(crate) fn is_expired(&self) -> bool {
        self.deadline_ns.load(Ordering::Acquire) == Self::EXPIRED
    }

    /// Time left before the fence closes; `None` if it never does.
    pub fn remaining(&self) -> Option<Duration> {
        match self.deadline_ns.load(Ordering::Acquire) {
            Self::NEVER => None,
            deadline => Some(Duration::from_nanos(deadline.saturating_sub(coarse_ns()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_move_forward_only_and_close_in_time() {
        let past = Fence::until(Instant::now() - Duration::from_millis(1));
        assert!(!past.is_open());
        let fence = Fence::until(Instant::now() + Duration::from_secs(5));
        fence.extend(Instant::now() + Duration::from_secs(1));
        assert!(
            fence.remaining().unwrap() > Duration::from_secs(2),
            "never backward"
        );
        fence.extend(Instant::now() + Duration::from_secs(50));
        assert!(fence.remaining().unwrap() > Duration::from_secs(10));
        assert_eq!(Fence::never().remaining(), None);
        // A near deadline closes within a tick (at most 10 ms) of it.
        let deadline = Instant::now() + Duration::from_millis(100);
        let fence = Fence::until(deadline);
        assert!(fence.is_open());
        let started = Instant::now();
        while fence.is_open() {
            assert!(started.elapsed() < Duration::from_secs(5), "never closed");
            std::thread::yield_now();
        }
        assert!(
            Instant::now() + Duration::from_millis(10) >= deadline,
            "closed more than a tick early"
        );
    }
}
