//! Full-speed minting, side by side with the peer crates: IDs per second, the
//! ratio to the format's limit (4,096,000/s), CPU-seconds used per second, and
//! how stale an issued ID's timestamp gets compared with the clock.
//!
//! ```text
//! cargo run -p snowmint --release [--features tsc] --example throughput [-- SECONDS]
//! ```
//!
//! Each generator runs for SECONDS (default 2) with 1 thread, then with 2
//! threads sharing one generator (`rs-snowflake` needs `&mut`, so its 2-thread
//! run shares it through a `Mutex`). CPU time is each thread's own CPU clock
//! (`CLOCK_THREAD_CPUTIME_ID` through rustix, as `benches/format.rs` reads it;
//! Linux only, zero elsewhere).

use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use snowmint::{Generator, SystemClock};

const LIMIT: f64 = 4_096_000.0;

/// Checks staleness on every this many IDs (a wall-clock read each).
const SAMPLE_EVERY: u64 = 64;

/// What one thread did.
#[derive(Default, Clone, Copy)]
struct Run {
    ids: u64,
    cpu: Duration,
    max_stale_ms: u64,
}

/// A generator under test: mints one ID and returns its Unix-ms timestamp.
trait Minter: Send + Sync {
    fn mint(&self) -> u64;
}

struct Snowmint(Generator);
impl Minter for Snowmint {
    #[inline]
    fn mint(&self) -> u64 {
        self.0.next_id().expect("snowmint").timestamp_ms()
    }
}

struct Snowflaked(snowflaked::sync::Generator);
impl Minter for Snowflaked {
    #[inline]
    fn mint(&self) -> u64 {
        use snowflaked::Snowflake;
        // Its epoch is the Unix epoch.
        self.0.generate::<u64>().timestamp()
    }
}

struct RsSnowflake(Mutex<snowflake::SnowflakeIdGenerator>);
impl Minter for RsSnowflake {
    #[inline]
    fn mint(&self) -> u64 {
        let id = self.0.lock().unwrap().real_time_generate();
        // Its epoch is the Unix epoch; the timestamp starts at bit 22.
        (id as u64) >> 22
    }
}

fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// This thread's CPU time so far.
#[cfg(target_os = "linux")]
fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

#[cfg(not(target_os = "linux"))]
fn thread_cpu() -> Duration {
    Duration::ZERO
}

fn run(minter: Arc<dyn Minter>, threads: usize, length: Duration) -> (f64, Run) {
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (m, barrier) = (Arc::clone(&minter), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                let cpu0 = thread_cpu();
                let start = Instant::now();
                let mut r = Run::default();
                loop {
                    for _ in 0..SAMPLE_EVERY - 1 {
                        std::hint::black_box(m.mint());
                    }
                    let ts = m.mint();
                    r.max_stale_ms = r.max_stale_ms.max(wall_ms().saturating_sub(ts));
                    r.ids += SAMPLE_EVERY;
                    if r.ids % (SAMPLE_EVERY * 64) == 0 && start.elapsed() >= length {
                        break;
                    }
                }
                r.cpu = thread_cpu() - cpu0;
                (r, start.elapsed())
            })
        })
        .collect();
    let mut total = Run::default();
    let mut wall = Duration::ZERO;
    for h in handles {
        let (r, elapsed) = h.join().unwrap();
        total.ids += r.ids;
        total.cpu += r.cpu;
        total.max_stale_ms = total.max_stale_ms.max(r.max_stale_ms);
        wall = wall.max(elapsed);
    }
    (wall.as_secs_f64(), total)
}

fn main() {
    let seconds: f64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("SECONDS must be a number"))
        .unwrap_or(2.0);
    let length = Duration::from_secs_f64(seconds);
    println!(
        "{:<12} {:>7} {:>12} {:>9} {:>8} {:>10}",
        "generator", "threads", "IDs/s", "of limit", "CPU-s/s", "max stale"
    );
    for threads in [1, 2] {
        let minters: [(&str, Arc<dyn Minter>); 4] = [
            // `SystemClock::new` reads the time-stamp counter with the `tsc`
            // feature; `monotonic` always reads `Instant`.
            (
                if cfg!(feature = "tsc") {
                    "snowmint-tsc"
                } else {
                    "snowmint"
                },
                Arc::new(Snowmint(Generator::new(1, 1).unwrap())),
            ),
            (
                "snowmint-std",
                Arc::new(Snowmint(
                    Generator::builder(1, 1)
                        .clock(SystemClock::monotonic())
                        .build()
                        .unwrap(),
                )),
            ),
            (
                "snowflaked",
                Arc::new(Snowflaked(snowflaked::sync::Generator::new(33))),
            ),
            (
                "rs-snowflake",
                Arc::new(RsSnowflake(Mutex::new(
                    snowflake::SnowflakeIdGenerator::new(1, 1),
                ))),
            ),
        ];
        for (name, minter) in minters {
            let (wall, r) = run(minter, threads, length);
            let rate = r.ids as f64 / wall;
            println!(
                "{name:<12} {threads:>7} {rate:>12.0} {:>9.3} {:>8.3} {:>7} ms",
                rate / LIMIT,
                r.cpu.as_secs_f64() / wall,
                r.max_stale_ms
            );
        }
    }
}
