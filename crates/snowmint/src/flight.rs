//! One reservation write at a time, shared by every caller waiting for it,
//! and bounded by a deadline.
//!
//! When the store is slow or failing, callers that all need a new mark must
//! not queue up behind one another and repeat the same write: each would
//! wait for every write before its own, so the n-th caller would return
//! after n store timeouts. Instead the first caller *leads* a write and the
//! others *join* it: they wait for that one write and take its outcome,
//! success or failure, as their own.
//!
//! A store call that never returns (an `fsync` on a hung disk, a frozen
//! filesystem) must not hold its callers: the call runs on a thread of its
//! own, and every caller waits for it only until the write's deadline
//! (`timeout` after it started). Past it the caller gets
//! [`StoreErrorKind::Timeout`] and the write is *overdue*: it stays in
//! flight (no second write may start, or a late rename could land over a
//! newer mark), callers arriving meanwhile fail at once, and when the store
//! finally returns, the outcome is recorded as a failure and nothing is
//! published (the store then holds a mark at least as high as the one
//! published, which is safe; the next caller writes a fresh one).

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[cfg(loom)]
use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::reservation::{ReservationStore, StoreError, StoreErrorKind};

/// The single-flight gate of a generator's reservation writes.
///
/// # Invariants
///
/// 1. At most one store call runs at a time (`writing`), and it runs without
///    the lock held, on a thread of its own, so joiners can wait on the
///    condition variable meanwhile. A store call that is overdue still
///    counts as running until it returns.
/// 2. `finished` counts finished writes and `last` holds the newest one's
///    outcome; both change only together, under the lock, when a write
///    ends, and every waiter is woken then. A write ends when its leader has
///    published the outcome of a store call that returned in time, or, if
///    the leader gave up (`abandoned`), when the store call returns.
/// 3. A caller joins at most one write that was already running when it
///    arrived. A write that starts *after* a caller's claim was made covers
///    that claim (the generator writes at least the state's millisecond as
///    of the write's start), so a caller waits for at most that joined write
///    and, if it ended below the caller's millisecond, one more.
/// 4. No caller waits past the deadline of the write it waits for
///    (`started + timeout`), so one call waits at most two timeouts.
/// 5. `publish` runs exactly once per write, on the leader's thread, before
///    the write ends: with the store's outcome if it came in time, else
///    with the timeout error. A late success is never published.
pub(crate) struct Flight {
    state: Mutex<State>,
    done: Condvar,
    /// How long a store call may take before its callers give up on it.
    timeout: Duration,
    /// Call the store on the leader's own thread (a store that never
    /// blocks): no thread, and no deadline either. Under loom every call
    /// runs inline, so the field is not read there.
    #[cfg_attr(loom, allow(dead_code))]
    inline: bool,
}

struct State {
    /// When the store call in flight started, if one is.
    writing: Option<Instant>,
    /// The store call's outcome, once it returned in time and before its
    /// leader has published it.
    returned: Option<Result<(), StoreError>>,
    /// The leader gave up on the store call in flight: the call's thread
    /// ends the write when the store returns.
    abandoned: bool,
    finished: u64,
    last: Option<Result<(), StoreError>>,
}

impl fmt::Debug for Flight {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Flight")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// What a leader needs to write a mark: the store, the mark (computed once
/// it leads), and what to do with the outcome.
pub(crate) struct Write<'a, P, F> {
    pub(crate) store: &'a Arc<dyn ReservationStore>,
    /// Runs once the caller leads, before the store call: the Unix ms to
    /// store.
    pub(crate) prepare: P,
    /// Runs with the prepared mark and the store's outcome (or the
    /// timeout), before the write ends; its result is the write's outcome.
    pub(crate) publish: F,
}

impl Flight {
    pub(crate) fn new(timeout: Duration, inline: bool) -> Arc<Flight> {
        Arc::new(Flight {
            state: Mutex::new(State {
                writing: None,
                returned: None,
                abandoned: false,
                finished: 0,
                last: None,
            }),
            done: Condvar::new(),
            timeout,
            inline,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The error of a caller that waited for a write until its deadline.
    fn timeout_error(&self, started: Instant) -> StoreError {
        StoreError::new(
            StoreErrorKind::Timeout,
            format!(
                "the reservation store did not answer within {} ms \
                 (a write has been in flight for {} ms)",
                self.timeout.as_millis(),
                started.elapsed().as_millis()
            ),
        )
    }

    /// Waits on the condition variable until woken or `deadline`; `true`
    /// if the deadline has passed. Under loom the store call runs inline, so
    /// nobody waits for a deadline there.
    fn wait_until<'a>(
        &self,
        state: MutexGuard<'a, State>,
        deadline: Instant,
    ) -> (MutexGuard<'a, State>, bool) {
        #[cfg(not(loom))]
        {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return (state, true);
            };
            let (state, _) = self
                .done
                .wait_timeout(state, left)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let passed = Instant::now() >= deadline;
            (state, passed)
        }
        #[cfg(loom)]
        {
            let _ = deadline;
            let state = self
                .done
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            (state, false)
        }
    }

    /// Waits, at most until its deadline, for the write in flight (if any)
    /// to end. `Err` if it is still in flight at its deadline.
    fn wait_for_write<'a>(
        &self,
        mut state: MutexGuard<'a, State>,
    ) -> Result<MutexGuard<'a, State>, StoreError> {
        let ticket = state.finished;
        while let Some(started) = state.writing {
            if state.finished != ticket {
                break;
            }
            let (next, passed) = self.wait_until(state, started + self.timeout);
            state = next;
            if passed && state.writing.is_some() && state.finished == ticket {
                return Err(self.timeout_error(started));
            }
        }
        Ok(state)
    }

    /// Returns once `covered` holds, or with the outcome of the write that
    /// was meant to make it hold.
    ///
    /// `covered(last_ok)` is asked under the lock (`last_ok`: no write has
    /// failed since the last success). If it does not hold and a write is in
    /// flight, this call joins it: when it ends, `covered` is asked again,
    /// and a failure of the joined write is this call's failure too (so is
    /// its deadline passing). If no write is in flight (or the joined one
    /// succeeded without covering), this call leads `write`.
    pub(crate) fn ensure<P, F>(
        self: &Arc<Self>,
        covered: impl Fn(bool) -> bool,
        write: Write<'_, P, F>,
    ) -> Result<(), StoreError>
    where
        P: FnOnce() -> u64,
        F: FnOnce(u64, Result<(), StoreError>) -> Result<(), StoreError>,
    {
        let mut state = self.lock();
        let mut waited_for = 0;
        loop {
            let last_ok = !matches!(state.last, Some(Err(_)));
            if covered(last_ok) {
                return Ok(());
            }
            if let (1.., Some(Err(e))) = (waited_for, &state.last) {
                // The outcome of the write this caller waited for answers it.
                return Err(e.clone());
            }
            if state.writing.is_none() {
                break;
            }
            if waited_for == 2 {
                // Invariant 3: the second write waited for started after
                // this caller's claim, so it should have covered it.
                return Err(StoreError::new(
                    StoreErrorKind::Other,
                    "reservation writes are falling behind the IDs claimed",
                ));
            }
            state = self.wait_for_write(state)?;
            waited_for += 1;
        }
        self.lead_locked(state, write)
    }

    /// Leads `write` unless one is in flight; `None` (at once) if one is.
    pub(crate) fn try_lead<P, F>(
        self: &Arc<Self>,
        write: Write<'_, P, F>,
    ) -> Option<Result<(), StoreError>>
    where
        P: FnOnce() -> u64,
        F: FnOnce(u64, Result<(), StoreError>) -> Result<(), StoreError>,
    {
        let state = self.lock();
        if state.writing.is_some() {
            return None;
        }
        Some(self.lead_locked(state, write))
    }

    /// Waits for the write in flight, if any (at most until its deadline),
    /// then leads `write` (for a write that must happen whatever the mark
    /// is, such as lowering it).
    pub(crate) fn lead<P, F>(self: &Arc<Self>, write: Write<'_, P, F>) -> Result<(), StoreError>
    where
        P: FnOnce() -> u64,
        F: FnOnce(u64, Result<(), StoreError>) -> Result<(), StoreError>,
    {
        let mut state = self.lock();
        while state.writing.is_some() {
            state = self.wait_for_write(state)?;
        }
        self.lead_locked(state, write)
    }

    fn lead_locked<P, F>(
        self: &Arc<Self>,
        mut state: MutexGuard<'_, State>,
        write: Write<'_, P, F>,
    ) -> Result<(), StoreError>
    where
        P: FnOnce() -> u64,
        F: FnOnce(u64, Result<(), StoreError>) -> Result<(), StoreError>,
    {
        let started = Instant::now();
        state.writing = Some(started);
        state.returned = None;
        state.abandoned = false;
        drop(state);
        // Ends the write even if `prepare` or `publish` panics, so no caller
        // waits for a write that will never finish.
        let mut ending = Ending {
            flight: self,
            outcome: Some(Err(StoreError::new(
                StoreErrorKind::Other,
                "the reservation store panicked",
            ))),
        };
        let mark = (write.prepare)();
        self.start_call(Arc::clone(write.store), mark);
        let mut state = self.lock();
        let returned = loop {
            if let Some(returned) = state.returned.take() {
                break returned;
            }
            let (next, passed) = self.wait_until(state, started + self.timeout);
            state = next;
            if passed && state.returned.is_none() {
                // Overdue: the call's thread ends the write when the store
                // returns (invariant 2).
                state.abandoned = true;
                drop(state);
                ending.outcome = None;
                return (write.publish)(mark, Err(self.timeout_error(started)));
            }
        };
        drop(state);
        let outcome = (write.publish)(mark, returned);
        ending.outcome = Some(outcome.clone());
        outcome
    }

    /// Runs the store call on a thread of its own; its outcome lands in
    /// `returned`, or ends the write if the leader gave up on it.
    #[cfg(not(loom))]
    fn start_call(self: &Arc<Self>, store: Arc<dyn ReservationStore>, mark: u64) {
        if self.inline {
            let outcome = store.store(mark);
            self.lock().returned = Some(outcome);
            return;
        }
        let flight = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("snowmint-reservation".to_owned())
            .spawn(move || {
                let mut report = Report {
                    flight,
                    outcome: None,
                };
                // Declared after `report`, so dropped before it reports even
                // on a panic: once a caller has the outcome, the store (a
                // file lock) is held only by the generator.
                let store = store;
                let outcome = store.store(mark);
                drop(store);
                report.outcome = Some(outcome);
            });
        if let Err(e) = spawned {
            self.lock().returned = Some(Err(StoreError::new(
                StoreErrorKind::Other,
                format!("cannot start a thread for the reservation write: {e}"),
            )));
        }
    }

    /// Under loom the store call runs inline: the model checks the single
    /// flight and the compare-and-swap, not the deadline.
    #[cfg(loom)]
    fn start_call(self: &Arc<Self>, store: Arc<dyn ReservationStore>, mark: u64) {
        let outcome = store.store(mark);
        self.lock().returned = Some(outcome);
    }

    /// The newest write's error, if the newest write failed, or the
    /// deadline error of a write in flight past its deadline.
    pub(crate) fn last_error(&self) -> Option<StoreError> {
        let state = self.lock();
        if let Some(started) = state.writing.filter(|s| s.elapsed() >= self.timeout) {
            return Some(self.timeout_error(started));
        }
        match &state.last {
            Some(Err(e)) => Some(e.clone()),
            _ => None,
        }
    }
}

#[cfg(all(test, not(loom)))]
impl Flight {
    /// Whether a store call is in flight (for tests).
    pub(crate) fn busy(&self) -> bool {
        self.lock().writing.is_some()
    }
}

/// Ends the write in flight when dropped (unless its store call is overdue
/// and its thread will): records its outcome and wakes every caller
/// waiting for it.
struct Ending<'a> {
    flight: &'a Flight,
    outcome: Option<Result<(), StoreError>>,
}

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        if let Some(outcome) = self.outcome.take() {
            self.flight.end(self.flight.lock(), outcome);
        }
    }
}

impl Flight {
    fn end(&self, mut state: MutexGuard<'_, State>, outcome: Result<(), StoreError>) {
        state.writing = None;
        state.returned = None;
        state.abandoned = false;
        state.finished += 1;
        state.last = Some(outcome);
        drop(state);
        self.done.notify_all();
    }
}

/// Hands the store call's outcome over when dropped (a store that panics
/// reports a failure): to the waiting leader, or, if the leader gave up,
/// ends the write itself.
#[cfg(not(loom))]
struct Report {
    flight: Arc<Flight>,
    outcome: Option<Result<(), StoreError>>,
}

#[cfg(not(loom))]
impl Drop for Report {
    fn drop(&mut self) {
        let outcome = self.outcome.take().unwrap_or_else(|| {
            Err(StoreError::new(
                StoreErrorKind::Other,
                "the reservation store panicked",
            ))
        });
        let mut state = self.flight.lock();
        if state.abandoned {
            let started = state.writing.unwrap_or_else(Instant::now);
            let late = StoreError::new(
                StoreErrorKind::Timeout,
                format!(
                    "the reservation store answered only after {} ms (more than {} ms){}",
                    started.elapsed().as_millis(),
                    self.flight.timeout.as_millis(),
                    match outcome {
                        Ok(()) => String::new(),
                        Err(e) => format!(": {e}"),
                    }
                ),
            );
            self.flight.end(state, Err(late));
        } else {
            state.returned = Some(outcome);
            drop(state);
            self.flight.done.notify_all();
        }
    }
}
