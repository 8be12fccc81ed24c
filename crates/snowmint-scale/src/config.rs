//! What a run is given ([`Config`]) and what it records and gives back
//! ([`Sample`], [`Phase`], [`Outcome`]), for every coordinator; the phases
//! (`phases.rs`) fill them in and the report (`report.rs`) reads them.

use std::path::PathBuf;
use std::time::Duration;

/// At most this many claim transactions per identity by default (issue
/// 28's bound for 1024: claims from a random start, not all racing for the
/// lowest free key).
pub const MAX_CLAIM_TXNS_PER_IDENTITY: f64 = 1.5;
/// Claim transactions allowed beyond that: a few random collisions cost a
/// small fleet (16 identities) more than half a try each, whatever the
/// order; at 1024 this is under 1 %.
pub const CLAIM_TXNS_SLACK: f64 = 8.0;

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// How many generators (and identities): 1..=1024.
    pub identities: usize,
    /// How many holders the storm kills at once.
    pub storm: usize,
    /// The generators' lease TTL, seconds.
    pub lease_ttl: u64,
    /// Each generator mints a batch this often.
    pub mint_every: Duration,
    /// IDs per batch.
    pub batch: usize,
    /// How long the steady state is measured.
    pub steady: Duration,
    /// How long the waiter is watched.
    pub waiter: Duration,
    /// The claim (and the storm's re-claim) fails past this.
    pub claim_limit: Duration,
    /// The claim fails past this many claim transactions per identity
    /// (plus [`CLAIM_TXNS_SLACK`]); [`MAX_CLAIM_TXNS_PER_IDENTITY`] by default.
    pub max_claims_per_identity: f64,
    /// The `snowmint` binary (built with `--features etcd`) whose idle
    /// `serve` is measured.
    pub snowmint: PathBuf,
    /// How many `serve --etcd` processes idle.
    pub serve_instances: usize,
    /// How long their idle cost is measured.
    pub serve_idle: Duration,
    /// Where `summary.json` and `report.html` go.
    pub out: PathBuf,
}

/// How a run ended: the summary, and the bounds it broke (none: passed).
#[derive(Debug)]
pub struct Outcome {
    /// `summary.json` as written.
    pub summary: serde_json::Value,
    /// Each broken bound, in words.
    pub failures: Vec<String>,
}

/// One point of the timeline, about every second.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Seconds since the start of the claim.
    pub t: f64,
    /// Identities held (fence open) by the generators.
    pub held: usize,
    /// etcd's client requests per second since the previous sample.
    pub requests_per_s: f64,
    /// etcd's `Txn` requests per second since the previous sample.
    pub txns_per_s: f64,
}

/// A named span of the run, for the report.
#[derive(Debug, Clone)]
pub struct Phase {
    /// What happened.
    pub name: &'static str,
    /// Seconds since the start of the claim.
    pub from: f64,
    /// Seconds since the start of the claim.
    pub to: f64,
}
