//! The routes: the JSON API, the explorer page, the OpenAPI document, the
//! metrics, and the error shape they answer in.

pub(crate) mod api;
pub(crate) mod error;
pub(crate) mod metrics;
pub(crate) mod openapi;
pub(crate) mod page;
pub(crate) mod schema;
pub(crate) mod state;

use axum::extract::{MatchedPath, Request};
use axum::http::Method;

/// Routes that exist, as `&'static str` metric labels.
const ROUTES: &[&str] = &[
    "/",
    "/assets/{file}",
    "/favicon.ico",
    "/api/v1/compose",
    "/api/v1/decode/{id}",
    "/api/v1/range",
    "/api/v1/sql",
    "/api/v1/ids",
    "/api/v1/openapi.json",
    "/healthz",
    "/readyz",
    "/metrics",
];

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
