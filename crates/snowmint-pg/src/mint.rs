//! `snowmint.nextval()`: IDs minted by the server.
//!
//! Every backend claims positions from one state word per layout in shared
//! memory (`shared.rs`, invariants 1 to 4), reading one clock
//! (`clock.rs`). Uniqueness rests on the compare-and-swap alone, never on
//! the clock; the clock only decides which time unit an ID carries.
//!
//! - At most `2^sequence_bits` IDs per time unit (4096 per millisecond in
//!   Twitter's layout): when a unit's sequence is used up, the call waits
//!   for the next unit, at most [`snowmint::DEFAULT_MAX_WAIT`], then refuses.
//! - No ID is returned before the durable mark covers its time; the mark is
//!   raised [`snowmint::DEFAULT_RESERVE_WINDOW_MS`] ahead, by the first
//!   backend to come within half a window of it (so a write blocks callers
//!   only after the server was idle, or at start).

use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::time::Duration;

use pgrx::prelude::*;
use snowmint::{DEFAULT_MAX_WAIT, DEFAULT_RESERVE_WINDOW_MS, Identity, Layout, PackedState};

use crate::clock;
use crate::error::{Refusal, or_raise};
use crate::identity;
use crate::layouts;
use crate::shared::{self, Hot};

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
/// one returned before, not across crashes and restarts with the clock set
/// back.
///
/// Needs `shared_preload_libraries = 'snowmint'` and the settings
/// `snowmint.datacenter` and `snowmint.worker`; refused on a standby.
#[pg_extern(volatile, parallel_unsafe)]
fn nextval(layout: default!(&str, "'twitter'")) -> i64 {
    or_raise(next_id(layout))
}

fn next_id(text: &str) -> Result<i64, Refusal> {
    let hot = shared::hot()?;
    // SAFETY: a plain query of the server's state, valid in any backend.
    if unsafe { pg_sys::RecoveryInProgress() } {
        return Err(Refusal::ReadOnly);
    }
    let identity = identity::current()?;
    let minter = minter(hot, text, identity)?;
    claim(hot, &minter)
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
    let slot = shared::slot(hot, &layout)?;
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

/// The identity's datacenter and worker in `layout`'s slots, checked by the
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

/// Claims the next position of the minter's slot and makes it an ID.
fn claim(hot: &Hot, m: &Minter) -> Result<i64, Refusal> {
    let layout = &m.layout;
    let state = &hot.states[m.slot];
    let bits = layout.sequence_bits();
    let max_seq = layout.max_sequence();
    let mut waited_since = None;
    let next = loop {
        let cur = PackedState::from_word(state.load(Ordering::Acquire));
        let now_unit = unit_of(layout, hot.clock.now_ms()?)?;
        let (last, seq) = (cur.unit(bits), cur.sequence(bits));
        let next = if now_unit > last {
            PackedState::new(now_unit, 0, bits)
        } else if seq < max_seq {
            PackedState::new(last, seq + 1, bits)
        } else {
            // The unit's sequence is used up: wait for the next unit.
            let start = *waited_since.get_or_insert_with(clock::monotonic_ns);
            let waited = Duration::from_nanos(clock::monotonic_ns() - start);
            if waited >= DEFAULT_MAX_WAIT {
                return Err(Refusal::Limit(format!(
                    "snowmint.nextval(): the {} IDs of a time unit are used up and the clock \
                     did not reach the next unit within {} ms",
                    max_seq + 1,
                    DEFAULT_MAX_WAIT.as_millis()
                )));
            }
            // A cancel or statement_timeout ends the wait (no lock is held).
            pgrx::check_for_interrupts!();
            std::thread::yield_now();
            continue;
        };
        if state
            .compare_exchange_weak(cur.word(), next.word(), Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            break next;
        }
    };
    let (unit, seq) = (next.unit(bits), next.sequence(bits));
    let ms = layout.epoch_ms() + unit * layout.unit_ms();
    let reserved = hot.reserved_until.load(Ordering::SeqCst);
    if ms > reserved {
        shared::reserve(hot, ms, DEFAULT_RESERVE_WINDOW_MS)?;
    } else if ms + DEFAULT_RESERVE_WINDOW_MS / 2 > reserved {
        shared::renew(hot, ms + DEFAULT_RESERVE_WINDOW_MS)?;
    }
    let id = (unit << layout.timestamp_shift()) | m.node | (seq << layout.sequence_shift());
    Ok(id as i64)
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
