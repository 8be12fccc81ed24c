//! The `tsc` feature: [`SystemClock`](super::SystemClock)'s monotonic part
//! read from the CPU's time-stamp counter (through `quanta`), mapped onto the
//! monotonic clock (`Instant`) and recalibrated against it about once a
//! second.
//!
//! A reading is `base_ns + (raw - base_raw) * mult / 2^32`: nanoseconds since
//! the clock's origin on the `Instant` timeline. The parameters change
//! together at each recalibration, so they live in two slots: the writer
//! fills the slot readers are not using, then publishes it; a reader checks
//! that the generation it started from is still current after reading a slot
//! (a seqlock in which the writer never makes readers wait).
//!
//! What a recalibration does, from a tight sample of (`Instant`, counter):
//!
//! - Measures the counter's rate over the last interval (nanoseconds of
//!   `Instant` per tick), and uses it for the next one.
//! - Reading behind `Instant`: jumps forward to it (never stale by more than
//!   one interval's drift).
//! - Reading ahead by at most [`MAX_AHEAD_NS`]: stays continuous and runs
//!   slower over the next interval by exactly the lead (a slew; never back).
//! - Reading ahead by more: steps back to `Instant` (only a counter that
//!   jumped can get there; the generator absorbs a step back).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
use std::time::Instant;

use super::{RECHECK_EVERY, duration_ns};

/// The furthest a reading may be found ahead of `Instant` and be slewed
/// rather than stepped back.
pub(super) const MAX_AHEAD_NS: u64 = 200_000;

/// The first recalibration comes sooner: `quanta`'s start-up calibration is
/// short, so its rate is the least precise one.
const FIRST_CHECK_NS: u64 = 100_000_000;

/// A (counter, `Instant`) sample wider than this is not trusted to calibrate.
const TIGHT_NS: u64 = 5_000;

/// When to try again after failing to take a tight sample.
const RETRY_NS: u64 = 10_000_000;

/// One set of mapping parameters.
#[derive(Debug, Default)]
struct Slot {
    base_raw: AtomicU64,
    base_ns: AtomicU64,
    /// Nanoseconds per tick, times 2^32.
    mult: AtomicU64,
}

#[derive(Debug)]
pub(super) struct Counter {
    clock: quanta::Clock,
    /// Generation of the parameters; slot `generation % 2` is current.
    generation: AtomicU64,
    slots: [Slot; 2],
    /// The counter value at which to recalibrate.
    recheck_raw: AtomicU64,
    /// Taken (without waiting) by the one thread that recalibrates.
    updating: AtomicBool,
    /// The `Instant` time and counter value of the last calibration sample,
    /// to measure the rate over the interval (only the updater uses them).
    sample_ns: AtomicU64,
    sample_raw: AtomicU64,
}

/// A consistent copy of the current slot.
#[derive(Debug, Clone, Copy)]
struct Params {
    generation: u64,
    base_raw: u64,
    base_ns: u64,
    mult: u64,
}

impl Params {
    #[inline]
    fn at(&self, raw: u64) -> u64 {
        // A counter a little behind `base_raw` (another core) reads as
        // `base_ns`, so the reading does not go back.
        let ticks = raw.saturating_sub(self.base_raw);
        let ns = (u128::from(ticks) * u128::from(self.mult)) >> 32;
        self.base_ns
            .saturating_add(u64::try_from(ns).unwrap_or(u64::MAX))
    }
}

impl Counter {
    /// Calibrates (once per process, in `quanta`: up to 200 ms, usually
    /// about 1 ms) and anchors the counter at `origin`.
    pub(super) fn new(origin: Instant) -> Counter {
        let clock = quanta::Clock::new();
        // `quanta`'s rate, as nanoseconds per 2^32 ticks.
        let mult = clock.delta_as_nanos(0, 1 << 32).max(1);
        let (ns, raw) = sample(&clock, origin).unwrap_or_else(|| {
            let raw = clock.raw();
            (duration_ns(origin.elapsed()), raw)
        });
        let first = Slot::default();
        first.base_raw.store(raw, Ordering::Relaxed);
        first.base_ns.store(ns, Ordering::Relaxed);
        first.mult.store(mult, Ordering::Relaxed);
        let counter = Counter {
            clock,
            generation: AtomicU64::new(0),
            slots: [first, Slot::default()],
            recheck_raw: AtomicU64::new(0),
            updating: AtomicBool::new(false),
            sample_ns: AtomicU64::new(ns),
            sample_raw: AtomicU64::new(raw),
        };
        counter.recheck_raw.store(
            raw.saturating_add(ticks_for(FIRST_CHECK_NS, mult)),
            Ordering::Relaxed,
        );
        counter
    }

    /// Nanoseconds since `origin`. `on_check` runs (with the `Instant`
    /// elapsed time) whenever the counter is recalibrated.
    #[inline]
    pub(super) fn elapsed_ns(&self, origin: Instant, on_check: impl FnOnce(u64)) -> u64 {
        let raw = self.clock.raw();
        if raw >= self.recheck_raw.load(Ordering::Relaxed) {
            self.recalibrate(origin, on_check);
        }
        self.params().at(raw)
    }

    /// A consistent copy of the current parameters.
    #[inline]
    fn params(&self) -> Params {
        loop {
            let generation = self.generation.load(Ordering::Acquire);
            let slot = &self.slots[(generation % 2) as usize];
            let p = Params {
                generation,
                base_raw: slot.base_raw.load(Ordering::Relaxed),
                base_ns: slot.base_ns.load(Ordering::Relaxed),
                mult: slot.mult.load(Ordering::Relaxed),
            };
            // If a slot store was seen, the writer's fence before it
            // synchronises with this one, so the generation it moved on from
            // is seen below and the copy is retried.
            fence(Ordering::Acquire);
            if self.generation.load(Ordering::Relaxed) == generation {
                return p;
            }
        }
    }

    #[cold]
    fn recalibrate(&self, origin: Instant, on_check: impl FnOnce(u64)) {
        // One updater at a time; the others read on with the current
        // parameters, which stay good for far longer than an update takes.
        if self.updating.swap(true, Ordering::Acquire) {
            return;
        }
        let p = self.params();
        let Some((now_ns, raw)) = sample(&self.clock, origin) else {
            self.recheck_raw.store(
                self.clock.raw().saturating_add(ticks_for(RETRY_NS, p.mult)),
                Ordering::Relaxed,
            );
            self.updating.store(false, Ordering::Release);
            return;
        };
        on_check(now_ns);
        let interval = duration_ns(RECHECK_EVERY);
        let (last_ns, last_raw) = (
            self.sample_ns.load(Ordering::Relaxed),
            self.sample_raw.load(Ordering::Relaxed),
        );
        // The rate over the last interval, if it was long enough to measure.
        let mult = if raw > last_raw && now_ns >= last_ns + RETRY_NS {
            let measured = (u128::from(now_ns - last_ns) << 32) / u128::from(raw - last_raw);
            u64::try_from(measured).unwrap_or(p.mult).max(1)
        } else {
            p.mult
        };
        self.sample_ns.store(now_ns, Ordering::Relaxed);
        self.sample_raw.store(raw, Ordering::Relaxed);
        let (base_ns, mult) = next_mapping(p.at(raw), now_ns, mult, interval);
        let next = p.generation + 1;
        let slot = &self.slots[(next % 2) as usize];
        // Readers that see any of the stores below see `p.generation` (or
        // later) superseded; see `params`.
        fence(Ordering::Release);
        slot.base_raw.store(raw, Ordering::Relaxed);
        slot.base_ns.store(base_ns, Ordering::Relaxed);
        slot.mult.store(mult, Ordering::Relaxed);
        self.generation.store(next, Ordering::Release);
        self.recheck_raw.store(
            raw.saturating_add(ticks_for(interval, mult)),
            Ordering::Relaxed,
        );
        self.updating.store(false, Ordering::Release);
    }

    /// Makes the next reading recalibrate.
    #[cfg(test)]
    pub(super) fn expire(&self) {
        self.recheck_raw.store(0, Ordering::Relaxed);
    }

    /// Moves the current reading by `delta_ns` (a counter that drifted),
    /// for tests.
    #[cfg(test)]
    pub(super) fn skew(&self, ahead: bool, delta_ns: u64) {
        let g = self.generation.load(Ordering::Relaxed);
        let base = &self.slots[(g % 2) as usize].base_ns;
        if ahead {
            base.fetch_add(delta_ns, Ordering::Relaxed);
        } else {
            base.fetch_sub(delta_ns, Ordering::Relaxed);
        }
    }

    /// The current rate, nanoseconds per 2^32 ticks, for tests.
    #[cfg(test)]
    pub(super) fn mult(&self) -> u64 {
        self.params().mult
    }
}

/// The new `(base_ns, mult)` at a sample where the counter reads
/// `reading` and `Instant` reads `now_ns`, given the measured rate `mult`
/// and the length of the next interval.
pub(super) fn next_mapping(reading: u64, now_ns: u64, mult: u64, interval: u64) -> (u64, u64) {
    if reading <= now_ns {
        // Behind (or on time): jump forward.
        (now_ns, mult)
    } else if reading - now_ns <= MAX_AHEAD_NS {
        // A little ahead: stay continuous, and run slower by the lead over
        // the next interval.
        let lead = reading - now_ns;
        let slowed = u128::from(mult) * u128::from(interval - lead) / u128::from(interval);
        (reading, u64::try_from(slowed).unwrap_or(mult).max(1))
    } else {
        // Far ahead: the counter jumped; step back.
        (now_ns, mult)
    }
}

/// Counter ticks in `ns` nanoseconds at `mult`.
fn ticks_for(ns: u64, mult: u64) -> u64 {
    u64::try_from((u128::from(ns) << 32) / u128::from(mult.max(1))).unwrap_or(u64::MAX)
}

/// A counter reading bracketed by two `Instant` reads, as (nanoseconds since
/// `origin` at the middle of the bracket, counter value), or `None` if no
/// tight sample could be taken (the thread kept being preempted).
fn sample(clock: &quanta::Clock, origin: Instant) -> Option<(u64, u64)> {
    for _ in 0..8 {
        let before = duration_ns(origin.elapsed());
        let raw = clock.raw();
        let after = duration_ns(origin.elapsed());
        if after - before <= TIGHT_NS {
            return Some((before + (after - before) / 2, raw));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000_000;
    const RATE: u64 = 1 << 31; // 0.5 ns per tick

    #[test]
    fn a_slow_counter_jumps_forward() {
        assert_eq!(next_mapping(900, 1_000, RATE, SECOND), (1_000, RATE));
    }

    #[test]
    fn a_counter_a_little_ahead_slews_without_going_back() {
        let (base, mult) = next_mapping(1_000 + 100_000, 1_000, RATE, SECOND);
        assert_eq!(base, 101_000, "continuous");
        // 100 µs slower over the next second.
        assert_eq!(mult, (u128::from(RATE) * 9_999 / 10_000) as u64);
        // By the end of the next interval it is back on the monotonic clock.
        let ticks = ticks_for(SECOND, RATE);
        let p = Params {
            generation: 0,
            base_raw: 0,
            base_ns: base,
            mult,
        };
        assert!(p.at(ticks).abs_diff(1_000 + SECOND) <= 1, "{}", p.at(ticks));
    }

    #[test]
    fn a_counter_far_ahead_steps_back() {
        assert_eq!(
            next_mapping(1_000 + MAX_AHEAD_NS + 1, 1_000, RATE, SECOND),
            (1_000, RATE)
        );
    }

    #[test]
    fn readings_follow_instant_and_never_go_back() {
        let origin = Instant::now();
        let counter = Counter::new(origin);
        let mut last = 0;
        for i in 0..200_000 {
            if i % 50_000 == 0 {
                counter.expire();
            }
            let t = counter.elapsed_ns(origin, |_| {});
            assert!(t >= last, "went back: {last} -> {t}");
            last = t;
        }
        // Skewed far ahead (a jumping counter): the next recalibration puts
        // it back within the bound of `Instant`.
        counter.skew(true, 50 * MAX_AHEAD_NS);
        counter.expire();
        let before = duration_ns(origin.elapsed());
        let t = counter.elapsed_ns(origin, |_| {});
        let after = duration_ns(origin.elapsed());
        assert!(t <= after + MAX_AHEAD_NS, "{t} vs {after}");
        // Skewed behind (a slow counter): it jumps forward, never reading
        // before the `Instant` time of its sample.
        counter.skew(false, 10_000_000);
        counter.expire();
        let t = counter.elapsed_ns(origin, |_| {});
        assert!(t >= before, "{t} vs {before}");
    }

    #[test]
    fn a_lead_slows_the_rate() {
        let origin = Instant::now();
        let counter = Counter::new(origin);
        // Measure a clean rate first, over 20 ms.
        std::thread::sleep(std::time::Duration::from_millis(20));
        counter.expire();
        counter.elapsed_ns(origin, |_| {});
        std::thread::sleep(std::time::Duration::from_millis(20));
        counter.expire();
        let t0 = counter.elapsed_ns(origin, |_| {});
        let clean = counter.mult();
        counter.skew(true, MAX_AHEAD_NS / 2);
        counter.expire();
        let t1 = counter.elapsed_ns(origin, |_| {});
        assert!(t1 >= t0 + MAX_AHEAD_NS / 2, "continuous, not stepped back");
        // 100 µs of lead over a second is a rate 10^-4 slower; the clean
        // measurement's noise is far below that.
        assert!(counter.mult() < clean, "{} vs {clean}", counter.mult());
    }
}
