//! The reservation path (invariant 4): no ID above the durable mark is
//! returned before a mark covering it is stored. The slow path writes the
//! mark through the single flight (`flight.rs`), renews it ahead of need,
//! and lowers it on a graceful shutdown.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{Claim, GenerateError, Generator};
use crate::flight::Write;
use crate::layout::{MAX_DELTA_MS, TWITTER_EPOCH_MS};
use crate::reservation::{ReservationStore, StoreError};

type StoreResult = Result<(), StoreError>;

impl Generator {
    /// The slow path: makes sure a durable mark covers `claim`, renewing it
    /// early (without waiting for a write in flight) when the claim is
    /// merely close to it.
    #[cold]
    pub(super) fn reserve(&self, claim: Claim, reserved: u64) -> Result<(), GenerateError> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        if claim.delta_ms <= reserved {
            // Covered; renew ahead if nobody else is writing right now. A
            // failure here is retried (and reported) when a claim needs it.
            let _ = self.flight.try_lead(self.mark_write(store, claim.delta_ms));
            return Ok(());
        }
        let covered =
            |_last_ok: bool| claim.delta_ms <= self.hot.reserved_until.load(Ordering::SeqCst);
        self.flight
            .ensure(covered, self.mark_write(store, claim.delta_ms))
            .map_err(|e| {
                self.burn(claim);
                GenerateError::Reservation(e)
            })
    }

    /// The claimed positions are skipped, never handed out again.
    #[cold]
    pub(super) fn burn(&self, claim: Claim) {
        self.counters
            .burned
            .fetch_add(claim.count, Ordering::Relaxed);
    }

    /// The write of the mark a window ahead of `delta_ms` or of the state's
    /// millisecond, whichever is later (read once the caller leads), so that
    /// a write covers every claim made before it started (the single-flight
    /// argument in `flight.rs` rests on this). A state further ahead of
    /// `delta_ms` than IDs can be borrowed (one loaded from a mark that stood
    /// ahead of this clock) is covered as it is, and the window counts from
    /// the borrowing bound instead: issuing waits for the clock there anyway,
    /// and a window added on top at every start would push the mark of an
    /// identity that is claimed again and again before its clock catches up
    /// further ahead each time, out of the clock's reach.
    fn mark_write<'a>(
        &'a self,
        store: &'a Arc<dyn ReservationStore>,
        delta_ms: u64,
    ) -> Write<'a, impl FnOnce() -> u64 + 'a, impl FnOnce(u64, StoreResult) -> StoreResult + 'a>
    {
        Write {
            store,
            prepare: move || {
                let claimed = self.hot.state.load(Ordering::SeqCst).ms();
                let mark = delta_ms
                    .max(self.renewal_base(claimed, delta_ms))
                    .saturating_add(self.window_ms)
                    .max(claimed)
                    .min(MAX_DELTA_MS);
                mark + TWITTER_EPOCH_MS
            },
            publish: |mark, outcome| self.publish_mark(mark, outcome),
        }
    }

    /// The millisecond a renewal keeps a window ahead of: the state's
    /// (`last`), or, when that stands further ahead of the clock's
    /// (`now_delta`) than IDs may be borrowed, the borrowing bound.
    fn renewal_base(&self, last: u64, now_delta: u64) -> u64 {
        last.min(now_delta.saturating_add(self.max_borrow_ms))
    }

    /// The clock's millisecond since the epoch, within the format.
    fn now_delta(&self) -> u64 {
        self.clock
            .now_ms()
            .saturating_sub(TWITTER_EPOCH_MS)
            .min(MAX_DELTA_MS)
    }

    /// Records the outcome of storing `mark` (Unix ms): on success it is
    /// published to the hot path; the caller leads the flight.
    fn publish_mark(&self, mark: u64, outcome: StoreResult) -> StoreResult {
        match outcome {
            Ok(()) => {
                self.hot
                    .reserved_until
                    .store(mark - TWITTER_EPOCH_MS, Ordering::SeqCst);
                self.store_failing.store(false, Ordering::Relaxed);
                self.proven_ms
                    .store(self.clock.now_ms().max(1), Ordering::Relaxed);
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

    /// How long ago (by the generator's clock) a mark write last
    /// succeeded; `None` if none has yet.
    pub(super) fn since_proven_ms(&self) -> Option<u64> {
        match self.proven_ms.load(Ordering::Relaxed) {
            0 => None,
            at => Some(self.clock.now_ms().saturating_sub(at)),
        }
    }

    /// Whether the store should be written now to find out that it still
    /// can be (readiness): no write has succeeded yet, or the newest success
    /// is half the [`max_proof_age_ms`](super::GeneratorBuilder::max_proof_age_ms)
    /// old (so a healthy store is proven again before readiness stops
    /// trusting it).
    fn probe_due(&self) -> bool {
        self.since_proven_ms()
            .is_none_or(|age| age >= self.max_proof_age_ms / 2)
    }

    /// For callers of [`try_next_ids`](Generator::try_next_ids) and
    /// readiness probes: `true` when the mark should be written now (to
    /// renew it ahead of the IDs being issued, to retry a failing store, or
    /// as a probe: no write has succeeded yet, or none for half the
    /// [`max_proof_age_ms`](super::GeneratorBuilder::max_proof_age_ms)),
    /// once per renewal. The caller then runs
    /// [`renew_reservation`](Generator::renew_reservation) on a thread that
    /// may block; until it has, later calls answer `false`. Without a store,
    /// or after [`persist_last_issued`](Generator::persist_last_issued),
    /// always `false`.
    pub fn renewal_due(&self) -> bool {
        if self.store.is_none() || self.retired.load(Ordering::Relaxed) {
            return false;
        }
        let last = self.hot.state.load(Ordering::Acquire).ms();
        let reserved = self.hot.reserved_until.load(Ordering::SeqCst);
        // The clock is read only when the mark is close to the state.
        (last + self.renew_ahead_ms > reserved
            && self.renewal_base(last, self.now_delta()) + self.renew_ahead_ms > reserved
            || self.store_failing.load(Ordering::Relaxed)
            || self.probe_due())
            && !self.renewal_asked.load(Ordering::Relaxed)
            && !self.renewal_asked.swap(true, Ordering::AcqRel)
    }

    /// Writes a new mark a window ahead of the last issued millisecond or
    /// of the clock, whichever is later (but never more than a window past
    /// the borrowing bound of the clock: see the mark write), unless a mark far enough ahead is
    /// durable, the last write succeeded and it is younger than half the
    /// [`max_proof_age_ms`](super::GeneratorBuilder::max_proof_age_ms). Shares a write in flight like [`next_id`](Generator::next_id)
    /// does, and waits at most [`store_timeout`](super::GeneratorBuilder::store_timeout)
    /// for it (twice if one was in flight). Blocks: call it where blocking is
    /// fine. Without a store, or after
    /// [`persist_last_issued`](Generator::persist_last_issued), it does
    /// nothing.
    ///
    /// After [`renewal_due`](Generator::renewal_due) said so, at start (the
    /// generator is not [ready](Generator::check_ready) before a write has
    /// succeeded), and to retry a failing store (not ready until a write
    /// succeeds again).
    pub fn renew_reservation(&self) -> Result<(), StoreError> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        if self.retired.load(Ordering::Relaxed) {
            self.renewal_asked.store(false, Ordering::Release);
            return Ok(());
        }
        let now_delta = self.now_delta();
        let covered = |last_ok: bool| {
            let last = self.hot.state.load(Ordering::Acquire).ms();
            last_ok
                && !self.probe_due()
                && self.renewal_base(last, now_delta) + self.renew_ahead_ms
                    <= self.hot.reserved_until.load(Ordering::SeqCst)
        };
        let outcome = self
            .flight
            .ensure(covered, self.mark_write(store, now_delta));
        self.renewal_asked.store(false, Ordering::Release);
        outcome
    }

    /// For a graceful shutdown: lowers the stored mark to the millisecond of
    /// the last issued ID, so that a restart can issue from the next
    /// millisecond on instead of from the end of the reservation window.
    /// From then on renewals and probes write nothing
    /// ([`renewal_due`](Generator::renewal_due) says `false`), so the mark
    /// stays lowered; only a mint that needs a new mark writes one.
    ///
    /// Safe to call while other threads mint: IDs they take afterwards get a
    /// new mark first. Waits for a write in flight, then for its own write,
    /// each at most [`store_timeout`](super::GeneratorBuilder::store_timeout);
    /// on a timeout the stored mark is left where it was (at or above every
    /// issued ID). Without a store it does nothing.
    pub fn persist_last_issued(&self) -> Result<(), StoreError> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        self.retired.store(true, Ordering::Relaxed);
        self.flight.lead(Write {
            store,
            prepare: || {
                // Make every claim from here on take the slow path (invariant
                // 4), then read what has been claimed so far.
                self.hot.reserved_until.store(0, Ordering::SeqCst);
                self.hot.state.load(Ordering::SeqCst).ms() + TWITTER_EPOCH_MS
            },
            // On failure the store may hold either mark (a rename can land
            // before its directory sync fails), so `reserved_until` stays 0:
            // the next claim writes a fresh mark covering everything issued
            // so far.
            publish: |mark, outcome| self.publish_mark(mark, outcome),
        })
    }
}

#[cfg(all(test, not(loom)))]
impl Generator {
    /// Whether a store call is in flight (for tests).
    fn flight_busy(&self) -> bool {
        self.flight.busy()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::clock::Clock;
    use crate::generator::testing::*;
    use crate::generator::{DEFAULT_MAX_BORROW_MS, DEFAULT_RESERVE_WINDOW_MS};
    use crate::identity::Identity;
    use crate::reservation::StoreErrorKind;
    use crate::{FaultyStore, FileStore, ManualClock, MemoryStore, SnowflakeId};

    /// A (0, 0) generator on a clock at [`T`] whose store (faults off, for
    /// now) gets `timeout` per write, after its first write.
    fn faulty(timeout: Duration) -> (std::sync::Arc<Generator>, FaultyStore, ManualClock) {
        let store = FaultyStore::new();
        let clock = ManualClock::new(T);
        let g = std::sync::Arc::new(built_before(
            &clock,
            Generator::builder(0, 0)
                .store(store.clone())
                .store_timeout(timeout),
        ));
        g.renew_reservation().unwrap();
        (g, store, clock)
    }

    /// Waits (a minute at most) until the write that outlived its
    /// deadline has returned.
    fn wait_for_the_late_write(g: &Generator) {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while g.flight_busy() {
            assert!(
                std::time::Instant::now() < deadline,
                "the late write never ended"
            );
            std::thread::yield_now();
        }
    }

    /// The message of the reservation error that keeps `g` from being
    /// ready.
    fn why_not_ready(g: &Generator) -> String {
        let GenerateError::Reservation(e) = g.check_ready().unwrap_err() else {
            panic!("not a reservation error");
        };
        e.to_string()
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

    /// An identity claimed again and again while its mark stands ahead of
    /// the clock (a lease lost and won back, a crash loop): each start
    /// proves the store with a write, which must not add a window to a mark
    /// nothing was issued under, or the mark runs away from the clock.
    #[test]
    fn restarts_behind_the_mark_do_not_push_it_further_ahead() {
        let store = MemoryStore::new();
        let clock = ManualClock::new(T);
        let ahead = T + 40_000;
        store.store(ahead).unwrap();
        for _ in 0..30 {
            let g = stored(&clock, &store);
            g.renew_reservation().unwrap();
            assert_eq!(
                g.check_ready(),
                Err(GenerateError::ClockBehind {
                    behind_ms: ahead - clock.now_ms(),
                    waited_ms: 0,
                })
            );
            assert!(!g.renewal_due(), "a renewal while nothing can be issued");
            clock.advance(1_000);
        }
        assert_eq!(store.mark(), Some(ahead));
        // Once the clock is within the borrowing bound, it issues above the
        // mark, and the mark is a window ahead of that bound.
        clock.set(ahead - DEFAULT_MAX_BORROW_MS);
        let g = stored(&clock, &store);
        g.renew_reservation().unwrap();
        assert_eq!(store.mark(), Some(ahead + DEFAULT_RESERVE_WINDOW_MS));
        assert_eq!(parts(g.next_id().unwrap()), (ahead + 1, 0));
        assert_eq!(g.metrics().reservation_writes, 1);
    }

    #[test]
    fn a_graceful_shutdown_lowers_the_mark() {
        let (g, clock, store) = stored_at_t();
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

    /// After the mark was lowered, renewals and probes (a background
    /// renewal, a readiness probe) must not raise it again: only a mint
    /// that needs a mark writes one.
    #[test]
    fn nothing_but_a_mint_raises_the_mark_after_it_was_lowered() {
        let (g, clock, store) = stored_at_t();
        g.next_id().unwrap();
        g.persist_last_issued().unwrap();
        assert_eq!(store.mark(), Some(T));
        let writes = store.writes();
        for _ in 0..3 {
            clock.advance(DEFAULT_RESERVE_WINDOW_MS);
            assert!(!g.renewal_due());
            g.renew_reservation().unwrap();
        }
        assert_eq!((store.mark(), store.writes()), (Some(T), writes));
        // A mint still gets its mark first.
        let id = g.next_id().unwrap();
        assert_eq!(
            store.mark(),
            Some(id.timestamp_ms() + DEFAULT_RESERVE_WINDOW_MS)
        );
    }

    #[test]
    fn a_failed_reservation_issues_nothing_and_skips_the_claim() {
        let (g, _, store) = stored_at_t();
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

    /// 8 threads mint at once through `store` (whose writes are slow):
    /// how long each call took, and its outcome.
    fn eight_callers(store: &FaultyStore) -> Vec<(Duration, Result<SnowflakeId, GenerateError>)> {
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
        let store = FaultyStore::new();
        store.writes().delay(delay);
        store
            .writes()
            .fail(StoreErrorKind::Io, "slow store: disk gone");
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
        let attempts = store.writes().calls();
        assert!(attempts < 8, "{attempts} writes for 8 callers");
    }

    #[test]
    fn callers_share_one_successful_write() {
        let store = FaultyStore::new();
        store.writes().delay(Duration::from_millis(100));
        let outcomes = eight_callers(&store);
        let mut ids: Vec<_> = outcomes.into_iter().map(|(_, o)| o.unwrap()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 8);
        let attempts = store.writes().calls();
        assert!(attempts < 8, "{attempts} writes for 8 callers");
    }

    /// A store that never returns while parked: every caller gets a
    /// timeout error after at most its deadline, readiness says so, the
    /// lowering at shutdown gives up too, and nothing the late write
    /// returns is believed.
    #[test]
    fn a_store_that_never_returns_holds_nobody_past_the_deadline() {
        let timeout = Duration::from_millis(50);
        let (g, store, clock) = faulty(timeout);
        let writes = store.writes();
        assert_eq!(g.check_ready(), Ok(()));
        let mark = g.reserved_until_ms();
        assert_eq!(writes.calls(), 1);
        writes.park();
        clock.advance(DEFAULT_RESERVE_WINDOW_MS + 1);

        // The leader of the write: answered at its deadline, the write
        // still parked.
        let began = std::time::Instant::now();
        let err = g.next_id().unwrap_err();
        assert!(began.elapsed() >= timeout);
        let GenerateError::Reservation(e) = &err else {
            panic!("{err:?}");
        };
        assert_eq!(e.kind(), StoreErrorKind::Timeout);
        assert!(
            e.to_string()
                .starts_with("the reservation store did not answer within 50 ms"),
            "{e}"
        );
        assert_eq!(writes.calls(), 2);
        // Not ready while the write is overdue.
        assert!(matches!(
            g.check_ready(),
            Err(GenerateError::Reservation(ref e)) if e.kind() == StoreErrorKind::Timeout
        ));
        // Other callers fail at once (the write is past its deadline), and
        // no second write starts beside the parked one.
        let others: Vec<_> = (0..4)
            .map(|_| {
                let g = g.clone();
                std::thread::spawn(move || g.next_ids(10))
            })
            .collect();
        for other in others {
            let err = other.join().unwrap().unwrap_err();
            assert!(
                matches!(err, GenerateError::Reservation(ref e) if e.kind() == StoreErrorKind::Timeout),
                "{err:?}"
            );
        }
        assert!(g.renew_reservation().is_err());
        let err = g.persist_last_issued().unwrap_err();
        assert_eq!(err.kind(), StoreErrorKind::Timeout);
        assert_eq!(writes.calls(), 2, "one write in flight, never two");
        assert_eq!(g.reserved_until_ms(), mark, "nothing published");
        assert_eq!(g.metrics().ids_issued, 0);

        // The store comes back: the late write is taken as a failure (it
        // is not published), and the next write is a fresh one.
        writes.release();
        wait_for_the_late_write(&g);
        assert_eq!(
            g.reserved_until_ms(),
            mark,
            "the late write was not published"
        );
        let id = g.next_id().unwrap();
        assert_eq!(writes.calls(), 3);
        assert_eq!(
            store.inner().mark(),
            Some(id.timestamp_ms() + DEFAULT_RESERVE_WINDOW_MS)
        );
        assert_eq!(g.check_ready(), Ok(()));
    }

    /// A write in flight within its deadline leaves the generator ready
    /// (the store is merely slow); past its deadline it is not, even while
    /// the newest success is recent; and a late answer is not believed.
    #[test]
    fn readiness_tells_a_write_in_flight_from_an_overdue_one() {
        let build = |timeout| {
            let (g, store, clock) = faulty(timeout);
            store.writes().park();
            // A probe is due; the newest success is still within the window.
            clock.advance(DEFAULT_RESERVE_WINDOW_MS / 2);
            (g, store.writes())
        };

        // In flight, far from its deadline: ready.
        let (g, writes) = build(Duration::from_secs(600));
        let probe = {
            let g = g.clone();
            std::thread::spawn(move || g.renew_reservation())
        };
        assert!(
            writes.wait_for_parked(1, Duration::from_secs(60)),
            "the probe's write never reached the store"
        );
        assert_eq!(g.check_ready(), Ok(()));
        writes.release();
        probe.join().unwrap().unwrap();
        assert_eq!(g.check_ready(), Ok(()));

        // Past its deadline: not ready, and saying why.
        let (g, writes) = build(Duration::from_millis(50));
        let err = g.renew_reservation().unwrap_err();
        assert_eq!(err.kind(), StoreErrorKind::Timeout);
        let why = why_not_ready(&g);
        assert!(
            why.starts_with("the reservation store did not answer within 50 ms"),
            "{why}"
        );
        // The store answers late: still not ready (a late success is taken
        // as a failure), until a write succeeds in time.
        writes.release();
        wait_for_the_late_write(&g);
        let why = why_not_ready(&g);
        assert!(
            why.starts_with("the reservation store answered only after "),
            "{why}"
        );
        g.renew_reservation().unwrap();
        assert_eq!(g.check_ready(), Ok(()));
    }
}
