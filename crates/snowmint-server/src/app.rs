//! The router: both listeners' routes, and the layers every request
//! passes on its way in.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::{DefaultOnFailure, TraceLayer};

use crate::guard::{edge, origin, token};
use crate::routes::error::ApiError;
use crate::routes::state::AppState;
use crate::routes::{api, method_label, openapi, page, route_label};

/// The API takes no request body; anything longer is refused (413).
pub const MAX_BODY_BYTES: u64 = 1024;

/// A request still unanswered after this long is answered 503 (every
/// route's own waits are bounded well below it; this is the backstop).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The whole service as a router: the public listener's routes, with
/// `/metrics` unless the state says an admin listener serves it.
pub fn app(state: AppState) -> Router {
    let mint = post(api::mint).route_layer(middleware::from_fn_with_state(
        state.token.clone(),
        token::require_token,
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
        Arc::clone(&state.origins),
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
        state.token.clone(),
        token::require_token,
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
