//! The snowmint network service: the explorer page, the JSON API and the
//! worker identity it mints as.
//!
//! # Layout
//!
//! - [`serve`] is `snowmint serve`: it starts the configured identity
//!   source, serves on a listener until a shutdown future resolves, then
//!   ends the identity source (the reservation saved, an etcd lease
//!   revoked). [`app`] builds the axum [`Router`] (tests drive it with
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
//!   limit, header and idle timeouts, the shutdown deadline.
//! - [`admission`]: the lane mints wait in, bounded by what the generator
//!   can issue within its wait bound, and per-client quotas.
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

pub mod admission;
mod api;
mod error;
#[cfg(feature = "etcd")]
pub mod etcd;
pub mod generator;
pub mod hostname;
pub mod http;
mod i18n;
pub mod identity;
pub mod metrics;
pub mod minter;
mod openapi;
mod page;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::{DefaultOnFailure, TraceLayer};

pub use admission::Admission;
pub use error::{ApiError, ErrorBody};
pub use generator::StaticError;
pub use http::Limits;
pub use identity::{IdentitySource, StartError};
pub use metrics::Metrics;
pub use minter::{Identity, MintError, Minter};

/// Options of `snowmint serve`.
///
/// `#[non_exhaustive]`: build it with [`Config::default`] and set fields, so
/// new options (etcd TLS, ...) do not break callers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// The static identity (ignored when `etcd_endpoints` is set or
    /// `worker_from_hostname` is).
    pub identity: Identity,
    /// Where the static identity's reservation file is kept.
    pub state_dir: PathBuf,
    /// etcd endpoints; empty means the static identity.
    pub etcd_endpoints: Vec<String>,
    /// TTL of an etcd identity lease.
    pub lease_ttl: Duration,
    /// Key prefix of the identities in etcd (several clusters can share one etcd).
    pub etcd_prefix: String,
    /// Connection limit and timeouts.
    pub limits: Limits,
    /// Most IDs per second one client IP may mint; `None`: no quota.
    pub client_quota: Option<std::num::NonZeroU32>,
    /// The static identity from the StatefulSet ordinal in the hostname
    /// instead of `identity`.
    pub worker_from_hostname: bool,
    /// [`serve`] prints one line to stderr once the identity source has
    /// started: `snowmint: serving the explorer on http://ADDR/ (...)`
    /// (the `snowmint` binary's; scripts and tests read it).
    pub announce: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            listen: DEFAULT_LISTEN,
            identity: Identity::default(),
            state_dir: default_state_dir(),
            etcd_endpoints: Vec::new(),
            lease_ttl: DEFAULT_LEASE_TTL,
            etcd_prefix: DEFAULT_ETCD_PREFIX.to_owned(),
            limits: Limits::default(),
            client_quota: None,
            worker_from_hostname: false,
            announce: false,
        }
    }
}

/// The etcd lease's TTL unless told otherwise: snowmint-etcd's own
/// [`DEFAULT_LEASE_TTL`](snowmint_etcd::DEFAULT_LEASE_TTL) (feature `etcd`).
#[cfg(feature = "etcd")]
pub const DEFAULT_LEASE_TTL: Duration = snowmint_etcd::DEFAULT_LEASE_TTL;
/// The etcd lease's TTL unless told otherwise. This build has no `etcd`
/// feature, so it cannot lease and does not link snowmint-etcd; the value
/// repeats that crate's for `--help`.
#[cfg(not(feature = "etcd"))]
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(10);
/// The etcd key prefix unless told otherwise; see [`DEFAULT_LEASE_TTL`].
#[cfg(feature = "etcd")]
pub const DEFAULT_ETCD_PREFIX: &str = snowmint_etcd::DEFAULT_PREFIX;
/// The etcd key prefix unless told otherwise; see [`DEFAULT_LEASE_TTL`].
#[cfg(not(feature = "etcd"))]
pub const DEFAULT_ETCD_PREFIX: &str = "/snowmint";

/// Where `snowmint serve` listens unless told otherwise: 127.0.0.1:8080.
pub const DEFAULT_LISTEN: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(
    std::net::Ipv4Addr::LOCALHOST,
    8080,
));

impl Config {
    /// The identity source this configuration asks for: etcd when endpoints
    /// are given, else the hostname's ordinal when asked, else the static
    /// `identity`.
    pub fn identity_source(&self) -> IdentitySource {
        if !self.etcd_endpoints.is_empty() {
            IdentitySource::Etcd
        } else if self.worker_from_hostname {
            IdentitySource::FromHostname
        } else {
            IdentitySource::Static(self.identity)
        }
    }

    /// The settings' own faults, found without touching anything (no state
    /// directory, no etcd, no socket): a hostname without an ordinal, an
    /// invalid etcd setting, `--etcd` in a build without the `etcd`
    /// feature. [`serve`] checks again; a binary calls it first so that a
    /// bad flag is reported before it binds its listener.
    pub fn check(&self) -> Result<(), StartError> {
        match self.identity_source() {
            IdentitySource::Static(_) => Ok(()),
            IdentitySource::FromHostname => {
                hostname::identity_from_hostname()?;
                Ok(())
            }
            #[cfg(feature = "etcd")]
            IdentitySource::Etcd => etcd::config_of(self)
                .validate()
                .map_err(|e| StartError::Etcd(e.into())),
            #[cfg(not(feature = "etcd"))]
            IdentitySource::Etcd => Err(StartError::EtcdNotBuilt),
        }
    }
}

/// `$XDG_STATE_HOME/snowmint`, else `~/.local/state/snowmint`, else
/// `./.snowmint-state`.
pub fn default_state_dir() -> PathBuf {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = non_empty("XDG_STATE_HOME") {
        PathBuf::from(dir).join("snowmint")
    } else if let Some(home) = non_empty("HOME") {
        PathBuf::from(home).join(".local/state/snowmint")
    } else {
        PathBuf::from(".snowmint-state")
    }
}

/// A source of Unix milliseconds (injected so tests can fix "now").
pub type NowFn = Arc<dyn Fn() -> u64 + Send + Sync>;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The slot IDs are minted from.
    pub minter: Arc<Minter>,
    /// Prometheus metrics.
    pub metrics: Arc<Metrics>,
    /// The mint lane and the client quotas.
    pub admission: Arc<Admission>,
    now: NowFn,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("minter", &self.minter)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// State over `minter`, with the wall clock for "now".
    pub fn new(minter: Arc<Minter>) -> AppState {
        AppState {
            metrics: Arc::new(Metrics::new(Arc::clone(&minter))),
            admission: Arc::new(Admission::default()),
            minter,
            now: Arc::new(snowmint::unix_now_ms),
        }
    }

    /// Replaces the metrics (to add collectors, such as the etcd session's).
    #[must_use]
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> AppState {
        self.metrics = metrics;
        self
    }

    /// Replaces the admission control (to set a client quota).
    #[must_use]
    pub fn with_admission(mut self, admission: Admission) -> AppState {
        self.admission = Arc::new(admission);
        self
    }

    /// Replaces the clock compose uses for a missing timestamp.
    #[must_use]
    pub fn with_now(mut self, now: NowFn) -> AppState {
        self.now = now;
        self
    }

    /// Unix milliseconds now.
    pub fn now_ms(&self) -> u64 {
        (self.now)()
    }
}

/// The static identity: a generator for `config.identity`
/// with its reservation under `config.state_dir`.
pub fn static_state(config: &Config) -> Result<AppState, StaticError> {
    let generator = generator::static_generator(config.identity, &config.state_dir)?;
    Ok(AppState::new(Minter::from_generator(generator)).with_admission(admission_for(config)))
}

/// The admission control `config` asks for.
pub fn admission_for(config: &Config) -> Admission {
    match config.client_quota {
        Some(quota) => Admission::default().with_client_quota(quota),
        None => Admission::default(),
    }
}

/// The API takes no request body; anything longer is refused (413).
pub const MAX_BODY_BYTES: u64 = 1024;

/// A request still unanswered after this long is answered 503 (every
/// route's own waits are bounded well below it; this is the backstop).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Routes that exist, as `&'static str` metric labels.
const ROUTES: &[&str] = &[
    "/",
    "/assets/{file}",
    "/favicon.ico",
    "/api/v1/compose",
    "/api/v1/decode/{id}",
    "/api/v1/range",
    "/api/v1/ids",
    "/api/v1/openapi.json",
    "/healthz",
    "/readyz",
    "/metrics",
];

/// The whole service as a router.
pub fn app(state: AppState) -> Router {
    Router::new()
        .route("/", get(page::index))
        .route("/assets/{file}", get(page::asset))
        .route("/favicon.ico", get(page::favicon))
        .route("/api/v1/compose", get(api::compose))
        .route("/api/v1/decode/{id}", get(api::decode))
        .route("/api/v1/range", get(api::range))
        .route("/api/v1/ids", post(api::mint))
        .route(
            "/api/v1/openapi.json",
            get(|| async {
                (
                    [(axum::http::header::CONTENT_TYPE, "application/json")],
                    openapi::document(),
                )
            }),
        )
        .route("/healthz", get(api::healthz))
        .route("/readyz", get(api::readyz))
        .route("/metrics", get(api::metrics))
        .fallback(api::not_found)
        .method_not_allowed_fallback(api::method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), track))
        // Per-request spans at debug level. A 5xx is not logged here: under a
        // flood of 503s that would be a log line (a blocking write) per
        // request; refusals are logged, throttled, where they are decided.
        .layer(
            TraceLayer::new_for_http()
                .on_failure(DefaultOnFailure::new().level(tracing::Level::DEBUG)),
        )
        .layer(CatchPanicLayer::custom(|_| {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, None, "internal error").into_response()
        }))
        .with_state(state)
}

/// Every request passes here once: a body over [`MAX_BODY_BYTES`] is
/// refused (413), a request is cut at [`REQUEST_TIMEOUT`] (503), both in the
/// API's error shape; and each answer is counted by route pattern, method
/// and status, and timed.
async fn track(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .and_then(|m| ROUTES.iter().copied().find(|r| *r == m.as_str()))
        .unwrap_or("unmatched");
    let method = match *request.method() {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    };
    let response = match body_length(&request) {
        Some(n) if n > MAX_BODY_BYTES => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            format!(
                "request bodies are limited to {MAX_BODY_BYTES} bytes (the API takes none), got {n}"
            ),
        )
        .into_response(),
        _ => match tokio::time::timeout(REQUEST_TIMEOUT, next.run(request)).await {
            Ok(response) => response,
            Err(_) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                format!(
                    "the request was not answered within {} s; try again",
                    REQUEST_TIMEOUT.as_secs()
                ),
            )
            .retry_after(1)
            .into_response(),
        },
    };
    state
        .metrics
        .observe_request(route, method, response.status().as_u16(), started.elapsed());
    response
}

/// The declared `Content-Length`, if any.
fn body_length(request: &Request) -> Option<u64> {
    request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// Why [`serve`] or [`run`] stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The identity source could not start.
    #[error(transparent)]
    Start(#[from] StartError),
    /// The reservation could not be persisted at shutdown.
    #[error("cannot persist the reservation at shutdown: {0}")]
    Persist(generator::StoreError),
}

/// `snowmint serve`: starts the identity source `config` asks for (see
/// [`Config::identity_source`]), serves [`app`] on `listener` with
/// `config.limits` until `shutdown` resolves, then ends the identity
/// source: the reservation mark is lowered to what was issued and an etcd
/// lease is revoked, so the identity is free at once. In etcd mode it
/// serves (not ready) while the lease session looks for an identity.
pub async fn serve(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    config.check()?;
    let minter = Minter::start(&config).await?;
    if config.announce {
        announce(&config, &listener, &minter);
    }
    let state = AppState::new(minter).with_admission(admission_for(&config));
    run_with(listener, state, config.limits, shutdown).await
}

/// The line `snowmint serve` prints once its identity source has started.
fn announce(config: &Config, listener: &TcpListener, minter: &Minter) {
    let addr = listener.local_addr().unwrap_or(config.listen);
    match (config.identity_source(), minter.identity()) {
        (IdentitySource::Etcd, _) => eprintln!(
            "snowmint: serving the explorer on http://{addr}/ (identity leased from etcd {} under {}, lease TTL {} s)",
            config.etcd_endpoints.join(","),
            config.etcd_prefix,
            config.lease_ttl.as_secs()
        ),
        (_, identity) => eprintln!(
            "snowmint: serving the explorer on http://{addr}/ ({}, state in {})",
            identity.unwrap_or(config.identity),
            config.state_dir.display()
        ),
    }
}

/// Serves [`app`] on `listener` with the default [`Limits`]; see
/// [`run_with`].
pub async fn run(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    run_with(listener, state, Limits::default(), shutdown).await
}

/// Serves [`app`] on `listener` until `shutdown` resolves (see [`http`] for
/// the connection limit, the timeouts and the shutdown deadline), then
/// ends the state's identity source ([`Minter::shutdown`]).
pub async fn run_with(
    listener: TcpListener,
    state: AppState,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let minter = Arc::clone(&state.minter);
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, identity = ?minter.identity(), "listening");
    }
    let metrics = Arc::clone(&state.metrics);
    http::serve(listener, app(state), limits, metrics, shutdown).await;
    // The mark is what keeps a restart with the clock set back from
    // reissuing: lower it to what was issued; then free a leased identity.
    tracing::info!("stopped serving; persisting the reservation");
    minter.shutdown().await.map_err(RunError::Persist)
}
