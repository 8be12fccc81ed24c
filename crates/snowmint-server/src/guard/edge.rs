//! The one layer every request of both listeners passes, outermost: the
//! limits on the request, the request timeout, panics, the security
//! headers, the error shape, the request metrics and the access log.
//!
//! - A request target over [`MAX_URI_BYTES`] is answered 414 and headers
//!   over [`MAX_HEADER_BYTES`] 431, in the API's error shape. hyper has
//!   limits of its own (a 64 KiB target, about 400 KiB of head, 100
//!   headers) past which it answers with an empty body; these lower ones
//!   come first, so a client almost always gets JSON. A declared body over
//!   [`MAX_BODY_BYTES`] is answered 413 (the API takes none), and so is a
//!   body of undeclared length (chunked, or HTTP/2 without
//!   `Content-Length`) once more than that has arrived: such a body is read
//!   up to the limit before the route sees the request, since no route
//!   reads one.
//! - A request still unanswered after [`REQUEST_TIMEOUT`] is answered 503.
//!   The timer is armed only once a request has to wait: one that is
//!   answered when first polled (health, the page, a mint that needs no
//!   wait) costs no timer at all.
//! - A panic in a route is answered 500 `internal error`, never with its
//!   message.
//! - `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`
//!   on every response (the page adds its Content-Security-Policy).
//! - An error that some layer answered in plain text (an extractor's
//!   rejection, such as a path that is not UTF-8; not the page's HTML) is
//!   rewritten into
//!   `{"error", "field": null}` with the same status and headers.
//! - Each answer is counted by route pattern, method and status, and timed;
//!   and one access-log line per request, at info level with target
//!   `snowmint::access`: method, route pattern (never the raw path, which
//!   may hold IDs, nor the query string), status and latency. Nothing of
//!   the headers is logged, so neither is a token. With `RUST_LOG=warn`
//!   (or `snowmint::access=warn`) the event is switched off at its call
//!   site and costs next to nothing. At debug level each request also gets
//!   a span (method, URI, version) and a line when it starts and ends.
//!
//! It is one layer, not one per concern, because every layer the router
//! nests costs each request a clone of the routes below it, a boxed future
//! and its own reading of the clock; here the clock is read once when the
//! request arrives and once when it is answered, and the labels are looked
//! up once.

use std::convert::Infallible;
use std::future::{Future, poll_fn};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tower::{Layer, Service};
use tracing::Instrument;

use crate::routes::error::ApiError;
use crate::routes::metrics::{Metrics, RequestRecorder};
use crate::routes::{method_label, route_label};

/// Longest request target (path and query) answered; longer is 414.
pub const MAX_URI_BYTES: usize = 8 * 1024;

/// Most bytes of request headers (names, values and 4 bytes a line for
/// `: ` and CRLF) answered; more is 431.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// The API takes no request body; anything longer is refused (413).
pub const MAX_BODY_BYTES: u64 = 1024;

/// A request still unanswered after this long is answered 503 (every
/// route's own waits are bounded well below it; this is the backstop).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest plain-text error body rewritten into the error shape (longer
/// ones keep a generic message).
const MAX_TEXT_ERROR_BYTES: usize = 1024;

/// The layer; see the [module docs](self).
#[derive(Debug, Clone)]
pub(crate) struct EdgeLayer {
    metrics: Arc<Metrics>,
    routes: &'static [&'static str],
}

impl EdgeLayer {
    /// The edge of a router whose route patterns are `routes` (the labels
    /// of its metrics and access log).
    pub(crate) fn new(metrics: Arc<Metrics>, routes: &'static [&'static str]) -> EdgeLayer {
        EdgeLayer { metrics, routes }
    }
}

impl<S> Layer<S> for EdgeLayer {
    type Service = Edge<S>;

    fn layer(&self, inner: S) -> Edge<S> {
        Edge {
            inner,
            recorder: Arc::new(RequestRecorder::new(Arc::clone(&self.metrics))),
            routes: self.routes,
        }
    }
}

/// The service [`EdgeLayer`] wraps the router in.
#[derive(Debug, Clone)]
pub(crate) struct Edge<S> {
    inner: S,
    /// Where the answers are counted: one recorder for each connection
    /// ([`Edge::for_connection`]), whose count each request's future
    /// clones, rather than a count every worker's requests share (which
    /// would move between the cores at each clone).
    recorder: Arc<RequestRecorder>,
    routes: &'static [&'static str],
}

impl<S> Edge<S> {
    /// What it wraps.
    #[cfg(test)]
    pub(crate) fn inner(&self) -> &S {
        &self.inner
    }

    /// Where it counts the answers.
    #[cfg(test)]
    pub(crate) fn recorder(&self) -> &Arc<RequestRecorder> {
        &self.recorder
    }

    /// What it wraps, to change.
    pub(crate) fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The same edge with a recorder of its own, for one connection's
    /// requests.
    pub(crate) fn for_connection(self) -> Edge<S> {
        let metrics = Arc::clone(self.recorder.metrics());
        Edge {
            recorder: Arc::new(RequestRecorder::new(metrics)),
            ..self
        }
    }
}

impl<S> Service<Request> for Edge<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let started = Instant::now();
        let route = route_label(request.uri().path(), self.routes);
        let method = method_label(request.method());
        // `Span::none()` unless debug is on for this target: then nothing
        // below formats the URI.
        let span = tracing::debug_span!(
            "request",
            method = %request.method(),
            uri = %request.uri(),
            version = ?request.version(),
        );
        let head = Head::of(request.headers());
        let answer = match refusal(&request, &head) {
            Some(refusal) => Answer::Refused(refusal),
            // The body must be read (up to the limit) before the call: the
            // service that was polled ready goes with it, a clone stays.
            None if undeclared_body(&request, &head) => {
                let ready = self.inner.clone();
                Answer::ReadFirst(Box::new((
                    request,
                    std::mem::replace(&mut self.inner, ready),
                )))
            }
            // A panic in the call itself, as in its future, is a 500.
            None => Answer::Called(catch_unwind(AssertUnwindSafe(|| self.inner.call(request)))),
        };
        let recorder = Arc::clone(&self.recorder);
        let answered = async move {
            tracing::debug!("started processing request");
            let mut response = match answer {
                Answer::Refused(refusal) => refusal.into_response(),
                Answer::Called(Ok(future)) => within_timeout(future, started).await,
                Answer::Called(Err(_panic)) => panicked(),
                // The rare ways are boxed where they are taken: their
                // futures would make every request's as large (it was
                // 1,856 bytes, allocated and copied for each request).
                Answer::ReadFirst(waiting) => Box::pin(read_first(*waiting, started)).await,
            };
            let status = response.status();
            if (status.is_client_error() || status.is_server_error()) && !is_shaped(&response) {
                response = Box::pin(as_error_shape(response)).await;
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
            let elapsed = started.elapsed();
            recorder.observe(route, method, status.as_u16(), elapsed);
            let latency_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
            tracing::debug!(
                latency_us,
                status = status.as_u16(),
                "finished processing request"
            );
            crate::logs::access(method, route, status.as_u16(), latency_us);
            Ok(response)
        };
        // The span (debug level) wraps the answer only when it is on.
        if span.is_disabled() {
            Box::pin(answered)
        } else {
            Box::pin(answered.instrument(span))
        }
    }
}

/// What [`Edge::call`] decided before its future runs.
enum Answer<S: Service<Request>> {
    /// Over a limit: answered without the routes.
    Refused(ApiError),
    /// The routes' future (or the panic of the call).
    Called(std::thread::Result<S::Future>),
    /// A body of undeclared length, read before the call; boxed, as it is
    /// rare and large (the request and the routes below), and every
    /// request's future would otherwise be as large and copied as often.
    ReadFirst(Box<(Request, S)>),
}

/// The answer to a request whose body of undeclared length is read (up to
/// the limit, within the request timeout) before `inner` is called.
async fn read_first<S>((request, mut inner): (Request, S), started: Instant) -> Response
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    let deadline = tokio::time::Instant::from_std(started) + REQUEST_TIMEOUT;
    match tokio::time::timeout_at(deadline, bounded_body(request)).await {
        Err(_elapsed) => timed_out(),
        Ok(Err(refusal)) => refusal.into_response(),
        Ok(Ok(request)) => match catch_unwind(AssertUnwindSafe(|| inner.call(request))) {
            Ok(future) => within_timeout(future, started).await,
            Err(_panic) => panicked(),
        },
    }
}

/// What the edge reads of a request's headers, found in one pass over
/// them (a handful, usually): rather than that pass for their size and
/// two hashed lookups of `Content-Length`.
#[derive(Debug, PartialEq)]
struct Head<'a> {
    /// Names, values and 4 bytes a line for `: ` and CRLF.
    bytes: usize,
    /// The first `Content-Length`, as `HeaderMap::get` finds it.
    content_length: Option<&'a HeaderValue>,
}

impl<'a> Head<'a> {
    fn of(headers: &'a axum::http::HeaderMap) -> Head<'a> {
        let mut head = Head {
            bytes: 0,
            content_length: None,
        };
        for (name, value) in headers {
            head.bytes += name.as_str().len() + value.len() + 4;
            if head.content_length.is_none() && *name == header::CONTENT_LENGTH {
                head.content_length = Some(value);
            }
        }
        head
    }
}

/// Whether the request has a body of undeclared length (chunked, or
/// HTTP/2 without `Content-Length`), which only reading it can measure.
fn undeclared_body(request: &Request, head: &Head<'_>) -> bool {
    use axum::body::HttpBody;
    let body = request.body();
    head.content_length.is_none() && !body.is_end_stream() && body.size_hint().exact() != Some(0)
}

/// The request with its body read, or 413 once more than
/// [`MAX_BODY_BYTES`] of it has arrived.
async fn bounded_body(request: Request) -> Result<Request, ApiError> {
    use axum::body::HttpBody;
    let (parts, mut body) = request.into_parts();
    let mut bytes = Vec::new();
    while let Some(frame) = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        let Ok(frame) = frame else {
            return Err(ApiError::bad_request(
                None,
                "the request body could not be read",
            ));
        };
        if let Some(data) = frame.data_ref() {
            bytes.extend_from_slice(data);
            if bytes.len() as u64 > MAX_BODY_BYTES {
                return Err(too_large("more"));
            }
        }
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// 413 for a body of `got` bytes.
fn too_large(got: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        None,
        format!(
            "request bodies are limited to {MAX_BODY_BYTES} bytes (the API takes none), got {got}"
        ),
    )
}

/// Polls the route's future, catching a panic; once it has to wait, arms
/// the request timeout (counted from `started`).
async fn within_timeout<F>(future: F, started: Instant) -> Response
where
    F: Future<Output = Result<Response, Infallible>>,
{
    let mut future = pin!(future);
    let mut timer: Option<Pin<Box<tokio::time::Sleep>>> = None;
    poll_fn(|cx| {
        match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Ready(Ok(response))) => return Poll::Ready(response),
            Ok(Poll::Ready(Err(never))) => match never {},
            Err(_panic) => return Poll::Ready(panicked()),
            Ok(Poll::Pending) => {}
        }
        let timer = timer.get_or_insert_with(|| {
            Box::pin(tokio::time::sleep_until(
                tokio::time::Instant::from_std(started) + REQUEST_TIMEOUT,
            ))
        });
        timer.as_mut().poll(cx).map(|()| timed_out())
    })
    .await
}

/// 414, 431 or 413 for a request over this server's limits.
fn refusal(request: &Request, head: &Head<'_>) -> Option<ApiError> {
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
    let headers = head.bytes;
    if headers > MAX_HEADER_BYTES {
        return Some(ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            None,
            format!(
                "the request headers are {headers} bytes; at most {MAX_HEADER_BYTES} are accepted"
            ),
        ));
    }
    match body_length(head) {
        Some(n) if n > MAX_BODY_BYTES => Some(too_large(n)),
        _ => None,
    }
}

/// The declared `Content-Length`, if any.
fn body_length(head: &Head<'_>) -> Option<u64> {
    head.content_length?.to_str().ok()?.parse().ok()
}

fn timed_out() -> Response {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        None,
        format!(
            "the request was not answered within {} s; try again",
            REQUEST_TIMEOUT.as_secs()
        ),
    )
    .retry_after(1)
    .into_response()
}

fn panicked() -> Response {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, None, "internal error").into_response()
}

/// Whether an error is already in a shape of ours: JSON, or the page
/// (which answers a refused query 400 with the error in place).
fn is_shaped(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| {
            v.as_bytes().starts_with(b"application/json") || v.as_bytes().starts_with(b"text/html")
        })
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

#[cfg(test)]
mod tests {
    use axum::http::HeaderName;
    use proptest::prelude::*;

    use super::*;
    use crate::guard::testing::header_maps;

    proptest! {
        /// The one pass measures the headers and finds `Content-Length` as
        /// a sum over them and a lookup do, with it missing, repeated, or
        /// among others.
        #[test]
        fn one_pass_reads_the_head_as_lookups_do(
            headers in header_maps(vec![
                header::CONTENT_LENGTH,
                header::HOST,
                header::TRANSFER_ENCODING,
                HeaderName::from_static("x-content-length"),
            ]),
        ) {
            let bytes = headers
                .iter()
                .map(|(name, value)| name.as_str().len() + value.len() + 4)
                .sum();
            prop_assert_eq!(
                Head::of(&headers),
                Head {
                    bytes,
                    content_length: headers.get(header::CONTENT_LENGTH),
                }
            );
        }
    }
}
