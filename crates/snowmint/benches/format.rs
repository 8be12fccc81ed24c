//! Costs of the format: compose, decode, each formatter and parser.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use snowmint::{Encoding, SnowflakeId};

fn format(c: &mut Criterion) {
    let id = SnowflakeId::new(1_541_815_603_606_036_480).unwrap();
    let mut g = c.benchmark_group("format");
    g.bench_function("compose", |b| {
        b.iter(|| {
            snowmint::compose(
                black_box(1_656_432_460_105),
                black_box(1),
                black_box(1),
                black_box(0),
            )
        })
    });
    g.bench_function("decode", |b| b.iter(|| black_box(id).parts()));
    g.bench_function("breakdown", |b| b.iter(|| black_box(id).breakdown()));
    for enc in Encoding::ALL {
        let text = enc.format(id).to_string();
        g.bench_function(format!("format/{enc}"), |b| {
            b.iter(|| enc.format(black_box(id)).to_string())
        });
        g.bench_function(format!("parse/{enc}"), |b| {
            b.iter(|| enc.parse(black_box(&text)))
        });
    }
    g.bench_function("parse/timestamp-iso8601", |b| {
        b.iter(|| snowmint::parse_timestamp(black_box("2022-06-28T16:07:40.105Z"), 0))
    });
    g.finish();
}

criterion_group!(benches, format);
criterion_main!(benches);
