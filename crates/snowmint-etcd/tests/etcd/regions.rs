//! Regions: two separate etcd clusters, each with instances scoped to a
//! datacenter of its own (`EtcdConfig::datacenter`). No identity is held
//! twice, every ID decodes to its region's datacenter, none repeats; a
//! region whose 32 workers are all held keeps its next instance waiting
//! (not ready, saying which datacenter is full) until one is freed.
//!
//! Skipped with a printed reason when the `etcd` binary is missing, unless
//! SNOWMINT_REQUIRE_SERVICES=1.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use snowmint::{Identity, SnowflakeId};
use snowmint_etcd::{EtcdConfig, LeaseState, LeasedGenerator};
use snowmint_testkit::etcd::EtcdServer;

/// The prefix both regions use: the same, on purpose; only the etcd
/// clusters and the datacenters differ.
const PREFIX: &str = "/snowmint";

fn region(url: &str, datacenter: u8, i: usize) -> EtcdConfig {
    EtcdConfig::new([url])
        .prefix(PREFIX)
        .lease_ttl(Duration::from_secs(3))
        .datacenter(datacenter)
        .holder(format!("dc {datacenter} instance {i}"))
}

/// Starts `n` instances of a region at once and waits until each holds.
async fn start_region(url: &str, datacenter: u8, n: usize) -> Vec<LeasedGenerator> {
    let spawned: Vec<LeasedGenerator> = (0..n)
        .map(|i| LeasedGenerator::spawn(region(url, datacenter, i)).unwrap())
        .collect();
    for minter in &spawned {
        tokio::time::timeout(Duration::from_secs(60), minter.held())
            .await
            .expect("an identity within a minute");
    }
    spawned
}

/// `n` IDs from `minter`, off the async workers (a mint may wait).
async fn mint(minter: &LeasedGenerator, n: usize) -> Vec<SnowflakeId> {
    tokio::task::block_in_place(|| (0..n).map(|_| minter.next_id().unwrap()).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_regions_with_their_own_etcd_and_datacenter_never_share_an_identity() {
    let (Some(east), Some(west)) = (EtcdServer::start(), EtcdServer::start()) else {
        return;
    };
    // East fills all 32 workers of datacenter 3; west runs 4 in datacenter 9.
    let east_fleet = start_region(&east.url(), 3, 32).await;
    let west_fleet = start_region(&west.url(), 9, 4).await;

    let mut held = HashSet::new();
    let mut ids = Vec::new();
    for (fleet, datacenter) in [(&east_fleet, 3), (&west_fleet, 9)] {
        for minter in fleet {
            let identity = minter.identity().unwrap();
            assert_eq!(identity.datacenter(), datacenter, "{identity}");
            assert_eq!(minter.datacenter_scope(), Some(datacenter));
            assert!(held.insert(identity), "{identity} held twice");
            for id in mint(minter, 500).await {
                assert_eq!(
                    (id.datacenter(), id.worker()),
                    (identity.datacenter(), identity.worker()),
                    "{id} minted as {identity}"
                );
                ids.push(id);
            }
        }
    }
    assert_eq!(held.len(), 36);
    let unique: HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "a duplicate across regions");

    // A 33rd instance in the east waits, not ready, naming its datacenter,
    // though 992 identities of other datacenters are free in its etcd.
    let waiter = LeasedGenerator::spawn(region(&east.url(), 3, 32)).unwrap();
    let start = Instant::now();
    while waiter.metrics().state != LeaseState::AllTaken {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{:?}",
            waiter.metrics()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(waiter.all_taken());
    assert!(waiter.ready_identity().is_none());
    assert!(waiter.next_id().is_err());
    let error = waiter.metrics().last_error.unwrap();
    assert!(
        error.contains("all 32 worker identities of datacenter 3"),
        "{error}"
    );
    // One east instance stops: the waiter takes its identity, in
    // datacenter 3, within its backoff.
    let freed = east_fleet[17].identity().unwrap();
    east_fleet[17].shutdown().await;
    tokio::time::timeout(Duration::from_secs(30), waiter.held())
        .await
        .expect("the waiter claims the freed identity");
    assert_eq!(waiter.identity(), Some(freed));
    let after: Vec<SnowflakeId> = mint(&waiter, 500).await;
    assert!(after.iter().all(|id| id.datacenter() == 3));
    ids.extend(after);
    let unique: HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "a duplicate after the hand-over");

    waiter.shutdown().await;
    for minter in east_fleet.iter().chain(&west_fleet) {
        minter.shutdown().await;
    }
}

#[test]
fn a_datacenter_out_of_range_is_refused_with_the_cores_message() {
    let config = EtcdConfig::new(["http://127.0.0.1:2379"]).datacenter(32);
    let error = LeasedGenerator::spawn(config).unwrap_err();
    assert_eq!(error.to_string(), "datacenter must be 0..=31, got 32");
    assert_eq!(
        Identity::new(32, 0).unwrap_err().to_string(),
        error.to_string()
    );
}
