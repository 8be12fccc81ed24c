//! The snowmint network service: the explorer page, the JSON API and the
//! worker identity it mints as.
//!
//! # Layout
//!
//! - [`serve`] is `snowmint serve`: it starts the configured identity
//!   source, serves on a listener until a shutdown future resolves, then
//!   ends the identity source (the reservation saved, an etcd lease
//!   revoked). [`app`] builds the axum [`Router`](axum::Router) (tests drive it with
//!   `tower::ServiceExt::oneshot`, no socket); [`run`] serves a ready
//!   [`AppState`].
//! - `api`: the JSON routes; [`ApiError`] is the one error shape,
//!   `{"error": "...", "field": "..." | null}`.
//! - `page`: the explorer page, server-rendered, with its CSS and JS embedded
//!   in the binary; English and Norwegian Bokmål.
//! - [`identity`]: the identity sources (static, StatefulSet ordinal, etcd
//!   behind the `etcd` feature); [`minter`]: the [`Minter`] the routes mint
//!   from, whatever the source, with one lifecycle (start, ready, shutdown).
//!   The lease itself (claim, fence, hand-over) is the `snowmint-etcd`
//!   crate's; `etcd` only wires it in.
//! - [`metrics`]: Prometheus metrics.
//! - [`http`]: the accept loop [`run_with`] serves through: connection
//!   limit, header and idle timeouts, the shutdown deadline, the TLS
//!   handshake; [`tls`]: the certificate and key HTTPS is served with.
//! - [`admission`]: the lane mints wait in, bounded by what the generator
//!   can issue within its wait bound, and per-client quotas.
//! - [`auth`]: the bearer token of `--api-token-file` (minting, metrics);
//!   [`origin`]: cross-site refusal and CORS (`--cors-origin`); `edge`:
//!   what every response passes last (head limits, security headers, the
//!   error shape, the access log).
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
mod mint;
mod net;
mod routes;
mod serve;

pub(crate) use guard::edge;
pub use guard::{admission, origin, token as auth};
pub use mint::{generator, hostname, identity, minter};
pub use net::{accept as http, tls};
pub use routes::metrics;
#[cfg(feature = "etcd")]
pub use routes::metrics::etcd;
pub(crate) use routes::page::i18n;
pub(crate) use routes::{api, error, openapi, page};

pub use admission::Admission;
pub use app::{MAX_BODY_BYTES, REQUEST_TIMEOUT, admin_app, app};
pub use auth::ApiToken;
pub use config::{
    Config, DEFAULT_ETCD_PREFIX, DEFAULT_LEASE_TTL, DEFAULT_LISTEN, default_state_dir,
};
pub use edge::{MAX_HEADER_BYTES, MAX_URI_BYTES};
pub use error::{ApiError, ErrorBody};
pub use generator::StaticError;
pub use http::Limits;
pub use identity::{IdentitySource, StartError};
pub use metrics::Metrics;
pub use minter::{Identity, MintError, Minter};
pub use origin::Origins;
pub use routes::state::{AppState, NowFn};
pub use serve::{Listeners, RunError, admission_for, run, run_with, serve, static_state};
pub use tls::{TlsError, TlsFiles};
