//! The generator a session builds through its factory: slow to build,
//! idle for many reservation windows, or built for another identity or
//! store (refused).

use std::sync::Arc;
use std::time::{Duration, Instant};

use snowmint::{Generator, Identity, MemoryStore};
use snowmint_etcd::{GeneratorFactory, LeaseState, LeasedGenerator};
use snowmint_testkit::etcd::EtcdServer;

use crate::support::instance::{Instance, mint};
use crate::support::log::Log;
use crate::support::{mark_of, options, wait_until};

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
    a.mints_again_then_stops(&log).await;
}
