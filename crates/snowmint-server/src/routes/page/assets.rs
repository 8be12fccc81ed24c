//! The embedded stylesheet, script and icons.

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::routes::error::ApiError;

const CSS: &str = include_str!("../../../assets/app.css");
const JS: &str = include_str!("../../../assets/app.js");
/// Loaded only without JavaScript (from `<noscript>`).
const NOSCRIPT_CSS: &str = include_str!("../../../assets/noscript.css");
const FAVICON_SVG: &str = include_str!("../../../assets/favicon.svg");
/// `favicon.svg` drawn at 32 x 32, as one PNG in an ICO container.
const FAVICON_ICO: &[u8] = include_bytes!("../../../assets/favicon.ico");

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

/// `GET /assets/{file}`: the embedded stylesheet, script and icon.
pub(crate) async fn asset(Path(file): Path<String>) -> Response {
    const FIVE_MINUTES: &str = "public, max-age=300";
    match file.as_str() {
        "app.css" => cached("text/css; charset=utf-8", FIVE_MINUTES, CSS),
        "app.js" => cached("text/javascript; charset=utf-8", FIVE_MINUTES, JS),
        "noscript.css" => cached("text/css; charset=utf-8", FIVE_MINUTES, NOSCRIPT_CSS),
        "favicon.svg" => cached("image/svg+xml", FIVE_MINUTES, FAVICON_SVG),
        _ => ApiError::new(StatusCode::NOT_FOUND, None, "no such asset").into_response(),
    }
}

/// `GET /favicon.ico`: browsers ask for it on their own (for the API's
/// JSON too), so it is served at the root, not only linked from the page.
pub(crate) async fn favicon() -> Response {
    cached("image/x-icon", "public, max-age=86400", FAVICON_ICO)
}
