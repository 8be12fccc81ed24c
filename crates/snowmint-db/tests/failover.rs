//! A lossy failover under load, against real servers started for each test
//! on loopback: PostgreSQL 15 with a streaming standby, and MariaDB 10.11
//! with a replica (issue 43's evidence).
//!
//! Instances with different TTLs hold the identities of one datacenter
//! (every other identity of it held for ever by a crowd), two of them
//! release theirs, the standby catches up, and is then cut off (PostgreSQL:
//! its WAL receiver stopped; MariaDB: its SQL thread stopped). Two
//! instances then claim the two released identities: claims, renewals and
//! marks the failover surely loses. Those two are cut off from the database
//! when the primary is killed (SIGKILL), so that they go on issuing for as
//! long as their fences allow, as an instance that does not hear of the
//! failover would; the standby is promoted (PostgreSQL instances follow it
//! through a multi-host URL with `target_session_attrs=read-write`, MariaDB
//! instances through a proxy the test moves to it), the test checks that
//! the two claims are gone from it, and newcomers arrive, which find those
//! two identities released on the new primary. Every instance mints the
//! whole time, every ID recorded with when it was asked for and answered.
//!
//! Checked: no ID twice, no two instances issuing as one identity at the
//! same time (the chaos checker's rules, holder overlaps and tenures
//! included), every instance issuing again after the failover, the new
//! epoch in the log ("the database's epoch changed", with the old and the
//! new one, and the lease's "may have lost the identity's last writes") and
//! in the instances' metrics. Without the epoch defence the newcomers issue
//! at once while the cut-off holders still do: overlaps and duplicates.
//!
//! Skipped with a printed reason when the servers are not installed, unless
//! SNOWMINT_REQUIRE_SERVICES=1 (as `scripts/test` sets).

use std::collections::HashMap;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use snowmint::{Generator, SnowflakeId};
use snowmint_db::{DbConfig, Dialect, GeneratorFactory, LeasedGenerator, Table};
use snowmint_testkit::chaos::checker::{Recorder, Rules};
use snowmint_testkit::db::Postgres;
use snowmint_testkit::db::replica::MariadbNode;
use snowmint_testkit::proxy::Proxy;

const DB: &str = "ids";
/// The datacenter under test: identities 224..=255.
const DATACENTER: u8 = 7;
/// How many of its workers are free for the instances at first (the crowd
/// holds the others).
const POOL: u16 = 5;
/// How many more the test frees after the failover, so that every
/// instance holds one again.
const MORE: u16 = 3;
/// The table's declared longest TTL (`longest_ttl_ms`): how long a claim
/// after the failover waits, since a lost holder may issue that long.
const LONGEST_TTL: Duration = Duration::from_secs(10);

fn row(worker: u16) -> u16 {
    u16::from(DATACENTER) * 32 + worker
}

/// The primary and its standby, and how instances reach whichever of
/// them is the primary.
enum Cluster {
    Postgres {
        primary: Postgres,
        standby: Postgres,
    },
    Mariadb {
        primary: MariadbNode,
        replica: MariadbNode,
        /// Where instances connect (each cut-off instance has its own in
        /// `lines`): moved to the replica when it is promoted.
        vip: Proxy,
        /// Every proxy to move at the promotion.
        lines: Mutex<Vec<Arc<Proxy>>>,
    },
}

impl Cluster {
    fn postgres() -> Option<Cluster> {
        logs();
        let primary = Postgres::start_tcp()?;
        primary.create_database(DB);
        let standby = Postgres::start_standby(&primary)?;
        Some(Cluster::Postgres { primary, standby })
    }

    async fn mariadb() -> Option<Cluster> {
        logs();
        let primary = MariadbNode::start(101, false)?;
        let replica = MariadbNode::replica_of(&primary, 102, false)?;
        primary.create_database(DB);
        let vip = Proxy::start(addr(primary.port())).await;
        Some(Cluster::Mariadb {
            primary,
            replica,
            vip,
            lines: Mutex::new(Vec::new()),
        })
    }

    fn dialect(&self) -> Dialect {
        match self {
            Cluster::Postgres { .. } => Dialect::Postgres,
            Cluster::Mariadb { .. } => Dialect::Mysql,
        }
    }

    /// An instance's config, reaching the primary of the day directly
    /// (PostgreSQL: both servers in a multi-host URL; MariaDB: the shared
    /// proxy).
    fn config(&self, ttl: Duration) -> DbConfig {
        match self {
            Cluster::Postgres { primary, standby } => {
                DbConfig::postgres(multi_host(primary.port(), standby.port()))
            }
            Cluster::Mariadb { vip, .. } => DbConfig::mysql(mysql_url(vip.addr())),
        }
        .lease_ttl(ttl)
        .datacenter(DATACENTER)
    }

    /// An instance's config through proxies of its own, which the test can
    /// cut (returned with it).
    async fn cuttable_config(&self, ttl: Duration) -> (DbConfig, Vec<Arc<Proxy>>) {
        let (config, proxies) = match self {
            Cluster::Postgres { primary, standby } => {
                let a = Arc::new(Proxy::start(addr(primary.port())).await);
                let b = Arc::new(Proxy::start(addr(standby.port())).await);
                let url = multi_host(a.addr().port(), b.addr().port());
                (DbConfig::postgres(url), vec![a, b])
            }
            Cluster::Mariadb { primary, lines, .. } => {
                let line = Arc::new(Proxy::start(addr(primary.port())).await);
                lines.lock().unwrap().push(Arc::clone(&line));
                (DbConfig::mysql(mysql_url(line.addr())), vec![line])
            }
        };
        (config.lease_ttl(ttl).datacenter(DATACENTER), proxies)
    }

    /// Runs `script` on the primary (the promoted one after
    /// [`promote`](Cluster::promote)), in the test's database.
    fn sql(&self, promoted: bool, script: &str) -> String {
        match (self, promoted) {
            (Cluster::Postgres { primary, .. }, false) => primary.psql(DB, script),
            (Cluster::Postgres { standby, .. }, true) => standby.psql(DB, script),
            (Cluster::Mariadb { primary, .. }, false) => primary.sql(DB, script),
            (Cluster::Mariadb { replica, .. }, true) => replica.sql(DB, script),
        }
    }

    /// Runs `script` on the standby (read-only).
    fn on_standby(&self, script: &str) -> String {
        self.sql(true, script)
    }

    /// Waits until the standby has applied everything the primary wrote.
    fn catch_up(&self) {
        match self {
            Cluster::Postgres { primary, standby } => standby.catch_up(primary),
            Cluster::Mariadb {
                primary, replica, ..
            } => replica.catch_up(primary),
        }
    }

    /// Cuts the standby off: nothing written from now on reaches it.
    fn cut_standby(&self) {
        match self {
            Cluster::Postgres { standby, .. } => {
                standby.stop_receiving();
            }
            Cluster::Mariadb { replica, .. } => replica.stop_sql_thread(),
        }
    }

    fn kill_primary(&self) {
        match self {
            Cluster::Postgres { primary, .. } => primary.kill(),
            Cluster::Mariadb { primary, .. } => primary.kill(),
        }
    }

    /// Promotes the standby, and (MariaDB) moves every proxy to it.
    fn promote(&self) {
        match self {
            Cluster::Postgres { standby, .. } => standby.promote(),
            Cluster::Mariadb {
                replica,
                vip,
                lines,
                ..
            } => {
                replica.promote();
                vip.route(addr(replica.port()));
                for line in lines.lock().unwrap().iter() {
                    line.route(addr(replica.port()));
                }
            }
        }
    }

    /// The epochs before and after the failover, as the coordinator names
    /// them.
    fn epochs(&self) -> (String, String) {
        match self {
            Cluster::Postgres { primary, .. } => {
                let system = primary.system_identifier();
                (format!("{system}/00000001"), format!("{system}/00000002"))
            }
            Cluster::Mariadb {
                primary, replica, ..
            } => (
                format!("server_id:{}", primary.server_id()),
                format!("server_id:{}", replica.server_id()),
            ),
        }
    }
}

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn multi_host(a: u16, b: u16) -> String {
    format!("postgres://postgres@127.0.0.1:{a},127.0.0.1:{b}/{DB}?target_session_attrs=read-write")
}

fn mysql_url(at: SocketAddr) -> String {
    format!(
        "mysql://{}:{}@{at}/{DB}",
        snowmint_testkit::db::MARIADB_USER,
        snowmint_testkit::db::MARIADB_PASSWORD
    )
}

/// Everything the lease crates log, kept for the test to read (and shown
/// when it fails).
static LOG: Mutex<Vec<u8>> = Mutex::new(Vec::new());

struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOG.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_writer(|| LogWriter)
        .with_ansi(false)
        .with_env_filter("snowmint_lease=info,snowmint_db=info")
        .try_init();
}

/// The lines of the log that contain every one of `words`.
fn log_lines(words: &[&str]) -> Vec<String> {
    let log = LOG.lock().unwrap();
    String::from_utf8_lossy(&log)
        .lines()
        .filter(|line| words.iter().all(|w| line.contains(w)))
        .map(str::to_owned)
        .collect()
}

/// The log's last lines, for a failure's message.
fn log_tail() -> String {
    let log = LOG.lock().unwrap();
    let text = String::from_utf8_lossy(&log);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(60)..].join("\n")
}

/// A generator whose reservation runs `window_ms` ahead: an instance cut
/// off from the database issues that long (within its fence) without a
/// write.
fn window(window_ms: u64) -> GeneratorFactory {
    Arc::new(move |identity, store| {
        Generator::builder_for(identity)
            .reserve_window_ms(window_ms)
            .store(store)
            .build()
    })
}

/// One instance that mints on a thread of its own until stopped, each
/// batch recorded with when it was asked for and answered.
struct Minter {
    name: &'static str,
    leased: Arc<LeasedGenerator>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What every instance minted, and when each last succeeded.
#[derive(Clone)]
struct Minted {
    log: Arc<Mutex<Recorder>>,
    last_ok: Arc<Mutex<HashMap<&'static str, Instant>>>,
}

impl Minted {
    fn new() -> Minted {
        Minted {
            log: Arc::new(Mutex::new(Recorder::since(Instant::now()))),
            last_ok: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    fn record(&self, name: &'static str, started: Instant, ids: &[SnowflakeId]) {
        let ended = Instant::now();
        self.log
            .lock()
            .unwrap()
            .record(name, started, ended, ids.iter().map(|id| id.get()));
        self.last_ok.lock().unwrap().insert(name, started);
    }

    /// Whether `name` began a mint that succeeded after `since`.
    fn issued_since(&self, name: &str, since: Instant) -> bool {
        self.last_ok
            .lock()
            .unwrap()
            .get(name)
            .is_some_and(|&t| t > since)
    }

    /// The highest ID `name` issued, if any.
    fn max_of(&self, name: &str) -> Option<u64> {
        let mut log = self.log.lock().unwrap();
        let instance = log.instance(name);
        log.mints()
            .iter()
            .filter(|m| m.instance == instance)
            .flat_map(|m| m.ids.iter().copied())
            .max()
    }

    fn start(&self, name: &'static str, leased: LeasedGenerator) -> Minter {
        let leased = Arc::new(leased);
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (leased, stop, minted) = (Arc::clone(&leased), Arc::clone(&stop), self.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let started = Instant::now();
                    let mut ids = Vec::with_capacity(16);
                    for _ in 0..16 {
                        match leased.next_id() {
                            Ok(id) => ids.push(id),
                            Err(_) => break,
                        }
                    }
                    if !ids.is_empty() {
                        minted.record(name, started, &ids);
                    }
                    std::thread::sleep(Duration::from_millis(if ids.is_empty() { 5 } else { 1 }));
                }
            })
        };
        Minter {
            name,
            leased,
            stop,
            thread: Some(thread),
        }
    }
}

impl Minter {
    /// Stops minting (the thread ends), keeping the lease.
    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }

    async fn shutdown(mut self) {
        self.halt();
        self.leased.shutdown().await;
    }

    fn identity_row(&self) -> Option<u16> {
        let identity = self.leased.identity()?;
        Some(u16::from(identity.datacenter()) * 32 + u16::from(identity.worker()))
    }
}

/// Waits until `f` holds, or panics naming `what` (with the log's tail)
/// after `limit`.
async fn until(limit: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < limit,
            "not within {limit:?}: {what}\n{}",
            log_tail()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until `minter` holds an identity; returns its row.
async fn holds(minter: &Minter) -> u16 {
    until(
        Duration::from_secs(60),
        &format!("{} holds an identity", minter.name),
        || minter.identity_row().is_some(),
    )
    .await;
    minter.identity_row().unwrap()
}

/// The holder and whether it was released, of row `n`, on the primary (the
/// promoted one when `promoted`).
fn holder_of(cluster: &Cluster, promoted: bool, n: u16) -> (String, bool) {
    let out = cluster.sql(
        promoted,
        &format!("SELECT holder, released FROM snowmint_identities WHERE identity = {n}"),
    );
    let fields: Vec<&str> = out.trim().split(['|', '\t']).collect();
    let released = matches!(fields.get(1).copied(), Some("t" | "1"));
    (fields[0].to_owned(), released)
}

/// The scenario of the module docs.
async fn lossy_failover(cluster: Cluster) {
    let dialect = cluster.dialect();
    // The table, created on the primary as `serve` would; its declared
    // longest TTL; the crowd over the datacenter's other workers.
    cluster.sql(false, &snowmint_db::ddl(dialect, &Table::default()));
    let free_to = row(POOL);
    let last = row(31);
    cluster.sql(
        false,
        &format!(
            "UPDATE snowmint_identities SET longest_ttl_ms = {};\n\
             UPDATE snowmint_identities SET lease = 1, holder = 'crowd', instance = 0, \
             ttl_ms = 3000, expires_ms = 9000000000000, released = false \
             WHERE identity BETWEEN {free_to} AND {last};\n",
            LONGEST_TTL.as_millis()
        ),
    );
    let secs = Duration::from_secs;
    let minted = Minted::new();
    let mut minters = Vec::new();
    // Five holders, TTLs 3, 5, 8, 5 and 3 s: every free identity held.
    for (name, ttl) in [("a", 3), ("b", 5), ("c", 8), ("d", 5), ("e", 3)] {
        let leased = LeasedGenerator::start(cluster.config(secs(ttl)).holder(name))
            .await
            .unwrap();
        minters.push(minted.start(name, leased));
    }
    until(secs(30), "the five issue", || {
        minters.iter().all(|m| m.leased.ready().is_ok())
    })
    .await;
    tokio::time::sleep(secs(1)).await;
    // d and e stop cleanly: their identities released.
    let mut released = Vec::new();
    for _ in ["e", "d"] {
        let minter = minters.pop().unwrap();
        released.push(minter.identity_row().expect("a holder"));
        minter.shutdown().await;
    }
    let (old_epoch, new_epoch) = cluster.epochs();
    // The standby has everything so far (the releases), then nothing more.
    cluster.catch_up();
    for &n in &released {
        let seen = cluster.on_standby(&format!(
            "SELECT released FROM snowmint_identities WHERE identity = {n}"
        ));
        assert!(
            matches!(seen.trim(), "t" | "1"),
            "the standby lacks the release of {n}: it shows {seen:?}, the primary {:?}\n{}",
            cluster.sql(
                false,
                &format!("SELECT * FROM snowmint_identities WHERE identity = {n}")
            ),
            log_tail()
        );
    }
    cluster.cut_standby();
    // Two instances claim the released identities: claims the failover
    // will lose. Their reservations run far ahead, so that cut off they
    // issue for as long as their fences allow.
    let mut lines = Vec::new();
    let mut lost = Vec::new();
    for (name, ttl, window_ms) in [("l1", 8, 6_000), ("l2", 5, 4_000)] {
        let (config, proxies) = cluster.cuttable_config(secs(ttl)).await;
        let leased = LeasedGenerator::start(config.holder(name).generator(window(window_ms)))
            .await
            .unwrap();
        let minter = minted.start(name, leased);
        let n = holds(&minter).await;
        assert!(released.contains(&n), "{name} took {n}, not a released one");
        lost.push((name, n));
        lines.extend(proxies);
        minters.push(minter);
    }
    // Renewals and marks that only the old primary sees, for longer than
    // the reservation window of the releases' marks (2 s): what l1 and l2
    // issue is then above every mark the standby has.
    tokio::time::sleep(secs(3)).await;
    // l1 and l2 hear nothing of what follows: the primary dies, the
    // standby is promoted.
    lines.iter().for_each(|line| line.cut());
    let killed = Instant::now();
    cluster.kill_primary();
    cluster.promote();
    let promoted = Instant::now();
    // The failover lost the claims: the new primary shows the releases.
    for &(name, n) in &lost {
        let (holder, released) = holder_of(&cluster, true, n);
        assert!(
            holder != name && released,
            "the failover kept {name}'s claim of {n} ({holder}, released {released}): \
             nothing was lost"
        );
        let mark = cluster.sql(
            true,
            &format!("SELECT COALESCE(mark, 0) FROM snowmint_identities WHERE identity = {n}"),
        );
        let mark: u64 = mark.trim().parse().unwrap();
        let issued = snowmint_testkit::chaos::checker::timestamp_ms(minted.max_of(name).unwrap());
        assert!(
            mark < issued,
            "the new primary's mark of {n} ({mark}) is not below what {name} issued ({issued})"
        );
    }
    // Newcomers arrive at once.
    for (name, ttl) in [("n1", 3), ("n2", 5)] {
        let leased = LeasedGenerator::spawn(cluster.config(secs(ttl)).holder(name)).unwrap();
        minters.push(minted.start(name, leased));
    }
    for minter in &minters[minters.len() - 2..] {
        holds(minter).await;
    }
    // Room for everyone: more of the crowd's identities freed.
    cluster.sql(
        true,
        &format!(
            "UPDATE snowmint_identities SET lease = NULL, expires_ms = 0, released = true \
             WHERE identity BETWEEN {free_to} AND {};",
            row(POOL + MORE - 1)
        ),
    );
    // l1 and l2 hear again once their fences have closed (8 s TTL: 6.4 s).
    tokio::time::sleep(secs(8).saturating_sub(killed.elapsed())).await;
    lines.iter().for_each(|line| line.restore());
    let restored = Instant::now();
    let names: Vec<&'static str> = minters.iter().map(|m| m.name).collect();
    until(
        secs(90),
        "every instance issues again after the failover",
        || names.iter().all(|n| minted.issued_since(n, restored)),
    )
    .await;
    tokio::time::sleep(secs(1)).await;
    let epochs: Vec<(String, String)> = minters
        .iter()
        .map(|m| {
            let info = m.leased.metrics().coordinator_info;
            let epoch = info
                .iter()
                .find(|(k, _)| *k == "epoch")
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            (m.name.to_owned(), epoch)
        })
        .collect();
    for minter in minters {
        minter.shutdown().await;
    }
    eprintln!(
        "failover: killed after the cut, promoted in {:?}",
        promoted - killed
    );
    // No ID twice; no two holders of one identity at once; each one's IDs
    // rising across its re-claims; everyone minted.
    let mut everyone = vec!["a", "b", "c", "d", "e"];
    everyone.extend(&names[3..]);
    let verdict = {
        let mut log = minted.log.lock().unwrap();
        for name in &everyone {
            log.instance(name);
        }
        log.verdict(&Rules {
            every_instance_mints: everyone.len(),
            one_minter_each: true,
            one_tenure_each: true,
        })
    };
    match verdict {
        Ok(ids) => eprintln!("failover: {ids} IDs, no duplicate, no overlap"),
        Err(why) => panic!("what was minted: {why}\n{}", log_tail()),
    }
    // The new epoch, seen: in the log of those that held before...
    let changed = log_lines(&["epoch changed", &old_epoch, &new_epoch]);
    assert!(
        !changed.is_empty(),
        "no \"epoch changed\" from {old_epoch} to {new_epoch} in the log\n{}",
        log_tail()
    );
    let untrusted = log_lines(&["may have lost the identity's last writes", &new_epoch]);
    assert!(
        !untrusted.is_empty(),
        "no claim logged as untrusted after the change to {new_epoch}\n{}",
        log_tail()
    );
    eprintln!(
        "failover: {} \"epoch changed\" lines, {} untrusted claims; e.g. {}\n  {}",
        changed.len(),
        untrusted.len(),
        changed[0],
        untrusted[0]
    );
    // ...and in every instance's metrics.
    for (name, epoch) in &epochs {
        assert_eq!(epoch, &new_epoch, "{name}'s metrics name another epoch");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_lossy_failover_to_a_standby() {
    let Some(cluster) = Cluster::postgres() else {
        return;
    };
    lossy_failover(cluster).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_lossy_failover_to_a_replica() {
    let Some(cluster) = Cluster::mariadb().await else {
        return;
    };
    lossy_failover(cluster).await;
}
