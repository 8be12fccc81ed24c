//! The JSON API: compose, decode, mint, health, readiness, metrics. What
//! each route takes is read in [`params`](crate::routes::params).

use std::net::SocketAddr;

use axum::Extension;
use axum::Json;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use snowmint::Layout;

use crate::mint::generator::IdRange;
use crate::routes::error::{ApiError, ErrorBody};
use crate::routes::params::{
    ApiPairs, ApiQuery, ComposeQuery, DecodePath, DecodeQuery, DetectQuery, LayoutQuery, MintCount,
    MintQuery, NoQuery, RangeQuery, SqlQuery, compose_in, compose_query, decode_id, detect_ids,
    echo, encoding, known_params, layout, param_names, range_typed, single, sql_typed,
};
use crate::routes::state::AppState;

/// A body that is JSON already, answered 200 with `Content-Type:
/// application/json`. (`([(CONTENT_TYPE, ..)], body)` answers the same,
/// but sets the body's own type first, `text/plain` or
/// `application/octet-stream`, and then replaces it: two header writes a
/// request where one will do.)
pub(crate) struct JsonText<B>(pub B);

impl<B: Into<axum::body::Body>> IntoResponse for JsonText<B> {
    fn into_response(self) -> Response {
        let mut response = Response::new(self.0.into());
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    }
}

/// Compose an ID from its four values.
///
/// In another layout, `layout=L` (a preset or a spec, as for decode) and
/// the layout's own field names as the parameters beside `timestamp`
/// (`/api/v1/layout` lists them), each required: Discord's
/// `?layout=discord&timestamp=1462015105796&worker=1&process=0&increment=7`.
/// OpenAPI cannot state parameters that depend on another's value, so
/// this document gives Twitter's.
#[utoipa::path(
    get,
    path = "/api/v1/compose",
    tag = "ids",
    params(ComposeQuery),
    responses(
        (status = 200, description = "The ID and its breakdown", body = crate::routes::schema::BreakdownDoc),
        (status = 400, description = "A value is out of range or not a number; or a parameter this route does not take (`field` names it)", body = ErrorBody),
    )
)]
pub(crate) async fn compose(
    State(state): State<AppState>,
    ApiPairs(pairs): ApiPairs,
) -> Result<Response, ApiError> {
    // The pairs as sent, not `ComposeQuery`: which names the route takes
    // depends on the layout (`ComposeQuery`'s are Twitter's), so a repeated
    // one is named here, after the layout is read.
    let layout = layout(single(&pairs, "layout")?)?;
    let timestamp = single(&pairs, "timestamp")?;
    if layout == Layout::TWITTER {
        // Another layout's fields are its own names, which the core checks.
        let names = param_names::<ComposeQuery>();
        let mut known: Vec<&str> = names.iter().map(String::as_str).collect();
        known.push("layout");
        known_params(&pairs, &known)?;
        let q = ComposeQuery {
            timestamp: timestamp.map(str::to_owned),
            datacenter: single(&pairs, "datacenter")?.map(str::to_owned),
            worker: single(&pairs, "worker")?.map(str::to_owned),
            sequence: single(&pairs, "sequence")?.map(str::to_owned),
        };
        let id = compose_query(&q, state.now_ms())?;
        return Ok(Json(id.breakdown()).into_response());
    }
    let id = compose_in(&layout, timestamp, &pairs, state.now_ms())?;
    Ok(Json(layout.breakdown(id)).into_response())
}

/// Decode an ID into its four values.
#[utoipa::path(
    get,
    path = "/api/v1/decode/{id}",
    tag = "ids",
    params(
        DecodePath,
        DecodeQuery,
    ),
    responses(
        (status = 200, description = "The ID's breakdown", body = crate::routes::schema::BreakdownDoc),
        (status = 400, description = "Not an ID in the form `from` names (`field` is `id`), or an unknown `from` or `layout`; or a parameter this route does not take (`field` names it)", body = ErrorBody),
        (status = 404, description = "No ID in the path", body = ErrorBody),
    )
)]
pub(crate) async fn decode(
    path: Result<Path<String>, axum::extract::rejection::PathRejection>,
    ApiQuery(q): ApiQuery<DecodeQuery>,
) -> Result<Response, ApiError> {
    let encoding = encoding(q.from.as_deref())?;
    let layout = layout(q.layout.as_deref())?;
    // The only way a one-segment path fails to extract is bytes that are
    // not UTF-8 once percent-decoded: let the core say what the form
    // expects, with the replacement character for what was found.
    let Path(id) = path.map_err(|_| match encoding.parse("\u{FFFD}") {
        Err(e) => ApiError::from(e),
        Ok(_) => ApiError::bad_request(Some("id"), "id is not valid UTF-8".to_owned()),
    })?;
    let id = decode_id(encoding, &layout, &id)?;
    Ok(Json(layout.breakdown(id)).into_response())
}

/// The smallest and largest ID of a time span, for `WHERE id BETWEEN min AND max`.
#[utoipa::path(
    get,
    path = "/api/v1/range",
    tag = "ids",
    params(RangeQuery),
    responses(
        (status = 200, description = "The span and its smallest and largest ID", body = crate::routes::schema::RangeDoc),
        (status = 400, description = "A time is out of range or not a time (`field` is `from` or `to`), `to` is before `from` (`to`), or the layout is unknown (`layout`); or a parameter this route does not take (`field` names it)", body = ErrorBody),
    )
)]
pub(crate) async fn range(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<RangeQuery>,
) -> Result<Response, ApiError> {
    let layout = layout(q.layout.as_deref())?;
    let span = range_typed(q.from.as_deref(), q.to.as_deref(), layout, state.now_ms())?;
    Ok(Json(span).into_response())
}

/// SQL functions for the IDs of a layout, as a script for the database's
/// client: `time(id)`, `unix_ms(id)`, one per field, `min_id(ts)`,
/// `max_id(ts)` and `compose(unix_ms, fields...)` (SQLite: the expressions).
#[utoipa::path(
    get,
    path = "/api/v1/sql",
    tag = "ids",
    params(SqlQuery),
    responses(
        (status = 200, description = "The script, to pipe into psql, mysql or sqlite3", content_type = "text/plain", body = String),
        (status = 400, description = "An unknown or missing `dialect`, an unknown `layout`, or a `prefix` that is not a plain SQL identifier of at most 40 characters; or a parameter this route does not take (`field` names it)", body = ErrorBody),
    )
)]
pub(crate) async fn sql(ApiQuery(q): ApiQuery<SqlQuery>) -> Result<Response, ApiError> {
    let layout = layout(q.layout.as_deref())?;
    let script = sql_typed(q.dialect.as_deref(), layout, q.prefix.as_deref())?;
    Ok((
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        )],
        script,
    )
        .into_response())
}

/// The layout lab: a layout's spec, fields, IDs per time unit, when its
/// time runs out and until when its IDs are exact JavaScript numbers.
#[utoipa::path(
    get,
    path = "/api/v1/layout",
    tag = "ids",
    params(LayoutQuery),
    responses(
        (status = 200, description = "The layout's figures", body = crate::routes::schema::LayoutDoc),
        (status = 400, description = "Not a preset nor a valid spec (`field` is `layout`; the message says what is wrong); or a parameter this route does not take (`field` names it)", body = ErrorBody),
    )
)]
pub(crate) async fn layout_lab(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<LayoutQuery>,
) -> Result<Response, ApiError> {
    let layout = layout(q.layout.as_deref())?;
    Ok(Json(snowmint::LayoutReport::new(&layout, state.now_ms())).into_response())
}

/// Which system made these IDs: candidate layouts, best first, each with
/// its score, the decoded time range and why.
#[utoipa::path(
    get,
    path = "/api/v1/detect",
    tag = "ids",
    params(DetectQuery),
    responses(
        (status = 200, description = "The candidates, best first", body = crate::routes::schema::DetectDoc),
        (status = 400, description = "`ids` missing, empty, too many or not IDs (`field` is `ids`), or a bad `layout`; or a parameter this route does not take (`field` names it)", body = ErrorBody),
    )
)]
pub(crate) async fn detect(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<DetectQuery>,
) -> Result<Response, ApiError> {
    let ids = detect_ids(q.ids.as_deref().unwrap_or(""))?;
    let mut layouts = Layout::PRESETS.to_vec();
    if q.layout.as_deref().is_some_and(|l| !l.is_empty()) {
        let extra = layout(q.layout.as_deref())?;
        if !layouts.contains(&extra) {
            layouts.push(extra);
        }
    }
    Ok(Json(snowmint::detect(&ids, &layouts, state.now_ms())).into_response())
}

/// Mint fresh IDs from this instance's generator.
#[utoipa::path(
    post,
    path = "/api/v1/ids",
    tag = "mint",
    params(MintQuery),
    responses(
        (status = 200, description = "Fresh IDs, strictly increasing, as decimal strings", body = crate::routes::schema::IdsDoc),
        (status = 400, description = "count out of range, or more than this client's whole quota (`--client-quota`), which no wait would let pass (`field` is `count`); or a parameter this route does not take (`field` names it)", body = ErrorBody),
        (status = 401, description = "The server requires a token (`--api-token-file`) and the request has no `Authorization: Bearer` with it", body = ErrorBody,
            headers(("WWW-Authenticate" = String, description = "`Bearer`, with `error=\"invalid_token\"` when a wrong token was sent"))),
        (status = 403, description = "A browser request from another origin that `--cors-origin` does not allow", body = ErrorBody),
        (status = 413, description = "A request body was sent (the API takes none)", body = ErrorBody),
        (status = 429, description = "This client's ID quota is used up", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until the quota allows this count"))),
        (status = 503, description = "This instance cannot issue safely right now, or more IDs are waiting than it can issue within its wait bound", body = ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait before trying again"))),
    )
)]
pub(crate) async fn mint(
    State(state): State<AppState>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    MintCount(n): MintCount,
) -> Result<Response, ApiError> {
    let client = peer.map(|Extension(ConnectInfo(addr))| addr.ip());
    state.admission.check_quota(client, n, &state.metrics)?;
    let mut body = Vec::with_capacity(body_capacity(n));
    body.extend_from_slice(b"{\"ids\":[");
    // What can be issued without waiting is issued here; a wait (the
    // millisecond's IDs used up, the clock behind, a mark to write) moves
    // the rest to the admission lane's blocking thread, so this worker
    // keeps serving others.
    let pending = state
        .minter
        .try_mint_ranges(n, |range| write_range(&mut body, range))?;
    if let Some(pending) = pending {
        body = state
            .admission
            .finish(pending, body, write_range, &state.metrics)
            .await?;
    }
    state.minter.renew_in_background_if_due();
    if body.last() == Some(&b',') {
        body.pop();
    }
    body.extend_from_slice(b"]}");
    state.metrics.add_ids_issued(n as u64);
    Ok(JsonText(body).into_response())
}

/// The length of a mint's body of `n` IDs of 19 digits (every ID from
/// May 2018 to the end of the format's time in 2080): `{"ids":[`, then
/// `"4194439168000000000",` for each ID, the last comma replaced by `]}`.
///
/// The body is allocated at exactly this size: `Bytes` takes a `Vec` whose
/// length is its capacity as it is, and any other with one more allocation
/// (the shared count it frees the buffer by). A body of shorter IDs (a
/// clock set before 2018) is only shorter than its capacity.
fn body_capacity(n: usize) -> usize {
    b"{\"ids\":[".len() + n * b"\"4194439168000000000\",".len() - 1 + b"]}".len()
}

/// Writes `"id",` for each ID of a run of consecutive IDs: formats the first
/// and then counts up in ASCII, so a batch of 4096 costs no allocation and
/// almost no arithmetic per ID.
fn write_range(out: &mut Vec<u8>, range: IdRange) {
    let mut digits = [0u8; 20];
    let first = range.first().get();
    let mut start = format_u64(first, &mut digits);
    for i in 0..range.len() {
        if i > 0 && !increment(&mut digits[start..]) {
            // 99..9 + 1 needs one more digit.
            start = format_u64(first + i as u64, &mut digits);
        }
        out.push(b'"');
        out.extend_from_slice(&digits[start..]);
        out.extend_from_slice(b"\",");
    }
}

/// Writes `v` right-aligned into `buf`; returns where the digits start.
fn format_u64(v: u64, buf: &mut [u8; 20]) -> usize {
    // itoa takes two digits a step: for an ID's 19 digits, about a third
    // of the work of one division a digit.
    let mut text = itoa::Buffer::new();
    let digits = text.format(v).as_bytes();
    let start = buf.len() - digits.len();
    buf[start..].copy_from_slice(digits);
    start
}

/// Adds one to ASCII decimal digits in place; false if it carried out of them.
fn increment(digits: &mut [u8]) -> bool {
    for d in digits.iter_mut().rev() {
        if *d == b'9' {
            *d = b'0';
        } else {
            *d += 1;
            return true;
        }
    }
    false
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses(
    (status = 200, description = "Alive", body = crate::routes::schema::StatusDoc),
    (status = 400, description = "A query parameter was sent (`field` names it): this route takes none", body = ErrorBody),
))]
pub(crate) async fn healthz(_: ApiQuery<NoQuery>) -> impl IntoResponse {
    JsonText("{\"status\":\"ok\"}")
}

/// Readiness: a mint would succeed now.
#[utoipa::path(get, path = "/readyz", tag = "operations", responses(
    (status = 200, description = "Ready to mint", body = crate::routes::schema::ReadyDoc),
    (status = 400, description = "A query parameter was sent (`field` names it): this route takes none", body = ErrorBody),
    (status = 503, description = "A mint would fail now: no valid worker identity, the clock too far behind, or the reservation cannot be saved", body = ErrorBody),
))]
pub(crate) async fn readyz(
    State(state): State<AppState>,
    _: ApiQuery<NoQuery>,
) -> Result<Response, ApiError> {
    match state.minter.ready() {
        Ok(identity) => {
            let mut body = serde_json::json!({
                "status": "ready",
                "datacenter": identity.datacenter(),
                "worker": identity.worker(),
            });
            if let Some((_, status)) = state.minter.lease_metrics()
                && !status.coordinator_info.is_empty()
            {
                let info: serde_json::Map<String, serde_json::Value> = status
                    .coordinator_info
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v.into()))
                    .collect();
                body["coordinator"] = info.into();
            }
            Ok(Json(body).into_response())
        }
        Err(e) => {
            // A failing store recovers only by a write that succeeds: try
            // one (off this thread), so readiness comes back by itself.
            state.minter.renew_in_background_if_due();
            Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                format!("not ready: {}", e.public_message()),
            ))
        }
    }
}

/// Prometheus metrics, in the format `Accept` asks for.
#[utoipa::path(get, path = "/metrics", tag = "operations", responses(
    (status = 200, description = "The metrics: OpenMetrics 1.0.0 when `Accept` ranks `application/openmetrics-text` first (as Prometheus does), else the Prometheus text format 0.0.4", content(
        (String = "text/plain"),
        (String = "application/openmetrics-text"),
    )),
    (status = 400, description = "A query parameter was sent (`field` names it): this route takes none", body = ErrorBody),
    (status = 401, description = "The server requires a token (`--api-token-file`) and the request has no `Authorization: Bearer` with it", body = ErrorBody,
        headers(("WWW-Authenticate" = String, description = "`Bearer`, with `error=\"invalid_token\"` when a wrong token was sent"))),
))]
pub(crate) async fn metrics(
    State(state): State<AppState>,
    _: ApiQuery<NoQuery>,
    headers: axum::http::HeaderMap,
) -> impl IntoResponse {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let format = super::metrics::Format::negotiate(accept);
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static(format.content_type()),
            ),
            // The body depends on Accept: a cache must keep them apart.
            (header::VARY, HeaderValue::from_static("accept")),
        ],
        state.metrics.render(format),
    )
}

/// Unknown paths.
pub(crate) async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        None,
        format!("no such route: {}", echo(uri.path())),
    )
}

/// Known paths, wrong method.
pub(crate) async fn method_not_allowed(method: axum::http::Method) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        None,
        format!(
            "method {} is not allowed on this route",
            echo(method.as_str()).trim_matches('"')
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body of IDs of 19 digits fills its capacity to the byte, and one
    /// of shorter IDs stays within it.
    #[test]
    fn a_mint_body_is_allocated_at_its_length() {
        for (first, digits) in [(4_194_439_168_000_000_000u64, 19), (4_194_439_168, 10)] {
            for n in [1usize, 2, 4096] {
                let mut body = Vec::with_capacity(body_capacity(n));
                body.extend_from_slice(b"{\"ids\":[");
                for i in 0..n as u64 {
                    body.extend_from_slice(format!("\"{}\",", first + i).as_bytes());
                }
                body.pop();
                body.extend_from_slice(b"]}");
                assert!(body.len() <= body_capacity(n), "{n} of {digits} digits");
                if digits == 19 {
                    assert_eq!(body.len(), body_capacity(n), "{n}");
                    assert_eq!(body.capacity(), body.len(), "{n}");
                }
            }
        }
    }

    #[test]
    fn ascii_counting_matches_formatting() {
        for start in [0u64, 7, 95, 998, 9_999_999_990, 4194439168] {
            let mut digits = [0u8; 20];
            let mut s = format_u64(start, &mut digits);
            for v in start..start + 30 {
                assert_eq!(std::str::from_utf8(&digits[s..]).unwrap(), v.to_string());
                if !increment(&mut digits[s..]) {
                    s = format_u64(v + 1, &mut digits);
                }
            }
        }
    }
}
