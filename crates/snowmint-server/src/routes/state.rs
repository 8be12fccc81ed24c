//! What every handler shares: [`AppState`].

use std::sync::Arc;

// The one import from `routes` up to `guard` (DESIGN.md explains it,
// under "The layout: a request's way in"): plain values, the guards'
// settings, kept here so that `AppState::with_token` and `with_origins`
// configure a whole router. No guard middleware is reached from a route.
use crate::guard::origin::Origins;
use crate::guard::token::ApiToken;
use crate::mint::lane::Admission;
use crate::mint::minter::Minter;
use crate::routes::metrics::Metrics;

/// A source of Unix milliseconds (injected so tests can fix "now").
pub type NowFn = Arc<dyn Fn() -> u64 + Send + Sync>;

/// What every handler shares.
///
/// One `Arc`: a handler that takes the state, and the router for each
/// request, clone it, and one shared count is all such a clone touches.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

/// What [`AppState`] holds (public only so that `AppState` can deref to it;
/// nothing outside the crate can name it or reach its fields).
#[derive(Clone)]
pub struct Shared {
    /// The slot IDs are minted from.
    pub(crate) minter: Arc<Minter>,
    /// Prometheus metrics.
    pub(crate) metrics: Arc<Metrics>,
    /// The mint lane and the client quotas.
    pub(crate) admission: Arc<Admission>,
    /// The bearer token minting and `/metrics` need, if any.
    pub(crate) token: Option<ApiToken>,
    /// Origins allowed to mint cross-site.
    pub(crate) origins: Arc<Origins>,
    /// Whether health, readiness and metrics have a listener of their own
    /// (then `/metrics` is not on the public one).
    pub(crate) admin_listener: bool,
    now: NowFn,
}

#[doc(hidden)]
impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
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
        AppState(Arc::new(Shared {
            metrics: Arc::new(Metrics::new(Arc::clone(&minter))),
            admission: Arc::new(Admission::default()),
            minter,
            token: None,
            origins: Arc::new(Origins::default()),
            admin_listener: false,
            now: Arc::new(snowmint::unix_now_ms),
        }))
    }

    /// The same state behind a count of its own, for one connection: its
    /// requests each clone the state (a handler takes it by value), and a
    /// count that every worker's requests share moves between the cores at
    /// each clone. This copies the handles once, when the connection opens.
    pub(crate) fn for_connection(&self) -> AppState {
        AppState(Arc::new(Shared::clone(&self.0)))
    }

    /// The state to change (copied first if another clone shares it).
    fn edit(&mut self) -> &mut Shared {
        Arc::make_mut(&mut self.0)
    }

    /// Requires `token` for minting and `/metrics`.
    #[must_use]
    pub fn with_token(mut self, token: ApiToken) -> AppState {
        self.edit().token = Some(token);
        self
    }

    /// Lets pages on these origins mint from their visitors' browsers.
    #[must_use]
    pub fn with_origins(mut self, origins: Origins) -> AppState {
        self.edit().origins = Arc::new(origins);
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

    /// Replaces the admission control (to set a client quota).
    #[must_use]
    pub(crate) fn with_admission(mut self, admission: Admission) -> AppState {
        self.edit().admission = Arc::new(admission);
        self
    }

    /// Replaces the clock compose uses for a missing timestamp.
    #[must_use]
    pub fn with_now(mut self, now: NowFn) -> AppState {
        self.edit().now = now;
        self
    }

    /// Says whether health, readiness and metrics have a listener of their
    /// own (then `/metrics` is not on the public one).
    #[must_use]
    pub(crate) fn with_admin_listener(mut self, admin_listener: bool) -> AppState {
        self.edit().admin_listener = admin_listener;
        self
    }

    /// Unix milliseconds now.
    pub fn now_ms(&self) -> u64 {
        (self.now)()
    }
}
