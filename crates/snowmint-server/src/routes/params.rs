//! The request's parameters, read: the query extractors (one error shape,
//! nothing silently ignored), the query structs the OpenAPI document lists,
//! and the one reading of each value (`layout`, `from`, `count`, `ids`,
//! times, a compose's fields) that the JSON API and the explorer page share.
//! The page words the core's errors in its language; the API answers them
//! in its shape.

use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use serde::Deserialize;
use snowmint::sql::Dialect;
use snowmint::{Encoding, Field, Layout, SnowflakeId};
use utoipa::IntoParams;
use utoipa::openapi::path::ParameterIn;

use crate::mint::minter::MAX_BATCH;
use crate::routes::error::ApiError;

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
pub(crate) fn param_names<T: IntoParams>() -> Vec<String> {
    T::into_params(|| Some(ParameterIn::Query))
        .into_iter()
        .map(|p| p.name)
        .collect()
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
        Some(name) => given_twice(name),
        None => ApiError::bad_request(None, format!("the query string cannot be read: {text}")),
    }
}

/// The parameter `name` refused for being given more than once.
fn given_twice(name: &str) -> ApiError {
    ApiError::bad_request(
        Some(name),
        format!("{name} is given more than once in the query; give it once"),
    )
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
    let t = layout.parse_timestamp(or_now(timestamp_input), now_ms)?;
    let fields: Vec<(&str, &str)> = pairs
        .iter()
        .filter(|(name, _)| name != "timestamp" && name != "layout")
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    Ok(layout.parse_fields(t, &fields)?)
}

/// A time as typed, the one reading of a blank time of the API and the
/// page: missing or empty is `now`. Whitespace alone is not "no time" (as
/// for `count`): the core refuses it.
pub(crate) fn or_now(input: Option<&str>) -> &str {
    input.filter(|t| !t.is_empty()).unwrap_or("now")
}

/// Reads the timestamp: missing, empty or `now` is `now_ms` ([`or_now`]).
pub(crate) fn timestamp(input: Option<&str>, now_ms: u64) -> Result<u64, snowmint::Error> {
    snowmint::parse_timestamp(or_now(input), now_ms)
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

/// The value of the parameter `name` in `pairs`, if given; given more than
/// once, it is refused naming it ([`given_twice`]), as serde's error is.
pub(crate) fn single<'a>(
    pairs: &'a [(String, String)],
    name: &str,
) -> Result<Option<&'a str>, ApiError> {
    let mut given = pairs
        .iter()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v.as_str());
    let first = given.next();
    if given.next().is_some() {
        return Err(given_twice(name));
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
    layout.parse_span(or_now(from), to.filter(|t| !t.is_empty()), now_ms)
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

/// Query of `GET /api/v1/layout`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LayoutQuery {
    /// The layout (as for decode): a preset or a spec; missing means Twitter's.
    #[param(example = "sonyflake")]
    pub layout: Option<String>,
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
}
