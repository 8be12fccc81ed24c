//! The etcd requests of distributed mode, each bounded by a timeout: what
//! [`EtcdCoordinator`](crate::EtcdCoordinator) answers the lease protocol with.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, GetOptions, LeaseKeepAliveStream, LeaseKeeper,
    PutOptions, TlsOptions, Txn, TxnOp, TxnOpResponse,
};

use snowmint::{MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS};
use snowmint_lease::{
    Census, Claimant, Claimed, Confirmation, LeaseError, Pool, Previous, Renewal,
};

use crate::keys::Keys;

/// etcd's client error as the protocol's.
pub(crate) fn request_error(op: &'static str, source: etcd_client::Error) -> LeaseError {
    LeaseError::Request {
        coordinator: "etcd",
        op,
        source: Box::new(source),
    }
}

/// No answer from etcd within `after`.
pub(crate) fn timeout(op: &'static str, after: Duration) -> LeaseError {
    LeaseError::Timeout {
        coordinator: "etcd",
        op,
        after,
    }
}

/// Runs one etcd request with a deadline.
pub(crate) async fn timed<T>(
    op: &'static str,
    after: Duration,
    request: impl Future<Output = Result<T, etcd_client::Error>>,
) -> Result<T, LeaseError> {
    match tokio::time::timeout(after, request).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(source)) => Err(request_error(op, source)),
        Err(_) => Err(timeout(op, after)),
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
) -> Result<Client, LeaseError> {
    // HTTP/2 pings at most every KEEP_ALIVE_PING, and only while a stream
    // is open: etcd's server answers pings more often than its
    // `--grpc-keepalive-min-time` (5 s by default), or on a connection with
    // no stream, with GOAWAY `too_many_pings`. A dead line is found by the
    // request timeouts anyway (every request is bounded, and a failed one
    // drops the connection).
    let mut options = ConnectOptions::new()
        .with_connect_timeout(request_timeout)
        .with_timeout(request_timeout)
        .with_keep_alive(KEEP_ALIVE_PING, request_timeout)
        .with_keep_alive_while_idle(false);
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

/// The HTTP/2 ping interval: twice etcd's default `--grpc-keepalive-min-time`.
pub(crate) const KEEP_ALIVE_PING: Duration = Duration::from_secs(10);

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
    pub(crate) async fn client(&mut self) -> Result<&mut Client, LeaseError> {
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

/// Grants a lease of `ttl` (whole seconds, at least 1).
pub(crate) async fn grant(
    client: &mut Client,
    ttl: Duration,
    after: Duration,
) -> Result<snowmint_lease::Granted, LeaseError> {
    let response = timed(
        "lease grant",
        after,
        client.lease_grant(ttl.as_secs().max(1) as i64, None),
    )
    .await?;
    Ok(snowmint_lease::Granted {
        lease: response.id(),
        ttl: Duration::from_secs(response.ttl().max(0) as u64),
    })
}

pub(crate) async fn revoke(
    client: &mut Client,
    lease: i64,
    after: Duration,
) -> Result<(), LeaseError> {
    match timed("lease revoke", after, client.lease_revoke(lease)).await {
        // Already gone: what a revoke is for.
        Err(LeaseError::Request { source, .. }) if lease_not_found(&*source) => Ok(()),
        other => other.map(drop),
    }
}

/// Whether etcd said the lease does not exist. (etcd-client also reports a
/// closed request channel, a dead stream, as `LeaseKeepAliveError`; only
/// its own "lease not found" is etcd speaking.)
fn lease_not_found(e: &(dyn std::error::Error + 'static)) -> bool {
    match e.downcast_ref::<etcd_client::Error>() {
        Some(etcd_client::Error::LeaseKeepAliveError(m)) => m == "lease not found",
        Some(etcd_client::Error::GRpcStatus(s)) => s.message().contains("lease not found"),
        _ => false,
    }
}

/// What the tenure record of an identity says: who held it last and how it
/// let go. `<prefix>/tenure/<dc>/<worker>`, not bound to a lease:
///
/// ```text
/// held <lease hex> <ttl s> <instance hex> <holder>   claimed, not released
/// released <lease hex>                              released by its holder
/// ```
///
/// A held record's TTL is what the next holder waits if this one does not
/// release: the longest fence that may still be open on the identity, the
/// claimant's TTL or, when the holder before it did not release either, that
/// holder's recorded TTL if longer ([`recorded_ttl`](Tenure::recorded_ttl)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tenure {
    Held {
        /// The lease that claimed it, if the record names one.
        lease: Option<i64>,
        ttl: Duration,
        instance: u64,
        holder: String,
    },
    Released,
}

impl Tenure {
    pub(crate) fn held(lease: i64, ttl: Duration, who: &Claimant<'_>) -> String {
        format!(
            "held {lease:x} {} {:x} {}",
            ttl.as_secs(),
            who.instance,
            who.holder
        )
    }

    /// The TTL a claim by `who` records over `record`: the longest fence
    /// that may still be open on the identity once it holds it. A holder
    /// that did not release may be fenced open for its recorded TTL (which
    /// covers the holders before it the same way), and `who` for its own.
    pub(crate) fn recorded_ttl(record: Option<&Tenure>, who: &Claimant<'_>) -> Duration {
        match record {
            Some(Tenure::Held { ttl, .. }) => who.ttl.max(*ttl),
            Some(Tenure::Released) | None => who.ttl,
        }
    }

    pub(crate) fn released(lease: i64) -> String {
        format!("released {lease:x}")
    }

    /// A record as stored; one it cannot read counts as held by a stranger
    /// with the longest TTL (the safe reading).
    pub(crate) fn parse(value: &[u8]) -> Tenure {
        let text = String::from_utf8_lossy(value);
        let mut words = text.splitn(5, ' ');
        match words.next() {
            Some("released") => Tenure::Released,
            Some("held") => {
                let lease = words.next().and_then(|w| i64::from_str_radix(w, 16).ok());
                let ttl = words.next().and_then(|w| w.parse().ok());
                let instance = words.next().and_then(|w| u64::from_str_radix(w, 16).ok());
                let holder = words.next().unwrap_or("").to_owned();
                match (ttl, instance) {
                    (Some(ttl), Some(instance)) => Tenure::Held {
                        lease,
                        ttl: Duration::from_secs(ttl),
                        instance,
                        holder,
                    },
                    _ => Tenure::unreadable(&text),
                }
            }
            _ => Tenure::unreadable(&text),
        }
    }

    fn unreadable(text: &str) -> Tenure {
        Tenure::Held {
            lease: None,
            ttl: snowmint_lease::MAX_LEASE_TTL,
            instance: 0,
            holder: format!(
                "an unreadable tenure record {:?}",
                &text[..text.len().min(40)]
            ),
        }
    }

    /// How the last holder let go, as seen by `instance`; `marked`: whether
    /// the identity has a mark (it was held before, by a version that kept
    /// no tenure record, if there is none).
    pub(crate) fn previous(
        record: Option<Tenure>,
        marked: bool,
        instance: u64,
        ttl: Duration,
    ) -> Previous {
        match record {
            None if !marked => Previous::Clean,
            None => Previous::Unclean {
                ttl,
                holder: "a holder that kept no tenure record".to_owned(),
            },
            Some(Tenure::Released) => Previous::Clean,
            Some(Tenure::Held { instance: i, .. }) if i == instance => Previous::Clean,
            Some(Tenure::Held { ttl, holder, .. }) => Previous::Unclean { ttl, holder },
        }
    }
}

/// The identities of `pool` held now, their marks and tenure records, in one
/// snapshot (one read-only transaction of three range reads).
pub(crate) async fn census(
    client: &mut Client,
    keys: &Keys,
    pool: Pool,
    after: Duration,
) -> Result<Census, LeaseError> {
    let range = |prefix: String, keys_only: bool| {
        let options = GetOptions::new().with_prefix();
        TxnOp::get(
            prefix,
            Some(if keys_only {
                options.with_keys_only()
            } else {
                options
            }),
        )
    };
    let txn = Txn::new().and_then([
        range(keys.identities_in(pool), true),
        range(keys.reserved_in(pool), false),
        range(keys.tenures_in(pool), false),
    ]);
    let response = timed("identity scan", after, client.txn(txn)).await?;
    let mut census = Census::default();
    let mut records = HashMap::new();
    for (i, op) in response.op_responses().into_iter().enumerate() {
        let TxnOpResponse::Get(get) = op else {
            continue;
        };
        for kv in get.kvs() {
            let Some(n) = keys.parse(i, kv.key()).filter(|&n| pool.contains(n)) else {
                continue;
            };
            match i {
                0 => {
                    census.taken.insert(n);
                }
                1 => {
                    // A damaged mark is refused when the identity is claimed.
                    if let Ok(mark) = decode_mark("", kv.value()) {
                        census.marks.insert(n, mark);
                    }
                }
                _ => {
                    records.insert(n, Tenure::parse(kv.value()));
                }
            }
        }
    }
    for n in pool.ordinals().filter(|n| !census.taken.contains(n)) {
        let marked = census.marks.contains_key(&n);
        if let Previous::Unclean { .. } =
            Tenure::previous(records.remove(&n), marked, 0, Duration::ZERO)
        {
            census.unclean.insert(n);
        }
    }
    Ok(census)
}

/// How many times a claim reads the tenure record again because it changed
/// between the read and the claim's transaction.
const CLAIM_TRIES: u32 = 5;

/// What a claim read of identity `n`: the lease its key is bound to (if
/// any), and its tenure record with the revision that wrote it (0: none).
struct Seen {
    bound: Option<i64>,
    record: Option<Tenure>,
    revision: i64,
}

impl Seen {
    /// From the answer to the two reads [key, tenure record].
    fn of(response: &etcd_client::TxnResponse) -> Seen {
        let mut seen = Seen {
            bound: None,
            record: None,
            revision: 0,
        };
        for (i, op) in response.op_responses().into_iter().enumerate() {
            if let TxnOpResponse::Get(get) = op
                && let Some(kv) = get.kvs().first()
            {
                match i {
                    0 => seen.bound = Some(kv.lease()),
                    _ => {
                        seen.record = Some(Tenure::parse(kv.value()));
                        seen.revision = kv.mod_revision();
                    }
                }
            }
        }
        seen
    }
}

/// Claims identity `n` for `lease`. The tenure record it writes carries the
/// TTL the next holder must wait ([`Tenure::recorded_ttl`]), which depends
/// on the record before it: so the key and the record are read first, and
/// one transaction then creates the key bound to the lease only if it is
/// still absent and the record unchanged (its `mod_revision`), reads the
/// mark, and writes the record, so that a crash after it leaves the
/// identity looking unclean, never clean. A record changed in between is
/// read again (a few times; then the identity counts as taken).
///
/// A claim asked again under the lease its key is already bound to (its
/// answer was lost) is answered from the record it wrote: the wait it
/// recorded, which covers whatever the first answer said.
pub(crate) async fn claim(
    client: &mut Client,
    keys: &Keys,
    lease: i64,
    n: u16,
    who: &Claimant<'_>,
    after: Duration,
) -> Result<Claimed, LeaseError> {
    let key = keys.identity(n);
    let tenure = keys.tenure(n);
    let look = [
        TxnOp::get(key.as_str(), Some(GetOptions::new().with_keys_only())),
        TxnOp::get(tenure.as_str(), None),
    ];
    let read = Txn::new().and_then(look.clone());
    let mut seen = Seen::of(&timed("identity claim", after, client.txn(read)).await?);
    for _ in 0..CLAIM_TRIES {
        if let Some(bound) = seen.bound {
            return Ok(match seen.record {
                Some(Tenure::Held {
                    lease: Some(claimed),
                    ttl,
                    ..
                }) if bound == lease && claimed == lease => Claimed::Won(Previous::Unclean {
                    ttl,
                    holder: "this lease's own claim, asked again".to_owned(),
                }),
                _ => Claimed::Taken,
            });
        }
        let unchanged = if seen.revision == 0 {
            Compare::create_revision(tenure.as_str(), CompareOp::Equal, 0)
        } else {
            Compare::mod_revision(tenure.as_str(), CompareOp::Equal, seen.revision)
        };
        let ttl = Tenure::recorded_ttl(seen.record.as_ref(), who);
        let txn = Txn::new()
            .when([
                Compare::create_revision(key.as_str(), CompareOp::Equal, 0),
                unchanged,
            ])
            .and_then([
                TxnOp::get(keys.reserved(n), None),
                TxnOp::put(
                    key.as_str(),
                    who.holder,
                    Some(PutOptions::new().with_lease(lease)),
                ),
                TxnOp::put(tenure.as_str(), Tenure::held(lease, ttl, who), None),
            ])
            .or_else(look.clone());
        let response = timed("identity claim", after, client.txn(txn)).await?;
        if !response.succeeded() {
            seen = Seen::of(&response);
            continue;
        }
        let marked = response
            .op_responses()
            .into_iter()
            .any(|op| matches!(op, TxnOpResponse::Get(get) if !get.kvs().is_empty()));
        return Ok(Claimed::Won(Tenure::previous(
            seen.record,
            marked,
            who.instance,
            who.ttl,
        )));
    }
    Ok(Claimed::Taken)
}

/// Records that the holder under `lease` let go of identity `n` (only while
/// `n`'s key is bound to `lease`).
pub(crate) async fn release(
    client: &mut Client,
    keys: &Keys,
    n: u16,
    lease: i64,
    after: Duration,
) -> Result<(), LeaseError> {
    let key = keys.identity(n);
    let txn = Txn::new()
        .when([Compare::lease(key.as_str(), CompareOp::Equal, lease)])
        .and_then([TxnOp::put(keys.tenure(n), Tenure::released(lease), None)]);
    if timed("identity release", after, client.txn(txn))
        .await?
        .succeeded()
    {
        Ok(())
    } else {
        Err(LeaseError::NotHolder { key, lease })
    }
}

/// Whether identity `n`'s key is still bound to `lease`, read
/// linearizably, with the raft term of the answer.
pub(crate) async fn holds(
    client: &mut Client,
    keys: &Keys,
    n: u16,
    lease: i64,
    after: Duration,
) -> Result<Confirmation, LeaseError> {
    let response = timed("identity check", after, client.get(keys.identity(n), None)).await?;
    Ok(Confirmation {
        holds: response.kvs().first().is_some_and(|kv| kv.lease() == lease),
        term: response.header().map(|h| h.raft_term()),
    })
}

/// A keep-alive stream on one connection: its sender and its answers.
pub(crate) type Stream = (LeaseKeeper, LeaseKeepAliveStream);

/// One keep-alive round trip on `stream` (opened on `client` if there is
/// none). A stream that failed or timed out must be dropped by the caller,
/// so a late answer is never taken for a newer request's. "Lease not found"
/// is an answer with TTL 0: the session believes it only once a read agrees.
pub(crate) async fn keep_alive(
    client: &mut Client,
    stream: &mut Option<Stream>,
    lease: i64,
    t: Duration,
) -> Result<Renewal, LeaseError> {
    let gone = Renewal {
        ttl: Duration::ZERO,
        term: None,
    };
    if stream.is_none() {
        match tokio::time::timeout(t, client.lease_keep_alive(lease)).await {
            Ok(Ok(opened)) => *stream = Some(opened),
            Ok(Err(e)) if lease_not_found(&e) => return Ok(gone),
            Ok(Err(source)) => return Err(request_error("lease keep-alive", source)),
            Err(_) => return Err(timeout("lease keep-alive", t)),
        }
    }
    let (keeper, responses) = stream.as_mut().expect("opened above");
    let round = async {
        keeper.keep_alive().await?;
        responses.message().await
    };
    match tokio::time::timeout(t, round).await {
        Ok(Ok(Some(response))) => Ok(Renewal {
            ttl: Duration::from_secs(response.ttl().max(0) as u64),
            term: response.header().map(|h| h.raft_term()),
        }),
        Ok(Ok(None)) => Err(LeaseError::KeepAliveEnded),
        Ok(Err(e)) if lease_not_found(&e) => {
            *stream = None;
            Ok(gone)
        }
        Ok(Err(source)) => Err(request_error("lease keep-alive", source)),
        Err(_) => Err(timeout("lease keep-alive", t)),
    }
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
/// zero-padded or not. Anything else is [`LeaseError::DamagedMark`].
fn decode_mark(key: &str, value: &[u8]) -> Result<u64, LeaseError> {
    std::str::from_utf8(value)
        .ok()
        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|v| v.parse().ok())
        .filter(|ms| (MIN_TIMESTAMP_MS..=MAX_TIMESTAMP_MS).contains(ms))
        .ok_or_else(|| LeaseError::DamagedMark {
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

    fn of(key: &str, kv: Option<&etcd_client::KeyValue>) -> Result<SeenMark, LeaseError> {
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
) -> Result<SeenMark, LeaseError> {
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
/// [`MARK_TRIES`] writes is [`LeaseError::MarkContended`].
pub(crate) async fn store_mark(
    client: &mut Client,
    keys: &Keys,
    n: u16,
    lease: i64,
    until_ms: u64,
    seen: Option<SeenMark>,
    after: Duration,
) -> Result<SeenMark, LeaseError> {
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
        let raise = snowmint_lease::raises(seen.value, until_ms);
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
            return Err(LeaseError::NotHolder {
                key: identity,
                lease,
            });
        }
        // Both read in one snapshot: ours, and already high enough.
        if current.value.is_some() && !snowmint_lease::raises(current.value, until_ms) {
            return Ok(current);
        }
        // Moved since `seen` (by a write of ours still in flight, or by
        // hand): try again from what is there now.
        seen = current;
    }
    Err(LeaseError::MarkContended {
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
            assert!(matches!(err, LeaseError::DamagedMark { .. }), "{err:?}");
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
