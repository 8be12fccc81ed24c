//! Identities leased from a real `redis-server` (Debian's 7.0), started by
//! each test on loopback: 32 holders of a datacenter and a waiter; a crashed
//! holder's identity re-claimed above its mark after the hand-over wait;
//! Redis paused past the TTL; Redis restarted without persistence under a
//! crowd; an eviction policy and a TTL above the declared bound refused; a
//! password never in any message.
//!
//! Skipped with a printed reason when `redis-server` is not installed,
//! unless SNOWMINT_REQUIRE_SERVICES=1 (as `scripts/test` sets).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use snowmint::{Clock, Generator, SnowflakeId, SystemClock};
use snowmint_redis::{GeneratorFactory, LeaseState, LeasedGenerator, MintError, RedisConfig};
use snowmint_testkit::chaos::checker::{Recorder, Rules};
use snowmint_testkit::redis::Redis;

const TTL: Duration = Duration::from_secs(2);
/// The crashed holder's clock runs this far ahead.
const AHEAD_MS: u64 = 60_000;

fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter("snowmint_lease=info,snowmint_redis=info")
        .try_init();
}

fn start(builder: snowmint_testkit::redis::RedisBuilder) -> Option<Redis> {
    logs();
    builder.start()
}

/// The coordinator on `redis`, a TTL of [`TTL`] and a declared bound of as
/// much (so that the first claim of each identity, untrusted, waits 2 s).
fn config(redis: &Redis) -> RedisConfig {
    RedisConfig::new(redis.url())
        .lease_ttl(TTL)
        .longest_ttl(TTL)
}

/// Waits until `f` holds, or panics naming `what` after `limit`.
async fn until(limit: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Until `m` issues (held, any hand-over wait over).
async fn issuing(m: &LeasedGenerator) {
    until(Duration::from_secs(60), "issuing", || m.ready().is_ok()).await;
}

/// Every ID minted, by minter, for the chaos harness's checker.
struct Minted(Mutex<Recorder>);

impl Minted {
    fn new() -> Minted {
        Minted(Mutex::new(Recorder::since(Instant::now())))
    }

    fn record(&self, name: &str, started: Instant, ids: &[SnowflakeId]) {
        let ended = Instant::now();
        self.0
            .lock()
            .unwrap()
            .record(name, started, ended, ids.iter().map(|id| id.get()));
    }

    fn take(&self, name: &str, minter: &LeasedGenerator, n: usize) -> Vec<SnowflakeId> {
        let started = Instant::now();
        let ids: Vec<SnowflakeId> =
            tokio::task::block_in_place(|| (0..n).map(|_| minter.next_id().unwrap()).collect());
        self.record(name, started, &ids);
        ids
    }

    fn try_one(&self, name: &str, minter: &LeasedGenerator) -> Option<SnowflakeId> {
        let started = Instant::now();
        let id = minter.next_id().ok()?;
        self.record(name, started, &[id]);
        Some(id)
    }

    fn check(&self, minters: &[&str], one_tenure_each: bool) {
        let mut log = self.0.lock().unwrap();
        for name in minters {
            log.instance(name);
        }
        let rules = Rules {
            every_instance_mints: minters.len(),
            one_minter_each: true,
            one_tenure_each,
        };
        if let Err(why) = log.verdict(&rules) {
            panic!("what was minted: {why}");
        }
    }
}

/// The host's clock, `ms` fast.
struct Ahead(SystemClock, u64);

impl Clock for Ahead {
    fn now_ms(&self) -> u64 {
        self.0.now_ms() + self.1
    }

    fn sleep_until_ms(&self, target_ms: u64, max: Duration) -> Duration {
        self.0.sleep_until_ms(target_ms.saturating_sub(self.1), max)
    }
}

/// The server's epoch as the scripts read it.
fn epoch(redis: &Redis) -> String {
    let field = |section: &str, name: &str| {
        redis
            .cli(&["INFO", section])
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")).map(str::trim))
            .unwrap_or_else(|| panic!("no {name} in INFO {section}"))
            .to_owned()
    };
    format!(
        "{}/{}",
        field("server", "run_id"),
        field("replication", "master_replid")
    )
}

/// 32 holders of datacenter 3: each its own identity, every ID unique; the
/// 33rd waits (all taken, naming the prefix) until one stops gracefully,
/// then takes the freed identity and issues at once (a clean release, no
/// hand-over wait: well within half a 10 s TTL of its claim).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_holders_and_a_waiter() {
    let Some(redis) = start(Redis::builder()) else {
        return;
    };
    let ttl = Duration::from_secs(10);
    let config = || {
        config(&redis)
            .lease_ttl(ttl)
            .longest_ttl(ttl)
            .prefix("ids")
            .datacenter(3)
    };
    let fleet: Vec<LeasedGenerator> = (0..32)
        .map(|i| LeasedGenerator::spawn(config().holder(format!("h{i}"))).unwrap())
        .collect();
    for minter in &fleet {
        issuing(minter).await;
    }
    let minted = Minted::new();
    let names: Vec<String> = (0..32).map(|i| format!("h{i}")).collect();
    let mut identities = HashSet::new();
    for (minter, name) in fleet.iter().zip(&names) {
        let identity = minter.identity().unwrap();
        assert_eq!(identity.datacenter(), 3);
        assert!(identities.insert(identity), "{identity} held twice");
        for id in minted.take(name, minter, 300) {
            assert_eq!((id.datacenter(), id.worker()), (3, identity.worker()));
        }
    }
    let waiter = LeasedGenerator::spawn(config().holder("waiter")).unwrap();
    until(Duration::from_secs(30), "the 33rd sees all taken", || {
        waiter.metrics().state == LeaseState::AllTaken
    })
    .await;
    let why = waiter.metrics().last_error.unwrap_or_default();
    assert!(
        why.contains("datacenter 3 in Redis prefix ids are held"),
        "{why}"
    );
    assert_eq!(waiter.next_id(), Err(MintError::NotHeld));
    let freed = fleet[7].identity().unwrap();
    fleet[7].shutdown().await;
    until(Duration::from_secs(30), "the waiter claims", || {
        waiter.metrics().identity.is_some()
    })
    .await;
    let claimed = Instant::now();
    assert_eq!(waiter.metrics().identity, Some(freed));
    issuing(&waiter).await;
    let first = minted.take("waiter", &waiter, 1)[0];
    assert!(
        claimed.elapsed() < ttl / 2,
        "the waiter issued {:?} after its claim of h7's released identity: it waited as \
         after a crash",
        claimed.elapsed()
    );
    assert_eq!((first.datacenter(), first.worker()), (3, freed.worker()));
    minted.take("waiter", &waiter, 300);
    for minter in fleet.iter().chain([&waiter]) {
        minter.shutdown().await;
    }
    let mut all: Vec<&str> = names.iter().map(String::as_str).collect();
    all.push("waiter");
    minted.check(&all, true);
    // Every record released and its lease ended.
    for n in 96..128 {
        let record = redis.cli(&["HMGET", &format!("ids:id:{n}"), "expires_ms", "released"]);
        assert_eq!(record.trim(), "0\n1", "identity {n} still held: {record}");
    }
}

/// A holder that crashes (no release) with a clock a minute fast: its
/// identity is claimed again once its lease expired on Redis, issued under
/// only a TTL after the claim, above the crashed holder's mark.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashed_holder_is_reclaimed_above_its_mark() {
    let Some(redis) = start(Redis::builder()) else {
        return;
    };
    let fast: GeneratorFactory = Arc::new(|identity, store| {
        Generator::builder_for(identity)
            .store(store)
            .clock(Ahead(SystemClock::new(), AHEAD_MS))
            .build()
    });
    let a =
        LeasedGenerator::spawn(config(&redis).generator(fast).datacenter(7).holder("a")).unwrap();
    issuing(&a).await;
    let identity = a.identity().unwrap();
    let n = 7 * 32 + u16::from(identity.worker());
    // Every other worker of datacenter 7 held for ever, of this epoch.
    let epoch = epoch(&redis);
    for other in (224..256).filter(|&o| o != n) {
        redis.cli(&[
            "HSET",
            &format!("snowmint:id:{other}"),
            "lease",
            "1",
            "expires_ms",
            "9000000000000",
            "released",
            "0",
            "epoch",
            &epoch,
        ]);
    }
    let minted = Minted::new();
    let last_of_a = *minted.take("a", &a, 5000).last().unwrap();
    let crashed = Instant::now();
    a.abandon();
    let mark: u64 = redis
        .cli(&["HGET", &format!("snowmint:id:{n}"), "mark"])
        .trim()
        .parse()
        .expect("the crashed holder's mark");
    let now_ms = SystemClock::new().now_ms();
    assert!(
        mark >= last_of_a.timestamp_ms() && mark > now_ms + AHEAD_MS / 2,
        "the crashed holder's mark {mark} is not far ahead of the clock ({now_ms})"
    );
    let borrowing: GeneratorFactory = Arc::new(|identity, store| {
        Generator::builder_for(identity)
            .store(store)
            .max_borrow_ms(AHEAD_MS * 2)
            .build()
    });
    let b = LeasedGenerator::spawn(
        config(&redis)
            .generator(borrowing)
            .datacenter(7)
            .holder("b"),
    )
    .unwrap();
    until(Duration::from_secs(30), "b claims, and waits", || {
        b.metrics().state == LeaseState::Handover
    })
    .await;
    let claimed = crashed.elapsed();
    assert_eq!(b.metrics().identity, Some(identity));
    assert!(b.next_id().is_err(), "b issues during the hand-over wait");
    issuing(&b).await;
    let issued = crashed.elapsed();
    assert!(
        claimed + Duration::from_millis(500) >= TTL,
        "claimed after {claimed:?}"
    );
    assert!(
        issued >= claimed + TTL - TTL / 4,
        "claimed (seen) after {claimed:?}, issued after {issued:?}: the wait was shorter than \
         the TTL"
    );
    let first = minted.take("b", &b, 1)[0];
    assert!(
        first.timestamp_ms() > mark,
        "b's first ID is of {} ms, at or below the crashed holder's mark {mark}",
        first.timestamp_ms()
    );
    b.shutdown().await;
    minted.check(&["a", "b"], true);
}

/// Redis SIGSTOPped for twice the TTL: every holder fences within the TTL,
/// and once Redis is back each issues again, above everything before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_past_the_ttl_every_holder_fences_then_recovers() {
    let Some(redis) = start(Redis::builder()) else {
        return;
    };
    let names: Vec<String> = (0..4).map(|i| format!("h{i}")).collect();
    let fleet: Vec<LeasedGenerator> = names
        .iter()
        .map(|name| LeasedGenerator::spawn(config(&redis).datacenter(1).holder(name)).unwrap())
        .collect();
    for m in &fleet {
        issuing(m).await;
    }
    let minted = Minted::new();
    for (m, name) in fleet.iter().zip(&names) {
        minted.take(name, m, 1000);
    }
    redis.pause();
    let since = Instant::now();
    until(TTL + Duration::from_secs(1), "every holder fenced", || {
        fleet.iter().all(|m| m.next_id().is_err())
    })
    .await;
    let fenced_after = since.elapsed();
    assert!(fenced_after <= TTL, "fenced only after {fenced_after:?}");
    tokio::time::sleep(TTL * 2 - fenced_after).await;
    redis.resume();
    for (m, name) in fleet.iter().zip(&names) {
        issuing(m).await;
        minted.take(name, m, 100);
    }
    for m in &fleet {
        m.shutdown().await;
    }
    let all: Vec<&str> = names.iter().map(String::as_str).collect();
    minted.check(&all, false);
}

/// Mints with `fleet[i]` as `names[i]` on a thread each, 50 at a time,
/// until `stop`; each thread answers how many it minted.
fn mint_on_threads(
    fleet: &Arc<Vec<LeasedGenerator>>,
    names: &[String],
    minted: &Arc<Minted>,
    stop: &Arc<AtomicBool>,
) -> Vec<std::thread::JoinHandle<u64>> {
    (0..names.len())
        .map(|i| {
            let (fleet, minted, stop) = (Arc::clone(fleet), Arc::clone(minted), Arc::clone(stop));
            let name = names[i].clone();
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..50 {
                        if minted.try_one(&name, &fleet[i]).is_some() {
                            n += 1;
                        }
                    }
                    // Pacing (not synchronisation): leave the two cores to
                    // the sessions too.
                    std::thread::sleep(Duration::from_millis(2));
                }
                n
            })
        })
        .collect()
}

/// Redis killed and started again without persistence while a crowd of 8
/// mints (every record and mark gone, a new epoch), the crowd cut off from
/// the new Redis (a proxy) so that its fences run out on their own, and 8
/// newcomers take the crowd's identities at once (the datacenter's other
/// workers held): each newcomer's claim is untrusted (no record), so it
/// waits the declared bound and starts above claim + bound + reserve
/// window. No ID is issued twice, and no two holders of one identity issue
/// at once or interleave.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarted_without_persistence_under_a_crowd() {
    let Some(mut redis) = start(Redis::builder()) else {
        return;
    };
    let upstream = std::net::SocketAddr::from(([127, 0, 0, 1], redis.port()));
    let proxy = snowmint_testkit::proxy::Proxy::start(upstream).await;
    let via_proxy = redis
        .url()
        .replace(&upstream.to_string(), &proxy.addr().to_string());
    let crowd: Vec<String> = (0..8).map(|i| format!("old{i}")).collect();
    let fleet: Arc<Vec<LeasedGenerator>> = Arc::new(
        crowd
            .iter()
            .map(|name| {
                let config = RedisConfig::new(&via_proxy).lease_ttl(TTL).longest_ttl(TTL);
                LeasedGenerator::spawn(config.datacenter(2).holder(name)).unwrap()
            })
            .collect(),
    );
    for m in fleet.iter() {
        issuing(m).await;
    }
    let held: HashSet<u16> = fleet
        .iter()
        .map(|m| 64 + u16::from(m.identity().unwrap().worker()))
        .collect();
    let minted = Arc::new(Minted::new());
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = mint_on_threads(&fleet, &crowd, &minted, &stop);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = epoch(&redis);
    proxy.cut();
    redis.restart();
    let after = epoch(&redis);
    assert_ne!(after, before, "a restart is a new epoch");
    for other in (64..96).filter(|n| !held.contains(n)) {
        redis.cli(&[
            "HSET",
            &format!("snowmint:id:{other}"),
            "lease",
            "1",
            "expires_ms",
            "9000000000000",
            "released",
            "0",
            "epoch",
            &after,
        ]);
    }
    let newcomers: Vec<String> = (0..8).map(|i| format!("new{i}")).collect();
    let fresh: Arc<Vec<LeasedGenerator>> = Arc::new(
        newcomers
            .iter()
            .map(|name| LeasedGenerator::spawn(config(&redis).datacenter(2).holder(name)).unwrap())
            .collect(),
    );
    threads.extend(mint_on_threads(&fresh, &newcomers, &minted, &stop));
    until(Duration::from_secs(60), "every newcomer issuing", || {
        fresh.iter().all(|m| m.ready().is_ok())
    })
    .await;
    let taken: HashSet<u16> = fresh
        .iter()
        .map(|m| 64 + u16::from(m.identity().unwrap().worker()))
        .collect();
    assert_eq!(taken, held, "the newcomers took the crowd's identities");
    assert!(
        fleet.iter().all(|m| m.next_id().is_err()),
        "the crowd still issues"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        assert!(t.join().unwrap() > 0, "a minter never minted");
    }
    for m in fleet.iter().chain(fresh.iter()) {
        m.shutdown().await;
    }
    let all: Vec<&str> = crowd.iter().chain(&newcomers).map(String::as_str).collect();
    minted.check(&all, true);
}

/// `allkeys-lru` may evict any key: refused, the setting named in the error
/// and in the refusal readiness reports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evicting_server_is_refused() {
    let Some(redis) = start(Redis::builder().setting("maxmemory-policy", "allkeys-lru")) else {
        return;
    };
    let a = LeasedGenerator::spawn(config(&redis)).unwrap();
    until(Duration::from_secs(30), "refused", || {
        a.metrics()
            .last_error
            .is_some_and(|e| e.contains("maxmemory-policy is allkeys-lru"))
    })
    .await;
    let refusal = a.metrics().refusal.unwrap_or_default();
    assert!(
        refusal.contains("maxmemory-policy is allkeys-lru") && !refusal.contains("127.0.0.1"),
        "{refusal}"
    );
    assert!(a.identity().is_none());
    // Set right, it leases.
    redis.cli(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    issuing(&a).await;
    assert_eq!(a.metrics().refusal, None);
    a.shutdown().await;
}

/// A TTL longer than the one the prefix declares is refused, naming both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ttl_above_the_declared_bound_is_refused() {
    let Some(redis) = start(Redis::builder()) else {
        return;
    };
    redis.cli(&["HSET", "snowmint:meta", "bound_ms", "2000"]);
    let a = LeasedGenerator::spawn(
        config(&redis)
            .lease_ttl(Duration::from_secs(3))
            .longest_ttl(Duration::from_secs(60)),
    )
    .unwrap();
    until(Duration::from_secs(30), "refused", || {
        a.metrics().last_error.is_some_and(|e| {
            e.contains("lease-ttl 3000 ms is longer than the longest TTL declared")
        })
    })
    .await;
    assert!(a.identity().is_none());
    a.shutdown().await;
}

/// A password, right or wrong, is never in an error, the metrics or a debug
/// form.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_is_never_in_any_message() {
    let Some(redis) = start(Redis::builder().password("Kx7-right-Wq9")) else {
        return;
    };
    let url = redis.url();
    let wrong = url.replace("Kx7-right-Wq9", "Kx7%40wrong%2FWq9");
    let a =
        LeasedGenerator::spawn(RedisConfig::new(&wrong).lease_ttl(TTL).longest_ttl(TTL)).unwrap();
    until(Duration::from_secs(30), "refused", || {
        a.metrics().last_error.is_some()
    })
    .await;
    let m = a.metrics();
    let said = format!("{m:?} {:?}", RedisConfig::new(&wrong));
    assert!(!said.contains("Kx7") && !said.contains("Wq9"), "{said}");
    a.shutdown().await;
    let b = LeasedGenerator::spawn(RedisConfig::new(&url).lease_ttl(TTL).longest_ttl(TTL)).unwrap();
    issuing(&b).await;
    let said = format!("{:?} {:?}", b.metrics(), RedisConfig::new(&url));
    assert!(!said.contains("Kx7") && !said.contains("Wq9"), "{said}");
    b.shutdown().await;
}

/// A Sentinel failover to a replica that lacks the last writes. The replica
/// replicates through a proxy, which is cut while 8 holders mint on the
/// master; 4 newcomers then claim on the master (claims and marks the
/// replica never gets), and the master is SIGKILLed. Those 12 reach the
/// master directly and reserve 10 s ahead (their fences run out on their
/// own, 8 s after their last renewal with a 10 s TTL, and they issue until
/// then within what they reserved). Sentinel promotes the replica (a new
/// replication ID: a new epoch) within about 2 s; 4 latecomers, through
/// Sentinel, can only take the newcomers' identities (every other one held),
/// of which the new master has no record: untrusted, they wait the bound and
/// start above it. No ID is issued twice, nor by two holders of one identity
/// at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_failover_to_a_replica_that_lacks_the_last_writes() {
    let Some(mut master) = start(Redis::builder()) else {
        return;
    };
    let Some(replica) = Redis::builder().start() else {
        return;
    };
    let upstream = std::net::SocketAddr::from(([127, 0, 0, 1], master.port()));
    let proxy = snowmint_testkit::proxy::Proxy::start(upstream).await;
    replica.cli(&["REPLICAOF", "127.0.0.1", &proxy.addr().port().to_string()]);
    until(Duration::from_secs(30), "the replica in sync", || {
        replica
            .cli(&["INFO", "replication"])
            .contains("master_link_status:up")
    })
    .await;
    let Some(sentinel) = snowmint_testkit::redis::Sentinel::start("ids", master.port()) else {
        return;
    };
    until(
        Duration::from_secs(30),
        "Sentinel knows the replica",
        || sentinel.replicas("ids") == 1,
    )
    .await;
    let ttl = Duration::from_secs(10);
    // A reservation 10 s ahead (the default is 2 s): the holders cut off
    // with the old master keep issuing within it after the failover, until
    // their fences close, so a latecomer that trusted the missing record
    // would issue beside them. The bound (10 s) covers it.
    let far_ahead: GeneratorFactory = Arc::new(|identity, store| {
        Generator::builder_for(identity)
            .store(store)
            .reserve_window_ms(10_000)
            .build()
    });
    let on_master = || {
        RedisConfig::new(master.url())
            .lease_ttl(ttl)
            .longest_ttl(ttl)
            .datacenter(2)
            .generator(Arc::clone(&far_ahead))
    };
    let crowd: Vec<String> = (0..8).map(|i| format!("old{i}")).collect();
    let fleet: Arc<Vec<LeasedGenerator>> = Arc::new(
        crowd
            .iter()
            .map(|name| LeasedGenerator::spawn(on_master().holder(name)).unwrap())
            .collect(),
    );
    for m in fleet.iter() {
        issuing(m).await;
    }
    let minted = Arc::new(Minted::new());
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = mint_on_threads(&fleet, &crowd, &minted, &stop);
    tokio::time::sleep(Duration::from_millis(300)).await;
    proxy.cut();
    let newcomers: Vec<String> = (0..4).map(|i| format!("new{i}")).collect();
    let fresh: Arc<Vec<LeasedGenerator>> = Arc::new(
        newcomers
            .iter()
            .map(|name| LeasedGenerator::spawn(on_master().holder(name)).unwrap())
            .collect(),
    );
    threads.extend(mint_on_threads(&fresh, &newcomers, &minted, &stop));
    until(Duration::from_secs(60), "the newcomers issue", || {
        fresh.iter().all(|m| m.ready().is_ok())
    })
    .await;
    let theirs: HashSet<u16> = fresh
        .iter()
        .map(|m| 64 + u16::from(m.identity().unwrap().worker()))
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    master.kill();
    until(
        Duration::from_secs(60),
        "Sentinel promotes the replica",
        || sentinel.master_port("ids") == Some(replica.port()),
    )
    .await;
    let epoch = epoch(&replica);
    for other in (64..96).filter(|n| !theirs.contains(n)) {
        replica.cli(&[
            "HSET",
            &format!("snowmint:id:{other}"),
            "lease",
            "1",
            "expires_ms",
            "9000000000000",
            "released",
            "0",
            "epoch",
            &epoch,
        ]);
    }
    let latecomers: Vec<String> = (0..4).map(|i| format!("late{i}")).collect();
    let late: Arc<Vec<LeasedGenerator>> = Arc::new(
        latecomers
            .iter()
            .map(|name| {
                let config = RedisConfig::new("redis://sentinel-names-it/0")
                    .sentinel([sentinel.addr()], "ids")
                    .lease_ttl(ttl)
                    .longest_ttl(ttl)
                    .datacenter(2)
                    .holder(name);
                LeasedGenerator::spawn(config).unwrap()
            })
            .collect(),
    );
    threads.extend(mint_on_threads(&late, &latecomers, &minted, &stop));
    until(Duration::from_secs(60), "every latecomer issues", || {
        late.iter().all(|m| m.ready().is_ok())
    })
    .await;
    let taken: HashSet<u16> = late
        .iter()
        .map(|m| 64 + u16::from(m.identity().unwrap().worker()))
        .collect();
    assert_eq!(
        taken, theirs,
        "the latecomers took the newcomers' identities"
    );
    assert!(
        fleet
            .iter()
            .chain(fresh.iter())
            .all(|m| m.next_id().is_err()),
        "a holder cut off with the old master still issues"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        assert!(t.join().unwrap() > 0, "a minter never minted");
    }
    for m in fleet.iter().chain(fresh.iter()).chain(late.iter()) {
        m.shutdown().await;
    }
    let all: Vec<&str> = crowd
        .iter()
        .chain(&newcomers)
        .chain(&latecomers)
        .map(String::as_str)
        .collect();
    minted.check(&all, true);
}

/// `wait_replicas(1)` without a replica: every write fails (WAIT counts no
/// acknowledgement), so nothing is held; once a replica follows the master,
/// the writes are acknowledged and the holder issues.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_for_a_replica_that_is_not_there_holds_nothing() {
    let Some(master) = start(Redis::builder()) else {
        return;
    };
    let a = LeasedGenerator::spawn(config(&master).wait_replicas(1)).unwrap();
    until(Duration::from_secs(30), "the writes fail", || {
        a.metrics().last_error.is_some_and(|e| {
            e.contains("only 0 of the 1 replicas asked for acknowledged the write")
        })
    })
    .await;
    assert!(a.next_id().is_err());
    let Some(replica) = Redis::builder().start() else {
        return;
    };
    replica.cli(&["REPLICAOF", "127.0.0.1", &master.port().to_string()]);
    issuing(&a).await;
    a.shutdown().await;
}

/// `rediss://`: TLS to a Redis that serves only TLS, its certificate
/// verified against the CA given (`ca_cert`); without it (the system's
/// roots, which do not know the test CA) nothing is held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_to_redis_verified_against_the_ca() {
    let pki = snowmint_testkit::pki::Pki::new();
    let Some(redis) = start(Redis::builder().tls(pki.server_cert(), pki.server_key(), pki.ca()))
    else {
        return;
    };
    assert!(redis.url().starts_with("rediss://"));
    let unverified = LeasedGenerator::spawn(config(&redis)).unwrap();
    until(Duration::from_secs(30), "the certificate refused", || {
        unverified.metrics().last_error.is_some()
    })
    .await;
    assert!(unverified.identity().is_none());
    unverified.shutdown().await;
    let a = LeasedGenerator::spawn(config(&redis).ca_cert(pki.ca())).unwrap();
    issuing(&a).await;
    let minted = Minted::new();
    minted.take("a", &a, 100);
    a.shutdown().await;
    minted.check(&["a"], true);
    assert_eq!(
        config(&redis)
            .ca_cert("/nonexistent/ca.pem")
            .validate()
            .unwrap_err()
            .to_string(),
        "redis-ca /nonexistent/ca.pem: No such file or directory (os error 2)"
    );
}

/// The coordinator's own answers: a claim sent again under the lease its
/// record is bound to (the first answer lost) is answered from the record
/// (the wait it keeps), not as taken; another lease finds it taken; a
/// released identity is clean for the next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_sent_again_under_its_lease_is_answered_from_its_record() {
    use snowmint_lease::{Claimant, Claimed, Coordinator, LeaseSource, Previous};
    let Some(redis) = start(Redis::builder()) else {
        return;
    };
    let t = Duration::from_secs(5);
    let mut c = config(&redis).coordinator(t).unwrap();
    let who = Claimant {
        holder: "a",
        instance: 1,
        ttl: TTL,
    };
    let a = c.grant(TTL, t).await.unwrap().lease;
    let first = c.claim(a, 5, &who, t).await.unwrap();
    assert!(
        matches!(first, Claimed::Won(Previous::Untrusted { .. })),
        "{first:?}"
    );
    let again = c.claim(a, 5, &who, t).await.unwrap();
    assert!(
        matches!(again, Claimed::Won(Previous::Unclean { ttl, .. }) if ttl == TTL),
        "{again:?}"
    );
    let b = c.grant(TTL, t).await.unwrap().lease;
    let other = Claimant {
        holder: "b",
        instance: 2,
        ttl: TTL,
    };
    assert_eq!(c.claim(b, 5, &other, t).await.unwrap(), Claimed::Taken);
    c.release(5, a, t).await.unwrap();
    c.revoke(a, t).await.unwrap();
    assert_eq!(
        c.claim(b, 5, &other, t).await.unwrap(),
        Claimed::Won(Previous::Clean)
    );
}
