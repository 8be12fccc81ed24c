//! Snowflake IDs minted in-process under a worker identity leased from
//! Redis (one server, or the master that Sentinel names), with the same
//! guarantees as etcd and the SQL coordinators.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = snowmint_redis::RedisConfig::new("redis://:secret@redis.internal:6379/0")
//!     .lease_ttl(std::time::Duration::from_secs(10));
//! let minter = snowmint_redis::LeasedGenerator::start(config).await?; // once an identity is held
//! let id = minter.next_id()?;   // Err (never a risky ID) while fenced
//! minter.shutdown().await;      // releases the identity: free at once
//! # let _ = id; Ok(()) }
//! ```
//!
//! # How it stays safe
//!
//! The protocol (claim, keep-alive, fence, marks, hand-over, re-claim,
//! release) is `snowmint-lease`'s; this crate is its coordinator on one hash
//! per identity under a key prefix, each request one Lua script that Redis
//! runs atomically:
//!
//! 1. **Claim** binds a free identity's record to the session's lease token
//!    and sets its expiry to *Redis's* clock (`TIME`) plus the TTL, and
//!    returns, from the same step, what it replaced: who held it, whether
//!    they released it, the TTL their fence may still run.
//! 2. **Renew, confirm, release, raise the mark** each require the record
//!    bound to the live lease under the same epoch; marks only rise.
//! 3. **Epochs.** Every script reads the server's `run_id` and
//!    `master_replid` (its history: a restart changes the first, a
//!    failover the second). A record of another epoch, or none at all (a
//!    fresh Redis cannot be told from one that lost its data), is
//!    [`Previous::Untrusted`](snowmint_lease::Previous::Untrusted): the new
//!    holder waits the prefix's declared longest TTL and starts above it.
//!    Holders of an old epoch find their record no longer theirs and fence.
//! 4. **Refusals.** A replica, an eviction policy that may delete any key
//!    (`allkeys-*`), and a TTL longer than the prefix declares are refused,
//!    by name (in the error and in readiness).
//!
//! The argument, and what it assumes, is in the repository's
//! `docs/distributed.md` ("Redis as a coordinator").
#![deny(missing_docs)]

mod config;
mod coordinator;
mod scripts;

pub use config::{ConfigError, DEFAULT_LONGEST_TTL, DEFAULT_PREFIX, RedisConfig, redact};
pub use coordinator::RedisCoordinator;
pub use snowmint_lease::{
    DEFAULT_LEASE_TTL, Fence, GeneratorFactory, Identity, LeaseClock, LeaseConfig, LeaseError,
    LeaseMetrics, LeaseState, LeaseStore, LeasedGenerator, MAX_LEASE_TTL, MIN_LEASE_TTL, MintError,
    PendingMint, SystemLeaseClock, default_generator, fence_margin,
};
