//! The router: both listeners' routes, and the layers every request
//! passes on its way in.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::Router;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::future::RouteFuture;
use axum::routing::{MethodRouter, get, post};
use tower::{Layer, Service};

use crate::guard::check::{Check, CheckLayer};
use crate::guard::edge::{Edge, EdgeLayer};
use crate::guard::origin::RefuseCrossSite;
use crate::guard::token::RequireToken;
use crate::routes::state::AppState;
use crate::routes::{ADMIN_ROUTES, PUBLIC_ROUTES_WITHOUT_METRICS, ROUTES, api, page};

/// One listener's whole service: the edge (see `guard::edge`), the
/// cross-site refusal on the public listener, then the router. A
/// `tower::Service` of requests; tests drive it with
/// `tower::ServiceExt::oneshot`, no socket.
///
/// The edge and the cross-site check wrap the router from outside, rather
/// than being layered onto every route with `Router::layer`: each layer the
/// router nests costs every request a clone of the boxed routes below it,
/// a `Oneshot` and a mapping of its answer. Both see every request the
/// routes and the fallbacks (404, 405) see, as before; the edge names the
/// route from the path itself (`routes::route_label`).
#[derive(Debug, Clone)]
pub struct App {
    service: Edge<Check<Dispatch, Option<RefuseCrossSite>>>,
    /// Whether a route reads the client's address (`ConnectInfo`): only a
    /// mint, against a client quota. Without one, the accept loop leaves
    /// the request's extensions empty, which spares it two allocations.
    needs_peer: bool,
}

impl Service<Request> for App {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.service.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        self.answer(request)
    }
}

impl App {
    /// The answer to `request`: [`Service::call`] without the
    /// `poll_ready` before it, which every layer here answers ready at
    /// once (the edge and the check ask the router, and an axum router is
    /// always ready). The accept loop calls this for each request on its
    /// connection's own `App`.
    pub(crate) fn answer(
        &mut self,
        request: Request,
    ) -> Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>> {
        self.service.call(request)
    }

    /// Whether requests need the client's address in their extensions
    /// (`ConnectInfo`); see [`App::needs_peer`](App#structfield.needs_peer).
    pub(crate) fn needs_peer(&self) -> bool {
        self.needs_peer
    }
}

/// The public listener's service: its routes, with `/metrics` unless the
/// state says an admin listener serves it.
pub fn app(state: AppState) -> App {
    let mint = with_token(&state, post(api::mint));
    let mut router = Table::default()
        .route("/", get(page::index))
        .route("/assets/{file}", get(page::asset))
        .route("/favicon.ico", get(page::favicon))
        .route("/api/v1/compose", with_cors(&state, get(api::compose)))
        .route("/api/v1/decode/{id}", with_cors(&state, get(api::decode)))
        .route("/api/v1/range", with_cors(&state, get(api::range)))
        .route("/api/v1/sql", with_cors(&state, get(api::sql)))
        .route("/api/v1/layout", with_cors(&state, get(api::layout_lab)))
        .route("/api/v1/detect", with_cors(&state, get(api::detect)))
        .route("/api/v1/ids", with_cors(&state, mint))
        .route("/api/v1/openapi.json", with_cors(&state, get(api::openapi)))
        .route("/healthz", get(api::healthz))
        .route("/readyz", get(api::readyz));
    let routes = if state.metrics_on_public() {
        router = router.route("/metrics", metrics_route(&state));
        ROUTES
    } else {
        PUBLIC_ROUTES_WITHOUT_METRICS
    };
    let cross_site = RefuseCrossSite(Arc::clone(&state.origins));
    outer_layers(router, state, Some(cross_site), routes)
}

/// The admin listener's service: `/healthz`, `/readyz` and `/metrics`.
pub fn admin_app(state: AppState) -> App {
    let router = Table::default()
        .route("/healthz", get(api::healthz))
        .route("/readyz", get(api::readyz))
        .route("/metrics", metrics_route(&state));
    outer_layers(router, state, None, ADMIN_ROUTES)
}

/// `GET /metrics`, behind the token when one is configured.
fn metrics_route(state: &AppState) -> MethodRouter<AppState> {
    with_token(state, get(api::metrics))
}

/// A route behind the token (a route layer, so 404 and 405 never depend on
/// credentials) when one is configured; without one, as it is.
fn with_token(state: &AppState, route: MethodRouter<AppState>) -> MethodRouter<AppState> {
    match &state.token {
        Some(token) => route.route_layer(CheckLayer(RequireToken(token.clone()))),
        None => route,
    }
}

/// An API route, with CORS for the allowed origins (when there are any).
fn with_cors(state: &AppState, route: MethodRouter<AppState>) -> MethodRouter<AppState> {
    match state.origins.cors_layer() {
        // The layer answers every OPTIONS request itself (the preflight);
        // the route needs one, or the router's 405 would come first.
        Some(cors) => route
            .options(|| async { StatusCode::NO_CONTENT })
            .layer(cors),
        None => route,
    }
}

/// What both listeners share: JSON 404 and 405, the cross-site refusal
/// (public listener only), and around every answer the edge (head and body
/// limits, the request timeout, panics as JSON 500, security headers, the
/// error shape, request metrics, debug spans and the access log), one
/// layer for all of it, labelling requests by the patterns `routes`.
fn outer_layers(
    table: Table,
    state: AppState,
    cross_site: Option<RefuseCrossSite>,
    routes: &'static [&'static str],
) -> App {
    let metrics = Arc::clone(&state.metrics);
    let needs_peer = state.admission.has_client_quota();
    let exact = table
        .exact
        .into_iter()
        .map(|(path, route)| {
            let route = route
                .fallback(api::method_not_allowed)
                .with_state(state.clone());
            (path, route)
        })
        .collect();
    let router = table
        .router
        .fallback(api::not_found)
        .method_not_allowed_fallback(api::method_not_allowed)
        .with_state(state);
    let dispatch = Dispatch { exact, router };
    App {
        service: EdgeLayer::new(metrics, routes).layer(CheckLayer(cross_site).layer(dispatch)),
        needs_peer,
    }
}

/// A listener's routes as they are set up: those whose pattern has no
/// parameter apart, the others in axum's router.
#[derive(Default)]
struct Table {
    exact: Vec<(&'static str, MethodRouter<AppState>)>,
    router: Router<AppState>,
}

impl Table {
    fn route(mut self, path: &'static str, route: MethodRouter<AppState>) -> Table {
        if path.contains('{') {
            self.router = self.router.route(path, route);
        } else {
            debug_assert!(self.exact.iter().all(|(p, _)| *p != path), "{path} twice");
            self.exact.push((path, route));
        }
        self
    }
}

/// A listener's routes as they answer: a route whose pattern has no
/// parameter is found by comparing the path with each such pattern (there
/// are a dozen) and called directly; any other path goes to axum's router,
/// which holds the routes with a parameter and answers 404. A route
/// answers as it would from the router (its method routing, its layers,
/// the same 405 with `Allow`), without the router's work per request: the
/// path's match in its tree, the path parameters put into the request's
/// extensions (an allocation each time, even for none), the request taken
/// apart and put together again.
#[derive(Clone)]
pub(crate) struct Dispatch {
    exact: Vec<(&'static str, MethodRouter)>,
    router: Router,
}

impl std::fmt::Debug for Dispatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatch")
            .field(
                "exact",
                &self.exact.iter().map(|(p, _)| p).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Service<Request> for Dispatch {
    type Response = Response;
    type Error = Infallible;
    type Future = RouteFuture<Infallible>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // Both an axum router and a method router are always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> RouteFuture<Infallible> {
        let path = request.uri().path();
        match self.exact.iter_mut().find(|(pattern, _)| *pattern == path) {
            Some((_, route)) => route.call(request),
            None => self.router.call(request),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mint::minter::Minter;

    /// The paths a listener's table answers, sorted.
    fn table(app: &App) -> Vec<&'static str> {
        let dispatch = app.service.inner().inner();
        let mut paths: Vec<_> = dispatch.exact.iter().map(|(path, _)| *path).collect();
        paths.sort_unstable();
        paths
    }

    fn without_parameters(routes: &[&'static str]) -> Vec<&'static str> {
        let mut paths: Vec<_> = routes
            .iter()
            .copied()
            .filter(|p| !p.contains('{'))
            .collect();
        paths.sort_unstable();
        paths
    }

    /// Every route without a parameter is answered from the table (the
    /// router is left the two with one), on both listeners, with and
    /// without `/metrics` on the public one.
    #[test]
    fn every_route_without_a_parameter_is_in_the_table() {
        let state = AppState::new(Minter::empty());
        assert_eq!(table(&app(state.clone())), without_parameters(ROUTES));
        assert_eq!(
            table(&admin_app(state.clone())),
            without_parameters(ADMIN_ROUTES)
        );
        let public = app(state.with_admin_listener(true));
        assert_eq!(
            table(&public),
            without_parameters(PUBLIC_ROUTES_WITHOUT_METRICS)
        );
        assert_eq!(ROUTES.len() - without_parameters(ROUTES).len(), 2);
    }
}
