//! The scale run against a database coordinator (`--coordinator postgres`
//! or `mysql`): the phases of `run.rs` (claim, steady state, one waiter too
//! many, a storm of crashed holders, idle `serve` processes), with the
//! identities leased from one table of a real PostgreSQL (through
//! PgBouncer in transaction mode: 1024 holders cannot each keep a server
//! connection under PostgreSQL's default 100) or MariaDB server, and what
//! it costs the database as the database counts it:
//!
//! - PostgreSQL: `pg_stat_statements` (the statements the holders send:
//!   every one is a transaction of its own); the waiter's cost is the calls
//!   of the scan and claim statements while every identity is held (no one
//!   else scans or claims then).
//! - MariaDB: `Questions` (statements), and the waiter connects as another
//!   user whose statements `information_schema.USER_STATISTICS` counts.
//!
//! `summary.json` has the keys of the etcd run (`etcd_requests_per_s_*`
//! are then the database's statements per second) and `coordinator`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use snowmint_db::{DbConfig, LeasedGenerator};

use crate::run::{
    Config, Fleet, Outcome, Runs, check_claim, crash_first, finish_minting, raise_open_files,
    rss_kib, start_lanes, wait_held,
};
use snowmint_testkit::db::{Mariadb, PgBouncer, Postgres, psql_url};

/// A waiter may cost the database at most this many statements a second.
pub const MAX_WAITER_STATEMENTS_PER_S: f64 = 1.5;
/// An idle `serve` may write its mark at most this often, per second.
pub const MAX_SERVE_IDLE_MARKS_PER_S: f64 = 0.2;
const DB: &str = "scale";

/// Which database, and how to reach and count it.
enum Server {
    Postgres { pg: Postgres, bouncer: PgBouncer },
    Mariadb(Mariadb),
}

/// The database's counters at one moment.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    /// Statements of every client.
    statements: f64,
    /// The waiter's statements.
    waiter: f64,
    /// Mark writes.
    marks: f64,
}

impl Server {
    fn start(mysql: bool, identities: usize) -> anyhow::Result<Server> {
        if mysql {
            let my = Mariadb::start_tcp().context("MariaDB is not installed")?;
            my.create_database(DB);
            my.sql(DB, "SET GLOBAL userstat = 1;");
            return Ok(Server::Mariadb(my));
        }
        let pg = Postgres::builder()
            .tcp()
            .setting("shared_preload_libraries", "pg_stat_statements")
            .setting("pg_stat_statements.max", "1000")
            .start()
            .context("PostgreSQL is not installed")?;
        pg.create_database(DB);
        pg.psql(DB, "CREATE EXTENSION pg_stat_statements;");
        // Enough server connections for the holders' statements, far fewer
        // than their client connections (2 each).
        let pool = u32::try_from(identities / 16).unwrap_or(64).clamp(8, 64);
        let bouncer = PgBouncer::start(&pg, pool).context("PgBouncer is not installed")?;
        Ok(Server::Postgres { pg, bouncer })
    }

    fn name(&self) -> &'static str {
        match self {
            Server::Postgres { .. } => "postgres",
            Server::Mariadb(_) => "mysql",
        }
    }

    /// The holders' URL: PgBouncer's, or MariaDB's `snowmint` user.
    fn url(&self) -> String {
        match self {
            Server::Postgres { bouncer, .. } => bouncer.url(DB),
            Server::Mariadb(my) => my.url(DB),
        }
    }

    /// The waiter's URL: the same for PostgreSQL (its statements are told
    /// apart by text), another user for MariaDB.
    fn waiter_url(&self) -> String {
        match self {
            Server::Postgres { bouncer, .. } => bouncer.url(DB),
            Server::Mariadb(my) => my.root_url(DB),
        }
    }

    fn config(&self, url: String, table: &str, ttl: u64) -> DbConfig {
        match self {
            Server::Postgres { .. } => DbConfig::postgres(url),
            Server::Mariadb(_) => DbConfig::mysql(url),
        }
        .table(table)
        .lease_ttl(Duration::from_secs(ttl))
    }

    fn sql(&self, script: &str) -> anyhow::Result<String> {
        match self {
            Server::Postgres { pg, .. } => {
                psql_url(&pg.url(DB), script, Duration::from_secs(30)).map_err(anyhow::Error::msg)
            }
            Server::Mariadb(my) => my.try_sql(DB, script).map_err(anyhow::Error::msg),
        }
    }

    fn counts(&self) -> anyhow::Result<Counts> {
        let out = match self {
            Server::Postgres { .. } => self.sql(
                "SELECT \
                 coalesce(sum(calls) FILTER (WHERE query NOT LIKE '%pg_stat%'), 0), \
                 coalesce(sum(calls) FILTER (WHERE query LIKE 'SELECT identity, (lease IS NOT NULL%' \
                   OR query LIKE 'WITH old AS%'), 0), \
                 coalesce(sum(calls) FILTER (WHERE query LIKE '%SET mark = GREATEST%'), 0) \
                 FROM pg_stat_statements;",
            )?,
            Server::Mariadb(_) => self.sql(
                "SELECT (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE \
                 VARIABLE_NAME = 'QUESTIONS'), \
                 IFNULL((SELECT SELECT_COMMANDS + UPDATE_COMMANDS + OTHER_COMMANDS FROM \
                 information_schema.USER_STATISTICS WHERE USER = 'root'), 0), \
                 (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE \
                 VARIABLE_NAME = 'COM_UPDATE');",
            )?,
        };
        let fields: Vec<f64> = out
            .trim()
            .split(['|', '\t'])
            .map(|f| f.trim().parse().unwrap_or(0.0))
            .collect();
        match fields[..] {
            [statements, waiter, marks] => Ok(Counts {
                statements,
                waiter,
                marks,
            }),
            _ => bail!("unexpected counters: {out:?}"),
        }
    }
}

/// Starts generators `range` into the fleet's slots, off the async workers.
async fn start(
    fleet: &Arc<Fleet>,
    config: DbConfig,
    range: std::ops::Range<usize>,
) -> anyhow::Result<()> {
    let fleet = Arc::clone(fleet);
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        for i in range {
            let generator = LeasedGenerator::spawn(config.clone().holder(format!("scale {i}")))
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

/// Runs the phases against PostgreSQL (`mysql` false) or MariaDB.
///
/// # Errors
///
/// When the database does not start or cannot be counted.
pub async fn run(config: Config, mysql: bool) -> anyhow::Result<Outcome> {
    let n = config.identities;
    if !(1..=1024).contains(&n) {
        bail!("identities must be 1..=1024, got {n}");
    }
    raise_open_files();
    std::fs::create_dir_all(&config.out)
        .with_context(|| format!("create {}", config.out.display()))?;
    let server = tokio::task::spawn_blocking(move || Server::start(mysql, n)).await??;
    let table = "scale_identities";
    let fleet_config = server.config(server.url(), table, config.lease_ttl);
    // The table made by the first holder would race the filler: make it now.
    server.sql(&snowmint_db::ddl(
        if mysql {
            snowmint_db::Dialect::Mysql
        } else {
            snowmint_db::Dialect::Postgres
        },
        &snowmint_db::Table::parse(table).map_err(anyhow::Error::msg)?,
    ))?;
    if n < 1024 {
        server.sql(&format!(
            "UPDATE {table} SET lease = 1, holder = 'scale filler', expires_ms = 9000000000000, \
             released = false WHERE identity >= {n};"
        ))?;
    }
    let mut failures = Vec::new();
    let fleet = Arc::new(Fleet::default());
    let since = Instant::now();
    let held_twice = Arc::new(Mutex::new(0usize));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (fleet, sampling, held_twice) = (
            Arc::clone(&fleet),
            Arc::clone(&sampling),
            Arc::clone(&held_twice),
        );
        tokio::spawn(async move {
            while sampling.load(Ordering::Relaxed) {
                let (_, twice) = fleet.held();
                {
                    let mut worst = held_twice.lock().unwrap_or_else(PoisonError::into_inner);
                    *worst = (*worst).max(twice);
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    };

    // 1. Claim.
    let rss_before = rss_kib();
    println!(
        "scale: starting {n} LeasedGenerators at once ({})",
        server.name()
    );
    start(&fleet, fleet_config.clone(), 0..n).await?;
    let claim_all_s = wait_held(&fleet, n, since, config.claim_limit).await;
    let claimed = fleet.held().0;
    let claim_txns = fleet.claim_attempts() as f64;
    check_claim(
        &mut failures,
        &config,
        claim_all_s,
        claimed,
        claim_txns,
        "statements",
    );

    // 2. Steady state, minting.
    let stop = Arc::new(AtomicBool::new(false));
    let runs: Runs = Arc::default();
    let lanes = start_lanes(&fleet, &config, &stop, &runs)?;
    tokio::time::sleep(
        config
            .mint_every
            .max(Duration::from_secs(config.lease_ttl / 2)),
    )
    .await;
    let c0 = server.counts()?;
    let t0 = Instant::now();
    tokio::time::sleep(config.steady).await;
    let c1 = server.counts()?;
    let steady_per_s = (c1.statements - c0.statements) / t0.elapsed().as_secs_f64();
    let rss_per_generator_kib = rss_kib().saturating_sub(rss_before) as f64 / n as f64;
    println!(
        "scale: steady state {steady_per_s:.0} statements/s, {rss_per_generator_kib:.0} KiB per generator"
    );

    // 3. One more: it must wait, cheaply.
    let waiter_config = server.config(server.waiter_url(), table, config.lease_ttl);
    let w0 = server.counts()?;
    let watch = Instant::now();
    let waiter =
        tokio::task::spawn_blocking(move || LeasedGenerator::spawn(waiter_config)).await??;
    let mut waiter_held = false;
    while watch.elapsed() < config.waiter {
        waiter_held |= waiter.ready_identity().is_some();
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let all_taken = waiter.all_taken();
    waiter.shutdown().await;
    let w1 = server.counts()?;
    let waiter_per_s = (w1.waiter - w0.waiter) / watch.elapsed().as_secs_f64();
    tokio::task::spawn_blocking(move || drop(waiter)).await?;
    if waiter_held {
        failures.push("the waiter held an identity while all were held".to_owned());
    }
    if !all_taken {
        failures.push("the waiter was not waiting for a free identity".to_owned());
    }
    if waiter_per_s > MAX_WAITER_STATEMENTS_PER_S {
        failures.push(format!(
            "the waiter cost {waiter_per_s:.2} statements/s (at most {MAX_WAITER_STATEMENTS_PER_S})"
        ));
    }
    println!("scale: the waiter cost {waiter_per_s:.2} statements/s");

    // 4. The storm.
    let k = config.storm.min(n);
    let kill_at = Instant::now();
    let storm_killed = crash_first(&fleet, k).await?;
    start(&fleet, fleet_config.clone(), n..n + storm_killed).await?;
    let storm_limit = config.claim_limit + Duration::from_secs(3 * config.lease_ttl);
    let storm_reclaimed_s = wait_held(&fleet, n, kill_at, storm_limit).await;
    match storm_reclaimed_s {
        Some(s) => {
            println!("scale: {storm_killed} killed holders' identities held again after {s:.1} s")
        }
        None => failures.push(format!(
            "{} of {n} identities held {storm_limit:?} after {storm_killed} holders were killed",
            fleet.held().0
        )),
    }
    tokio::time::sleep(config.mint_every * 2).await;
    let (ids, duplicates) = finish_minting(&stop, lanes, &runs, &held_twice, &mut failures);
    let rest: Vec<_> = fleet.lock().drain(..).flatten().collect();
    tokio::task::spawn_blocking(move || {
        for generator in rest {
            if let Ok(generator) = Arc::try_unwrap(generator) {
                generator.abandon();
            }
        }
    })
    .await?;
    sampling.store(false, Ordering::Relaxed);
    let _ = sampler.await;

    // 5. Idle `serve` processes, in a table of their own.
    let flag = format!("--{}", server.name());
    let args = [
        flag,
        server.url(),
        "--db-table".to_owned(),
        "scale_serve".to_owned(),
        "--lease-ttl".to_owned(),
        config.lease_ttl.to_string(),
    ];
    println!(
        "scale: {} idle `snowmint serve {}` for {:?}",
        config.serve_instances, args[0], config.serve_idle
    );
    let mut served = crate::serve::spawn_ready(
        &config.snowmint,
        &args,
        config.serve_instances,
        &config.out.join("logs"),
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(config.lease_ttl / 2 + 1)).await;
    let i0 = server.counts()?;
    let idle_from = Instant::now();
    tokio::time::sleep(config.serve_idle).await;
    let i1 = server.counts()?;
    let idle_seconds = idle_from.elapsed().as_secs_f64();
    crate::serve::still_running(&mut served)?;
    drop(served);
    let per = |x: f64| x / idle_seconds / config.serve_instances as f64;
    let idle_statements = per(i1.statements - i0.statements);
    let idle_marks = per(i1.marks - i0.marks);
    println!(
        "scale: an idle serve costs {idle_statements:.3} statements/s, {idle_marks:.3} writes/s"
    );
    if !mysql && idle_marks > MAX_SERVE_IDLE_MARKS_PER_S {
        failures.push(format!(
            "an idle serve wrote its mark {idle_marks:.3} times a second (at most {MAX_SERVE_IDLE_MARKS_PER_S})"
        ));
    }

    let round3 = |x: f64| (x * 1000.0).round() / 1000.0;
    let summary = serde_json::json!({
        "coordinator": server.name(),
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
            "instances": config.serve_instances,
            "seconds": round3(idle_seconds),
            "etcd_requests_per_s": round3(idle_statements),
            "etcd_txns_per_s": round3(idle_marks),
        },
    });
    std::fs::write(
        config.out.join("summary.json"),
        serde_json::to_string_pretty(&summary)? + "\n",
    )
    .context("write summary.json")?;
    Ok(Outcome { summary, failures })
}
