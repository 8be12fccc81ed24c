//! Snowflake IDs minted in-process under a worker identity leased from
//! PostgreSQL or MySQL/MariaDB: a database a team already runs, instead of
//! etcd, with the same guarantees.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = snowmint_db::DbConfig::postgres("postgres://snowmint@db.internal/ids")
//!     .lease_ttl(std::time::Duration::from_secs(10));
//! let minter = snowmint_db::LeasedGenerator::start(config).await?; // once an identity is held
//! let id = minter.next_id()?;   // Err (never a risky ID) while fenced
//! minter.shutdown().await;      // releases the identity: free at once
//! # let _ = id; Ok(()) }
//! ```
//!
//! # How it stays safe
//!
//! The protocol (claim, keep-alive, fence, marks, hand-over, re-claim,
//! release) is `snowmint-lease`'s, written once for every coordinator; this
//! crate is its coordinator on one table ([`ddl`] prints it), one row per
//! identity:
//!
//! 1. **Claim.** One statement (PostgreSQL) or one transaction (MySQL)
//!    binds a free row to the session's lease token and sets its expiry to
//!    the *database's* clock plus the TTL, returning what it replaced: who
//!    held it last and whether they released it.
//! 2. **Renew.** `UPDATE ... SET expires_ms = now + ttl WHERE lease = token
//!    AND expires_ms > now`: the database's clock decides, in the statement
//!    that renews; the holder's fence counts from before it sent it.
//! 3. **Marks** are raised only by a statement that also requires the row
//!    bound to the writer's live lease, and only upwards (`GREATEST`).
//! 4. **Hand over.** A graceful stop records the release, then ends the
//!    lease. An identity taken without a release (a crash, or the database
//!    clock stepped forward so the lease ended early) is issued under only
//!    one TTL after the claim.
//! 5. **No session state.** Every statement stands alone (PostgreSQL's are
//!    unnamed, parsed and run in one round trip), so PgBouncer in
//!    transaction mode carries it.
//! 6. **A primary only.** Each new connection checks that the server is
//!    not a standby (`pg_is_in_recovery()`), read-only or a MySQL replica,
//!    and that the table carries this layout's marker ([`LAYOUT_MARKER`]).
//!
//! The argument, and what it assumes (one primary; a failover to an
//! asynchronous replica can lose mark writes), is in the repository's
//! `docs/distributed.md`.
#![deny(missing_docs)]

// Without a driver (`postgres`, `mysql`) the crate is its table alone: the
// name, the layout and the DDL, which a program that only prints the table
// or names its default (`snowmint serve --help`) needs.
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod answer;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod backend;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod config;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod coordinator;
#[cfg(feature = "mysql")]
mod my;
#[cfg(feature = "postgres")]
mod pg;
mod table;
#[cfg(feature = "postgres")]
mod tls;

#[cfg(any(feature = "postgres", feature = "mysql"))]
pub use config::{ConfigError, DbConfig};
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub use coordinator::DbCoordinator;
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub use snowmint_lease::{
    DEFAULT_LEASE_TTL, Fence, GeneratorFactory, Identity, LeaseClock, LeaseConfig, LeaseError,
    LeaseMetrics, LeaseState, LeaseStore, LeasedGenerator, MAX_LEASE_TTL, MIN_LEASE_TTL, MintError,
    PendingMint, SystemLeaseClock, default_generator, fence_margin,
};
pub use table::{
    DEFAULT_LONGEST_TTL_MS, DEFAULT_TABLE, Dialect, LAYOUT_1_MARKER, LAYOUT_MARKER, Table, ddl,
    epoch_sql,
};
