//! Many threads sharing one generator: every ID unique, each thread's IDs
//! strictly increasing, on the real clock and on a clock that keeps stepping
//! back.
#![cfg(not(loom))]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use snowmint::{GenerateError, Generator, ManualClock, MemoryStore, SnowflakeId};

const THREADS: usize = 4;

/// Runs `THREADS` threads that each take `per_thread` IDs from `mint`, checks
/// each thread's IDs strictly increase, and returns them all.
fn mint_concurrently(
    generator: &Arc<Generator>,
    per_thread: usize,
    batch: bool,
) -> Vec<SnowflakeId> {
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let g = Arc::clone(generator);
            thread::spawn(move || {
                let mut ids = Vec::with_capacity(per_thread);
                while ids.len() < per_thread {
                    // Odd threads take batches of varying size when asked.
                    if batch && t % 2 == 1 {
                        let want = (per_thread - ids.len()).min(1 + ids.len() % 700);
                        ids.extend(g.next_ids(want).expect("batch"));
                    } else {
                        ids.push(g.next_id().expect("next_id"));
                    }
                }
                for w in ids.windows(2) {
                    assert!(w[0] < w[1], "thread {t}: {} then {}", w[0], w[1]);
                }
                ids
            })
        })
        .collect();
    handles
        .into_iter()
        .flat_map(|h| h.join().expect("thread panicked"))
        .collect()
}

fn assert_unique(mut all: Vec<SnowflakeId>, expected: usize) {
    assert_eq!(all.len(), expected);
    all.sort_unstable();
    let before = all.len();
    all.dedup();
    assert_eq!(all.len(), before, "{} duplicates", before - all.len());
}

#[test]
fn threads_on_the_system_clock_never_share_an_id() {
    let g = Arc::new(Generator::new(7, 9).unwrap());
    let per_thread = 750_000;
    let all = mint_concurrently(&g, per_thread, false);
    assert!(
        all.iter()
            .all(|id| (id.datacenter(), id.worker()) == (7, 9))
    );
    assert_unique(all, THREADS * per_thread);
    assert_eq!(g.metrics().ids_issued, (THREADS * per_thread) as u64);
}

#[test]
fn threads_mixing_batches_with_a_store_never_share_an_id() {
    let store = MemoryStore::new();
    let g = Arc::new(
        Generator::builder(1, 1)
            .store(store.clone())
            .reserve_window_ms(20)
            .build()
            .unwrap(),
    );
    let per_thread = 400_000;
    let all = mint_concurrently(&g, per_thread, true);
    let newest = all.iter().map(|id| id.timestamp_ms()).max().unwrap();
    assert!(
        store.mark().unwrap() >= newest,
        "every ID is covered by the mark"
    );
    assert!(store.writes() > 1);
    assert_unique(all, THREADS * per_thread);
}

#[test]
fn threads_on_a_clock_that_keeps_stepping_back_never_share_an_id() {
    let start = 1_700_000_000_000;
    let clock = ManualClock::new(start);
    let g = Arc::new(
        Generator::builder(2, 3)
            .clock(clock.clone())
            .max_borrow_ms(5)
            .build()
            .unwrap(),
    );
    // A chaos thread moves the clock forward and back while the others mint.
    let stop = Arc::new(AtomicBool::new(false));
    let chaos = {
        let (clock, stop) = (clock.clone(), Arc::clone(&stop));
        thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                if i % 3 == 0 {
                    clock.rewind(i % 7);
                } else {
                    clock.advance(i % 4);
                }
                thread::yield_now();
            }
        })
    };
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let g = Arc::clone(&g);
            thread::spawn(move || {
                let mut ids: Vec<SnowflakeId> = Vec::new();
                let mut errors = 0;
                while ids.len() < 100_000 {
                    match g.next_id() {
                        Ok(id) => ids.push(id),
                        Err(GenerateError::ClockBehind { .. }) => errors += 1,
                        Err(e) => panic!("unexpected error: {e}"),
                    }
                }
                assert!(ids.windows(2).all(|w| w[0] < w[1]));
                (ids, errors)
            })
        })
        .collect();
    let mut all = Vec::new();
    for h in handles {
        let (ids, _errors) = h.join().unwrap();
        all.extend(ids);
    }
    stop.store(true, Ordering::Relaxed);
    chaos.join().unwrap();
    assert_unique(all, THREADS * 100_000);
    assert!(g.metrics().clock_regressions > 0, "the chaos was seen");
}
