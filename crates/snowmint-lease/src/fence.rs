//! The deadline after which a leased identity must not issue.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::clock::{LeaseClock, SystemLeaseClock};

/// A deadline on a [`LeaseClock`] after which a generator must not issue.
///
/// One `AtomicU64`, checked on every mint without a lock. A lease session
/// sets it to the moment the lease could have expired on the coordinator,
/// less a margin, and [`extend`](Fence::extend)s it on each confirmed
/// renewal.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use snowmint_lease::{Fence, LeaseClock, SystemLeaseClock};
///
/// let clock = Arc::new(SystemLeaseClock);
/// let fence = Fence::until(clock.clone(), clock.now() + Duration::from_secs(10));
/// assert!(fence.is_open());
/// fence.expire();
/// assert!(!fence.is_open());
/// fence.extend(clock.now() + Duration::from_secs(10));
/// assert!(!fence.is_open(), "an expired fence stays expired");
/// assert!(Fence::never().is_open());
/// ```
#[derive(Debug)]
pub struct Fence {
    /// Nanoseconds on `clock`; 0 = expired by hand, `u64::MAX` = never
    /// expires.
    deadline_ns: AtomicU64,
    clock: Arc<dyn LeaseClock>,
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos())
        .unwrap_or(u64::MAX)
        // Leave 0 for "expired by hand" and MAX for "never".
        .clamp(1, u64::MAX - 1)
}

impl Fence {
    const EXPIRED: u64 = 0;
    const NEVER: u64 = u64::MAX;

    /// A fence that never closes (an identity nobody else can hold).
    pub fn never() -> Fence {
        Fence {
            deadline_ns: AtomicU64::new(Self::NEVER),
            clock: Arc::new(SystemLeaseClock),
        }
    }

    /// A fence open until `deadline` on `clock`.
    pub fn until(clock: Arc<dyn LeaseClock>, deadline: Duration) -> Fence {
        Fence {
            deadline_ns: AtomicU64::new(ns(deadline)),
            clock,
        }
    }

    /// Moves the deadline forward to `deadline` (never backward). A fence that
    /// was [`expire`](Fence::expire)d stays expired: make a new one.
    pub fn extend(&self, deadline: Duration) {
        let new = ns(deadline);
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
    /// deadline, one read of the clock.
    #[inline]
    pub fn is_open(&self) -> bool {
        match self.deadline_ns.load(Ordering::Acquire) {
            Self::NEVER => true,
            Self::EXPIRED => false,
            deadline => ns(self.clock.now()) < deadline,
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
            deadline => Some(Duration::from_nanos(
                deadline.saturating_sub(ns(self.clock.now())),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_move_forward_only_and_close_in_time() {
        let clock: Arc<dyn LeaseClock> = Arc::new(SystemLeaseClock);
        let now = || clock.now();
        let past = Fence::until(clock.clone(), now() - Duration::from_millis(1));
        assert!(!past.is_open());
        let fence = Fence::until(clock.clone(), now() + Duration::from_secs(5));
        fence.extend(now() + Duration::from_secs(1));
        assert!(
            fence.remaining().unwrap() > Duration::from_secs(2),
            "never backward"
        );
        fence.extend(now() + Duration::from_secs(50));
        assert!(fence.remaining().unwrap() > Duration::from_secs(10));
        assert_eq!(Fence::never().remaining(), None);
        // A near deadline closes when the clock passes it.
        let deadline = now() + Duration::from_millis(100);
        let fence = Fence::until(clock.clone(), deadline);
        assert!(fence.is_open());
        let started = std::time::Instant::now();
        while fence.is_open() {
            assert!(started.elapsed() < Duration::from_secs(5), "never closed");
            std::thread::yield_now();
        }
        assert!(now() >= deadline, "closed before its deadline");
    }
}
