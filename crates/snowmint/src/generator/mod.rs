//! The production minter: a lock-free [`Generator`] that never issues the
//! same ID twice, across threads, clock steps and restarts.
//!
//! # Layout
//!
//! Each file keeps the invariants numbered above [`Hot`]:
//!
//! - this file: the `Generator` type, its public API and the claim loop
//!   (the compare-and-swap of invariants 1 and 2, and the check after it of
//!   invariant 4);
//! - `state.rs`: [`State`], the packed (millisecond, sequence) word, the
//!   only code that shifts or masks it;
//! - `builder.rs`: [`GeneratorBuilder`] and the start state (invariant 3);
//! - `reserve.rs`: the reservation path (invariant 4): the mark write
//!   through the single flight, renewal, and lowering at shutdown;
//! - `metrics.rs`: the counters and [`GeneratorMetrics`];
//! - `error.rs`: [`BuildError`] and [`GenerateError`].

mod builder;
mod error;
mod metrics;
mod reserve;
mod state;
#[cfg(all(test, not(loom)))]
mod testing;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crate::clock::Clock;
use crate::error::Error;
use crate::flight::Flight;
use crate::id::SnowflakeId;
use crate::id_range::IdRange;
use crate::identity::Identity;
use crate::layout::{MAX_BATCH, MAX_DELTA_MS, TIMESTAMP_SHIFT, TWITTER_EPOCH_MS};
use crate::reservation::{ReservationStore, StoreError, StoreErrorKind};
pub use builder::{
    DEFAULT_MAX_BORROW_MS, DEFAULT_MAX_WAIT, DEFAULT_RESERVE_WINDOW_MS, DEFAULT_STORE_TIMEOUT,
    GeneratorBuilder,
};
use error::timestamp_error;
pub use error::{BuildError, GenerateError};
use metrics::Counters;
pub use metrics::GeneratorMetrics;
pub use state::PackedState;
use state::{AtomicMark, AtomicState, State};

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
    store: Option<Arc<dyn ReservationStore>>,
    /// One write of the mark at a time, its outcome shared by all waiting
    /// for it, bounded by the store timeout; entered only on the slow path.
    flight: Arc<Flight>,
    /// A caller of [`Generator::try_next_ids`] has been told a renewal is
    /// due (by [`Generator::renewal_due`]) and the renewal has not run yet.
    renewal_asked: AtomicBool,
    /// The newest mark write failed (its error is kept by `flight`).
    store_failing: AtomicBool,
    /// The clock (Unix ms) when a mark write last succeeded; 0 before the
    /// first. Readiness trusts the store only while this is recent.
    proven_ms: AtomicU64,
    /// How old (ms) the newest successful write may be while readiness
    /// still trusts the store; an idle generator's probe is due at half
    /// of it.
    max_proof_age_ms: u64,
    /// [`Generator::persist_last_issued`] ran: renewals and probes write
    /// nothing from now on, so the lowered mark stays lowered.
    retired: AtomicBool,
    counters: Counters,
}

/// The words every call reads, on one cache line of their own.
///
/// # Invariants
///
/// `state` is the last issued position, a [`State`]: (millisecond since
/// the Twitter epoch, sequence) packed into one word (`state.rs`).
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
///
/// 1 and 2 are kept by [`Generator::claim`], 3 by `builder.rs`, 4 by the
/// check in `claim` and by `reserve.rs`.
#[cfg_attr(not(loom), repr(align(128)))]
struct Hot {
    state: AtomicState,
    /// The durable mark, in ms since the epoch.
    reserved_until: AtomicMark,
    /// Whether the clock was last seen behind `state` (to count regressions
    /// once each, not once per call).
    behind: AtomicBool,
}

/// The IDs one successful swap owns.
#[derive(Clone, Copy)]
struct Claim {
    delta_ms: u64,
    first_sequence: u64,
    count: u64,
}

impl Claim {
    /// The state after the claim: its last position.
    #[inline]
    fn end(self) -> State {
        State::new(self.delta_ms, self.first_sequence + self.count - 1)
    }
}

impl Generator {
    /// A generator for (`datacenter`, `worker`) on the
    /// [`SystemClock`](crate::SystemClock), with no reservation store and the
    /// default limits.
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
        if n == 0 || n > MAX_BATCH {
            return Err(GenerateError::Count { requested: n });
        }
        let c = self.claim::<BLOCK>(n as u64)?;
        Ok(IdRange::new(
            self.id_of(c.delta_ms, c.first_sequence),
            c.count as u16,
        ))
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
        // The state the clock was last read after (none yet): the first
        // reading that is behind the state is read again before it counts as
        // a regression, because a time-stamp counter read is not ordered
        // after the load.
        let mut read_after = State::NONE;
        let mut waited = Duration::ZERO;
        let mut counted_wait = false;
        loop {
            let last = cur.ms();
            let seq = cur.sequence();
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
                let left = cur.left();
                if left > 0 {
                    // The same millisecond, or a logical one ahead of a
                    // clock that is behind.
                    Claim {
                        delta_ms: last,
                        first_sequence: seq + 1,
                        count: want.min(left),
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
            let new = claim.end();
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

    /// Whether a call made now would issue without failing: `Ok`, or the
    /// error it would most likely return. For a readiness probe.
    ///
    /// - the clock is so far behind the last issued ID that waiting
    ///   `max_wait` would not bring it within `max_borrow_ms`:
    ///   [`GenerateError::ClockBehind`] (with `waited_ms` 0);
    /// - the clock is outside the format's years: [`GenerateError::Timestamp`];
    /// - with a store, whether the next mint that needs a mark could write
    ///   one, [`GenerateError::Reservation`] unless: a write has succeeded
    ///   (none has yet on a fresh generator:
    ///   [`renew_reservation`](Generator::renew_reservation) makes one),
    ///   the newest write did not fail, no write is in flight past its
    ///   [`store_timeout`](GeneratorBuilder::store_timeout), and the newest
    ///   success is at most [`max_proof_age_ms`](GeneratorBuilder::max_proof_age_ms)
    ///   old by the clock (default one reservation window; an idle caller
    ///   probes when [`renewal_due`](Generator::renewal_due) says so, which
    ///   it does at half that age, so a store that stopped taking writes is
    ///   found within that age).
    ///
    /// ```
    /// use snowmint::{GenerateError, Generator, ManualClock, MemoryStore};
    /// let clock = ManualClock::new(1_700_000_000_000);
    /// let generator = Generator::builder(0, 0).clock(clock.clone()).build()?;
    /// assert_eq!(generator.check_ready(), Ok(()));
    /// clock.rewind(3_600_000); // the clock steps back an hour
    /// assert!(matches!(
    ///     generator.check_ready(),
    ///     Err(GenerateError::ClockBehind { behind_ms: 3_600_000, .. })
    /// ));
    ///
    /// // With a store: ready once a write has shown that it takes writes.
    /// let store = MemoryStore::new();
    /// let generator = Generator::builder(0, 0).store(store.clone()).build()?;
    /// assert!(matches!(generator.check_ready(), Err(GenerateError::Reservation(_))));
    /// generator.renew_reservation()?;
    /// assert_eq!(generator.check_ready(), Ok(()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_ready(&self) -> Result<(), GenerateError> {
        let now = self.clock.now_ms();
        let now_delta = match now.checked_sub(TWITTER_EPOCH_MS) {
            Some(d) if d <= MAX_DELTA_MS => d,
            _ => return Err(timestamp_error(now)),
        };
        let last = self.hot.state.load(Ordering::Acquire).ms();
        let reach = now_delta
            .saturating_add(self.max_borrow_ms)
            .saturating_add(whole_ms(self.max_wait));
        if last + 1 > reach {
            return Err(GenerateError::ClockBehind {
                behind_ms: last.saturating_sub(now_delta),
                waited_ms: 0,
            });
        }
        if self.store.is_none() {
            return Ok(());
        }
        if let Some(e) = self.flight.last_error() {
            return Err(GenerateError::Reservation(e));
        }
        match self.since_proven_ms() {
            None => Err(GenerateError::Reservation(StoreError::new(
                StoreErrorKind::Other,
                "no reservation write has succeeded yet",
            ))),
            Some(age) if age > self.max_proof_age_ms => {
                Err(GenerateError::Reservation(StoreError::new(
                    StoreErrorKind::Timeout,
                    format!(
                        "no reservation write has succeeded for {age} ms \
                         (a success is trusted for {} ms)",
                        self.max_proof_age_ms
                    ),
                )))
            }
            Some(_) => Ok(()),
        }
    }

    /// How far past an ID's millisecond a new mark is set (ms); see
    /// [`GeneratorBuilder::reserve_window_ms`].
    pub fn reserve_window_ms(&self) -> u64 {
        self.window_ms
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
        (self.hot.state.load(Ordering::Acquire).ms()) + TWITTER_EPOCH_MS
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

fn whole_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::testing::*;
    use super::*;
    use crate::layout::MAX_TIMESTAMP_MS;
    use crate::{ManualClock, MemoryStore};

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
    fn try_next_ids_never_waits() {
        let (g, clock, store) = stored_at_t_with(|b| b.reserve_window_ms(100));
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
        let (g, clock, store) = stored_at_t();
        // Nothing shows yet that the store takes writes: not ready until a
        // write (the start write a server makes) succeeds.
        assert!(matches!(
            g.check_ready(),
            Err(GenerateError::Reservation(ref e)) if e.to_string() == "no reservation write has succeeded yet"
        ));
        assert!(g.renewal_due(), "a probe is due");
        g.renew_reservation().unwrap();
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

    /// A store that loads but refuses every write, from the start: never
    /// ready, and a mint fails as readiness said it would.
    #[test]
    fn a_store_that_refuses_writes_from_the_start_is_never_ready() {
        let (g, _, store) = stored_at_t();
        store.fail(true);
        assert!(matches!(
            g.check_ready(),
            Err(GenerateError::Reservation(_))
        ));
        assert!(g.renewal_due());
        assert!(g.renew_reservation().is_err());
        let err = g.check_ready().unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot reserve IDs ahead (no ID was issued): memory store: told to fail"
        );
        assert!(matches!(g.next_id(), Err(GenerateError::Reservation(_))));
        assert!(g.renewal_due(), "retried while failing");
    }

    /// An idle generator is probed every half window; a store that stops
    /// taking writes while idle is found within one window, even if nobody
    /// probes.
    #[test]
    fn an_idle_store_is_probed_and_readiness_expires_after_a_window() {
        let (g, clock, store) = stored_at_t();
        g.renew_reservation().unwrap();
        let writes = store.writes();
        clock.advance(DEFAULT_RESERVE_WINDOW_MS / 2 - 1);
        assert!(!g.renewal_due(), "proven less than half a window ago");
        g.renew_reservation().unwrap();
        assert_eq!(store.writes(), writes, "nothing to renew yet");
        clock.advance(1);
        assert!(g.renewal_due(), "half a window: probe");
        g.renew_reservation().unwrap();
        assert_eq!(store.writes(), writes + 1);
        // The probe writes a window ahead of the clock.
        assert_eq!(
            store.mark(),
            Some(clock.now_ms() + DEFAULT_RESERVE_WINDOW_MS)
        );
        // Nobody probes for a whole window: readiness does not vouch for a
        // store it has not seen take a write.
        clock.advance(DEFAULT_RESERVE_WINDOW_MS);
        assert_eq!(g.check_ready(), Ok(()), "exactly one window: still ready");
        clock.advance(1);
        let err = g.check_ready().unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot reserve IDs ahead (no ID was issued): no reservation write has \
             succeeded for 2001 ms (a success is trusted for 2000 ms)"
        );
        g.renew_reservation().unwrap();
        assert_eq!(g.check_ready(), Ok(()));
    }

    /// With a longer `max_proof_age_ms`, a keeper that probes whenever
    /// `renewal_due` says so writes an idle generator's mark once per half
    /// of that age instead of once per half window, stays ready throughout,
    /// and still finds a store that stopped taking writes at its next probe.
    #[test]
    fn a_longer_proof_age_probes_an_idle_store_less_often() {
        // A keeper's minute of idling: asks every 500 ms, probes when due.
        let idle_minute = |g: &Generator, clock: &ManualClock| {
            for _ in 0..120 {
                clock.advance(500);
                if g.renewal_due() {
                    let _ = g.renew_reservation();
                }
                if g.check_ready().is_err() {
                    return false;
                }
            }
            true
        };
        let (g, clock, store) = stored_at_t_with(|b| b.max_proof_age_ms(30_000));
        g.renew_reservation().unwrap();
        let writes = store.writes();
        assert!(idle_minute(&g, &clock), "ready all the idle minute");
        assert_eq!(store.writes() - writes, 4, "one probe per 15 s");

        // The default: one probe per half window.
        let default_store = MemoryStore::new();
        let default = stored(&clock, &default_store);
        default.renew_reservation().unwrap();
        let writes = default_store.writes();
        assert!(idle_minute(&default, &clock));
        assert_eq!(default_store.writes() - writes, 60, "one probe per second");

        // The store stops taking writes: not ready from the next probe on,
        // at most 15 s later.
        store.fail(true);
        let mut waited = 0;
        while g.check_ready().is_ok() {
            assert!(
                waited <= 15_000,
                "still ready {waited} ms after the failure"
            );
            clock.advance(500);
            waited += 500;
            if g.renewal_due() {
                let _ = g.renew_reservation();
            }
        }
        // A mint needs no probe: it writes its mark first.
        store.fail(false);
        assert!(g.next_id().is_ok());
        assert_eq!(g.check_ready(), Ok(()));
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
