//! One scale run, in phases:
//!
//! 1. **Claim.** A three-member etcd cluster; the identities the run does
//!    not use (with fewer than 1024) held by one filler lease, so the pool
//!    is exactly `identities` wide; then that many `LeasedGenerator`s
//!    started at once. `claim_all_s`: until every one holds an identity;
//!    `claim_txns`: the claim transactions the sessions sent (one per
//!    identity tried, `LeaseMetrics::claim_txns`; a scan is a read-only
//!    `Txn` too, and each new holder writes its mark once at start, so
//!    etcd's own `Txn` count says more than the claims).
//! 2. **Steady state.** Every generator mints a batch every `mint_every`
//!    (each batch past its reservation writes a mark); etcd's requests per
//!    second over `steady` (`etcd_requests_per_s_steady`): keep-alives,
//!    identity checks and mark writes. `rss_per_generator_kib` is the
//!    process's resident memory grown since before the start, per generator
//!    (less the IDs the run keeps).
//! 3. **A waiter.** One more generator, pointed at the one member no other
//!    uses: it must stay not ready for `waiter`, and that member's request
//!    count is its cost (`waiter_etcd_requests_per_s`).
//! 4. **A storm.** `storm` holders stopped at once as a crash stops them (no
//!    revoke: their leases expire), and as many new generators started:
//!    `storm_reclaimed_s` until every identity is held again.
//!
//! 5. **`serve` idle.** The generators above have no keeper; `serve` renews
//!    and probes its reservation on a timer, so `serve_instances` real
//!    `snowmint serve --etcd` processes (under a prefix of their own) hold
//!    an identity each and mint nothing for `serve_idle`: etcd's requests
//!    and `Txn`s (mark writes) per second per process (`serve_idle`).
//!
//! Then every minted ID is checked for duplicates (`ids`, `duplicates`).
//! The generators' endpoints are members 0 and 1 (rotated, so both carry
//! half); member 2 is the waiter's alone. The etcd cluster is killed when
//! the run ends, however it ends.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use snowmint_etcd::{EtcdConfig, LeasedGenerator};

use crate::metrics::{Counters, Scraper};
use crate::report;
use snowmint_testkit::etcd::EtcdCluster;

/// At most this many claim transactions per identity by default (issue
/// 28's bound for 1024: claims from a random start, not all racing for the
/// lowest free key).
pub const MAX_CLAIM_TXNS_PER_IDENTITY: f64 = 1.5;
/// Claim transactions allowed beyond that: a few random collisions cost a
/// small fleet (16 identities) more than half a try each, whatever the
/// order; at 1024 this is under 1 %.
pub const CLAIM_TXNS_SLACK: f64 = 8.0;

/// Reports the claim phase and adds its failures: not every identity held
/// in time, or more claim `what` (transactions, statements) than the bound.
pub(crate) fn check_claim(
    failures: &mut Vec<String>,
    config: &Config,
    claim_all_s: Option<f64>,
    claimed: usize,
    claim_txns: f64,
    what: &str,
) {
    let n = config.identities;
    match claim_all_s {
        Some(s) => println!("scale: all {n} held after {s:.1} s, {claim_txns} claim {what}"),
        None => failures.push(format!(
            "only {claimed} of {n} identities held within {:?}",
            config.claim_limit
        )),
    }
    if claim_txns > config.max_claims_per_identity * n as f64 + CLAIM_TXNS_SLACK {
        failures.push(format!(
            "{claim_txns} claim {what} for {n} identities (at most {} each, and {CLAIM_TXNS_SLACK} more)",
            config.max_claims_per_identity
        ));
    }
}
/// A waiter may cost etcd at most this many requests per second (the
/// design's bound is one; this is its margin).
pub const MAX_WAITER_REQUESTS_PER_S: f64 = 1.5;
/// An idle `serve` may write its mark at most this often, per second (its
/// probe is due every 15 s; a write a second was the bug this bounds).
pub const MAX_SERVE_IDLE_TXNS_PER_S: f64 = 0.2;
/// Threads that mint, each for its share of the generators.
pub(super) const MINT_LANES: usize = 32;
/// The key prefix of the run.
const PREFIX: &str = "/scale";

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

/// The generators, by slot; a killed one leaves its slot empty.
#[derive(Default)]
pub(super) struct Fleet {
    slots: Mutex<Vec<Option<Arc<LeasedGenerator>>>>,
}

impl Fleet {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Option<Arc<LeasedGenerator>>>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The live generators of one mint lane.
    fn lane(&self, lane: usize) -> Vec<Arc<LeasedGenerator>> {
        self.lock()
            .iter()
            .enumerate()
            .filter(|(i, _)| i % MINT_LANES == lane)
            .filter_map(|(_, g)| g.clone())
            .collect()
    }

    /// Claim transactions the live generators' sessions have sent.
    pub(super) fn claim_attempts(&self) -> u64 {
        self.lock()
            .iter()
            .flatten()
            .map(|g| g.metrics().claim_txns)
            .sum()
    }

    /// Identities held now with an open fence, and how many of them two
    /// generators hold at once (never, in one etcd cluster).
    pub(super) fn held(&self) -> (usize, usize) {
        let mut identities: Vec<u16> = self
            .lock()
            .iter()
            .flatten()
            .filter_map(|g| g.ready_identity())
            .map(|i| i.ordinal())
            .collect();
        let all = identities.len();
        identities.sort_unstable();
        identities.dedup();
        (identities.len(), all - identities.len())
    }
}

/// The lease settings of generator `i`: members 0 and 1, rotated.
fn config_for(urls: &[String], i: usize, ttl: u64) -> EtcdConfig {
    let endpoints = if i.is_multiple_of(2) {
        [urls[0].clone(), urls[1].clone()]
    } else {
        [urls[1].clone(), urls[0].clone()]
    };
    EtcdConfig::new(endpoints)
        .lease_ttl(Duration::from_secs(ttl))
        .prefix(PREFIX)
        .holder(format!("scale generator {i}"))
}

/// Starts generators `range` into the fleet's slots, off the async workers
/// (each builds a runtime of its own).
async fn start(
    fleet: &Arc<Fleet>,
    urls: &[String],
    range: std::ops::Range<usize>,
    ttl: u64,
) -> anyhow::Result<()> {
    let fleet = Arc::clone(fleet);
    let urls = urls.to_vec();
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        for i in range {
            let generator = LeasedGenerator::spawn(config_for(&urls, i, ttl))
                .with_context(|| format!("start generator {i}"))?;
            let mut slots = fleet.lock();
            if slots.len() <= i {
                slots.resize(i + 1, None);
            }
            slots[i] = Some(Arc::new(generator));
        }
        Ok(())
    })
    .await
    .context("the starting thread panicked")?
}

/// Waits until `want` identities are held, or `limit` passes: how long it
/// took, if it came.
pub(super) async fn wait_held(
    fleet: &Fleet,
    want: usize,
    since: Instant,
    limit: Duration,
) -> Option<f64> {
    loop {
        if fleet.held().0 >= want {
            return Some(since.elapsed().as_secs_f64());
        }
        if since.elapsed() > limit {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The process's resident memory, KiB.
pub(super) fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Raises the open-file limit to its hard limit: each generator keeps a
/// few sockets and descriptors of its own.
pub(super) fn raise_open_files() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        limit.current = limit.maximum;
        let _ = setrlimit(Resource::Nofile, limit);
    }
}

/// Minted runs of consecutive IDs: (first, how many).
pub(super) type Runs = Arc<Mutex<Vec<(u64, u32)>>>;

/// One mint lane: every `every`, a batch from each of its generators.
pub(super) fn mint_lane(
    fleet: Arc<Fleet>,
    lane: usize,
    every: Duration,
    batch: usize,
    stop: Arc<AtomicBool>,
    runs: Runs,
) {
    let mut mine = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let round = Instant::now();
        for generator in fleet.lane(lane) {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            // Refusals (not held yet, fenced) are expected around the storm.
            if let Ok(range) = generator.next_ids(batch) {
                mine.push((u64::from(range.first()), range.len() as u32));
            }
        }
        while round.elapsed() < every && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50).min(every));
        }
    }
    runs.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .extend(mine);
}

/// How many IDs the runs hold, and how many of them more than once.
pub fn count_duplicates(runs: &mut [(u64, u32)]) -> (u64, u64) {
    runs.sort_unstable();
    let mut ids = 0;
    let mut duplicates = 0;
    let mut end = 0u64;
    for &(first, len) in runs.iter() {
        let last = first + u64::from(len);
        ids += u64::from(len);
        if first < end {
            duplicates += last.min(end) - first;
        }
        end = end.max(last);
    }
    (ids, duplicates)
}

/// Standard base64, for etcd's JSON gateway.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Holds every identity from `identities` on (ordinal order) with one
/// long lease, through etcd's JSON gateway, so the run's pool is exactly
/// `identities` wide.
async fn fill_unused(url: &str, identities: usize) -> anyhow::Result<()> {
    if identities >= 1024 {
        return Ok(());
    }
    let client = reqwest::Client::new();
    let granted: serde_json::Value = client
        .post(format!("{url}/v3/lease/grant"))
        .json(&serde_json::json!({"TTL": 3600}))
        .send()
        .await
        .context("lease grant")?
        .json()
        .await
        .context("lease grant")?;
    let lease = granted["ID"]
        .as_str()
        .context("lease grant: no ID")?
        .to_owned();
    let ordinals: Vec<usize> = (identities..1024).collect();
    for chunk in ordinals.chunks(100) {
        let puts: Vec<serde_json::Value> = chunk
            .iter()
            .map(|n| {
                let key = format!("{PREFIX}/identities/{}/{}", n / 32, n % 32);
                serde_json::json!({"requestPut": {
                    "key": base64(key.as_bytes()),
                    "value": base64(b"scale filler"),
                    "lease": lease,
                }})
            })
            .collect();
        let response = client
            .post(format!("{url}/v3/kv/txn"))
            .json(&serde_json::json!({"success": puts}))
            .send()
            .await
            .context("filler txn")?;
        if !response.status().is_success() {
            bail!("filler txn: {}", response.status());
        }
    }
    Ok(())
}

/// Runs the phases, writes `summary.json` and `report.html` into `out`,
/// and says which bounds broke.
///
/// # Errors
///
/// When etcd does not start or stops answering, or the report cannot be
/// written: the run could not measure.
pub async fn run(config: Config) -> anyhow::Result<Outcome> {
    let n = config.identities;
    if !(1..=1024).contains(&n) {
        bail!("identities must be 1..=1024, got {n}");
    }
    raise_open_files();
    std::fs::create_dir_all(&config.out)
        .with_context(|| format!("create {}", config.out.display()))?;
    let cluster = tokio::task::spawn_blocking(|| EtcdCluster::start(3))
        .await?
        .map_err(anyhow::Error::msg)?;
    let urls = cluster.urls();
    let scraper = Scraper::new(&urls)?;
    fill_unused(&urls[0], n).await?;
    let mut failures = Vec::new();
    let mut phases = Vec::new();

    // The timeline: held identities and etcd's request rate, every second.
    let fleet = Arc::new(Fleet::default());
    let since = Instant::now();
    let timeline = Arc::new(Mutex::new(Vec::<Sample>::new()));
    let held_twice = Arc::new(Mutex::new(0usize));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (fleet, scraper, timeline, sampling, held_twice) = (
            Arc::clone(&fleet),
            scraper.clone(),
            Arc::clone(&timeline),
            Arc::clone(&sampling),
            Arc::clone(&held_twice),
        );
        tokio::spawn(async move {
            let mut last: Option<(f64, Counters)> = None;
            while sampling.load(Ordering::Relaxed) {
                let (held, twice) = fleet.held();
                {
                    let mut worst = held_twice.lock().unwrap_or_else(PoisonError::into_inner);
                    *worst = (*worst).max(twice);
                }
                if let Ok(now) = scraper.total().await {
                    let t = since.elapsed().as_secs_f64();
                    if let Some((t0, before)) = last {
                        let dt = (t - t0).max(1e-3);
                        let delta = now - before;
                        timeline
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(Sample {
                                t,
                                held,
                                requests_per_s: delta.requests / dt,
                                txns_per_s: delta.txns / dt,
                            });
                    }
                    last = Some((t, now));
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        })
    };

    // 1. Claim: N at once.
    let rss_before = rss_kib();
    println!("scale: starting {n} LeasedGenerators at once");
    let claim_start = since.elapsed().as_secs_f64();
    start(&fleet, &urls, 0..n, config.lease_ttl).await?;
    let claim_all_s = wait_held(&fleet, n, since, config.claim_limit)
        .await
        .map(|t| t - claim_start);
    let claimed = fleet.held().0;
    let claim_txns = fleet.claim_attempts() as f64;
    phases.push(Phase {
        name: "claim",
        from: claim_start,
        to: since.elapsed().as_secs_f64(),
    });
    check_claim(
        &mut failures,
        &config,
        claim_all_s,
        claimed,
        claim_txns,
        "transactions",
    );

    // 2. Steady state, minting.
    let stop = Arc::new(AtomicBool::new(false));
    let runs: Runs = Arc::default();
    let lanes = start_lanes(&fleet, &config, &stop, &runs)?;
    // Past the first round of mark writes and a renewal period.
    let warm = config
        .mint_every
        .max(Duration::from_secs(config.lease_ttl / 2));
    tokio::time::sleep(warm).await;
    let steady_from = since.elapsed().as_secs_f64();
    let s0 = scraper.total().await?;
    tokio::time::sleep(config.steady).await;
    let s1 = scraper.total().await?;
    let steady_to = since.elapsed().as_secs_f64();
    let etcd_requests_per_s_steady = (s1 - s0).requests / (steady_to - steady_from);
    phases.push(Phase {
        name: "steady state",
        from: steady_from,
        to: steady_to,
    });
    let kept = runs
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .capacity()
        * 16
        / 1024;
    let rss_per_generator_kib = (rss_kib()
        .saturating_sub(rss_before)
        .saturating_sub(kept as u64)) as f64
        / n as f64;
    println!(
        "scale: steady state {etcd_requests_per_s_steady:.0} etcd requests/s, \
         {rss_per_generator_kib:.0} KiB per generator"
    );

    // 3. One more: it must wait, cheaply, on member 2 alone.
    let waiter_from = since.elapsed().as_secs_f64();
    let w0 = scraper.member(2).await?;
    let waiter = {
        let config = EtcdConfig::new([urls[2].clone()])
            .lease_ttl(Duration::from_secs(config.lease_ttl))
            .prefix(PREFIX)
            .holder("scale waiter");
        tokio::task::spawn_blocking(move || LeasedGenerator::spawn(config)).await??
    };
    let watch = Instant::now();
    let mut waiter_held = false;
    while watch.elapsed() < config.waiter {
        waiter_held |= waiter.ready_identity().is_some();
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let w1 = scraper.member(2).await?;
    let waiter_to = since.elapsed().as_secs_f64();
    let waiter_etcd_requests_per_s = (w1 - w0).requests / (waiter_to - waiter_from);
    if waiter_held {
        failures.push("the waiter held an identity while all were held".to_owned());
    }
    if !waiter.all_taken() {
        failures.push(format!(
            "the waiter is not waiting for a free identity: {:?}",
            waiter.metrics().state
        ));
    }
    if waiter_etcd_requests_per_s > MAX_WAITER_REQUESTS_PER_S {
        failures.push(format!(
            "the waiter cost etcd {waiter_etcd_requests_per_s:.2} requests/s (at most {MAX_WAITER_REQUESTS_PER_S})"
        ));
    }
    waiter.shutdown().await;
    tokio::task::spawn_blocking(move || drop(waiter)).await?;
    phases.push(Phase {
        name: "waiter",
        from: waiter_from,
        to: waiter_to,
    });
    println!("scale: the waiter cost etcd {waiter_etcd_requests_per_s:.2} requests/s");

    // 4. The storm: K holders crash at once; K new ones start.
    let k = config.storm.min(n);
    let storm_from = since.elapsed().as_secs_f64();
    let kill_at = Instant::now();
    let storm_killed = crash_first(&fleet, k).await?;
    start(&fleet, &urls, n..n + storm_killed, config.lease_ttl).await?;
    let storm_limit = config.claim_limit + Duration::from_secs(3 * config.lease_ttl);
    let storm_reclaimed_s = wait_held(&fleet, n, kill_at, storm_limit).await;
    phases.push(Phase {
        name: "storm",
        from: storm_from,
        to: since.elapsed().as_secs_f64(),
    });
    match storm_reclaimed_s {
        Some(s) => {
            println!("scale: {storm_killed} killed holders' identities held again after {s:.1} s")
        }
        None => failures.push(format!(
            "{} of {n} identities held {storm_limit:?} after {storm_killed} holders were killed",
            fleet.held().0
        )),
    }

    // A round of mints by the new holders, then stop and count.
    tokio::time::sleep(config.mint_every * 2).await;
    let (ids, duplicates) = finish_minting(&stop, lanes, &runs, &held_twice, &mut failures);
    // Crash-stop the rest: the cluster goes with them.
    let rest: Vec<_> = fleet.lock().drain(..).flatten().collect();
    tokio::task::spawn_blocking(move || drop(rest)).await?;

    // 5. Idle `serve` processes (the generators above are gone; their
    // leases expire on their own, under another prefix).
    let serve_from = since.elapsed().as_secs_f64();
    println!(
        "scale: {} idle `snowmint serve --etcd` for {:?}",
        config.serve_instances, config.serve_idle
    );
    let idle = crate::serve::idle_cost(
        &config.snowmint,
        &urls[..2],
        config.serve_instances,
        config.lease_ttl,
        config.serve_idle,
        &config.out.join("logs"),
    )
    .await?;
    phases.push(Phase {
        name: "serve idle",
        from: serve_from,
        to: since.elapsed().as_secs_f64(),
    });
    println!(
        "scale: an idle serve costs etcd {:.3} requests/s, {:.3} mark writes/s",
        idle.requests_per_s, idle.txns_per_s
    );
    if idle.txns_per_s > MAX_SERVE_IDLE_TXNS_PER_S {
        failures.push(format!(
            "an idle serve wrote to etcd {:.3} times a second (at most {MAX_SERVE_IDLE_TXNS_PER_S})",
            idle.txns_per_s
        ));
    }
    sampling.store(false, Ordering::Relaxed);
    let _ = sampler.await;
    drop(cluster);

    let round3 = |x: f64| (x * 1000.0).round() / 1000.0;
    let summary = serde_json::json!({
        "identities": n,
        "claimed": claimed,
        "claim_all_s": claim_all_s.map(round3),
        "claim_txns": claim_txns.round() as u64,
        "etcd_requests_per_s_steady": round3(etcd_requests_per_s_steady),
        "waiter_etcd_requests_per_s": round3(waiter_etcd_requests_per_s),
        "storm_killed": storm_killed,
        "storm_reclaimed_s": storm_reclaimed_s.map(round3),
        "ids": ids,
        "duplicates": duplicates,
        "rss_per_generator_kib": round3(rss_per_generator_kib),
        "serve_idle": {
            "instances": idle.instances,
            "seconds": round3(idle.seconds),
            "etcd_requests_per_s": round3(idle.requests_per_s),
            "etcd_txns_per_s": round3(idle.txns_per_s),
        },
    });
    let timeline = timeline
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    std::fs::write(
        config.out.join("summary.json"),
        serde_json::to_string_pretty(&summary)? + "\n",
    )
    .context("write summary.json")?;
    std::fs::write(
        config.out.join("report.html"),
        report::html(&summary, &timeline, &phases, &failures, &config),
    )
    .context("write report.html")?;
    Ok(Outcome { summary, failures })
}

/// Starts the mint lanes: [`MINT_LANES`] threads, each minting a batch
/// from its share of the fleet every `config.mint_every` until `stop`.
pub(super) fn start_lanes(
    fleet: &Arc<Fleet>,
    config: &Config,
    stop: &Arc<AtomicBool>,
    runs: &Runs,
) -> anyhow::Result<Vec<std::thread::JoinHandle<()>>> {
    (0..MINT_LANES)
        .map(|lane| {
            let (fleet, stop, runs) = (Arc::clone(fleet), Arc::clone(stop), Arc::clone(runs));
            let (every, batch) = (config.mint_every, config.batch);
            std::thread::Builder::new()
                .name(format!("scale-mint-{lane}"))
                .spawn(move || mint_lane(fleet, lane, every, batch, stop, runs))
                .context("start a mint thread")
        })
        .collect()
}

/// Crash-stops the fleet's first `k` generators at once, as a crash stops
/// them (no revoke: their leases expire), waiting out a mint lane that
/// still holds a clone for its round; how many there were.
pub(super) async fn crash_first(fleet: &Fleet, k: usize) -> anyhow::Result<usize> {
    let killed: Vec<Arc<LeasedGenerator>> = {
        let mut slots = fleet.lock();
        slots.iter_mut().take(k).filter_map(Option::take).collect()
    };
    let count = killed.len();
    tokio::task::spawn_blocking(move || {
        for mut generator in killed {
            loop {
                match Arc::try_unwrap(generator) {
                    Ok(generator) => {
                        generator.abandon();
                        break;
                    }
                    Err(shared) => {
                        generator = shared;
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            }
        }
    })
    .await?;
    Ok(count)
}

/// Stops the mint lanes and checks what they minted: no ID twice, some
/// minted, no identity held by two generators at once (each broken bound
/// pushed onto `failures`). Returns the IDs and the duplicates among them.
pub(super) fn finish_minting(
    stop: &AtomicBool,
    lanes: Vec<std::thread::JoinHandle<()>>,
    runs: &Runs,
    held_twice: &Mutex<usize>,
    failures: &mut Vec<String>,
) -> (u64, u64) {
    stop.store(true, Ordering::Relaxed);
    for lane in lanes {
        let _ = lane.join();
    }
    let mut runs = std::mem::take(&mut *runs.lock().unwrap_or_else(PoisonError::into_inner));
    let (ids, duplicates) = count_duplicates(&mut runs);
    if duplicates > 0 {
        failures.push(format!("{duplicates} duplicate IDs among {ids}"));
    }
    if ids == 0 {
        failures.push("no ID was minted".to_owned());
    }
    let twice = *held_twice.lock().unwrap_or_else(PoisonError::into_inner);
    if twice > 0 {
        failures.push(format!(
            "{twice} identities were held by two generators at once"
        ));
    }
    (ids, duplicates)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_ids_covered_twice() {
        let mut runs = vec![(10, 5), (0, 3), (12, 2), (20, 1), (14, 4)];
        // 0..3, 10..15, 12..14 (2 again), 14..18 (14 again), 20.
        assert_eq!(count_duplicates(&mut runs), (15, 3));
        assert_eq!(count_duplicates(&mut []), (0, 0));
    }

    #[test]
    fn base64_as_etcd_reads_it() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(
            base64(b"/scale/identities/1/2"),
            "L3NjYWxlL2lkZW50aXRpZXMvMS8y"
        );
    }
}
