//! What distributed mode costs, against a real etcd on loopback:
//!
//! - `mint/static/N` vs `mint/etcd/N`: minting N IDs through the `Minter`
//!   from a generator whose reservation is in memory vs in etcd (written
//!   ahead about once a second through the blocking bridge), both behind a
//!   fence;
//! - `lease/claim_to_ready`: from starting a lease session to a ready minter
//!   (connect, grant, one range read, one claim transaction, load the mark),
//!   with the identity revoked between samples.
//!
//! ```sh
//! cargo bench -p snowmint-server --features etcd --bench etcd
//! ```
//! Skipped (with a message) when the `etcd` binary is missing.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use snowmint::{Generator, MemoryStore};
use snowmint_server::etcd::{EtcdIdentity, EtcdOptions};
use snowmint_server::{Fence, Minter};

fn benches(c: &mut Criterion) {
    let Some(etcd) = snowmint_testkit::etcd::EtcdServer::start() else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _guard = runtime.enter();

    let in_memory = Minter::new();
    let generator = Generator::builder(0, 0)
        .store(MemoryStore::new())
        .build()
        .unwrap();
    in_memory.install(
        Arc::new(generator),
        Arc::new(Fence::until(Instant::now() + Duration::from_secs(3600))),
    );
    let leased = Minter::new();
    let mut options = EtcdOptions::new(vec![etcd.url()]);
    options.prefix = "/bench".to_owned();
    let session = EtcdIdentity::spawn(options, Arc::clone(&leased)).unwrap();
    let start = Instant::now();
    while !leased.is_ready() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{:?}",
            session.status()
        );
        std::thread::sleep(Duration::from_millis(10));
    }

    let mut g = c.benchmark_group("mint");
    for n in [1, 4096] {
        g.throughput(criterion::Throughput::Elements(n as u64));
        g.bench_function(format!("static/{n}"), |b| {
            b.iter(|| black_box(in_memory.mint(n).unwrap()))
        });
        g.bench_function(format!("etcd/{n}"), |b| {
            b.iter(|| black_box(leased.mint(n).unwrap()))
        });
    }
    g.finish();
    runtime.block_on(session.shutdown());

    let mut g = c.benchmark_group("lease");
    g.sample_size(20);
    g.bench_function("claim_to_ready", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let minter = Minter::new();
                let mut options = EtcdOptions::new(vec![etcd.url()]);
                options.prefix = "/bench-claim".to_owned();
                let start = Instant::now();
                let session = EtcdIdentity::spawn(options, Arc::clone(&minter)).unwrap();
                while !minter.is_ready() {
                    std::thread::sleep(Duration::from_micros(200));
                }
                total += start.elapsed();
                runtime.block_on(session.shutdown());
            }
            total
        })
    });
    g.finish();
}

criterion_group!(etcd, benches);
criterion_main!(etcd);
