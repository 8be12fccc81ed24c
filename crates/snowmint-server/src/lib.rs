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

pub mod admission;
mod api;
pub mod auth;
mod edge;
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
pub mod origin;
mod page;
pub mod tls;

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
pub use auth::ApiToken;
pub use edge::{MAX_HEADER_BYTES, MAX_URI_BYTES};
pub use error::{ApiError, ErrorBody};
pub use generator::StaticError;
pub use http::Limits;
pub use identity::{IdentitySource, StartError};
pub use metrics::Metrics;
pub use minter::{Identity, MintError, Minter};
pub use origin::Origins;
pub use tls::{TlsError, TlsFiles};

/// Options of `snowmint serve`.
///
/// `#[non_exhaustive]`: build it with [`Config::default`] and set fields, so
/// new options (etcd TLS, ...) do not break callers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// A second listener for `/healthz`, `/readyz` and `/metrics` (which
    /// then leaves the public one); `None`: all on `listen`.
    pub admin_listen: Option<SocketAddr>,
    /// The file holding the bearer token minting and `/metrics` need;
    /// `None`: no token (a trusted network).
    pub api_token_file: Option<PathBuf>,
    /// Origins (`https://app.example.com`) whose pages may mint from their
    /// visitors' browsers; every other cross-site mint is refused (403).
    pub cors_origins: Vec<String>,
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
    /// (`https://` with `tls`; the `snowmint` binary's; scripts and tests
    /// read it).
    pub announce: bool,
    /// Serve HTTPS with this certificate and key (`--tls-cert`,
    /// `--tls-key`); `None`: plain HTTP.
    pub tls: Option<TlsFiles>,
    /// TLS to etcd: the CA that signed etcd's certificate (`--etcd-ca`);
    /// the endpoints must then be `https://` URLs.
    pub etcd_ca: Option<std::path::PathBuf>,
    /// TLS to etcd: this instance's client certificate and key
    /// (`--etcd-cert`, `--etcd-key`), for an etcd with `--client-cert-auth`.
    pub etcd_client_cert: Option<TlsFiles>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            listen: DEFAULT_LISTEN,
            admin_listen: None,
            api_token_file: None,
            cors_origins: Vec::new(),
            identity: Identity::default(),
            state_dir: default_state_dir(),
            etcd_endpoints: Vec::new(),
            lease_ttl: DEFAULT_LEASE_TTL,
            etcd_prefix: DEFAULT_ETCD_PREFIX.to_owned(),
            limits: Limits::default(),
            client_quota: None,
            worker_from_hostname: false,
            announce: false,
            tls: None,
            etcd_ca: None,
            etcd_client_cert: None,
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

    /// The settings' own faults, found without touching anything but the
    /// files they name (no state directory, no etcd, no socket): a hostname
    /// without an ordinal, an invalid etcd setting (TLS files included),
    /// `--etcd` in a build without the `etcd` feature, HTTPS files that
    /// cannot be used, a token file that cannot be read or is empty, a
    /// `--cors-origin` that is not an origin, the admin listener on the
    /// public address. [`serve`] checks again; a binary calls it first so
    /// that a bad flag is reported before it binds its listener.
    pub fn check(&self) -> Result<(), StartError> {
        if let Some(tls) = &self.tls {
            tls.server_config()?;
        }
        if let Some(path) = &self.api_token_file {
            ApiToken::load(path)?;
        }
        Origins::new(&self.cors_origins)?;
        if self.admin_listen == Some(self.listen) && self.listen.port() != 0 {
            return Err(StartError::AdminSameAsListen(self.listen));
        }
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
    /// The bearer token minting and `/metrics` need, if any.
    token: Option<ApiToken>,
    /// Origins allowed to mint cross-site.
    origins: Arc<Origins>,
    /// Whether health, readiness and metrics have a listener of their own
    /// (then `/metrics` is not on the public one).
    admin_listener: bool,
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
            token: None,
            origins: Arc::new(Origins::default()),
            admin_listener: false,
            now: Arc::new(snowmint::unix_now_ms),
        }
    }

    /// Requires `token` for minting and `/metrics`.
    #[must_use]
    pub fn with_token(mut self, token: ApiToken) -> AppState {
        self.token = Some(token);
        self
    }

    /// Lets pages on these origins mint from their visitors' browsers.
    #[must_use]
    pub fn with_origins(mut self, origins: Origins) -> AppState {
        self.origins = Arc::new(origins);
        self
    }

    /// Whether minting needs a token.
    pub fn requires_token(&self) -> bool {
        self.token.is_some()
    }

    /// Whether the public listener serves `/metrics` (not when an admin
    /// listener does).
    pub fn metrics_on_public(&self) -> bool {
        !self.admin_listener
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
/// with its reservation under `config.state_dir`, after its start write
/// (see [`Minter::start`]). Blocks on the disk: call it before serving, or
/// from a blocking thread.
pub fn static_state(config: &Config) -> Result<AppState, StaticError> {
    let generator = generator::static_generator(config.identity, &config.state_dir)?;
    minter::start_write(&generator);
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

/// The whole service as a router: the public listener's routes, with
/// `/metrics` unless the state says an admin listener serves it.
pub fn app(state: AppState) -> Router {
    let mint = post(api::mint).route_layer(middleware::from_fn_with_state(
        state.clone(),
        auth::require_token,
    ));
    let mut router = Router::new()
        .route("/", get(page::index))
        .route("/assets/{file}", get(page::asset))
        .route("/favicon.ico", get(page::favicon))
        .route("/api/v1/compose", with_cors(&state, get(api::compose)))
        .route("/api/v1/decode/{id}", with_cors(&state, get(api::decode)))
        .route("/api/v1/range", with_cors(&state, get(api::range)))
        .route("/api/v1/ids", with_cors(&state, mint))
        .route(
            "/api/v1/openapi.json",
            with_cors(
                &state,
                get(|| async {
                    (
                        [(axum::http::header::CONTENT_TYPE, "application/json")],
                        openapi::document(),
                    )
                }),
            ),
        )
        .route("/healthz", get(api::healthz))
        .route("/readyz", get(api::readyz));
    if state.metrics_on_public() {
        router = router.route("/metrics", metrics_route(&state));
    }
    let router = router.layer(middleware::from_fn_with_state(
        state.clone(),
        origin::refuse_cross_site,
    ));
    common_layers(router, state)
}

/// The admin listener's router: `/healthz`, `/readyz` and `/metrics`.
pub fn admin_app(state: AppState) -> Router {
    let router = Router::new()
        .route("/healthz", get(api::healthz))
        .route("/readyz", get(api::readyz))
        .route("/metrics", metrics_route(&state));
    common_layers(router, state)
}

/// `GET /metrics`, behind the token when one is configured.
fn metrics_route(state: &AppState) -> axum::routing::MethodRouter<AppState> {
    get(api::metrics).route_layer(middleware::from_fn_with_state(
        state.clone(),
        auth::require_token,
    ))
}

/// An API route, with CORS for the allowed origins (when there are any).
fn with_cors(
    state: &AppState,
    route: axum::routing::MethodRouter<AppState>,
) -> axum::routing::MethodRouter<AppState> {
    match state.origins.cors_layer() {
        // The layer answers every OPTIONS request itself (the preflight);
        // the route needs one, or the router's 405 would come first.
        Some(cors) => route
            .options(|| async { StatusCode::NO_CONTENT })
            .layer(cors),
        None => route,
    }
}

/// What both listeners' routers share, innermost first: JSON 404 and 405,
/// request accounting (413, the request timeout, metrics), debug spans,
/// panics as JSON 500, and outermost the edge (head limits, security
/// headers, the error shape, the access log).
fn common_layers(router: Router<AppState>, state: AppState) -> Router {
    router
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
        .layer(middleware::from_fn(edge::edge))
        .with_state(state)
}

/// The route pattern a request matched, as a `&'static str` label (for
/// metrics and the access log; never the raw path).
pub(crate) fn route_label(request: &Request) -> &'static str {
    request
        .extensions()
        .get::<MatchedPath>()
        .and_then(|m| ROUTES.iter().copied().find(|r| *r == m.as_str()))
        .unwrap_or("unmatched")
}

/// The method as a `&'static str` label.
pub(crate) fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    }
}

/// Every request passes here once: a body over [`MAX_BODY_BYTES`] is
/// refused (413), a request is cut at [`REQUEST_TIMEOUT`] (503), both in the
/// API's error shape; and each answer is counted by route pattern, method
/// and status, and timed.
async fn track(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = route_label(&request);
    let method = method_label(request.method());
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
/// [`Config::identity_source`]), serves [`app`] on `listener` (and
/// [`admin_app`] on `config.admin_listen`, bound here) with
/// `config.limits` until `shutdown` resolves, then ends the identity
/// source: the reservation mark is lowered to what was issued and an etcd
/// lease is revoked, so the identity is free at once. In etcd mode it
/// serves (not ready) while the lease session looks for an identity. With
/// `config.api_token_file`, SIGHUP re-reads the token.
pub async fn serve(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    config.check()?;
    let tls = match &config.tls {
        Some(files) => Some(tokio_rustls::TlsAcceptor::from(
            files.server_config().map_err(StartError::from)?,
        )),
        None => None,
    };
    let token = config
        .api_token_file
        .as_ref()
        .map(ApiToken::load)
        .transpose()
        .map_err(StartError::from)?;
    let origins = Origins::new(&config.cors_origins).map_err(StartError::from)?;
    let admin = match config.admin_listen {
        Some(addr) => Some(
            TcpListener::bind(addr)
                .await
                .map_err(|source| StartError::AdminListen { addr, source })?,
        ),
        None => None,
    };
    let minter = Minter::start(&config).await?;
    if config.announce {
        announce(&config, &listener, admin.as_ref(), &minter);
    }
    let mut state = AppState::new(minter)
        .with_admission(admission_for(&config))
        .with_origins(origins);
    let mut reloader = None;
    if let Some(token) = token {
        reloader = Some(tokio::spawn(reload_on_sighup(token.clone())));
        state = state.with_token(token);
    }
    let served = serve_state(
        Listeners {
            public: listener,
            admin,
        },
        state,
        config.limits,
        tls,
        shutdown,
    )
    .await;
    if let Some(reloader) = reloader {
        reloader.abort();
    }
    served
}

/// Re-reads the token file on every SIGHUP; a failed read keeps the token
/// in force and says why (never what the file holds).
async fn reload_on_sighup(token: ApiToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hangups = match signal(SignalKind::hangup()) {
            Ok(hangups) => hangups,
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGHUP; the API token will not be re-read");
                return;
            }
        };
        while hangups.recv().await.is_some() {
            match token.reload() {
                Ok(()) => {
                    tracing::info!(path = %token.path().display(), "SIGHUP: API token re-read")
                }
                Err(e) => tracing::warn!(error = %e, "SIGHUP: the API token in force is kept"),
            }
        }
    }
    #[cfg(not(unix))]
    let _ = token;
}

/// The lines `snowmint serve` prints once its identity source has started:
/// the admin listener's first (when there is one), then the public one's,
/// which scripts wait for.
fn announce(config: &Config, listener: &TcpListener, admin: Option<&TcpListener>, minter: &Minter) {
    // With TLS both listeners speak HTTPS.
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    if let Some(admin) = admin {
        let addr = admin
            .local_addr()
            .ok()
            .or(config.admin_listen)
            .unwrap_or(config.listen);
        eprintln!("snowmint: admin (health, readiness, metrics) on {scheme}://{addr}/");
    }
    let addr = listener.local_addr().unwrap_or(config.listen);
    match (config.identity_source(), minter.identity()) {
        (IdentitySource::Etcd, _) => eprintln!(
            "snowmint: serving the explorer on {scheme}://{addr}/ (identity leased from etcd {} under {}, lease TTL {} s)",
            config.etcd_endpoints.join(","),
            config.etcd_prefix,
            config.lease_ttl.as_secs()
        ),
        (_, identity) => eprintln!(
            "snowmint: serving the explorer on {scheme}://{addr}/ ({}, state in {})",
            identity.unwrap_or(config.identity),
            config.state_dir.display()
        ),
    }
}

/// The sockets [`run_with`] serves: the public one, and optionally one
/// for health, readiness and metrics.
#[derive(Debug)]
pub struct Listeners {
    /// The explorer, the API, and (without `admin`) `/metrics`.
    pub public: TcpListener,
    /// `/healthz`, `/readyz` and `/metrics` ([`admin_app`]).
    pub admin: Option<TcpListener>,
}

impl From<TcpListener> for Listeners {
    fn from(public: TcpListener) -> Listeners {
        Listeners {
            public,
            admin: None,
        }
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

/// Serves [`app`] on the public listener, and [`admin_app`] on the admin
/// one if any, until `shutdown` resolves (see [`http`] for the connection
/// limit, the timeouts and the shutdown deadline, which each listener
/// keeps), then ends the state's identity source ([`Minter::shutdown`]).
pub async fn run_with(
    listeners: impl Into<Listeners>,
    state: AppState,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    serve_state(listeners.into(), state, limits, None, shutdown).await
}

/// [`run_with`], over TLS when `tls` is given (on both listeners).
async fn serve_state(
    listeners: Listeners,
    mut state: AppState,
    limits: Limits,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let Listeners { public, admin } = listeners;
    state.admin_listener = admin.is_some();
    let minter = Arc::clone(&state.minter);
    if let Ok(addr) = public.local_addr() {
        tracing::info!(%addr, identity = ?minter.identity(), "listening");
    }
    let metrics = Arc::clone(&state.metrics);
    // One shutdown for both loops.
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let until_stopped = |mut stopped: tokio::sync::watch::Receiver<bool>| async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    };
    let admin = admin.map(|listener| {
        if let Ok(addr) = listener.local_addr() {
            tracing::info!(%addr, "admin listening");
        }
        http::serve(
            listener,
            admin_app(state.clone()),
            limits,
            tls.clone(),
            Arc::clone(&metrics),
            until_stopped(stopped.clone()),
        )
    });
    let public = http::serve(
        public,
        app(state),
        limits,
        tls,
        Arc::clone(&metrics),
        until_stopped(stopped),
    );
    // Renewals ahead of need and probes of an idle store, so that `/readyz`
    // finds a store that stopped taking writes within one window.
    let keeper = tokio::spawn({
        let minter = Arc::clone(&minter);
        async move {
            let mut every = tokio::time::interval(minter::KEEP_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                minter.renew_in_background_if_due();
            }
        }
    });
    let stopping = Arc::new(std::sync::OnceLock::new());
    tokio::join!(
        {
            let stopping = Arc::clone(&stopping);
            async move {
                shutdown.await;
                let _ = stopping.set(Instant::now());
                let _ = stop.send(true);
            }
        },
        public,
        async move {
            if let Some(admin) = admin {
                admin.await;
            }
        },
    );
    keeper.abort();
    // The mark is what keeps a restart with the clock set back from
    // reissuing: lower it to what was issued; then free a leased identity.
    // `--shutdown-timeout` covers this too: what is left of it, at least a
    // second, so a stuck store cannot hold the process.
    let spent = stopping.get().map_or(Duration::ZERO, Instant::elapsed);
    let left = limits
        .shutdown_timeout
        .saturating_sub(spent)
        .max(Duration::from_secs(1));
    tracing::info!(deadline = ?left, "stopped serving; persisting the reservation");
    match tokio::time::timeout(left, minter.shutdown()).await {
        Ok(persisted) => persisted.map_err(RunError::Persist),
        Err(_) => Err(RunError::Persist(generator::StoreError::new(
            snowmint::StoreErrorKind::Timeout,
            format!(
                "the reservation store did not answer within the shutdown timeout \
                 ({} ms left of it); the stored mark stays where it was, at or above \
                 every issued ID",
                left.as_millis()
            ),
        ))),
    }
}
