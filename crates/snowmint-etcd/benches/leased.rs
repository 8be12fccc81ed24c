//! What leasing the identity costs a mint, against a real etcd on loopback,
//! side by side with a static generator in the same run:
//!
//! - `next_id/uncontended/{static,leased}`: one `Generator::next_id` (its
//!   mark in memory) vs one `LeasedGenerator::next_id` (its mark in etcd,
//!   written ahead about once a second; every call checks the fence). Timed
//!   in chunks of 1000 calls that each start at a fresh millisecond, so no
//!   chunk runs into the 4096-per-millisecond limit: this is the per-call
//!   cost. `uncontended/static_fenced` is a static `next_id` followed by
//!   one `Fence::is_open` (an atomic load and a read of the coarse clock):
//!   the least any fenced mint can cost, which the leased mint adds only
//!   the load of its identity slot to.
//! - `next_id/loop/{static,leased}`: the same calls back to back, as a busy
//!   caller makes them: bound by the format's 4096 IDs per millisecond
//!   (~244 ns per ID) for both.
//! - `next_ids/4096/{static,leased}`: a batch of 4096 through
//!   `try_mint_ranges` (the server's path), per batch.
//! - `lease_clock/{system,instant}`: one read of the clock the fence reads
//!   (`SystemLeaseClock`: the coarse monotonic and wall clocks, and a load),
//!   beside `Instant::now`.
//! - `lease/claim_to_ready`: from `LeasedGenerator::start` to an identity
//!   held (connect, grant, one range read, one claim transaction, load the
//!   mark), the identity revoked between samples.
//!
//! ```sh
//! cargo bench -p snowmint-etcd --bench leased
//! ```
//! Skipped (with a message) when the `etcd` binary is missing.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use snowmint::{Generator, MemoryStore, SystemClock};
use snowmint_etcd::{EtcdConfig, Fence, LeaseClock as _, LeasedGenerator};

#[path = "../../snowmint/benches/support/mod.rs"]
mod support;
use support::chunked;

fn benches(c: &mut Criterion) {
    let Some(etcd) = snowmint_testkit::etcd::EtcdServer::start() else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let config = || EtcdConfig::new([etcd.url()]).prefix("/bench");

    let generator = Generator::builder(0, 0)
        .store(MemoryStore::new())
        .build()
        .unwrap();
    let leased = runtime
        .block_on(async {
            tokio::time::timeout(Duration::from_secs(20), LeasedGenerator::start(config())).await
        })
        .expect("an identity within 20 s")
        .unwrap();
    let clock = SystemClock::new();

    let mut g = c.benchmark_group("next_id");
    g.bench_function("uncontended/static", |b| {
        b.iter_custom(|iters| {
            chunked(iters, &clock, || {
                black_box(generator.next_id().unwrap());
            })
        })
    });
    let lease_clock = std::sync::Arc::new(snowmint_etcd::SystemLeaseClock);
    let fence = Fence::until(
        lease_clock.clone(),
        lease_clock.now() + Duration::from_secs(3600),
    );
    g.bench_function("uncontended/static_fenced", |b| {
        b.iter_custom(|iters| {
            chunked(iters, &clock, || {
                let id = generator.next_id().unwrap();
                assert!(fence.is_open());
                black_box(id);
            })
        })
    });
    g.bench_function("uncontended/leased", |b| {
        b.iter_custom(|iters| {
            chunked(iters, &clock, || {
                black_box(leased.next_id().unwrap());
            })
        })
    });
    g.bench_function("loop/static", |b| {
        b.iter(|| black_box(generator.next_id().unwrap()))
    });
    g.bench_function("loop/leased", |b| {
        b.iter(|| black_box(leased.next_id().unwrap()))
    });
    g.finish();

    // The lease clock the fence reads on every mint (two coarse clock
    // reads and a load; see `SystemLeaseClock`), beside `Instant::now` (the
    // fine monotonic clock) for scale.
    let mut g = c.benchmark_group("lease_clock");
    g.bench_function("system", |b| b.iter(|| black_box(lease_clock.now())));
    g.bench_function("instant", |b| b.iter(|| black_box(Instant::now())));
    g.finish();

    let mut g = c.benchmark_group("next_ids");
    g.throughput(criterion::Throughput::Elements(4096));
    g.bench_function("4096/static", |b| {
        b.iter(|| {
            let mut left = 4096;
            while left > 0 {
                left -= black_box(generator.next_ids(left).unwrap()).len();
            }
        })
    });
    g.bench_function("4096/leased", |b| {
        b.iter(|| {
            let mut n = 0;
            if let Some(rest) = leased.try_mint_ranges(4096, |r| n += r.len()).unwrap() {
                rest.finish(|r| n += r.len()).unwrap();
            }
            black_box(n)
        })
    });
    g.finish();
    runtime.block_on(leased.shutdown());

    let mut g = c.benchmark_group("lease");
    g.sample_size(20);
    g.bench_function("claim_to_ready", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let leased = runtime
                    .block_on(LeasedGenerator::start(
                        EtcdConfig::new([etcd.url()]).prefix("/bench-claim"),
                    ))
                    .unwrap();
                total += start.elapsed();
                runtime.block_on(leased.shutdown());
            }
            total
        })
    });
    g.finish();
}

criterion_group!(leased, benches);
criterion_main!(leased);
