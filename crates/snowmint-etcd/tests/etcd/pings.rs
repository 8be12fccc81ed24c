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
use std::net::{Ipv4Addr, SocketAddr};
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
    let addr = etcd.addr();
    let connections = connections_to(addr);
    assert!(!connections.is_empty(), "no connection to etcd at {addr}");
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
        connections_to(addr),
        connections,
        "the connections to etcd (by local port) changed in a quiet spell: \
         etcd sent one away (GOAWAY too_many_pings)"
    );
    assert!(leased.ready().is_ok(), "{:?}", leased.ready());
    leased.next_id().expect("mints after the quiet spell");
    leased.shutdown().await;
}

/// The local ports of the established TCP connections to `addr` on this
/// machine (`/proc/net/tcp`: every process's; only this test talks to its
/// etcd, whose loopback address is its own, while the other tests of this
/// binary run beside it).
fn connections_to(addr: SocketAddr) -> BTreeSet<u16> {
    // "0100007F:0B1D": the address as the kernel's 32-bit word, in hex,
    // and the port.
    let parse = |field: &str| -> Option<SocketAddr> {
        let (ip, port) = field.split_once(':')?;
        let ip = Ipv4Addr::from(u32::from_str_radix(ip, 16).ok()?.to_ne_bytes());
        Some(SocketAddr::from((ip, u16::from_str_radix(port, 16).ok()?)))
    };
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local = parse(fields.get(1)?)?;
            let remote = parse(fields.get(2)?)?;
            let established = *fields.get(3)? == "01";
            (established && remote == addr).then_some(local.port())
        })
        .collect()
}
