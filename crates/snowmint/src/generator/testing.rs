//! Helpers shared by the generator's unit tests.

use super::{Generator, GeneratorBuilder};
use crate::{ManualClock, MemoryStore, SnowflakeId};

/// 2023-11-14T22:13:20Z.
pub(super) const T: u64 = 1_700_000_000_000;

/// Builds on `clock` one millisecond before its current reading (the
/// build millisecond counts as used), so the first ID can be in the
/// millisecond the clock reads.
pub(super) fn built_before(clock: &ManualClock, builder: GeneratorBuilder) -> Generator {
    clock.rewind(1);
    let generator = builder.clock(clock.clone()).build().unwrap();
    clock.advance(1);
    generator
}

pub(super) fn manual(now: u64) -> (Generator, ManualClock) {
    let clock = ManualClock::new(now);
    let generator = built_before(&clock, Generator::builder(1, 2));
    (generator, clock)
}

/// A (0, 0) generator on `clock` that keeps its mark in `store`.
pub(super) fn stored(clock: &ManualClock, store: &MemoryStore) -> Generator {
    built_before(clock, Generator::builder(0, 0).store(store.clone()))
}

/// A fresh [`MemoryStore`], a clock at [`T`], and a [`stored`] generator
/// on them.
pub(super) fn stored_at_t() -> (Generator, ManualClock, MemoryStore) {
    stored_at_t_with(|builder| builder)
}

/// [`stored_at_t`] with the builder's other options set by `configure`.
pub(super) fn stored_at_t_with(
    configure: impl FnOnce(GeneratorBuilder) -> GeneratorBuilder,
) -> (Generator, ManualClock, MemoryStore) {
    let store = MemoryStore::new();
    let clock = ManualClock::new(T);
    let generator = built_before(
        &clock,
        configure(Generator::builder(0, 0).store(store.clone())),
    );
    (generator, clock, store)
}

pub(super) fn parts(id: SnowflakeId) -> (u64, u16) {
    (id.timestamp_ms(), id.sequence())
}
