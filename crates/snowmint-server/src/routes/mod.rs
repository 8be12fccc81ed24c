//! The routes: the JSON API, the explorer page, the OpenAPI document, the
//! metrics, and the error shape they answer in.

pub(crate) mod api;
pub(crate) mod error;
pub(crate) mod metrics;
pub(crate) mod openapi;
pub(crate) mod page;
pub(crate) mod params;
pub(crate) mod schema;
pub(crate) mod state;

use axum::http::Method;

/// Routes that exist, as `&'static str` metric labels. The admin
/// listener's three come last ([`ADMIN_ROUTES`]), `/metrics` the very last
/// (the public listener serves it only when no admin listener does).
pub(crate) const ROUTES: &[&str] = &[
    "/",
    "/assets/{file}",
    "/favicon.ico",
    "/api/v1/compose",
    "/api/v1/decode/{id}",
    "/api/v1/range",
    "/api/v1/sql",
    "/api/v1/layout",
    "/api/v1/detect",
    "/api/v1/ids",
    "/api/v1/openapi.json",
    "/healthz",
    "/readyz",
    "/metrics",
];

/// The public listener's routes without `/metrics`.
pub(crate) const PUBLIC_ROUTES_WITHOUT_METRICS: &[&str] = ROUTES.split_last().unwrap().1;

/// The admin listener's routes.
pub(crate) const ADMIN_ROUTES: &[&str] = ROUTES.split_at(ROUTES.len() - 3).1;

/// The route pattern of `routes` that `path` matches, as a `&'static str`
/// label (for metrics and the access log; never the raw path), or
/// `"unmatched"`. It matches as the router does: literally, a `{name}`
/// segment standing for one segment that is not empty; so the edge knows
/// the route before the router runs, and the router needs no layer of its
/// own to tell it.
pub(crate) fn route_label(path: &str, routes: &[&'static str]) -> &'static str {
    // The path as a pattern, first: a literal route is found by its length
    // and bytes alone (most patterns differ in length), with no pattern
    // searched for a parameter; as in the router, a literal route comes
    // before one with a parameter that the path would fill.
    if let Some(literal) = routes
        .iter()
        .find(|pattern| pattern.len() == path.len() && **pattern == path)
    {
        return literal;
    }
    routes
        .iter()
        .copied()
        .find(|pattern| fills_parameter(path, pattern))
        .unwrap_or("unmatched")
}

/// Whether `path` is `pattern` with its parameter filled in; false for a
/// pattern without one (those were compared as they are).
fn fills_parameter(path: &str, pattern: &str) -> bool {
    if !pattern.ends_with('}') {
        return false;
    }
    // One parameter, at the end (as every pattern here has it).
    let Some(open) = pattern.rfind('{') else {
        return false;
    };
    let prefix = &pattern[..open];
    debug_assert!(!prefix.contains(['{', '}']));
    path.strip_prefix(prefix)
        .is_some_and(|segment| !segment.is_empty() && !segment.contains('/'))
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

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::Body;
    use axum::extract::{MatchedPath, Request};
    use axum::routing::any;
    use tower::ServiceExt;

    use super::*;

    /// The label the router itself would give `path`: the pattern it
    /// matched, read from its `MatchedPath`.
    async fn router_label(path: &str) -> String {
        let mut router = Router::new();
        for pattern in ROUTES {
            router = router.route(
                pattern,
                any(|matched: MatchedPath| async move { matched.as_str().to_owned() }),
            );
        }
        let router = router.fallback(|| async { "unmatched" });
        let request = Request::builder().uri(path).body(Body::empty()).unwrap();
        let response = router.oneshot(request).await.unwrap();
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .unwrap();
        String::from_utf8(body.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn route_labels_are_the_patterns_the_router_matches() {
        let mut paths: Vec<String> = ROUTES
            .iter()
            .map(|p| p.replace("{file}", "app.js").replace("{id}", "4194439168"))
            .collect();
        paths.extend(
            [
                "/assets/",
                "/assets/a/b",
                "/assets//",
                "/api/v1/decode/",
                "/api/v1/decode/1/",
                "/api/v1/decode/%2F",
                "/api/v1/decode/-1",
                // A path that spells a pattern fills its parameter.
                "/assets/{file}",
                "/api/v1/decode/{id}",
                "/healthz/",
                "/HEALTHZ",
                "//healthz",
                "/healthz?x=1",
                "/healthzz",
                "/metrics/x",
                "/favicon.ico.bak",
                "/api/v1",
                "/api/v1/",
                "/nope",
            ]
            .map(str::to_owned),
        );
        for path in &paths {
            let request_path = path.split('?').next().unwrap();
            assert_eq!(
                route_label(request_path, ROUTES),
                router_label(path).await,
                "{path}"
            );
        }
    }

    #[test]
    fn each_listener_labels_only_its_own_routes() {
        assert_eq!(route_label("/metrics", ROUTES), "/metrics");
        assert_eq!(
            route_label("/metrics", PUBLIC_ROUTES_WITHOUT_METRICS),
            "unmatched"
        );
        assert_eq!(route_label("/healthz", ADMIN_ROUTES), "/healthz");
        assert_eq!(route_label("/readyz", ADMIN_ROUTES), "/readyz");
        assert_eq!(route_label("/metrics", ADMIN_ROUTES), "/metrics");
        assert_eq!(route_label("/", ADMIN_ROUTES), "unmatched");
        assert_eq!(route_label("/api/v1/ids", ADMIN_ROUTES), "unmatched");
    }
}
