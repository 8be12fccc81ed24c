//! The etcd requests against a real etcd (skipped with a reason when the
//! `etcd` binary is missing, unless SNOWMINT_REQUIRE_SERVICES=1).

use std::collections::HashSet;
use std::time::Duration;

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
    // A lower mark with the current revision (the one the last write
    // returned, which the transaction's compare accepts) writes nothing.
    let now = ops::store_mark(&mut client, &keys, 0, a.id, M + 1_500, Some(seen), T)
        .await
        .unwrap();
    assert_eq!(now, seen);
    assert_eq!(
        ops::load_mark(&mut client, &keys, 0, T).await.unwrap(),
        seen,
        "a lower mark written under the current revision"
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
    assert!(
        ops::holds(&mut client, &keys, 0, a.id, T)
            .await
            .unwrap()
            .holds
    );
    assert!(
        !ops::holds(&mut client, &keys, 0, b.id, T)
            .await
            .unwrap()
            .holds
    );

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

/// A member's view, from its Status call: its member ID, the leader it
/// knows, its raft term and its version; `None` when it does not answer in `t`.
async fn member_status(url: &str, t: Duration) -> Option<(u64, u64, u64, String)> {
    let mut client = ops::connect(url, None, t).await.ok()?;
    let status = ops::timed("status", t, client.status()).await.ok()?;
    Some((
        status.header()?.member_id(),
        status.leader(),
        status.raft_term(),
        status.version().to_owned(),
    ))
}

/// Waits until one of `among` says it leads, at a term above `above`:
/// (its index, its member ID, the term).
async fn wait_leader(urls: &[String], among: &[usize], above: u64) -> (usize, u64, u64) {
    let start = std::time::Instant::now();
    loop {
        for &m in among {
            if let Some((id, leader, term, _)) = member_status(&urls[m], T).await
                && id == leader
                && term > above
            {
                return (m, id, term);
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no leader among {among:?} after 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// etcd issue 15247 with real members (an etcd before 3.4.31 or 3.5.13,
/// such as Debian's 3.4.23): a leader paused past an election and resumed
/// while the others cannot tell it so (their packets to it are dropped: this
/// needs root and iptables) answers keep-alives from its stale lease table,
/// at its old term, while the new leader renews nothing. With
/// the term check that answer does not move the fence; without it, it
/// moves the fence past the lease's real end, and another instance claims
/// the identity while the fence still says the old holder may issue.
#[test]
fn a_deposed_leaders_keep_alive_moves_the_fence_only_without_the_term_check() {
    use std::time::Instant;

    use crate::Fence;
    use crate::config::fence_margin;
    use crate::ops::Conn;
    use crate::renewal::{self, Verdict};
    use crate::status::ServerVersion;

    if !snowmint_testkit::etcd::EtcdServer::available() {
        return;
    }
    // Each reason not to run is a skip, and a failure under
    // SNOWMINT_REQUIRE_SERVICES=1: a pass must mean the issue was shown.
    if not_root() {
        snowmint_testkit::skip::<()>("the one-way partition needs root (iptables)");
        return;
    }
    let mut cluster = snowmint_testkit::etcd::EtcdCluster::start(3).unwrap();
    let urls = cluster.urls();
    let rt = tokio::runtime::Runtime::new().unwrap();
    // Long enough that the steps below fit in it on a slow machine.
    let ttl = Duration::from_secs(20);
    let keys = Keys::new("/stale");
    let (d, _, term_d) = rt.block_on(wait_leader(&urls, &[0, 1, 2], 0));
    let version = rt.block_on(member_status(&urls[d], T)).unwrap().3;
    if ServerVersion::new(&urls[d], &version).has_issue_15247() != Some(true) {
        snowmint_testkit::skip::<()>(&format!(
            "etcd {version} has etcd issue 15247 fixed; nothing to reproduce \
             (this test needs an etcd before 3.4.31 or 3.5.13)"
        ));
        return;
    }
    let others: Vec<usize> = (0..3).filter(|&m| m != d).collect();
    let only = |m: usize| Conn::new(std::slice::from_ref(&urls[m]), None, T);

    // Two leases through the leader, each holding an identity: 0's renewals
    // are judged with the check, 1's without. Each renewal counts now.
    let paused_at = Instant::now();
    let held: Vec<(i64, Fence)> = rt.block_on(async {
        let mut conn = only(d);
        let mut held = Vec::new();
        for n in 0..2u16 {
            let client = conn.client().await.unwrap();
            let granted = ops::grant(client, ttl, T).await.unwrap();
            let wanted = Wanted {
                pool: Pool::ALL,
                prefer: Some(n),
                avoid: &HashSet::new(),
            };
            let claimed = ops::claim(client, &keys, granted.id, "t", wanted, None, T)
                .await
                .unwrap();
            assert_eq!(claimed.identity, Some(n));
            let answer = renewal::keep_alive(&mut conn, &mut None, granted.id, T)
                .await
                .unwrap();
            let read = renewal::confirm(&mut conn, &keys, n, granted.id, T)
                .await
                .unwrap();
            let Verdict::Extend(deadline) = renewal::judge(&answer, &read, true) else {
                panic!("the leader's renewal counts: {answer:?} {read:?}");
            };
            held.push((granted.id, Fence::until(deadline)));
        }
        held
    });

    // A keep-alive stream to the leader on a connection without pings or
    // timeouts of its own, so it lives through the pause; the renewals
    // sent while the leader is stopped wait in its socket.
    let (mut streams, plain) = rt.block_on(async {
        let mut plain = etcd_client::Client::connect([urls[d].clone()], None)
            .await
            .unwrap();
        let mut streams = Vec::new();
        for (lease, _) in &held {
            streams.push(plain.lease_keep_alive(*lease).await.unwrap());
        }
        (streams, plain)
    });

    // The leader stops; from now on nothing the others send reaches it
    // (packets to its peer listener and to its connections to them are
    // dropped: it hears nothing of the coming election). It stays stopped
    // for longer than an election, and the others elect one of them.
    cluster.pause(d).unwrap();
    let partition = match cluster.cut_off(d) {
        Ok(partition) => partition,
        Err(e) => return snowmint_testkit::skip(&e).unwrap_or(()),
    };
    assert!(
        partition.addrs().len() >= 3,
        "the leader's peer listener and its connections to the others: {partition:?}"
    );
    let (n_index, new_leader, term_n) = rt.block_on(wait_leader(&urls, &others, term_d));
    // Wait until a renewal sent now, counted from its sending, would end
    // after the new leader lets the leases expire: that is at most its
    // election plus etcd's extension (its election timeout, 1 s by default)
    // plus the TTL; the fence ends the margin before sent + TTL.
    let wait = fence_margin(ttl) + Duration::from_secs(1) + Duration::from_secs(2);
    std::thread::sleep(wait);
    assert!(
        paused_at.elapsed() + Duration::from_secs(5) < ttl,
        "too slow: the deposed leader's own table would have expired the leases"
    );

    // Renewals sent now reach the deposed leader as it resumes: it still
    // takes itself for the leader (it has heard of no election), renews in
    // its own table, and answers at its old term.
    let sent = Instant::now();
    rt.block_on(async {
        for (keeper, _) in &mut streams {
            keeper.keep_alive().await.unwrap();
        }
    });
    cluster.resume(d).unwrap();
    let stale: Vec<renewal::KeepAlive> = rt.block_on(async {
        let mut answers = Vec::new();
        for (_, responses) in &mut streams {
            let response = tokio::time::timeout(T, responses.message())
                .await
                .expect("the deposed leader answers in time")
                .unwrap()
                .expect("an answer");
            answers.push(renewal::KeepAlive::answered(sent, &response));
        }
        answers
    });
    drop((streams, plain));
    // The partition heals: it hears of the new term.
    drop(partition);
    for answer in &stale {
        assert_eq!(
            answer.term,
            Some(term_d),
            "answered at the old term: {answer:?}"
        );
        assert_eq!(answer.ttl, ttl);
    }
    // The new leader never saw those renewals (had the deposed leader
    // stepped down first, it would have forwarded them there).
    rt.block_on(async {
        let mut client = only(n_index);
        let client = client.client().await.unwrap();
        for (lease, _) in &held {
            let left = client.lease_time_to_live(*lease, None).await.unwrap().ttl();
            let left = Duration::from_secs(left.max(0) as u64);
            // Renewed there, it would have about the whole TTL left; not
            // renewed, at most TTL + 1 s - `wait` since the election.
            assert!(
                left + Duration::from_secs(3) < ttl,
                "the new leader renewed lease {lease:x} ({left:?} left): the deposed leader \
                 stepped down before it answered, nothing was reproduced"
            );
        }
    });

    // It hears of the new term and follows; a linearizable read now (after
    // the answers arrived) goes through the new leader, at the new term.
    let reads = rt.block_on(async {
        let start = Instant::now();
        while member_status(&urls[d], T).await.map(|s| s.1) != Some(new_leader) {
            assert!(start.elapsed() < Duration::from_secs(30), "never followed");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut conn = only(d);
        let mut reads = Vec::new();
        for (n, (lease, _)) in held.iter().enumerate() {
            let mut read = renewal::confirm(&mut conn, &keys, n as u16, *lease, T).await;
            for _ in 0..20 {
                if read.is_ok() {
                    break;
                }
                conn.failed();
                tokio::time::sleep(Duration::from_millis(100)).await;
                read = renewal::confirm(&mut conn, &keys, n as u16, *lease, T).await;
            }
            reads.push(read.unwrap());
        }
        reads
    });
    let (fence_checked, fence_unchecked) = (&held[0].1, &held[1].1);
    match renewal::judge(&stale[0], &reads[0], true) {
        Verdict::Unconfirmed {
            renewed: Some(renewed),
            read: Some(read),
        } => assert!(renewed == term_d && read >= term_n, "{renewed} {read}"),
        other => panic!("with the check, the stale answer must not count: {other:?}"),
    }
    let Verdict::Extend(deadline) = renewal::judge(&stale[1], &reads[1], false) else {
        panic!("without the check, the stale answer counts");
    };
    fence_unchecked.extend(deadline);
    assert!(fence_unchecked.remaining() > fence_checked.remaining());

    // Nobody renews any more. The new leader never saw those renewals: it
    // lets both leases expire, which deletes the identity keys, and another
    // instance claims identity 1 while its old holder's fence (extended
    // without the check) is still open. Identity 0's fence closed before.
    rt.block_on(async {
        let mut client = etcd_client::Client::connect(urls.clone(), None)
            .await
            .unwrap();
        let start = Instant::now();
        let mut gone = [false, false];
        while gone != [true, true] {
            assert!(start.elapsed() < ttl * 2, "the leases never expired");
            for n in 0..2u16 {
                if gone[usize::from(n)] {
                    continue;
                }
                let Ok(kvs) = client.get(keys.identity(n), None).await else {
                    continue;
                };
                if !kvs.kvs().is_empty() {
                    continue;
                }
                gone[usize::from(n)] = true;
                if n == 0 {
                    assert!(
                        !fence_checked.is_open(),
                        "with the check, the fence closed before the lease expired"
                    );
                } else {
                    let next = ops::grant(&mut client, ttl, T).await.unwrap();
                    let wanted = Wanted {
                        pool: Pool::ALL,
                        prefer: Some(1),
                        avoid: &HashSet::new(),
                    };
                    let claimed = ops::claim(&mut client, &keys, next.id, "u", wanted, None, T)
                        .await
                        .unwrap();
                    assert_eq!(claimed.identity, Some(1));
                    assert!(
                        fence_unchecked.is_open(),
                        "without the check, the old holder's fence is open while another \
                         holds the identity"
                    );
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
}

fn not_root() -> bool {
    // /proc/self/status: "Uid:\treal\teffective..."
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|e| e != "0"))
        })
        .unwrap_or(true)
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
