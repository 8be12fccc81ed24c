//! Holders come and go: a graceful stop frees its identity at once, a
//! crashed holder's is taken over once its lease expires (even by an
//! instance whose clock lags), and a full pool keeps an instance waiting.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use snowmint::{Clock, Generator, SystemClock};
use snowmint_etcd::{GeneratorFactory, LeaseState};
use snowmint_testkit::etcd::EtcdServer;

use crate::support::instance::Instance;
use crate::support::log::{Log, check_log, wait_minted};
use crate::support::{Filler, client, dc0, key, key_exists, options, wait_key_gone, wait_until};

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
async fn all_identities_taken_means_not_ready_and_a_retry_when_one_frees() {
    let Some(etcd) = EtcdServer::start() else {
        return;
    };
    let mut client = client(&etcd.url()).await;
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
    a.mints_again_then_stops(&log).await;
}
