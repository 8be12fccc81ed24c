//! etcd out of reach: frozen, cut off behind a proxy (longer and shorter
//! than a lease), not yet up at start, one endpoint of the list dead.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use snowmint_etcd::{EtcdConfig, LeaseState};
use snowmint_testkit::etcd::EtcdServer;
use snowmint_testkit::proxy::Proxy;

use crate::support::instance::{Instance, mint};
use crate::support::log::{Log, check_log, wait_minted};
use crate::support::{Filler, dc0, key, options, wait_key_gone, wait_until};

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
    a.mints_again_then_stops(&log).await;
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
    a.mints_again_then_stops(&log).await;
}
