//! The etcd coordinator against a real etcd (skipped with a reason when the
//! `etcd` binary is missing, unless SNOWMINT_REQUIRE_SERVICES=1), one module
//! per concern; the helpers they share are here.

mod claims;
mod marks;
mod stale_leader;

use std::sync::Arc;
use std::time::Duration;

use snowmint_lease::{Claimant, Claimed, Coordinator, MarkIo, mark_thread};

use crate::coordinator::EtcdCoordinator;
use crate::keys::Keys;

const T: Duration = Duration::from_secs(3);

/// A mark in the format's range (2023-11-14).
const M: u64 = 1_700_000_000_000;

const TTL: Duration = Duration::from_secs(30);

/// The coordinator of one endpoint under `prefix`.
fn etcd(url: &str, prefix: &str) -> EtcdCoordinator {
    EtcdCoordinator::new(&[url.to_owned()], None, Keys::new(prefix), T)
}

/// A plain client of the etcd at `url`, for what a test writes or reads
/// there itself.
async fn client(url: &str) -> etcd_client::Client {
    etcd_client::Client::connect([url], None).await.unwrap()
}

fn who(instance: u64) -> Claimant<'static> {
    Claimant {
        holder: "test",
        instance,
        ttl: TTL,
    }
}

/// Grants a lease and claims identity `n` with it, as `instance`.
async fn hold(c: &mut EtcdCoordinator, n: u16, instance: u64) -> (i64, Claimed) {
    let lease = c.grant(TTL, T).await.unwrap().lease;
    let claimed = c.claim(lease, n, &who(instance), T).await.unwrap();
    (lease, claimed)
}

/// Holds identity 0 under `prefix` and starts a mark thread over the
/// coordinator, each request bounded by `timeout`: the lease and the
/// thread's mark I/O.
async fn hold_with_mark_thread(
    url: &str,
    prefix: &str,
    timeout: Duration,
) -> (i64, Arc<dyn MarkIo>) {
    let mut c = etcd(url, prefix);
    let (lease, _) = hold(&mut c, 0, 1).await;
    (lease, mark_thread(c.sibling(), timeout).unwrap())
}
