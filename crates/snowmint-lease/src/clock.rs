//! The clock the protocol reads: the fence on every mint, the session
//! before every request it sends. Injected ([`LeaseConfig::clock`](crate::LeaseConfig::clock)),
//! so a simulation runs the real fence and session on virtual time.

use std::fmt;
use std::time::Duration;

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use rustix::time::{ClockId, clock_gettime};

/// A monotonic clock: time since an arbitrary origin, never going back.
pub trait LeaseClock: Send + Sync + fmt::Debug + 'static {
    /// Now, since this clock's origin.
    fn now(&self) -> Duration;
}

/// The kernel's coarse monotonic clock, counting time the machine spent
/// suspended: the fence reads it on every mint.
///
/// The coarse monotonic clock is the monotonic clock as of the last timer
/// tick (it lags by at most one tick, 1 to 10 ms) at a few nanoseconds a
/// read instead of some thirty or more; a fence read on it closes at most
/// one tick late, which the margin (at least 1 s, see
/// [`fence_margin`](crate::fence_margin)) covers many times over.
///
/// But the monotonic clock stops while the machine is suspended, and a
/// lease runs on the coordinator's clock, which does not: a holder
/// suspended past its lease's end would find its fence still open on
/// waking, beside the identity's next holder. So each read also looks at
/// the coarse wall clock: the wall clock minus the monotonic clock changes
/// only when the wall clock is stepped or the machine wakes from a
/// suspend. When it has moved by more than [`RECHECK_MS`], the read asks
/// the kernel how long the machine has been suspended in all
/// (`CLOCK_BOOTTIME` minus `CLOCK_MONOTONIC`, some hundred nanoseconds),
/// and every read after adds that. A step of the wall clock costs one such
/// look and changes nothing; a suspend moves this clock on by its length
/// before the first mint after it.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemLeaseClock;

impl LeaseClock for SystemLeaseClock {
    #[inline]
    fn now(&self) -> Duration {
        static KERNEL: SuspendAwareClock<Kernel> = SuspendAwareClock::new(Kernel);
        KERNEL.now()
    }
}

/// How far (ms) the wall clock minus the monotonic clock may move before a
/// read looks at how long the machine has been suspended: more than the
/// two coarse clocks can differ by when a tick falls between their reads.
pub const RECHECK_MS: u64 = 50;

/// The clocks a [`SuspendAwareClock`] is built on: the kernel's
/// ([`SystemLeaseClock`]), or a simulation's.
pub trait ClockSources: Send + Sync + fmt::Debug + 'static {
    /// A monotonic clock that stops while the machine is suspended
    /// (`CLOCK_MONOTONIC_COARSE`): cheap, read on every call.
    fn monotonic(&self) -> Duration;
    /// The wall clock (`CLOCK_REALTIME_COARSE`): cheap, read on every call;
    /// it runs on while the machine is suspended, and may be stepped.
    fn wall(&self) -> Duration;
    /// How long the machine has been suspended in all, since it booted
    /// (`CLOCK_BOOTTIME` minus `CLOCK_MONOTONIC`): read only when the wall
    /// clock minus the monotonic clock has moved.
    fn suspended(&self) -> Duration;
}

/// A monotonic [`LeaseClock`] over [`ClockSources`] that counts the time
/// the machine spent suspended (see [`SystemLeaseClock`], which is one over
/// the kernel's clocks).
#[derive(Debug)]
pub struct SuspendAwareClock<S> {
    sources: S,
    /// The wall clock minus the monotonic clock when suspend time was last
    /// looked at (ns; `i64::MIN` before the first read).
    base_ns: AtomicI64,
    /// The suspend time seen then (ns); only grows.
    suspended_ns: AtomicU64,
}

impl<S: ClockSources> SuspendAwareClock<S> {
    /// A clock over `sources`.
    pub const fn new(sources: S) -> SuspendAwareClock<S> {
        SuspendAwareClock {
            sources,
            base_ns: AtomicI64::new(i64::MIN),
            suspended_ns: AtomicU64::new(0),
        }
    }

    /// The sources it reads.
    pub fn sources(&self) -> &S {
        &self.sources
    }
}

fn nanos(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

impl<S: ClockSources> LeaseClock for SuspendAwareClock<S> {
    #[inline]
    fn now(&self) -> Duration {
        let monotonic = self.sources.monotonic();
        if planted!(SuspendUncounted) {
            return monotonic;
        }
        let offset = nanos(self.sources.wall()).saturating_sub(nanos(monotonic));
        let base = self.base_ns.load(Ordering::Acquire);
        if offset.abs_diff(base) > RECHECK_MS * 1_000_000 {
            // Woken from a suspend, or the wall clock was stepped: how long
            // has the machine been suspended? Stored before the base, so a
            // read that finds the new base also finds it.
            let suspended = u64::try_from(self.sources.suspended().as_nanos()).unwrap_or(u64::MAX);
            self.suspended_ns.fetch_max(suspended, Ordering::AcqRel);
            self.base_ns.store(offset, Ordering::Release);
        }
        monotonic.saturating_add(Duration::from_nanos(
            self.suspended_ns.load(Ordering::Acquire),
        ))
    }
}

/// The kernel's clocks.
#[derive(Debug, Clone, Copy, Default)]
struct Kernel;

fn read(id: ClockId) -> Duration {
    let t = clock_gettime(id);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

impl ClockSources for Kernel {
    #[inline]
    fn monotonic(&self) -> Duration {
        read(ClockId::MonotonicCoarse)
    }

    #[inline]
    fn wall(&self) -> Duration {
        read(ClockId::RealtimeCoarse)
    }

    fn suspended(&self) -> Duration {
        // Boot time first: the difference can only come out a little low,
        // never above the true suspend time.
        let boot = read(ClockId::Boottime);
        boot.saturating_sub(read(ClockId::Monotonic))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Clocks a test moves by hand (ms), counting the looks at suspend time.
    #[derive(Debug, Default)]
    struct Hand {
        monotonic: AtomicU64,
        wall: AtomicU64,
        suspended: AtomicU64,
        looks: AtomicU64,
    }

    impl Hand {
        fn run(&self, ms: u64) {
            self.monotonic.fetch_add(ms, Ordering::Relaxed);
            self.wall.fetch_add(ms, Ordering::Relaxed);
        }

        fn suspend(&self, ms: u64) {
            self.wall.fetch_add(ms, Ordering::Relaxed);
            self.suspended.fetch_add(ms, Ordering::Relaxed);
        }
    }

    impl ClockSources for Hand {
        fn monotonic(&self) -> Duration {
            Duration::from_millis(self.monotonic.load(Ordering::Relaxed))
        }
        fn wall(&self) -> Duration {
            Duration::from_millis(self.wall.load(Ordering::Relaxed))
        }
        fn suspended(&self) -> Duration {
            self.looks.fetch_add(1, Ordering::Relaxed);
            Duration::from_millis(self.suspended.load(Ordering::Relaxed))
        }
    }

    #[test]
    fn a_suspend_moves_the_clock_on_and_a_wall_clock_step_does_not() {
        let clock = SuspendAwareClock::new(Hand::default());
        let hand = clock.sources();
        hand.wall.store(1_800_000_000_000, Ordering::Relaxed);
        hand.monotonic.store(5_000, Ordering::Relaxed);
        hand.suspended.store(60_000, Ordering::Relaxed);
        let ms = || u64::try_from(clock.now().as_millis()).unwrap();
        // Suspend time before the first read is part of the origin.
        assert_eq!(ms(), 65_000);
        hand.run(1_500);
        assert_eq!(ms(), 66_500);
        assert_eq!(
            hand.looks.load(Ordering::Relaxed),
            1,
            "one look at the start only"
        );
        // Suspended for 30 s: the monotonic clock stood still, this one did not.
        hand.suspend(30_000);
        assert_eq!(
            ms(),
            96_500,
            "the suspend is counted at the first read after it"
        );
        hand.run(10);
        assert_eq!(ms(), 96_510);
        assert_eq!(hand.looks.load(Ordering::Relaxed), 2);
        // The wall clock stepped forward, then back: one look each, no change.
        hand.wall.fetch_add(3_600_000, Ordering::Relaxed);
        assert_eq!(ms(), 96_510);
        hand.wall.fetch_sub(7_200_000, Ordering::Relaxed);
        assert_eq!(ms(), 96_510);
        assert_eq!(hand.looks.load(Ordering::Relaxed), 4);
        // A drift below the recheck threshold is no reason to look.
        hand.wall.fetch_add(RECHECK_MS - 1, Ordering::Relaxed);
        hand.run(1);
        assert_eq!(ms(), 96_511);
        assert_eq!(hand.looks.load(Ordering::Relaxed), 4);
    }

    #[test]
    fn the_kernels_clock_runs_with_the_monotonic_clock() {
        let clock = SystemLeaseClock;
        let t0 = std::time::Instant::now();
        let a = clock.now();
        let t1 = std::time::Instant::now();
        std::thread::sleep(Duration::from_millis(30));
        let t2 = std::time::Instant::now();
        let b = clock.now();
        let t3 = std::time::Instant::now();
        assert!(b >= a, "never back");
        // Coarse: each read lags the fine clock by at most a tick (10 ms at
        // the slowest); bounded by what the fine clock saw around the reads.
        let (moved, tick) = (b - a, Duration::from_millis(10));
        assert!(
            moved + tick >= t2 - t1 && moved <= t3 - t0 + tick,
            "moved {moved:?}; the fine clock between {:?} and {:?}",
            t2 - t1,
            t3 - t0
        );
    }
}
