//! `LeasedGenerator` against a real etcd started on loopback ports: distinct
//! identities, hand-over on graceful stop, fencing when etcd freezes or the
//! line is cut, take-over after a crash with a lagging clock, and no
//! duplicate in the merged log of every ID issued.
//!
//! Skipped with a printed reason when the `etcd` binary is missing, unless
//! SNOWMINT_REQUIRE_SERVICES=1.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use snowmint::{Clock, Generator, Identity, MemoryStore, SnowflakeId, SystemClock};
use snowmint_etcd::{EtcdConfig, GeneratorFactory, LeaseState, LeasedGenerator, MintError};
use snowmint_testkit::chaos::checker::{Recorder, Rules};
use snowmint_testkit::etcd::EtcdServer;
use snowmint_testkit::proxy::Proxy;

/// One successful mint: who, when it started and ended, what it issued.
#[derive(Debug, Clone)]
struct Batch {
    instance: String,
    started: Instant,
    ended: Instant,
    ids: Vec<SnowflakeId>,
}

/// Every batch issued by every instance of one scenario.
type Log = Arc<Mutex<Vec<Batch>>>;

/// A batch of `n` from one identity, as the server mints them.
fn mint(minter: &LeasedGenerator, n: usize) -> Result<Vec<SnowflakeId>, MintError> {
    let mut ids = Vec::with_capacity(n);
    if let Some(pending) = minter.try_mint_ranges(n, |r| ids.extend(r))? {
        pending.finish(|r| ids.extend(r))?;
    }
    Ok(ids)
}

/// A program minting under a lease: a `LeasedGenerator`, and a thread
/// minting from it as fast as a busy client would.
struct Instance {
    name: String,
    minter: Arc<LeasedGenerator>,
    stop: Arc<AtomicBool>,
    minting: Option<JoinHandle<()>>,
}

impl Instance {
    fn start(name: &str, config: EtcdConfig, log: &Log) -> Instance {
        let minter = Arc::new(LeasedGenerator::spawn(config).expect("valid config"));
        let stop = Arc::new(AtomicBool::new(false));
        let minting = {
            let (minter, stop, log, name) = (
                Arc::clone(&minter),
                Arc::clone(&stop),
                Arc::clone(log),
                name.to_owned(),
            );
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let started = Instant::now();
                    match mint(&minter, 4) {
                        Ok(ids) => log.lock().unwrap().push(Batch {
                            instance: name.clone(),
                            started,
                            ended: Instant::now(),
                            ids,
                        }),
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
            })
        };
        Instance {
            name: name.to_owned(),
            minter,
            stop,
            minting: Some(minting),
        }
    }

    fn identity(&self) -> Option<(u8, u8)> {
        self.minter.identity().map(|i| (i.datacenter(), i.worker()))
    }

    fn is_ready(&self) -> bool {
        self.minter.ready_identity().is_some()
    }

    fn state(&self) -> LeaseState {
        self.minter.metrics().state
    }

    async fn wait_ready(&self, limit: Duration) {
        let start = Instant::now();
        while !self.is_ready() {
            assert!(
                start.elapsed() < limit,
                "{} not ready after {limit:?}: {:?}",
                self.name,
                self.minter.metrics()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn stop_minting(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.minting.take() {
            t.join().unwrap();
        }
    }

    /// Graceful stop: minting stops, the lease is revoked.
    async fn shutdown(mut self) {
        self.stop_minting();
        self.minter.shutdown().await;
    }

    /// As SIGKILL: minting stops, the lease is left to expire.
    fn kill(mut self) {
        self.stop_minting();
        let minter = Arc::clone(&self.minter);
        drop(self);
        Arc::into_inner(minter)
            .expect("the only handle left")
            .abandon();
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        self.stop_minting();
    }
}

fn options(endpoint: &str, prefix: &str, ttl_secs: u64) -> EtcdConfig {
    EtcdConfig::new([endpoint])
        .prefix(prefix)
        .lease_ttl(Duration::from_secs(ttl_secs))
}

/// [`options`] scoped to datacenter 0's 32 workers, so that a [`Filler`]
/// can leave exactly the identities a test means to be free.
fn dc0(endpoint: &str, prefix: &str, ttl_secs: u64) -> EtcdConfig {
    options(endpoint, prefix, ttl_secs).datacenter(0)
}

/// The key of `identity` under `prefix`.
fn key(prefix: &str, kind: &str, identity: (u8, u8)) -> String {
    format!("{prefix}/{kind}/{}/{}", identity.0, identity.1)
}

/// Holds, under a lease of its own, every worker of datacenter 0 that was
/// free when it was made (claims pick among free identities at random, so a
/// test that needs "the one free identity" makes it so).
struct Filler {
    client: etcd_client::Client,
    prefix: String,
    held: Vec<u8>,
}

impl Filler {
    async fn take_free(endpoint: &str, prefix: &str) -> Filler {
        let mut client = etcd_client::Client::connect([endpoint], None)
            .await
            .unwrap();
        let lease = client.lease_grant(600, None).await.unwrap().id();
        let mut held = Vec::new();
        for worker in 0..32u8 {
            let k = key(prefix, "identities", (0, worker));
            let txn = etcd_client::Txn::new()
                .when([etcd_client::Compare::create_revision(
                    k.as_str(),
                    etcd_client::CompareOp::Equal,
                    0,
                )])
                .and_then([etcd_client::TxnOp::put(
                    k.as_str(),
                    "filler",
                    Some(etcd_client::PutOptions::new().with_lease(lease)),
                )]);
            if client.txn(txn).await.unwrap().succeeded() {
                held.push(worker);
            }
        }
        Filler {
            client,
            prefix: prefix.to_owned(),
            held,
        }
    }

    /// Frees one of the workers it holds: the only free one then.
    async fn free_one(&mut self) -> (u8, u8) {
        let worker = self.held.pop().expect("the filler holds one");
        let k = key(&self.prefix, "identities", (0, worker));
        self.client.delete(k, None).await.unwrap();
        (0, worker)
    }
}

/// The merged log checked by the chaos harness's checker
/// (`snowmint_testkit::chaos::checker`), the one checker of mint logs: no
/// duplicate; each instance's IDs strictly increase, in real time, within
/// one identity and across every identity it re-claimed (each instance is
/// one `LeasedGenerator`, never restarted: guarantee 2); two instances that
/// held the same identity did so one after the other (no instance here is
/// handed an identity back), in time (the later one's first mint ended
/// after the earlier one's last mint started) and in ID space (every ID of
/// the later is greater); and every one of `instances` minted (an instance
/// that issued nothing would pass every other rule unseen). A batch's
/// times are taken to the microsecond: an instance's batches are 2 ms
/// apart, so one's order is never lost. Returns the number of IDs.
fn check_log(log: &Log, instances: &[&str]) -> usize {
    let log = log.lock().unwrap();
    let Some(epoch) = log.iter().map(|b| b.started).min() else {
        panic!("nothing minted; expected {instances:?} to mint");
    };
    let mut checked = Recorder::since(epoch);
    for name in instances {
        checked.instance(name);
    }
    for b in log.iter() {
        checked.record(
            &b.instance,
            b.started,
            b.ended,
            b.ids.iter().map(|id| id.get()),
        );
    }
    let rules = Rules {
        every_instance_mints: instances.len(),
        one_minter_each: true,
        one_tenure_each: true,
    };
    let ids = checked
        .verdict(&rules)
        .unwrap_or_else(|why| panic!("{why}"));
    usize::try_from(ids).unwrap()
}

/// `check_log` fails a log that breaks one of its rules, naming the rule
/// and the instances: what the tests above rely on when they pass.
#[test]
fn the_log_check_fails_what_breaks_its_rules() {
    let t0 = Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    // An ID of worker `worker` of datacenter 0 at millisecond `ms` after the epoch.
    let id = |ms: u64, worker: u64| SnowflakeId::new((ms << 22) | (worker << 12)).unwrap();
    let batch = |instance: &str, from: u64, to: u64, ids: Vec<SnowflakeId>| Batch {
        instance: instance.to_owned(),
        started: at(from),
        ended: at(to),
        ids,
    };
    let failure = |batches: Vec<Batch>, instances: &[&str]| -> String {
        let log: Log = Arc::new(Mutex::new(batches));
        let instances: Vec<String> = instances.iter().map(|s| (*s).to_owned()).collect();
        let caught = std::panic::catch_unwind(move || {
            let names: Vec<&str> = instances.iter().map(String::as_str).collect();
            check_log(&log, &names)
        });
        match caught {
            Ok(n) => panic!("check_log passed {n} IDs"),
            Err(e) => e.downcast_ref::<String>().cloned().unwrap_or_default(),
        }
    };
    let clean = || {
        vec![
            batch("a", 0, 1, vec![id(100, 0), id(101, 0)]),
            batch("b", 0, 1, vec![id(100, 1)]),
            batch("a", 3, 4, vec![id(102, 0)]),
            // b takes a's identity over above it; a re-claims another.
            batch("b", 10, 11, vec![id(200, 0)]),
            batch("a", 10, 11, vec![id(201, 2)]),
        ]
    };
    let log: Log = Arc::new(Mutex::new(clean()));
    assert_eq!(check_log(&log, &["a", "b"]), 6);

    let why = failure(clean(), &["a", "b", "c"]);
    assert!(
        why.contains("silent: instance 2") && why.contains("2 = c"),
        "{why}"
    );
    let mut twice = clean();
    twice.push(batch("c", 20, 21, vec![id(100, 1)]));
    let why = failure(twice, &["a", "b", "c"]);
    assert!(why.contains("duplicate"), "{why}");
    let mut back = clean();
    back.push(batch("a", 20, 21, vec![id(150, 3)]));
    let why = failure(back, &["a", "b"]);
    assert!(why.contains("went back across a re-claim"), "{why}");
    let mut beside = clean();
    beside.push(batch("b", 1, 2, vec![id(150, 0)]));
    let why = failure(beside, &["a", "b"]);
    assert!(why.contains("tenures overlap"), "{why}");
}

/// Waits until `instance` has minted a batch that started at or after
/// `since` (it minted after a fault, a recovery or a take-over).
async fn wait_minted(log: &Log, instance: &str, since: Instant) {
    let limit = Duration::from_secs(20);
    wait_until(&format!("{instance} mints"), limit, || {
        log.lock()
            .unwrap()
            .iter()
            .any(|b| b.instance == instance && b.started >= since)
    })
    .await;
}

async fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what}: not after {limit:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn key_exists(endpoint: &str, key: &str) -> bool {
    let mut client = etcd_client::Client::connect([endpoint], None)
        .await
        .unwrap();
    !client.get(key, None).await.unwrap().kvs().is_empty()
}

async fn wait_key_gone(endpoint: &str, key: &str, limit: Duration) {
    let start = Instant::now();
    while key_exists(endpoint, key).await {
        assert!(start.elapsed() < limit, "{key} still there after {limit:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_get_distinct_identities_and_a_graceful_stop_frees_one_at_once() {
    let Some(etcd) = EtcdServer::start() else {
        return;
    };
    let log = Log::default();
    // A long TTL: an identity that is free again soon was revoked, not expired.
    let opts = || dc0(&etcd.url(), "/distinct", 30);

    let mut instances = vec![Instance::start("i0", opts(), &log)];
    instances[0].wait_ready(Duration::from_secs(10)).await;
    instances.push(Instance::start("i1", opts(), &log));
    instances[1].wait_ready(Duration::from_secs(10)).await;
    assert_ne!(instances[0].identity(), instances[1].identity());

    for i in 2..10 {
        instances.push(Instance::start(&format!("i{i}"), opts(), &log));
    }
    for i in &instances {
        i.wait_ready(Duration::from_secs(20)).await;
    }
    // Started together, they race: the losers of a race take random free
    // ones, so only distinctness is certain.
    let identities: HashSet<_> = instances.iter().map(|i| i.identity().unwrap()).collect();
    assert_eq!(identities.len(), 10, "{identities:?}");

    // Every other worker of datacenter 0 taken; stop i1 gracefully: its
    // key is gone when shutdown returns, and its identity is the one free.
    let _filler = Filler::take_free(&etcd.url(), "/distinct").await;
    let freed = instances[1].identity().unwrap();
    instances.remove(1).shutdown().await;
    assert!(!key_exists(&etcd.url(), &key("/distinct", "identities", freed)).await);
    let next = Instance::start("i10", opts(), &log);
    next.wait_ready(Duration::from_secs(10)).await;
    assert_eq!(
        next.identity(),
        Some(freed),
        "the freed identity, long before its TTL"
    );
    instances.push(next);

    // Every instance mints, i10 after taking the freed identity over.
    let since = Instant::now();
    for i in &instances {
        wait_minted(&log, &i.name, since).await;
    }
    let names: Vec<String> = instances.iter().map(|i| i.name.clone()).collect();
    for i in instances {
        i.shutdown().await;
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let issued = check_log(&log, &names);
    eprintln!("distinct identities: {issued} IDs, no duplicate");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_etcd_fences_every_instance_within_the_ttl_and_they_recover() {
    let Some(mut etcd) = EtcdServer::start() else {
        return;
    };
    let log = Log::default();
    let ttl = 3;
    let a = Instance::start("a", options(&etcd.url(), "/frozen", ttl), &log);
    let b = Instance::start("b", options(&etcd.url(), "/frozen", ttl), &log);
    a.wait_ready(Duration::from_secs(10)).await;
    b.wait_ready(Duration::from_secs(10)).await;
    let since = Instant::now();
    wait_minted(&log, "a", since).await;
    wait_minted(&log, "b", since).await;

    etcd.freeze();
    // The fence is a safety bound: it must close before the lease can
    // expire on the server, i.e. within the TTL of the freeze.
    wait_until("both fenced", Duration::from_secs(ttl), || {
        !a.is_ready() && !b.is_ready()
    })
    .await;
    assert!(a.minter.next_id().is_err() && mint(&b.minter, 1).is_err());
    // The session notices at its own timer, a moment after the fence closed.
    wait_until("a's session sees the fence", Duration::from_secs(2), || {
        a.state() == LeaseState::Fenced
    })
    .await;
    let metrics = a.minter.metrics();
    assert_eq!(metrics.state, LeaseState::Fenced, "{metrics:?}");
    assert_eq!(metrics.fenced, 1, "{metrics:?}");
    // Stay frozen past the TTL: the leases expire on etcd's clock.
    tokio::time::sleep(Duration::from_secs(ttl + 1)).await;
    assert_eq!(a.state(), LeaseState::Fenced);
    etcd.thaw();
    let thawed = Instant::now();

    a.wait_ready(Duration::from_secs(30)).await;
    b.wait_ready(Duration::from_secs(30)).await;
    assert_ne!(a.identity(), b.identity());
    wait_minted(&log, "a", thawed).await;
    wait_minted(&log, "b", thawed).await;
    let metrics = a.minter.metrics();
    assert!(metrics.fenced >= 1, "{metrics:?}");
    assert_eq!(metrics.state, LeaseState::Held, "{metrics:?}");
    assert_eq!(
        metrics.identity.map(|i| (i.datacenter(), i.worker())),
        a.identity()
    );
    assert!(metrics.lease.is_some(), "{metrics:?}");
    assert_eq!(metrics.granted_ttl, Some(Duration::from_secs(3)));
    a.shutdown().await;
    b.shutdown().await;
    let issued = check_log(&log, &["a", "b"]);
    eprintln!("frozen etcd: {issued} IDs, no duplicate");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_instance_is_fenced_and_the_next_holder_never_overlaps_it() {
    let Some(etcd) = EtcdServer::start() else {
        return;
    };
    let proxy = Proxy::start(etcd.addr()).await;
    let log = Log::default();
    let ttl = 3;
    let a = Instance::start("a", dc0(&proxy.url(), "/cut", ttl), &log);
    a.wait_ready(Duration::from_secs(10)).await;
    let b = Instance::start("b", dc0(&etcd.url(), "/cut", ttl), &log);
    b.wait_ready(Duration::from_secs(10)).await;
    let a_identity = a.identity().unwrap();
    assert_ne!(Some(a_identity), b.identity());
    let mut filler = Filler::take_free(&etcd.url(), "/cut").await;
    wait_minted(&log, "a", Instant::now()).await;

    proxy.cut();
    wait_until("a fenced", Duration::from_secs(ttl), || !a.is_ready()).await;
    assert!(b.is_ready(), "b is not behind the cut");
    // a's lease expires on the server; its identity becomes free.
    wait_key_gone(
        &etcd.url(),
        &key("/cut", "identities", a_identity),
        Duration::from_secs(3 * ttl),
    )
    .await;
    let c = Instance::start("c", dc0(&etcd.url(), "/cut", ttl), &log);
    // It waits one TTL before issuing: a did not release the identity.
    c.wait_ready(Duration::from_secs(10)).await;
    assert_eq!(c.identity(), Some(a_identity), "c takes over a's identity");
    wait_minted(&log, "c", Instant::now()).await;
    assert!(!a.is_ready(), "a stays fenced while cut off");

    // One identity free for a to claim once it hears that it lost its own.
    filler.free_one().await;
    proxy.restore();
    let restored = Instant::now();
    a.wait_ready(Duration::from_secs(30)).await;
    let held: HashSet<_> = [&a, &b, &c].iter().map(|i| i.identity().unwrap()).collect();
    assert_eq!(held.len(), 3, "a claims a new identity: {held:?}");
    assert!(b.minter.metrics().fenced == 0);
    for name in ["a", "b", "c"] {
        wait_minted(&log, name, restored).await;
    }
    for i in [a, b, c] {
        i.shutdown().await;
    }
    let issued = check_log(&log, &["a", "b", "c"]);
    eprintln!("cut proxy: {issued} IDs, no duplicate");
}

/// The system clock, `by_ms` behind.
struct Behind {
    clock: SystemClock,
    by_ms: u64,
}

impl Clock for Behind {
    fn now_ms(&self) -> u64 {
        self.clock.now_ms() - self.by_ms
    }

    fn sleep_until_ms(&self, target_ms: u64, max: Duration) -> Duration {
        self.clock.sleep_until_ms(target_ms + self.by_ms, max)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_holder_is_taken_over_after_its_lease_expires_even_with_a_lagging_clock() {
    let Some(etcd) = EtcdServer::start() else {
        return;
    };
    let log = Log::default();
    let ttl = 2;
    let a = Instance::start("a", dc0(&etcd.url(), "/crash", ttl), &log);
    a.wait_ready(Duration::from_secs(10)).await;
    let a_identity = a.identity().unwrap();
    let a_key = key("/crash", "identities", a_identity);
    let _filler = Filler::take_free(&etcd.url(), "/crash").await;
    wait_until("a issued", Duration::from_secs(10), || {
        log.lock().unwrap().len() >= 200
    })
    .await;
    a.kill();
    let a_max = log
        .lock()
        .unwrap()
        .iter()
        .flat_map(|b| b.ids.clone())
        .max()
        .unwrap();
    // Not revoked: the identity is free only once the lease expires.
    assert!(key_exists(&etcd.url(), &a_key).await);
    wait_key_gone(&etcd.url(), &a_key, Duration::from_secs(3 * ttl)).await;

    // b's clock is 30 s behind: on its own clock it would issue IDs far
    // below a's. It may run ahead of its clock (a 60 s borrow), so it
    // issues at once, above the mark a left in etcd.
    let lagging = dc0(&etcd.url(), "/crash", ttl);
    let factory: GeneratorFactory = Arc::new(|identity, store| {
        Generator::builder_for(identity)
            .clock(Behind {
                clock: SystemClock::new(),
                by_ms: 30_000,
            })
            .max_borrow_ms(60_000)
            .store(store)
            .build()
    });
    let b = Instance::start("b", lagging.generator(factory), &log);
    b.wait_ready(Duration::from_secs(20)).await;
    assert_eq!(
        b.identity(),
        Some(a_identity),
        "b takes over the dead holder's identity"
    );
    wait_until("b issued", Duration::from_secs(10), || {
        log.lock()
            .unwrap()
            .iter()
            .filter(|x| x.instance == "b")
            .count()
            >= 100
    })
    .await;
    b.shutdown().await;
    let b_min = log
        .lock()
        .unwrap()
        .iter()
        .filter(|x| x.instance == "b")
        .flat_map(|x| x.ids.clone())
        .min()
        .unwrap();
    assert!(
        b_min > a_max,
        "b issued {b_min} at or below a's last {a_max}"
    );
    let issued = check_log(&log, &["a", "b"]);
    eprintln!("crash take-over: {issued} IDs, no duplicate; b started at {b_min} > a's {a_max}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_etcd_at_start_means_not_ready_until_it_answers() {
    if !EtcdServer::available() {
        return;
    }
    let addr = snowmint_testkit::etcd::unused_addr();
    let log = Log::default();
    let a = Instance::start("a", options(&format!("http://{addr}"), "/late", 3), &log);
    wait_until("a retried at least once", Duration::from_secs(10), || {
        a.minter.metrics().last_error.is_some()
    })
    .await;
    assert!(!a.is_ready());
    assert_eq!(a.state(), LeaseState::Connecting);
    assert!(mint(&a.minter, 1).is_err());

    let Some(_etcd) = EtcdServer::start_on(addr) else {
        return;
    };
    a.wait_ready(Duration::from_secs(30)).await;
    assert!(a.identity().is_some());
    wait_minted(&log, "a", Instant::now()).await;
    a.shutdown().await;
    check_log(&log, &["a"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_identities_taken_means_not_ready_and_a_retry_when_one_frees() {
    let Some(etcd) = EtcdServer::start() else {
        return;
    };
    let mut client = etcd_client::Client::connect([etcd.url()], None)
        .await
        .unwrap();
    let filler = client.lease_grant(60, None).await.unwrap().id();
    for chunk in (0..1024u16).collect::<Vec<_>>().chunks(128) {
        let puts: Vec<_> = chunk
            .iter()
            .map(|n| {
                etcd_client::TxnOp::put(
                    format!("/full/identities/{}/{}", n / 32, n % 32),
                    "someone else",
                    Some(etcd_client::PutOptions::new().with_lease(filler)),
                )
            })
            .collect();
        client
            .txn(etcd_client::Txn::new().and_then(puts))
            .await
            .unwrap();
    }
    let log = Log::default();
    let a = Instance::start("a", options(&etcd.url(), "/full", 2), &log);
    wait_until("a sees all taken", Duration::from_secs(10), || {
        a.state() == LeaseState::AllTaken
    })
    .await;
    let status = a.minter.metrics();
    assert!(
        status
            .last_error
            .unwrap()
            .contains("all 1024 worker identities")
    );
    assert!(!a.is_ready());
    // Its lease for the failed claim was given back, not left to pile up.
    let leases = client.leases().await.unwrap();
    assert!(
        leases.leases().len() <= 2,
        "{} leases",
        leases.leases().len()
    );

    client.delete("/full/identities/7/7", None).await.unwrap();
    a.wait_ready(Duration::from_secs(30)).await;
    assert_eq!(a.identity(), Some((7, 7)));
    wait_minted(&log, "a", Instant::now()).await;
    a.shutdown().await;
    check_log(&log, &["a"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_shorter_than_the_lease_fences_then_resumes_on_the_same_lease() {
    let Some(etcd) = EtcdServer::start() else {
        return;
    };
    let proxy = Proxy::start(etcd.addr()).await;
    let log = Log::default();
    // TTL 10 s: the fence closes 2 s (the margin) before the lease can
    // expire, which leaves time to restore the line in between.
    let a = Instance::start("a", options(&proxy.url(), "/short", 10), &log);
    a.wait_ready(Duration::from_secs(10)).await;
    let lease = a.minter.metrics().lease;
    let held = a.identity();

    proxy.cut();
    wait_until("a fenced", Duration::from_secs(10), || {
        a.state() == LeaseState::Fenced
    })
    .await;
    assert!(!a.is_ready());
    proxy.restore();
    let restored = Instant::now();
    a.wait_ready(Duration::from_secs(10)).await;

    let status = a.minter.metrics();
    assert_eq!(status.lease, lease, "the same lease, renewed in time");
    assert_eq!(status.claims, 1, "no second claim");
    assert_eq!(status.fenced, 1);
    assert_eq!(a.identity(), held);
    wait_minted(&log, "a", restored).await;
    a.shutdown().await;
    check_log(&log, &["a"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_mark_is_never_issued_over_and_its_identity_is_skipped() {
    let Some(etcd) = EtcdServer::start() else {
        return;
    };
    let mut client = etcd_client::Client::connect([etcd.url()], None)
        .await
        .unwrap();
    client
        .put("/damaged/reserved/0/0", "not a number", None)
        .await
        .unwrap();
    // Only 0/0 free: the claim must try it, and find its mark damaged.
    let mut filler = Filler::take_free(&etcd.url(), "/damaged").await;
    let mut client_free = etcd_client::Client::connect([etcd.url()], None)
        .await
        .unwrap();
    filler.held.retain(|&w| w != 0);
    client_free
        .delete(key("/damaged", "identities", (0, 0)), None)
        .await
        .unwrap();
    let log = Log::default();
    let a = Instance::start("a", dc0(&etcd.url(), "/damaged", 2), &log);
    wait_until(
        "a skips 0/0 and finds the rest taken",
        Duration::from_secs(20),
        || a.state() == LeaseState::AllTaken,
    )
    .await;
    let other = filler.free_one().await;
    a.wait_ready(Duration::from_secs(20)).await;
    assert_eq!(
        a.identity(),
        Some(other),
        "identity 0's mark cannot be trusted"
    );
    assert!(
        !key_exists(&etcd.url(), "/damaged/identities/0/0").await,
        "released"
    );
    let mark = client.get("/damaged/reserved/0/0", None).await.unwrap();
    assert_eq!(
        mark.kvs()[0].value(),
        b"not a number",
        "left for an operator"
    );
    wait_minted(&log, "a", Instant::now()).await;
    a.shutdown().await;
    check_log(&log, &["a"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_endpoint_in_the_list_is_routed_around() {
    let Some(etcd) = EtcdServer::start() else {
        return;
    };
    // An address of its own: no other test's etcd can come up there.
    let dead = format!("http://{}", snowmint_testkit::etcd::unused_addr());
    let o = EtcdConfig::new([dead, etcd.url()])
        .prefix("/endpoints")
        .lease_ttl(Duration::from_secs(2));
    let log = Log::default();
    let a = Instance::start("a", o, &log);
    a.wait_ready(Duration::from_secs(20)).await;
    assert!(a.identity().is_some());
    // Renewals keep going through the live endpoint: three more, with no
    // failure between (a failed one would have fenced a TTL of 2 s).
    let before = a.minter.metrics();
    wait_until("three more renewals", Duration::from_secs(10), || {
        a.minter.metrics().renewals >= before.renewals + 3
    })
    .await;
    assert!(a.is_ready());
    assert_eq!(a.minter.metrics().fenced, before.fenced);
    wait_minted(&log, "a", Instant::now()).await;
    a.shutdown().await;
    check_log(&log, &["a"]);
}

/// The IDs `instance` issued as (datacenter, worker), in order.
fn issued_as(log: &Log, instance: &str, identity: (u8, u8)) -> Vec<SnowflakeId> {
    log.lock()
        .unwrap()
        .iter()
        .filter(|b| b.instance == instance)
        .flat_map(|b| b.ids.iter().copied())
        .filter(|id| (id.datacenter(), id.worker()) == identity)
        .collect()
}

fn batches_of(log: &Log, instance: &str) -> usize {
    log.lock()
        .unwrap()
        .iter()
        .filter(|b| b.instance == instance)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_identity_key_fences_at_once_and_the_instance_claims_again() {
    let Some(etcd) = EtcdServer::start() else {
        return;
    };
    let mut client = etcd_client::Client::connect([etcd.url()], None)
        .await
        .unwrap();
    let log = Log::default();
    let ttl = 3;
    let two_ttls = Duration::from_secs(2 * ttl);
    let a = Instance::start("a", options(&etcd.url(), "/lost", ttl), &log);
    a.wait_ready(Duration::from_secs(10)).await;
    let first = a.identity().unwrap();
    let first_key = key("/lost", "identities", first);
    let status = || a.minter.metrics();
    let first_lease = status().lease.unwrap();
    wait_until("a issued", Duration::from_secs(10), || {
        batches_of(&log, "a") >= 50
    })
    .await;

    // An operator deletes the key while the lease lives (`etcdctl del`):
    // the instance gives that lease up and claims again, its old identity
    // first (it is free), within two TTLs.
    client.delete(first_key.as_str(), None).await.unwrap();
    wait_until("a claims again", two_ttls, || {
        status().claims >= 2 && a.is_ready()
    })
    .await;
    assert_eq!(a.identity(), Some(first));
    let second_lease = status().lease.unwrap();
    assert_ne!(second_lease, first_lease, "a fresh lease");
    let old = client.lease_time_to_live(first_lease, None).await.unwrap();
    assert_eq!(old.ttl(), -1, "the lease that lost its key was revoked");
    let before = batches_of(&log, "a");
    wait_until("a mints again", two_ttls, || {
        batches_of(&log, "a") >= before + 50
    })
    .await;

    // The key is taken over by another lease while ours lives: the
    // instance stops issuing as `first` at once and moves to another.
    let intruder = client.lease_grant(60, None).await.unwrap().id();
    client
        .put(
            first_key.as_str(),
            "someone else",
            Some(etcd_client::PutOptions::new().with_lease(intruder)),
        )
        .await
        .unwrap();
    wait_until("a moves to another identity", two_ttls, || {
        a.identity().is_some_and(|i| i != first) && a.is_ready()
    })
    .await;
    assert_eq!(status().claims, 3);
    let as_0_0 = issued_as(&log, "a", first);
    let before = batches_of(&log, "a");
    wait_until("a mints as its new identity", two_ttls, || {
        batches_of(&log, "a") >= before + 50
    })
    .await;
    assert_eq!(
        issued_as(&log, "a", first).len(),
        as_0_0.len(),
        "a issued as {first:?} after losing it"
    );
    // The mark covers every ID a issued as `first`: the intruder's successor
    // starts above them.
    let mark = client
        .get(key("/lost", "reserved", first), None)
        .await
        .unwrap();
    let mark: u64 = std::str::from_utf8(mark.kvs()[0].value())
        .unwrap()
        .parse()
        .unwrap();
    let last = as_0_0.last().unwrap().timestamp_ms();
    assert!(
        mark >= last,
        "mark {mark} below a's last {first:?} ID at {last}"
    );

    a.shutdown().await;
    check_log(&log, &["a"]);
}

#[test]
fn each_etcd_owns_its_own_address() {
    let (Some(a), Some(b)) = (EtcdServer::start(), EtcdServer::start()) else {
        return;
    };
    assert_ne!(a.addr().ip(), b.addr().ip());
    snowmint_testkit::etcd::listener_owned_by(a.addr(), a.pid()).unwrap();
    // The check can fail: b's socket is not a's, nor is it this process's.
    let err = snowmint_testkit::etcd::listener_owned_by(b.addr(), a.pid()).unwrap_err();
    assert!(err.contains("another process"), "{err}");
    assert!(snowmint_testkit::etcd::listener_owned_by(b.addr(), std::process::id()).is_err());
    let nobody = snowmint_testkit::etcd::unused_addr();
    assert!(snowmint_testkit::etcd::listener_owned_by(nobody, b.pid()).is_err());
}

/// Waits until `minter.ready()` says a mint would succeed.
async fn wait_mintable(minter: &LeasedGenerator, limit: Duration) {
    let start = Instant::now();
    while let Err(e) = minter.ready() {
        assert!(
            start.elapsed() < limit,
            "not ready after {limit:?}: {e}; {:?}",
            minter.metrics()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The "reserved until" mark of `identity` under `prefix`, if any.
async fn mark_of(endpoint: &str, prefix: &str, identity: (u8, u8)) -> Option<u64> {
    let mut client = etcd_client::Client::connect([endpoint], None)
        .await
        .unwrap();
    let got = client
        .get(key(prefix, "reserved", identity), None)
        .await
        .unwrap();
    got.kvs()
        .first()
        .map(|kv| std::str::from_utf8(kv.value()).unwrap().parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_leased_generator_stays_ready_window_after_window() {
    let Some(etcd) = EtcdServer::start() else {
        return;
    };
    // Reservation windows of 400 ms, and the generator's proof that its
    // store takes writes trusted for 1.2 s after the newest write
    // (`max_proof_age_ms`; its default is one window): with nothing minted,
    // nothing needs a mark, so unless the session probes the store
    // `ready()` turns false 1.2 s into the idle stretch although a mint
    // would succeed. A probe is due at half that age, leaving it 600 ms to
    // land on a busy machine.
    let factory: GeneratorFactory = Arc::new(|identity, store| {
        Generator::builder_for(identity)
            .reserve_window_ms(400)
            .max_proof_age_ms(1_200)
            .store(store)
            .build()
    });
    // A long TTL: renewals keep the fence open throughout, so only the
    // generator's own verdict is under test.
    let minter =
        LeasedGenerator::spawn(options(&etcd.url(), "/idle", 10).generator(factory)).unwrap();
    wait_mintable(&minter, Duration::from_secs(20)).await;
    let identity = minter.identity().unwrap();
    let held = (identity.datacenter(), identity.worker());
    let mark_before = mark_of(&etcd.url(), "/idle", held).await.unwrap();

    // Idle for more than three proof ages (ten windows), checked every 50 ms.
    let idle = Instant::now();
    let mut checks = 0u32;
    while idle.elapsed() < Duration::from_secs(4) {
        if let Err(e) = minter.ready() {
            panic!(
                "not ready {:?} into an idle stretch with nothing minted ({checks} checks \
                 passed before), though the lease is held: {e}; {:?}",
                idle.elapsed(),
                minter.metrics()
            );
        }
        checks += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let m = minter.metrics();
    assert_eq!(
        (m.state, m.claims, m.fenced),
        (LeaseState::Held, 1, 0),
        "{m:?}"
    );
    assert!(
        minter.generator_metrics().unwrap().ids_issued == 0,
        "something minted during the idle stretch"
    );
    // The probes wrote the mark: that is how readiness knows the store
    // still takes writes.
    let mark_after = mark_of(&etcd.url(), "/idle", held).await.unwrap();
    assert!(
        mark_after > mark_before,
        "the mark stayed at {mark_before} while idle: nothing probed the store"
    );
    // And readiness told the truth: a mint succeeds now.
    let ids = tokio::task::block_in_place(|| mint(&minter, 10)).expect("a mint after idling");
    assert!(
        ids.iter()
            .all(|id| (id.datacenter(), id.worker()) == held && id.timestamp_ms() > mark_before)
    );
    minter.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_factory_generator_of_another_identity_or_store_is_never_used() {
    let Some(etcd) = EtcdServer::start() else {
        return;
    };
    // Builds for the next identity after the one it is given.
    let another_identity: GeneratorFactory = Arc::new(|identity: Identity, store| {
        let next = (u64::from(identity.ordinal()) + 1) % 1024;
        Generator::builder_for(Identity::from_ordinal(next).unwrap())
            .store(store)
            .build()
    });
    // Keeps its mark in memory, not in the store it is given (in etcd).
    let another_store: GeneratorFactory = Arc::new(|identity, _given| {
        Generator::builder_for(identity)
            .store(MemoryStore::new())
            .build()
    });
    let cases = [
        (
            "another-identity",
            another_identity,
            "it mints as another identity",
        ),
        (
            "another-store",
            another_store,
            "it does not keep its mark in the store it was given",
        ),
    ];
    for (case, factory, why) in cases {
        let log = Log::default();
        let prefix = format!("/{case}");
        let a = Instance::start(
            case,
            options(&etcd.url(), &prefix, 3).generator(factory),
            &log,
        );
        // Each claim builds a generator, which the session must refuse: it
        // never installs one, so it is never ready and never mints, and it
        // says why. Three refusals, checked every 20 ms in between.
        wait_until(
            &format!("{case}: three claims tried"),
            Duration::from_secs(20),
            || {
                assert!(
                    !a.is_ready() && a.minter.ready().is_err(),
                    "{case}: ready with a generator the session had to refuse: {:?}",
                    a.minter.metrics()
                );
                a.minter.metrics().claim_txns >= 3
            },
        )
        .await;
        let m = a.minter.metrics();
        let error = m.last_error.clone().unwrap_or_default();
        assert!(
            error.contains(why),
            "{case}: the last error {error:?} does not say {why:?}: {m:?}"
        );
        assert_eq!(m.claims, 0, "{case}: {m:?}");
        assert!(mint(&a.minter, 1).is_err(), "{case}: a mint succeeded");
        a.shutdown().await;
        let issued = log.lock().unwrap().len();
        assert_eq!(issued, 0, "{case}: {issued} batches issued");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_keep_increasing_when_an_instance_claims_another_identity() {
    let Some(etcd) = EtcdServer::start() else {
        return;
    };
    let url = etcd.url();
    let mut client = etcd_client::Client::connect([url.as_str()], None)
        .await
        .unwrap();
    // Identity 0/0's mark a minute ahead of the clock, as a holder whose
    // clock ran ahead would leave it: its next holder issues above it, on
    // borrowed time (the factory lets it borrow two minutes).
    let ahead_ms = SystemClock::new().now_ms() + 60_000;
    client
        .put(
            key("/floor", "reserved", (0, 0)),
            ahead_ms.to_string(),
            None,
        )
        .await
        .unwrap();
    // Every worker of datacenter 0 held by a filler, but 0/0.
    let mut filler = Filler::take_free(&url, "/floor").await;
    filler.held.retain(|&w| w != 0);
    client
        .delete(key("/floor", "identities", (0, 0)), None)
        .await
        .unwrap();
    let factory: GeneratorFactory = Arc::new(|identity, store| {
        Generator::builder_for(identity)
            .max_borrow_ms(120_000)
            .store(store)
            .build()
    });
    let log = Log::default();
    let ttl = 3;
    let a = Instance::start("a", dc0(&url, "/floor", ttl).generator(factory), &log);
    a.wait_ready(Duration::from_secs(20)).await;
    assert_eq!(a.identity(), Some((0, 0)));
    wait_until("a issued as 0/0", Duration::from_secs(10), || {
        batches_of(&log, "a") >= 50
    })
    .await;
    let first = issued_as(&log, "a", (0, 0))[0];
    assert!(
        first.timestamp_ms() > ahead_ms,
        "a issued {first} at or below 0/0's mark {ahead_ms}"
    );

    // One other worker freed (it has no mark), then 0/0 taken over by
    // another lease: a stops issuing as 0/0 and claims the free one, whose
    // generator starts at the clock, a minute below a's last ID, unless
    // the session carries its last millisecond over.
    let next = filler.free_one().await;
    let intruder = client.lease_grant(60, None).await.unwrap().id();
    client
        .put(
            key("/floor", "identities", (0, 0)),
            "someone else",
            Some(etcd_client::PutOptions::new().with_lease(intruder)),
        )
        .await
        .unwrap();
    wait_until(
        "a claims the free identity",
        Duration::from_secs(4 * ttl),
        || a.identity() == Some(next) && a.is_ready(),
    )
    .await;
    wait_until(
        "a issued as its new identity",
        Duration::from_secs(10),
        || issued_as(&log, "a", next).len() >= 200,
    )
    .await;
    let m = a.minter.metrics();
    assert_eq!(m.claims, 2, "{m:?}");
    a.shutdown().await;
    let before = issued_as(&log, "a", (0, 0));
    let after = issued_as(&log, "a", next);
    let last_before = *before.iter().max().unwrap();
    let first_after = *after.iter().min().unwrap();
    assert!(
        first_after > last_before,
        "after re-claiming as {next:?} a issued {first_after} (at {} ms), below {last_before} \
         (at {} ms), which it had issued as 0/0: its IDs went back",
        first_after.timestamp_ms(),
        last_before.timestamp_ms()
    );
    check_log(&log, &["a"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_renewal_is_timed_from_the_grant_when_holding_starts_late() {
    let Some(etcd) = EtcdServer::start() else {
        return;
    };
    // TTL 10 s: the fence closes 8 s after the grant unless a renewal comes
    // first, and renewals are 8/3 s apart. Building the generator takes
    // 5.5 s here (a slow store, as a fault of the test), so holding starts
    // 5.5 s after the grant. Timed from the grant, the first renewal is
    // overdue then and goes out at once, with over 2 s to spare; timed from
    // when holding started, it would go out 8.2 s after the grant, after
    // the fence had closed.
    let build_takes = Duration::from_millis(5_500);
    let factory: GeneratorFactory = Arc::new(move |identity, store| {
        std::thread::sleep(build_takes);
        Generator::builder_for(identity).store(store).build()
    });
    let log = Log::default();
    let started = Instant::now();
    let a = Instance::start(
        "a",
        options(&etcd.url(), "/first-renewal", 10).generator(factory),
        &log,
    );
    a.wait_ready(Duration::from_secs(30)).await;
    assert!(started.elapsed() >= build_takes);
    wait_until("two renewals", Duration::from_secs(20), || {
        a.minter.metrics().renewals >= 2
    })
    .await;
    let m = a.minter.metrics();
    assert_eq!(
        m.fenced, 0,
        "the fence closed before the first renewal: holding started {build_takes:?} after the \
         grant and the first renewal was timed from then, not from the grant: {m:?}"
    );
    assert_eq!((m.state, m.claims), (LeaseState::Held, 1), "{m:?}");
    wait_minted(&log, "a", Instant::now()).await;
    a.shutdown().await;
    check_log(&log, &["a"]);
}
