//! [`GeneratorBuilder`]: the limits, the clock and the store, and the start
//! state (invariant 3: the loaded mark and the build millisecond count as
//! used).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Duration;

use super::metrics::Counters;
use super::state::{AtomicMark, AtomicState, State};
use super::{BuildError, Generator, Hot};
use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Field};
use crate::flight::Flight;
use crate::identity::Identity;
use crate::layout::{Layout, MAX_DELTA_MS, MAX_TIMESTAMP_MS, TWITTER_EPOCH_MS};
use crate::reservation::{ReservationStore, StoreError, StoreErrorKind};

/// Default of [`GeneratorBuilder::max_borrow_ms`].
pub const DEFAULT_MAX_BORROW_MS: u64 = 3_000;
/// Default of [`GeneratorBuilder::max_wait`].
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(1);
/// Default of [`GeneratorBuilder::reserve_window_ms`].
pub const DEFAULT_RESERVE_WINDOW_MS: u64 = 2_000;
/// Default of [`GeneratorBuilder::store_timeout`].
pub const DEFAULT_STORE_TIMEOUT: Duration = Duration::from_secs(2);

/// Configures a [`Generator`]; from [`Generator::builder`].
#[must_use]
pub struct GeneratorBuilder {
    /// Checked at [`build`](GeneratorBuilder::build), so that the builder
    /// chain stays infallible.
    identity: Result<Identity, Error>,
    clock: Option<Box<dyn Clock>>,
    store: Option<Arc<dyn ReservationStore>>,
    max_borrow_ms: u64,
    max_wait: Duration,
    window_ms: u64,
    /// `None`: the reservation window.
    max_proof_age_ms: Option<u64>,
    store_timeout: Duration,
    inline_store: bool,
}

impl fmt::Debug for GeneratorBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeneratorBuilder")
            .field("identity", &self.identity)
            .field("store", &self.store.is_some())
            .field("max_borrow_ms", &self.max_borrow_ms)
            .field("max_wait", &self.max_wait)
            .field("reserve_window_ms", &self.window_ms)
            .field("max_proof_age_ms", &self.max_proof_age_ms)
            .field("store_timeout", &self.store_timeout)
            .finish_non_exhaustive()
    }
}

impl GeneratorBuilder {
    pub(super) fn new(identity: Result<Identity, Error>) -> GeneratorBuilder {
        GeneratorBuilder {
            identity,
            clock: None,
            store: None,
            max_borrow_ms: DEFAULT_MAX_BORROW_MS,
            max_wait: DEFAULT_MAX_WAIT,
            window_ms: DEFAULT_RESERVE_WINDOW_MS,
            max_proof_age_ms: None,
            store_timeout: DEFAULT_STORE_TIMEOUT,
            inline_store: false,
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
        self.store = Some(Arc::new(store));
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

    /// How old the newest successful store write may be while the
    /// generator counts as [ready](Generator::check_ready), default the
    /// reservation window. A caller that keeps an idle generator ready
    /// probes the store when [`renewal_due`](Generator::renewal_due) says
    /// so, at half this age; so an idle generator writes its mark once per
    /// half of it, and readiness turns false at most this long after the
    /// store stopped taking writes (at once when a probe fails). Raise it
    /// where a write is dear (a mark kept in a consensus store) and a
    /// slower readiness verdict is fine. Minting is not affected: a mint
    /// that needs a mark always writes one first.
    ///
    /// ```
    /// use snowmint::{Generator, ManualClock, MemoryStore};
    /// let clock = ManualClock::new(1_700_000_000_000);
    /// let generator = Generator::builder(0, 0)
    ///     .clock(clock.clone())
    ///     .store(MemoryStore::new())
    ///     .max_proof_age_ms(30_000)
    ///     .build()?;
    /// generator.renew_reservation()?;
    /// clock.advance(14_999);
    /// assert!(!generator.renewal_due(), "idle: no probe before 15 s");
    /// clock.advance(15_001);
    /// assert!(generator.check_ready().is_ok(), "30 s since the write: trusted");
    /// clock.advance(1);
    /// assert!(generator.check_ready().is_err(), "no longer");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_proof_age_ms(mut self, ms: u64) -> Self {
        self.max_proof_age_ms = Some(ms);
        self
    }

    /// The longest a caller waits for one store write, default 2 s. A
    /// write runs on a thread of its own; past this the caller gets
    /// [`GenerateError::Reservation`](super::GenerateError::Reservation)
    /// with [`StoreErrorKind::Timeout`], the write is *overdue* (the
    /// generator is not [ready](Generator::check_ready), and callers fail at
    /// once) until the store returns, and what it returns then is taken as
    /// a failure. So a call waits at most `max_wait` plus two of these.
    pub fn store_timeout(mut self, timeout: Duration) -> Self {
        self.store_timeout = timeout;
        self
    }

    /// Calls the store on the caller's own thread instead of a thread of its
    /// own, default `false`. Only for a store that never blocks (an
    /// in-memory one, a simulation's), where a thread per write is all cost:
    /// a call made this way cannot be timed out.
    pub fn inline_store(mut self, inline: bool) -> Self {
        self.inline_store = inline;
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

    pub(super) fn assemble(self, identity: Identity, mark: Option<u64>) -> Generator {
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
                state: AtomicState::new(State::end_of(start)),
                reserved_until: AtomicMark::new(reserved),
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
            flight: Flight::new(self.store_timeout, self.inline_store),
            renewal_asked: AtomicBool::new(false),
            store_failing: AtomicBool::new(false),
            proven_ms: AtomicU64::new(0),
            max_proof_age_ms: self.max_proof_age_ms.unwrap_or(self.window_ms),
            retired: AtomicBool::new(false),
            counters: Counters::default(),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::generator::testing::*;
    use crate::{FileStore, ManualClock, MemoryStore};

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
}
