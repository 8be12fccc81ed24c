//! The JSON API: compose, decode, mint, health, readiness, metrics.

use std::net::SocketAddr;

use axum::Extension;
use axum::extract::{ConnectInfo, FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Json, extract::Query};
use serde::Deserialize;
use snowmint::sql::Dialect;
use snowmint::{Encoding, Field, Layout, SnowflakeId};
use utoipa::IntoParams;
use utoipa::openapi::path::ParameterIn;

use crate::mint::generator::IdRange;
use crate::mint::minter::MAX_BATCH;
use crate::routes::error::{ApiError, ErrorBody};
use crate::routes::state::AppState;

/// A query string read into `T`, whose rejection answers in the API's error
/// shape instead of axum's plain text. `T` refuses unknown names
/// (`#[serde(deny_unknown_fields)]`); the parameters it documents are the
/// ones it takes, so an unknown one is refused naming it and them.
#[derive(Debug)]
pub(crate) struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: serde::de::DeserializeOwned + IntoParams + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        match Query::<T>::try_from_uri(&parts.uri) {
            Ok(Query(v)) => Ok(ApiQuery(v)),
            Err(rejection) => {
                let known = param_names::<T>();
                let known: Vec<&str> = known.iter().map(String::as_str).collect();
                if let Ok(Query(pairs)) = Query::<Vec<(String, String)>>::try_from_uri(&parts.uri) {
                    known_params(&pairs, &known)?;
                }
                Err(query_error(&rejection.body_text()))
            }
        }
    }
}

/// The query parameters `T` documents, which are the ones it takes.
fn param_names<T: IntoParams>() -> Vec<String> {
    T::into_params(|| Some(ParameterIn::Query))
        .into_iter()
        .map(|p| p.name)
        .collect()
}

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

/// The query's pairs as sent, for a route whose parameters depend on
/// another's value (compose's layout fields); the route checks the names
/// with [`known_params`].
#[derive(Debug)]
pub(crate) struct ApiPairs(pub Vec<(String, String)>);

impl<S: Send + Sync> FromRequestParts<S> for ApiPairs {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        Query::<Vec<(String, String)>>::try_from_uri(&parts.uri)
            .map(|Query(pairs)| ApiPairs(pairs))
            .map_err(|rejection| query_error(&rejection.body_text()))
    }
}

/// Refuses the first parameter of `pairs` not in `known`, naming it and
/// what the route takes: nothing in a query is silently ignored.
pub(crate) fn known_params(pairs: &[(String, String)], known: &[&str]) -> Result<(), ApiError> {
    let Some((name, _)) = pairs
        .iter()
        .find(|(name, _)| !known.contains(&name.as_str()))
    else {
        return Ok(());
    };
    let takes = match known {
        [] => "no parameters".to_owned(),
        _ => format!("only {}", known.join(", ")),
    };
    Err(ApiError::bad_request(
        Some(name),
        format!("unknown parameter {}: this route takes {takes}", echo(name)),
    ))
}

/// A query string serde could not read: a repeated parameter named, as
/// the page names it; anything else as serde says it.
fn query_error(text: &str) -> ApiError {
    let repeated = text
        .split_once("duplicate field `")
        .and_then(|(_, rest)| rest.split_once('`'))
        .map(|(name, _)| name);
    match repeated {
        Some(name) => ApiError::bad_request(
            Some(name),
            format!("{name} is given more than once in the query; give it once"),
        ),
        None => ApiError::bad_request(None, format!("the query string cannot be read: {text}")),
    }
}

/// The query of a route that takes no parameters.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct NoQuery {}

/// Keeps echoed input short, like the core's messages do.
pub(crate) fn echo(input: &str) -> String {
    const MAX: usize = 40;
    let mut out: String = input.chars().take(MAX).collect();
    if input.chars().nth(MAX).is_some() {
        out.push('…');
    }
    format!("{out:?}")
}

/// Query of `GET /api/v1/compose`. Values are text, as typed.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ComposeQuery {
    /// Unix milliseconds, `now` or ISO-8601 (`2010-11-04T01:42:55.657Z`); missing or empty means now.
    #[param(example = 1288834975657u64)]
    pub timestamp: Option<String>,
    /// Datacenter ID, 0..=31.
    #[param(required = true, example = 1)]
    pub datacenter: Option<String>,
    /// Worker ID, 0..=31.
    #[param(required = true, example = 1)]
    pub worker: Option<String>,
    /// Sequence, 0..=4095.
    #[param(required = true, example = 0)]
    pub sequence: Option<String>,
}

/// Compose in `layout` from the query's other parameters, each a field of
/// the layout by name; unknown names and missing fields are refused
/// naming them.
pub(crate) fn compose_in(
    layout: &Layout,
    timestamp_input: Option<&str>,
    pairs: &[(String, String)],
    now_ms: u64,
) -> Result<SnowflakeId, ApiError> {
    let text = timestamp_input.filter(|t| !t.is_empty()).unwrap_or("now");
    let t = layout.parse_timestamp(text, now_ms)?;
    let fields: Vec<(&str, &str)> = pairs
        .iter()
        .filter(|(name, _)| name != "timestamp" && name != "layout")
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    Ok(layout.parse_fields(t, &fields)?)
}

/// Reads the timestamp: missing, empty or `now` is `now_ms`. Whitespace
/// alone is not "no timestamp" (as for `count`): the core refuses it.
pub(crate) fn timestamp(input: Option<&str>, now_ms: u64) -> Result<u64, snowmint::Error> {
    let text = input.filter(|t| !t.is_empty()).unwrap_or("now");
    snowmint::parse_timestamp(text, now_ms)
}

/// Validates a compose query, reporting the first bad field in form order.
pub(crate) fn compose_query(q: &ComposeQuery, now_ms: u64) -> Result<SnowflakeId, ApiError> {
    // A missing field is checked as empty text: an error naming it.
    Ok(compose_typed(
        q.timestamp.as_deref(),
        q.datacenter.as_deref().unwrap_or(""),
        q.worker.as_deref().unwrap_or(""),
        q.sequence.as_deref().unwrap_or(""),
        now_ms,
    )?)
}

/// The one compose path of the API and the page: each value as typed,
/// the first bad one (in form order) reported by the core.
pub(crate) fn compose_typed(
    timestamp_input: Option<&str>,
    datacenter: &str,
    worker: &str,
    sequence: &str,
    now_ms: u64,
) -> Result<SnowflakeId, snowmint::Error> {
    let layout = Layout::TWITTER;
    let t = timestamp(timestamp_input, now_ms)?;
    let c = layout.parse_field(Field::Datacenter, datacenter)?;
    let m = layout.parse_field(Field::Worker, worker)?;
    let s = layout.parse_field(Field::Sequence, sequence)?;
    layout.compose(t, c, m, s)
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

/// The value of the parameter `name` in `pairs`, if given; given more than
/// once, it is refused naming it (in the words of [`query_error`]).
fn single<'a>(pairs: &'a [(String, String)], name: &str) -> Result<Option<&'a str>, ApiError> {
    let mut given = pairs
        .iter()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v.as_str());
    let first = given.next();
    if given.next().is_some() {
        return Err(ApiError::bad_request(
            Some(name),
            format!("{name} is given more than once in the query; give it once"),
        ));
    }
    Ok(first)
}

/// Query of `GET /api/v1/decode/{id}`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DecodeQuery {
    /// The form of `id`: `decimal` (default), `hex` or `base32`.
    #[param(example = "decimal")]
    pub from: Option<String>,
    /// The bit layout to read `id` in: a preset, `twitter` (default),
    /// `discord`, `instagram`, `sonyflake` or `mastodon`, or a spec
    /// `epoch=EPOCH;unit=UNIT;fields=NAME:BITS,...` (URL-encoded; EPOCH
    /// Unix ms or ISO-8601, UNIT `<n>ms` or `<n>s`, fields from the most
    /// significant bit down, the first `timestamp`). Segments carry each
    /// field's own name. The top-level keys keep the contract's slots: a
    /// field named `datacenter`, `worker` or `sequence` is that key; of the
    /// others the lowest is `sequence`, then from the bottom up `worker`
    /// and `datacenter`, each if no field is named so (Instagram's shard
    /// and Sonyflake's machine are `worker`; the preset Discord's worker
    /// and process are `datacenter` and `worker`); slots a layout lacks
    /// are 0. A layout whose time runs past 9999-12-31T23:59:59.999Z is
    /// refused. `delta_ms` is milliseconds since the layout's epoch; a
    /// segment's `value` is the field itself (Sonyflake's timestamp counts
    /// 10 ms units). Where the widths add up to 64 (Discord, Instagram,
    /// Mastodon) the time field's top bit is the sign of a 64-bit integer,
    /// always 0; below 63, the bits above the fields are a segment `unused`
    /// and must be 0.
    #[param(example = "discord")]
    pub layout: Option<String>,
}

/// Path of `GET /api/v1/decode/{id}` (for the document: the handler reads
/// it itself, to answer bytes that are not UTF-8 in the API's shape).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub(crate) struct DecodePath {
    /// The ID, 0..=9223372036854775807, in the form `from` names: decimal
    /// (default), hexadecimal (optional `0x`) or Crockford base32 (`i`,
    /// `l`, `o` read as 1, 1, 0).
    #[param(example = "4194439168")]
    id: String,
}

/// Reads the `layout` parameter, a preset or a spec: missing or empty is
/// Twitter's. A bad one is refused naming `layout`, saying what is wrong;
/// so is whitespace alone (`layout=%0A`), as for `count`, rather than read
/// as "no layout".
pub(crate) fn layout(name: Option<&str>) -> Result<Layout, ApiError> {
    layout_param(name).map_err(|e| ApiError::bad_request(Some("layout"), e.to_string()))
}

/// [`layout`]'s reading, with the core's error (which the page words in
/// its language): the one reading of `layout` of the API and the page.
pub(crate) fn layout_param(name: Option<&str>) -> Result<Layout, snowmint::Error> {
    match name {
        None | Some("") => Ok(Layout::TWITTER),
        Some(text) => Layout::parse(text),
    }
}

/// Reads the `from` parameter: missing or empty is decimal; whitespace
/// alone is refused (as for `count`), not read as "no form". The message
/// names `from`, in the words of the page and of `decode --from`.
pub(crate) fn encoding(from: Option<&str>) -> Result<Encoding, ApiError> {
    match from {
        None | Some("") => Ok(Encoding::Decimal),
        Some(name) => name.parse::<Encoding>().map_err(|_| {
            let names = Encoding::ALL.map(Encoding::name).join(", ");
            ApiError::bad_request(
                Some("from"),
                format!("from must be one of {names}, got {}", echo(name)),
            )
        }),
    }
}

/// The one reading of an ID of the API and the page (one ID, or each line
/// of the page's list): `text` in `encoding`, with no bit set above
/// `layout`'s fields.
pub(crate) fn decode_id(
    encoding: Encoding,
    layout: &Layout,
    text: &str,
) -> Result<SnowflakeId, snowmint::Error> {
    layout.check_id(encoding.parse(text)?)
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

/// Query of `GET /api/v1/range`. Values are text, as typed.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RangeQuery {
    /// The first millisecond: `now`, Unix milliseconds or ISO-8601; missing or empty means now.
    /// It and `to` must lie in the layout's span of times: the schema gives the default
    /// layout's, `layout`'s `x-time-span-ms` each preset's.
    #[param(example = "2024-01-01T00:00:00Z")]
    pub from: Option<String>,
    /// The last millisecond, inclusive, in the same forms, at or after `from`; missing or empty means the same as `from`.
    #[param(example = "2024-02-01T00:00:00Z")]
    pub to: Option<String>,
    /// The IDs' layout (as for decode): a preset, `twitter` (default), `discord`, `instagram`, `sonyflake` or `mastodon`, or a spec; `from` and `to` must lie in its span of times.
    #[param(example = "twitter")]
    pub layout: Option<String>,
}

/// The one range path of the API and the page: both times as typed
/// (`from` missing or empty is now, `to` missing or empty is `from`;
/// whitespace alone is no time and refused), checked by the core, whose
/// errors name `from` or `to`.
pub(crate) fn range_typed(
    from: Option<&str>,
    to: Option<&str>,
    layout: Layout,
    now_ms: u64,
) -> Result<snowmint::IdSpan, snowmint::Error> {
    let blank = |t: &&str| !t.is_empty();
    layout.parse_span(
        from.filter(blank).unwrap_or("now"),
        to.filter(blank),
        now_ms,
    )
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

/// Query of `GET /api/v1/sql`. Values are text, as typed.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SqlQuery {
    /// The database: `postgres` (functions), `mysql` (MySQL and MariaDB
    /// functions) or `sqlite` (expressions, as comments).
    #[param(required = true, example = "postgres")]
    pub dialect: Option<String>,
    /// The IDs' layout (as for decode): `twitter` (default), `discord`, `instagram`, `sonyflake` or `mastodon`.
    #[param(example = "twitter")]
    pub layout: Option<String>,
    /// Put before every function's name: a plain SQL identifier; missing or empty means `snowflake_`.
    #[param(example = "snowflake_")]
    pub prefix: Option<String>,
}

/// The one SQL path of the API and the page: the script of `dialect`'s
/// functions for `layout`, with `prefix` (blank: the default).
pub(crate) fn sql_typed(
    dialect: Option<&str>,
    layout: Layout,
    prefix: Option<&str>,
) -> Result<String, snowmint::sql::SqlError> {
    let dialect = Dialect::parse_for("dialect", dialect.unwrap_or(""))?;
    let prefix = prefix
        .filter(|p| !p.is_empty())
        .unwrap_or(snowmint::sql::DEFAULT_PREFIX);
    let options = snowmint::sql::Options {
        prefix,
        ..Default::default()
    };
    snowmint::sql::functions(dialect, &layout, &options)
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

/// Query of `GET /api/v1/layout`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LayoutQuery {
    /// The layout (as for decode): a preset or a spec; missing means Twitter's.
    #[param(example = "sonyflake")]
    pub layout: Option<String>,
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

/// The most IDs one detect request takes (as many as the page's list).
pub(crate) const MAX_DETECT_IDS: usize = 1000;

/// Query of `GET /api/v1/detect`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DetectQuery {
    /// The IDs, decimal, separated by commas: 1 to 1000 of them.
    #[param(required = true, example = "175928847299117063,175928847299117064")]
    pub ids: Option<String>,
    /// A further candidate besides the presets (as for decode): a preset or a spec.
    #[param(example = "epoch=2020-01-01;fields=timestamp:41,machine:10,sequence:12")]
    pub layout: Option<String>,
}

/// Reads `ids`: decimal IDs separated by commas (or white space).
pub(crate) fn detect_ids(text: &str) -> Result<Vec<SnowflakeId>, ApiError> {
    let items: Vec<&str> = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .collect();
    if items.is_empty() {
        return Err(ApiError::bad_request(
            Some("ids"),
            "ids must be 1 to 1000 decimal IDs separated by commas, got none",
        ));
    }
    if items.len() > MAX_DETECT_IDS {
        return Err(ApiError::bad_request(
            Some("ids"),
            format!(
                "ids must be 1 to {MAX_DETECT_IDS} decimal IDs separated by commas, got {}",
                items.len()
            ),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            item.parse::<SnowflakeId>().map_err(|e| {
                ApiError::bad_request(Some("ids"), format!("ids: item {}: {e}", i + 1))
            })
        })
        .collect()
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

/// Query of `POST /api/v1/ids`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct MintQuery {
    /// How many IDs, 1..=4096 (default 1, also when empty).
    #[param(example = 3)]
    pub count: Option<String>,
}

/// How many IDs a mint asks for: its query read as [`MintQuery`], then
/// [`count`].
///
/// The query almost every mint sends (none, or `count=` and digits) is
/// read where it stands: serde reads it to the same result (the test
/// `a_plain_count_reads_as_serde_reads_it` compares the two), but takes
/// about 1,000 instructions and a `String` to do so, a fifteenth of a
/// whole mint's. Any other query (escapes, `+`, more pairs, other names)
/// goes through serde and its errors as before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MintCount(pub usize);

impl<S: Send + Sync> FromRequestParts<S> for MintCount {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        if let Some(plain) = plain_count(parts.uri.query()) {
            return count(plain).map(MintCount);
        }
        let ApiQuery(q) = ApiQuery::<MintQuery>::from_request_parts(parts, state).await?;
        count(q.count.as_deref()).map(MintCount)
    }
}

/// `count`'s value in a query that needs no decoding: none, empty, or
/// exactly `count=` followed by ASCII letters and digits, which
/// `application/x-www-form-urlencoded` reads as they are. `None` for any
/// other query.
fn plain_count(query: Option<&str>) -> Option<Option<&str>> {
    let Some(query) = query.filter(|q| !q.is_empty()) else {
        return Some(None);
    };
    let value = query.strip_prefix("count=")?;
    value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric())
        .then_some(Some(value))
}

/// Reads `count`: missing or empty is 1; anything else must be an integer
/// in range, so whitespace alone (`count=%0D`) is refused naming `count`
/// rather than read as "no count".
pub(crate) fn count(input: Option<&str>) -> Result<usize, ApiError> {
    let Some(text) = input.filter(|t| !t.is_empty()) else {
        return Ok(1);
    };
    // At most one millisecond's IDs: the core's range for a count.
    let n = Layout::TWITTER.parse_field(Field::Count, text)?;
    Ok(usize::try_from(n).unwrap_or(MAX_BATCH))
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
        Ok(identity) => Ok(Json(serde_json::json!({
            "status": "ready",
            "datacenter": identity.datacenter(),
            "worker": identity.worker(),
        }))
        .into_response()),
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

/// The OpenAPI document.
pub(crate) async fn openapi(_: ApiQuery<NoQuery>) -> impl IntoResponse {
    JsonText(super::openapi::document())
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
    use proptest::prelude::*;

    /// What a mint's query reads as through serde alone, as every query did
    /// before [`MintCount`] read the plain ones itself.
    fn through_serde(query: &str) -> Result<usize, ApiError> {
        let mut parts = axum::http::Request::builder()
            .uri(format!("/api/v1/ids?{query}"))
            .body(())
            .unwrap()
            .into_parts()
            .0;
        let read = ApiQuery::<MintQuery>::from_request_parts(&mut parts, &());
        let ApiQuery(q) = block_on(read)?;
        count(q.count.as_deref())
    }

    fn read(uri: &str) -> Result<usize, ApiError> {
        let mut parts = axum::http::Request::builder()
            .uri(uri)
            .body(())
            .unwrap()
            .into_parts()
            .0;
        block_on(MintCount::from_request_parts(&mut parts, &())).map(|c| c.0)
    }

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[test]
    fn plain_counts_are_read_where_they_stand() {
        assert_eq!(plain_count(None), Some(None));
        assert_eq!(plain_count(Some("")), Some(None));
        assert_eq!(plain_count(Some("count=7")), Some(Some("7")));
        assert_eq!(plain_count(Some("count=")), Some(Some("")));
        assert_eq!(plain_count(Some("count=x1")), Some(Some("x1")));
        for other in [
            "count=%31",
            "count=+1",
            "count=1&count=2",
            "count",
            "n=1",
            "count=1=",
        ] {
            assert_eq!(plain_count(Some(other)), None, "{other}");
        }
        assert_eq!(read("/api/v1/ids"), Ok(1));
        assert_eq!(read("/api/v1/ids?count=4096"), Ok(4096));
        assert_eq!(read("/api/v1/ids?count=%34%30"), Ok(40));
        let refused = read("/api/v1/ids?count=4097").unwrap_err();
        assert_eq!(refused.field(), Some("count"));
    }

    /// Queries of pairs, as clients send them and as they go wrong: names
    /// right, near and escaped, values plain, empty, escaped, signed, with
    /// `+` or `=` in them, pairs without `=`, repeated, or empty.
    fn queries() -> impl Strategy<Value = String> {
        let name = prop_oneof![3 => Just("count".to_owned()), 1 => "cou|n|c%6Funt|count%20|"];
        let value = "([019x]|%3[01]|%20|%|\\+|=|-){0,3}";
        let pair =
            (name, prop::option::weighted(0.8, value)).prop_map(|(name, value)| match value {
                Some(value) => format!("{name}={value}"),
                None => name,
            });
        prop_oneof![
            prop::collection::vec(pair, 0..4).prop_map(|pairs| pairs.join("&")),
            "(count|=|&|[019x]|%3[01]|\\+){0,8}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// Any query reads as serde reads it: the same count or the same
        /// error.
        #[test]
        fn a_plain_count_reads_as_serde_reads_it(query in queries()) {
            prop_assert_eq!(read(&format!("/api/v1/ids?{query}")), through_serde(&query));
        }
    }

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
