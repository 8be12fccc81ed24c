//! The lease protocol of snowmint, written once for every coordinator.
//!
//! Many processes can mint [`snowmint`] IDs at once without ever issuing the
//! same one twice if no two of them issue as the same (datacenter, worker)
//! identity at the same time, and each new holder of an identity starts above
//! everything its predecessors issued. This crate does both over any
//! [`Coordinator`]: etcd (crate `snowmint-etcd`), PostgreSQL and
//! MySQL/MariaDB (crate `snowmint-db`), and a simulated one (the
//! repository's `scripts/sim`). A program starts
//! a [`LeasedGenerator`] from a coordinator crate's configuration (a
//! [`LeaseSource`]) and mints from it.
//!
//! # How it stays safe
//!
//! 1. **Claim.** The session grants a lease and binds a free identity to it,
//!    only if no live lease holds it (its previous one first when it claims
//!    again, else one it can issue under at once, from a random start so
//!    that instances starting together do not race for one identity).
//! 2. **Start above the mark.** Each identity's "reserved until" mark
//!    outlives every lease; the generator never issues at or below it (nor
//!    at or below what this process issued under an identity it held before),
//!    and raises it, only while its lease holds the identity, before it
//!    issues past it.
//! 3. **Fence.** Each renewal the coordinator answers, once a linearizable
//!    read after it confirms it (in the same term, for a coordinator that
//!    has terms: a deposed leader's answer does not count), moves a deadline to *sent + TTL - margin* on the holder's monotonic
//!    clock; every mint checks it before its claim and after, and IDs claimed
//!    after it passed are dropped. A fenced session keeps renewing, and
//!    claims again if its lease or identity is gone.
//! 4. **Hand over.** [`LeasedGenerator::shutdown`] stops issuing, records the
//!    release and revokes the lease: the identity is free at once and its
//!    next holder issues at once. An identity whose holder did not release it
//!    (a crash, an expiry, or a lease the coordinator ended early) is
//!    free when its lease ends, and its next holder waits one lease TTL
//!    before it issues: the old holder's fence has closed by then whatever
//!    ended its lease.
//!
//! The argument, and what it assumes, is in the repository's
//! `docs/distributed.md`.
//!
//! # Layout
//!
//! - [`Coordinator`], [`LeaseSource`] (`coordinator.rs`): the seam, what a
//!   coordinator must answer and guarantee.
//! - [`LeasedGenerator`] (`leased.rs`): the handle: start, mint, readiness,
//!   metrics, shutdown.
//! - [`Holder`] (`holder.rs`): the fenced slot the session fills and every
//!   mint goes through (a static identity's too, as [`Holder::fixed`]);
//!   [`Fence`] (`fence.rs`) is its deadline, on a [`LeaseClock`]
//!   (`clock.rs`).
//! - `session/`: the session's lifecycle (`mod.rs`: claim again until
//!   stopped, release), a tenure from lease to hand-over wait
//!   (`tenure.rs`), and holding an identity as a small state machine
//!   (`hold.rs`: handing over, issuing, fenced); `claim.rs`: which
//!   identities a session may claim and in which order; `renewal.rs`: when
//!   a renewal counts; `backoff.rs`: the jittered backoff of its retries.
//! - [`LeaseStore`] (`store.rs`, over `bridge.rs`): the core's synchronous
//!   `ReservationStore` on the coordinator, served by a thread of its own.
//! - [`LeaseConfig`] (`config.rs`), [`LeaseError`] (`error.rs`),
//!   [`LeaseMetrics`] (`status.rs`).
#![deny(missing_docs)]

/// Whether planted defect `$plant` is on (always `false` without the
/// `plant` feature).
macro_rules! planted {
    ($plant:ident) => {{
        #[cfg(feature = "plant")]
        {
            crate::plant::on(crate::plant::Plant::$plant)
        }
        #[cfg(not(feature = "plant"))]
        {
            false
        }
    }};
}

mod backoff;
mod bridge;
mod claim;
mod clock;
mod config;
mod coordinator;
mod error;
mod fence;
mod holder;
mod leased;
#[cfg(feature = "plant")]
pub mod plant;
mod redact;
mod renewal;
mod session;
mod status;
mod store;

pub use bridge::{MarkIo, mark_thread};
pub use clock::{ClockSources, LeaseClock, RECHECK_MS, SuspendAwareClock, SystemLeaseClock};
pub use config::{
    ConfigError, DEFAULT_LEASE_TTL, GeneratorFactory, LeaseConfig, LeaseSource, MAX_LEASE_TTL,
    MIN_LEASE_TTL, default_generator, fence_margin,
};
pub use coordinator::{
    Background, Census, Claimant, Claimed, Confirmation, Coordinator, Granted, LeaseId, Pool,
    Previous, Renewal,
};
pub use error::{LeaseError, Source};
pub use fence::Fence;
pub use holder::{Holder, MintError, PendingMint};
pub use leased::LeasedGenerator;
pub use redact::{percent_decode, redact};
pub use renewal::{KeepAlive, Verdict, judge};
pub use snowmint::Identity;
pub use status::{LeaseMetrics, LeaseState, ServerVersion, SharedStatus, update};
pub use store::{LeaseStore, raises};
