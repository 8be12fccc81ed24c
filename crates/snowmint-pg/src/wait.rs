//! The waits of the extension: on the backend's latch, a millisecond at a
//! time, each ended by a cancel, `statement_timeout` or a shutdown
//! (`CHECK_FOR_INTERRUPTS`), none longer than [`MAX_MARK_WAIT`].

use std::time::Duration;

use pgrx::pg_sys;
use snowmint::DEFAULT_STORE_TIMEOUT;

use crate::clock;

/// How long a call waits for a background worker (a mark written, or the
/// start decided) before it is refused.
pub const MAX_MARK_WAIT: Duration = DEFAULT_STORE_TIMEOUT;

/// Sleeps on this backend's latch for at most `ms` (woken by any signal).
pub fn sleep_on_latch(ms: i64) {
    // SAFETY: the backend's own latch, as PostgreSQL's own waits use it.
    unsafe {
        pg_sys::WaitLatch(
            pg_sys::MyLatch,
            (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
            ms as _,
            pg_sys::PG_WAIT_EXTENSION,
        );
        pg_sys::ResetLatch(pg_sys::MyLatch);
    }
}

/// Waits until `done` holds, at most [`MAX_MARK_WAIT`]; a cancel,
/// `statement_timeout` or a shutdown ends it (as an SQL error). Returns
/// whether `done` held.
pub fn wait_until(done: impl Fn() -> bool) -> bool {
    let start = clock::monotonic_ns();
    loop {
        if done() {
            return true;
        }
        if Duration::from_nanos(clock::monotonic_ns() - start) >= MAX_MARK_WAIT {
            return false;
        }
        sleep_on_latch(1);
        pgrx::check_for_interrupts!();
    }
}
