//! The etcd requests against a real etcd (skipped with a reason when the
//! `etcd` binary is missing, unless SNOWMINT_REQUIRE_SERVICES=1).

use std::time::Duration;

use std::collections::HashSet;

use crate::bridge::Bridge;
use crate::claim::Pool;
use crate::error::EtcdError;
use crate::keys::Keys;
use crate::ops::{self, SeenMark, Wanted};
use crate::store::EtcdStore;

const T: Duration = Duration::from_secs(3);

/// A mark in the format's range (2023-11-14).
const M: u64 = 1_700_000_000_000;

/// Claims an identity of any datacenter for `lease`, `prefer` first.
async fn claim(
    client: &mut etcd_client::Client,
    keys: &Keys,
    lease: i64,
    holder: &str,
    prefer: Option<u16>,
) -> Option<u16> {
    let wanted = Wanted {
        pool: Pool::ALL,
        prefer,
        avoid: &HashSet::new(),
    };
    ops::claim(client, keys, lease, holder, wanted, None, T)
        .await
        .unwrap()
        .identity
}

#[tokio::test]
async fn claims_are_exclusive_and_marks_are_guarded_by_the_lease() {
    let Some(etcd) = snowmint_testkit::etcd::EtcdServer::start() else {
        return;
    };
    let endpoints = [etcd.url()];
    let keys = Keys::new("/test");
    let mut client = ops::connect(&endpoints[0], None, T).await.unwrap();

    let a = ops::grant(&mut client, Duration::from_secs(30), T)
        .await
        .unwrap();
    let b = ops::grant(&mut client, Duration::from_secs(30), T)
        .await
        .unwrap();
    let ia = claim(&mut client, &keys, a.id, "a", None).await;
    let ib = claim(&mut client, &keys, b.id, "b", None).await;
    assert_eq!(
        (ia, ib),
        (Some(0), Some(1)),
        "first free identities in order"
    );
    // Preferring a taken identity does not steal it.
    let c = ops::grant(&mut client, Duration::from_secs(30), T)
        .await
        .unwrap();
    let ic = claim(&mut client, &keys, c.id, "c", Some(0)).await;
    assert_eq!(ic, Some(2));
    // A free preferred identity comes before the lowest free one.
    let e = ops::grant(&mut client, Duration::from_secs(30), T)
        .await
        .unwrap();
    assert_eq!(
        claim(&mut client, &keys, e.id, "e", Some(700)).await,
        Some(700)
    );

    // Marks: absent, then written, raised, never lowered; each write from
    // what the previous one returned, or from nothing.
    let absent = ops::load_mark(&mut client, &keys, 0, T).await.unwrap();
    assert_eq!(absent, SeenMark::ABSENT);
    let seen = ops::store_mark(&mut client, &keys, 0, a.id, M + 1_000, Some(absent), T)
        .await
        .unwrap();
    assert_eq!(seen.value, Some(M + 1_000));
    let seen = ops::store_mark(&mut client, &keys, 0, a.id, M + 2_000, Some(seen), T)
        .await
        .unwrap();
    assert_eq!(
        seen,
        ops::load_mark(&mut client, &keys, 0, T).await.unwrap()
    );
    // A stale or unknown revision costs a re-read, never a lower mark.
    for known in [None, Some(absent)] {
        let now = ops::store_mark(&mut client, &keys, 0, a.id, M + 1_500, known, T)
            .await
            .unwrap();
        assert_eq!(now, seen);
    }
    assert_eq!(
        ops::load_mark(&mut client, &keys, 0, T)
            .await
            .unwrap()
            .value,
        Some(M + 2_000)
    );

    // Another lease cannot move identity 0's mark.
    let err = ops::store_mark(&mut client, &keys, 0, b.id, M + 9_000, None, T)
        .await
        .unwrap_err();
    assert!(matches!(err, EtcdError::NotHolder { .. }), "{err}");
    assert!(ops::holds(&mut client, &keys, 0, a.id, T).await.unwrap());
    assert!(!ops::holds(&mut client, &keys, 0, b.id, T).await.unwrap());

    // Revoking frees the identity at once, and the mark stays for the next holder.
    ops::revoke(&mut client, a.id, T).await.unwrap();
    let err = ops::store_mark(&mut client, &keys, 0, a.id, M + 9_000, Some(seen), T)
        .await
        .unwrap_err();
    assert!(matches!(err, EtcdError::NotHolder { .. }), "{err}");
    let d = ops::grant(&mut client, Duration::from_secs(30), T)
        .await
        .unwrap();
    assert_eq!(claim(&mut client, &keys, d.id, "d", Some(0)).await, Some(0));
    assert_eq!(
        ops::load_mark(&mut client, &keys, 0, T)
            .await
            .unwrap()
            .value,
        Some(M + 2_000)
    );

    // Another prefix is another cluster.
    let other = Keys::new("/other/");
    assert_eq!(
        claim(&mut client, &other, d.id, "d", Some(0)).await,
        Some(0)
    );
}

#[tokio::test]
async fn all_identities_taken_is_none() {
    let Some(etcd) = snowmint_testkit::etcd::EtcdServer::start() else {
        return;
    };
    let keys = Keys::new("/full");
    let mut client = ops::connect(&etcd.url(), None, T).await.unwrap();
    let lease = ops::grant(&mut client, Duration::from_secs(30), T)
        .await
        .unwrap();
    // Take all but one identity directly, in one transaction per 128 keys.
    for chunk in (0..1023u16).collect::<Vec<_>>().chunks(100) {
        let ops: Vec<_> = chunk
            .iter()
            .map(|&n| {
                etcd_client::TxnOp::put(
                    keys.identity(n),
                    "filler",
                    Some(etcd_client::PutOptions::new().with_lease(lease.id)),
                )
            })
            .collect();
        client
            .txn(etcd_client::Txn::new().and_then(ops))
            .await
            .unwrap();
    }
    let last = ops::grant(&mut client, Duration::from_secs(30), T)
        .await
        .unwrap();
    assert_eq!(
        claim(&mut client, &keys, last.id, "x", None).await,
        Some(1023)
    );
    let none = ops::grant(&mut client, Duration::from_secs(30), T)
        .await
        .unwrap();
    assert_eq!(claim(&mut client, &keys, none.id, "y", None).await, None);
}

#[test]
fn bridge_serves_blocking_callers_inside_and_outside_a_runtime() {
    let Some(etcd) = snowmint_testkit::etcd::EtcdServer::start() else {
        return;
    };
    let keys = Keys::new("/bridge");
    let endpoints = vec![etcd.url()];
    let rt = tokio::runtime::Runtime::new().unwrap();
    let lease = rt.block_on(async {
        let mut client = ops::connect(&endpoints[0], None, T).await.unwrap();
        let lease = ops::grant(&mut client, Duration::from_secs(30), T)
            .await
            .unwrap();
        assert_eq!(
            claim(&mut client, &keys, lease.id, "z", Some(0)).await,
            Some(0)
        );
        lease
    });
    let bridge = Bridge::start(endpoints, None, keys, T).unwrap();
    assert_eq!(bridge.load(0).unwrap(), None);
    bridge.store(0, lease.id, M + 42).unwrap();
    // From a tokio worker thread, where block_on would panic.
    let inside = bridge.clone();
    let loaded = rt.block_on(async move {
        tokio::spawn(async move {
            inside.store(0, lease.id, M + 43).unwrap();
            inside.load(0).unwrap()
        })
        .await
        .unwrap()
    });
    assert_eq!(loaded, Some(M + 43));
    assert!(matches!(
        bridge.store(0, lease.id + 1, M + 50),
        Err(EtcdError::NotHolder { .. })
    ));
}

#[test]
fn bridge_calls_are_bounded_when_etcd_is_frozen() {
    let Some(mut etcd) = snowmint_testkit::etcd::EtcdServer::start() else {
        return;
    };
    let bridge = Bridge::start(
        vec![etcd.url()],
        None,
        Keys::new("/frozen"),
        Duration::from_millis(500),
    )
    .unwrap();
    assert_eq!(bridge.load(7).unwrap(), None);
    etcd.freeze();
    let err = bridge.load(7).unwrap_err();
    assert!(
        matches!(err, EtcdError::Timeout { .. } | EtcdError::Request { .. }),
        "{err}"
    );
    etcd.thaw();
    // It recovers: keep asking (bounded) until etcd answers again.
    let mut answer = bridge.load(7);
    for _ in 0..40 {
        if answer.is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        answer = bridge.load(7);
    }
    assert_eq!(answer.unwrap(), None);
}

/// Grants a lease and claims identity 0 under `keys` with it.
async fn hold_identity_0(url: &str, keys: &Keys) -> i64 {
    let mut client = ops::connect(url, None, T).await.unwrap();
    let lease = ops::grant(&mut client, Duration::from_secs(30), T)
        .await
        .unwrap();
    let claimed = claim(&mut client, keys, lease.id, "t", Some(0)).await;
    assert_eq!(claimed, Some(0));
    lease.id
}

#[test]
fn a_hand_written_unpadded_mark_is_raised_and_never_issued_under() {
    let Some(etcd) = snowmint_testkit::etcd::EtcdServer::start() else {
        return;
    };
    let keys = Keys::new("/unpadded");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let lease = rt.block_on(async {
        let mut client = etcd_client::Client::connect([etcd.url()], None)
            .await
            .unwrap();
        // As an operator would: `etcdctl put /unpadded/reserved/0/0 1700000000000`.
        client
            .put(keys.reserved(0), M.to_string(), None)
            .await
            .unwrap();
        hold_identity_0(&etcd.url(), &keys).await
    });
    let bridge = Bridge::start(vec![etcd.url()], None, keys.clone(), T).unwrap();
    let lost = std::sync::Arc::new(tokio::sync::Notify::new());
    let store = EtcdStore::new(bridge.clone(), 0, lease, lost);
    // The clock is a second behind the mark: only a raised mark lets the
    // generator issue (above the mark, on borrowed time).
    let clock = snowmint::ManualClock::new(M - 1_000);
    let generator = snowmint::Generator::builder(0, 0)
        .clock(clock.clone())
        .max_borrow_ms(10_000)
        .store(store)
        .build()
        .unwrap();
    assert_eq!(generator.reserved_until_ms(), Some(M));
    let mut last = None;
    for _ in 0..3 {
        for _ in 0..5_000 {
            let id = generator.next_id().unwrap();
            assert!(id.timestamp_ms() > M, "{id} at or below the mark {M}");
            assert!(last < Some(id));
            last = Some(id);
        }
        clock.advance(1_500);
    }
    let raised = bridge.load(0).unwrap().unwrap();
    assert!(
        raised >= last.unwrap().timestamp_ms(),
        "mark {raised} below the last ID"
    );
    // Written padded: instances of earlier versions compare bytes.
    let stored = rt.block_on(async {
        let mut client = etcd_client::Client::connect([etcd.url()], None)
            .await
            .unwrap();
        client.get(keys.reserved(0), None).await.unwrap().kvs()[0]
            .value()
            .to_vec()
    });
    assert_eq!(stored, format!("{raised:020}").into_bytes());
}

#[test]
fn a_malformed_mark_is_refused_naming_the_key_and_the_value() {
    let Some(etcd) = snowmint_testkit::etcd::EtcdServer::start() else {
        return;
    };
    let keys = Keys::new("/malformed");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let lease = rt.block_on(async {
        let mut client = etcd_client::Client::connect([etcd.url()], None)
            .await
            .unwrap();
        client
            .put(keys.reserved(0), "1700000000", None)
            .await
            .unwrap();
        hold_identity_0(&etcd.url(), &keys).await
    });
    let bridge = Bridge::start(vec![etcd.url()], None, keys, T).unwrap();
    for err in [
        bridge.load(0).unwrap_err(),
        bridge.store(0, lease, M).unwrap_err(),
    ] {
        assert!(matches!(err, EtcdError::DamagedMark { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "the reservation mark at /malformed/reserved/0/0 is damaged: \"1700000000\" is not \
             Unix milliseconds (decimal digits, 1288834974657..=3487858230208); an operator \
             must fix it (see docs/distributed.md) before this identity is used again"
        );
    }
}

/// Claims for `sessions` leases at once (each on a connection of its own),
/// scoped to `pool`: what each got and the transactions they sent.
async fn claim_together(url: &str, keys: &Keys, pool: Pool, sessions: usize) -> Vec<ops::Claimed> {
    let mut clients = Vec::new();
    for _ in 0..sessions {
        let mut client = ops::connect(url, None, T).await.unwrap();
        let lease = ops::grant(&mut client, Duration::from_secs(60), T)
            .await
            .unwrap();
        clients.push((client, lease.id));
    }
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(sessions));
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|(mut client, lease)| {
            let keys = keys.clone();
            let start = std::sync::Arc::clone(&start);
            tokio::spawn(async move {
                start.wait().await;
                let wanted = Wanted {
                    pool,
                    prefer: None,
                    avoid: &HashSet::new(),
                };
                ops::claim(&mut client, &keys, lease, "together", wanted, None, T)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut claimed = Vec::new();
    for task in tasks {
        claimed.push(task.await.unwrap());
    }
    claimed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_starting_together_claim_distinct_identities_in_about_one_txn_each() {
    let Some(etcd) = snowmint_testkit::etcd::EtcdServer::start() else {
        return;
    };
    let keys = Keys::new("/together");
    let claimed = claim_together(&etcd.url(), &keys, Pool::ALL, 128).await;
    let held: HashSet<u16> = claimed.iter().filter_map(|c| c.identity).collect();
    assert_eq!(held.len(), 128, "every session holds one, none twice");
    let txns: u32 = claimed.iter().map(|c| c.txns).sum();
    // Lowest-first would race for the same keys: 128 * 129 / 2 = 8256.
    assert!(
        txns <= 3 * 128,
        "{txns} claim transactions for 128 sessions"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_datacenter_scoped_claim_takes_only_that_datacenters_workers() {
    let Some(etcd) = snowmint_testkit::etcd::EtcdServer::start() else {
        return;
    };
    let keys = Keys::new("/region");
    let dc7 = Pool::new(Some(7));
    // 33 sessions for 32 workers: 32 hold distinct workers of datacenter 7,
    // one finds it full, though 992 identities of other datacenters are free.
    let claimed = claim_together(&etcd.url(), &keys, dc7, 33).await;
    let held: Vec<u16> = claimed.iter().filter_map(|c| c.identity).collect();
    assert_eq!(held.len(), 32);
    assert_eq!(held.iter().copied().collect::<HashSet<_>>().len(), 32);
    for n in &held {
        let identity = snowmint::Identity::from_ordinal((*n).into()).unwrap();
        assert_eq!(identity.datacenter(), 7, "{identity}");
    }
    let mut client = ops::connect(&etcd.url(), None, T).await.unwrap();
    assert_eq!(
        ops::scan(&mut client, &keys, dc7, T).await.unwrap().len(),
        32
    );
    assert!(
        ops::scan(&mut client, &keys, Pool::new(Some(6)), T)
            .await
            .unwrap()
            .is_empty()
    );
    // Another datacenter is untouched: a scoped claim there gets one of its own.
    let lease = ops::grant(&mut client, Duration::from_secs(60), T)
        .await
        .unwrap();
    let wanted = Wanted {
        pool: Pool::new(Some(8)),
        prefer: Some(7 * 32),
        avoid: &HashSet::new(),
    };
    let other = ops::claim(&mut client, &keys, lease.id, "x", wanted, None, T)
        .await
        .unwrap()
        .identity
        .unwrap();
    assert_eq!(
        other / 32,
        8,
        "{other}: a preferred identity outside the pool is not taken"
    );
}
