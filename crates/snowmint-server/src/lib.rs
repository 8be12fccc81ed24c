//! The snowmint network service: the explorer page, the JSON API and the
//! worker identity it mints as.
//!
//! # Layout
//!
//! The folders follow a request's way in; each imports only from the ones
//! below it (DESIGN.md draws it):
//!
//! - `serve`: the lifecycle. [`serve`] is `snowmint serve`: it checks the
//!   [`Config`] (`config`; its [`IdentitySource`] is one variant per mode,
//!   each with that mode's settings only), starts the identity source,
//!   serves both listeners until a shutdown future resolves, then ends the
//!   identity source (the reservation saved, a lease released);
//!   [`run`] and [`run_with`] serve a ready [`AppState`]. SIGHUP re-reads
//!   the token.
//! - `app`: [`app`] and [`admin_app`] build each listener's [`App`]: the
//!   axum router inside the layers every request passes (tests drive it
//!   with `tower::ServiceExt::oneshot`, no socket).
//! - `net`: the accept loop: connection limit, header and idle timeouts,
//!   the shutdown deadline ([`Limits`]), the TLS handshake ([`TlsFiles`]).
//! - `guard`: what a request passes before a route: the edge (head limits
//!   [`MAX_URI_BYTES`] and [`MAX_HEADER_BYTES`], security headers, the
//!   error shape, the access log), the bearer token ([`ApiToken`]),
//!   cross-site refusal and CORS ([`Origins`]).
//! - `routes`: the JSON API (one error shape, `{"error": "...", "field":
//!   "..." | null}`), the explorer page (server-rendered, English and
//!   Norwegian Bokmål), the OpenAPI document, the metrics.
//! - `mint`: the identity sources (static, StatefulSet ordinal, etcd
//!   behind the `etcd` feature, PostgreSQL and MySQL behind `db`), the
//!   [`Minter`] the routes mint from whatever the source, and the mint lane
//!   with the per-client quotas. Every mint goes through the lease crate's
//!   one mint path (`snowmint_lease::Holder`, a static identity's too); the
//!   lease itself (claim, fence, hand-over) is `snowmint-lease`'s, over the
//!   coordinator crates `snowmint-etcd` and `snowmint-db`.
//!
//! ```no_run
//! # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
//! let config = snowmint_server::Config::default();
//! let listener = tokio::net::TcpListener::bind(config.listen).await?;
//! snowmint_server::serve(config, listener, async {
//!     let _ = tokio::signal::ctrl_c().await;
//! })
//! .await?;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod app;
mod config;
mod guard;
mod logs;
mod mint;
mod net;
mod routes;
mod serve;

pub use app::{App, admin_app, app};
pub use config::{
    Config, DEFAULT_DB_TABLE, DEFAULT_ETCD_PREFIX, DEFAULT_LEASE_TTL, DEFAULT_LISTEN,
    DEFAULT_REDIS_LONGEST_TTL, DEFAULT_REDIS_PREFIX, DbKind, DbSettings, EtcdSettings,
    IdentitySource, LeaseSettings, RedisSettings, StartError, default_state_dir,
};
pub use guard::edge::{MAX_BODY_BYTES, MAX_HEADER_BYTES, MAX_URI_BYTES, REQUEST_TIMEOUT};
pub use guard::origin::{OriginError, Origins};
pub use guard::token::{ApiToken, TokenError};
pub use logs::{DEFAULT_LOG_BUFFER_LINES, LogError, LogFormat, LogGuard, LogOptions, init_logs};
pub use mint::generator::{StaticError, StoreError};
pub use mint::hostname::{HostnameError, identity_of_hostname};
pub use mint::minter::{Identity, MintError, Minter};
pub use net::accept::{
    DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_SHUTDOWN_TIMEOUT, Limits,
    default_max_connections,
};
pub use net::tls::{Flag as TlsFlag, TlsError, TlsFiles};
pub use routes::state::{AppState, NowFn};
pub use serve::{Listeners, RunError, run, run_with, serve, static_state};

/// Compiles the crate README's example as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctest;
