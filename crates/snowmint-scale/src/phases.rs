//! The phases of a scale run, written once for every coordinator (what
//! differs is a [`Coordinator`]: how its generators start, what it counts):
//!
//! 1. **Claim.** `identities` generators started at once (the identities
//!    the run does not use are held by a filler, so the pool is exactly
//!    that wide). `claim_all_s`: until every one holds an identity;
//!    `claim_txns`: the claim transactions (statements) the sessions sent
//!    (one per identity tried, `LeaseMetrics::claim_txns`).
//! 2. **Steady state.** Every generator mints a batch every `mint_every`
//!    (each batch past its reservation writes a mark); the coordinator's
//!    requests per second over `steady` (`etcd_requests_per_s_steady`):
//!    keep-alives, identity checks and mark writes. `rss_per_generator_kib`
//!    is the process's resident memory grown since before the start, per
//!    generator (less the IDs the run keeps).
//! 3. **A waiter.** One more generator: it must stay not ready for
//!    `waiter`, and what the coordinator counts of it is its cost
//!    (`waiter_etcd_requests_per_s`).
//! 4. **A storm.** `storm` holders stopped at once as a crash stops them (no
//!    revoke: their leases expire), and as many new generators started:
//!    `storm_reclaimed_s` until every identity is held again.
//! 5. **`serve` idle.** The generators above have no keeper; `serve` renews
//!    and probes its reservation on a timer, so `serve_instances` real
//!    `snowmint serve` processes (apart from the generators' identities)
//!    hold an identity each and mint nothing for `serve_idle`: the
//!    coordinator's requests and mark writes per second per process
//!    (`serve_idle`).
//!
//! Then every minted ID is checked for duplicates (`ids`, `duplicates`),
//! `summary.json` is written, and `report.html` when the coordinator keeps
//! a timeline of its rates.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use snowmint_etcd::LeasedGenerator;
use tokio::task::JoinHandle;

use crate::config::{CLAIM_TXNS_SLACK, Config, Outcome, Phase, Sample};
use crate::fleet::{
    Fleet, Launch, Runs, crash_first, finish_minting, raise_open_files, rss_kib, start,
    start_lanes, wait_held,
};
use crate::metrics::{Counters, Scraper};
use crate::{report, serve};

/// A waiter may cost the coordinator at most this many requests
/// (statements) per second (the design's bound is one; this is its margin).
pub const MAX_WAITER_REQUESTS_PER_S: f64 = 1.5;
/// An idle `serve` may write its mark at most this often, per second (its
/// probe is due every 15 s; a write a second was the bug this bounds).
pub const MAX_SERVE_IDLE_TXNS_PER_S: f64 = 0.2;

/// How a coordinator's counts are said in the run's lines.
pub(crate) struct Words {
    /// Who a cost is charged to, before the number (`"etcd "`, or none).
    pub(crate) who: &'static str,
    /// What it counts as a request (`"requests"`, `"statements"`).
    pub(crate) requests: &'static str,
    /// What a claim costs it (`"transactions"`, `"statements"`).
    pub(crate) claims: &'static str,
    /// What an idle `serve`'s writes are (`"mark writes"`, `"writes"`).
    pub(crate) writes: &'static str,
    /// How an idle `serve` writing too often is said (`"wrote to etcd"`).
    pub(crate) wrote: &'static str,
}

/// What the phases lease from, and how it counts what they cost it.
pub(crate) trait Coordinator {
    /// How its counts are said.
    const WORDS: Words;
    /// How often the generators' held identities (and the timeline's
    /// rates, if any) are sampled.
    const SAMPLE_EVERY: Duration;

    /// Its name in the first line and in `summary.json` (`None`: the etcd
    /// run's summary, which has no `coordinator` key).
    fn name(&self) -> Option<&'static str>;

    /// How generator `i` of the fleet is started.
    fn launcher(&self) -> Launch;

    /// Starts the waiter: one generator too many.
    fn spawn_waiter(&self) -> Box<dyn FnOnce() -> anyhow::Result<LeasedGenerator> + Send>;

    /// Its counters now: every client's requests, and its mark writes.
    async fn counts(&self) -> anyhow::Result<Counters>;

    /// The waiter's requests so far (and no one else's while every
    /// identity is held).
    async fn waiter_requests(&self) -> anyhow::Result<f64>;

    /// The flags of `snowmint serve` against it (the first names the
    /// coordinator: `--etcd`, `--postgres`, `--mysql`), on identities apart
    /// from the generators'.
    fn serve_args(&self) -> Vec<String>;

    /// Its counters while `serve` idles: [`counts`](Coordinator::counts),
    /// unless the processes reach only some of it.
    async fn serve_counts(&self) -> anyhow::Result<Counters> {
        self.counts().await
    }

    /// Whether its count of an idle `serve`'s writes is of mark writes
    /// alone, and so bounded by [`MAX_SERVE_IDLE_TXNS_PER_S`].
    fn serve_writes_are_marks(&self) -> bool {
        true
    }

    /// Where its rates are scraped every [`SAMPLE_EVERY`](Coordinator::SAMPLE_EVERY)
    /// for the timeline of `report.html` (`None`: no timeline, no report).
    fn timeline(&self) -> Option<Scraper> {
        None
    }
}

/// Checks `config` and makes the process ready for it, before the
/// coordinator starts.
///
/// # Errors
///
/// When `identities` is not 1..=1024 or `out` cannot be made.
pub(crate) fn prepare(config: &Config) -> anyhow::Result<()> {
    let n = config.identities;
    if !(1..=1024).contains(&n) {
        bail!("identities must be 1..=1024, got {n}");
    }
    raise_open_files();
    std::fs::create_dir_all(&config.out)
        .with_context(|| format!("create {}", config.out.display()))?;
    Ok(())
}

/// Reports the claim phase and adds its failures: not every identity held
/// in time, or more claim `what` (transactions, statements) than the bound.
fn check_claim(
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

/// What runs beside the phases the whole time: the most identities two
/// generators held at once, and the timeline of held identities and the
/// coordinator's rates.
struct Sampler {
    timeline: Arc<Mutex<Vec<Sample>>>,
    held_twice: Arc<Mutex<usize>>,
    sampling: Arc<AtomicBool>,
    task: JoinHandle<()>,
}

impl Sampler {
    /// Samples `fleet` (and `rates`, if any) every `every` from now on.
    fn start(
        fleet: &Arc<Fleet>,
        rates: Option<Scraper>,
        every: Duration,
        since: Instant,
    ) -> Sampler {
        let timeline = Arc::new(Mutex::new(Vec::<Sample>::new()));
        let held_twice = Arc::new(Mutex::new(0usize));
        let sampling = Arc::new(AtomicBool::new(true));
        let (fleet, timeline_, sampling_, held_twice_) = (
            Arc::clone(fleet),
            Arc::clone(&timeline),
            Arc::clone(&sampling),
            Arc::clone(&held_twice),
        );
        let task = tokio::spawn(async move {
            let mut last: Option<(f64, Counters)> = None;
            while sampling_.load(Ordering::Relaxed) {
                let (held, twice) = fleet.held();
                {
                    let mut worst = held_twice_.lock().unwrap_or_else(PoisonError::into_inner);
                    *worst = (*worst).max(twice);
                }
                if let Some(scraper) = &rates
                    && let Ok(now) = scraper.total().await
                {
                    let t = since.elapsed().as_secs_f64();
                    if let Some((t0, before)) = last {
                        let dt = (t - t0).max(1e-3);
                        let delta = now - before;
                        timeline_
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
                tokio::time::sleep(every).await;
            }
        });
        Sampler {
            timeline,
            held_twice,
            sampling,
            task,
        }
    }

    /// Stops sampling: the timeline.
    async fn stop(self) -> Vec<Sample> {
        self.sampling.store(false, Ordering::Relaxed);
        let _ = self.task.await;
        std::mem::take(&mut *self.timeline.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Runs the phases against `coordinator` (started, its pool exactly
/// `config.identities` wide), writes `summary.json` (and `report.html`
/// with a timeline) into `out`, and says which bounds broke.
///
/// # Errors
///
/// When the coordinator stops answering its counters, a generator cannot
/// start, or a file cannot be written: the run could not measure.
pub(crate) async fn run<C: Coordinator>(config: Config, coordinator: C) -> anyhow::Result<Outcome> {
    let n = config.identities;
    let words = &C::WORDS;
    let (who, requests) = (words.who, words.requests);
    let mut failures = Vec::new();
    let mut phases = Vec::new();
    let fleet = Arc::new(Fleet::default());
    let launch = coordinator.launcher();
    let since = Instant::now();
    let rates = coordinator.timeline();
    let with_report = rates.is_some();
    let sampler = Sampler::start(&fleet, rates, C::SAMPLE_EVERY, since);

    // 1. Claim: N at once.
    let rss_before = rss_kib();
    let on = coordinator
        .name()
        .map_or_else(String::new, |name| format!(" ({name})"));
    println!("scale: starting {n} LeasedGenerators at once{on}");
    let claim_start = since.elapsed().as_secs_f64();
    start(&fleet, &launch, 0..n).await?;
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
        words.claims,
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
    let s0 = coordinator.counts().await?;
    tokio::time::sleep(config.steady).await;
    let s1 = coordinator.counts().await?;
    let steady_to = since.elapsed().as_secs_f64();
    let steady_per_s = (s1 - s0).requests / (steady_to - steady_from);
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
        "scale: steady state {steady_per_s:.0} {who}{requests}/s, \
         {rss_per_generator_kib:.0} KiB per generator"
    );

    // 3. One more: it must wait, cheaply.
    let waiter_from = since.elapsed().as_secs_f64();
    let w0 = coordinator.waiter_requests().await?;
    let waiter = tokio::task::spawn_blocking(coordinator.spawn_waiter()).await??;
    let watch = Instant::now();
    let mut waiter_held = false;
    while watch.elapsed() < config.waiter {
        waiter_held |= waiter.ready_identity().is_some();
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let w1 = coordinator.waiter_requests().await?;
    let waiter_to = since.elapsed().as_secs_f64();
    let waiter_per_s = (w1 - w0) / (waiter_to - waiter_from);
    if waiter_held {
        failures.push("the waiter held an identity while all were held".to_owned());
    }
    if !waiter.all_taken() {
        failures.push(format!(
            "the waiter is not waiting for a free identity: {:?}",
            waiter.metrics().state
        ));
    }
    if waiter_per_s > MAX_WAITER_REQUESTS_PER_S {
        failures.push(format!(
            "the waiter cost {who}{waiter_per_s:.2} {requests}/s (at most {MAX_WAITER_REQUESTS_PER_S})"
        ));
    }
    waiter.shutdown().await;
    tokio::task::spawn_blocking(move || drop(waiter)).await?;
    phases.push(Phase {
        name: "waiter",
        from: waiter_from,
        to: waiter_to,
    });
    println!("scale: the waiter cost {who}{waiter_per_s:.2} {requests}/s");

    // 4. The storm: K holders crash at once; K new ones start.
    let k = config.storm.min(n);
    let storm_from = since.elapsed().as_secs_f64();
    let kill_at = Instant::now();
    let storm_killed = crash_first(&fleet, k).await?;
    start(&fleet, &launch, n..n + storm_killed).await?;
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
    let (ids, duplicates) = finish_minting(&stop, lanes, &runs, &sampler.held_twice, &mut failures);
    // Crash-stop the rest: their leases expire on their own.
    crash_first(&fleet, usize::MAX).await?;

    // 5. Idle `serve` processes, on identities of their own.
    let serve_from = since.elapsed().as_secs_f64();
    let args = coordinator.serve_args();
    println!(
        "scale: {} idle `snowmint serve {}` for {:?}",
        config.serve_instances, args[0], config.serve_idle
    );
    let idle = serve::idle_cost(
        &config.snowmint,
        &args,
        config.serve_instances,
        config.lease_ttl,
        config.serve_idle,
        &config.out.join("logs"),
        async || coordinator.serve_counts().await,
    )
    .await?;
    phases.push(Phase {
        name: "serve idle",
        from: serve_from,
        to: since.elapsed().as_secs_f64(),
    });
    println!(
        "scale: an idle serve costs {who}{:.3} {requests}/s, {:.3} {}/s",
        idle.requests_per_s, idle.txns_per_s, words.writes
    );
    if coordinator.serve_writes_are_marks() && idle.txns_per_s > MAX_SERVE_IDLE_TXNS_PER_S {
        failures.push(format!(
            "an idle serve {} {:.3} times a second (at most {MAX_SERVE_IDLE_TXNS_PER_S})",
            words.wrote, idle.txns_per_s
        ));
    }
    let timeline = sampler.stop().await;

    let round3 = |x: f64| (x * 1000.0).round() / 1000.0;
    let mut summary = serde_json::json!({
        "identities": n,
        "claimed": claimed,
        "claim_all_s": claim_all_s.map(round3),
        "claim_txns": claim_txns.round() as u64,
        "etcd_requests_per_s_steady": round3(steady_per_s),
        "waiter_etcd_requests_per_s": round3(waiter_per_s),
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
    if let Some(name) = coordinator.name() {
        summary["coordinator"] = name.into();
    }
    std::fs::write(
        config.out.join("summary.json"),
        serde_json::to_string_pretty(&summary)? + "\n",
    )
    .context("write summary.json")?;
    if with_report {
        std::fs::write(
            config.out.join("report.html"),
            report::html(&summary, &timeline, &phases, &failures, &config),
        )
        .context("write report.html")?;
    }
    Ok(Outcome { summary, failures })
}
