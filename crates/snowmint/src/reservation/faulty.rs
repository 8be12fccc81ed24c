//! [`FaultyStore`]: a reservation store that is slow, hangs or fails on
//! request, for testing what a program does when its store misbehaves.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::{MemoryStore, ReservationStore, StoreError, StoreErrorKind};

/// A reservation store that wraps another one (a [`MemoryStore`] unless
/// told otherwise) and misbehaves on request: each call can be delayed,
/// parked until the test lets it go, or failed with a given
/// [`StoreErrorKind`] and message. Calls are counted as well.
///
/// The faults of [`load`](ReservationStore::load) calls and those of
/// [`store`](ReservationStore::store) calls are set apart, through the
/// [`reads`](FaultyStore::reads) and [`writes`](FaultyStore::writes)
/// handles. A generator loads the mark once, when it is built, and writes
/// from then on, so a test usually leaves reads alone and makes writes
/// misbehave. The handles are cheap to clone and keep working after the
/// store has been moved into a generator, and what they change applies to
/// calls from then on, even while the store is in use. A call passes
/// through the faults in this order:
///
/// 1. It is counted ([`StoreFaults::calls`]).
/// 2. If the calls are parked ([`StoreFaults::park`]), it blocks until
///    [`StoreFaults::release`]. [`StoreFaults::wait_for_parked`] lets a test
///    wait until that has happened.
/// 3. It sleeps for the delay ([`StoreFaults::delay`]), if one is set.
/// 4. If a failure is set ([`StoreFaults::fail`]), it returns that error and
///    leaves the wrapped store untouched. Otherwise the wrapped store
///    answers.
///
/// A failure is checked when the call would answer, not when it begins. So
/// a call parked while the store fails succeeds if the store is
/// [healed](StoreFaults::heal) before the call is released.
///
/// ```
/// use std::time::Duration;
/// use snowmint::{FaultyStore, GenerateError, Generator, ManualClock, StoreErrorKind};
///
/// let clock = ManualClock::new(1_700_000_000_000);
/// let store = FaultyStore::new();
/// let writes = store.writes();
/// let generator = Generator::builder(1, 2)
///     .clock(clock.clone())
///     .store(store.clone())
///     .store_timeout(Duration::from_millis(50))
///     .build()?;
/// clock.advance(1);
///
/// // The disk fills up. No ID is issued, and the error says why.
/// writes.fail(StoreErrorKind::Io, "disk full");
/// let err = generator.next_id().unwrap_err();
/// assert_eq!(err.to_string(), "cannot reserve IDs ahead (no ID was issued): disk full");
/// assert_eq!(store.inner().mark(), None, "nothing was written");
/// writes.heal();
/// let id = generator.next_id()?;
/// assert!(store.inner().mark() > Some(id.timestamp_ms()));
///
/// // The disk hangs. A caller that needs a new mark gives up at the
/// // store timeout, and the write stays parked.
/// writes.park();
/// clock.advance(10_000);
/// let err = generator.next_id().unwrap_err();
/// assert!(matches!(err, GenerateError::Reservation(ref e) if e.kind() == StoreErrorKind::Timeout));
/// assert!(writes.wait_for_parked(1, Duration::from_secs(10)));
/// assert_eq!(writes.calls(), 3);
/// writes.release();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct FaultyStore<S = MemoryStore> {
    inner: S,
    reads: StoreFaults,
    writes: StoreFaults,
}

impl FaultyStore {
    /// A store over a new, empty [`MemoryStore`], with no fault set yet.
    pub fn new() -> FaultyStore {
        FaultyStore::default()
    }
}

impl<S: ReservationStore> FaultyStore<S> {
    /// A store that forwards to `inner` while no fault is set.
    pub fn wrap(inner: S) -> FaultyStore<S> {
        FaultyStore {
            inner,
            reads: StoreFaults::default(),
            writes: StoreFaults::default(),
        }
    }

    /// The wrapped store, for example to read a [`MemoryStore`]'s mark.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The faults of the [`load`](ReservationStore::load) calls. The handle
    /// is shared with every clone of this store.
    pub fn reads(&self) -> StoreFaults {
        self.reads.clone()
    }

    /// The faults of the [`store`](ReservationStore::store) calls, which
    /// write the mark. The handle is shared with every clone of this store.
    pub fn writes(&self) -> StoreFaults {
        self.writes.clone()
    }
}

impl<S: ReservationStore> ReservationStore for FaultyStore<S> {
    fn load(&self) -> Result<Option<u64>, StoreError> {
        self.reads.call(|| self.inner.load())
    }

    fn store(&self, until_ms: u64) -> Result<(), StoreError> {
        self.writes.call(|| self.inner.store(until_ms))
    }
}

/// The faults of one kind of call of a [`FaultyStore`] (its
/// [`reads`](FaultyStore::reads) or its [`writes`](FaultyStore::writes)),
/// and how many such calls there were. Clones are handles to the same
/// faults. A change applies to every call from then on, including calls
/// from other threads.
///
/// ```
/// use std::time::Duration;
/// use snowmint::{FaultyStore, ReservationStore, StoreErrorKind};
///
/// let store = FaultyStore::new();
/// let writes = store.writes();
/// writes.fail(StoreErrorKind::Io, "no space left on device");
/// let err = store.store(1_700_000_000_000).unwrap_err();
/// assert_eq!((err.kind(), err.to_string().as_str()), (StoreErrorKind::Io, "no space left on device"));
/// assert_eq!(store.load()?, None, "reads are not affected");
/// writes.heal();
///
/// // A hung write: it blocks until released.
/// writes.park();
/// let hung = std::thread::spawn({
///     let store = store.clone();
///     move || store.store(1_700_000_000_000)
/// });
/// assert!(writes.wait_for_parked(1, Duration::from_secs(10)));
/// assert!(!hung.is_finished());
/// writes.release();
/// hung.join().unwrap()?;
/// assert_eq!(store.inner().mark(), Some(1_700_000_000_000));
/// assert_eq!(writes.calls(), 2);
/// # Ok::<(), snowmint::StoreError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct StoreFaults {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<FaultState>,
    /// Notified on every change of `state`.
    changed: Condvar,
}

#[derive(Debug, Default)]
struct FaultState {
    delay: Duration,
    failure: Option<StoreError>,
    /// Whether calls park on arrival.
    parking: bool,
    /// How many times the calls were released. A parked call waits until
    /// this moves on, so that a `park` right after a `release` cannot keep
    /// the released calls parked.
    releases: u64,
    /// Calls that began.
    calls: u64,
    /// Calls parked right now.
    parked: u64,
}

impl StoreFaults {
    /// From now on each call sleeps for `delay` before it answers.
    /// [`Duration::ZERO`] means no delay, which is the default.
    pub fn delay(&self, delay: Duration) {
        self.update(|state| state.delay = delay);
    }

    /// From now on each call fails with an error of this `kind` and
    /// `message` and does not reach the wrapped store, until
    /// [`heal`](StoreFaults::heal).
    pub fn fail(&self, kind: StoreErrorKind, message: impl Into<String>) {
        let failure = StoreError::new(kind, message);
        self.update(|state| state.failure = Some(failure));
    }

    /// Ends the failure set by [`fail`](StoreFaults::fail). The delay and
    /// the park stay as they are.
    pub fn heal(&self) {
        self.update(|state| state.failure = None);
    }

    /// From now on each call blocks when it arrives, as a call into a hung
    /// disk or an unreachable server does, until
    /// [`release`](StoreFaults::release).
    pub fn park(&self) {
        self.update(|state| state.parking = true);
    }

    /// Lets every parked call go on, and stops parking new ones.
    pub fn release(&self) {
        self.update(|state| {
            state.parking = false;
            state.releases += 1;
        });
    }

    /// How many calls began (parked, failed and answered calls alike).
    pub fn calls(&self) -> u64 {
        self.lock().calls
    }

    /// How many calls are parked right now.
    pub fn parked(&self) -> u64 {
        self.lock().parked
    }

    /// Blocks until at least `n` calls have begun, or for at most
    /// `timeout`. Returns whether they have.
    #[must_use = "the wait may have timed out"]
    pub fn wait_for_calls(&self, n: u64, timeout: Duration) -> bool {
        self.wait_for(timeout, |state| state.calls >= n)
    }

    /// Blocks until at least `n` calls are parked at once, or for at most
    /// `timeout`. Returns whether they are.
    #[must_use = "the wait may have timed out"]
    pub fn wait_for_parked(&self, n: u64, timeout: Duration) -> bool {
        self.wait_for(timeout, |state| state.parked >= n)
    }

    /// Runs one call through the faults, then `answer` unless it fails.
    fn call<T>(&self, answer: impl FnOnce() -> Result<T, StoreError>) -> Result<T, StoreError> {
        let mut state = self.lock();
        state.calls += 1;
        self.shared.changed.notify_all();
        if state.parking {
            let ticket = state.releases;
            state.parked += 1;
            self.shared.changed.notify_all();
            while state.releases == ticket {
                state = self
                    .shared
                    .changed
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            state.parked -= 1;
            self.shared.changed.notify_all();
        }
        let delay = state.delay;
        drop(state);
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        if let Some(failure) = self.lock().failure.clone() {
            return Err(failure);
        }
        answer()
    }

    fn update(&self, change: impl FnOnce(&mut FaultState)) {
        change(&mut self.lock());
        self.shared.changed.notify_all();
    }

    fn wait_for(&self, timeout: Duration, done: impl Fn(&FaultState) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        while !done(&state) {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return false;
            };
            state = self
                .shared
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }

    fn lock(&self) -> MutexGuard<'_, FaultState> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::thread;

    use super::*;
    use crate::{FileStore, Identity};

    const T: u64 = 1_700_000_000_000;
    /// Long enough to never pass on a loaded machine when nothing is wrong.
    const PATIENCE: Duration = Duration::from_secs(60);

    /// A write of `mark` into `store` on a thread of its own (it may park).
    fn store_on_a_thread(
        store: &FaultyStore,
        mark: u64,
    ) -> thread::JoinHandle<Result<(), StoreError>> {
        let store = store.clone();
        thread::spawn(move || store.store(mark))
    }

    /// [`store_on_a_thread`], returned once that write is parked (writes
    /// must be parked).
    fn parked_write(store: &FaultyStore, mark: u64) -> thread::JoinHandle<Result<(), StoreError>> {
        let writes = store.writes();
        let before = writes.parked();
        let write = store_on_a_thread(store, mark);
        assert!(
            writes.wait_for_parked(before + 1, PATIENCE),
            "the write never parked"
        );
        write
    }

    #[test]
    fn without_faults_it_is_the_wrapped_store() {
        let memory = MemoryStore::with_mark(T);
        let store = FaultyStore::wrap(memory.clone());
        assert_eq!(store.load(), Ok(Some(T)));
        store.store(T + 1).unwrap();
        assert_eq!(memory.mark(), Some(T + 1));
        assert_eq!(store.inner().writes(), 1);
        assert_eq!((store.reads().calls(), store.writes().calls()), (1, 1));
        // The wrapped store's own errors come through unchanged.
        memory.fail(true);
        assert_eq!(
            store.load().unwrap_err().to_string(),
            "memory store: told to fail"
        );
        assert_eq!(FaultyStore::new().load(), Ok(None));
    }

    #[test]
    fn a_failure_has_its_kind_and_message_and_lasts_until_healed() {
        let store = FaultyStore::wrap(MemoryStore::with_mark(T));
        let (reads, writes) = (store.reads(), store.writes());
        writes.fail(StoreErrorKind::Io, "disk gone");
        for _ in 0..3 {
            assert_eq!(
                store.store(T + 1),
                Err(StoreError::new(StoreErrorKind::Io, "disk gone"))
            );
        }
        assert_eq!(store.load(), Ok(Some(T)), "reads are not affected");
        assert_eq!(store.inner().writes(), 0, "a failed write is not forwarded");
        assert_eq!(writes.calls(), 3, "failed calls are counted");
        reads.fail(StoreErrorKind::Damaged, "bad mark");
        assert_eq!(store.load().unwrap_err().kind(), StoreErrorKind::Damaged);
        writes.heal();
        store.store(T + 1).unwrap();
        assert_eq!(store.inner().mark(), Some(T + 1));
        assert!(store.load().is_err(), "healing writes leaves reads failing");
        reads.heal();
        assert_eq!(store.load(), Ok(Some(T + 1)));
    }

    #[test]
    fn a_delay_holds_each_call_and_can_be_lifted() {
        let store = FaultyStore::new();
        let delay = Duration::from_millis(50);
        store.writes().delay(delay);
        let began = Instant::now();
        store.store(T).unwrap();
        assert!(began.elapsed() >= delay);
        store.writes().fail(StoreErrorKind::Io, "slow and failing");
        let began = Instant::now();
        assert!(store.store(T).is_err());
        assert!(began.elapsed() >= delay, "a failure is delayed too");
        // Reads keep their own (zero) delay; lifting the delay of writes
        // makes them prompt again. (No upper bound on time is asserted: a
        // loaded machine can be slow anyway.)
        assert_eq!(store.load(), Ok(Some(T)));
        store.writes().delay(Duration::ZERO);
        store.writes().heal();
        store.store(T + 1).unwrap();
        assert_eq!(store.inner().mark(), Some(T + 1));
    }

    #[test]
    fn parked_calls_block_until_released() {
        let store = FaultyStore::new();
        let writes = store.writes();
        assert!(
            !writes.wait_for_parked(1, Duration::from_millis(20)),
            "nothing is parked"
        );
        writes.park();
        let callers: Vec<_> = (0..3).map(|i| store_on_a_thread(&store, T + i)).collect();
        assert!(writes.wait_for_parked(3, PATIENCE));
        assert!(writes.wait_for_calls(3, Duration::ZERO));
        assert_eq!(writes.parked(), 3);
        assert!(callers.iter().all(|c| !c.is_finished()));
        assert_eq!(store.inner().writes(), 0, "nothing reached the store");
        // Reads go through while writes hang.
        assert_eq!(store.load(), Ok(None));
        writes.release();
        for caller in callers {
            caller.join().unwrap().unwrap();
        }
        assert_eq!(writes.parked(), 0);
        assert_eq!(store.inner().writes(), 3);
        // Released means no longer parking: later calls go straight through.
        store.store(T + 9).unwrap();
        assert_eq!(writes.calls(), 4);
    }

    /// A `park` right after a `release`, before the released calls got to
    /// run, must not keep them parked; it parks only the calls after it.
    #[test]
    fn a_release_lets_go_of_every_call_parked_before_it() {
        let store = FaultyStore::new();
        let writes = store.writes();
        writes.park();
        let first = parked_write(&store, T);
        writes.release();
        writes.park();
        first.join().unwrap().unwrap();
        let second = parked_write(&store, T + 1);
        assert_eq!(store.inner().mark(), Some(T));
        writes.release();
        second.join().unwrap().unwrap();
        assert_eq!(store.inner().mark(), Some(T + 1));
    }

    /// A failure is checked when a call would answer: healed while parked,
    /// the call succeeds; failed while parked, it fails.
    #[test]
    fn a_parked_call_answers_as_the_store_is_when_released() {
        let store = FaultyStore::new();
        let writes = store.writes();
        writes.fail(StoreErrorKind::Io, "disk gone");
        writes.park();
        let parked = parked_write(&store, T);
        writes.heal();
        writes.release();
        parked.join().unwrap().unwrap();

        writes.park();
        let parked = parked_write(&store, T + 1);
        writes.fail(StoreErrorKind::Timeout, "too late");
        writes.release();
        assert_eq!(
            parked.join().unwrap().unwrap_err().kind(),
            StoreErrorKind::Timeout
        );
        assert_eq!(store.inner().mark(), Some(T));
    }

    #[test]
    fn waiting_for_calls_returns_when_one_begins_or_at_the_timeout() {
        let store = FaultyStore::new();
        let writes = store.writes();
        let began = Instant::now();
        assert!(!writes.wait_for_calls(1, Duration::from_millis(30)));
        assert!(began.elapsed() >= Duration::from_millis(30));
        writes.delay(Duration::from_millis(200));
        let slow = store_on_a_thread(&store, T);
        // Counted as soon as it begins, before its delay is over.
        assert!(writes.wait_for_calls(1, PATIENCE));
        slow.join().unwrap().unwrap();
        assert_eq!(store.inner().mark(), Some(T));
    }

    /// Any store can be wrapped, and clones of the wrapper share the faults.
    #[test]
    fn it_wraps_any_store_and_clones_share_the_faults() {
        let dir = tempfile::tempdir().unwrap();
        let file = FileStore::open(dir.path(), Identity::new(1, 2).unwrap()).unwrap();
        let store = FaultyStore::wrap(file);
        let clone = store.clone();
        store.writes().fail(StoreErrorKind::Io, "unplugged");
        assert_eq!(clone.store(T).unwrap_err().to_string(), "unplugged");
        clone.writes().heal();
        store.store(T).unwrap();
        assert_eq!(clone.load(), Ok(Some(T)));
        assert_eq!(store.writes().calls(), 2);
        let generator = crate::Generator::builder(1, 2)
            .store(Box::new(store) as Box<dyn ReservationStore>)
            .build()
            .unwrap();
        assert!(generator.last_issued_ms() >= T);
    }
}
