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
//! 1. **Claim.** The session grants a lease and creates
//!    `<prefix>/identities/<dc>/<worker>` bound to it, only if absent (the
//!    first free of the 1024; its previous one first when it claims again).
//! 2. **Start above the mark.** `<prefix>/reserved/<dc>/<worker>`, outliving
//!    every lease, holds the identity's "reserved until" milliseconds; the
//!    generator never issues at or below it, and raises it (only while its
//!    lease holds the key) before it issues past it.
//! 3. **Fence.** Each keep-alive etcd answers moves a deadline to *sent +
//!    TTL - margin*; every mint checks it before its claim and after, and
//!    IDs claimed after it passed are dropped. A fenced session keeps
//!    renewing, and claims again if its lease or key is gone.
//! 4. **Hand over.** [`LeasedGenerator::shutdown`] lowers the mark to what
//!    was issued and revokes the lease: the identity is free at once. A
//!    crashed holder's identity is free when its lease expires.
//!
//! The argument, and what it assumes, is in the repository's
//! `docs/distributed.md`.
//!
//! # Layout
//!
//! - [`LeasedGenerator`] (`leased.rs`): the handle: start, mint, readiness,
//!   metrics, shutdown.
//! - `holder.rs`: the fenced slot the session fills and every mint goes
//!   through; [`Fence`] (`fence.rs`) is its deadline.
//! - `session.rs`: claim, keep-alive, fence, re-claim, revoke.
//! - `ops.rs`: each etcd request, bounded by a timeout; [`Keys`]
//!   (`keys.rs`): where state lives in etcd.
//! - [`EtcdStore`] (`store.rs`, over `bridge.rs`): the core's synchronous
//!   `ReservationStore` on etcd, served by a thread of its own.
//! - [`EtcdConfig`] (`config.rs`), [`EtcdError`] (`error.rs`),
//!   [`LeaseMetrics`] (`status.rs`).
#![deny(missing_docs)]

mod bridge;
mod config;
mod error;
mod fence;
mod holder;
mod keys;
mod leased;
mod ops;
mod session;
mod status;
mod store;

pub use config::{
    ConfigError, DEFAULT_LEASE_TTL, DEFAULT_PREFIX, EtcdConfig, GeneratorFactory, MAX_LEASE_TTL,
    MIN_LEASE_TTL, TlsFlag, default_generator, fence_margin,
};
pub use error::EtcdError;
pub use fence::Fence;
pub use holder::{MintError, PendingMint};
pub use keys::Keys;
pub use leased::LeasedGenerator;
pub use snowmint::Identity;
pub use status::{LeaseMetrics, LeaseState};
pub use store::EtcdStore;

#[cfg(test)]
mod tests;

/// Compiles the crate README's example as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctest;
