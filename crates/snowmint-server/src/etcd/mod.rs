//! Distributed mode: the worker identity leased from etcd (feature `etcd`).
//!
//! [`EtcdIdentity::spawn`] runs a lease session on a runtime of its own:
//!
//! 1. grant a lease with the TTL of `--lease-ttl`;
//! 2. claim the first free identity: one range read of
//!    `<prefix>/identities/` picks candidates, then a transaction creates
//!    `<prefix>/identities/<dc>/<worker>` only if it is absent, bound to the
//!    lease;
//! 3. build the identity's generator over an [`EtcdStore`], which loads the
//!    identity's "reserved until" mark (left by earlier holders) so nothing
//!    at or below it is issued again, and install it in the [`Minter`]
//!    with a [`Fence`](crate::Fence);
//! 4. keep the lease alive; each answer moves the fence to
//!    *(when that keep-alive was sent) + TTL - margin*. When the fence
//!    closes the minter stops issuing (mint and `/readyz` answer 503); the
//!    session keeps renewing, re-installs if the lease survived, or claims
//!    again (possibly another identity) if it did not. Each renewal is
//!    followed by a read of the identity key, and a reservation write
//!    refused for it wakes the session at once: a key deleted or taken over
//!    while the lease lives also fences the minter and makes it claim again;
//! 5. on [`EtcdIdentity::shutdown`], stop issuing and revoke the lease: the
//!    identity is free at once.
//!
//! See `docs/distributed.md` for why a fenced instance cannot overlap the
//! next holder of its identity.

mod bridge;
pub mod keys;
mod metrics;
mod ops;
mod options;
mod session;
mod status;
mod store;

pub use keys::{DEFAULT_PREFIX, Keys};
pub use metrics::EtcdCollector;
pub use ops::EtcdError;
pub use options::{
    DEFAULT_LEASE_TTL, EtcdOptions, GeneratorFactory, MAX_LEASE_TTL, MIN_LEASE_TTL, OptionsError,
    default_generator, fence_margin,
};
pub use session::{EtcdIdentity, SpawnError};
pub use status::{EtcdStatus, LeaseState, StatusReader};
pub use store::EtcdStore;

use std::sync::Arc;

use crate::{AppState, Config, Metrics, Minter};

impl EtcdOptions {
    /// The options `snowmint serve` passes: endpoints, prefix and lease TTL
    /// from `config`, the other defaults of [`EtcdOptions::new`].
    pub fn from_config(config: &Config) -> EtcdOptions {
        let mut options = EtcdOptions::new(config.etcd_endpoints.clone());
        options.prefix = config.etcd_prefix.clone();
        options.lease_ttl = config.lease_ttl;
        options
    }
}

/// Distributed mode for `snowmint serve --etcd`: an empty minter that a
/// lease session (started here, on the current tokio runtime) fills, and
/// the app state over it, whose `/metrics` include the session's.
///
/// The state is not ready until an identity is held. Call
/// [`EtcdIdentity::shutdown`] after the server stops, to free the identity.
pub fn etcd_state(config: &Config) -> Result<(AppState, EtcdIdentity), SpawnError> {
    let minter = Minter::new();
    let session = EtcdIdentity::spawn(EtcdOptions::from_config(config), Arc::clone(&minter))?;
    let mut metrics = Metrics::new(Arc::clone(&minter));
    metrics.register_collector(Box::new(EtcdCollector(session.status_reader())));
    let state = AppState::new(minter)
        .with_metrics(Arc::new(metrics))
        .with_admission(crate::admission_for(config));
    Ok((state, session))
}

#[cfg(test)]
mod tests;
