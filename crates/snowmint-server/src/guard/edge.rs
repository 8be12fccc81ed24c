//! What every response of both listeners passes through last: the limits
//! on the request head, the security headers, the error shape, and the
//! access log.
//!
//! - A request target over [`MAX_URI_BYTES`] is answered 414 and headers
//!   over [`MAX_HEADER_BYTES`] 431, in the API's error shape. hyper has
//!   limits of its own (a 64 KiB target, about 400 KiB of head, 100
//!   headers) past which it answers with an empty body; these lower ones
//!   come first, so a client almost always gets JSON.
//! - `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`
//!   on every response (the page adds its Content-Security-Policy).
//! - An error that some layer answered in plain text (an extractor's
//!   rejection, such as a path that is not UTF-8) is rewritten into
//!   `{"error", "field": null}` with the same status and headers.
//! - One access-log line per request, at info level with target
//!   `snowmint::access`: method, route pattern (never the raw path, which
//!   may hold IDs, nor the query string), status and latency. Nothing of
//!   the headers is logged, so neither is a token. With `RUST_LOG=warn`
//!   (or `snowmint::access=warn`) the event is switched off at its call
//!   site and costs next to nothing.

use std::time::Instant;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::routes::error::ApiError;

/// Longest request target (path and query) answered; longer is 414.
pub const MAX_URI_BYTES: usize = 8 * 1024;

/// Most bytes of request headers (names, values and 4 bytes a line for
/// `: ` and CRLF) answered; more is 431.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// Longest plain-text error body rewritten into the error shape (longer
/// ones keep a generic message).
const MAX_TEXT_ERROR_BYTES: usize = 1024;

/// The layer; see the [module docs](self).
pub(crate) async fn edge(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = crate::routes::route_label(&request);
    let method = crate::routes::method_label(request.method());
    let mut response = match head_too_large(&request) {
        Some(refusal) => refusal.into_response(),
        None => next.run(request).await,
    };
    let status = response.status();
    if (status.is_client_error() || status.is_server_error()) && !is_json(&response) {
        response = as_error_shape(response).await;
    }
    let headers = response.headers_mut();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    tracing::info!(
        target: "snowmint::access",
        %method,
        %route,
        status = status.as_u16(),
        latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        "request"
    );
    response
}

/// 414 or 431 for a request head over this server's limits.
fn head_too_large(request: &Request) -> Option<ApiError> {
    let target = request
        .uri()
        .path_and_query()
        .map_or(0, |p| p.as_str().len());
    if target > MAX_URI_BYTES {
        return Some(ApiError::new(
            StatusCode::URI_TOO_LONG,
            None,
            format!("the request target is {target} bytes; at most {MAX_URI_BYTES} are accepted"),
        ));
    }
    let headers: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    (headers > MAX_HEADER_BYTES).then(|| {
        ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            None,
            format!(
                "the request headers are {headers} bytes; at most {MAX_HEADER_BYTES} are accepted"
            ),
        )
    })
}

fn is_json(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"))
}

/// The same status and headers, the body as `{"error": <its text>, "field": null}`.
async fn as_error_shape(response: Response) -> Response {
    let (mut parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, MAX_TEXT_ERROR_BYTES)
        .await
        .ok()
        .and_then(|bytes| String::from_utf8(bytes.to_vec()).ok())
        .map(|text| text.trim().to_owned())
        .filter(|text| !text.is_empty())
        .unwrap_or_else(|| {
            parts
                .status
                .canonical_reason()
                .unwrap_or("error")
                .to_lowercase()
        });
    let shaped = ApiError::new(parts.status, None, text).into_response();
    let (shaped_parts, body) = shaped.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    for (name, value) in &shaped_parts.headers {
        parts.headers.insert(name, value.clone());
    }
    Response::from_parts(parts, Body::new(body))
}
