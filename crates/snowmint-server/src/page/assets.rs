//! The embedded stylesheet and script.

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

const CSS: &str = include_str!("../../assets/app.css");
const JS: &str = include_str!("../../assets/app.js");

fn cached(kind: &'static str, max_age: &'static str, body: impl IntoResponse) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(kind)),
            (header::CACHE_CONTROL, HeaderValue::from_static(max_age)),
        ],
        body,
    )
        .into_response()
}

/// `GET /assets/{file}`: the embedded stylesheet and script.
pub(crate) async fn asset(Path(file): Path<String>) -> Response {
    const FIVE_MINUTES: &str = "public, max-age=300";
    match file.as_str() {
        "app.css" => cached("text/css; charset=utf-8", FIVE_MINUTES, CSS),
        "app.js" => cached("text/javascript; charset=utf-8", FIVE_MINUTES, JS),
        _ => ApiError::new(StatusCode::NOT_FOUND, None, "no such asset").into_response(),
    }
}
