//! The etcd requests against a real etcd (skipped with a reason when the
//! `etcd` binary is missing, unless SNOWMINT_REQUIRE_SERVICES=1).

use std::time::Duration;

use super::bridge::Bridge;
use super::keys::Keys;
use super::ops::{self, EtcdError};

#[path = "../../tests/support/mod.rs"]
mod support;

const T: Duration = Duration::from_secs(3);

#[tokio::test]
async fn claims_are_exclusive_and_marks_are_guarded_by_the_lease() {
    let Some(etcd) = support::etcd::EtcdServer::start() else {
        return;
    };
    let endpoints = [etcd.url()];
    let keys = Keys::new("/test");
    let mut client = ops::connect(&endpoints[0], T).await.unwrap();

    let a = ops::grant(&mut client, Duration::from_secs(30), T)
        .await
        .unwrap();
    let b = ops::grant(&mut client, Duration::from_secs(30), T)
        .await
        .unwrap();
    let ia = ops::claim(&mut client, &keys, a.id, "a", None, &Default::default(), T)
        .await
        .unwrap();
    let ib = ops::claim(&mut client, &keys, b.id, "b", None, &Default::default(), T)
        .await
        .unwrap();
    assert_eq!(
        (ia, ib),
        (Some(0), Some(1)),
        "first free identities in order"
    );
    // Preferring a taken identity does not steal it.
    let c = ops::grant(&mut client, Duration::from_secs(30), T)
        .await
        .unwrap();
    let ic = ops::claim(
        &mut client,
        &keys,
        c.id,
        "c",
        Some(0),
        &Default::default(),
        T,
    )
    .await
    .unwrap();
    assert_eq!(ic, Some(2));

    // Marks: absent, then written, raised, never lowered.
    assert_eq!(
        ops::load_mark(&mut client, &keys, 0, T).await.unwrap(),
        None
    );
    ops::store_mark(&mut client, &keys, 0, a.id, 1_000, T)
        .await
        .unwrap();
    ops::store_mark(&mut client, &keys, 0, a.id, 2_000, T)
        .await
        .unwrap();
    ops::store_mark(&mut client, &keys, 0, a.id, 1_500, T)
        .await
        .unwrap();
    assert_eq!(
        ops::load_mark(&mut client, &keys, 0, T).await.unwrap(),
        Some(2_000)
    );

    // Another lease cannot move identity 0's mark.
    let err = ops::store_mark(&mut client, &keys, 0, b.id, 9_000, T)
        .await
        .unwrap_err();
    assert!(matches!(err, EtcdError::NotHolder { .. }), "{err}");
    assert!(ops::holds(&mut client, &keys, 0, a.id, T).await.unwrap());
    assert!(!ops::holds(&mut client, &keys, 0, b.id, T).await.unwrap());

    // Revoking frees the identity at once, and the mark stays for the next holder.
    ops::revoke(&mut client, a.id, T).await.unwrap();
    let err = ops::store_mark(&mut client, &keys, 0, a.id, 9_000, T)
        .await
        .unwrap_err();
    assert!(matches!(err, EtcdError::NotHolder { .. }), "{err}");
    let d = ops::grant(&mut client, Duration::from_secs(30), T)
        .await
        .unwrap();
    assert_eq!(
        ops::claim(&mut client, &keys, d.id, "d", None, &Default::default(), T)
            .await
            .unwrap(),
        Some(0)
    );
    assert_eq!(
        ops::load_mark(&mut client, &keys, 0, T).await.unwrap(),
        Some(2_000)
    );

    // Another prefix is another cluster.
    let other = Keys::new("/other/");
    assert_eq!(
        ops::claim(&mut client, &other, d.id, "d", None, &Default::default(), T)
            .await
            .unwrap(),
        Some(0)
    );
}

#[tokio::test]
async fn all_identities_taken_is_none() {
    let Some(etcd) = support::etcd::EtcdServer::start() else {
        return;
    };
    let keys = Keys::new("/full");
    let mut client = ops::connect(&etcd.url(), T).await.unwrap();
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
        ops::claim(
            &mut client,
            &keys,
            last.id,
            "x",
            None,
            &Default::default(),
            T
        )
        .await
        .unwrap(),
        Some(1023)
    );
    let none = ops::grant(&mut client, Duration::from_secs(30), T)
        .await
        .unwrap();
    assert_eq!(
        ops::claim(
            &mut client,
            &keys,
            none.id,
            "y",
            None,
            &Default::default(),
            T
        )
        .await
        .unwrap(),
        None
    );
}

#[test]
fn bridge_serves_blocking_callers_inside_and_outside_a_runtime() {
    let Some(etcd) = support::etcd::EtcdServer::start() else {
        return;
    };
    let keys = Keys::new("/bridge");
    let endpoints = vec![etcd.url()];
    let rt = tokio::runtime::Runtime::new().unwrap();
    let lease = rt.block_on(async {
        let mut client = ops::connect(&endpoints[0], T).await.unwrap();
        let lease = ops::grant(&mut client, Duration::from_secs(30), T)
            .await
            .unwrap();
        assert_eq!(
            ops::claim(
                &mut client,
                &keys,
                lease.id,
                "z",
                None,
                &Default::default(),
                T
            )
            .await
            .unwrap(),
            Some(0)
        );
        lease
    });
    let bridge = Bridge::start(endpoints, keys, T).unwrap();
    assert_eq!(bridge.load(0).unwrap(), None);
    bridge.store(0, lease.id, 42).unwrap();
    // From a tokio worker thread, where block_on would panic.
    let inside = bridge.clone();
    let loaded = rt.block_on(async move {
        tokio::spawn(async move {
            inside.store(0, lease.id, 43).unwrap();
            inside.load(0).unwrap()
        })
        .await
        .unwrap()
    });
    assert_eq!(loaded, Some(43));
    assert!(matches!(
        bridge.store(0, lease.id + 1, 50),
        Err(EtcdError::NotHolder { .. })
    ));
}

#[test]
fn bridge_calls_are_bounded_when_etcd_is_frozen() {
    let Some(mut etcd) = support::etcd::EtcdServer::start() else {
        return;
    };
    let bridge = Bridge::start(
        vec![etcd.url()],
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
