//! Where the worker identity comes from: one interface for every source.
//!
//! [`Config::identity_source`](crate::Config::identity_source) says which
//! source a configuration asks for; [`Minter::start`](crate::Minter::start)
//! starts it, [`Minter::ready`](crate::Minter::ready) says whether it can
//! issue now, and [`Minter::shutdown`](crate::Minter::shutdown) ends it.
//! [`serve`](crate::serve) runs that lifecycle around the HTTP server.

use crate::auth::TokenError;
use crate::generator::StaticError;
use crate::hostname::HostnameError;
use crate::minter::Identity;
use crate::origin::OriginError;

/// Which identity source a [`Config`](crate::Config) asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdentitySource {
    /// `--datacenter/--worker`: this identity, its reservation in the state
    /// directory.
    Static(Identity),
    /// `--worker-from-hostname`: the identity of the StatefulSet pod's
    /// ordinal (`NAME-N`), otherwise as [`Static`](IdentitySource::Static).
    FromHostname,
    /// `--etcd`: an identity leased from etcd (needs the `etcd` feature).
    Etcd,
}

/// Why [`serve`](crate::serve) could not start: a setting, the identity
/// source, or the admin listener. [`is_usage`](StartError::is_usage) tells
/// a bad setting from a failure of the machine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The hostname gives no identity.
    #[error(transparent)]
    Hostname(#[from] HostnameError),
    /// The static identity's state directory, lock or mark.
    #[error(transparent)]
    Static(#[from] StaticError),
    /// An invalid etcd setting, or the lease session's threads.
    #[cfg(feature = "etcd")]
    #[error(transparent)]
    Etcd(#[from] snowmint_etcd::EtcdError),
    /// The HTTPS certificate or key cannot be used.
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
    /// `--etcd` given to a build without the `etcd` feature.
    #[error(
        "--etcd needs a snowmint built with `--features etcd` \
         (cargo run --release --features etcd -- serve --etcd URL)"
    )]
    EtcdNotBuilt,
    /// `--api-token-file` cannot be read, is empty or holds more than a token.
    #[error(transparent)]
    Token(#[from] TokenError),
    /// A `--cors-origin` that is not an origin.
    #[error(transparent)]
    CorsOrigin(#[from] OriginError),
    /// `--admin-listen` is the public listener's address.
    #[error(
        "admin-listen must differ from listen (both {0}): the admin listener is a second socket"
    )]
    AdminSameAsListen(std::net::SocketAddr),
    /// The admin listener cannot be bound.
    #[error("cannot listen on {addr} (admin-listen): {source}")]
    AdminListen {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

impl StartError {
    /// Whether the configuration is at fault (a flag to fix: exit status 2)
    /// rather than the machine.
    pub fn is_usage(&self) -> bool {
        match self {
            StartError::Hostname(_)
            | StartError::EtcdNotBuilt
            | StartError::Tls(_)
            | StartError::Token(_)
            | StartError::CorsOrigin(_)
            | StartError::AdminSameAsListen(_) => true,
            #[cfg(feature = "etcd")]
            StartError::Etcd(snowmint_etcd::EtcdError::Config(_)) => true,
            _ => false,
        }
    }
}
