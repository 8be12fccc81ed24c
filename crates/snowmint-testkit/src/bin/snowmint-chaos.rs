//! `snowmint-chaos`: one randomized fault run of distributed mode (see
//! `snowmint_testkit::chaos`), with etcd, PostgreSQL, MariaDB or Redis as
//! the coordinator. Exits 0 only when the checker passes.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use snowmint_testkit::chaos::run::{Config, run};
use snowmint_testkit::chaos::schedule::Coordinator;

/// Randomized fault testing of `snowmint serve --etcd` (`--postgres`,
/// `--mysql`, `--redis`), Jepsen-style.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// What the instances lease their identity from: a 3-member etcd
    /// cluster, one PostgreSQL (some instances through PgBouncer) or one
    /// MariaDB, or one Redis, each with its own faults.
    #[arg(long, default_value = "etcd", value_parser = ["etcd", "postgres", "mysql", "redis"])]
    coordinator: String,
    /// Length of the load, seconds.
    #[arg(long, default_value_t = 30)]
    seconds: u64,
    /// Seed of the fault schedule and of the batch sizes (random when absent).
    #[arg(long)]
    seed: Option<u64>,
    /// How many `serve --etcd` (`--postgres`, `--mysql`) instances (a
    /// static-mode one runs too).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=32))]
    instances: u64,
    /// The instances' lease TTL, seconds.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(2..=60))]
    lease_ttl: u64,
    /// With --coordinator postgres|mysql|redis: how many identities of the
    /// instances' datacenter are free for them (a crowd holds the rest for
    /// good, so instances take over each other's) [default: instances + 1;
    /// 32 for no crowd].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=32))]
    free_identities: Option<u64>,
    /// Each client pauses up to this long between mints, ms.
    #[arg(long, default_value_t = 40)]
    think_ms: u64,
    /// The `snowmint` binary, built with `--features etcd` (and the default `db`).
    #[arg(long, env = "SNOWMINT_BIN", default_value = "target/release/snowmint")]
    snowmint: PathBuf,
    /// Where the report goes.
    #[arg(long, default_value = "artifacts/chaos")]
    out: PathBuf,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64 % 1_000_000)
    });
    let coordinator = Coordinator::parse(&args.coordinator).expect("one of clap's values");
    println!(
        "chaos: coordinator {coordinator}, seed {seed} ({} s, {} instances; replay with \
         --coordinator {coordinator} --seed {seed})",
        args.seconds, args.instances
    );
    let config = Config {
        seconds: args.seconds,
        seed,
        coordinator,
        instances: args.instances as usize,
        members: 3,
        lease_ttl: args.lease_ttl,
        think_ms: args.think_ms,
        free_identities: args.free_identities.map(|n| n as usize),
        snowmint: args.snowmint,
        out: args.out,
    };
    let out = config.out.clone();
    match run(config).await {
        Ok(outcome) => {
            println!("{}", outcome.line);
            println!("chaos: report in {}/report.html", out.display());
            if outcome.passed {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("chaos: error: {e:#} (coordinator {coordinator}, seed {seed})");
            ExitCode::from(2)
        }
    }
}
