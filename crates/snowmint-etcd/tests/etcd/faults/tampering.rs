//! Someone else writes the keys: a damaged mark, an identity key deleted
//! or taken over by another lease while the holder's lease lives.

use std::sync::Arc;
use std::time::Duration;

use snowmint::{Clock, Generator, SystemClock};
use snowmint_etcd::{GeneratorFactory, LeaseState};
use snowmint_testkit::etcd::EtcdServer;

use crate::support::instance::Instance;
use crate::support::log::{Log, batches_of, check_log, issued_as};
use crate::support::{Filler, client, dc0, intrude, key, key_exists, mark_of, options, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_mark_is_never_issued_over_and_its_identity_is_skipped() {
    let Some(etcd) = EtcdServer::start() else {
        return;
    };
    let mut client = client(&etcd.url()).await;
    client
        .put("/damaged/reserved/0/0", "not a number", None)
        .await
        .unwrap();
    // Only 0/0 free: the claim must try it, and find its mark damaged.
    let mut filler = Filler::take_free(&etcd.url(), "/damaged").await;
    filler.free(0).await;
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
    a.mints_again_then_stops(&log).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_identity_key_fences_at_once_and_the_instance_claims_again() {
    let Some(etcd) = EtcdServer::start() else {
        return;
    };
    let mut client = client(&etcd.url()).await;
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
    intrude(&mut client, &first_key).await;
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
    let mark = mark_of(&etcd.url(), "/lost", first).await.unwrap();
    let last = as_0_0.last().unwrap().timestamp_ms();
    assert!(
        mark >= last,
        "mark {mark} below a's last {first:?} ID at {last}"
    );

    a.shutdown().await;
    check_log(&log, &["a"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_keep_increasing_when_an_instance_claims_another_identity() {
    let Some(etcd) = EtcdServer::start() else {
        return;
    };
    let url = etcd.url();
    let mut client = client(url.as_str()).await;
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
    filler.free(0).await;
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
    intrude(&mut client, &key("/floor", "identities", (0, 0))).await;
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
