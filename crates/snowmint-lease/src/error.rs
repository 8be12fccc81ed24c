//! What can go wrong with a lease, each failure its own variant.

use std::time::Duration;

use snowmint::{MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS};

use snowmint::Identity;

/// A coordinator client's own error, boxed.
pub type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a lease session could not start, or why one of its coordinator steps
/// failed (logged, and kept in [`LeaseMetrics::last_error`](crate::LeaseMetrics)).
/// Coordinator crates name it for their users (`snowmint_etcd::EtcdError`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LeaseError {
    /// The coordinator answered with an error, or the connection failed.
    #[error("{coordinator} {op} failed: {source}")]
    Request {
        /// Which coordinator (`etcd`).
        coordinator: &'static str,
        /// What was being done.
        op: &'static str,
        /// The client's error.
        source: Source,
    },
    /// The coordinator did not answer in time.
    #[error("{coordinator} {op} got no answer within {after:?}")]
    Timeout {
        /// Which coordinator (`etcd`).
        coordinator: &'static str,
        /// What was being done.
        op: &'static str,
        /// How long it waited.
        after: Duration,
    },
    /// Every identity this session may claim (all 1024, or the 32 workers
    /// of its datacenter) is held by a live lease.
    #[error("{}", all_taken(prefix, *datacenter))]
    AllTaken {
        /// Where the identities live, as [`Coordinator::scope`](crate::Coordinator::scope)
        /// names it (`etcd prefix /snowmint`, `PostgreSQL table snowmint_identities`).
        prefix: String,
        /// The datacenter the session is scoped to, if any.
        datacenter: Option<u8>,
    },
    /// The lease is gone (expired or revoked) on the coordinator.
    #[error("lease {lease:x} has expired or was revoked")]
    LeaseGone {
        /// The lease ID.
        lease: i64,
    },
    /// The identity no longer belongs to our lease.
    #[error("{key} is no longer held by lease {lease:x}")]
    NotHolder {
        /// The identity's key (or row).
        key: String,
        /// Our lease ID.
        lease: i64,
    },
    /// A reservation mark that is not decimal Unix milliseconds within the
    /// format's range.
    #[error(
        "the reservation mark at {key} is damaged: {value:?} is not Unix milliseconds \
         (decimal digits, {MIN_TIMESTAMP_MS}..={MAX_TIMESTAMP_MS}); an operator must fix it \
         (see docs/distributed.md) before this identity is used again"
    )]
    DamagedMark {
        /// The mark's key (or row).
        key: String,
        /// What it holds (shortened).
        value: String,
    },
    /// The mark changed under every one of a write's tries.
    #[error("the reservation mark at {key} changed under each of {tries} writes; gave up")]
    MarkContended {
        /// The mark's key.
        key: String,
        /// How many writes were tried.
        tries: u32,
    },
    /// The generator for a claimed identity could not be built (its mark
    /// is damaged, or could not be read).
    #[error("cannot start minting as {identity}: {source}")]
    Build {
        /// The identity.
        identity: Identity,
        /// Why.
        source: snowmint::BuildError,
    },
    /// A custom generator factory built a generator that cannot be used for
    /// the identity it was asked for.
    #[error("the generator factory's generator for {identity} cannot be used: {why}")]
    Factory {
        /// The identity.
        identity: Identity,
        /// What is wrong with it.
        why: &'static str,
    },
    /// Building a claimed identity's generator panicked.
    #[error("building the generator for {identity} panicked")]
    BuildPanicked {
        /// The identity.
        identity: Identity,
    },
    /// More reservation writes are waiting for the coordinator than the
    /// queue holds (it is far behind).
    #[error("too many reservation writes are waiting (the coordinator is far behind)")]
    QueueFull,
    /// The thread that serves the synchronous reservation store has stopped.
    #[error("the reservation thread has stopped")]
    WorkerStopped,
    /// The coordinator closed the keep-alive stream without an answer.
    #[error("the coordinator ended the lease keep-alive stream")]
    KeepAliveEnded,
    /// An invalid setting (common or of the coordinator); the message names
    /// the setting as the `snowmint serve` flag does.
    #[error(transparent)]
    Config(Source),
    /// A thread or runtime of the session could not be started.
    #[error("cannot start the lease session's {what}: {source}")]
    Thread {
        /// Which one.
        what: &'static str,
        /// The operating system's error.
        source: std::io::Error,
    },
}

fn all_taken(scope: &str, datacenter: Option<u8>) -> String {
    let pool = crate::Pool::new(datacenter);
    match datacenter {
        None => format!(
            "{pool} of {scope} are held by other instances; stop one, or \
             give this cluster a scope of its own (an etcd prefix, a table)"
        ),
        Some(_) => format!(
            "{pool} in {scope} are held by other instances; stop one, or run more in \
             another datacenter"
        ),
    }
}

impl LeaseError {
    /// Whether the request failed on the way (no answer, or a transport
    /// error) rather than being answered: only then is moving to another
    /// endpoint worth it. A refusal means the endpoint works.
    pub fn is_transport(&self) -> bool {
        matches!(
            self,
            LeaseError::Request { .. } | LeaseError::Timeout { .. }
        )
    }

    /// Whether a setting is at fault (a flag to fix) rather than the
    /// coordinator or the machine.
    pub fn is_config(&self) -> bool {
        matches!(self, LeaseError::Config(_))
    }
}
