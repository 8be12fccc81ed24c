//! Marks: raised only by the holder and never lowered, read and written as
//! the format says (a hand-written one too), from threads of every kind,
//! bounded when etcd freezes.

use std::sync::Arc;
use std::time::Duration;

use snowmint_lease::{LeaseError, LeaseStore, MarkIo};

use super::{M, T, client, hold_with_mark_thread};
use crate::keys::Keys;

/// Writes `value` by hand as identity 0's mark under `prefix` (as an
/// operator would: `etcdctl put <prefix>/reserved/0/0 <value>`), then holds
/// identity 0 with a mark thread: the lease and the thread's mark I/O.
async fn hand_written_mark(url: &str, prefix: &str, value: &str) -> (i64, Arc<dyn MarkIo>) {
    let key = Keys::new(prefix).reserved(0);
    client(url).await.put(key, value, None).await.unwrap();
    hold_with_mark_thread(url, prefix, T).await
}

/// The coordinator's mark I/O from threads of every kind, bounded when etcd
/// freezes.
#[test]
fn the_mark_thread_serves_blocking_callers_and_is_bounded_when_etcd_is_frozen() {
    let Some(mut server) = snowmint_testkit::etcd::EtcdServer::start() else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (lease, io) = rt.block_on(hold_with_mark_thread(
        &server.url(),
        "/bridge",
        Duration::from_millis(500),
    ));
    assert_eq!(io.load(0).unwrap(), None);
    io.store(0, lease, M + 42).unwrap();
    // From a tokio worker thread, where block_on would panic.
    let inside = Arc::clone(&io);
    let loaded = rt.block_on(async move {
        tokio::spawn(async move {
            inside.store(0, lease, M + 43).unwrap();
            inside.load(0).unwrap()
        })
        .await
        .unwrap()
    });
    assert_eq!(loaded, Some(M + 43));
    assert!(matches!(
        io.store(0, lease + 1, M + 50),
        Err(LeaseError::NotHolder { .. })
    ));
    server.freeze();
    let started = std::time::Instant::now();
    let err = io.load(7).unwrap_err();
    assert!(
        matches!(err, LeaseError::Timeout { .. } | LeaseError::Request { .. }),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(3), "unbounded");
    server.thaw();
    // It recovers: keep asking (bounded) until etcd answers again.
    let mut answer = io.load(7);
    for _ in 0..40 {
        if answer.is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        answer = io.load(7);
    }
    assert_eq!(answer.unwrap(), None);
}

#[test]
fn a_hand_written_unpadded_mark_is_raised_and_never_issued_under() {
    let Some(server) = snowmint_testkit::etcd::EtcdServer::start() else {
        return;
    };
    let keys = Keys::new("/unpadded");
    let rt = tokio::runtime::Runtime::new().unwrap();
    // As an operator would: `etcdctl put /unpadded/reserved/0/0 1700000000000`.
    let (lease, io) = rt.block_on(hand_written_mark(
        &server.url(),
        "/unpadded",
        &M.to_string(),
    ));
    let store = LeaseStore::new(Arc::clone(&io), 0, lease);
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
    let raised = io.load(0).unwrap().unwrap();
    assert!(
        raised >= last.unwrap().timestamp_ms(),
        "mark {raised} below the last ID"
    );
    // Written padded: instances of earlier versions compare bytes.
    let stored = rt.block_on(async {
        client(&server.url())
            .await
            .get(keys.reserved(0), None)
            .await
            .unwrap()
            .kvs()[0]
            .value()
            .to_vec()
    });
    assert_eq!(stored, format!("{raised:020}").into_bytes());
}

#[test]
fn a_malformed_mark_is_refused_naming_the_key_and_the_value() {
    let Some(server) = snowmint_testkit::etcd::EtcdServer::start() else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (lease, io) = rt.block_on(hand_written_mark(&server.url(), "/malformed", "1700000000"));
    for err in [io.load(0).unwrap_err(), io.store(0, lease, M).unwrap_err()] {
        assert!(matches!(err, LeaseError::DamagedMark { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "the reservation mark at /malformed/reserved/0/0 is damaged: \"1700000000\" is not \
             Unix milliseconds (decimal digits, 1288834974657..=3487858230208); an operator \
             must fix it (see docs/distributed.md) before this identity is used again"
        );
    }
}
