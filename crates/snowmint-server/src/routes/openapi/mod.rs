//! The OpenAPI 3 description, generated from the handlers' annotations,
//! and the route that serves it.

use axum::response::IntoResponse;
use utoipa::OpenApi;

pub(crate) mod schemas;

use crate::routes::api::JsonText;
use crate::routes::params::{ApiQuery, NoQuery};
use crate::routes::schema::{
    BreakdownDoc, CandidateDoc, DetectDoc, FieldDoc, IdsDoc, LayoutDoc, RangeDoc, ReadyDoc,
    SegmentDoc, StatusDoc,
};
use schemas::StrictParams;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "snowmint",
        description = "Snowflake IDs: compose, decode and time ranges in Twitter's layout, the Discord, Instagram, Sonyflake and Mastodon presets or any layout written as a spec; the layout lab; which layout made a list of IDs; SQL functions; and mint. IDs travel as decimal strings. Every error answers `{\"error\": message, \"field\": name or null}`. Nothing is silently ignored: a query parameter an operation does not list (a typo such as `To` for `to`) is refused with 400 naming it in `field`, as is a parameter given twice."
    ),
    tags(
        (name = "ids", description = "Compose, decode, find the ID range of a time span and get SQL functions: pure functions of their input, open to all"),
        (name = "mint", description = "Fresh IDs from this instance's generator"),
        (name = "operations", description = "Liveness, readiness and Prometheus metrics"),
    ),
    paths(
        crate::routes::api::compose,
        crate::routes::api::decode,
        crate::routes::api::range,
        crate::routes::api::sql,
        crate::routes::api::layout_lab,
        crate::routes::api::detect,
        crate::routes::api::mint,
        crate::routes::api::healthz,
        crate::routes::api::readyz,
        crate::routes::api::metrics,
    ),
    modifiers(&StrictParams),
    components(schemas(
        crate::routes::error::ErrorBody,
        BreakdownDoc,
        SegmentDoc,
        RangeDoc,
        FieldDoc,
        LayoutDoc,
        CandidateDoc,
        DetectDoc,
        IdsDoc,
        StatusDoc,
        ReadyDoc
    ))
)]
struct ApiDoc;

/// The OpenAPI document as JSON.
pub(crate) fn document() -> &'static str {
    // Generated once: it only changes with the code.
    static DOC: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        ApiDoc::openapi()
            .to_pretty_json()
            .unwrap_or_else(|_| "{}".to_owned())
    });
    &DOC
}

/// `GET /api/v1/openapi.json`: the document.
pub(crate) async fn doc(_: ApiQuery<NoQuery>) -> impl IntoResponse {
    JsonText(document())
}
