//! One reservation write at a time, shared by every caller waiting for it.
//!
//! When the store is slow or failing, callers that all need a new mark must
//! not queue up behind one another and repeat the same write: each would
//! wait for every write before its own, so the n-th caller would return
//! after n store timeouts. Instead the first caller *leads* a write and the
//! others *join* it: they wait for that one write and take its outcome,
//! success or failure, as their own.

use std::fmt;

#[cfg(loom)]
use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::reservation::{StoreError, StoreErrorKind};

/// The single-flight gate of a generator's reservation writes.
///
/// # Invariants
///
/// 1. At most one write runs at a time (`writing`), and it runs without the
///    lock held, so joiners can wait on the condition variable meanwhile.
/// 2. `finished` counts finished writes and `last` holds the newest one's
///    outcome; both change only together, under the lock, when a write
///    ends, and every waiter is woken then.
/// 3. A caller joins at most one write that was already running when it
///    arrived. A write that starts *after* a caller's claim was made covers
///    that claim (the generator writes at least the state's millisecond as
///    of the write's start), so a caller waits for at most that joined write
///    and, if it ended below the caller's millisecond, one more.
pub(crate) struct Flight {
    state: Mutex<State>,
    done: Condvar,
}

struct State {
    writing: bool,
    finished: u64,
    last: Option<Result<(), StoreError>>,
}

impl fmt::Debug for Flight {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Flight").finish_non_exhaustive()
    }
}

impl Flight {
    pub(crate) fn new() -> Flight {
        Flight {
            state: Mutex::new(State {
                writing: false,
                finished: 0,
                last: None,
            }),
            done: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Returns once `covered` holds, or with the outcome of the write that
    /// was meant to make it hold.
    ///
    /// `covered(last_ok)` is asked under the lock (`last_ok`: no write has
    /// failed since the last success). If it does not hold and a write is in
    /// flight, this call joins it: when it ends, `covered` is asked again,
    /// and a failure of the joined write is this call's failure too. If no
    /// write is in flight (or the joined one succeeded without covering),
    /// this call leads `write`.
    pub(crate) fn ensure(
        &self,
        covered: impl Fn(bool) -> bool,
        write: impl FnOnce() -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
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
            if !state.writing {
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
            let ticket = state.finished;
            while state.writing && state.finished == ticket {
                state = self
                    .done
                    .wait(state)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            waited_for += 1;
        }
        self.lead_locked(state, write)
    }

    /// Leads `write` unless one is in flight; `None` (at once) if one is.
    pub(crate) fn try_lead(
        &self,
        write: impl FnOnce() -> Result<(), StoreError>,
    ) -> Option<Result<(), StoreError>> {
        let state = self.lock();
        if state.writing {
            return None;
        }
        Some(self.lead_locked(state, write))
    }

    /// Waits for the write in flight, if any, then leads `write` (for a
    /// write that must happen whatever the mark is, such as lowering it).
    pub(crate) fn lead(
        &self,
        write: impl FnOnce() -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut state = self.lock();
        while state.writing {
            state = self
                .done
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        self.lead_locked(state, write)
    }

    fn lead_locked(
        &self,
        mut state: MutexGuard<'_, State>,
        write: impl FnOnce() -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        state.writing = true;
        drop(state);
        // Ends the flight even if the store panics, so no caller waits for
        // a write that will never finish.
        let mut ending = Ending {
            flight: self,
            outcome: Err(StoreError::new(
                StoreErrorKind::Other,
                "the reservation store panicked",
            )),
        };
        ending.outcome = write();
        ending.outcome.clone()
    }

    /// The newest write's error, if the newest write failed.
    pub(crate) fn last_error(&self) -> Option<StoreError> {
        match &self.lock().last {
            Some(Err(e)) => Some(e.clone()),
            _ => None,
        }
    }
}

/// Ends the write in flight when dropped: records its outcome and wakes
/// every caller waiting for it.
struct Ending<'a> {
    flight: &'a Flight,
    outcome: Result<(), StoreError>,
}

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        let mut state = self.flight.lock();
        state.writing = false;
        state.finished += 1;
        state.last = Some(self.outcome.clone());
        drop(state);
        self.flight.done.notify_all();
    }
}
