//! The security headers on every route.

use crate::support::*;

/// Every route of the public router (and its errors), as (method, uri).
const PUBLIC_ROUTES: &[(&str, &str)] = &[
    ("GET", "/"),
    ("GET", "/assets/app.css"),
    ("GET", "/assets/app.js"),
    ("GET", "/assets/favicon.svg"),
    ("GET", "/favicon.ico"),
    ("GET", REFERENCE_COMPOSE),
    ("GET", "/api/v1/decode/4194439168"),
    ("GET", "/api/v1/range?from=2024-01-01T00:00:00Z"),
    ("POST", "/api/v1/ids?count=1"),
    ("GET", "/api/v1/openapi.json"),
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/metrics"),
    // Errors.
    ("GET", "/api/v1/compose?datacenter=32"),
    ("GET", "/nope"),
    ("DELETE", "/api/v1/ids"),
    ("GET", "/assets/%FF"),
];

fn assert_security_headers(context: &str, headers: &axum::http::HeaderMap) {
    for (name, value) in [
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
    ] {
        assert_eq!(
            headers.get(name).map(|v| v.to_str().unwrap()),
            Some(value),
            "{context}: {headers:?}"
        );
    }
    let csp = headers.get(header::CONTENT_SECURITY_POLICY).is_some();
    let html = headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.to_str().unwrap().starts_with("text/html"));
    assert_eq!(csp, html, "{context}: CSP exactly on HTML: {headers:?}");
}

#[tokio::test]
async fn every_route_carries_nosniff_and_no_referrer() {
    let h = harness();
    for (method, uri) in PUBLIC_ROUTES {
        let (status, headers, body) = send_full(&h.state, method, uri, &[]).await;
        assert_security_headers(&format!("{method} {uri} ({status})"), &headers);
        if status.is_client_error() || status.is_server_error() {
            error_shape(&format!("{method} {uri}"), &body);
        }
    }
}
