//! Claims: exclusive, each told how the identity was last left, spread
//! over the pool by sessions starting together, scoped to a datacenter.

use std::collections::HashSet;
use std::time::Duration;

use snowmint_lease::{Claimant, Claimed, Coordinator, LeaseError, LeasedGenerator, Pool, Previous};

use super::{M, T, TTL, client, etcd, hold, who};
use crate::EtcdConfig;
use crate::keys::Keys;

#[tokio::test]
async fn claims_are_exclusive_marks_are_guarded_and_hand_overs_say_how_they_went() {
    let Some(server) = snowmint_testkit::etcd::EtcdServer::start() else {
        return;
    };
    let mut c = etcd(&server.url(), "/test");
    // Never held: clean.
    let (a, claimed) = hold(&mut c, 0, 1).await;
    assert_eq!(claimed, Claimed::Won(Previous::Clean));
    // Held: another lease cannot take it.
    let b = c.grant(TTL, T).await.unwrap().lease;
    assert_eq!(c.claim(b, 0, &who(2), T).await.unwrap(), Claimed::Taken);
    let census = c.scan(Pool::ALL, T).await.unwrap();
    assert_eq!(census.taken, HashSet::from([0]));

    // Marks: absent, then raised, never lowered, only by the holder.
    assert_eq!(c.load_mark(0, T).await.unwrap(), None);
    c.raise_mark(0, a, M + 1_000, T).await.unwrap();
    c.raise_mark(0, a, M + 2_000, T).await.unwrap();
    c.raise_mark(0, a, M + 1_500, T).await.unwrap();
    assert_eq!(c.load_mark(0, T).await.unwrap(), Some(M + 2_000));
    // A lower mark with what the coordinator knows is the current revision
    // (a fresh handle reads it first) is still not written.
    let mut fresh = c.sibling();
    assert_eq!(fresh.load_mark(0, T).await.unwrap(), Some(M + 2_000));
    fresh.raise_mark(0, a, M + 1, T).await.unwrap();
    assert_eq!(c.load_mark(0, T).await.unwrap(), Some(M + 2_000));
    let err = c.raise_mark(0, b, M + 9_000, T).await.unwrap_err();
    assert!(matches!(err, LeaseError::NotHolder { .. }), "{err}");
    assert!(c.confirm(0, a, T).await.unwrap().holds);
    assert!(!c.confirm(0, b, T).await.unwrap().holds);

    // Revoked without a release (as a crash, or a lease etcd ended): the
    // next holder is told to wait the old holder's TTL.
    c.revoke(a, T).await.unwrap();
    let err = c.raise_mark(0, a, M + 9_000, T).await.unwrap_err();
    assert!(matches!(err, LeaseError::NotHolder { .. }), "{err}");
    let census = c.scan(Pool::ALL, T).await.unwrap();
    assert!(census.taken.is_empty());
    assert!(census.unclean.contains(&0));
    assert_eq!(census.marks.get(&0), Some(&(M + 2_000)));
    let (d, claimed) = hold(&mut c, 0, 3).await;
    assert_eq!(
        claimed,
        Claimed::Won(Previous::Unclean {
            ttl: TTL,
            holder: "test".to_owned()
        })
    );
    assert_eq!(c.load_mark(0, T).await.unwrap(), Some(M + 2_000));
    // Released first: clean.
    c.release(0, d, T).await.unwrap();
    c.revoke(d, T).await.unwrap();
    assert!(!c.scan(Pool::ALL, T).await.unwrap().unclean.contains(&0));
    let (e, claimed) = hold(&mut c, 0, 4).await;
    assert_eq!(claimed, Claimed::Won(Previous::Clean));
    // Its own identity back, unreleased: clean to the same instance.
    c.revoke(e, T).await.unwrap();
    assert_eq!(hold(&mut c, 0, 4).await.1, Claimed::Won(Previous::Clean));
    // A release by a lease that does not hold it records nothing.
    let err = c.release(0, b, T).await.unwrap_err();
    assert!(matches!(err, LeaseError::NotHolder { .. }), "{err}");

    // Another prefix is another cluster.
    let mut other = etcd(&server.url(), "/other/");
    assert_eq!(
        hold(&mut other, 0, 5).await.1,
        Claimed::Won(Previous::Clean)
    );
}

#[tokio::test]
async fn the_ttl_recorded_for_the_next_holder_is_the_longest_fence_that_may_still_be_open() {
    let Some(server) = snowmint_testkit::etcd::EtcdServer::start() else {
        return;
    };
    let mut c = etcd(&server.url(), "/recorded");
    let long = Duration::from_secs(60);
    let unclean = |ttl| {
        Claimed::Won(Previous::Unclean {
            ttl,
            holder: "test".to_owned(),
        })
    };
    // A, with a 60 s TTL, holds it and ends without a release.
    let a = c.grant(TTL, T).await.unwrap().lease;
    let as_a = Claimant {
        ttl: long,
        ..who(1)
    };
    assert_eq!(
        c.claim(a, 0, &as_a, T).await.unwrap(),
        Claimed::Won(Previous::Clean)
    );
    c.revoke(a, T).await.unwrap();
    // B (30 s) takes it over: told A's 60 s.
    let (b, claimed) = hold(&mut c, 0, 2).await;
    assert_eq!(claimed, unclean(long));
    // Asked again under the same lease (its answer lost): the wait it
    // recorded; under another lease it is taken.
    assert_eq!(
        c.claim(b, 0, &who(2), T).await.unwrap(),
        Claimed::Won(Previous::Unclean {
            ttl: long,
            holder: "this lease's own claim, asked again".to_owned()
        })
    );
    let other = c.grant(TTL, T).await.unwrap().lease;
    assert_eq!(c.claim(other, 0, &who(2), T).await.unwrap(), Claimed::Taken);
    // B loses it during its wait, without a release: C (30 s) is told 60 s,
    // since A's fence may still be open.
    c.revoke(b, T).await.unwrap();
    let (d, claimed) = hold(&mut c, 0, 3).await;
    assert_eq!(claimed, unclean(long));
    // Released: the next holder issues at once and records its own TTL only.
    c.release(0, d, T).await.unwrap();
    c.revoke(d, T).await.unwrap();
    let (e, claimed) = hold(&mut c, 0, 4).await;
    assert_eq!(claimed, Claimed::Won(Previous::Clean));
    c.revoke(e, T).await.unwrap();
    assert_eq!(hold(&mut c, 0, 5).await.1, unclean(TTL));
}

#[tokio::test]
async fn a_full_pool_is_all_taken() {
    let Some(server) = snowmint_testkit::etcd::EtcdServer::start() else {
        return;
    };
    let keys = Keys::new("/full");
    let mut client = client(&server.url()).await;
    let lease = client.lease_grant(60, None).await.unwrap().id();
    // Take all but one identity directly, in one transaction per 100 keys.
    for chunk in (0..1023u16).collect::<Vec<_>>().chunks(100) {
        let ops: Vec<_> = chunk
            .iter()
            .map(|&n| {
                etcd_client::TxnOp::put(
                    keys.identity(n),
                    "filler",
                    Some(etcd_client::PutOptions::new().with_lease(lease)),
                )
            })
            .collect();
        client
            .txn(etcd_client::Txn::new().and_then(ops))
            .await
            .unwrap();
    }
    let mut c = etcd(&server.url(), "/full");
    assert_eq!(c.scan(Pool::ALL, T).await.unwrap().taken.len(), 1023);
    assert!(matches!(hold(&mut c, 1023, 1).await.1, Claimed::Won(_)));
    assert_eq!(hold(&mut c, 7, 2).await.1, Claimed::Taken);
}

/// `sessions` lease sessions started at once against the etcd at `url`,
/// under `prefix`, scoped to `datacenter` if one is given.
async fn start_together(
    url: &str,
    prefix: &str,
    datacenter: Option<u8>,
    sessions: usize,
) -> Vec<LeasedGenerator> {
    let mut started = Vec::new();
    for _ in 0..sessions {
        let mut config = EtcdConfig::new([url])
            .prefix(prefix)
            .lease_ttl(Duration::from_secs(60));
        if let Some(dc) = datacenter {
            config = config.datacenter(dc);
        }
        started.push(LeasedGenerator::spawn(config).unwrap());
    }
    started
}

/// Waits (bounded) until `done` holds of every session.
async fn wait_all(sessions: &[LeasedGenerator], done: impl Fn(&LeasedGenerator) -> bool) {
    let start = std::time::Instant::now();
    while !sessions.iter().all(&done) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "not every session got there in 60 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_starting_together_claim_distinct_identities_in_about_one_txn_each() {
    let Some(server) = snowmint_testkit::etcd::EtcdServer::start() else {
        return;
    };
    let sessions = start_together(&server.url(), "/together", None, 128).await;
    wait_all(&sessions, |s| s.identity().is_some()).await;
    let held: HashSet<_> = sessions
        .iter()
        .filter_map(LeasedGenerator::identity)
        .collect();
    assert_eq!(held.len(), 128, "every session holds one, none twice");
    let txns: u64 = sessions.iter().map(|s| s.metrics().claim_txns).sum();
    // Lowest first would race for the same keys: 128 * 129 / 2 = 8256.
    assert!(
        txns * 2 <= 3 * 128,
        "{txns} claim transactions for 128 sessions"
    );
    for s in &sessions {
        s.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_datacenter_scoped_claim_takes_only_that_datacenters_workers() {
    let Some(server) = snowmint_testkit::etcd::EtcdServer::start() else {
        return;
    };
    // 33 sessions for 32 workers: 32 hold distinct workers of datacenter 7,
    // one finds it full, though 992 identities of other datacenters are free.
    let sessions = start_together(&server.url(), "/region", Some(7), 33).await;
    wait_all(&sessions, |s| s.identity().is_some() || s.all_taken()).await;
    let held: Vec<_> = sessions
        .iter()
        .filter_map(LeasedGenerator::identity)
        .collect();
    assert_eq!(held.len(), 32);
    assert_eq!(held.iter().copied().collect::<HashSet<_>>().len(), 32);
    for identity in &held {
        assert_eq!(identity.datacenter(), 7, "{identity}");
    }
    assert_eq!(sessions.iter().filter(|s| s.all_taken()).count(), 1);
    let mut c = etcd(&server.url(), "/region");
    assert_eq!(c.scan(Pool::new(Some(7)), T).await.unwrap().taken.len(), 32);
    assert!(
        c.scan(Pool::new(Some(6)), T)
            .await
            .unwrap()
            .taken
            .is_empty()
    );
    for s in &sessions {
        s.shutdown().await;
    }
}
