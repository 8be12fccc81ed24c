//! The production minter: a lock-free [`Generator`] that never issues the
//! same ID twice, across threads, clock steps and restarts.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

#[cfg(loom)]
use loom::sync::atomic::AtomicU64 as StateCell;
#[cfg(not(loom))]
use std::sync::atomic::AtomicU64 as StateCell;

use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Field};
use crate::flight::Flight;
use crate::id::SnowflakeId;
use crate::identity::Identity;
use crate::layout::{
    Layout, MAX_DELTA_MS, MAX_SEQUENCE, MAX_TIMESTAMP_MS, SEQUENCE_BITS, TIMESTAMP_SHIFT,
    TWITTER_EPOCH_MS,
};
use crate::reservation::{ReservationStore, StoreError, StoreErrorKind};

/// IDs per millisecond: 4096.
const PER_MS: u64 = MAX_SEQUENCE + 1;

/// Default of [`GeneratorBuilder::max_borrow_ms`].
pub const DEFAULT_MAX_BORROW_MS: u64 = 3_000;
/// Default of [`GeneratorBuilder::max_wait`].
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(1);
/// Default of [`GeneratorBuilder::reserve_window_ms`].
pub const DEFAULT_RESERVE_WINDOW_MS: u64 = 2_000;

/// Every wait is charged at least this much against the wait budget, so a
/// clock whose `sleep_until_ms` returns at once cannot make a call spin
/// forever.
const MIN_WAIT_CHARGE: Duration = Duration::from_micros(1);

/// Mints Snowflake IDs for one (datacenter, worker) identity, from any number
/// of threads, at up to the format's limit of 4096 IDs per millisecond.
///
/// Shared by `&self` (put it in an `Arc` or a `static`). The hot path is one
/// clock read and one compare-and-swap; it takes no lock. What it guarantees:
///
/// - **No duplicates**, across threads and clock steps: the last issued
///   (millisecond, sequence) only ever moves forward.
/// - **Strictly increasing**: every ID is greater than every ID returned
///   before it started.
/// - **Clock steps back are absorbed**: while the clock is behind the last
///   issued millisecond the generator keeps counting on a logical clock,
///   running at most [`max_borrow_ms`](GeneratorBuilder::max_borrow_ms)
///   ahead of the clock; past that it waits at most
///   [`max_wait`](GeneratorBuilder::max_wait), then returns
///   [`GenerateError::ClockBehind`].
/// - **Crash-safe restarts** with a [`ReservationStore`]: no ID is returned
///   before a mark covering its millisecond is durable, and a new generator
///   never issues at or below the mark it loads, whatever the clock says.
///   Without a store (as built by [`Generator::new`]) a restart with the
///   clock set back can reissue IDs, as with every other Snowflake generator.
/// - **Restarts on time**: the millisecond a generator is built in counts as
///   used, so a process that starts in the millisecond its predecessor (same
///   identity, no store) issued its last ID in does not repeat it. The first
///   ID waits for the next millisecond, at most 1 ms.
/// - **Bounded**: it never panics and never blocks for longer than
///   `max_wait` plus one store write (two in a rare race, see
///   [`next_id`](Generator::next_id)). Callers that share one write in
///   flight share its outcome: a slow, failing store answers all of them
///   after one write, not one after another.
/// - **Never blocking, on request**: [`try_next_ids`](Generator::try_next_ids)
///   returns [`GenerateError::WouldBlock`] instead of waiting for anything,
///   for callers on an async runtime's worker threads.
///
/// ```
/// use snowmint::Generator;
///
/// let generator = Generator::new(1, 2)?;
/// let a = generator.next_id()?;
/// let b = generator.next_id()?;
/// assert!(b > a);
/// assert_eq!((b.datacenter(), b.worker()), (1, 2));
///
/// let batch = generator.next_ids(100)?;
/// assert!(batch.first() > b && (1..=100).contains(&batch.len()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Generator {
    hot: Hot,
    /// The datacenter and worker bits, already shifted into place.
    node: u64,
    identity: Identity,
    clock: Box<dyn Clock>,
    max_borrow_ms: u64,
    max_wait: Duration,
    /// How far past an ID's millisecond a new mark is set.
    window_ms: u64,
    /// A mark is renewed (without blocking anyone) once an ID comes within
    /// this many ms of it, so that the blocking write is rare.
    renew_ahead_ms: u64,
    store: Option<Box<dyn ReservationStore>>,
    /// One write of the mark at a time, its outcome shared by all waiting
    /// for it; entered only on the slow path.
    flight: Flight,
    /// A caller of [`Generator::try_next_ids`] has been told a renewal is
    /// due (by [`Generator::renewal_due`]) and the renewal has not run yet.
    renewal_asked: AtomicBool,
    /// The newest mark write failed (its error is kept by `flight`).
    store_failing: AtomicBool,
    counters: Counters,
}

/// The words every call reads, on one cache line of their own.
///
/// # Invariants
///
/// `state` packs the last issued position: `delta_ms << 12 | sequence`,
/// where `delta_ms` is milliseconds since the Twitter epoch (41 bits, so the
/// word never overflows) and `sequence` is 0..=4095.
///
/// 1. `state` only increases, and only by a successful compare-and-swap
///    from the value the caller loaded. A caller that wins the swap from
///    `old` to `new` owns the IDs `old + 1 ..= new` of that millisecond (or
///    `new`'s millisecond from sequence 0 when the millisecond changed), and
///    no other caller can own them, because no other swap can start from
///    `old` again. This is the whole no-duplicate argument: uniqueness does
///    not depend on the clock at all.
/// 2. The IDs a caller returns are greater than `old`'s ID, which is at
///    least every ID returned before the caller loaded `state`, so one
///    thread's IDs strictly increase and the generator's order is a total
///    order consistent with real time.
/// 3. At start `state` is `(max(mark, build ms), 4095)`: the millisecond of
///    the loaded mark and the millisecond the generator was built in count
///    as used up, so nothing at or below either is issued.
/// 4. No ID whose millisecond is above `reserved_until` is returned until a
///    mark at least that high is durable (the check happens after the swap,
///    so a concurrent [`Generator::persist_last_issued`] that lowers the
///    mark either sees the swap or is seen by the check; both are `SeqCst`).
///    `reserved_until` is `u64::MAX` without a store.
#[cfg_attr(not(loom), repr(align(128)))]
struct Hot {
    state: StateCell,
    reserved_until: StateCell,
    /// Whether the clock was last seen behind `state` (to count regressions
    /// once each, not once per call).
    behind: AtomicBool,
}

/// Metrics counters, off the hot cache line. All `Relaxed`: they count, they
/// order nothing.
#[derive(Default)]
#[cfg_attr(not(loom), repr(align(128)))]
struct Counters {
    /// Positions claimed in milliseconds the state has moved past, including
    /// the 4096 of the start position. Counted once per millisecond, so the
    /// hot path does not pay an atomic add per ID.
    closed: AtomicU64,
    /// Positions claimed but not returned (the mark could not be written).
    burned: AtomicU64,
    /// The largest `ids_issued` reported, so the reported count never drops.
    reported: AtomicU64,
    exhaustion_waits: AtomicU64,
    clock_regressions: AtomicU64,
    largest_regression_ms: AtomicU64,
    largest_borrow_ms: AtomicU64,
    clock_behind_errors: AtomicU64,
    reservation_writes: AtomicU64,
    reservation_failures: AtomicU64,
}

/// The IDs one successful swap owns.
#[derive(Clone, Copy)]
struct Claim {
    delta_ms: u64,
    first_sequence: u64,
    count: u64,
}

impl Generator {
    /// A generator for (`datacenter`, `worker`) on the [`SystemClock`], with
    /// no reservation store and the default limits.
    ///
    /// ```
    /// let err = snowmint::Generator::new(32, 0).unwrap_err();
    /// assert_eq!(err.to_string(), "datacenter must be 0..=31, got 32");
    /// ```
    pub fn new(datacenter: u64, worker: u64) -> Result<Generator, Error> {
        let identity = Identity::new(datacenter, worker)?;
        Ok(Generator::builder_for(identity).assemble(identity, None))
    }

    /// A builder, to set the clock, the reservation store and the limits.
    ///
    /// ```
    /// use std::time::Duration;
    /// use snowmint::{Generator, ManualClock, MemoryStore};
    ///
    /// let clock = ManualClock::new(1_700_000_000_000);
    /// let store = MemoryStore::new();
    /// let generator = Generator::builder(1, 1)
    ///     .clock(clock.clone())
    ///     .store(store.clone())
    ///     .max_borrow_ms(3_000)
    ///     .max_wait(Duration::from_secs(1))
    ///     .reserve_window_ms(2_000)
    ///     .build()?;
    /// // The millisecond it was built in counts as used.
    /// let id = generator.next_id()?;
    /// assert_eq!(id.timestamp_ms(), 1_700_000_000_001);
    /// assert_eq!(store.mark(), Some(1_700_000_002_001));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder(datacenter: u64, worker: u64) -> GeneratorBuilder {
        GeneratorBuilder::new(Identity::new(datacenter, worker))
    }

    /// A builder for an identity already checked.
    ///
    /// ```
    /// use snowmint::{Generator, Identity};
    /// let generator = Generator::builder_for(Identity::from_ordinal(33)?).build()?;
    /// assert_eq!(generator.identity(), Identity::new(1, 1)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder_for(identity: Identity) -> GeneratorBuilder {
        GeneratorBuilder::new(Ok(identity))
    }

    /// The next ID.
    ///
    /// Waits (at most [`max_wait`](GeneratorBuilder::max_wait)) when the
    /// 4096 IDs of the current millisecond are used up or the clock is too
    /// far behind; see [`GenerateError`] for what can go wrong.
    ///
    /// A call waits at most `max_wait` for the clock, then for at most one
    /// reservation write: the one in flight if there is one (its outcome is
    /// this call's), else one it makes. Only when a write that was already
    /// in flight before this call claimed its ID ends below the ID's
    /// millisecond (the store took longer than a reservation window, or
    /// [`persist_last_issued`](Generator::persist_last_issued) lowered the
    /// mark meanwhile) does it wait for one more.
    #[inline]
    pub fn next_id(&self) -> Result<SnowflakeId, GenerateError> {
        let c = self.claim::<true>(1)?;
        Ok(self.id_of(c.delta_ms, c.first_sequence))
    }

    /// Up to `n` (1..=4096) consecutive IDs of one millisecond, reserved
    /// with one compare-and-swap.
    ///
    /// The range holds fewer than `n` IDs when the current millisecond has
    /// fewer left; callers that need exactly `n` call again for the rest.
    ///
    /// ```
    /// let generator = snowmint::Generator::new(0, 0)?;
    /// let mut ids = Vec::new();
    /// while ids.len() < 10_000 {
    ///     let want = (10_000 - ids.len()).min(4096);
    ///     ids.extend(generator.next_ids(want)?);
    /// }
    /// assert!(ids.windows(2).all(|w| w[0] < w[1]));
    /// assert_eq!(
    ///     generator.next_ids(0).unwrap_err().to_string(),
    ///     "count must be 1..=4096, got 0"
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_ids(&self, n: usize) -> Result<IdRange, GenerateError> {
        self.ids::<true>(n)
    }

    /// As [`next_ids`](Generator::next_ids), but never waits: where that
    /// would wait for the clock or for a reservation write, this returns
    /// [`GenerateError::WouldBlock`] at once and issues nothing (retry with
    /// `next_ids` on a thread that may block). Where no wait could help (the
    /// clock is further behind than `max_borrow_ms + max_wait`), it returns
    /// [`GenerateError::ClockBehind`] at once.
    ///
    /// For async servers: mint on the runtime's worker thread with this, and
    /// move to a blocking thread only when it says so. It never writes the
    /// store; when the mark should be renewed ahead of time,
    /// [`renewal_due`](Generator::renewal_due) says so.
    ///
    /// ```
    /// use snowmint::{GenerateError, Generator, ManualClock};
    /// let clock = ManualClock::new(1_700_000_000_000);
    /// let generator = Generator::builder(0, 0).clock(clock.clone()).build()?;
    /// clock.advance(1); // past the millisecond it was built in
    /// assert_eq!(generator.try_next_ids(4096)?.len(), 4096);
    /// // This millisecond is used up: the next ID needs a wait.
    /// assert_eq!(generator.try_next_ids(1), Err(GenerateError::WouldBlock));
    /// assert_eq!(generator.next_ids(1)?.len(), 1); // waits for the next ms
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_next_ids(&self, n: usize) -> Result<IdRange, GenerateError> {
        self.ids::<false>(n)
    }

    #[inline]
    fn ids<const BLOCK: bool>(&self, n: usize) -> Result<IdRange, GenerateError> {
        if n == 0 || n > PER_MS as usize {
            return Err(GenerateError::Count { requested: n });
        }
        let c = self.claim::<BLOCK>(n as u64)?;
        Ok(IdRange {
            first: self.id_of(c.delta_ms, c.first_sequence),
            len: c.count as u16,
        })
    }

    #[inline]
    fn id_of(&self, delta_ms: u64, sequence: u64) -> SnowflakeId {
        // `delta_ms <= MAX_DELTA_MS` was checked before the swap, so the sign
        // bit stays clear.
        SnowflakeId::from_raw((delta_ms << TIMESTAMP_SHIFT) | self.node | sequence)
    }

    /// Claims up to `want` (1..=4096) positions of one millisecond; without
    /// `BLOCK`, returns [`GenerateError::WouldBlock`] (before claiming
    /// anything) where it would wait.
    #[inline]
    fn claim<const BLOCK: bool>(&self, want: u64) -> Result<Claim, GenerateError> {
        // Load the state before reading the clock: a reading taken after a
        // state was loaded and still behind it is a real regression, not a
        // race with a thread that read the clock later (the clock is
        // expected to be monotonic across threads).
        let mut cur = self.hot.state.load(Ordering::Acquire);
        let mut now = self.clock.now_ms();
        // Not a state value (those are below 2^53): the first reading that
        // is behind the state is read again before it counts as a regression,
        // because a time-stamp counter read is not ordered after the load.
        let mut read_after = u64::MAX;
        let mut waited = Duration::ZERO;
        let mut counted_wait = false;
        loop {
            let last = cur >> SEQUENCE_BITS;
            let seq = cur & MAX_SEQUENCE;
            let Some(now_delta) = now.checked_sub(TWITTER_EPOCH_MS) else {
                return Err(timestamp_error(now));
            };
            let claim = if now_delta > last {
                // A new millisecond.
                if now_delta > MAX_DELTA_MS {
                    return Err(timestamp_error(now));
                }
                if self.hot.behind.load(Ordering::Relaxed) {
                    self.hot.behind.store(false, Ordering::Relaxed);
                }
                Claim {
                    delta_ms: now_delta,
                    first_sequence: 0,
                    count: want,
                }
            } else {
                if now_delta < last {
                    // Once a regression is being counted, a second reading
                    // would only confirm it: skip it on the hot path.
                    if read_after != cur && !self.hot.behind.load(Ordering::Relaxed) {
                        // The reading predates the state we now hold (or
                        // may): read again, after this branch on the loaded
                        // state, before believing the clock went back.
                        now = self.reread_clock();
                        read_after = cur;
                        continue;
                    }
                    self.note_regression(last - now_delta);
                }
                if seq < MAX_SEQUENCE {
                    // The same millisecond, or a logical one ahead of a
                    // clock that is behind.
                    Claim {
                        delta_ms: last,
                        first_sequence: seq + 1,
                        count: want.min(MAX_SEQUENCE - seq),
                    }
                } else if now_delta == last {
                    // The 4096 of this millisecond are used up: wait for the
                    // next one.
                    if !counted_wait {
                        counted_wait = true;
                        self.counters
                            .exhaustion_waits
                            .fetch_add(1, Ordering::Relaxed);
                    }
                    if !BLOCK {
                        return Err(GenerateError::WouldBlock);
                    }
                    if waited >= self.max_wait {
                        return Err(GenerateError::ClockStalled {
                            waited_ms: whole_ms(waited),
                        });
                    }
                    waited += self
                        .clock
                        .sleep_until_ms(now + 1, self.max_wait - waited)
                        .max(MIN_WAIT_CHARGE);
                    cur = self.hot.state.load(Ordering::Acquire);
                    now = self.clock.now_ms();
                    read_after = cur;
                    continue;
                } else {
                    // Used up, and the clock is behind: borrow the next
                    // millisecond, as long as that stays within the bound.
                    let next = last + 1;
                    if next > now_delta.saturating_add(self.max_borrow_ms) {
                        let hopeless = !BLOCK
                            && next - now_delta - self.max_borrow_ms > whole_ms(self.max_wait);
                        if hopeless || (BLOCK && waited >= self.max_wait) {
                            self.counters
                                .clock_behind_errors
                                .fetch_add(1, Ordering::Relaxed);
                            return Err(GenerateError::ClockBehind {
                                behind_ms: last - now_delta,
                                waited_ms: whole_ms(waited),
                            });
                        }
                        if !BLOCK {
                            return Err(GenerateError::WouldBlock);
                        }
                        let target = next - self.max_borrow_ms + TWITTER_EPOCH_MS;
                        waited += self
                            .clock
                            .sleep_until_ms(target, self.max_wait - waited)
                            .max(MIN_WAIT_CHARGE);
                        cur = self.hot.state.load(Ordering::Acquire);
                        now = self.clock.now_ms();
                        read_after = cur;
                        continue;
                    }
                    if next > MAX_DELTA_MS {
                        return Err(timestamp_error(next + TWITTER_EPOCH_MS));
                    }
                    self.counters
                        .largest_borrow_ms
                        .fetch_max(next - now_delta, Ordering::Relaxed);
                    Claim {
                        delta_ms: next,
                        first_sequence: 0,
                        count: want,
                    }
                }
            };
            if !BLOCK && claim.delta_ms > self.hot.reserved_until.load(Ordering::SeqCst) {
                // Issuing would need a mark write first.
                return Err(GenerateError::WouldBlock);
            }
            let new = (claim.delta_ms << SEQUENCE_BITS) | (claim.first_sequence + claim.count - 1);
            match self
                .hot
                .state
                .compare_exchange(cur, new, Ordering::SeqCst, Ordering::Acquire)
            {
                Ok(_) => {
                    if claim.delta_ms != last {
                        self.counters.closed.fetch_add(seq + 1, Ordering::Relaxed);
                    }
                    let reserved = self.hot.reserved_until.load(Ordering::SeqCst);
                    if claim.delta_ms + self.renew_ahead_ms > reserved {
                        if BLOCK {
                            self.reserve(claim, reserved)?;
                        } else if claim.delta_ms > reserved {
                            // The mark was lowered between the check above
                            // and the swap (a concurrent
                            // `persist_last_issued`): the claim is skipped.
                            self.burn(claim);
                            return Err(GenerateError::WouldBlock);
                        }
                        // A renewal ahead is left to `renewal_due`.
                    }
                    return Ok(claim);
                }
                Err(actual) => cur = actual,
            }
        }
    }

    /// The clock again, on the rare path where a reading is behind the
    /// state (kept out of line so the hot loop stays small).
    #[cold]
    #[inline(never)]
    fn reread_clock(&self) -> u64 {
        self.clock.now_ms()
    }

    #[cold]
    fn note_regression(&self, behind_ms: u64) {
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

    /// The slow path: makes sure a durable mark covers `claim`, renewing it
    /// early (without blocking) when the claim is merely close to it.
    #[cold]
    fn reserve(&self, claim: Claim, reserved: u64) -> Result<(), GenerateError> {
        if claim.delta_ms <= reserved {
            // Covered; renew ahead if nobody else is writing right now. A
            // failure here is retried (and reported) when a claim needs it.
            let _ = self.flight.try_lead(|| self.write_mark(claim.delta_ms));
            return Ok(());
        }
        let covered =
            |_last_ok: bool| claim.delta_ms <= self.hot.reserved_until.load(Ordering::SeqCst);
        self.flight
            .ensure(covered, || self.write_mark(claim.delta_ms))
            .map_err(|e| {
                self.burn(claim);
                GenerateError::Reservation(e)
            })
    }

    /// The claimed positions are skipped, never handed out again.
    #[cold]
    fn burn(&self, claim: Claim) {
        self.counters
            .burned
            .fetch_add(claim.count, Ordering::Relaxed);
    }

    /// Writes the mark `max(delta_ms, the state's millisecond) + window`, so
    /// that a write covers every claim made before it started (the
    /// single-flight argument in `flight.rs` rests on this). The caller leads
    /// the flight.
    fn write_mark(&self, delta_ms: u64) -> Result<(), StoreError> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        let claimed = self.hot.state.load(Ordering::SeqCst) >> SEQUENCE_BITS;
        let mark = delta_ms
            .max(claimed)
            .saturating_add(self.window_ms)
            .min(MAX_DELTA_MS);
        self.publish_mark(store.as_ref(), mark)
    }

    /// Makes `mark` (ms since the epoch) durable, then publishes it to the
    /// hot path; the caller leads the flight.
    fn publish_mark(&self, store: &dyn ReservationStore, mark: u64) -> Result<(), StoreError> {
        match store.store(mark + TWITTER_EPOCH_MS) {
            Ok(()) => {
                self.hot.reserved_until.store(mark, Ordering::SeqCst);
                self.store_failing.store(false, Ordering::Relaxed);
                self.counters
                    .reservation_writes
                    .fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                self.store_failing.store(true, Ordering::Relaxed);
                self.counters
                    .reservation_failures
                    .fetch_add(1, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    /// For callers of [`try_next_ids`](Generator::try_next_ids): `true` when
    /// the mark should be renewed ahead of the IDs being issued (or the
    /// newest write failed and should be retried), once per renewal. The caller then runs
    /// [`renew_reservation`](Generator::renew_reservation) on a thread that
    /// may block; until it has, later calls answer `false`. Without a store,
    /// always `false`.
    pub fn renewal_due(&self) -> bool {
        if self.store.is_none() {
            return false;
        }
        let last = self.hot.state.load(Ordering::Acquire) >> SEQUENCE_BITS;
        (last + self.renew_ahead_ms > self.hot.reserved_until.load(Ordering::SeqCst)
            || self.store_failing.load(Ordering::Relaxed))
            && !self.renewal_asked.load(Ordering::Relaxed)
            && !self.renewal_asked.swap(true, Ordering::AcqRel)
    }

    /// Writes a new mark a window ahead of the last issued millisecond (or
    /// of the clock, if later), unless a mark far enough ahead is durable
    /// and the last write succeeded. Shares a write in flight like
    /// [`next_id`](Generator::next_id) does. Blocks for a store write: call
    /// it where blocking is fine. Without a store it does nothing.
    ///
    /// After [`renewal_due`](Generator::renewal_due) said so, and to retry
    /// a failing store (the generator is not [ready](Generator::check_ready)
    /// until a write succeeds again).
    pub fn renew_reservation(&self) -> Result<(), StoreError> {
        if self.store.is_none() {
            return Ok(());
        }
        let now_delta = self
            .clock
            .now_ms()
            .saturating_sub(TWITTER_EPOCH_MS)
            .min(MAX_DELTA_MS);
        let covered = |last_ok: bool| {
            let last = self.hot.state.load(Ordering::Acquire) >> SEQUENCE_BITS;
            last_ok && last + self.renew_ahead_ms <= self.hot.reserved_until.load(Ordering::SeqCst)
        };
        let outcome = self.flight.ensure(covered, || self.write_mark(now_delta));
        self.renewal_asked.store(false, Ordering::Release);
        outcome
    }

    /// Whether a call made now would issue without failing: `Ok`, or the
    /// error it would most likely return. For a readiness probe.
    ///
    /// - the clock is so far behind the last issued ID that waiting
    ///   `max_wait` would not bring it within `max_borrow_ms`:
    ///   [`GenerateError::ClockBehind`] (with `waited_ms` 0);
    /// - the clock is outside the format's years: [`GenerateError::Timestamp`];
    /// - the newest reservation write failed: [`GenerateError::Reservation`]
    ///   (until a write succeeds; [`renew_reservation`](Generator::renew_reservation)
    ///   retries one).
    ///
    /// ```
    /// use snowmint::{GenerateError, Generator, ManualClock};
    /// let clock = ManualClock::new(1_700_000_000_000);
    /// let generator = Generator::builder(0, 0).clock(clock.clone()).build()?;
    /// assert_eq!(generator.check_ready(), Ok(()));
    /// clock.rewind(3_600_000); // the clock steps back an hour
    /// assert!(matches!(
    ///     generator.check_ready(),
    ///     Err(GenerateError::ClockBehind { behind_ms: 3_600_000, .. })
    /// ));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_ready(&self) -> Result<(), GenerateError> {
        let now = self.clock.now_ms();
        let now_delta = match now.checked_sub(TWITTER_EPOCH_MS) {
            Some(d) if d <= MAX_DELTA_MS => d,
            _ => return Err(timestamp_error(now)),
        };
        let last = self.hot.state.load(Ordering::Acquire) >> SEQUENCE_BITS;
        let reach = now_delta
            .saturating_add(self.max_borrow_ms)
            .saturating_add(whole_ms(self.max_wait));
        if last + 1 > reach {
            return Err(GenerateError::ClockBehind {
                behind_ms: last.saturating_sub(now_delta),
                waited_ms: 0,
            });
        }
        if !self.store_failing.load(Ordering::Relaxed) {
            return Ok(());
        }
        match self.flight.last_error() {
            Some(e) => Err(GenerateError::Reservation(e)),
            None => Ok(()),
        }
    }

    /// For a graceful shutdown: lowers the stored mark to the millisecond of
    /// the last issued ID, so that a restart can issue from the next
    /// millisecond on instead of from the end of the reservation window.
    ///
    /// Safe to call while other threads mint: IDs they take afterwards get a
    /// new mark first. Without a store it does nothing.
    pub fn persist_last_issued(&self) -> Result<(), StoreError> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        self.flight.lead(|| {
            // Make every claim from here on take the slow path (invariant
            // 4), then read what has been claimed so far.
            self.hot.reserved_until.store(0, Ordering::SeqCst);
            let last = self.hot.state.load(Ordering::SeqCst) >> SEQUENCE_BITS;
            // On failure the store may hold either mark (a rename can land
            // before its directory sync fails), so `reserved_until` stays 0:
            // the next claim writes a fresh mark covering everything issued
            // so far.
            self.publish_mark(store.as_ref(), last)
        })
    }

    /// The datacenter ID this generator mints for.
    pub fn datacenter(&self) -> u8 {
        self.identity.datacenter()
    }

    /// The worker ID this generator mints for.
    pub fn worker(&self) -> u8 {
        self.identity.worker()
    }

    /// The identity this generator issues as.
    pub fn identity(&self) -> Identity {
        self.identity
    }

    /// The millisecond (Unix ms) of the last issued ID; before the first ID,
    /// the mark the generator started from (or the epoch).
    pub fn last_issued_ms(&self) -> u64 {
        (self.hot.state.load(Ordering::Acquire) >> SEQUENCE_BITS) + TWITTER_EPOCH_MS
    }

    /// The durable "reserved until" mark (Unix ms), or `None` without a
    /// store (or before the first mark was written).
    pub fn reserved_until_ms(&self) -> Option<u64> {
        self.store.as_ref()?;
        match self.hot.reserved_until.load(Ordering::SeqCst) {
            0 => None,
            mark => Some(mark + TWITTER_EPOCH_MS),
        }
    }

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
        let issued = (closed + (state & MAX_SEQUENCE) + 1).saturating_sub(PER_MS + burned);
        let issued = c.reported.fetch_max(issued, Ordering::Relaxed).max(issued);
        let last_ms = (state >> SEQUENCE_BITS) + TWITTER_EPOCH_MS;
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
}

impl fmt::Debug for Generator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Generator")
            .field("identity", &self.identity)
            .field("last_issued_ms", &self.last_issued_ms())
            .field("reserved_until_ms", &self.reserved_until_ms())
            .field("max_borrow_ms", &self.max_borrow_ms)
            .field("max_wait", &self.max_wait)
            .field("reserve_window_ms", &self.window_ms)
            .finish_non_exhaustive()
    }
}

/// For a clock reading (or a borrowed millisecond) outside the format.
fn timestamp_error(ms: u64) -> GenerateError {
    GenerateError::Timestamp(Error::timestamp(
        i128::from(ms),
        TWITTER_EPOCH_MS,
        MAX_TIMESTAMP_MS,
    ))
}

fn whole_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Configures a [`Generator`]; from [`Generator::builder`].
#[must_use]
pub struct GeneratorBuilder {
    /// Checked at [`build`](GeneratorBuilder::build), so that the builder
    /// chain stays infallible.
    identity: Result<Identity, Error>,
    clock: Option<Box<dyn Clock>>,
    store: Option<Box<dyn ReservationStore>>,
    max_borrow_ms: u64,
    max_wait: Duration,
    window_ms: u64,
}

impl fmt::Debug for GeneratorBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeneratorBuilder")
            .field("identity", &self.identity)
            .field("store", &self.store.is_some())
            .field("max_borrow_ms", &self.max_borrow_ms)
            .field("max_wait", &self.max_wait)
            .field("reserve_window_ms", &self.window_ms)
            .finish_non_exhaustive()
    }
}

impl GeneratorBuilder {
    fn new(identity: Result<Identity, Error>) -> GeneratorBuilder {
        GeneratorBuilder {
            identity,
            clock: None,
            store: None,
            max_borrow_ms: DEFAULT_MAX_BORROW_MS,
            max_wait: DEFAULT_MAX_WAIT,
            window_ms: DEFAULT_RESERVE_WINDOW_MS,
        }
    }

    /// The clock to read; default a new [`SystemClock`].
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Some(Box::new(clock));
        self
    }

    /// Where to keep the "reserved until" mark; default none (no restart
    /// safety). [`build`](GeneratorBuilder::build) loads the mark.
    pub fn store(mut self, store: impl ReservationStore) -> Self {
        self.store = Some(Box::new(store));
        self
    }

    /// How far ahead of a clock that is behind the generator may issue,
    /// default 3000 ms. Keep it above the reservation window, so that a
    /// restart after a crash (whose mark is up to a window ahead of the
    /// clock) can issue at once.
    pub fn max_borrow_ms(mut self, ms: u64) -> Self {
        self.max_borrow_ms = ms;
        self
    }

    /// The longest one call waits for the clock before giving up with an
    /// error, default 1 s.
    pub fn max_wait(mut self, max: Duration) -> Self {
        self.max_wait = max;
        self
    }

    /// How far past an ID's millisecond a new mark is set, default 2000 ms:
    /// the store is written about once per half window while minting.
    pub fn reserve_window_ms(mut self, ms: u64) -> Self {
        self.window_ms = ms;
        self
    }

    /// Checks the identity, loads the mark from the store, and builds.
    ///
    /// A store that cannot be read or holds a damaged mark is an error:
    /// starting anyway could reissue IDs.
    pub fn build(self) -> Result<Generator, BuildError> {
        let identity = self.identity.clone().map_err(BuildError::Identity)?;
        let mark = match &self.store {
            Some(store) => store.load().map_err(BuildError::Store)?,
            None => None,
        };
        // Checked here, once, for every store: a mark outside the format
        // (say, seconds instead of milliseconds) is damage, not "no mark".
        if let Some(mark) = mark.filter(|&m| !Layout::TWITTER.contains(Field::Timestamp, m)) {
            return Err(BuildError::Store(StoreError::new(
                StoreErrorKind::Damaged,
                format!(
                    "the stored reservation mark {mark} is outside the encodable \
                     timestamps {TWITTER_EPOCH_MS}..={MAX_TIMESTAMP_MS}"
                ),
            )));
        }
        Ok(self.assemble(identity, mark))
    }

    fn assemble(self, identity: Identity, mark: Option<u64>) -> Generator {
        let clock = self.clock.unwrap_or_else(|| Box::new(SystemClock::new()));
        let mark_delta = mark.map_or(0, |m| m.saturating_sub(TWITTER_EPOCH_MS));
        let reserved = if self.store.is_some() {
            mark_delta
        } else {
            u64::MAX
        };
        // Invariant 3: the build millisecond counts as used, so a restart in
        // the millisecond of the previous run's last ID does not repeat it.
        let built_delta = clock
            .now_ms()
            .saturating_sub(TWITTER_EPOCH_MS)
            .min(MAX_DELTA_MS);
        let start = mark_delta.max(built_delta);
        Generator {
            hot: Hot {
                state: StateCell::new((start << SEQUENCE_BITS) | MAX_SEQUENCE),
                reserved_until: StateCell::new(reserved),
                behind: AtomicBool::new(false),
            },
            node: identity.node_bits(),
            identity,
            clock,
            max_borrow_ms: self.max_borrow_ms,
            max_wait: self.max_wait,
            window_ms: self.window_ms,
            renew_ahead_ms: self.window_ms / 2,
            store: self.store,
            flight: Flight::new(),
            renewal_asked: AtomicBool::new(false),
            store_failing: AtomicBool::new(false),
            counters: Counters::default(),
        }
    }
}

/// Why a [`Generator`] cannot be built.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// The datacenter or worker ID is out of range.
    Identity(Error),
    /// The reservation store cannot be read or holds a damaged mark.
    Store(StoreError),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Identity(e) => e.fmt(f),
            BuildError::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Identity(e) => Some(e),
            BuildError::Store(e) => Some(e),
        }
    }
}

/// Why a [`Generator`] did not return an ID. No ID was lost to another
/// caller: the call can be retried.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GenerateError {
    /// The clock is so far behind the IDs already issued that issuing more
    /// would run further ahead of it than allowed, and it did not catch up
    /// within the wait budget.
    ClockBehind {
        /// How far the clock is behind the last issued ID's millisecond.
        behind_ms: u64,
        /// How long this call waited before giving up.
        waited_ms: u64,
    },
    /// The 4096 IDs of the current millisecond are used up and the clock did
    /// not reach the next millisecond within the wait budget.
    ClockStalled {
        /// How long this call waited before giving up.
        waited_ms: u64,
    },
    /// The millisecond to issue in cannot be encoded: past
    /// 2080-07-10T17:30:30.208Z, or a clock before the epoch.
    Timestamp(Error),
    /// A new "reserved until" mark could not be stored.
    Reservation(StoreError),
    /// A batch of `requested` IDs was asked for; it must be 1..=4096.
    Count {
        /// The count asked for.
        requested: usize,
    },
    /// From [`Generator::try_next_ids`] only: issuing would have to wait
    /// (the millisecond's 4096 IDs are used up, the clock is behind within
    /// the wait bound, or a mark must be written first). Nothing was issued;
    /// [`Generator::next_ids`] would wait.
    WouldBlock,
}

impl fmt::Display for GenerateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GenerateError::ClockBehind {
                behind_ms,
                waited_ms,
            } => write!(
                f,
                "the clock is {behind_ms} ms behind the IDs already issued; \
                 waited {waited_ms} ms for it to catch up (issuing now could repeat an ID)"
            ),
            GenerateError::ClockStalled { waited_ms } => write!(
                f,
                "the 4096 IDs of this millisecond are used up and the clock did not \
                 advance within {waited_ms} ms"
            ),
            GenerateError::Timestamp(e) => write!(f, "cannot issue an ID: {e}"),
            GenerateError::Reservation(e) => {
                write!(f, "cannot reserve IDs ahead (no ID was issued): {e}")
            }
            GenerateError::Count { requested } => {
                write!(f, "count must be 1..={PER_MS}, got {requested}")
            }
            GenerateError::WouldBlock => f.write_str(
                "issuing now would have to wait (for the clock or for a reservation write); \
                 no ID was issued",
            ),
        }
    }
}

impl std::error::Error for GenerateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            GenerateError::Timestamp(e) => Some(e),
            GenerateError::Reservation(e) => Some(e),
            _ => None,
        }
    }
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

/// Consecutive IDs of one millisecond, from [`Generator::next_ids`]: a
/// first ID and a length (1..=4096), iterated in increasing order.
///
/// ```
/// let range = snowmint::Generator::new(0, 0)?.next_ids(3)?;
/// let ids: Vec<_> = range.into_iter().collect();
/// assert_eq!(ids.len(), range.len());
/// assert_eq!(ids[0], range.first());
/// assert_eq!(*ids.last().unwrap(), range.last());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IdRange {
    first: SnowflakeId,
    len: u16,
}

impl IdRange {
    /// The first (smallest) ID.
    pub fn first(&self) -> SnowflakeId {
        self.first
    }

    /// The last (largest) ID.
    pub fn last(&self) -> SnowflakeId {
        SnowflakeId::from_raw(self.first.get() + u64::from(self.len) - 1)
    }

    /// How many IDs: 1..=4096.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether `id` is in the range.
    pub fn contains(&self, id: SnowflakeId) -> bool {
        self.first <= id && id <= self.last()
    }

    /// The IDs, in increasing order.
    pub fn iter(&self) -> IdRangeIter {
        IdRangeIter {
            next: self.first.get(),
            end: self.first.get() + u64::from(self.len),
        }
    }
}

impl IntoIterator for IdRange {
    type Item = SnowflakeId;
    type IntoIter = IdRangeIter;

    fn into_iter(self) -> IdRangeIter {
        self.iter()
    }
}

impl IntoIterator for &IdRange {
    type Item = SnowflakeId;
    type IntoIter = IdRangeIter;

    fn into_iter(self) -> IdRangeIter {
        self.iter()
    }
}

/// Iterator over an [`IdRange`].
#[derive(Debug, Clone)]
pub struct IdRangeIter {
    next: u64,
    end: u64,
}

impl Iterator for IdRangeIter {
    type Item = SnowflakeId;

    #[inline]
    fn next(&mut self) -> Option<SnowflakeId> {
        (self.next < self.end).then(|| {
            self.next += 1;
            SnowflakeId::from_raw(self.next - 1)
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = (self.end - self.next) as usize;
        (n, Some(n))
    }
}

impl DoubleEndedIterator for IdRangeIter {
    fn next_back(&mut self) -> Option<SnowflakeId> {
        (self.next < self.end).then(|| {
            self.end -= 1;
            SnowflakeId::from_raw(self.end)
        })
    }
}

impl ExactSizeIterator for IdRangeIter {}
impl std::iter::FusedIterator for IdRangeIter {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::{FileStore, ManualClock, MemoryStore};

    /// 2023-11-14T22:13:20Z.
    const T: u64 = 1_700_000_000_000;

    /// Builds on `clock` one millisecond before its current reading (the
    /// build millisecond counts as used), so the first ID can be in the
    /// millisecond the clock reads.
    fn built_before(clock: &ManualClock, builder: GeneratorBuilder) -> Generator {
        clock.rewind(1);
        let generator = builder.clock(clock.clone()).build().unwrap();
        clock.advance(1);
        generator
    }

    fn manual(now: u64) -> (Generator, ManualClock) {
        let clock = ManualClock::new(now);
        let generator = built_before(&clock, Generator::builder(1, 2));
        (generator, clock)
    }

    /// A (0, 0) generator on `clock` that keeps its mark in `store`.
    fn stored(clock: &ManualClock, store: &MemoryStore) -> Generator {
        built_before(clock, Generator::builder(0, 0).store(store.clone()))
    }

    fn parts(id: SnowflakeId) -> (u64, u16) {
        (id.timestamp_ms(), id.sequence())
    }

    #[test]
    fn ids_carry_the_identity_and_the_clock() {
        let (g, _clock) = manual(T);
        let id = g.next_id().unwrap();
        assert_eq!(id, crate::compose(T, 1, 2, 0).unwrap());
        assert_eq!((g.datacenter(), g.worker()), (1, 2));
        assert_eq!(g.last_issued_ms(), T);
        assert_eq!(g.reserved_until_ms(), None);
    }

    #[test]
    fn invalid_identities_are_refused() {
        assert_eq!(
            Generator::new(0, 32).unwrap_err().to_string(),
            "worker must be 0..=31, got 32"
        );
        let err = Generator::builder(40, 0).build().unwrap_err();
        assert!(matches!(err, BuildError::Identity(_)));
        assert_eq!(err.to_string(), "datacenter must be 0..=31, got 40");
    }

    #[test]
    fn a_full_millisecond_then_the_next() {
        let (g, clock) = manual(T);
        for seq in 0..4096 {
            assert_eq!(parts(g.next_id().unwrap()), (T, seq));
        }
        assert_eq!(clock.slept(), Duration::ZERO);
        // The 4097th waits for the next millisecond (the manual clock
        // advances instead of sleeping).
        assert_eq!(parts(g.next_id().unwrap()), (T + 1, 0));
        assert_eq!(clock.slept(), Duration::from_millis(1));
        assert_eq!(clock.now_ms(), T + 1);
        let m = g.metrics();
        assert_eq!(m.exhaustion_waits, 1);
        assert_eq!(m.ids_issued, 4097);
        assert_eq!(m.clock_regressions, 0);
    }

    #[test]
    fn a_clock_back_5_ms_is_absorbed() {
        let (g, clock) = manual(T);
        let mut ids = vec![g.next_id().unwrap(), g.next_id().unwrap()];
        clock.rewind(5);
        for _ in 0..5000 {
            ids.push(g.next_id().unwrap());
        }
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "strictly increasing");
        // The first 4094 after the step stay in T; then the generator
        // borrows T + 1, 6 ms ahead of the clock.
        assert_eq!(parts(ids[4095]), (T, 4095));
        assert_eq!(parts(ids[4096]), (T + 1, 0));
        assert_eq!(clock.slept(), Duration::ZERO, "no waiting within the bound");
        let m = g.metrics();
        assert_eq!(m.clock_regressions, 1, "one episode, not one per call");
        // Seen from the last issued millisecond: 5 ms of step, then 1 more
        // once T + 1 was borrowed.
        assert_eq!(m.largest_regression_ms, 6);
        assert_eq!(m.largest_borrow_ms, 6);
        assert_eq!(m.borrowed_ms, 6);
        // The clock catches up: back on the clock, and a later step back
        // is a second episode.
        clock.advance(10);
        assert_eq!(parts(g.next_id().unwrap()), (T + 5, 0));
        assert_eq!(g.metrics().borrowed_ms, 0);
        clock.rewind(2);
        g.next_id().unwrap();
        assert_eq!(g.metrics().clock_regressions, 2);
    }

    #[test]
    fn a_clock_back_an_hour_waits_the_budget_then_says_how_far() {
        let (g, clock) = manual(T);
        let before = g.next_ids(4096).unwrap();
        clock.set(T - 3_600_000);
        let err = g.next_id().unwrap_err();
        // It waited exactly max_wait (the manual clock advanced by it).
        assert_eq!(clock.slept(), DEFAULT_MAX_WAIT);
        assert_eq!(
            err,
            GenerateError::ClockBehind {
                behind_ms: 3_599_000,
                waited_ms: 1000
            }
        );
        assert_eq!(
            err.to_string(),
            "the clock is 3599000 ms behind the IDs already issued; waited 1000 ms \
             for it to catch up (issuing now could repeat an ID)"
        );
        assert_eq!(g.metrics().clock_behind_errors, 1);
        // Once the clock is back within the borrowing bound it issues again,
        // above everything issued before.
        clock.set(T - 2_000);
        let id = g.next_id().unwrap();
        assert!(id > before.last());
        assert_eq!(parts(id), (T + 1, 0));
    }

    #[test]
    fn borrowing_stays_within_the_bound() {
        let clock = ManualClock::new(T);
        let g = built_before(
            &clock,
            Generator::builder(0, 0)
                .max_borrow_ms(3)
                .max_wait(Duration::ZERO),
        );
        g.next_ids(4096).unwrap();
        clock.rewind(1);
        // T + 1 and T + 2 are within 3 ms of the clock (T - 1); T + 3 is not.
        assert_eq!(parts(g.next_ids(4096).unwrap().first()), (T + 1, 0));
        assert_eq!(parts(g.next_ids(4096).unwrap().first()), (T + 2, 0));
        assert_eq!(
            g.next_id().unwrap_err(),
            GenerateError::ClockBehind {
                behind_ms: 3,
                waited_ms: 0
            }
        );
        assert_eq!(g.metrics().largest_borrow_ms, 3);
        assert_eq!(g.last_issued_ms(), T + 2);

        // With a wait budget, it waits until the clock is back within the
        // bound (1 ms here), not until it has caught up.
        clock.set(T);
        let g = built_before(&clock, Generator::builder(0, 0).max_borrow_ms(3));
        g.next_ids(4096).unwrap();
        clock.rewind(1);
        g.next_ids(4096).unwrap();
        g.next_ids(4096).unwrap();
        let slept = clock.slept();
        assert_eq!(parts(g.next_id().unwrap()), (T + 3, 0));
        assert_eq!(clock.slept() - slept, Duration::from_millis(1));
        assert_eq!(clock.now_ms(), T);
    }

    #[test]
    fn batches_stop_at_the_end_of_the_millisecond() {
        let (g, _clock) = manual(T);
        let a = g.next_ids(4000).unwrap();
        assert_eq!(
            (a.len(), parts(a.first()), parts(a.last())),
            (4000, (T, 0), (T, 3999))
        );
        let b = g.next_ids(200).unwrap();
        assert_eq!((b.len(), parts(b.first())), (96, (T, 4000)));
        let c = g.next_ids(200).unwrap();
        assert_eq!((c.len(), parts(c.first())), (200, (T + 1, 0)));
        let all: Vec<_> = a.into_iter().chain(&b).chain(c).collect();
        assert!(all.windows(2).all(|w| w[0] < w[1]));
        assert!(b.contains(b.last()) && !b.contains(c.first()));
        assert_eq!(g.metrics().ids_issued, 4296);
        assert_eq!(
            g.next_ids(4097).unwrap_err().to_string(),
            "count must be 1..=4096, got 4097"
        );
    }

    #[test]
    fn the_year_2080_is_an_error_not_a_wrap() {
        let (g, clock) = manual(MAX_TIMESTAMP_MS);
        let last = g.next_ids(4096).unwrap().last();
        assert_eq!(
            last,
            SnowflakeId::MAX.min(crate::compose(MAX_TIMESTAMP_MS, 1, 2, 4095).unwrap())
        );
        // Used up: the next millisecond cannot be encoded.
        let err = g.next_id().unwrap_err();
        assert!(matches!(err, GenerateError::Timestamp(_)), "{err:?}");
        assert_eq!(
            err.to_string(),
            "cannot issue an ID: timestamp must be 1288834974657..=3487858230208 \
             (2010-11-04T01:42:54.657Z ..= 2080-07-10T17:30:30.208Z), \
             got 3487858230209: past the last millisecond the timestamp bits can hold"
        );
        // Borrowing past the end is refused too.
        clock.set(MAX_TIMESTAMP_MS - 1);
        assert!(matches!(g.next_id(), Err(GenerateError::Timestamp(_))));
        assert_eq!(g.last_issued_ms(), MAX_TIMESTAMP_MS);
        // A clock before the epoch cannot be encoded either.
        let (g, _) = manual(TWITTER_EPOCH_MS - 1);
        assert!(
            g.next_id()
                .unwrap_err()
                .to_string()
                .contains("before the epoch")
        );
    }

    #[test]
    fn a_restart_never_issues_at_or_below_the_mark() {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(T);
        let build = |clock: &ManualClock| {
            Generator::builder(3, 4)
                .clock(clock.clone())
                .store(FileStore::open(dir.path(), Identity::new(3, 4).unwrap()).unwrap())
                .build()
        };
        clock.rewind(1);
        let g = build(&clock).unwrap();
        clock.advance(1);
        let mut issued = Vec::new();
        for _ in 0..3 {
            issued.extend(g.next_ids(4096).unwrap());
            clock.advance(1);
        }
        assert_eq!(g.reserved_until_ms(), Some(T + 2000));
        assert_eq!(g.metrics().reservation_writes, 1);
        drop(g); // a crash: nothing persisted on the way out

        // The machine comes back with its clock an hour early.
        clock.set(T - 3_600_000);
        let g = build(&clock).unwrap();
        assert_eq!(g.last_issued_ms(), T + 2000);
        assert!(matches!(
            g.next_id(),
            Err(GenerateError::ClockBehind { .. })
        ));
        // ... and once the clock is within the borrowing bound of the mark,
        // it issues above the mark.
        clock.set(T);
        let id = g.next_id().unwrap();
        assert_eq!(parts(id), (T + 2001, 0));
        assert!(issued.iter().all(|&old| old < id));
        drop(g);
        assert_eq!(
            FileStore::open(dir.path(), Identity::new(3, 4).unwrap())
                .unwrap()
                .load()
                .unwrap(),
            Some(T + 4001)
        );
    }

    #[test]
    fn a_graceful_shutdown_lowers_the_mark() {
        let store = MemoryStore::new();
        let clock = ManualClock::new(T);
        let g = stored(&clock, &store);
        let last = g.next_id().unwrap();
        assert_eq!(store.mark(), Some(T + 2000));
        g.persist_last_issued().unwrap();
        assert_eq!(store.mark(), Some(T));
        assert_eq!(g.reserved_until_ms(), Some(T));
        // Minting on afterwards writes a new mark first.
        clock.advance(1);
        let next = g.next_id().unwrap();
        assert_eq!(store.mark(), Some(T + 2001));
        assert!(next > last);
        // A restart issues right after the lowered mark.
        g.persist_last_issued().unwrap();
        let g = stored(&clock, &store);
        assert_eq!(parts(g.next_id().unwrap()), (T + 2, 0));
    }

    #[test]
    fn a_damaged_state_file_stops_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path(), Identity::new(0, 0).unwrap()).unwrap();
        std::fs::write(store.path(), "reserved_until_ms=tomorrow\n").unwrap();
        let err = Generator::builder(0, 0)
            .store(store.clone())
            .build()
            .unwrap_err();
        assert!(matches!(err, BuildError::Store(ref e) if e.kind() == StoreErrorKind::Damaged));
        let msg = err.to_string();
        assert!(msg.contains(&store.path().display().to_string()), "{msg}");
        assert!(
            msg.contains(r#"found "reserved_until_ms=tomorrow""#),
            "{msg}"
        );

        let err = Generator::builder(0, 0)
            .store(MemoryStore::with_mark(MAX_TIMESTAMP_MS + 1))
            .build()
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("is outside the encodable timestamps")
        );
        // A mark in seconds is below the epoch: damage, not "no mark".
        let err = Generator::builder(0, 0)
            .store(MemoryStore::with_mark(1_700_000_000))
            .build()
            .unwrap_err();
        assert!(matches!(err, BuildError::Store(ref e) if e.kind() == StoreErrorKind::Damaged));
    }

    #[test]
    fn a_failed_reservation_issues_nothing_and_skips_the_claim() {
        let store = MemoryStore::new();
        let clock = ManualClock::new(T);
        let g = stored(&clock, &store);
        store.fail(true);
        let err = g.next_id().unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot reserve IDs ahead (no ID was issued): memory store: told to fail"
        );
        assert!(matches!(g.next_ids(10), Err(GenerateError::Reservation(_))));
        store.fail(false);
        // The failed calls' positions (T, 0) and (T, 1..=10) are skipped.
        assert_eq!(parts(g.next_id().unwrap()), (T, 11));
        let m = g.metrics();
        assert_eq!(
            (m.ids_issued, m.reservation_failures, m.reservation_writes),
            (1, 2, 1)
        );
    }

    #[test]
    fn the_mark_is_renewed_before_it_is_reached() {
        let store = MemoryStore::new();
        let clock = ManualClock::new(T);
        let g = Generator::builder(0, 0)
            .clock(clock.clone())
            .store(store.clone())
            .reserve_window_ms(100)
            .build()
            .unwrap();
        for _ in 0..1000 {
            g.next_id().unwrap();
            clock.advance(1);
        }
        // Renewed every 50 ms (half the window), never blocking on it.
        assert_eq!(store.writes(), 20);
        assert!(store.mark().unwrap() >= g.last_issued_ms() + 50);
    }

    #[test]
    fn threads_on_a_manual_clock_share_one_sequence() {
        let clock = ManualClock::new(T);
        let g = std::sync::Arc::new(built_before(&clock, Generator::builder(0, 0)));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let g = g.clone();
                std::thread::spawn(move || {
                    (0..10_000)
                        .map(|_| g.next_id().unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all = Vec::new();
        for h in handles {
            let ids = h.join().unwrap();
            assert!(ids.windows(2).all(|w| w[0] < w[1]));
            all.extend(ids);
        }
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 40_000);
        // 40,000 IDs need 10 milliseconds of 4096: the clock was advanced by
        // the waits, and exactly as far as needed.
        assert_eq!(clock.now_ms(), T + 9);
        assert_eq!(g.metrics().ids_issued, 40_000);
    }

    #[test]
    fn a_restart_in_the_same_millisecond_does_not_repeat_ids() {
        // No store: nothing survives the first generator but the clock.
        let clock = ManualClock::new(T);
        let first = built_before(&clock, Generator::builder(1, 2));
        let before = first.next_ids(10).unwrap();
        assert_eq!(parts(before.first()), (T, 0));
        drop(first);
        // The next process starts in the same millisecond.
        let second = Generator::builder(1, 2)
            .clock(clock.clone())
            .build()
            .unwrap();
        let after = second.next_id().unwrap();
        assert!(after > before.last());
        assert_eq!(parts(after), (T + 1, 0), "the build millisecond is skipped");
        assert_eq!(clock.slept(), Duration::from_millis(1));
    }

    /// A store whose writes take `delay` of real time and then fail or
    /// succeed; counts the writes it was asked for.
    #[derive(Clone)]
    struct SlowStore {
        delay: Duration,
        fail: bool,
        attempts: std::sync::Arc<AtomicU64>,
    }

    impl ReservationStore for SlowStore {
        fn load(&self) -> Result<Option<u64>, StoreError> {
            Ok(None)
        }

        fn store(&self, _until_ms: u64) -> Result<(), StoreError> {
            self.attempts.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(self.delay);
            if self.fail {
                Err(StoreError::new(StoreErrorKind::Io, "slow store: disk gone"))
            } else {
                Ok(())
            }
        }
    }

    /// 8 threads mint at once through a store whose write takes `delay`:
    /// how long each call took, and its outcome.
    fn eight_callers(store: &SlowStore) -> Vec<(Duration, Result<SnowflakeId, GenerateError>)> {
        let clock = ManualClock::new(T);
        let g = std::sync::Arc::new(built_before(
            &clock,
            Generator::builder(0, 0).store(store.clone()),
        ));
        let start = std::sync::Arc::new(std::sync::Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (g, start) = (g.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let began = std::time::Instant::now();
                    let outcome = g.next_id();
                    (began.elapsed(), outcome)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    }

    #[test]
    fn callers_share_one_failing_write_instead_of_queueing() {
        let delay = Duration::from_millis(300);
        let store = SlowStore {
            delay,
            fail: true,
            attempts: Default::default(),
        };
        let outcomes = eight_callers(&store);
        for (took, outcome) in &outcomes {
            // Queued one behind another, the n-th call took n writes.
            assert!(*took < delay * 2, "a call took {took:?}");
            let err = outcome.clone().unwrap_err();
            assert_eq!(
                err.to_string(),
                "cannot reserve IDs ahead (no ID was issued): slow store: disk gone"
            );
        }
        let attempts = store.attempts.load(Ordering::SeqCst);
        assert!(attempts < 8, "{attempts} writes for 8 callers");
    }

    #[test]
    fn callers_share_one_successful_write() {
        let store = SlowStore {
            delay: Duration::from_millis(100),
            fail: false,
            attempts: Default::default(),
        };
        let outcomes = eight_callers(&store);
        let mut ids: Vec<_> = outcomes.into_iter().map(|(_, o)| o.unwrap()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 8);
        let attempts = store.attempts.load(Ordering::SeqCst);
        assert!(attempts < 8, "{attempts} writes for 8 callers");
    }

    #[test]
    fn try_next_ids_never_waits() {
        let store = MemoryStore::new();
        let clock = ManualClock::new(T);
        let g = built_before(
            &clock,
            Generator::builder(0, 0)
                .store(store.clone())
                .reserve_window_ms(100),
        );
        // The first ID needs a mark: no write from a call that may not block.
        assert_eq!(g.try_next_ids(1), Err(GenerateError::WouldBlock));
        assert_eq!(store.writes(), 0);
        assert!(g.renewal_due(), "nothing reserved yet");
        assert!(!g.renewal_due(), "said once per renewal");
        g.renew_reservation().unwrap();
        assert_eq!(store.mark(), Some(T + 100));
        assert!(!g.renewal_due());
        // Now it issues without blocking, up to the end of the millisecond.
        assert_eq!(g.try_next_ids(4096).unwrap().len(), 4096);
        assert_eq!(g.try_next_ids(1), Err(GenerateError::WouldBlock));
        assert_eq!(clock.slept(), Duration::ZERO);
        // Close to the mark: still issues, and asks for a renewal once.
        clock.advance(60);
        assert_eq!(parts(g.try_next_ids(1).unwrap().first()), (T + 60, 0));
        assert_eq!(store.writes(), 1, "try_next_ids never writes");
        assert!(g.renewal_due());
        assert!(!g.renewal_due());
        g.renew_reservation().unwrap();
        assert_eq!(store.mark(), Some(T + 160));
        // A clock a little behind (within max_borrow + max_wait): a wait
        // could help once the millisecond is used up, so WouldBlock.
        g.try_next_ids(4096).unwrap();
        let g2 = built_before(&clock, Generator::builder(0, 0).max_borrow_ms(0));
        g2.try_next_ids(4096).unwrap();
        clock.rewind(5);
        assert_eq!(g2.try_next_ids(1), Err(GenerateError::WouldBlock));
        // An hour behind: no wait can help, so the answer is at once.
        clock.rewind(3_600_000);
        assert_eq!(
            g.try_next_ids(1),
            Err(GenerateError::ClockBehind {
                behind_ms: 3_600_005,
                waited_ms: 0
            })
        );
        assert_eq!(clock.slept(), Duration::ZERO);
        assert_eq!(g.metrics().clock_behind_errors, 1);
        assert!(g.try_next_ids(0).is_err());
    }

    #[test]
    fn readiness_follows_the_clock_and_the_store() {
        let store = MemoryStore::new();
        let clock = ManualClock::new(T);
        let g = stored(&clock, &store);
        assert_eq!(g.check_ready(), Ok(()));
        g.next_ids(4096).unwrap();
        // Behind by less than max_borrow + max_wait (3 s + 1 s): ready.
        clock.rewind(3_999);
        assert_eq!(g.check_ready(), Ok(()));
        clock.rewind(1);
        assert_eq!(
            g.check_ready(),
            Err(GenerateError::ClockBehind {
                behind_ms: 4_000,
                waited_ms: 0
            })
        );
        clock.set(T + 1);
        assert_eq!(g.check_ready(), Ok(()));
        // Writes failing: not ready until one succeeds again, which a
        // renewal (with no mint) can find out.
        store.fail(true);
        clock.advance(5_000);
        assert!(matches!(g.next_id(), Err(GenerateError::Reservation(_))));
        assert!(matches!(
            g.check_ready(),
            Err(GenerateError::Reservation(_))
        ));
        assert!(g.renew_reservation().is_err());
        assert!(matches!(
            g.check_ready(),
            Err(GenerateError::Reservation(_))
        ));
        store.fail(false);
        g.renew_reservation().unwrap();
        assert_eq!(g.check_ready(), Ok(()));
        assert!(store.mark().unwrap() >= clock.now_ms() + 2_000);
        g.next_id().unwrap();
        // Past 2080 nothing can be issued.
        clock.set(MAX_TIMESTAMP_MS + 1);
        assert!(matches!(g.check_ready(), Err(GenerateError::Timestamp(_))));
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        #[derive(Debug, Clone)]
        enum Op {
            Advance(u64),
            Rewind(u64),
            One,
            Batch(usize),
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                (0u64..5).prop_map(Op::Advance),
                (0u64..4000).prop_map(Op::Rewind),
                Just(Op::One),
                (1usize..=4096).prop_map(Op::Batch),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(200))]

            /// Whatever the clock does: IDs strictly increase, never run
            /// more than the borrowing bound ahead of the clock, and never
            /// fall at or below the mark the generator started from.
            #[test]
            fn ids_increase_and_respect_the_bounds(
                ops in proptest::collection::vec(op(), 1..60),
                mark_ahead in 0u64..3000,
            ) {
                let clock = ManualClock::new(T);
                let store = MemoryStore::with_mark(T + mark_ahead);
                let g = Generator::builder(0, 0)
                    .clock(clock.clone())
                    .store(store.clone())
                    .max_borrow_ms(50)
                    .max_wait(Duration::from_millis(20))
                    .build()
                    .unwrap();
                let mut last: Option<SnowflakeId> = None;
                let mut check = |ids: Vec<SnowflakeId>, clock_now: u64| {
                    for id in ids {
                        prop_assert!(last.is_none_or(|l| id > l));
                        prop_assert!(id.timestamp_ms() > T + mark_ahead);
                        // Only a new millisecond is bounded by the clock: a
                        // clock that went back is absorbed in the last one.
                        if last.is_none_or(|l| id.timestamp_ms() > l.timestamp_ms()) {
                            prop_assert!(id.timestamp_ms() <= clock_now + 50);
                        }
                        prop_assert!(store.mark().unwrap() >= id.timestamp_ms());
                        last = Some(id);
                    }
                    Ok(())
                };
                for op in ops {
                    match op {
                        Op::Advance(ms) => clock.advance(ms),
                        Op::Rewind(ms) => clock.rewind(ms),
                        Op::One => match g.next_id() {
                            Ok(id) => check(vec![id], clock.now_ms())?,
                            Err(e) => prop_assert!(matches!(e, GenerateError::ClockBehind { .. }), "{e}"),
                        },
                        Op::Batch(n) => match g.next_ids(n) {
                            Ok(r) => {
                                prop_assert!(r.len() <= n);
                                check(r.iter().collect(), clock.now_ms())?
                            }
                            Err(e) => prop_assert!(matches!(e, GenerateError::ClockBehind { .. }), "{e}"),
                        },
                    }
                }
            }
        }
    }
}
