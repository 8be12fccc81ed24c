//! Costs of the format: compose, decode, each formatter and parser, and the
//! breakdown the CLI and the API print.
//!
//! Formatters write into a reused `String`, so the figures are the
//! formatter's own cost, not an allocation's.

use std::fmt::Write as _;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use snowmint::time::Iso8601;
use snowmint::{Encoding, Field, Layout, SnowflakeId};

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
    g.bench_function("decode/u64", |b| {
        b.iter(|| snowmint::decode(black_box(id.get())))
    });
    g.bench_function("breakdown", |b| b.iter(|| black_box(id).breakdown()));
    #[cfg(feature = "serde")]
    {
        let breakdown = id.breakdown();
        g.bench_function("breakdown/json", |b| {
            b.iter(|| serde_json::to_string(black_box(&breakdown)))
        });
    }

    let mut buf = String::with_capacity(128);
    for enc in Encoding::ALL {
        let text = enc.format(id).to_string();
        g.bench_function(format!("format/{enc}"), |b| {
            b.iter(|| {
                buf.clear();
                write!(buf, "{}", enc.format(black_box(id))).unwrap();
                black_box(buf.len())
            })
        });
        g.bench_function(format!("parse/{enc}"), |b| {
            b.iter(|| enc.parse(black_box(&text)))
        });
    }
    g.bench_function("format/binary", |b| {
        b.iter(|| {
            buf.clear();
            write!(buf, "{}", black_box(id).binary()).unwrap();
            black_box(buf.len())
        })
    });
    g.bench_function("format/iso8601", |b| {
        b.iter(|| {
            buf.clear();
            write!(buf, "{}", Iso8601(black_box(1_656_432_460_105))).unwrap();
            black_box(buf.len())
        })
    });
    g.bench_function("parse/FromStr", |b| {
        b.iter(|| black_box("1541815603606036480").parse::<SnowflakeId>())
    });
    g.bench_function("parse/field", |b| {
        b.iter(|| Layout::TWITTER.parse_field(Field::Sequence, black_box("4095")))
    });
    g.bench_function("parse/timestamp-ms", |b| {
        b.iter(|| snowmint::parse_timestamp(black_box("1656432460105"), 0))
    });
    g.bench_function("parse/timestamp-iso8601", |b| {
        b.iter(|| snowmint::parse_timestamp(black_box("2022-06-28T16:07:40.105Z"), 0))
    });
    g.finish();
}

criterion_group!(benches, format);
criterion_main!(benches);
