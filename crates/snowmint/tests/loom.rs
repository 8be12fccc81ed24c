//! Model checks of the generator's compare-and-swap with `loom`, which runs
//! every interleaving of the threads' atomic operations.
//!
//! Run with:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test -p snowmint --release --test loom
//! ```
//!
//! Under `--cfg loom` the generator's state word, its reservation mark and its
//! lock are loom's types (the metrics counters stay plain atomics: they order
//! nothing). The clock is a `ManualClock`, so "wait for the next millisecond"
//! is a step of the model, not a sleep.
#![cfg(loom)]

use std::sync::Arc;

use loom::thread;
use snowmint::{Generator, ManualClock, MemoryStore, SnowflakeId};

const T: u64 = 1_700_000_000_000;

/// A generator built one millisecond before the clock's reading (the build
/// millisecond counts as used), so it issues in the millisecond the clock reads.
fn generator(clock: &ManualClock, store: Option<&MemoryStore>) -> Arc<Generator> {
    let b = Generator::builder(0, 0).clock(clock.clone());
    let b = match store {
        Some(s) => b.store(s.clone()),
        None => b,
    };
    clock.rewind(1);
    let g = Arc::new(b.build().unwrap());
    clock.advance(1);
    g
}

fn assert_unique(mut ids: Vec<SnowflakeId>) {
    let n = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n, "duplicate ID");
}

/// Two threads race for the last ID of a millisecond and across the boundary
/// into the next: the one that loses the swap must wait and take the next
/// millisecond, never the same position.
#[test]
fn racing_across_a_millisecond_boundary() {
    loom::model(|| {
        let clock = ManualClock::new(T);
        let g = generator(&clock, None);
        assert_eq!(g.next_ids(4095).unwrap().len(), 4095); // one left in T
        let g2 = Arc::clone(&g);
        let other = thread::spawn(move || [g2.next_id().unwrap(), g2.next_id().unwrap()]);
        let mine = [g.next_id().unwrap(), g.next_id().unwrap()];
        let theirs = other.join().unwrap();
        assert!(mine[0] < mine[1] && theirs[0] < theirs[1]);
        let all = vec![mine[0], mine[1], theirs[0], theirs[1]];
        assert_eq!(all.iter().filter(|id| id.timestamp_ms() == T).count(), 1);
        assert_unique(all);
    });
}

/// A batch and single IDs race: the batch's range and the singles never
/// overlap.
#[test]
fn a_batch_racing_single_ids() {
    loom::model(|| {
        let clock = ManualClock::new(T);
        let g = generator(&clock, None);
        let g2 = Arc::clone(&g);
        let other = thread::spawn(move || g2.next_ids(3).unwrap());
        let mine = [g.next_id().unwrap(), g.next_id().unwrap()];
        let batch = other.join().unwrap();
        let mut all: Vec<_> = batch.into_iter().collect();
        all.extend(mine);
        assert_unique(all);
    });
}

/// A graceful shutdown lowers the mark while another thread mints: whatever
/// the interleaving, the stored mark ends at or above every issued ID's
/// millisecond (no ID escapes the reservation).
#[test]
fn lowering_the_mark_while_minting() {
    loom::model(|| {
        let clock = ManualClock::new(T);
        let store = MemoryStore::new();
        let g = generator(&clock, Some(&store));
        let first = g.next_id().unwrap();
        let g2 = Arc::clone(&g);
        let clock2 = clock.clone();
        let other = thread::spawn(move || {
            clock2.advance(1);
            g2.next_id().unwrap()
        });
        g.persist_last_issued().unwrap();
        let second = other.join().unwrap();
        assert!(second > first);
        let mark = store.mark().unwrap();
        assert!(
            mark >= second.timestamp_ms(),
            "mark {mark} below {second:?}"
        );
    });
}

/// Two threads need a new mark at once: they share one write (its outcome
/// answers both), and whatever the interleaving both IDs are covered.
#[test]
fn two_callers_share_one_reservation_write() {
    loom::model(|| {
        let clock = ManualClock::new(T);
        let store = MemoryStore::new();
        let g = generator(&clock, Some(&store));
        let g2 = Arc::clone(&g);
        let other = thread::spawn(move || g2.next_id().unwrap());
        let mine = g.next_id().unwrap();
        let theirs = other.join().unwrap();
        assert_ne!(mine, theirs);
        assert!(store.mark().unwrap() >= mine.timestamp_ms().max(theirs.timestamp_ms()));
        assert!(store.writes() <= 2);
    });
}
