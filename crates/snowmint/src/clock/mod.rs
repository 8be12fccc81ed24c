//! Where the [`Generator`](crate::Generator) gets its time: the [`Clock`]
//! trait, the production [`SystemClock`] and the test [`ManualClock`].
//!
//! A generator needs two things from a clock: the current Unix millisecond,
//! and a way to wait for a later one (when the 4096 IDs of a millisecond are
//! used up, or when the clock is behind IDs already issued). Both go through
//! the clock so that tests run on virtual time: with a [`ManualClock`],
//! "wait for the next millisecond" advances the clock instead of sleeping,
//! and every edge case is a fast, deterministic unit test.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A source of Unix milliseconds that can also wait for a later one.
///
/// Implementations should not go backwards; the generator stays correct if
/// they do (it keeps issuing on its logical clock and reports the regression
/// in its metrics), but it cannot tell a regression from a slow thread.
pub trait Clock: Send + Sync + 'static {
    /// The current time in Unix milliseconds.
    fn now_ms(&self) -> u64;

    /// Waits until [`now_ms`](Clock::now_ms) would return at least
    /// `target_ms`, or until `max` has passed, whichever comes first, and
    /// returns how long it waited (in this clock's time).
    ///
    /// It may return early (spuriously); the generator calls it again as
    /// long as its budget lasts. It must not wait longer than `max` by more
    /// than the scheduler's usual slack.
    fn sleep_until_ms(&self, target_ms: u64, max: Duration) -> Duration;
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }

    fn sleep_until_ms(&self, target_ms: u64, max: Duration) -> Duration {
        (**self).sleep_until_ms(target_ms, max)
    }
}

impl<C: Clock + ?Sized> Clock for Box<C> {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }

    fn sleep_until_ms(&self, target_ms: u64, max: Duration) -> Duration {
        (**self).sleep_until_ms(target_ms, max)
    }
}

const NANOS_PER_MS: u64 = 1_000_000;

/// How often [`SystemClock`] compares itself with the wall clock.
const RECHECK_EVERY: Duration = Duration::from_secs(1);

/// Below this much time left to wait, [`SystemClock`] spins instead of
/// sleeping: a sleep costs a system call and wakes up to ~60 µs late (the
/// kernel's timer slack), which matters only this close to the target.
const SPIN_BELOW: Duration = Duration::from_micros(20);

/// The production clock: the wall clock read once, then advanced by the
/// monotonic clock, so that the time it reports never goes backwards.
///
/// An NTP step or an operator setting the system time back does not move
/// this clock back. About once a second it compares itself with the wall
/// clock and jumps *forward* if the wall clock is ahead (the wall clock was
/// stepped forward, or the monotonic clock ran slow); it never jumps back.
/// So after a step back of the wall clock it keeps counting from where it
/// was, and its reading stays ahead of the wall clock by the size of the
/// step until the wall clock catches up.
///
/// Reading it costs one monotonic clock read (`Instant::now`, a vDSO call on
/// Linux) and two relaxed atomic loads.
///
/// With the `tsc` feature, the monotonic part is read from the CPU's
/// time-stamp counter instead (through [`quanta`](https://docs.rs/quanta),
/// one `rdtsc` and a multiply; about half the cost of `Instant::now`), mapped
/// onto the monotonic clock and recalibrated against it about once a second:
///
/// - A counter that runs *slow* (its calibration is off, or it is not
///   invariant) would make IDs stale: at each recalibration the clock jumps
///   forward to the monotonic clock, so it is never behind it by more than
///   what one second of drift adds up to (microseconds for a calibration
///   error of 10^-6).
/// - A counter that runs *fast* would make IDs' timestamps run ahead of the
///   clock: when a recalibration finds the reading ahead of the monotonic
///   clock, the next second runs correspondingly slower (a slew, so the
///   reading never goes back); a reading found more than 0.2 ms ahead is
///   stepped back to the monotonic clock (the generator absorbs the step, as
///   it absorbs any clock step back).
/// - Each second's rate is the one measured over the previous second, so in
///   steady state the reading follows the monotonic clock within
///   microseconds. The wall-clock re-anchoring (forward only) is unchanged.
/// - On a CPU without an invariant counter, `quanta` reads the monotonic
///   clock itself, and all of the above still holds.
///
/// ```
/// use snowmint::{Clock, SystemClock};
/// let clock = SystemClock::new();
/// let a = clock.now_ms();
/// let b = clock.now_ms();
/// assert!(b >= a && a > 1_288_834_974_657);
/// ```
#[derive(Debug)]
pub struct SystemClock {
    /// The monotonic instant all readings are measured from.
    origin: Instant,
    /// Unix nanoseconds at `origin`; only ever raised (forward re-anchoring).
    offset_ns: AtomicU64,
    /// Nanoseconds after `origin` at which to compare with the wall clock next.
    next_check_ns: AtomicU64,
    /// With the `tsc` feature: the time-stamp counter, mapped onto the
    /// monotonic clock's time since `origin`.
    /// `None` when built by [`SystemClock::monotonic`].
    #[cfg(feature = "tsc")]
    tsc: Option<tsc::Counter>,
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock::new()
    }
}

impl SystemClock {
    /// Anchors a new clock at the current wall-clock time.
    ///
    /// With the `tsc` feature the first call in a process also calibrates
    /// the time-stamp counter (in `quanta`: usually about a millisecond, at
    /// most 200 ms).
    pub fn new() -> SystemClock {
        let clock = SystemClock::monotonic();
        #[cfg(feature = "tsc")]
        let clock = SystemClock {
            tsc: Some(tsc::Counter::new(clock.origin)),
            ..clock
        };
        clock
    }

    /// A clock whose monotonic part is always `Instant`, even with the `tsc`
    /// feature (to compare the two, or where the time-stamp counter is not
    /// trusted). Without the feature, the same as [`SystemClock::new`].
    pub fn monotonic() -> SystemClock {
        let origin = Instant::now();
        // Take the tightest of a few samples, so that a thread preempted
        // between the two reads does not anchor the clock ahead.
        let (mut offset, mut width) = sample_offset(origin);
        for _ in 0..4 {
            if width <= TIGHT_SAMPLE_NS {
                break;
            }
            let (o, w) = sample_offset(origin);
            if w < width {
                (offset, width) = (o, w);
            }
        }
        SystemClock {
            origin,
            offset_ns: AtomicU64::new(offset),
            next_check_ns: AtomicU64::new(duration_ns(RECHECK_EVERY)),
            #[cfg(feature = "tsc")]
            tsc: None,
        }
    }

    /// The current time in Unix nanoseconds.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        let elapsed = self.elapsed_ns();
        self.offset_ns.load(Ordering::Relaxed) + elapsed
    }

    /// Monotonic nanoseconds since `origin`, re-anchoring on the wall clock
    /// when it is time to.
    #[inline]
    fn instant_elapsed_ns(&self) -> u64 {
        let elapsed = duration_ns(self.origin.elapsed());
        if elapsed >= self.next_check_ns.load(Ordering::Relaxed) {
            self.reanchor(elapsed);
        }
        elapsed
    }

    #[cfg(not(feature = "tsc"))]
    #[inline]
    fn elapsed_ns(&self) -> u64 {
        self.instant_elapsed_ns()
    }

    /// Monotonic nanoseconds since `origin` from the time-stamp counter
    /// (unless built by `monotonic`); the counter's recalibration (about once
    /// a second) also re-anchors on the wall clock when it is time to.
    #[cfg(feature = "tsc")]
    #[inline]
    fn elapsed_ns(&self) -> u64 {
        match &self.tsc {
            Some(tsc) => tsc.elapsed_ns(self.origin, |elapsed| {
                if elapsed >= self.next_check_ns.load(Ordering::Relaxed) {
                    self.reanchor(elapsed);
                }
            }),
            None => self.instant_elapsed_ns(),
        }
    }

    /// Makes the next reading compare with the wall clock (and, with `tsc`,
    /// recalibrate the counter).
    #[cfg(test)]
    fn expire_checks(&self) {
        self.next_check_ns.store(0, Ordering::Relaxed);
        #[cfg(feature = "tsc")]
        if let Some(tsc) = &self.tsc {
            tsc.expire();
        }
    }

    /// Jumps forward if the wall clock is ahead; never back.
    #[cold]
    fn reanchor(&self, elapsed: u64) {
        let (offset, width) = sample_offset(self.origin);
        if width > TIGHT_SAMPLE_NS {
            // Preempted while sampling: the sample could move the clock
            // ahead of the wall clock. Try again shortly.
            self.next_check_ns
                .store(elapsed + RETRY_SAMPLE_NS, Ordering::Relaxed);
            return;
        }
        self.next_check_ns
            .store(elapsed + duration_ns(RECHECK_EVERY), Ordering::Relaxed);
        self.offset_ns.fetch_max(offset, Ordering::Relaxed);
    }
}

impl Clock for SystemClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        self.now_ns() / NANOS_PER_MS
    }

    fn sleep_until_ms(&self, target_ms: u64, max: Duration) -> Duration {
        let start = Instant::now();
        let target_ns = target_ms.saturating_mul(NANOS_PER_MS);
        loop {
            let now = self.now_ns();
            let waited = start.elapsed();
            if now >= target_ns || waited >= max {
                return waited;
            }
            let left = Duration::from_nanos(target_ns - now).min(max - waited);
            if left <= SPIN_BELOW {
                std::hint::spin_loop();
            } else {
                std::thread::sleep(left);
            }
        }
    }
}

/// A wall-clock sample wider than this (a preemption between its reads) is
/// not trusted to move the clock.
const TIGHT_SAMPLE_NS: u64 = 50_000;
/// When to sample again after an untrusted sample.
const RETRY_SAMPLE_NS: u64 = 10_000_000;

/// The wall clock's Unix nanoseconds at `origin`, from one wall-clock read
/// between two monotonic reads, and the width of that bracket.
///
/// The offset is computed against the later monotonic read, so it errs low
/// (by at most the width): a clock anchored on it is never ahead of the wall
/// clock because of how it was sampled.
fn sample_offset(origin: Instant) -> (u64, u64) {
    let before = duration_ns(origin.elapsed());
    let wall = wall_ns();
    let after = duration_ns(origin.elapsed());
    (wall.saturating_sub(after), after - before)
}

/// Nanoseconds in a duration, saturating (584 years fit).
fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The wall clock in Unix milliseconds, read once: "now" for the
/// explorer's inputs (a blank timestamp) and anything else that needs the
/// date rather than a [`Clock`]. 0 if the clock is set before 1970, which
/// [`compose`](crate::compose) then refuses as before the epoch.
///
/// ```
/// let now = snowmint::unix_now_ms();
/// assert!(now > snowmint::TWITTER_EPOCH_MS);
/// ```
pub fn unix_now_ms() -> u64 {
    wall_ns() / 1_000_000
}

/// The wall clock in Unix nanoseconds; 0 if it reads before 1970.
fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(duration_ns)
        .unwrap_or(0)
}

#[cfg(feature = "tsc")]
mod tsc;

/// A clock for tests: it reads what it was set to, and time passes only
/// when a test moves it or when someone waits on it.
///
/// Clones share one time. Waiting is virtual:
/// [`sleep_until_ms`](Clock::sleep_until_ms) returns at once and advances the clock to the
/// target (or by the wait's `max`, whichever is less), exactly as if the
/// caller had slept; [`slept`](ManualClock::slept) adds up those waits, so a
/// test can check how long the generator would have blocked.
///
/// ```
/// use std::time::Duration;
/// use snowmint::{Clock, ManualClock};
///
/// let clock = ManualClock::new(1_700_000_000_000);
/// let shared = clock.clone();
/// shared.advance(5);
/// assert_eq!(clock.now_ms(), 1_700_000_000_005);
/// clock.set(1_700_000_000_000); // the clock can be set back
/// assert_eq!(shared.now_ms(), 1_700_000_000_000);
///
/// // Waiting for a later millisecond moves the clock there, within `max`.
/// assert_eq!(clock.sleep_until_ms(1_700_000_000_003, Duration::from_secs(1)), Duration::from_millis(3));
/// assert_eq!(clock.sleep_until_ms(1_700_000_009_000, Duration::from_millis(10)), Duration::from_millis(10));
/// assert_eq!(clock.now_ms(), 1_700_000_000_013);
/// assert_eq!(clock.slept(), Duration::from_millis(13));
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock {
    inner: Arc<ManualInner>,
}

#[derive(Debug)]
struct ManualInner {
    now_ms: AtomicU64,
    slept_ms: AtomicU64,
}

impl ManualClock {
    /// A clock that reads `now_ms` (Unix milliseconds).
    pub fn new(now_ms: u64) -> ManualClock {
        ManualClock {
            inner: Arc::new(ManualInner {
                now_ms: AtomicU64::new(now_ms),
                slept_ms: AtomicU64::new(0),
            }),
        }
    }

    /// Sets the time, forward or back.
    pub fn set(&self, now_ms: u64) {
        self.inner.now_ms.store(now_ms, Ordering::SeqCst);
    }

    /// Moves the time forward by `ms`.
    pub fn advance(&self, ms: u64) {
        self.inner.now_ms.fetch_add(ms, Ordering::SeqCst);
    }

    /// Moves the time back by `ms`.
    pub fn rewind(&self, ms: u64) {
        self.inner.now_ms.fetch_sub(ms, Ordering::SeqCst);
    }

    /// The total time all callers have waited on this clock.
    pub fn slept(&self) -> Duration {
        Duration::from_millis(self.inner.slept_ms.load(Ordering::SeqCst))
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.inner.now_ms.load(Ordering::SeqCst)
    }

    fn sleep_until_ms(&self, target_ms: u64, max: Duration) -> Duration {
        let max_ms =
            u64::try_from(max.as_nanos().div_ceil(u128::from(NANOS_PER_MS))).unwrap_or(u64::MAX);
        let now = self.now_ms();
        let step = target_ms.saturating_sub(now).min(max_ms);
        if step == 0 {
            return Duration::ZERO;
        }
        // Concurrent sleepers share the time that passes: the clock moves to
        // the furthest point any of them waited for, not the sum.
        self.inner
            .now_ms
            .fetch_max(now.saturating_add(step), Ordering::SeqCst);
        self.inner.slept_ms.fetch_add(step, Ordering::SeqCst);
        Duration::from_millis(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_clock_is_close_to_the_wall_clock_and_monotonic() {
        let clock = SystemClock::new();
        let wall = wall_ns() / NANOS_PER_MS;
        let ours = clock.now_ms();
        assert!(ours.abs_diff(wall) < 1000, "ours {ours}, wall {wall}");
        let mut last = ours;
        for _ in 0..10_000 {
            let t = clock.now_ms();
            assert!(t >= last);
            last = t;
        }
    }

    #[test]
    fn system_clock_reanchors_forward_only() {
        let clock = SystemClock::new();
        let before = clock.now_ns();
        // Pretend the clock was anchored an hour early: the next check must
        // jump it forward to the wall clock.
        clock
            .offset_ns
            .fetch_sub(3_600 * 1_000 * NANOS_PER_MS, Ordering::Relaxed);
        // (A sample taken across a preemption is skipped, so allow retries.)
        let mut after = 0;
        for _ in 0..100 {
            clock.expire_checks();
            after = clock.now_ns();
            if after >= before {
                break;
            }
        }
        assert!(after >= before, "jumped forward to the wall clock");
        // Pretend it was anchored an hour late (the wall clock was stepped
        // back): the check must not move it back.
        clock
            .offset_ns
            .fetch_add(3_600 * 1_000 * NANOS_PER_MS, Ordering::Relaxed);
        let ahead = clock.now_ns();
        clock.expire_checks();
        assert!(clock.now_ns() >= ahead);
    }

    #[test]
    fn system_clock_sleeps_to_the_target_within_max() {
        let clock = SystemClock::new();
        let target = clock.now_ms() + 3;
        clock.sleep_until_ms(target, Duration::from_secs(1));
        assert!(clock.now_ms() >= target);
        // A far target returns once `max` has passed, without reaching it.
        let far = clock.now_ms() + 60_000;
        let waited = clock.sleep_until_ms(far, Duration::from_millis(2));
        assert!(waited >= Duration::from_millis(2));
        assert!(clock.now_ms() < far);
    }

    #[test]
    fn manual_clock_sleepers_share_time() {
        let clock = ManualClock::new(100);
        assert_eq!(
            clock.sleep_until_ms(50, Duration::from_secs(1)),
            Duration::ZERO
        );
        assert_eq!(clock.sleep_until_ms(101, Duration::ZERO), Duration::ZERO);
        assert_eq!(
            clock.sleep_until_ms(101, Duration::from_micros(1)),
            Duration::from_millis(1)
        );
        clock.rewind(1);
        assert_eq!(clock.now_ms(), 100);
    }
}
