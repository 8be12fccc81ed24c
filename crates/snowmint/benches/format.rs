//! Costs of the format: compose, decode, each formatter and parser, and the
//! breakdown the CLI and the API print.
//!
//! Formatters write into a reused `String`, so the figures are the
//! formatter's own cost, not an allocation's.
//!
//! On a shared machine wall-clock time mostly measures the neighbours; with
//! `SNOWMINT_BENCH_CLOCK=cpu` (Linux) the benches measure this thread's own
//! CPU time instead (`CLOCK_THREAD_CPUTIME_ID`):
//!
//! ```sh
//! SNOWMINT_BENCH_CLOCK=cpu cargo bench -p snowmint --features serde --bench format
//! ```

use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{Criterion, criterion_group, criterion_main};
use snowmint::time::Iso8601;
use snowmint::{Encoding, Field, Layout, SnowflakeId};

fn format(c: &mut Criterion<Clock>) {
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

/// What the benches time: the wall clock (criterion's default) or, on
/// request, the CPU time of the benchmarking thread.
#[derive(Debug, Clone, Copy)]
enum Clock {
    Wall,
    ThreadCpu,
}

impl Clock {
    fn from_env() -> Clock {
        let cpu = std::env::var("SNOWMINT_BENCH_CLOCK").is_ok_and(|v| v == "cpu");
        if cpu && thread_cpu_ns().is_some() {
            Clock::ThreadCpu
        } else {
            if cpu {
                eprintln!("no thread CPU clock here; timing the wall clock");
            }
            Clock::Wall
        }
    }

    fn now_ns(self) -> u64 {
        static START: OnceLock<Instant> = OnceLock::new();
        match self {
            Clock::ThreadCpu => thread_cpu_ns().unwrap_or(0),
            Clock::Wall => START.get_or_init(Instant::now).elapsed().as_nanos() as u64,
        }
    }
}

/// Nanoseconds this thread has run on a CPU, up to date at each call
/// (unlike `/proc/thread-self/schedstat`, which lags by up to a tick).
#[cfg(target_os = "linux")]
fn thread_cpu_ns() -> Option<u64> {
    use rustix::time::{ClockId, clock_gettime};
    let t = clock_gettime(ClockId::ThreadCPUTime);
    u64::try_from(t.tv_sec)
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(u64::try_from(t.tv_nsec).ok()?)
}

#[cfg(not(target_os = "linux"))]
fn thread_cpu_ns() -> Option<u64> {
    None
}

impl Measurement for Clock {
    type Intermediate = u64;
    type Value = Duration;

    fn start(&self) -> u64 {
        self.now_ns()
    }

    fn end(&self, start: u64) -> Duration {
        Duration::from_nanos(self.now_ns().saturating_sub(start))
    }

    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }

    fn zero(&self) -> Duration {
        Duration::ZERO
    }

    fn to_f64(&self, v: &Duration) -> f64 {
        v.as_nanos() as f64
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        // Both clocks count nanoseconds, so criterion's own units fit.
        static WALL: WallTime = WallTime;
        WALL.formatter()
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(Clock::from_env());
    targets = format
}
criterion_main!(benches);
