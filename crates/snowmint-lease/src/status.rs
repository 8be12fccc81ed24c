//! What the lease session is doing: its state and counters, for metrics and logs.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use snowmint::Identity;

/// Where the session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LeaseState {
    /// Connecting to etcd or granting a lease (etcd unreachable so far).
    Connecting,
    /// Looking for a free identity.
    Claiming,
    /// Every identity it may claim (all 1024, or its datacenter's 32) is
    /// held by others; looking again with backoff.
    AllTaken,
    /// Holding an identity whose last holder did not release it: waiting
    /// one lease TTL before issuing (its lease may have been ended early).
    Handover,
    /// Holding an identity; minting.
    Held,
    /// Renewals stopped answering: the fence closed, minting stopped.
    Fenced,
    /// Shut down; the lease was revoked.
    Stopped,
}

impl LeaseState {
    /// Every state, for metrics.
    pub const ALL: [LeaseState; 7] = [
        LeaseState::Connecting,
        LeaseState::Claiming,
        LeaseState::AllTaken,
        LeaseState::Handover,
        LeaseState::Held,
        LeaseState::Fenced,
        LeaseState::Stopped,
    ];

    /// The state's name in metrics and logs.
    pub const fn name(self) -> &'static str {
        match self {
            LeaseState::Connecting => "connecting",
            LeaseState::Claiming => "claiming",
            LeaseState::AllTaken => "all_taken",
            LeaseState::Handover => "handover",
            LeaseState::Held => "held",
            LeaseState::Fenced => "fenced",
            LeaseState::Stopped => "stopped",
        }
    }
}

impl fmt::Display for LeaseState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A snapshot of the session: what `snowmint serve` exports to `/metrics`,
/// for any program to export its own way.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseMetrics {
    /// Where the session is.
    pub state: LeaseState,
    /// The identity held (or last held while fenced).
    pub identity: Option<Identity>,
    /// The current lease ID.
    pub lease: Option<i64>,
    /// The lease TTL the coordinator granted.
    pub granted_ttl: Option<Duration>,
    /// Identities claimed so far (more than one means the lease was lost).
    pub claims: u64,
    /// Claim attempts sent (one per identity tried; more than `claims`
    /// means races lost to other instances).
    pub claim_txns: u64,
    /// Successful keep-alives.
    pub renewals: u64,
    /// Keep-alives that failed or got no answer in time.
    pub renewal_failures: u64,
    /// Keep-alives the coordinator answered that did not count: the linearizable read
    /// after the answer reported another raft term, or failed (a deposed
    /// leader's answer, etcd issue 15247, or a leader change under way), so
    /// the fence stayed. Those whose read failed count as renewal failures
    /// too.
    pub unconfirmed_renewals: u64,
    /// What each endpoint's server said it is (etcd's Status call),
    /// in the order the endpoints were given; endpoints that have not
    /// answered yet are missing.
    pub servers: Vec<ServerVersion>,
    /// Times the fence closed.
    pub fenced: u64,
    /// How far (ms) the mark of the identity held stood ahead of this
    /// clock when it was claimed, if farther than the generator may issue
    /// ahead of its clock: such an identity is taken only when no other of
    /// the pool is free, and cannot issue until the clock reaches its mark.
    /// `None` for an identity that could issue at once.
    pub claimed_ahead_ms: Option<u64>,
    /// The last failure, for operators (never shown to HTTP clients).
    pub last_error: Option<String>,
    /// What the coordinator says of where the identities live, as label
    /// pairs for metrics and readiness: a database coordinator's
    /// schema-qualified `table` and its server's `epoch`. Empty until the
    /// coordinator has said (and for etcd, whose `servers` say it).
    pub coordinator_info: Vec<(&'static str, String)>,
    /// Why the coordinator refuses its server or table (a standby, a
    /// setting that loses commits, a table name that resolves to two
    /// tables), in words fit for clients (no address, no secret): a reason
    /// an operator must act on. `None` once a connection passes its checks.
    pub refusal: Option<String>,
}

impl LeaseMetrics {
    pub(crate) fn new() -> LeaseMetrics {
        LeaseMetrics {
            state: LeaseState::Connecting,
            identity: None,
            lease: None,
            granted_ttl: None,
            claims: 0,
            claim_txns: 0,
            renewals: 0,
            renewal_failures: 0,
            unconfirmed_renewals: 0,
            servers: Vec::new(),
            fenced: 0,
            claimed_ahead_ms: None,
            last_error: None,
            coordinator_info: Vec::new(),
            refusal: None,
        }
    }
}

/// One etcd endpoint's server version, as its Status call answered.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerVersion {
    /// The endpoint, as given.
    pub endpoint: String,
    /// The version the server reported (`3.4.23`).
    pub version: String,
}

impl ServerVersion {
    /// Whether this server has etcd issue 15247 (a deposed leader may answer
    /// lease keep-alives from its stale lease table): every 3.x before
    /// 3.4.31, 3.5.x before 3.5.13; `None` for a version that does not
    /// parse as `MAJOR.MINOR.PATCH`.
    ///
    /// ```
    /// # use snowmint_lease::ServerVersion;
    /// let v = |s: &str| ServerVersion::new("http://etcd:2379", s).has_issue_15247();
    /// assert_eq!(v("3.4.23"), Some(true));
    /// assert_eq!(v("3.4.31"), Some(false));
    /// assert_eq!(v("3.5.12"), Some(true));
    /// assert_eq!(v("3.5.13"), Some(false));
    /// assert_eq!(v("3.6.0"), Some(false));
    /// assert_eq!(v("3.3.27"), Some(true));
    /// assert_eq!(v("unknown"), None);
    /// ```
    pub fn has_issue_15247(&self) -> Option<bool> {
        has_issue_15247(&self.version)
    }

    /// An endpoint's version (for tests and for programs that ask etcd themselves).
    pub fn new(endpoint: impl Into<String>, version: impl Into<String>) -> ServerVersion {
        ServerVersion {
            endpoint: endpoint.into(),
            version: version.into(),
        }
    }
}

/// See [`ServerVersion::has_issue_15247`]. A pre-release suffix
/// (`3.5.13-rc.0`) counts as the release it leads to.
fn has_issue_15247(version: &str) -> Option<bool> {
    let core = version.trim().trim_start_matches('v');
    let core = core.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
    let (major, minor, patch) = (parts.next()??, parts.next()??, parts.next()??);
    if parts.next().is_some() {
        return None;
    }
    Some(match (major, minor) {
        (0..=2, _) => true,
        (3, 0..=3) => true,
        (3, 4) => patch < 31,
        (3, 5) => patch < 13,
        _ => false,
    })
}

/// The status shared between the session task and its handle.
pub type SharedStatus = Arc<Mutex<LeaseMetrics>>;

/// Changes the shared status under its lock (a poisoned lock is taken over).
pub fn update(status: &SharedStatus, f: impl FnOnce(&mut LeaseMetrics)) {
    f(&mut status.lock().unwrap_or_else(PoisonError::into_inner));
}
