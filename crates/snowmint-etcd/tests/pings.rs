//! The etcd connections' HTTP/2 pings against a real etcd with its default
//! `--grpc-keepalive-min-time` (5 s): a holder whose lease is renewed only
//! every 16 s (TTL 60 s) keeps its connections through a quiet spell. Pings
//! sooner than 5 s after the last, or on a connection with no stream open,
//! are strikes to etcd's server (gRPC's keepalive enforcement); past two
//! strikes since it last sent data it answers GOAWAY `too_many_pings` and
//! closes the connection (and the client opens another).
//!
//! Skipped with a printed reason when the `etcd` binary is missing, unless
//! SNOWMINT_REQUIRE_SERVICES=1.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use snowmint_etcd::{EtcdConfig, LeasedGenerator};
use snowmint_testkit::etcd::EtcdServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_holder_is_not_sent_away_for_pinging_too_often() {
    let Some(etcd) = EtcdServer::start() else {
        return;
    };
    let config = EtcdConfig::new([etcd.url()])
        .prefix("/pings")
        .lease_ttl(Duration::from_secs(60));
    let leased = tokio::time::timeout(Duration::from_secs(20), LeasedGenerator::start(config))
        .await
        .expect("an identity within 20 s")
        .expect("starts");
    leased.next_id().expect("mints");
    let before = leased.metrics();
    let port = etcd
        .url()
        .rsplit_once(':')
        .and_then(|(_, port)| port.parse().ok())
        .expect("the URL ends in a port");
    let connections = connections_to(port);
    assert!(!connections.is_empty(), "no connection to etcd at {port}");
    // Quiet for 24 s: a renewal (every 16 s), and seven pings between two
    // renewals at the old rate of one per 2 s; nothing else on the lease
    // connection.
    let quiet = Instant::now();
    while quiet.elapsed() < Duration::from_secs(24) {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let m = leased.metrics();
        assert_eq!(
            (m.renewal_failures, m.unconfirmed_renewals, m.fenced),
            (
                before.renewal_failures,
                before.unconfirmed_renewals,
                before.fenced
            ),
            "a renewal failed in a quiet spell after {:?}: {:?}",
            quiet.elapsed(),
            m.last_error
        );
    }
    let after = leased.metrics();
    assert!(
        after.renewals > before.renewals,
        "not renewed in 24 s, though due every 16 s"
    );
    assert_eq!(
        connections_to(port),
        connections,
        "the connections to etcd (by local port) changed in a quiet spell: \
         etcd sent one away (GOAWAY too_many_pings)"
    );
    assert!(leased.ready().is_ok(), "{:?}", leased.ready());
    leased.next_id().expect("mints after the quiet spell");
    leased.shutdown().await;
}

/// The local ports of the established TCP connections to `port` on this
/// machine's loopback (`/proc/net/tcp`: every process's; only this test
/// talks to its etcd).
fn connections_to(port: u16) -> BTreeSet<u16> {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local = fields.get(1)?.rsplit_once(':')?.1;
            let remote = fields.get(2)?.rsplit_once(':')?.1;
            let established = *fields.get(3)? == "01";
            (established && u16::from_str_radix(remote, 16).ok()? == port)
                .then(|| u16::from_str_radix(local, 16).ok())
                .flatten()
        })
        .collect()
}
