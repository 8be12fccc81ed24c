//! One chaos run: start etcd (or the database) and the instances, mint from every instance
//! while the nemesis carries out the schedule and the probes watch
//! `/readyz`, then stop everything, check and report.
//!
//! Every process the run starts is killed when it ends, also on an error or
//! SIGINT/SIGTERM (`scripts/chaos` also kills the harness's process group
//! afterwards, for the case the harness itself is killed). Every loop is
//! bounded in time: the load stops after `seconds`, faults still under way
//! get at most [`GRACE`] more.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::process::Command;
use tokio::task::JoinHandle;

use super::checker;
use super::database::{self, Database};
use super::history::{FaultRecord, History, Mint, Probe, Readiness};
use super::redis::{self as redis_lane, RedisServer};
use super::report;
use super::schedule::{self, Coordinator, Fault, FaultKind};
use crate::clock::{self, FakeClock};
use crate::etcd::{self, EtcdCluster};
use crate::proxy::Proxy;
use crate::serve::{self, Listen, Output, Served};

pub use super::config::{Config, ETCD_DATACENTER, Outcome, free_identities, plan};

/// How long faults still under way when the load stops may take to heal.
pub const GRACE: Duration = Duration::from_secs(60);

/// How often each instance's `/readyz` is probed.
pub const PROBE_EVERY: Duration = Duration::from_millis(150);

/// The identity of the static-mode instance (leased instances lease
/// workers of datacenter [`ETCD_DATACENTER`] only, so they never reach it).
pub const STATIC_IDENTITY: (u8, u8) = (31, 31);

/// A `snowmint serve` process the harness owns, on a fixed address.
struct Instance {
    name: String,
    addr: SocketAddr,
    /// Its flags after `serve --listen ADDR`.
    args: Vec<String>,
    clock: FakeClock,
    log: PathBuf,
    child: Option<Served>,
    /// One proxy per etcd member, or one to the database (empty in static
    /// mode): the instance's line to its coordinator.
    proxies: Vec<Proxy>,
}

impl Instance {
    /// Starts the process (on its address, under its clock, appending to
    /// its log) and waits until it owns its listening socket.
    async fn spawn(&mut self, binary: &Path) -> anyhow::Result<()> {
        let builder = serve::Builder::new(binary)
            .name(&self.name)
            .listen(Listen::Fixed(self.addr))
            .args(&self.args)
            .envs(self.clock.env())
            // Not one access-log line per mint: the tail shown on a failure
            // should be the lease and shutdown events.
            .env("RUST_LOG", "info,snowmint::access=warn")
            .output(Output::Append(self.log.clone()))
            .start_limit(Duration::from_secs(20));
        self.child = Some(tokio::task::spawn_blocking(move || builder.start()).await??);
        Ok(())
    }

    /// The process ID while the process runs.
    fn pid(&mut self) -> Option<u32> {
        let child = self.child.as_mut()?;
        match child.try_wait() {
            Ok(None) => Some(child.pid()),
            _ => None,
        }
    }

    /// SIGKILLs and reaps the process; `false` when none was running.
    async fn kill(&mut self) -> bool {
        let running = self.pid().is_some();
        if let Some(mut child) = self.child.take() {
            let _ = tokio::task::spawn_blocking(move || child.kill()).await;
        }
        running
    }
}

type Shared<T> = Arc<tokio::sync::Mutex<T>>;

/// Everything the tasks of one run share.
struct World {
    config: Config,
    t0: Instant,
    instances: Vec<Shared<Instance>>,
    /// The etcd cluster, with etcd.
    cluster: Option<Arc<Mutex<EtcdCluster>>>,
    /// The database server, with PostgreSQL or MySQL.
    database: Option<Arc<Database>>,
    /// The Redis server, with Redis.
    redis: Option<Arc<RedisServer>>,
    history: Mutex<History>,
    stop: AtomicBool,
}

impl World {
    fn now_us(&self) -> u64 {
        self.t0.elapsed().as_micros() as u64
    }

    fn incident(&self, what: String) {
        eprintln!("chaos: {what}");
        let at = self.now_us();
        self.history.lock().unwrap().incidents.push((at, what));
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Runs one chaos run as `config` says, and writes its report.
///
/// # Errors
///
/// When the run cannot be set up (etcd, etcdctl, the database server,
/// PgBouncer, libfaketime or the binary missing, a process that does not
/// start) or the report cannot be written.
/// A run whose checks fail is not an error: see [`Outcome::passed`].
pub async fn run(config: Config) -> anyhow::Result<Outcome> {
    let library =
        clock::libfaketime().context("libfaketime is not installed (apt-get install faketime)")?;
    anyhow::ensure!(
        config.snowmint.exists(),
        "{} not found (cargo build --release --features etcd -p snowmint-cli)",
        config.snowmint.display()
    );
    std::fs::create_dir_all(&config.out)?;
    for stale in ["ids.txt", "summary.json", "report.html", "logs"] {
        let path = config.out.join(stale);
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_dir_all(&path);
    }
    let logs = config.out.join("logs");
    std::fs::create_dir_all(&logs)?;
    let scratch = tempfile::tempdir()?;
    preflight_clock(&config.snowmint, &library, scratch.path()).await?;

    let (cluster, database, redis) = match config.coordinator {
        Coordinator::Etcd => {
            let members = config.members;
            let cluster = tokio::task::spawn_blocking(move || EtcdCluster::start(members))
                .await?
                .map_err(anyhow::Error::msg)?;
            (Some(Arc::new(Mutex::new(cluster))), None, None)
        }
        Coordinator::Redis => {
            let free = free_identities(&config);
            // The crowd's recorded TTL is the instances' own.
            let ttl_ms = config.lease_ttl * 1000;
            let redis = database::unpanic(move || RedisServer::start(free, ttl_ms))
                .await
                .context("redis-server did not start")??;
            (None, None, Some(Arc::new(redis)))
        }
        coordinator => {
            // The primary's address, for PgBouncer and MariaDB instances:
            // routed to the primary by `start`, moved by a failover.
            let vip = Proxy::start(SocketAddr::from(([127, 0, 0, 1], 1))).await;
            let database = database::unpanic(move || Database::start(coordinator, vip))
                .await
                .with_context(|| format!("the {coordinator} server did not start"))??;
            let out = Command::new(&config.snowmint)
                .args(["sql", "coordinator", coordinator.name()])
                .output()
                .await?;
            anyhow::ensure!(
                out.status.success(),
                "snowmint sql coordinator {coordinator}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let script = String::from_utf8(out.stdout)?;
            let free = free_identities(&config);
            // The table's longest TTL is the instances' own: a claim after a
            // failover waits exactly as long as a lost holder may issue.
            let longest_ttl_ms = config.lease_ttl * 1000;
            let database = Arc::new(database);
            database::blocking(&database, move |d| d.crowd(&script, free, longest_ttl_ms))
                .await
                .context("load the coordinator table")?;
            (None, Some(database), None)
        }
    };
    let started_unix_ms = unix_ms();

    let mut instances = Vec::new();
    for i in 0..=config.instances {
        let statik = i == config.instances;
        let name = if statik {
            "static".to_owned()
        } else {
            format!("i{i}")
        };
        let ip = etcd::random_loopback();
        let addr = SocketAddr::from((ip, etcd::free_port_on(ip)));
        let mut args = Vec::new();
        let mut proxies = Vec::new();
        if statik {
            let state = scratch.path().join("static-state");
            args.extend([
                "--datacenter".to_owned(),
                STATIC_IDENTITY.0.to_string(),
                "--worker".to_owned(),
                STATIC_IDENTITY.1.to_string(),
                "--state-dir".to_owned(),
                state.display().to_string(),
            ]);
        } else if let Some(redis) = &redis {
            let proxy = Proxy::start(redis.addr()).await;
            args.extend(RedisServer::args(proxy.addr(), config.lease_ttl));
            args.extend(["--datacenter".to_owned(), ETCD_DATACENTER.to_string()]);
            proxies.push(proxy);
        } else if let Some(database) = &database {
            for upstream in database.upstreams(i) {
                proxies.push(Proxy::start(upstream).await);
            }
            let addrs: Vec<SocketAddr> = proxies.iter().map(Proxy::addr).collect();
            let (flag, url) = database.flag_and_url(&addrs);
            args.extend([
                flag.to_owned(),
                url,
                "--lease-ttl".to_owned(),
                config.lease_ttl.to_string(),
                "--datacenter".to_owned(),
                ETCD_DATACENTER.to_string(),
            ]);
        } else {
            let upstreams: Vec<SocketAddr> = {
                let cluster = cluster.as_ref().context("etcd")?.lock().unwrap();
                (0..cluster.len()).map(|m| cluster.addr(m)).collect()
            };
            for upstream in upstreams {
                proxies.push(Proxy::start(upstream).await);
            }
            let urls: Vec<String> = proxies.iter().map(Proxy::url).collect();
            args.extend([
                "--etcd".to_owned(),
                urls.join(","),
                "--etcd-prefix".to_owned(),
                "/chaos".to_owned(),
                "--lease-ttl".to_owned(),
                config.lease_ttl.to_string(),
                "--datacenter".to_owned(),
                ETCD_DATACENTER.to_string(),
            ]);
        }
        let clock = FakeClock::new(
            library.clone(),
            scratch.path().join(format!("{name}.clock")),
        )?;
        let mut instance = Instance {
            log: logs.join(format!("{name}.log")),
            name,
            addr,
            args,
            clock,
            child: None,
            proxies,
        };
        instance.spawn(&config.snowmint).await?;
        instances.push(Arc::new(tokio::sync::Mutex::new(instance)));
    }

    let world = Arc::new(World {
        t0: Instant::now(),
        instances,
        cluster,
        database,
        redis,
        history: Mutex::new(History {
            errors: vec![BTreeMap::new(); config.instances + 1],
            ..History::default()
        }),
        stop: AtomicBool::new(false),
        config,
    });
    wait_ready(&world).await?;

    let result = drive(&world).await;
    cleanup(&world).await;
    let members_logs: Vec<(String, String)> = match &world.cluster {
        Some(cluster) => {
            let cluster = cluster.lock().unwrap();
            (0..cluster.len())
                .map(|m| {
                    let log = cluster.dir().join(format!("etcd{m}.log"));
                    (cluster.name(m).to_owned(), log.display().to_string())
                })
                .collect()
        }
        None => Vec::new(),
    };
    for (name, path) in members_logs {
        let _ = std::fs::copy(path, logs.join(format!("{name}.log")));
    }
    let interrupted = result?;

    let history = std::mem::take(&mut *world.history.lock().unwrap());
    let findings = checker::check(&history.mints);
    let plan = plan(&world.config);
    let faults = schedule::schedule(&plan);
    let lanes: Vec<String> = {
        let mut lanes = Vec::new();
        for instance in &world.instances {
            lanes.push(instance.lock().await.name.clone());
        }
        if let Some(cluster) = &world.cluster {
            let cluster = cluster.lock().unwrap();
            lanes.extend((0..cluster.len()).map(|m| cluster.name(m).to_owned()));
        }
        if let Some(database) = &world.database {
            lanes.push(database.lane().to_owned());
        }
        if let Some(redis) = &world.redis {
            lanes.push(redis.lane().to_owned());
        }
        lanes
    };
    let input = report::Input {
        config: &world.config,
        started_unix_ms,
        history: &history,
        findings: &findings,
        schedule: &faults,
        lanes: &lanes,
        interrupted,
    };
    let outcome = report::write(&input, &world.config.out)?;
    Ok(outcome)
}

/// Checks that libfaketime shifts the wall clock the `snowmint` binary
/// reads: `snowmint compose` without a timestamp, 100 s back.
async fn preflight_clock(binary: &Path, library: &Path, dir: &Path) -> anyhow::Result<()> {
    let mut clock = FakeClock::new(library.to_owned(), dir.join("preflight.clock"))?;
    clock.set_offset_ms(-100_000)?;
    let out = Command::new(binary)
        .args([
            "compose",
            "--datacenter",
            "0",
            "--worker",
            "0",
            "--sequence",
            "0",
        ])
        .arg("--json")
        .envs(clock.env())
        .output()
        .await?;
    let now = unix_ms() as i64;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("snowmint compose under libfaketime: {out:?}"))?;
    let seen = v["timestamp_ms"].as_i64().context("timestamp_ms")?;
    anyhow::ensure!(
        (seen - now + 100_000).abs() < 5_000,
        "libfaketime does not shift snowmint's clock: asked -100 s, saw {} ms",
        seen - now
    );
    Ok(())
}

/// Waits (at most 60 s) until every instance answers `/readyz` with 200.
async fn wait_ready(world: &World) -> anyhow::Result<()> {
    for instance in &world.instances {
        let instance = Arc::clone(instance).lock_owned().await;
        tokio::task::spawn_blocking(move || {
            let served = instance
                .child
                .as_ref()
                .with_context(|| format!("{} is not running", instance.name))?;
            served.wait_ready(Duration::from_secs(60)).map(drop)
        })
        .await??;
    }
    Ok(())
}

/// The load, the probes, the watchdog and the nemesis, until `seconds` have
/// passed (and the faults under way have healed) or SIGINT/SIGTERM. Returns
/// whether the run was interrupted.
async fn drive(world: &Arc<World>) -> anyhow::Result<bool> {
    let mut tasks: Vec<JoinHandle<()>> = Vec::new();
    let mut addrs = Vec::new();
    for instance in &world.instances {
        addrs.push(instance.lock().await.addr);
    }
    for (i, &addr) in addrs.iter().enumerate() {
        tasks.push(tokio::spawn(client(Arc::clone(world), i, addr)));
        tasks.push(tokio::spawn(prober(Arc::clone(world), i, addr)));
    }
    tasks.push(tokio::spawn(watchdog(Arc::clone(world))));
    let faults = schedule::schedule(&plan(&world.config));
    let (coordinator_faults, instance_faults): (Vec<_>, Vec<_>) = faults
        .into_iter()
        .enumerate()
        .partition(|(_, f)| f.kind.on_coordinator());
    let mut lanes = vec![
        tokio::spawn(nemesis(Arc::clone(world), instance_faults)),
        tokio::spawn(nemesis(Arc::clone(world), coordinator_faults)),
    ];

    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let load_end = world.t0 + Duration::from_secs(world.config.seconds);
    let interrupted = tokio::select! {
        _ = tokio::time::sleep_until(load_end.into()) => false,
        _ = tokio::signal::ctrl_c() => true,
        _ = sigterm.recv() => true,
    };
    world.stop.store(true, Ordering::Relaxed);
    if interrupted {
        eprintln!("chaos: interrupted; stopping every process");
    } else {
        let healed = async {
            for lane in lanes.iter_mut() {
                let _ = lane.await;
            }
        };
        let _ = tokio::time::timeout(GRACE, healed).await;
    }
    for lane in &lanes {
        lane.abort();
    }
    // Clients and probes see `stop` within one request timeout.
    let finish = async {
        for task in tasks.iter_mut() {
            let _ = task.await;
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(10), finish).await;
    for task in &tasks {
        task.abort();
    }
    Ok(interrupted)
}

/// Kills every instance and etcd member (also paused ones: SIGKILL ends a
/// stopped process too) or the database server and PgBouncer (after
/// keeping their logs), and closes the proxies.
async fn cleanup(world: &World) {
    for instance in &world.instances {
        let mut instance = instance.lock().await;
        instance.kill().await;
        instance.proxies.clear();
    }
    if let Some(cluster) = &world.cluster {
        let cluster = Arc::clone(cluster);
        let _ = tokio::task::spawn_blocking(move || {
            let mut cluster = cluster.lock().unwrap_or_else(|e| e.into_inner());
            for m in 0..cluster.len() {
                cluster.kill(m);
            }
        })
        .await;
    }
    if let Some(db) = &world.database {
        let logs = world.config.out.join("logs");
        let _ = database::blocking(db, move |d| {
            d.keep_logs(&logs);
            d.kill();
        })
        .await;
    }
    if let Some(redis) = &world.redis {
        let logs = world.config.out.join("logs");
        let _ = redis_lane::blocking(redis, move |r| {
            r.kill();
            r.keep_logs(&logs);
        })
        .await;
    }
}

/// Mints from one instance until the load stops, recording every 200.
async fn client(world: Arc<World>, instance: usize, addr: SocketAddr) {
    let mut rng = ChaCha8Rng::seed_from_u64(
        world.config.seed ^ 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(instance as u64 + 1),
    );
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .connect_timeout(Duration::from_millis(500))
        .build()
        .expect("an HTTP client");
    while !world.stopped() {
        // Log-uniform in 1..=4096: as many small batches as large ones.
        let exponent: f64 = rng.random_range(0.0..=12.0);
        let count = (2f64.powf(exponent).round() as u32).clamp(1, 4096);
        let think = Duration::from_millis(rng.random_range(0..=world.config.think_ms));
        let start_us = world.now_us();
        let answer = async {
            let response = http
                .post(format!("http://{addr}/api/v1/ids?count={count}"))
                .send()
                .await?;
            let status = response.status().as_u16();
            let body = response.bytes().await?;
            Ok::<_, reqwest::Error>((status, body))
        }
        .await;
        let end_us = world.now_us();
        match answer {
            Ok((200, body)) => match parse_ids(&body) {
                Some(ids) => world.history.lock().unwrap().mints.push(Mint {
                    instance,
                    start_us,
                    end_us,
                    count,
                    ids,
                }),
                None => world.incident(format!(
                    "instance {instance} answered 200 with a body that is not {{\"ids\": [...]}}: {}",
                    String::from_utf8_lossy(&body[..body.len().min(200)])
                )),
            },
            Ok((status, _)) => {
                *world.history.lock().unwrap().errors[instance]
                    .entry(status)
                    .or_default() += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(_) => {
                *world.history.lock().unwrap().errors[instance]
                    .entry(0)
                    .or_default() += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        tokio::time::sleep(think).await;
    }
}

/// `{"ids": ["1", ...]}` as numbers.
fn parse_ids(body: &[u8]) -> Option<Vec<u64>> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    v["ids"]
        .as_array()?
        .iter()
        .map(|id| id.as_str()?.parse().ok())
        .collect()
}

/// Probes one instance's `/readyz` every [`PROBE_EVERY`] until the load stops.
async fn prober(world: Arc<World>, instance: usize, addr: SocketAddr) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .expect("an HTTP client");
    let mut every = tokio::time::interval(PROBE_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !world.stopped() {
        every.tick().await;
        let at_us = world.now_us();
        let readiness = match http.get(format!("http://{addr}/readyz")).send().await {
            Ok(r) if r.status() == 200 => Readiness::Ready,
            Ok(_) => Readiness::NotReady,
            Err(_) => Readiness::Unreachable,
        };
        world.history.lock().unwrap().probes.push(Probe {
            instance,
            at_us,
            readiness,
        });
    }
}

/// Notices an instance that exited without the nemesis killing it (an
/// incident: a crash), and starts it again.
async fn watchdog(world: Arc<World>) {
    while !world.stopped() {
        tokio::time::sleep(Duration::from_millis(500)).await;
        for instance in &world.instances {
            let mut instance = instance.lock().await;
            let exited = match instance.child.as_mut().map(Served::try_wait) {
                Some(Ok(Some(status))) => Some(status.to_string()),
                Some(Err(e)) => Some(e.to_string()),
                _ => None,
            };
            if let Some(status) = exited {
                instance.child = None;
                world.incident(format!(
                    "{} exited on its own ({status}): {}",
                    instance.name,
                    serve::tail(&instance.log, 5)
                ));
                if let Err(e) = instance.spawn(&world.config.snowmint).await {
                    world.incident(format!("{} did not restart: {e:#}", instance.name));
                }
            }
        }
    }
}

/// Carries out one lane of the schedule, one fault after the other.
async fn nemesis(world: Arc<World>, faults: Vec<(usize, Fault)>) {
    for (index, fault) in faults {
        tokio::time::sleep_until((world.t0 + Duration::from_millis(fault.at_ms)).into()).await;
        if world.stopped() && world.t0.elapsed() > Duration::from_secs(world.config.seconds) + GRACE
        {
            return;
        }
        let record = FaultRecord {
            index,
            kind: fault.kind,
            lane: None,
            start_us: world.now_us(),
            end_us: None,
            happened: false,
            detail: String::new(),
            unconfirmed_renewals: None,
        };
        let slot = {
            let mut history = world.history.lock().unwrap();
            history.faults.push(record);
            history.faults.len() - 1
        };
        let update = Recorder {
            world: &world,
            slot,
        };
        let outcome = if fault.kind.on_etcd() {
            etcd_fault(&world, &fault, &update).await
        } else if fault.kind.on_db() {
            db_fault(&world, &fault, &update).await
        } else if fault.kind.on_redis() {
            redis_fault(&world, &fault, &update).await
        } else {
            instance_fault(&world, &fault, &update).await
        };
        let end = world.now_us();
        update.set(|r| r.end_us = Some(end));
        if let Err(e) = outcome {
            world.incident(format!("fault {index} ({}): {e:#}", fault.kind.name()));
        }
    }
}

/// Fills in one fault's record as the fault goes.
struct Recorder<'a> {
    world: &'a World,
    slot: usize,
}

impl Recorder<'_> {
    fn set(&self, f: impl FnOnce(&mut FaultRecord)) {
        f(&mut self.world.history.lock().unwrap().faults[self.slot]);
    }
}

async fn instance_fault(world: &World, fault: &Fault, update: &Recorder<'_>) -> anyhow::Result<()> {
    let target = fault.target.context("instance faults have a target")?;
    let shared = &world.instances[target];
    let hold = Duration::from_millis(fault.hold_ms);
    let name = shared.lock().await.name.clone();
    update.set(|r| r.lane = Some(name.clone()));
    match fault.kind {
        FaultKind::InstanceKill | FaultKind::StaticKillClockBack => {
            let killed = shared.lock().await.kill().await;
            update.set(|r| r.happened = killed);
            tokio::time::sleep(hold).await;
            let mut instance = shared.lock().await;
            let mut detail = format!("SIGKILL, down {} ms", fault.hold_ms);
            if fault.kind == FaultKind::StaticKillClockBack {
                let offset = instance.clock.offset_ms() - fault.back_ms as i64;
                instance.clock.set_offset_ms(offset)?;
                detail += &format!(
                    ", restarted with its clock {} s",
                    clock::format_offset(offset)
                );
            }
            update.set(|r| r.detail = detail.clone());
            instance.spawn(&world.config.snowmint).await?;
        }
        FaultKind::InstancePause => {
            let pid = shared.lock().await.pid();
            let Some(pid) = pid else {
                update.set(|r| r.detail = "no process to pause".to_owned());
                return Ok(());
            };
            let stopped = tokio::task::spawn_blocking(move || {
                crate::signal::stop(pid, Duration::from_secs(10))
            })
            .await?;
            update.set(|r| {
                r.happened = stopped.is_ok();
                r.detail = format!("SIGSTOP for {} ms", fault.hold_ms);
            });
            tokio::time::sleep(hold).await;
            tokio::task::spawn_blocking(move || {
                crate::signal::resume(pid, Duration::from_secs(10))
            })
            .await??;
        }
        FaultKind::Partition => {
            {
                let instance = shared.lock().await;
                instance.proxies.iter().for_each(Proxy::cut);
            }
            update.set(|r| {
                r.happened = true;
                r.detail = format!(
                    "line to {} cut for {} ms",
                    world.config.coordinator, fault.hold_ms
                );
            });
            tokio::time::sleep(hold).await;
            shared.lock().await.proxies.iter().for_each(Proxy::restore);
        }
        FaultKind::ClockStep => {
            let alive = shared.lock().await.pid().is_some();
            let back = -(fault.back_ms as i64);
            shared.lock().await.clock.set_offset_ms(back)?;
            update.set(|r| {
                r.happened = alive;
                r.detail = format!(
                    "clock {} s for {} ms, then {} s for {} ms, then back to the real time",
                    clock::format_offset(back),
                    fault.hold_ms,
                    clock::format_offset(fault.forward_ms as i64),
                    fault.hold_ms
                );
            });
            tokio::time::sleep(hold).await;
            shared
                .lock()
                .await
                .clock
                .set_offset_ms(fault.forward_ms as i64)?;
            tokio::time::sleep(hold).await;
            shared.lock().await.clock.set_offset_ms(0)?;
        }
        kind => bail!("{} is not an instance fault", kind.name()),
    }
    Ok(())
}

/// How long a leader kill looks for the leader before it gives up (and
/// the run fails, the fault not having happened).
const LEADER_SEARCH: Duration = Duration::from_secs(15);

/// Something done to the cluster on a blocking thread.
type ClusterOp = Box<dyn FnOnce(&mut EtcdCluster) -> anyhow::Result<bool> + Send>;

async fn etcd_fault(world: &World, fault: &Fault, update: &Recorder<'_>) -> anyhow::Result<()> {
    let cluster = Arc::clone(
        world
            .cluster
            .as_ref()
            .context("an etcd fault without etcd")?,
    );
    let hold = Duration::from_millis(fault.hold_ms);
    let blocking = |f: ClusterOp| {
        let cluster = Arc::clone(&cluster);
        tokio::task::spawn_blocking(move || f(&mut cluster.lock().unwrap()))
    };
    // A stale_leader's target is an instance; its member is the leader.
    let member = match fault
        .target
        .filter(|_| fault.kind != FaultKind::StaleLeader)
    {
        Some(m) => Some(m),
        None => {
            // The cluster may be between leaders (an election after the
            // previous fault) or slow to answer under load: ask again for
            // a while before giving up on this fault.
            let mut found = None;
            let asking = Instant::now();
            while found.is_none() && asking.elapsed() < LEADER_SEARCH {
                let leader = Arc::clone(&cluster);
                found =
                    tokio::task::spawn_blocking(move || leader.lock().unwrap().leader()).await?;
                if found.is_none() {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }
            found
        }
    };
    let Some(m) = member else {
        update.set(|r| r.detail = format!("no leader found within {} s", LEADER_SEARCH.as_secs()));
        return Ok(());
    };
    update.set(|r| r.lane = Some(format!("etcd{m}")));
    let restart = move |c: &mut EtcdCluster| {
        c.restart(m, Duration::from_secs(30))
            .map_err(anyhow::Error::msg)
            .map(|()| true)
    };
    match fault.kind {
        FaultKind::EtcdLeaderKill | FaultKind::EtcdMemberRestart => {
            // Down (killed, or stopped as an operator stops it) for the
            // fault's hold, then restarted on its data.
            let (down, how): (ClusterOp, &str) = if fault.kind == FaultKind::EtcdLeaderKill {
                (Box::new(move |c| Ok(c.kill(m))), "SIGKILL the leader")
            } else {
                (
                    Box::new(move |c| Ok(c.terminate(m, Duration::from_secs(10)))),
                    "SIGTERM",
                )
            };
            let stopped = blocking(down).await??;
            update.set(|r| {
                r.happened = stopped;
                r.detail = format!("{how}, down {} ms", fault.hold_ms);
            });
            tokio::time::sleep(hold).await;
            blocking(Box::new(restart)).await??;
        }
        FaultKind::EtcdMemberPause => {
            let paused = blocking(Box::new(move |c| Ok(c.pause(m).is_ok()))).await??;
            update.set(|r| {
                r.happened = paused;
                r.detail = format!("SIGSTOP for {} ms", fault.hold_ms);
            });
            tokio::time::sleep(hold).await;
            if paused {
                blocking(Box::new(move |c| {
                    c.resume(m).map(|()| true).map_err(Into::into)
                }))
                .await??;
            }
        }
        FaultKind::StaleLeader => {
            let target = fault.target.context("a stale_leader has an instance")?;
            let shared = &world.instances[target];
            let (name, addr) = {
                let instance = shared.lock().await;
                (instance.name.clone(), instance.addr)
            };
            let (leader, own): (SocketAddr, Vec<SocketAddr>) = {
                let cluster = cluster.lock().unwrap();
                (
                    cluster.addr(m),
                    (0..cluster.len()).map(|k| cluster.addr(k)).collect(),
                )
            };
            let before = unconfirmed_renewals(addr).await;
            // Every line of the instance now leads to the leader alone.
            shared
                .lock()
                .await
                .proxies
                .iter()
                .for_each(|p| p.route(leader));
            tokio::time::sleep(Duration::from_millis(schedule::STALE_ROUTE_BEFORE_MS)).await;
            let paused = blocking(Box::new(move |c| Ok(c.pause(m).is_ok()))).await??;
            // While it is stopped, nothing the others send reaches it, so
            // that it resumes without having heard of the election (as root;
            // without iptables the fault still pauses it, and the resumed
            // leader usually hears of the election before it answers).
            let cut = Arc::clone(&cluster);
            let isolation = tokio::task::spawn_blocking(move || {
                cut.lock().unwrap_or_else(|e| e.into_inner()).cut_off(m)
            })
            .await?;
            let cut_note = match &isolation {
                Ok(_) => format!(
                    "cut off from the other members until {} ms after",
                    schedule::STALE_CUT_AFTER_MS
                ),
                Err(e) => format!("not cut off from the other members ({e})"),
            };
            update.set(|r| {
                r.happened = paused;
                r.detail = format!(
                    "{name} routed to etcd{m} (the leader) only; etcd{m} SIGSTOP for {} ms, \
                     then SIGCONT, {cut_note}; {name} routed back {} ms later",
                    fault.hold_ms,
                    schedule::STALE_ROUTE_AFTER_MS
                );
            });
            tokio::time::sleep(hold).await;
            if paused {
                blocking(Box::new(move |c| {
                    c.resume(m).map(|()| true).map_err(Into::into)
                }))
                .await??;
            }
            tokio::time::sleep(Duration::from_millis(schedule::STALE_CUT_AFTER_MS)).await;
            drop(isolation);
            tokio::time::sleep(Duration::from_millis(schedule::STALE_ROUTE_AFTER_MS)).await;
            let instance = shared.lock().await;
            for (proxy, upstream) in instance.proxies.iter().zip(own) {
                proxy.route(upstream);
            }
            drop(instance);
            let after = unconfirmed_renewals(addr).await;
            if let (Some(before), Some(after)) = (before, after) {
                let n = after.saturating_sub(before);
                update.set(|r| {
                    r.unconfirmed_renewals = Some(n);
                    r.detail += &format!("; {name} did not count {n} keep-alive answers");
                });
            }
        }
        kind => bail!("{} is not an etcd fault", kind.name()),
    }
    Ok(())
}

/// Carries out one fault of the database lane: the server paused, crashed
/// and restarted, its clock stepped, or the lines of some instances cut.
/// A server that was paused is resumed even when the pause failed half-way.
async fn db_fault(world: &World, fault: &Fault, update: &Recorder<'_>) -> anyhow::Result<()> {
    let db = world
        .database
        .as_ref()
        .context("a database fault without a database")?;
    let hold = Duration::from_millis(fault.hold_ms);
    update.set(|r| r.lane = Some(db.lane().to_owned()));
    match fault.kind {
        FaultKind::DbShortPause | FaultKind::DbLongPause => {
            let paused = database::blocking(db, Database::pause).await;
            update.set(|r| {
                r.happened = paused.is_ok();
                r.detail = format!(
                    "every server process SIGSTOP for {} ms (TTL {} s)",
                    fault.hold_ms, world.config.lease_ttl
                );
            });
            tokio::time::sleep(hold).await;
            database::blocking(db, Database::resume).await?;
            paused?;
        }
        FaultKind::DbCrashRestart => {
            let crashed = database::blocking(db, Database::crash).await;
            update.set(|r| {
                r.happened = crashed.is_ok();
                r.detail = format!("crashed, down {} ms, then started again", fault.hold_ms);
            });
            tokio::time::sleep(hold).await;
            database::blocking(db, Database::restart).await?;
            crashed?;
        }
        FaultKind::DbPartition => {
            let mut names = Vec::new();
            for &i in &fault.group {
                let instance = world.instances[i].lock().await;
                instance.proxies.iter().for_each(Proxy::cut);
                names.push(instance.name.clone());
            }
            update.set(|r| {
                r.happened = !names.is_empty();
                r.detail = format!(
                    "line to {} cut for {} ({} of {} instances) for {} ms",
                    db.lane(),
                    names.join(", "),
                    names.len(),
                    world.config.instances,
                    fault.hold_ms
                );
            });
            tokio::time::sleep(hold).await;
            for &i in &fault.group {
                let instance = world.instances[i].lock().await;
                instance.proxies.iter().for_each(Proxy::restore);
            }
        }
        FaultKind::DbClockStep => {
            let forward = fault.forward_ms as i64;
            let back = -(fault.back_ms as i64);
            let step = |offset: i64| database::blocking(db, move |d| d.set_clock_offset_ms(offset));
            step(forward).await?;
            update.set(|r| {
                r.happened = true;
                r.detail = format!(
                    "server clock {} s for {} ms, then {} s for {} ms, then back to the real \
                     time (TTL {} s)",
                    clock::format_offset(forward),
                    fault.hold_ms,
                    clock::format_offset(back),
                    fault.hold_ms,
                    world.config.lease_ttl
                );
            });
            tokio::time::sleep(hold).await;
            step(back).await?;
            tokio::time::sleep(hold).await;
            step(0).await?;
        }
        FaultKind::DbFailover => failover(world, db, fault, update).await?,
        kind => bail!("{} is not a database fault", kind.name()),
    }
    Ok(())
}

/// Carries out one fault of the Redis lane: the server paused, killed and
/// started again (from its append-only file, or empty), or the lines of
/// some instances cut. A server that was paused is resumed even when the
/// pause failed half-way, and a killed one is started again even when the
/// kill failed.
async fn redis_fault(world: &World, fault: &Fault, update: &Recorder<'_>) -> anyhow::Result<()> {
    let redis = world
        .redis
        .as_ref()
        .context("a Redis fault without Redis")?;
    let hold = Duration::from_millis(fault.hold_ms);
    let ttl = world.config.lease_ttl;
    update.set(|r| r.lane = Some(redis.lane().to_owned()));
    match fault.kind {
        FaultKind::RedisShortPause | FaultKind::RedisLongPause => {
            let paused = redis_lane::blocking(redis, RedisServer::pause).await;
            update.set(|r| {
                r.happened = paused.is_ok();
                r.detail = format!("SIGSTOP for {} ms (TTL {ttl} s)", fault.hold_ms);
            });
            tokio::time::sleep(hold).await;
            redis_lane::blocking(redis, RedisServer::resume).await?;
            paused?;
        }
        FaultKind::RedisCrashRestart | FaultKind::RedisEmptyRestart => {
            let before = redis_lane::blocking(redis, |r| (r.epoch(), r.keys())).await?;
            let empty = fault.kind == FaultKind::RedisEmptyRestart;
            let killed = redis_lane::blocking(redis, RedisServer::kill).await;
            update.set(|r| {
                r.happened = killed.is_ok();
                r.detail = format!("SIGKILL, down {} ms", fault.hold_ms);
            });
            tokio::time::sleep(hold).await;
            let started = Instant::now();
            let crowd = if empty {
                redis_lane::blocking(redis, RedisServer::restart_empty).await??
            } else {
                redis_lane::blocking(redis, RedisServer::start_again).await??
            };
            let took = started.elapsed().as_millis();
            let after = redis_lane::blocking(redis, |r| r.epoch()).await?;
            update.set(|r| {
                r.detail += &format!(
                    ", started again {} in {took} ms (epoch {} with {} keys, now {after}); \
                     the crowd bound again on {crowd} identities",
                    if empty {
                        "with its data deleted (every key lost)"
                    } else {
                        "from its append-only file"
                    },
                    before.0,
                    before.1.map_or_else(|| "?".to_owned(), |n| n.to_string()),
                );
            });
            killed?;
        }
        FaultKind::RedisPartition => {
            let mut names = Vec::new();
            for &i in &fault.group {
                let instance = world.instances[i].lock().await;
                instance.proxies.iter().for_each(Proxy::cut);
                names.push(instance.name.clone());
            }
            update.set(|r| {
                r.happened = !names.is_empty();
                r.detail = format!(
                    "line to redis cut for {} ({} of {} instances) for {} ms",
                    names.join(", "),
                    names.len(),
                    world.config.instances,
                    fault.hold_ms
                );
            });
            tokio::time::sleep(hold).await;
            for &i in &fault.group {
                let instance = world.instances[i].lock().await;
                instance.proxies.iter().for_each(Proxy::restore);
            }
        }
        kind => bail!("{} is not a Redis fault", kind.name()),
    }
    Ok(())
}

/// A lossy failover ([`FaultKind::DbFailover`]): the standby cut off for
/// `hold_ms` while the primary takes writes, the primary killed, down
/// `back_ms`, the standby promoted (the primary's proxy moved to it), and a
/// new standby made of it, to which every instance's proxy that led to the
/// killed primary now leads (PostgreSQL's multi-host URLs). The detail
/// names how much the failover lost.
async fn failover(
    world: &World,
    db: &Arc<Database>,
    fault: &Fault,
    update: &Recorder<'_>,
) -> anyhow::Result<()> {
    let cut = database::blocking(db, Database::cut_standby).await?;
    let standby = match world.config.coordinator {
        Coordinator::Mysql => "the replica's SQL thread stopped",
        _ => "the standby's WAL receiver stopped",
    };
    update.set(|r| {
        r.detail = format!(
            "{standby} for {} ms while the primary takes writes",
            fault.hold_ms
        );
    });
    tokio::time::sleep(Duration::from_millis(fault.hold_ms)).await;
    let lost = database::blocking(db, move |d| d.kill_primary(&cut)).await?;
    tokio::time::sleep(Duration::from_millis(fault.back_ms)).await;
    let promoted = Instant::now();
    database::blocking(db, Database::promote).await?;
    let took = promoted.elapsed().as_millis();
    update.set(|r| {
        r.happened = true;
        r.detail += &format!(
            "; primary SIGKILLed, down {} ms, standby promoted in {took} ms: lost at least {lost}",
            fault.back_ms
        );
    });
    let building = Instant::now();
    let (slot, addr) = database::blocking(db, Database::new_standby).await?;
    if world.config.coordinator == Coordinator::Postgres {
        for (i, instance) in world.instances.iter().enumerate() {
            if i < world.config.instances && !database::through_pgbouncer(i) {
                let instance = instance.lock().await;
                if let Some(proxy) = instance.proxies.get(slot) {
                    proxy.route(addr);
                }
            }
        }
    }
    update.set(|r| {
        r.detail += &format!(
            "; a new standby of it in {} ms",
            building.elapsed().as_millis()
        );
    });
    Ok(())
}

/// The instance's count of keep-alive answers it did not count (a metric
/// whose name holds `renewals_unconfirmed`), from its `/metrics`; `None`
/// when it does not answer (killed or paused by the other lane).
async fn unconfirmed_renewals(addr: SocketAddr) -> Option<u64> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(1))
        .build()
        .ok()?;
    let text = http
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    text.lines()
        .filter(|l| !l.starts_with('#') && l.contains("renewals_unconfirmed"))
        .find_map(|l| l.split_whitespace().last()?.parse::<f64>().ok())
        .map(|v| v as u64)
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
