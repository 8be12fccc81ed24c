//! etcd issue 15247 reproduced with real members: what the term check of a
//! renewal is for.

use std::sync::Arc;
use std::time::Duration;

use snowmint_lease::{Claimed, Coordinator, LeaseClock as _, SystemLeaseClock, Verdict, judge};

use super::{T, client, etcd, hold, who};
use crate::keys::Keys;

/// A member's view, from its Status call: its member ID, the leader it
/// knows, its raft term and its version; `None` when it does not answer in `t`.
async fn member_status(url: &str, t: Duration) -> Option<(u64, u64, u64, String)> {
    let mut client = crate::ops::connect(url, None, t).await.ok()?;
    let status = crate::ops::timed("status", t, client.status()).await.ok()?;
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
///
/// Under SNOWMINT_REQUIRE_SERVICES=1 (scripts/test) a machine that cannot
/// reproduce it (not root, or an etcd with the issue fixed) fails the test.
#[test]
fn a_deposed_leaders_keep_alive_moves_the_fence_only_without_the_term_check() {
    use std::time::Instant;

    use snowmint_lease::{Fence, KeepAlive, ServerVersion, fence_margin};

    if !snowmint_testkit::etcd::EtcdServer::available() {
        return;
    }
    if not_root() {
        return snowmint_testkit::skip("the one-way partition needs root (iptables)").unwrap_or(());
    }
    let mut cluster = snowmint_testkit::etcd::EtcdCluster::start(3).unwrap();
    let urls = cluster.urls();
    let rt = tokio::runtime::Runtime::new().unwrap();
    // Long enough that the steps below fit in it on a slow machine.
    let ttl = Duration::from_secs(20);
    let clock = Arc::new(SystemLeaseClock);
    let (d, _, term_d) = rt.block_on(wait_leader(&urls, &[0, 1, 2], 0));
    let version = rt.block_on(member_status(&urls[d], T)).unwrap().3;
    if ServerVersion::new(&urls[d], &version).has_issue_15247() != Some(true) {
        return snowmint_testkit::skip(&format!(
            "etcd {version} has etcd issue 15247 fixed; nothing to reproduce"
        ))
        .unwrap_or(());
    }
    let others: Vec<usize> = (0..3).filter(|&m| m != d).collect();
    let only = |m: usize| etcd(&urls[m], "/stale");

    // Two leases through the leader, each holding an identity: 0's renewals
    // are judged with the check, 1's without. Each renewal counts now.
    let paused_at = Instant::now();
    let held: Vec<(i64, Fence)> = rt.block_on(async {
        let mut c = only(d);
        let mut held = Vec::new();
        for n in 0..2u16 {
            let lease = c.grant(ttl, T).await.unwrap().lease;
            let claimed = c.claim(lease, n, &who(1), T).await.unwrap();
            assert!(matches!(claimed, Claimed::Won(_)), "{claimed:?}");
            let sent = clock.now();
            let answer = c.keep_alive(lease, T).await.unwrap();
            let answer = KeepAlive {
                sent,
                ttl: answer.ttl,
                term: answer.term,
            };
            let read = c.confirm(n, lease, T).await.unwrap();
            let Verdict::Extend(deadline) = judge(&answer, &read, true) else {
                panic!("the leader's renewal counts: {answer:?} {read:?}");
            };
            held.push((lease, Fence::until(clock.clone(), deadline)));
        }
        held
    });

    // A keep-alive stream to the leader on a connection without pings or
    // timeouts of its own, so it lives through the pause; the renewals
    // sent while the leader is stopped wait in its socket.
    let (mut streams, plain) = rt.block_on(async {
        let mut plain = client(&urls[d]).await;
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
    let sent = clock.now();
    rt.block_on(async {
        for (keeper, _) in &mut streams {
            keeper.keep_alive().await.unwrap();
        }
    });
    cluster.resume(d).unwrap();
    let stale: Vec<KeepAlive> = rt.block_on(async {
        let mut answers = Vec::new();
        for (_, responses) in &mut streams {
            let response = tokio::time::timeout(T, responses.message())
                .await
                .expect("the deposed leader answers in time")
                .unwrap_or_else(|e| {
                    panic!("the deposed leader answered with an error, not its stale table: {e:?}")
                })
                .expect("an answer");
            answers.push(KeepAlive {
                sent,
                ttl: Duration::from_secs(response.ttl().max(0) as u64),
                term: response.header().map(|h| h.raft_term()),
            });
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
        let mut client = client(&urls[n_index]).await;
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
        let mut c = only(d);
        let mut reads = Vec::new();
        for (n, (lease, _)) in held.iter().enumerate() {
            let mut read = c.confirm(n as u16, *lease, T).await;
            for _ in 0..20 {
                if read.is_ok() {
                    break;
                }
                c.failed();
                tokio::time::sleep(Duration::from_millis(100)).await;
                read = c.confirm(n as u16, *lease, T).await;
            }
            reads.push(read.unwrap());
        }
        reads
    });
    let (fence_checked, fence_unchecked) = (&held[0].1, &held[1].1);
    match judge(&stale[0], &reads[0], true) {
        Verdict::Unconfirmed {
            renewed: Some(renewed),
            read: Some(read),
        } => assert!(renewed == term_d && read >= term_n, "{renewed} {read}"),
        other => panic!("with the check, the stale answer must not count: {other:?}"),
    }
    let Verdict::Extend(deadline) = judge(&stale[1], &reads[1], false) else {
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
        let mut c = etcd(&urls[n_index], "/stale");
        let keys = Keys::new("/stale");
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
                    let (_, claimed) = hold(&mut c, 1, 2).await;
                    assert!(matches!(claimed, Claimed::Won(_)), "{claimed:?}");
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
