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
    /// Holding an identity; minting.
    Held,
    /// Renewals stopped answering: the fence closed, minting stopped.
    Fenced,
    /// Shut down; the lease was revoked.
    Stopped,
}

impl LeaseState {
    /// Every state, for metrics.
    pub const ALL: [LeaseState; 6] = [
        LeaseState::Connecting,
        LeaseState::Claiming,
        LeaseState::AllTaken,
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

/// A snapshot of the session: what `snowmint serve` exports to `/metrics`
/// (as `snowmint_etcd_*`), for any program to export its own way.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseMetrics {
    /// Where the session is.
    pub state: LeaseState,
    /// The identity held (or last held while fenced).
    pub identity: Option<Identity>,
    /// The current lease ID.
    pub lease: Option<i64>,
    /// The lease TTL etcd granted.
    pub granted_ttl: Option<Duration>,
    /// Identities claimed so far (more than one means the lease was lost).
    pub claims: u64,
    /// Successful keep-alives.
    pub renewals: u64,
    /// Keep-alives that failed or got no answer in time.
    pub renewal_failures: u64,
    /// Times the fence closed.
    pub fenced: u64,
    /// The last failure, for operators (never shown to HTTP clients).
    pub last_error: Option<String>,
}

impl LeaseMetrics {
    pub(crate) fn new() -> LeaseMetrics {
        LeaseMetrics {
            state: LeaseState::Connecting,
            identity: None,
            lease: None,
            granted_ttl: None,
            claims: 0,
            renewals: 0,
            renewal_failures: 0,
            fenced: 0,
            last_error: None,
        }
    }
}

/// The status shared between the session task and its handle.
pub(crate) type SharedStatus = Arc<Mutex<LeaseMetrics>>;

pub(crate) fn update(status: &SharedStatus, f: impl FnOnce(&mut LeaseMetrics)) {
    f(&mut status.lock().unwrap_or_else(PoisonError::into_inner));
}
