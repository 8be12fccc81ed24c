//! The generator side by side with the peer crates `snowflaked` (its `sync`
//! generator) and `rs-snowflake` (`real_time_generate`, the variant that
//! follows the clock).
//!
//! ```text
//! cargo bench -p snowmint --features tsc --bench generator -- --measurement-time 3
//! ```
//!
//! - `clock/*`: what one clock read costs (the floor of one `next_id`):
//!   `std`'s `Instant` and `SystemTime`, `quanta`'s, and `SystemClock` on
//!   `Instant` (`-std`) and, with the `tsc` feature, on the counter (`-tsc`).
//! - `uncontended/*`: one call, never waiting: timed in chunks of 1000 calls
//!   that each start at a fresh millisecond, so no chunk runs into the
//!   4096-per-millisecond limit (a plain loop would measure the limit, not
//!   the call).
//! - `throughput-1-thread/*`, `throughput-2-threads/*`: 40,960 IDs (10 ms at
//!   the limit) per iteration, at full speed; criterion's element rate is
//!   IDs/s, to compare with the limit of 4,096,000/s. `rs-snowflake` needs
//!   `&mut`, so 2 threads share it through a `Mutex`.
//! - `batch/*`: one `next_ids(4096)` and reading its IDs, per ID.
//!
//! CPU time per second of minting is not something criterion reports: see
//! `examples/throughput.rs`.

use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use criterion::measurement::WallTime;
use criterion::{
    BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main,
};
use snowmint::{Clock, Generator, ManualClock, SystemClock};

mod support;
use support::{chunked, fresh_millisecond};

/// IDs per throughput iteration: 10 ms at the format's limit.
const PER_ITER: u64 = 40_960;

fn clock(c: &mut Criterion) {
    let mut g = c.benchmark_group("clock");
    g.bench_function("Instant::now", |b| b.iter(Instant::now));
    g.bench_function("SystemTime::now", |b| b.iter(SystemTime::now));
    let q = quanta::Clock::new();
    g.bench_function("quanta::Instant::now", |b| b.iter(quanta::Instant::now));
    g.bench_function("quanta::Clock::raw", |b| b.iter(|| q.raw()));
    let std = SystemClock::monotonic();
    g.bench_function("SystemClock::now_ms-std", |b| b.iter(|| std.now_ms()));
    if cfg!(feature = "tsc") {
        let tsc = SystemClock::new();
        g.bench_function("SystemClock::now_ms-tsc", |b| b.iter(|| tsc.now_ms()));
    }
    g.finish();
}

/// One `next_id` of a generator that reads `clock`, in chunks that start
/// at a fresh millisecond of that clock.
fn uncontended_on(g: &mut BenchmarkGroup<'_, WallTime>, name: &str, clock: &Arc<SystemClock>) {
    let ours = Generator::builder(1, 1)
        .clock(Arc::clone(clock))
        .build()
        .unwrap();
    g.bench_function(name, |b| {
        b.iter_custom(|iters| chunked(iters, clock, || drop(black_box(ours.next_id()))))
    });
}

fn uncontended(c: &mut Criterion) {
    // The generator and the chunking read one clock, so that a timed chunk
    // starts exactly at a fresh millisecond of the generator's clock.
    let wall = Arc::new(SystemClock::monotonic());
    let mut g = c.benchmark_group("uncontended");
    uncontended_on(&mut g, "snowmint-std", &wall);
    if cfg!(feature = "tsc") {
        uncontended_on(&mut g, "snowmint-tsc", &Arc::new(SystemClock::new()));
    }
    let manual = Generator::builder(1, 1)
        .clock(ManualClock::new(1_700_000_000_000))
        .build()
        .unwrap();
    // The same call without the cost of reading a real clock.
    g.bench_function("snowmint-manual-clock", |b| {
        b.iter(|| black_box(manual.next_id()))
    });
    let flaked = snowflaked::sync::Generator::new(33);
    g.bench_function("snowflaked", |b| {
        b.iter_custom(|iters| {
            chunked(iters, &wall, || {
                black_box(flaked.generate::<u64>());
            })
        })
    });
    let mut rs = snowflake::SnowflakeIdGenerator::new(1, 1);
    g.bench_function("rs-snowflake", |b| {
        b.iter_custom(|iters| {
            chunked(iters, &wall, || {
                black_box(rs.real_time_generate());
            })
        })
    });
    g.finish();
}

/// Runs `f` `PER_ITER` times per iteration on `threads` threads together.
fn spread(iters: u64, threads: u64, f: &(impl Fn() + Sync)) -> Duration {
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..iters * PER_ITER / threads {
                    f();
                }
            });
        }
    });
    start.elapsed()
}

fn throughput(c: &mut Criterion) {
    for threads in [1u64, 2] {
        let name = if threads == 1 {
            "throughput-1-thread"
        } else {
            "throughput-2-threads"
        };
        let mut g = c.benchmark_group(name);
        g.throughput(Throughput::Elements(PER_ITER));
        g.sample_size(10);
        let ours = Generator::new(1, 1).unwrap();
        g.bench_function(BenchmarkId::from_parameter("snowmint"), |b| {
            b.iter_custom(|iters| spread(iters, threads, &|| drop(black_box(ours.next_id()))))
        });
        let flaked = snowflaked::sync::Generator::new(33);
        g.bench_function(BenchmarkId::from_parameter("snowflaked"), |b| {
            b.iter_custom(|iters| {
                spread(iters, threads, &|| {
                    black_box(flaked.generate::<u64>());
                })
            })
        });
        let rs = Mutex::new(snowflake::SnowflakeIdGenerator::new(1, 1));
        g.bench_function(BenchmarkId::from_parameter("rs-snowflake"), |b| {
            b.iter_custom(|iters| {
                spread(iters, threads, &|| {
                    black_box(rs.lock().unwrap().real_time_generate());
                })
            })
        });
        g.finish();
    }
}

fn batch(c: &mut Criterion) {
    // The generator and the chunking read one clock, so that a timed chunk
    // starts exactly at a fresh millisecond of the generator's clock.
    let wall = Arc::new(SystemClock::new());
    let mut g = c.benchmark_group("batch");
    g.throughput(Throughput::Elements(4096));
    let ours = Generator::builder(1, 1)
        .clock(Arc::clone(&wall))
        .build()
        .unwrap();
    g.bench_function("snowmint-next_ids-4096", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                fresh_millisecond(&wall);
                let start = Instant::now();
                let range = ours.next_ids(4096).unwrap();
                for id in range {
                    black_box(id);
                }
                total += start.elapsed();
            }
            total
        })
    });
    g.finish();
}

criterion_group!(benches, clock, uncontended, throughput, batch);
criterion_main!(benches);
