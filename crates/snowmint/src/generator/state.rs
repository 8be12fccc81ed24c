//! The generator's state word: the last issued position, packed into one
//! `u64` so that one compare-and-swap moves it.
//!
//! Every read or write of the packing goes through [`State`]; no shift or
//! mask on the state word is written anywhere else. Under `--cfg loom` the
//! two words the hot path shares (the state and the reservation mark) are
//! loom's atomics, so `tests/loom.rs` model-checks the real code.

use core::fmt;
use std::sync::atomic::Ordering;

#[cfg(loom)]
use loom::sync::atomic::AtomicU64;
#[cfg(not(loom))]
use std::sync::atomic::AtomicU64;

use crate::layout::{MAX_DELTA_MS, MAX_SEQUENCE, SEQUENCE_BITS};

/// The reservation mark's cell: milliseconds since the epoch, not packed
/// (loom's atomic under `--cfg loom`).
pub(super) type AtomicMark = AtomicU64;

/// A (millisecond, sequence) position: `delta_ms << 12 | sequence`, where
/// `delta_ms` is milliseconds since the Twitter epoch (41 bits, so the word
/// never overflows) and `sequence` is 0..=4095.
///
/// The packing orders positions as (millisecond, sequence) does, so "the
/// state only increases" is a plain comparison of words.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(transparent)]
pub(super) struct State(u64);

impl State {
    /// Positions in one millisecond: 4096.
    pub(super) const PER_MS: u64 = MAX_SEQUENCE + 1;

    /// Not a position any generator holds (those are below 2^53): "none",
    /// for the claim loop, where an `Option<State>` would take one more
    /// register on the hot path.
    pub(super) const NONE: State = State(u64::MAX);

    /// The position (`delta_ms`, `sequence`); `delta_ms <= MAX_DELTA_MS` and
    /// `sequence <= 4095`.
    #[inline]
    pub(super) const fn new(delta_ms: u64, sequence: u64) -> State {
        debug_assert!(delta_ms <= MAX_DELTA_MS && sequence <= MAX_SEQUENCE);
        State((delta_ms << SEQUENCE_BITS) | sequence)
    }

    /// The last position of `delta_ms`: the whole millisecond counts as used.
    #[inline]
    pub(super) const fn end_of(delta_ms: u64) -> State {
        State::new(delta_ms, MAX_SEQUENCE)
    }

    /// The millisecond, since the Twitter epoch.
    #[inline]
    pub(super) const fn ms(self) -> u64 {
        self.0 >> SEQUENCE_BITS
    }

    /// The sequence within the millisecond, 0..=4095.
    #[inline]
    pub(super) const fn sequence(self) -> u64 {
        self.0 & MAX_SEQUENCE
    }

    /// How many positions of this millisecond come after this one.
    #[inline]
    pub(super) const fn left(self) -> u64 {
        MAX_SEQUENCE - self.sequence()
    }

    /// The word as stored in the atomic.
    #[inline]
    const fn pack(self) -> u64 {
        self.0
    }

    /// A word loaded from the atomic (every word stored there was packed by
    /// [`State::new`]).
    #[inline]
    const fn unpack(word: u64) -> State {
        State(word)
    }
}

impl fmt::Debug for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("State")
            .field("ms", &self.ms())
            .field("sequence", &self.sequence())
            .finish()
    }
}

/// An atomic [`State`]: the generator's state word.
#[repr(transparent)]
pub(super) struct AtomicState(AtomicU64);

impl AtomicState {
    pub(super) fn new(state: State) -> AtomicState {
        AtomicState(AtomicU64::new(state.pack()))
    }

    #[inline]
    pub(super) fn load(&self, order: Ordering) -> State {
        State::unpack(self.0.load(order))
    }

    /// As `AtomicU64::compare_exchange`: `Ok(current)` if the state was
    /// `current` and is now `new`, else `Err(actual)`.
    #[inline]
    pub(super) fn compare_exchange(
        &self,
        current: State,
        new: State,
        success: Ordering,
        failure: Ordering,
    ) -> Result<State, State> {
        self.0
            .compare_exchange(current.pack(), new.pack(), success, failure)
            .map(State::unpack)
            .map_err(State::unpack)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_word_is_ms_then_sequence() {
        let s = State::new(5, 7);
        assert_eq!(s.pack(), (5 << 12) | 7);
        assert_eq!((s.ms(), s.sequence(), s.left()), (5, 7, 4088));
        let end = State::end_of(MAX_DELTA_MS);
        assert_eq!(
            (end.ms(), end.sequence(), end.left()),
            (MAX_DELTA_MS, 4095, 0)
        );
        // 41 + 12 bits: the largest state fits with room to spare, so NONE
        // is none of them.
        assert!(end.pack() < 1 << 53);
        assert!(end < State::NONE);
        assert_eq!(State::PER_MS, 4096);
        assert_eq!(format!("{s:?}"), "State { ms: 5, sequence: 7 }");
    }

    #[test]
    fn the_atomic_swaps_only_from_the_value_held() {
        let cell = AtomicState::new(State::end_of(10));
        let old = cell.load(Ordering::Acquire);
        assert_eq!(old, State::end_of(10));
        let new = State::new(11, 0);
        let stale = State::new(10, 0);
        assert_eq!(
            cell.compare_exchange(stale, new, Ordering::SeqCst, Ordering::Acquire),
            Err(old)
        );
        assert_eq!(
            cell.compare_exchange(old, new, Ordering::SeqCst, Ordering::Acquire),
            Ok(old)
        );
        assert_eq!(cell.load(Ordering::Acquire), new);
    }

    proptest! {
        #[test]
        fn packing_round_trips_and_keeps_the_order(
            a in (0..=MAX_DELTA_MS, 0..=MAX_SEQUENCE),
            b in (0..=MAX_DELTA_MS, 0..=MAX_SEQUENCE),
        ) {
            let (sa, sb) = (State::new(a.0, a.1), State::new(b.0, b.1));
            prop_assert_eq!((sa.ms(), sa.sequence()), a);
            prop_assert_eq!(State::unpack(sa.pack()), sa);
            prop_assert_eq!(sa.cmp(&sb), a.cmp(&b));
        }
    }
}
