//! `snowmint-scale`: N `LeasedGenerator`s started at once against one
//! three-member etcd cluster, and what that costs etcd (see
//! `snowmint_scale`). Exits 0 only when every bound holds.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use snowmint_scale::run::{Config, run};

/// The scale run of distributed mode.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// How many generators (and identities) at once.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=1024))]
    identities: u64,
    /// How many holders the storm kills at once [default: max(100, N / 8), at most N].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    storm: Option<u64>,
    /// The generators' lease TTL, seconds.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(2..=3600))]
    lease_ttl: u64,
    /// Each generator mints a batch this often, ms.
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(100..=60_000))]
    mint_every_ms: u64,
    /// IDs per batch.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=4096))]
    batch: u64,
    /// How long the steady state is measured, seconds.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    steady_seconds: u64,
    /// How long the waiter (one generator too many) is watched, seconds.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    waiter_seconds: u64,
    /// The claim fails past this many claim transactions (statements) per
    /// identity, plus 8. 1.5, the default, is what 1024 generators started
    /// together meet; N started in the very same instant cost about 1.58 N
    /// (each round, a random pick among the free wins for 1 - 1/e of the
    /// claimants), as 128 on loopback do.
    #[arg(long, default_value_t = 1.5, value_parser = claims_per_identity)]
    max_claims_per_identity: f64,
    /// The claim fails if not every identity is held within this, seconds.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=3600))]
    claim_limit_seconds: u64,
    /// The `snowmint` binary (built with `--features etcd`) whose idle
    /// `serve --etcd` is measured.
    #[arg(long, env = "SNOWMINT_BIN", default_value = "target/release/snowmint")]
    snowmint: PathBuf,
    /// How many idle `serve --etcd` processes are measured.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=32))]
    serve_instances: u64,
    /// How long their idle cost is measured, seconds.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    serve_seconds: u64,
    /// The coordinator: etcd (a 3-member cluster), postgres (through
    /// PgBouncer in transaction mode), mysql (MariaDB) or redis (one
    /// redis-server; the prefix's longest TTL is the lease TTL).
    #[arg(long, default_value = "etcd", value_parser = ["etcd", "postgres", "mysql", "redis"])]
    coordinator: String,
    /// Where summary.json and report.html go.
    #[arg(long, default_value = "artifacts/scale")]
    out: PathBuf,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let identities = args.identities as usize;
    let config = Config {
        identities,
        storm: args
            .storm
            .map_or(identities.div_ceil(8).max(100), |s| s as usize)
            .min(identities),
        lease_ttl: args.lease_ttl,
        mint_every: Duration::from_millis(args.mint_every_ms),
        batch: args.batch as usize,
        steady: Duration::from_secs(args.steady_seconds),
        waiter: Duration::from_secs(args.waiter_seconds),
        claim_limit: Duration::from_secs(args.claim_limit_seconds),
        max_claims_per_identity: args.max_claims_per_identity,
        snowmint: args.snowmint,
        serve_instances: args.serve_instances as usize,
        serve_idle: Duration::from_secs(args.serve_seconds),
        out: args.out,
    };
    let out = config.out.clone();
    let outcome = match args.coordinator.as_str() {
        "etcd" => run(config).await,
        "redis" => snowmint_scale::redis::run(config).await,
        other => snowmint_scale::db::run(config, other == "mysql").await,
    };
    match outcome {
        Ok(outcome) => {
            println!("{}", outcome.summary);
            println!("scale: report in {}/report.html", out.display());
            if outcome.failures.is_empty() {
                println!("scale: PASS");
                ExitCode::SUCCESS
            } else {
                for failure in &outcome.failures {
                    println!("scale: FAIL: {failure}");
                }
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("scale: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// `--max-claims-per-identity`: a number from 1 to 3.
fn claims_per_identity(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(x) if (1.0..=3.0).contains(&x) => Ok(x),
        _ => Err(format!("must be a number from 1 to 3, got {value:?}")),
    }
}
