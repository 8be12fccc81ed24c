//! What a [`Generator`] counts, and the snapshot it reports.
//!
//! The counters order nothing: every access is `Relaxed`, and they sit off
//! the hot cache line so that counting does not slow the compare-and-swap.

use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(doc)]
use super::GenerateError;
use super::Generator;
use super::state::State;
use crate::layout::TWITTER_EPOCH_MS;

/// Metrics counters, off the hot cache line. All `Relaxed`: they count, they
/// order nothing.
#[derive(Default)]
#[cfg_attr(not(loom), repr(align(128)))]
pub(super) struct Counters {
    /// Positions claimed in milliseconds the state has moved past, including
    /// the 4096 of the start position. Counted once per millisecond, so the
    /// hot path does not pay an atomic add per ID.
    pub(super) closed: AtomicU64,
    /// Positions claimed but not returned (the mark could not be written).
    pub(super) burned: AtomicU64,
    /// The largest `ids_issued` reported, so the reported count never drops.
    pub(super) reported: AtomicU64,
    pub(super) exhaustion_waits: AtomicU64,
    pub(super) clock_regressions: AtomicU64,
    pub(super) largest_regression_ms: AtomicU64,
    pub(super) largest_borrow_ms: AtomicU64,
    pub(super) clock_behind_errors: AtomicU64,
    pub(super) reservation_writes: AtomicU64,
    pub(super) reservation_failures: AtomicU64,
}

/// A snapshot of a [`Generator`]'s counters; from [`Generator::metrics`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct GeneratorMetrics {
    /// IDs handed out (a batch counts each of its IDs).
    pub ids_issued: u64,
    /// Calls that found the current millisecond's 4096 IDs used up and
    /// waited for the next one.
    pub exhaustion_waits: u64,
    /// Times the clock was seen going behind the last issued millisecond
    /// (counted once per episode, not per call).
    pub clock_regressions: u64,
    /// The largest distance seen between the clock and the last issued
    /// millisecond while the clock was behind, in ms.
    pub largest_regression_ms: u64,
    /// How far the last issued millisecond is ahead of the clock now, in ms
    /// (0 when the clock is not behind).
    pub borrowed_ms: u64,
    /// The furthest ahead of the clock a millisecond was borrowed, in ms.
    pub largest_borrow_ms: u64,
    /// Calls that gave up with [`GenerateError::ClockBehind`].
    pub clock_behind_errors: u64,
    /// Marks written to the reservation store.
    pub reservation_writes: u64,
    /// Failed writes to the reservation store.
    pub reservation_failures: u64,
    /// The millisecond of the last issued ID (Unix ms).
    pub last_issued_ms: u64,
    /// The durable mark (Unix ms), if there is a store and a mark.
    pub reserved_until_ms: Option<u64>,
}

impl Generator {
    /// A snapshot of the counters, for a metrics endpoint.
    ///
    /// ```
    /// let generator = snowmint::Generator::new(0, 0)?;
    /// for _ in 0..10 {
    ///     generator.next_id()?;
    /// }
    /// assert_eq!(generator.metrics().ids_issued, 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn metrics(&self) -> GeneratorMetrics {
        let c = &self.counters;
        // Read `closed` before the state: a millisecond the state leaves in
        // between is then missing from both, so the sum can only be short
        // (briefly), never over; `reported` keeps the count from dropping.
        let closed = c.closed.load(Ordering::Relaxed);
        let state = self.hot.state.load(Ordering::Acquire);
        let burned = c.burned.load(Ordering::Relaxed);
        let issued = (closed + state.sequence() + 1).saturating_sub(State::PER_MS + burned);
        let issued = c.reported.fetch_max(issued, Ordering::Relaxed).max(issued);
        let last_ms = state.ms() + TWITTER_EPOCH_MS;
        GeneratorMetrics {
            ids_issued: issued,
            exhaustion_waits: c.exhaustion_waits.load(Ordering::Relaxed),
            clock_regressions: c.clock_regressions.load(Ordering::Relaxed),
            largest_regression_ms: c.largest_regression_ms.load(Ordering::Relaxed),
            borrowed_ms: last_ms.saturating_sub(self.clock.now_ms()),
            largest_borrow_ms: c.largest_borrow_ms.load(Ordering::Relaxed),
            clock_behind_errors: c.clock_behind_errors.load(Ordering::Relaxed),
            reservation_writes: c.reservation_writes.load(Ordering::Relaxed),
            reservation_failures: c.reservation_failures.load(Ordering::Relaxed),
            last_issued_ms: last_ms,
            reserved_until_ms: self.reserved_until_ms(),
        }
    }

    /// Counts a clock reading `behind_ms` behind the state: once per
    /// episode (until the clock is seen ahead again), and the largest gap.
    #[cold]
    pub(super) fn note_regression(&self, behind_ms: u64) {
        if !self.hot.behind.load(Ordering::Relaxed)
            && !self.hot.behind.swap(true, Ordering::Relaxed)
        {
            self.counters
                .clock_regressions
                .fetch_add(1, Ordering::Relaxed);
        }
        if behind_ms > self.counters.largest_regression_ms.load(Ordering::Relaxed) {
            self.counters
                .largest_regression_ms
                .fetch_max(behind_ms, Ordering::Relaxed);
        }
    }
}
