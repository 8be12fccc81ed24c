//! Snowflake IDs minted in-process under a worker identity leased from etcd.
//!
//! Many processes can mint [`snowmint`] IDs at once without ever issuing the
//! same one twice if no two of them issue as the same (datacenter, worker)
//! identity at the same time, and each new holder of an identity starts above
//! everything its predecessors issued. This crate does both with etcd, for
//! any tokio program; `snowmint serve --etcd` is one such program.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = snowmint_etcd::EtcdConfig::new(["http://127.0.0.1:2379"])
//!     .lease_ttl(std::time::Duration::from_secs(10))
//!     .prefix("/snowmint");
//! let minter = snowmint_etcd::LeasedGenerator::start(config).await?; // resolves once an identity is held
//! let id = minter.next_id()?;   // Err (never a risky ID) while fenced
//! minter.shutdown().await;      // revokes the lease: the identity is free at once
//! # let _ = id; Ok(()) }
//! ```
//!
//! Which to use: [`snowmint::Generator`] when each process is given its own
//! identity (a config value, a StatefulSet ordinal); [`LeasedGenerator`]
//! when processes come and go and should pick a free identity themselves.
//!
//! # How it stays safe
//!
//! The protocol (claim, keep-alive, fence, confirmed renewals, marks,
//! hand-over, re-claim, release) is `snowmint-lease`'s, written once for
//! every coordinator; this crate is its etcd coordinator, [`EtcdCoordinator`],
//! and the configuration that starts it, [`EtcdConfig`]. In etcd:
//!
//! 1. **Claim.** `<prefix>/identities/<dc>/<worker>`, bound to the session's
//!    lease, is created only if absent, in one transaction that also reads
//!    and rewrites the identity's tenure record (`<prefix>/tenure/...`: who
//!    held it last, and whether it released it).
//! 2. **Start above the mark.** `<prefix>/reserved/<dc>/<worker>`, outliving
//!    every lease, holds the identity's "reserved until" milliseconds; it is
//!    raised only while the identity key is bound to the writer's lease, and
//!    never lowered.
//! 3. **Fence.** A renewal counts once a linearizable read after its answer
//!    reports the same raft term (etcd issue 15247: a deposed leader may
//!    answer keep-alives from its stale lease table).
//! 4. **Hand over.** A graceful stop records the release, then revokes the
//!    lease. etcd before 3.4.31 and 3.5.13 may also revoke a lease early (a
//!    deposed leader revoking what its stale table says expired, etcd issue
//!    12528): the next holder of an identity not released waits one lease TTL
//!    before it issues, which covers that.
//!
//! The argument, and what it assumes, is in the repository's
//! `docs/distributed.md`.
//!
//! # Layout
//!
//! - [`EtcdConfig`] (`config.rs`): endpoints, prefix, TLS, and the common
//!   [`LeaseConfig`]; it is the [`LeaseSource`](snowmint_lease::LeaseSource)
//!   [`LeasedGenerator::start`] takes.
//! - [`EtcdCoordinator`] (`coordinator.rs`) over `ops.rs` (each etcd request,
//!   bounded by a timeout) and [`Keys`] (`keys.rs`: where state lives in etcd);
//!   `versions.rs`: each endpoint's etcd version, for the log and metrics.
#![deny(missing_docs)]

mod config;
mod coordinator;
mod keys;
mod ops;
mod versions;

pub use config::{ConfigError, DEFAULT_PREFIX, EtcdConfig, TlsFlag};
pub use coordinator::EtcdCoordinator;
pub use keys::Keys;
pub use snowmint_lease::{
    DEFAULT_LEASE_TTL, Fence, GeneratorFactory, Identity, LeaseClock, LeaseConfig, LeaseMetrics,
    LeaseState, LeaseStore, LeasedGenerator, MAX_LEASE_TTL, MIN_LEASE_TTL, MintError, PendingMint,
    ServerVersion, SystemLeaseClock, default_generator, fence_margin,
};

/// What can go wrong with a lease from etcd: the protocol's error.
pub type EtcdError = snowmint_lease::LeaseError;

/// The reservation store of an identity leased from etcd: the protocol's.
pub type EtcdStore = snowmint_lease::LeaseStore;

#[cfg(test)]
mod tests;

/// Compiles the crate README's example as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctest;
