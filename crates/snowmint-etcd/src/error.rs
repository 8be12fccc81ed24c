//! What can go wrong with etcd, each failure its own variant.

use std::time::Duration;

use snowmint::{MAX_TIMESTAMP_MS, MIN_TIMESTAMP_MS};

use crate::config::ConfigError;
use snowmint::Identity;

/// Why a lease session could not start, or why one of its etcd steps failed
/// (logged, and kept in [`LeaseMetrics::last_error`](crate::LeaseMetrics)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EtcdError {
    /// etcd answered with an error, or the connection failed.
    #[error("etcd {op} failed: {source}")]
    Request {
        /// What was being done.
        op: &'static str,
        /// The client's error.
        source: etcd_client::Error,
    },
    /// etcd did not answer in time.
    #[error("etcd {op} got no answer within {after:?}")]
    Timeout {
        /// What was being done.
        op: &'static str,
        /// How long it waited.
        after: Duration,
    },
    /// Every identity this session may claim (all 1024, or the 32 workers
    /// of its datacenter) is held by a live lease.
    #[error("{}", all_taken(prefix, *datacenter))]
    AllTaken {
        /// The key prefix.
        prefix: String,
        /// The datacenter the session is scoped to, if any.
        datacenter: Option<u8>,
    },
    /// The lease is gone (expired or revoked) on the server.
    #[error("etcd lease {lease:x} has expired or was revoked")]
    LeaseGone {
        /// The lease ID.
        lease: i64,
    },
    /// The identity key no longer belongs to our lease.
    #[error("{key} is no longer held by lease {lease:x}")]
    NotHolder {
        /// The identity key.
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
        /// The mark's key.
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
    /// Building a claimed identity's generator panicked.
    #[error("building the generator for {identity} panicked")]
    BuildPanicked {
        /// The identity.
        identity: Identity,
    },
    /// More reservation writes are waiting for etcd than the queue holds
    /// (etcd is far behind).
    #[error("too many etcd reservation writes are waiting (etcd is far behind)")]
    QueueFull,
    /// The thread that serves the synchronous reservation store has stopped.
    #[error("the etcd reservation thread has stopped")]
    WorkerStopped,
    /// etcd closed the keep-alive stream without an answer.
    #[error("etcd ended the lease keep-alive stream")]
    KeepAliveEnded,
    /// An invalid [`EtcdConfig`](crate::EtcdConfig).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A thread or runtime of the session could not be started.
    #[error("cannot start the etcd session's {what}: {source}")]
    Thread {
        /// Which one.
        what: &'static str,
        /// The operating system's error.
        source: std::io::Error,
    },
}

fn all_taken(prefix: &str, datacenter: Option<u8>) -> String {
    match datacenter {
        None => format!(
            "all 1024 worker identities under {prefix}/identities/ are held by other instances; \
             stop one, or give this cluster its own --etcd-prefix"
        ),
        Some(dc) => format!(
            "all 32 worker identities of datacenter {dc} (under {prefix}/identities/{dc}/) \
             are held by other instances; stop one, or run more in another datacenter"
        ),
    }
}

impl EtcdError {
    /// Whether the request failed on the way (no answer, or a transport
    /// error) rather than being answered: only then is moving to another
    /// endpoint worth it. A refusal means the endpoint works.
    pub(crate) fn is_transport(&self) -> bool {
        matches!(self, EtcdError::Request { .. } | EtcdError::Timeout { .. })
    }
}
