//! The generator's state word: the last issued position, packed into one
//! `u64` so that one compare-and-swap moves it.
//!
//! Every read or write of the packing goes through [`PackedState`] (public,
//! for minters that keep their state word elsewhere, in any layout) and the
//! generator's view of it in Twitter's layout, [`State`]; no shift or mask
//! on a state word is written anywhere else. Under `--cfg loom` the two
//! words the hot path shares (the state and the reservation mark) are
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

/// A minting position, (time unit, sequence), packed into one `u64` as
/// `unit << sequence_bits | sequence`, so that one compare-and-swap moves
/// it: the packing the [`Generator`](crate::Generator) keeps its state word
/// in (with Twitter's 12 sequence bits), model-checked with loom.
///
/// It is public for minters that keep their state word elsewhere, in any
/// layout: `sequence_bits` is the layout's
/// [`sequence_bits`](crate::Layout::sequence_bits), the same for every call
/// on one word. The word orders positions as (unit, sequence) does, so
/// "the state only increases" is a plain comparison of words (or of
/// `PackedState`s).
///
/// ```
/// use snowmint::{Layout, PackedState};
///
/// let bits = Layout::TWITTER.sequence_bits();
/// let state = PackedState::new(5, 7, bits);
/// assert_eq!(state.word(), 5 << 12 | 7);
/// assert_eq!((state.unit(bits), state.sequence(bits)), (5, 7));
/// assert_eq!(PackedState::from_word(state.word()), state);
/// // The last position of unit 5 comes before the first of unit 6.
/// let end = PackedState::end_of(5, bits);
/// assert_eq!(end.sequence(bits), 4095);
/// assert!(state < end && end < PackedState::new(6, 0, bits));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct PackedState(u64);

impl PackedState {
    /// The position (`unit`, `sequence`): `sequence` must fit in
    /// `sequence_bits` (below 64) and `unit` in the bits above them
    /// (checked in debug builds).
    #[inline]
    pub const fn new(unit: u64, sequence: u64, sequence_bits: u32) -> PackedState {
        debug_assert!(
            sequence_bits < 64
                && sequence <= max_sequence(sequence_bits)
                && unit <= u64::MAX >> sequence_bits
        );
        PackedState((unit << sequence_bits) | sequence)
    }

    /// The last position of `unit`: the whole unit counts as used.
    #[inline]
    pub const fn end_of(unit: u64, sequence_bits: u32) -> PackedState {
        PackedState::new(unit, max_sequence(sequence_bits), sequence_bits)
    }

    /// The time unit.
    #[inline]
    pub const fn unit(self, sequence_bits: u32) -> u64 {
        self.0 >> sequence_bits
    }

    /// The sequence within the unit, `0..=2^sequence_bits - 1`.
    #[inline]
    pub const fn sequence(self, sequence_bits: u32) -> u64 {
        self.0 & max_sequence(sequence_bits)
    }

    /// The word, as stored in an atomic.
    #[inline]
    pub const fn word(self) -> u64 {
        self.0
    }

    /// A word loaded from an atomic, as [`word`](PackedState::word) gave
    /// it.
    #[inline]
    pub const fn from_word(word: u64) -> PackedState {
        PackedState(word)
    }
}

impl fmt::Debug for PackedState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PackedState")
            .field(&format_args!("{:#x}", self.0))
            .finish()
    }
}

/// The largest sequence of `bits` bits (0 for none).
#[inline]
const fn max_sequence(bits: u32) -> u64 {
    if bits == 0 {
        0
    } else {
        u64::MAX >> (64 - bits)
    }
}

/// The generator's position, a [`PackedState`] in Twitter's layout:
/// `delta_ms << 12 | sequence`, where `delta_ms` is milliseconds since the
/// Twitter epoch (41 bits, so the word never overflows) and `sequence` is
/// 0..=4095.
///
/// The packing orders positions as (millisecond, sequence) does, so "the
/// state only increases" is a plain comparison of words.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(transparent)]
pub(super) struct State(PackedState);

impl State {
    /// Positions in one millisecond: 4096.
    pub(super) const PER_MS: u64 = MAX_SEQUENCE + 1;

    /// Not a position any generator holds (those are below 2^53): "none",
    /// for the claim loop, where an `Option<State>` would take one more
    /// register on the hot path.
    pub(super) const NONE: State = State(PackedState::from_word(u64::MAX));

    /// The position (`delta_ms`, `sequence`); `delta_ms <= MAX_DELTA_MS` and
    /// `sequence <= 4095`.
    #[inline]
    pub(super) const fn new(delta_ms: u64, sequence: u64) -> State {
        debug_assert!(delta_ms <= MAX_DELTA_MS && sequence <= MAX_SEQUENCE);
        State(PackedState::new(delta_ms, sequence, SEQUENCE_BITS))
    }

    /// The last position of `delta_ms`: the whole millisecond counts as used.
    #[inline]
    pub(super) const fn end_of(delta_ms: u64) -> State {
        State::new(delta_ms, MAX_SEQUENCE)
    }

    /// The millisecond, since the Twitter epoch.
    #[inline]
    pub(super) const fn ms(self) -> u64 {
        self.0.unit(SEQUENCE_BITS)
    }

    /// The sequence within the millisecond, 0..=4095.
    #[inline]
    pub(super) const fn sequence(self) -> u64 {
        self.0.sequence(SEQUENCE_BITS)
    }

    /// How many positions of this millisecond come after this one.
    #[inline]
    pub(super) const fn left(self) -> u64 {
        MAX_SEQUENCE - self.sequence()
    }

    /// The word as stored in the atomic.
    #[inline]
    const fn pack(self) -> u64 {
        self.0.word()
    }

    /// A word loaded from the atomic (every word stored there was packed by
    /// [`State::new`]).
    #[inline]
    const fn unpack(word: u64) -> State {
        State(PackedState::from_word(word))
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

    #[test]
    fn a_packed_state_packs_any_width_of_sequence() {
        // Sonyflake's 8 bits, none, and the widest a layout can have.
        let s = PackedState::new(5, 7, 8);
        assert_eq!(s.word(), (5 << 8) | 7);
        assert_eq!((s.unit(8), s.sequence(8)), (5, 7));
        assert_eq!(PackedState::end_of(5, 8).sequence(8), 255);
        let none = PackedState::end_of(9, 0);
        assert_eq!((none.word(), none.unit(0), none.sequence(0)), (9, 9, 0));
        let wide = PackedState::end_of(1, 63);
        assert_eq!((wide.unit(63), wide.sequence(63)), (1, u64::MAX >> 1));
        assert_eq!(format!("{s:?}"), "PackedState(0x507)");
        // The generator's State is the packing with Twitter's 12 bits.
        assert_eq!(State::new(5, 7).0, PackedState::new(5, 7, SEQUENCE_BITS));
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

        #[test]
        fn a_packed_state_round_trips_and_keeps_the_order_in_any_width(
            bits in 0u32..64,
            a in any::<(u64, u64)>(),
            b in any::<(u64, u64)>(),
        ) {
            let fit = |(unit, sequence): (u64, u64)| (unit >> bits, sequence & max_sequence(bits));
            let (a, b) = (fit(a), fit(b));
            let (sa, sb) = (PackedState::new(a.0, a.1, bits), PackedState::new(b.0, b.1, bits));
            prop_assert_eq!((sa.unit(bits), sa.sequence(bits)), a);
            prop_assert_eq!(PackedState::from_word(sa.word()), sa);
            prop_assert_eq!(sa.cmp(&sb), a.cmp(&b));
        }
    }
}
