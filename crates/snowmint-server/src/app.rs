//! The router: both listeners' routes, and the layers every request
//! passes on its way in.

use std::sync::Arc;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::{MethodRouter, get, post};

use crate::guard::check::CheckLayer;
use crate::guard::edge::EdgeLayer;
use crate::guard::origin::RefuseCrossSite;
use crate::guard::token::RequireToken;
use crate::routes::state::AppState;
use crate::routes::{api, page};

/// The whole service as a router: the public listener's routes, with
/// `/metrics` unless the state says an admin listener serves it.
pub fn app(state: AppState) -> Router {
    let mint = with_token(&state, post(api::mint));
    let mut router = Router::new()
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
    if state.metrics_on_public() {
        router = router.route("/metrics", metrics_route(&state));
    }
    let router = router.layer(CheckLayer(RefuseCrossSite(Arc::clone(&state.origins))));
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

/// What both listeners' routers share: JSON 404 and 405, and around every
/// answer the edge (head and body limits, the request timeout, panics as
/// JSON 500, security headers, the error shape, request metrics, debug
/// spans and the access log), one layer for all of it.
fn common_layers(router: Router<AppState>, state: AppState) -> Router {
    router
        .fallback(api::not_found)
        .method_not_allowed_fallback(api::method_not_allowed)
        .layer(EdgeLayer::new(Arc::clone(&state.metrics)))
        .with_state(state)
}
