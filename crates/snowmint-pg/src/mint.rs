//! `snowmint.nextval()`: IDs minted by the server.
//!
//! Every backend claims IDs from one state word per layout geometry in
//! shared memory (`shared.rs`, invariants 1 to 4), the last ID issued.
//! Uniqueness and order rest on the compare-and-swap alone, never on the
//! clock; the clock only decides which time unit an ID carries.
//!
//! - **Claim order is ID order.** A claim with the same node bits as the last
//!   takes the next sequence of its unit; with other node bits (the identity
//!   settings were reloaded, in this backend or another) it moves to the next
//!   unit. So an ID claimed later is never lower, whatever the identity
//!   settings do meanwhile.
//! - **Bounded lead** (`clock.rs`): IDs follow the wall clock; when it is
//!   behind, a used-up unit is followed by the next as long as that stays
//!   within the wall clock plus [`snowmint::DEFAULT_MAX_BORROW_MS`] or the
//!   reach; a used-up unit at the wall clock's own unit waits for the next
//!   one. A wait lasts at most [`snowmint::DEFAULT_MAX_WAIT`], then the call
//!   is refused.
//! - **Marks before IDs.** No ID is returned before the cluster mark (the
//!   file, written by the mark writer) and the database's mark (the
//!   WAL-logged sequence `snowmint.mark`) both cover its time. Both are
//!   raised [`snowmint::DEFAULT_RESERVE_WINDOW_MS`] ahead; the cluster mark
//!   by the first backend to come within half a window of it, without
//!   waiting, the database's mark so too in a transaction that already has
//!   a transaction ID (else when an ID needs it). A call
//!   waits only after the server was idle, at a start, or while the disk
//!   does not answer, and never on a lock of ours held across a file
//!   operation. A call its marks already cover never fails because a
//!   renewal ahead of need did.
//! - **No wait of ours that nothing bounds or cancels.** Every wait polls
//!   the backend's latch and `CHECK_FOR_INTERRUPTS`: `pg_cancel_backend`,
//!   `statement_timeout` and a shutdown end it at once; a mark the writer has
//!   not written within 2 s (`wait::MAX_MARK_WAIT`) is refused (`58030`).

use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::time::Duration;

use pgrx::pg_sys;
use pgrx::prelude::*;
use snowmint::{DEFAULT_MAX_WAIT, Identity, Layout};

use crate::clock::{self, BORROW_MS, WINDOW_MS};
use crate::dbmark;
use crate::error::{Refusal, or_raise};
use crate::identity;
use crate::layouts;
use crate::lease;
use crate::shared::{self, Hot};
use crate::wait::{MAX_MARK_WAIT, sleep_on_latch, wait_until};

/// What a backend keeps about the layout it last minted in.
#[derive(Clone)]
struct Minter {
    text: String,
    layout: Layout,
    slot: usize,
    identity: Identity,
    /// The identity's bits, in place.
    node: u64,
}

thread_local! {
    static LAST: RefCell<Option<Minter>> = const { RefCell::new(None) };
}

/// A fresh ID in `layout` (a preset name or a spec; Twitter's by default):
/// greater than every ID any backend of this server returned before, never
/// one returned before, not across crashes, restarts with the clock set
/// back, failovers to a standby, point-in-time recovery or a dump restored.
///
/// Needs `shared_preload_libraries = 'snowmint'` and the settings
/// `snowmint.datacenter` and `snowmint.worker`, or a leased identity
/// (`snowmint.coordinator`: refused while the lease's fence is closed);
/// refused on a standby and in a read-only transaction.
#[pg_extern(volatile, parallel_unsafe)]
fn nextval(layout: default!(&str, "'twitter'")) -> i64 {
    or_raise(next_id(layout))
}

fn next_id(text: &str) -> Result<i64, Refusal> {
    // SAFETY: plain reads of the server's and the transaction's state,
    // valid in any backend.
    if unsafe { pg_sys::RecoveryInProgress() } {
        return Err(Refusal::ReadOnly);
    }
    if unsafe { pg_sys::XactReadOnly } {
        return Err(Refusal::ReadOnlyTransaction);
    }
    let hot = shared::hot()?;
    let current = identity::current()?;
    let minter = minter(hot, text, current.identity)?;
    dbmark::seen(|mark| shared::raise_floor(hot, mark))?;
    let (id, ms) = claim(hot, &minter)?;
    cover(hot, ms)?;
    if let Some(held) = current.lease {
        // The coordinator's mark of the leased identity too, then the
        // fence once more, just before the ID is returned (`lease.rs`).
        lease::cover(hot, held, ms, mark_for(ms, clock::wall_ms()?))?;
        lease::recheck(hot, held)?;
    }
    Ok(id as i64)
}

/// The backend's minter for `text` and `identity`, made on first use.
fn minter(hot: &Hot, text: &str, identity: Identity) -> Result<Minter, Refusal> {
    if let Some(m) = LAST.with_borrow(|last| {
        last.as_ref()
            .filter(|m| m.text == text && m.identity == identity)
            .cloned()
    }) {
        return Ok(m);
    }
    let layout = layouts::parse(text)?;
    let node = node_bits(&layout, identity)?;
    let slot = shared::slot(hot, &layout, || layouts::may_take_slot(text, &layout))?;
    let m = Minter {
        text: text.to_owned(),
        layout,
        slot,
        identity,
        node,
    };
    LAST.set(Some(m.clone()));
    Ok(m)
}

/// The identity's datacenter and worker in `layout`'s places, checked by the
/// core against the layout's ranges.
fn node_bits(layout: &Layout, identity: Identity) -> Result<u64, Refusal> {
    let id = layout
        .compose(
            layout.min_timestamp_ms(),
            u64::from(identity.datacenter()),
            u64::from(identity.worker()),
            0,
        )
        .map_err(|e| {
            Refusal::Setup(format!(
                "snowmint.nextval() cannot mint as {identity} in layout {}: {e}",
                layout.name()
            ))
        })?;
    Ok(id.get())
}

/// Claims the next ID of the minter's slot; returns it and its time (Unix
/// ms, the start of its unit).
fn claim(hot: &Hot, m: &Minter) -> Result<(u64, u64), Refusal> {
    let layout = &m.layout;
    let state = &hot.states[m.slot];
    let (time_shift, seq_shift) = (layout.timestamp_shift(), layout.sequence_shift());
    let max_seq = layout.max_sequence();
    let node_mask = shared::node_mask(layout);
    let max_unit = shared::max_unit(layout);
    let borrow_units = BORROW_MS.div_ceil(layout.unit_ms());
    let compose = |unit: u64, seq: u64| (unit << time_shift) | m.node | (seq << seq_shift);
    let mut waited_since = None;
    let next = loop {
        let cur = state.load(Ordering::Acquire);
        let wall = clock::wall_ms()?;
        hot.reach.track(wall);
        let now_unit = unit_of(layout, wall)?;
        let last = cur >> time_shift;
        let same_node = cur & node_mask == m.node;
        let seq = (cur >> seq_shift) & max_seq;
        let next = if now_unit > last {
            compose(now_unit, 0)
        } else if same_node && seq < max_seq {
            compose(last, seq + 1)
        } else {
            // The unit is used up (or was last claimed with other node bits):
            // the next unit, if the clock lets it be taken now.
            let unit = last + 1;
            if unit > max_unit {
                return Err(time_refusal(layout, unit));
            }
            let reach = unit_of(layout, hot.reach.now_ms()).unwrap_or(0);
            let limit = (now_unit + borrow_units).max(reach);
            if (same_node && now_unit == last) || unit > limit {
                let start = *waited_since.get_or_insert_with(clock::monotonic_ns);
                let waited = Duration::from_nanos(clock::monotonic_ns() - start);
                if waited >= DEFAULT_MAX_WAIT {
                    return Err(behind_refusal(layout, last, now_unit, waited));
                }
                pause(unit > now_unit + 1);
                continue;
            }
            compose(unit, 0)
        };
        if state
            .compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            break next;
        }
    };
    let ms = layout.epoch_ms() + (next >> time_shift) * layout.unit_ms();
    Ok((next, ms))
}

/// Waits a little for the clock: a short spin for the next unit, a 1 ms
/// sleep on the latch for longer; a cancel, `statement_timeout` or a
/// shutdown ends the wait either way.
fn pause(long: bool) {
    if long {
        sleep_on_latch(1);
    } else {
        std::thread::yield_now();
    }
    pgrx::check_for_interrupts!();
}

/// The mark to ask for when an ID of time `ms` needs one, the wall clock at
/// `wall`: a window past the ID, but counted from no further ahead than the
/// borrowing bound, so that a start (which begins above the mark) followed
/// by a crash does not push the next start's floor a window further each
/// time.
fn mark_for(ms: u64, wall: u64) -> u64 {
    (ms.min(wall.saturating_add(BORROW_MS)) + WINDOW_MS).max(ms)
}

/// Makes sure both marks cover `ms` before the ID is returned, and renews
/// them ahead of need.
///
/// The database's mark is renewed ahead of need only in a transaction that
/// already has a transaction ID (an `INSERT` that wrote a row): `setval`
/// gives its transaction one, and a transaction with one waits for its WAL
/// to be flushed at commit, which a bare `SELECT snowmint.nextval()` whose
/// ID was covered must not do. Elsewhere it is raised when an ID needs it.
fn cover(hot: &Hot, ms: u64) -> Result<(), Refusal> {
    let target = mark_for(ms, clock::wall_ms()?);
    let reserved = hot.reserved_until.load(Ordering::SeqCst);
    if ms + WINDOW_MS / 2 > reserved {
        ask(hot, target);
    }
    if ms > reserved && !wait_until(|| hot.reserved_until.load(Ordering::SeqCst) >= ms) {
        return Err(Refusal::Store(format!(
            "snowmint.nextval(): the mark covering {ms} (Unix ms) was not written within {} ms \
             by the mark writer (background worker \"snowmint mark writer\"): is the data \
             directory's disk stalled? Nothing was returned; minting resumes once the write \
             completes",
            MAX_MARK_WAIT.as_millis()
        )));
    }
    let seen = dbmark::seen(|_| ())?;
    if ms > seen {
        dbmark::raise(target, true)?;
    } else if ms + WINDOW_MS / 2 > seen && has_transaction_id() {
        // Ahead of need: skipped if another backend holds the sequence.
        dbmark::raise(target, false)?;
    }
    Ok(())
}

/// Whether the current transaction has a transaction ID already.
fn has_transaction_id() -> bool {
    // SAFETY: a plain read of the transaction's state.
    unsafe { pg_sys::GetTopTransactionIdIfAny() != pg_sys::InvalidTransactionId }
}

/// Asks the mark writer for a mark of at least `until_ms`.
fn ask(hot: &Hot, until_ms: u64) {
    if hot.wanted.fetch_max(until_ms, Ordering::SeqCst) >= until_ms {
        return;
    }
    let latch = hot.writer_latch.load(Ordering::Acquire);
    if latch != 0 {
        // SAFETY: the writer's latch in shared memory, published while it
        // runs; setting a latch of a process that has exited is harmless
        // (PGPROC entries stay mapped).
        unsafe { pg_sys::SetLatch(latch as *mut pg_sys::Latch) };
    }
}

/// The time unit of `ms` in `layout`, or the refusal when the clock is
/// outside the layout's time.
fn unit_of(layout: &Layout, ms: u64) -> Result<u64, Refusal> {
    if ms < layout.min_timestamp_ms() || ms > layout.max_timestamp_ms() {
        return Err(Refusal::Limit(format!(
            "snowmint.nextval(): the clock ({ms} Unix ms) is outside layout {}'s time, \
             {}..={}",
            layout.name(),
            layout.min_timestamp_ms(),
            layout.max_timestamp_ms()
        )));
    }
    Ok((ms - layout.epoch_ms()) / layout.unit_ms())
}

fn time_refusal(layout: &Layout, unit: u64) -> Refusal {
    Refusal::Limit(format!(
        "snowmint.nextval(): layout {}'s time ends at {} (Unix ms); its last unit is used up \
         (unit {unit} is past it)",
        layout.name(),
        layout.max_timestamp_ms()
    ))
}

fn behind_refusal(layout: &Layout, last: u64, now: u64, waited: Duration) -> Refusal {
    let unit_ms = layout.unit_ms();
    if last <= now {
        Refusal::Limit(format!(
            "snowmint.nextval(): the {} IDs of a time unit are used up and the clock did not \
             reach the next unit within {} ms",
            layout.max_sequence() + 1,
            DEFAULT_MAX_WAIT.as_millis()
        ))
    } else {
        Refusal::Limit(format!(
            "snowmint.nextval(): the IDs issued run {} ms ahead of the clock (a clock stepped \
             back, or a start below the last mark), more than the {BORROW_MS} ms IDs may be \
             borrowed ahead and the reach allows now; waited {} ms",
            (last - now) * unit_ms,
            waited.as_millis()
        ))
    }
}
