//! The etcd requests of distributed mode, each bounded by a timeout.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, GetOptions, PutOptions, TlsOptions, Txn, TxnOp,
    TxnOpResponse,
};

use snowmint::{MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS};

use crate::claim::{self, Pool, Spread};
use crate::error::EtcdError;
use crate::keys::Keys;
use crate::renewal::Confirmation;

/// Runs one etcd request with a deadline.
pub(crate) async fn timed<T>(
    op: &'static str,
    after: Duration,
    request: impl Future<Output = Result<T, etcd_client::Error>>,
) -> Result<T, EtcdError> {
    match tokio::time::timeout(after, request).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(source)) => Err(EtcdError::Request { op, source }),
        Err(_) => Err(EtcdError::Timeout { op, after }),
    }
}

/// A client for one endpoint (over TLS with `tls`). The connection is made
/// lazily and re-made after failures by the client itself; HTTP/2 pings
/// notice a dead line within about two `request_timeout`s so the next
/// request dials again.
pub(crate) async fn connect(
    endpoint: &str,
    tls: Option<&TlsOptions>,
    request_timeout: Duration,
) -> Result<Client, EtcdError> {
    let mut options = ConnectOptions::new()
        .with_connect_timeout(request_timeout)
        .with_timeout(request_timeout)
        .with_keep_alive(request_timeout, request_timeout)
        .with_keep_alive_while_idle(true);
    if let Some(tls) = tls {
        options = options.with_tls(tls.clone());
    }
    timed(
        "connect",
        request_timeout,
        Client::connect([endpoint], Some(options)),
    )
    .await
}

/// A client pinned to one endpoint at a time that moves on to the next
/// after a failure, as etcd's own Go client does. (The client's balanced
/// channel over all endpoints keeps sending a share of the requests to a
/// dead member, so a claim of several steps, or a renewal, would fail at
/// random for as long as one member is down.)
pub(crate) struct Conn {
    endpoints: Arc<[String]>,
    /// Index of the endpoint in use; shared so a shutdown starts from the
    /// endpoint that last worked.
    index: Arc<AtomicUsize>,
    client: Option<Client>,
    /// TLS settings, the files read once at start.
    tls: Option<TlsOptions>,
    timeout: Duration,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("endpoint", &self.endpoint())
            .field("connected", &self.client.is_some())
            .finish()
    }
}

impl Conn {
    /// Endpoints as typed (`a, b` from a flag or the environment): this is
    /// the one place they are trimmed, for every connection made from them.
    pub(crate) fn new(endpoints: &[String], tls: Option<TlsOptions>, timeout: Duration) -> Conn {
        Conn {
            endpoints: endpoints.iter().map(|e| e.trim().to_owned()).collect(),
            index: Arc::new(AtomicUsize::new(0)),
            client: None,
            tls,
            timeout,
        }
    }

    /// Another handle on the same endpoint list and position, without a
    /// connection of its own yet.
    pub(crate) fn sibling(&self) -> Conn {
        Conn {
            endpoints: Arc::clone(&self.endpoints),
            index: Arc::clone(&self.index),
            client: None,
            tls: self.tls.clone(),
            timeout: self.timeout,
        }
    }

    /// One connection per endpoint, each pinned to it: for asking every
    /// member something (its version).
    pub(crate) fn each(&self) -> Vec<Conn> {
        self.endpoints
            .iter()
            .map(|e| Conn::new(std::slice::from_ref(e), self.tls.clone(), self.timeout))
            .collect()
    }

    /// The endpoint in use.
    pub(crate) fn endpoint(&self) -> &str {
        &self.endpoints[self.index.load(Ordering::Relaxed) % self.endpoints.len()]
    }

    /// The client for the endpoint in use, connected lazily.
    pub(crate) async fn client(&mut self) -> Result<&mut Client, EtcdError> {
        if self.client.is_none() {
            let endpoint = self.endpoint().to_owned();
            self.client = Some(connect(&endpoint, self.tls.as_ref(), self.timeout).await?);
        }
        Ok(self.client.as_mut().expect("connected above"))
    }

    /// A request failed: drop the connection and move to the next endpoint.
    pub(crate) fn failed(&mut self) {
        self.client = None;
        self.index.fetch_add(1, Ordering::Relaxed);
    }

    /// How many endpoints there are.
    pub(crate) fn len(&self) -> usize {
        self.endpoints.len()
    }
}

/// A granted lease.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Granted {
    pub id: i64,
    /// The TTL etcd granted.
    pub ttl: Duration,
    /// When the grant request was sent: the lease cannot expire on the
    /// server before `sent + ttl`.
    pub sent: Instant,
}

pub(crate) async fn grant(
    client: &mut Client,
    ttl: Duration,
    after: Duration,
) -> Result<Granted, EtcdError> {
    let sent = Instant::now();
    let response = timed(
        "lease grant",
        after,
        client.lease_grant(ttl.as_secs().max(1) as i64, None),
    )
    .await?;
    Ok(Granted {
        id: response.id(),
        ttl: Duration::from_secs(response.ttl().max(0) as u64),
        sent,
    })
}

pub(crate) async fn revoke(
    client: &mut Client,
    lease: i64,
    after: Duration,
) -> Result<(), EtcdError> {
    timed("lease revoke", after, client.lease_revoke(lease)).await?;
    Ok(())
}

/// What a claim may take: identities of `pool`, `prefer` first (a holder
/// that lost its lease gets its old identity back if it is still free),
/// never one in `avoid`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wanted<'a> {
    pub pool: Pool,
    pub prefer: Option<u16>,
    pub avoid: &'a HashSet<u16>,
}

/// How a claim went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Claimed {
    /// The identity number claimed; `None`: every one of the pool is held.
    pub identity: Option<u16>,
    /// Claim transactions sent (one per try).
    pub txns: u32,
}

/// The identities of `pool` held now (one keys-only range read).
pub(crate) async fn scan(
    client: &mut Client,
    keys: &Keys,
    pool: Pool,
    after: Duration,
) -> Result<HashSet<u16>, EtcdError> {
    Ok(timed(
        "identity scan",
        after,
        client.get(
            keys.identities_in(pool),
            Some(GetOptions::new().with_prefix().with_keys_only()),
        ),
    )
    .await?
    .kvs()
    .iter()
    .filter_map(|kv| keys.parse_identity(kv.key()))
    .filter(|&n| pool.contains(n))
    .collect())
}

/// Claims a free identity of `wanted` for `lease`, in the order of
/// [`claim::order`](crate::claim::order): one transaction creates the
/// first candidate's key (its previous identity, else the lowest free)
/// only if it is absent; a transaction that lost the race scans again (the
/// view it chose from is stale) and tries from a random start. `taken` is
/// a scan already made, if any (else one is made first).
pub(crate) async fn claim(
    client: &mut Client,
    keys: &Keys,
    lease: i64,
    holder: &str,
    wanted: Wanted<'_>,
    taken: Option<HashSet<u16>>,
    after: Duration,
) -> Result<Claimed, EtcdError> {
    let mut spread = Spread::new(lease);
    let mut taken = taken;
    let mut txns = 0;
    // Each lost race is another instance's win, so the pool fills within
    // its size in rounds; the bound only stops a pool that churns forever
    // (keys expiring as fast as they are taken), which then waits as full.
    for round in 0..=wanted.pool.len() {
        let seen = match taken.take() {
            Some(seen) => seen,
            None => scan(client, keys, wanted.pool, after).await?,
        };
        let order = claim::order(
            wanted.pool,
            &seen,
            wanted.avoid,
            wanted.prefer,
            (round > 0).then(|| spread.next_start()),
        );
        let Some(&n) = order.first() else {
            break;
        };
        let key = keys.identity(n);
        let txn = Txn::new()
            .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                key.as_str(),
                holder,
                Some(PutOptions::new().with_lease(lease)),
            )]);
        txns += 1;
        if timed("identity claim", after, client.txn(txn))
            .await?
            .succeeded()
        {
            return Ok(Claimed {
                identity: Some(n),
                txns,
            });
        }
        // Someone else created it since the scan: look again.
    }
    Ok(Claimed {
        identity: None,
        txns,
    })
}

/// Whether identity `n`'s key is still bound to `lease`, read
/// linearizably, with the raft term of the answer (see `renewal.rs`).
pub(crate) async fn holds(
    client: &mut Client,
    keys: &Keys,
    n: u16,
    lease: i64,
    after: Duration,
) -> Result<Confirmation, EtcdError> {
    let response = timed("identity check", after, client.get(keys.identity(n), None)).await?;
    Ok(Confirmation {
        holds: response.kvs().first().is_some_and(|kv| kv.lease() == lease),
        term: response.header().map(|h| h.raft_term()),
    })
}

/// Width of a written mark: 20 digits hold any u64. Marks are compared as
/// numbers, never as bytes, and read with or without the padding; they are
/// still written padded so instances of earlier versions, which compared
/// bytes, keep working beside this one during a rolling upgrade.
const MARK_WIDTH: usize = 20;

/// How many times a mark write re-reads and retries when the mark changed
/// under it before it gives up.
const MARK_TRIES: u32 = 5;

fn encode_mark(ms: u64) -> String {
    format!("{ms:0MARK_WIDTH$}")
}

/// A mark as stored: decimal Unix milliseconds within the format's range,
/// zero-padded or not. Anything else is [`EtcdError::DamagedMark`].
fn decode_mark(key: &str, value: &[u8]) -> Result<u64, EtcdError> {
    std::str::from_utf8(value)
        .ok()
        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|v| v.parse().ok())
        .filter(|ms| (MIN_TIMESTAMP_MS..=MAX_TIMESTAMP_MS).contains(ms))
        .ok_or_else(|| EtcdError::DamagedMark {
            key: key.to_owned(),
            value: String::from_utf8_lossy(&value[..value.len().min(40)]).into_owned(),
        })
}

/// A mark as last seen in etcd: its value and the revision that wrote it,
/// so the next write can be conditioned on nobody having moved it since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SeenMark {
    /// The mark, Unix ms; `None` when the key is absent.
    pub value: Option<u64>,
    /// The key's `mod_revision`; 0 when it is absent.
    pub mod_revision: i64,
}

impl SeenMark {
    /// No mark was ever written.
    pub const ABSENT: SeenMark = SeenMark {
        value: None,
        mod_revision: 0,
    };

    fn of(key: &str, kv: Option<&etcd_client::KeyValue>) -> Result<SeenMark, EtcdError> {
        match kv {
            Some(kv) => Ok(SeenMark {
                value: Some(decode_mark(key, kv.value())?),
                mod_revision: kv.mod_revision(),
            }),
            None => Ok(SeenMark::ABSENT),
        }
    }
}

/// Identity `n`'s "reserved until" mark, as it is now.
pub(crate) async fn load_mark(
    client: &mut Client,
    keys: &Keys,
    n: u16,
    after: Duration,
) -> Result<SeenMark, EtcdError> {
    let key = keys.reserved(n);
    let response = timed("reservation read", after, client.get(key.as_str(), None)).await?;
    SeenMark::of(&key, response.kvs().first())
}

/// Raises identity `n`'s mark to `until_ms`, only while its identity key is
/// bound to `lease` (a fenced instance cannot move the next holder's mark),
/// and never lowers it (a late, re-ordered write of a smaller mark is a
/// no-op). Returns once the mark is at least `until_ms` in etcd, with the
/// mark as it then is.
///
/// The comparison is numeric, in Rust: one transaction writes the mark if
/// the identity key is ours and the mark is still the one `seen` (its
/// `mod_revision`, or absent), and else reads both back. With an up-to-date
/// `seen` (the one this returned last time) that is one round trip; a stale
/// or missing one costs one more. A mark that changed under each of
/// [`MARK_TRIES`] writes is [`EtcdError::MarkContended`].
pub(crate) async fn store_mark(
    client: &mut Client,
    keys: &Keys,
    n: u16,
    lease: i64,
    until_ms: u64,
    seen: Option<SeenMark>,
    after: Duration,
) -> Result<SeenMark, EtcdError> {
    let identity = keys.identity(n);
    let reserved = keys.reserved(n);
    let ours = Compare::lease(identity.as_str(), CompareOp::Equal, lease);
    let read_back = [
        TxnOp::get(identity.as_str(), None),
        TxnOp::get(reserved.as_str(), None),
    ];
    let mut seen = seen.unwrap_or(SeenMark::ABSENT);
    for _ in 0..MARK_TRIES {
        let unchanged = if seen.mod_revision == 0 {
            Compare::create_revision(reserved.as_str(), CompareOp::Equal, 0)
        } else {
            Compare::mod_revision(reserved.as_str(), CompareOp::Equal, seen.mod_revision)
        };
        // Already high enough: the transaction only confirms that the key
        // is ours and the mark unchanged, in one snapshot.
        let raise = seen.value.is_none_or(|mark| mark < until_ms);
        let write = if raise {
            vec![TxnOp::put(reserved.as_str(), encode_mark(until_ms), None)]
        } else {
            Vec::new()
        };
        let txn = Txn::new()
            .when([ours.clone(), unchanged])
            .and_then(write)
            .or_else(read_back.clone());
        let response = timed("reservation write", after, client.txn(txn)).await?;
        if response.succeeded() {
            if !raise {
                return Ok(seen);
            }
            // A transaction's writes all carry the revision it created.
            return Ok(SeenMark {
                value: Some(until_ms),
                mod_revision: response.header().map_or(0, |h| h.revision()),
            });
        }
        let mut holder_lease = None;
        let mut current = SeenMark::ABSENT;
        for (i, op) in response.op_responses().into_iter().enumerate() {
            if let TxnOpResponse::Get(get) = op {
                match i {
                    0 => holder_lease = get.kvs().first().map(|kv| kv.lease()),
                    _ => current = SeenMark::of(&reserved, get.kvs().first())?,
                }
            }
        }
        if holder_lease != Some(lease) {
            return Err(EtcdError::NotHolder {
                key: identity,
                lease,
            });
        }
        // Both read in one snapshot: ours, and already high enough.
        if current.value.is_some_and(|mark| mark >= until_ms) {
            return Ok(current);
        }
        // Moved since `seen` (by a write of ours still in flight, or by
        // hand): try again from what is there now.
        seen = current;
    }
    Err(EtcdError::MarkContended {
        key: reserved,
        tries: MARK_TRIES,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_written_padded_and_read_as_numbers_padded_or_not() {
        let samples = [
            MIN_TIMESTAMP_MS,
            1_700_000_000_000,
            3_000_000_000_000,
            MAX_TIMESTAMP_MS,
        ];
        for a in samples {
            assert_eq!(encode_mark(a).len(), MARK_WIDTH);
            assert_eq!(decode_mark("k", encode_mark(a).as_bytes()).unwrap(), a);
            assert_eq!(decode_mark("k", a.to_string().as_bytes()).unwrap(), a);
        }
        // Hand-written, unpadded: a byte-wise compare would put it above
        // every padded mark; numerically it is in its place.
        let unpadded = decode_mark("k", b"1700000000000").unwrap();
        let padded = decode_mark("k", encode_mark(1_700_000_000_001).as_bytes()).unwrap();
        assert!(unpadded < padded);
        assert!(b"1700000000000".as_slice() > encode_mark(1_700_000_000_001).as_bytes());
    }

    #[test]
    fn damaged_marks_are_errors_naming_the_key_the_value_and_the_range() {
        for bad in [
            &b""[..],
            b"-1",
            b"+1700000000000",
            b" 1700000000000",
            b"1700000000000\n",
            b"12x",
            b"1.7e12",
            b"1700000000",
            b"1288834974656",
            b"3487858230209",
            b"99999999999999999999999",
            b"\xff",
        ] {
            let err = decode_mark("/snowmint/reserved/0/0", bad).unwrap_err();
            assert!(matches!(err, EtcdError::DamagedMark { .. }), "{err:?}");
            let msg = err.to_string();
            assert!(msg.contains("/snowmint/reserved/0/0"), "{msg}");
            assert!(
                msg.contains(&format!("{:?}", String::from_utf8_lossy(bad))),
                "{msg}"
            );
            assert!(msg.contains("1288834974657..=3487858230208"), "{msg}");
        }
    }
}
