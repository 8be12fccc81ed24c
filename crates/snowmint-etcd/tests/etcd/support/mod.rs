//! What the tests share: configurations, etcd keys and waits (here), a
//! minting instance ([`instance`]) and the log of what it issued ([`log`]).

pub mod instance;
pub mod log;

use std::time::{Duration, Instant};

use snowmint_etcd::EtcdConfig;
use snowmint_testkit::etcd::EtcdServer;

/// One endpoint, `prefix`, a lease of `ttl_secs`.
pub fn options(endpoint: &str, prefix: &str, ttl_secs: u64) -> EtcdConfig {
    EtcdConfig::new([endpoint])
        .prefix(prefix)
        .lease_ttl(Duration::from_secs(ttl_secs))
}

/// [`options`] scoped to datacenter 0's 32 workers, so that a [`Filler`]
/// can leave exactly the identities a test means to be free.
pub fn dc0(endpoint: &str, prefix: &str, ttl_secs: u64) -> EtcdConfig {
    options(endpoint, prefix, ttl_secs).datacenter(0)
}

/// A client of the etcd at `endpoint`, for what a test writes or reads
/// there itself.
pub async fn client(endpoint: &str) -> etcd_client::Client {
    etcd_client::Client::connect([endpoint], None)
        .await
        .unwrap()
}

/// Puts "someone else" at `key` under a lease of its own (60 s), as another
/// holder taking an identity over would.
pub async fn intrude(client: &mut etcd_client::Client, key: &str) {
    let intruder = client.lease_grant(60, None).await.unwrap().id();
    client
        .put(
            key,
            "someone else",
            Some(etcd_client::PutOptions::new().with_lease(intruder)),
        )
        .await
        .unwrap();
}

/// The key of `identity` under `prefix`.
pub fn key(prefix: &str, kind: &str, identity: (u8, u8)) -> String {
    format!("{prefix}/{kind}/{}/{}", identity.0, identity.1)
}

/// Holds, under a lease of its own, every worker of datacenter 0 that was
/// free when it was made (claims pick among free identities at random, so a
/// test that needs "the one free identity" makes it so).
pub struct Filler {
    client: etcd_client::Client,
    prefix: String,
    held: Vec<u8>,
}

impl Filler {
    pub async fn take_free(endpoint: &str, prefix: &str) -> Filler {
        let mut client = client(endpoint).await;
        let lease = client.lease_grant(600, None).await.unwrap().id();
        let mut held = Vec::new();
        for worker in 0..32u8 {
            let k = key(prefix, "identities", (0, worker));
            let txn = etcd_client::Txn::new()
                .when([etcd_client::Compare::create_revision(
                    k.as_str(),
                    etcd_client::CompareOp::Equal,
                    0,
                )])
                .and_then([etcd_client::TxnOp::put(
                    k.as_str(),
                    "filler",
                    Some(etcd_client::PutOptions::new().with_lease(lease)),
                )]);
            if client.txn(txn).await.unwrap().succeeded() {
                held.push(worker);
            }
        }
        Filler {
            client,
            prefix: prefix.to_owned(),
            held,
        }
    }

    /// Frees one of the workers it holds: the only free one then.
    pub async fn free_one(&mut self) -> (u8, u8) {
        let worker = *self.held.last().expect("the filler holds one");
        self.free(worker).await
    }

    /// Frees `worker` of datacenter 0 (held by the filler or not): the only
    /// free one then.
    pub async fn free(&mut self, worker: u8) -> (u8, u8) {
        self.held.retain(|&w| w != worker);
        let k = key(&self.prefix, "identities", (0, worker));
        self.client.delete(k, None).await.unwrap();
        (0, worker)
    }
}

/// Waits (bounded by `limit`, checked every 20 ms) until `done`.
pub async fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "{what}: not after {limit:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether `key` exists in the etcd at `endpoint`.
pub async fn key_exists(endpoint: &str, key: &str) -> bool {
    let mut client = client(endpoint).await;
    !client.get(key, None).await.unwrap().kvs().is_empty()
}

/// The "reserved until" mark of `identity` under `prefix`, if any.
pub async fn mark_of(endpoint: &str, prefix: &str, identity: (u8, u8)) -> Option<u64> {
    let mut client = client(endpoint).await;
    let got = client
        .get(key(prefix, "reserved", identity), None)
        .await
        .unwrap();
    got.kvs()
        .first()
        .map(|kv| std::str::from_utf8(kv.value()).unwrap().parse().unwrap())
}

/// Waits (bounded by `limit`) until `key` is gone: its lease expired or
/// was revoked.
pub async fn wait_key_gone(endpoint: &str, key: &str, limit: Duration) {
    let start = Instant::now();
    while key_exists(endpoint, key).await {
        assert!(start.elapsed() < limit, "{key} still there after {limit:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Each etcd of a test listens on a loopback address of its own, so tests
/// running at once in this binary never reach each other's: what every
/// test here relies on.
#[test]
fn each_etcd_owns_its_own_address() {
    let (Some(a), Some(b)) = (EtcdServer::start(), EtcdServer::start()) else {
        return;
    };
    assert_ne!(a.addr().ip(), b.addr().ip());
    snowmint_testkit::etcd::listener_owned_by(a.addr(), a.pid()).unwrap();
    // The check can fail: b's socket is not a's, nor is it this process's.
    let err = snowmint_testkit::etcd::listener_owned_by(b.addr(), a.pid()).unwrap_err();
    assert!(err.contains("another process"), "{err}");
    assert!(snowmint_testkit::etcd::listener_owned_by(b.addr(), std::process::id()).is_err());
    let nobody = snowmint_testkit::etcd::unused_addr();
    assert!(snowmint_testkit::etcd::listener_owned_by(nobody, b.pid()).is_err());
}
